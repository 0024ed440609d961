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

/* Collective. *data (malloc'd) holds old_counts[rank] rows of row_bytes; afterwards it holds
 * new_counts[rank] rows, reallocated in place (the pointer may change). */
int hlb__redistribute_dense(MPI_Comm comm, const hlb__layout *l, void **data, size_t row_bytes);

/* Collective. The same for a CSR matrix of this rank's rows. */
int hlb__redistribute_csr(MPI_Comm comm, const hlb__layout *l, hlb_csr *m);

/* Rows of rank `me` (old layout) that rank `peer` owns in the new layout: [*first, +*n). */
void hlb__overlap(const hlb__layout *l, int from, int to, size_t *first, size_t *n);

#endif
