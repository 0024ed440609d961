/* Stored model files (docs/models.md, "Models kept across runs"), as a run reads them. A file
 * written on another host is ignored before its contents are read, so inputs name this host as
 * THIS_HOST (replaced by its key here): the corpus and the regressions then reach the samples,
 * decisions and item costs on whatever machine the fuzzer runs. */
#include <stdlib.h>
#include <string.h>

#include "exec/model_store.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

/* text with every "THIS_HOST" replaced by this host's key (freed by the caller). */
static char *with_this_host(const char *text) {
  static const char mark[] = "THIS_HOST";
  char key[17];
  hlb__model_host(key, NULL, 0);
  size_t n = 0, len = strlen(text);
  for (const char *p = strstr(text, mark); p; p = strstr(p + 1, mark))
    n++;
  char *out = malloc(len + n * (strlen(key) - strlen(mark)) + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = text;;) {
    const char *m = strstr(p, mark);
    if (!m) {
      strcpy(o, p);
      break;
    }
    memcpy(o, p, (size_t)(m - p));
    o += m - p;
    memcpy(o, key, strlen(key));
    o += strlen(key);
    p = m + strlen(mark);
  }
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *raw = fuzz_text(data, size), *text = raw ? with_this_host(raw) : NULL;
  hlb__model_set set;
  char why[256];
  if (text && hlb__model_parse(text, &set, why, sizeof why) == 0) hlb__model_set_free(&set);
  free(text);
  free(raw);
  return 0;
}
