/* Per-rank measurement of SPMD iterations (FLEX-MPI 3.1): wall time, CPU time, time inside
 * MPI calls (through the PMPI wrappers in pmpi.c) and FLOPs through PAPI where available. */
#ifndef HLB_MPI_MONITOR_H
#define HLB_MPI_MONITOR_H

#include "hlb/repartition.h"

/* Seconds spent inside wrapped MPI calls while a window was open; the wrappers add to it. */
extern double hlb__mpi_comm_s;
/* Nonzero while a measurement window is open on this rank. */
extern int hlb__mpi_window_open;

typedef struct hlb__monitor {
  double t_real0, t_cpu0, comm0;
  long long flops0;
  int papi_eventset;     /* -1 without PAPI */
  hlb_rank_interval acc; /* sums over the current sampling interval */
} hlb__monitor;

/* Set up; tries PAPI FLOP counting when want_papi. Never fails: without PAPI it falls back to
 * row-based work and says so through hlb__monitor_has_papi(). */
void hlb__monitor_init(hlb__monitor *m, int want_papi);
void hlb__monitor_fini(hlb__monitor *m);
int hlb__monitor_has_papi(const hlb__monitor *m);

void hlb__monitor_begin(hlb__monitor *m);
/* Close the window and add it to the interval; `work` as in hlb_spmd_end (0 = PAPI/rows),
 * `row_work` the fallback work of this iteration (rows x weight). */
void hlb__monitor_end(hlb__monitor *m, double work, double row_work);
/* The interval so far, then reset. */
hlb_rank_interval hlb__monitor_take(hlb__monitor *m, size_t rows);

#endif
