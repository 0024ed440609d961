/* Stored model files (docs/models.md, "Models kept across runs"), as a run reads them. */
#include <stdlib.h>

#include "exec/model_store.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  hlb__model_set set;
  char why[256];
  if (hlb__model_parse(text, &set, why, sizeof why) == 0) hlb__model_set_free(&set);
  free(text);
  return 0;
}
