/* Runs a fuzz target over files, without libFuzzer: how the normal and sanitizer builds replay
 * the seed corpora and every input that once crashed (tests/fuzz/regressions), so a fixed bug
 * stays fixed in every CI run. usage: fuzz_TARGET FILE|DIR...  Exits 0 when every input ran. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz driver: cannot read %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
  size_t got = data && n > 0 ? fread(data, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!data || got != (size_t)(n > 0 ? n : 0)) {
    free(data);
    fprintf(stderr, "fuzz driver: cannot read %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(data, got);
  free(data);
  return 0;
}

static int run_path(const char *path, unsigned *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz driver: no such file or folder: %s\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) return (*count)++, run_file(path);
  DIR *d = opendir(path);
  if (!d) return 1;
  int bad = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    bad |= run_path(sub, count);
  }
  closedir(d);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  /* The target silences stdout and stderr in its initialiser: say the count on a copy. */
  FILE *out = fdopen(dup(1), "w");
  LLVMFuzzerInitialize(&argc, &argv);
  unsigned count = 0;
  int bad = 0;
  for (int i = 1; i < argc; i++)
    bad |= run_path(argv[i], &count);
  if (out) {
    fprintf(out, "%s: %u inputs ran\n", argv[0], count);
    fclose(out);
  }
  return bad;
}
