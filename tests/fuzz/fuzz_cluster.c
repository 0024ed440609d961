/* Cluster files (docs/cluster-format.md), as `hlb plan` and `hlb sim` read them. */
#include "fuzz.h"
#include "hlb/cluster.h"
#include "hlb/error.h"

#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("fuzz.json", text, &c) == 0) hlb_cluster_free(c);
  free(text);
  return 0;
}
