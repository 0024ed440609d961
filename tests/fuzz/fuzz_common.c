/* Shared by the fuzz targets (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix) {
  static char path[128];
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(path, sizeof path, "%s/hlb-fuzz-%ld%s", dir, (long)getpid(), suffix);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f)) abort();
  return path;
}

void fuzz_quiet(void) {
  /* Under libFuzzer, scripts/fuzz.sh passes -close_fd_mask=3 instead: libFuzzer keeps its own
   * copy of stderr for its statistics and the sanitizers' reports, which freopen would lose. */
#ifdef HLB_LIBFUZZER
  return;
#endif
  if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) abort();
}
