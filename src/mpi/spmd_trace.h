/* The SPMD layer's trace (HLB_SPMD_TRACE=FILE, hlb_spmd_options.trace): rank 0 keeps what every
 * rank measured in each sampling interval, each decision with its predicted gain, and each
 * redistribution with the rows it moved and what it cost, and writes them at hlb_spmd_destroy
 * as a Chrome trace (one track per rank; Perfetto opens it) with the figures in a top-level
 * "hlb_spmd" object that `hlb report` draws (docs/report.md). */
#ifndef HLB_MPI_SPMD_TRACE_H
#define HLB_MPI_SPMD_TRACE_H

#include <stddef.h>

#include "hlb/repartition.h"

typedef struct hlb__spmd_trace_interval {
  unsigned iteration; /* iterations done at the end of the interval */
  double t_start_s, t_end_s;
  hlb_repart_decision decision;
  int redistributed;
  size_t rows_moved;
  double redistribute_s;
} hlb__spmd_trace_interval;

typedef struct hlb__spmd_trace {
  char *path; /* NULL: no trace */
  int ranks;
  double t0_s, last_s;
  hlb__spmd_trace_interval *iv;
  hlb_rank_interval *measured; /* ranks entries per interval */
  size_t n, cap;
} hlb__spmd_trace;

/* Rank 0 only. Checks that `path` can be written now, so a bad path fails at create time.
 * now_s: MPI_Wtime() at hlb_spmd_create. */
int hlb__spmd_trace_open(hlb__spmd_trace *t, const char *path, int ranks, double now_s);

/* One interval: what the ranks measured (`ranks` entries) and the decision acted on. */
int hlb__spmd_trace_interval_add(hlb__spmd_trace *t, unsigned iteration, double now_s,
                                 const hlb_rank_interval *measured, const hlb_repart_decision *d);

/* The interval just added ended with a redistribution. */
void hlb__spmd_trace_moved(hlb__spmd_trace *t, size_t rows_moved, double seconds);

/* Writes the file (FILE.tmp, then renamed). Returns 0, or an hlb error code with the reason in
 * hlb_last_error(). */
int hlb__spmd_trace_write(const hlb__spmd_trace *t, const char *policy, const char *params,
                          size_t rows, unsigned interval, unsigned iterations, int papi);

void hlb__spmd_trace_free(hlb__spmd_trace *t);

#endif
