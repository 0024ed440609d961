/* A small Matrix Market reader (coordinate, real/integer/pattern, general/symmetric): the
 * rows [first, first + count) of the matrix as CSR with global column indices. */
#ifndef HLB_EXAMPLES_MMIO_H
#define HLB_EXAMPLES_MMIO_H

#include <stddef.h>

#include "hlb/mpi.h"

/* Read the size only. Returns 0, or -1 with a message naming the file and line on stderr. */
int mm_read_size(const char *path, size_t *rows, size_t *cols, size_t *entries);

/* Read rows [first, first + count) into *m (malloc'd arrays). Entries are summed when a
 * position repeats; columns are sorted within each row. */
int mm_read_rows(const char *path, size_t first, size_t count, hlb_csr *m);

#endif
