/* Every rank acts on rank 0's repartition decision. One rank is made to decide differently
 * (the test hook hlb__spmd_skew_rank, a stand-in for floating point that differs in the last
 * bit on a mixed cluster): every rank still ends with the same split, the registered rows
 * arrive intact, and the skewed rank counts the mismatch. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlb/mpi.h"
#include "mpi/check.h"
#include "mpi/spmd_internal.h"

#define ROWS 600
#define ITERS 40

/* Busy CPU time per row: rank 0 takes twice as long per row, so the policy moves rows away
 * from it. */
static void spin(double seconds) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do
    clock_gettime(CLOCK_MONOTONIC, &b);
  while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < seconds);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  hlb__spmd_skew_rank = size - 1;

  hlb_spmd_options opt;
  hlb_spmd_options_default(&opt);
  opt.policy = "flex";
  opt.params = "k=1";
  opt.interval = 5;
  opt.use_papi = 0;
  hlb_spmd *s = NULL;
  CHECK(hlb_spmd_create(MPI_COMM_WORLD, ROWS, &opt, &s) == 0, "create: %s", hlb_last_error());
  size_t first = 0, count = 0;
  hlb_spmd_range(s, &first, &count);
  double *rows = malloc(count * sizeof *rows);
  for (size_t i = 0; i < count; i++)
    rows[i] = (double)(first + i);
  CHECK(hlb_spmd_register_dense(s, (void **)&rows, sizeof *rows) == 0, "register");
  for (int it = 0; it < ITERS; it++) {
    hlb_spmd_begin(s);
    hlb_spmd_range(s, &first, &count);
    spin((double)count * (rank == 0 ? 2e-5 : 1e-5));
    int changed = 0;
    if (hlb_spmd_end(s, (double)count, &changed))
      CHECK(0, "end at iteration %d: %s", it, hlb_last_error());
  }
  hlb_spmd_stats st;
  hlb_spmd_stats_get(s, &st);
  CHECK(st.redistributions > 0, "the slow-looking rank 0 never lost rows");
  if (rank == size - 1)
    CHECK(st.decision_mismatches > 0, "the skewed rank counted no mismatch");
  else
    CHECK(st.decision_mismatches == 0, "%u mismatches on a rank that was not skewed",
          st.decision_mismatches);
  /* The same split on every rank, and every row where that split says. */
  const size_t *counts = NULL;
  hlb_spmd_layout(s, &counts, NULL);
  size_t *mine = malloc((size_t)size * sizeof *mine), *zero = malloc((size_t)size * sizeof *zero);
  memcpy(mine, counts, (size_t)size * sizeof *mine);
  memcpy(zero, counts, (size_t)size * sizeof *zero);
  MPI_Bcast(zero, size * (int)sizeof *zero, MPI_BYTE, 0, MPI_COMM_WORLD);
  CHECK(!memcmp(mine, zero, (size_t)size * sizeof *mine),
        "this rank's split differs from rank 0's");
  hlb_spmd_range(s, &first, &count);
  for (size_t i = 0; i < count; i++)
    if (rows[i] != (double)(first + i)) {
      CHECK(0, "row %zu holds %g", first + i, rows[i]);
      break;
    }
  free(mine);
  free(zero);
  hlb_spmd_destroy(s);
  free(rows);
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", all ? "FAILED" : "ok");
  MPI_Finalize();
  return all ? 1 : 0;
}
