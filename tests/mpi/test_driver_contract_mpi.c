/* The driver core's contract (tests/contract/driver_contract.h) through the MPI executor: one
 * one-core cpu PU per rank, so that PU 0 is rank 0's own (the local transport) and the last
 * PU another rank's (the remote transport); every case with its fault on each of them. Run
 * with 2 or more ranks. */
#include <stdio.h>

#include "contract/driver_contract.h"
#include "hlb/mpi.h"
#include "mpi/check.h"

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  dc_work w;
  CHECK(dc_work_init(&w, rank == 0) == 0, "out of memory");
  hlb_codelet cl = dc_codelet(&w);
  hlb_exec_pu pu;
  unsigned n = 0;
  CHECK(hlb_exec_parse_pus("cpu:1", &pu, 1, &n) == 0 && n == 1, "parse pus: %s", hlb_last_error());
  int targets[2] = {0, size - 1};
  for (size_t k = 0; k < DC_N_CASES; k++)
    for (int t = 0; t < 2; t++) {
      const dc_case *c = &dc_cases[k];
      hlb_exec_options o = dc_options(c, targets[t]);
      hlb_mpi_run_stats s = {0};
      dc_work_reset(&w);
      int rc = hlb_mpi_run(MPI_COMM_WORLD, &pu, 1, &cl, DC_ITEMS, &o, &s);
      if (rank == 0) {
        check_failures += dc_check(c, targets[t], "MPI executor", &w, rc, hlb_last_error(),
                                   s.exec.per_pu, s.exec.n_pus);
        CHECK(rc || s.exec.n_pus == (unsigned)size, "%u PUs in the stats for %d ranks",
              s.exec.n_pus, size);
        printf("%s, fault on pu %d: %s\n", c->name, targets[t], rc ? "failed" : "ran");
      } else {
        CHECK(rc == 0, "%s, fault on pu %d: %s", c->name, targets[t], hlb_last_error());
      }
      hlb_mpi_run_stats_clear(&s);
    }
  dc_work_free(&w);
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
