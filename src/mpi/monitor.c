#include <string.h>
#include <time.h>

#include <mpi.h>
#include <papi.h>

#include "mpi/monitor.h"

/* The time inside MPI calls of the open window, added by the PMPI wrappers (pmpi.c, when
 * built), and whether a window is open. */
double hlb__mpi_comm_s = 0.0;
int hlb__mpi_window_open = 0;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* PAPI counts floating-point operations where the CPU exposes them to this process (bare
 * metal, perf_event allowed). In VMs and containers it usually cannot; then work falls back
 * to rows x weight, which FLEX-MPI's linear FLOP/workload assumption (3.1) makes equivalent
 * for the applications it targets. */
static int papi_start_flops(void) {
  if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return -1;
  int es = PAPI_NULL;
  if (PAPI_create_eventset(&es) != PAPI_OK) return -1;
  if (PAPI_add_event(es, PAPI_DP_OPS) != PAPI_OK && PAPI_add_event(es, PAPI_FP_OPS) != PAPI_OK) {
    PAPI_destroy_eventset(&es);
    return -1;
  }
  if (PAPI_start(es) != PAPI_OK) {
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
    return -1;
  }
  return es;
}

void hlb__monitor_init(hlb__monitor *m, int want_papi) {
  memset(m, 0, sizeof *m);
  m->papi_eventset = want_papi ? papi_start_flops() : -1;
}

void hlb__monitor_fini(hlb__monitor *m) {
  if (m->papi_eventset >= 0) {
    long long v = 0;
    PAPI_stop(m->papi_eventset, &v);
    PAPI_cleanup_eventset(m->papi_eventset);
    PAPI_destroy_eventset(&m->papi_eventset);
    m->papi_eventset = -1;
  }
}

int hlb__monitor_has_papi(const hlb__monitor *m) {
  return m->papi_eventset >= 0;
}

static long long read_flops(const hlb__monitor *m) {
  long long v = 0;
  if (m->papi_eventset >= 0) PAPI_read(m->papi_eventset, &v);
  return v;
}

void hlb__monitor_begin(hlb__monitor *m) {
  m->comm0 = hlb__mpi_comm_s;
  m->flops0 = read_flops(m);
  m->t_cpu0 = cpu_seconds();
  m->t_real0 = MPI_Wtime();
  hlb__mpi_window_open = 1;
}

void hlb__monitor_end(hlb__monitor *m, double work, double row_work) {
  double real = MPI_Wtime() - m->t_real0;
  double cpu = cpu_seconds() - m->t_cpu0;
  hlb__mpi_window_open = 0;
  m->acc.real_s += real;
  m->acc.cpu_s += cpu;
  m->acc.comm_s += hlb__mpi_comm_s - m->comm0;
  if (work > 0.0)
    m->acc.work += work;
  else if (m->papi_eventset >= 0)
    m->acc.work += (double)(read_flops(m) - m->flops0);
  else
    m->acc.work += row_work;
  m->acc.iterations++;
}

hlb_rank_interval hlb__monitor_take(hlb__monitor *m, size_t rows) {
  hlb_rank_interval out = m->acc;
  out.rows = rows;
  memset(&m->acc, 0, sizeof m->acc);
  return out;
}
