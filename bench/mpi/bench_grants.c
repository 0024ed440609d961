/* Rank 0's cost per granted block in the distributed executor (hlb_mpi_run), and the grant
 * rate it sustains. Rank 0 offers no PU and only serves; every other rank offers one 1-core
 * cpu PU running a one-item kernel (y = x + 1) on blocks of one item (policy greedy,
 * chunk=1), so every block is one NEXT, one GRANT with 8 bytes of input and one DONE with 8
 * bytes of output, and nearly all of rank 0's work is the grant path itself.
 *
 * The figure is rank 0's service-thread CPU time (hlb_mpi_run_stats.serve_cpu_s, measured with
 * CLOCK_THREAD_CPUTIME_ID), not wall time: on a machine with fewer cores than ranks rank 0
 * waits for a core, which says nothing about what a grant costs it. Turns of the service loop
 * that found no message (polling and the idle sleep) are reported apart; "busy" is the CPU of
 * turns that handled at least one message, which is what a grant costs when requests queue up,
 * as they do with 10^4 PUs.
 *
 * Usage: mpirun -np N bench_grants [--items N] [--policy NAME] [--params TEXT]
 *                                  [--pus-per-rank K] [--header]
 * Prints one table row on rank 0 (bench_grants.sh runs it for 2..64 ranks). Checks every
 * item's output; never passes or fails on time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlb/error.h"
#include "hlb/mpi.h"

static int one_item(const hlb_exec_call *c) {
  const double *x = c->in;
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = x[i] + 1.0;
  return 0;
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t n_items = 50000;
  const char *policy = "greedy", *params = "chunk=1";
  int header = 0;
  unsigned per_rank = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--items") && i + 1 < argc)
      n_items = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
      policy = argv[++i];
    else if (!strcmp(argv[i], "--params") && i + 1 < argc)
      params = argv[++i];
    else if (!strcmp(argv[i], "--pus-per-rank") && i + 1 < argc)
      per_rank = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--header"))
      header = 1;
    else {
      if (rank == 0)
        fprintf(stderr,
                "bench_grants: unknown argument '%s'\nusage: bench_grants [--items N] "
                "[--policy NAME] [--params TEXT] [--pus-per-rank K] [--header]\n",
                argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  if (size < 2 || n_items == 0 || per_rank == 0) {
    if (rank == 0)
      fprintf(stderr,
              "bench_grants: needs at least 2 ranks (has %d), --items > 0 (is %zu) and "
              "--pus-per-rank > 0 (is %u)\n",
              size, n_items, per_rank);
    MPI_Finalize();
    return 2;
  }

  /* K one-core cpu PUs per rank stand for many PUs behind few ranks: rank 0's tables grow
   * with the PUs, not the ranks, and 10^4 processes do not fit this machine. */
  hlb_exec_pu *pus = calloc(per_rank, sizeof *pus);
  if (!pus) {
    fprintf(stderr, "bench_grants: rank %d: out of memory for %u PUs\n", rank, per_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  unsigned n_pu = rank > 0 ? per_rank : 0;
  for (unsigned k = 0; k < n_pu; k++) {
    snprintf(pus[k].name, sizeof pus[k].name, "cpu.%u", k);
    pus[k].backend = HLB_BACKEND_CPU;
    pus[k].cores = 1;
  }
  double *x = NULL, *y = NULL;
  if (rank == 0) {
    x = malloc(n_items * sizeof *x);
    y = calloc(n_items, sizeof *y);
    if (!x || !y) {
      fprintf(stderr, "bench_grants: out of memory for %zu items\n", n_items);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < n_items; i++)
      x[i] = (double)i;
  }
  hlb_codelet cl = {.name = "one_item",
                    .in_bytes_per_item = sizeof(double),
                    .out_bytes_per_item = sizeof(double),
                    .in = x,
                    .out = y,
                    .cpu = one_item};
  hlb_exec_options opt;
  hlb_exec_options_default(&opt);
  opt.policy = policy;
  opt.params = params;
  opt.keep_log = 0;
  hlb_mpi_run_stats st;
  memset(&st, 0, sizeof st);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = wall();
  int rc = hlb_mpi_run(MPI_COMM_WORLD, pus, n_pu, &cl, n_items, &opt, &st);
  double t = wall() - t0;
  int status = 0;
  if (rc != 0) {
    if (rank == 0) fprintf(stderr, "bench_grants: hlb_mpi_run: %s\n", hlb_last_error());
    status = 1;
  } else if (rank == 0) {
    for (size_t i = 0; i < n_items; i++)
      if (y[i] != x[i] + 1.0) {
        fprintf(stderr, "bench_grants: item %zu is %g, expected %g\n", i, y[i], x[i] + 1.0);
        status = 1;
        break;
      }
    double busy = st.serve_cpu_s - st.serve_idle_cpu_s;
    if (header)
      printf(
          "| ranks | PUs | grants | rank-0 CPU s (busy + idle) | µs CPU per grant (all / busy) | "
          "grants per CPU s (all / busy) | grants per wall s |\n"
          "|---|---|---|---|---|---|---|\n");
    printf("| %d | %u | %zu | %.3f + %.3f | %.2f / %.2f | %.0f / %.0f | %.0f |\n", size,
           (size - 1) * per_rank, st.grants, busy, st.serve_idle_cpu_s,
           1e6 * st.serve_cpu_s / (double)st.grants, 1e6 * busy / (double)st.grants,
           (double)st.grants / st.serve_cpu_s, (double)st.grants / busy, (double)st.grants / t);
    fflush(stdout);
  }
  hlb_mpi_run_stats_clear(&st);
  free(pus);
  free(x);
  free(y);
  MPI_Finalize();
  return status;
}
