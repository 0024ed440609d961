/* Moving rows to their new owners after a repartition (FLEX-MPI 3.3), with one collective
 * MPI_Alltoallv per array: every rank knows the old and new layouts, so each computes what it
 * sends to and receives from every other rank without a negotiation round. */
#ifndef HLB_MPI_REDISTRIBUTE_H
#define HLB_MPI_REDISTRIBUTE_H

#include <stddef.h>

#include <mpi.h>

#include "hlb/mpi.h"

typedef struct hlb__layout {
  const size_t *old_counts, *old_displs;
  const size_t *new_counts, *new_displs;
  int rank, size;
} hlb__layout;

/* A registered dense array: *data (malloc'd) holds this rank's rows of row_bytes each. */
typedef struct hlb__dense_array {
  void **data;
  size_t row_bytes;
} hlb__dense_array;

/* Collective, all or nothing. Every dense array (old_counts[rank] rows; afterwards
 * new_counts[rank] rows, reallocated in place: the pointer may change) and every CSR matrix of
 * this rank's rows moves to the new layout. Every buffer is allocated on every rank before any
 * row travels: when a rank cannot (HLB_ENOMEM), every rank returns an error naming that rank
 * and every array keeps its old rows. */
int hlb__redistribute(MPI_Comm comm, const hlb__layout *l, const hlb__dense_array *dense,
                      unsigned n_dense, hlb_csr *const *csr, unsigned n_csr);

/* For tests: on this rank, any buffer redistribution allocates above this many bytes fails as
 * if out of memory (0, the default: off). */
extern size_t hlb__redistribute_fail_above;

/* Rows of rank `me` (old layout) that rank `peer` owns in the new layout: [*first, +*n). */
void hlb__overlap(const hlb__layout *l, int from, int to, size_t *first, size_t *n);

#endif
