/* Matrix Market files, as the CG example reads them (examples/mpi/mmio.c). */
#include <stdlib.h>

#include "fuzz.h"
#include "mmio.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, ".mtx");
  size_t rows = 0, cols = 0, entries = 0;
  if (mm_read_size(path, &rows, &cols, &entries) != 0) return 0;
  /* What CG would hold on one rank; a header that promises more than the file has must be
   * refused, not trusted with memory. */
  if (rows > (1u << 20)) return 0;
  hlb_csr m = {0};
  if (mm_read_rows(path, 0, rows, &m) == 0) {
    free(m.row_ptr);
    free(m.col);
    free(m.val);
  }
  return 0;
}
