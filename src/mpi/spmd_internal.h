/* Test hooks of the SPMD interface (src/mpi/spmd.c); not part of the public API. */
#ifndef HLB_MPI_SPMD_INTERNAL_H
#define HLB_MPI_SPMD_INTERNAL_H

/* When >= 0, the rank of that number moves one row from its own decision's first rank to its
 * last before comparing with rank 0's: a stand-in for a rank whose floating point gave a
 * different answer (tests/mpi/test_spmd_decision.c). -1 (the default) does nothing. */
extern int hlb__spmd_skew_rank;

#endif
