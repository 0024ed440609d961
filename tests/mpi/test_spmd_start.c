/* hlb_spmd_create's first split: the even one, or the caller's initial_counts (a restarted
 * job's previous final split). Bad counts fail on every rank with the same code, naming the
 * entry and the value, and no rank is left waiting in a collective. */
#include <stdlib.h>
#include <string.h>

#include "hlb/mpi.h"
#include "mpi/check.h"

/* Rank r's rows: counts[r], or its part of the even split when counts is NULL. */
static size_t expected_count(size_t rows, const size_t *counts, int r, int size) {
  return counts ? counts[r] : rows / (size_t)size + ((size_t)r < rows % (size_t)size);
}

/* Create with `counts` (NULL: even) and return the code; on success check each rank's range
 * against the counts and destroy. */
static int create_with(size_t rows, const size_t *counts, size_t min_rows, int rank, int size) {
  hlb_spmd_options opt;
  hlb_spmd_options_default(&opt);
  opt.policy = "none";
  opt.use_papi = 0;
  opt.min_rows = min_rows;
  opt.initial_counts = counts;
  hlb_spmd *s = NULL;
  int rc = hlb_spmd_create(MPI_COMM_WORLD, rows, &opt, &s);
  if (rc) {
    CHECK(s == NULL, "a failed create returned an object");
    return rc;
  }
  size_t first = 0, count = 0, want_first = 0;
  hlb_spmd_range(s, &first, &count);
  for (int r = 0; r < rank; r++)
    want_first += expected_count(rows, counts, r, size);
  size_t want_count = expected_count(rows, counts, rank, size);
  CHECK(first == want_first && count == want_count, "range [%zu, +%zu), expected [%zu, +%zu)",
        first, count, want_first, want_count);
  hlb_spmd_destroy(s);
  return 0;
}

/* Every rank got `want`, and the message names `needle`. */
static void expect_error(int rc, int want, const char *needle, const char *what) {
  CHECK(rc == want, "%s: code %d, expected %d", what, rc, want);
  CHECK(strstr(hlb_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", what,
        hlb_last_error(), needle);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  size_t n = (size_t)size, rows = 100 * n + 7;
  size_t *counts = calloc(n, sizeof *counts);

  CHECK(create_with(rows, NULL, 1, rank, size) == 0, "even split: %s", hlb_last_error());

  /* Skewed: the last rank gets 10 rows, the others share the rest. */
  for (size_t r = 0; r + 1 < n; r++)
    counts[r] = (rows - 10) / (n - 1) + (r < (rows - 10) % (n - 1));
  counts[n - 1] = 10;
  CHECK(create_with(rows, counts, 1, rank, size) == 0, "skewed split: %s", hlb_last_error());

  expect_error(create_with(rows + 1, counts, 1, rank, size), HLB_EINVAL, "not", "wrong sum");
  char needle[64];
  snprintf(needle, sizeof needle, "initial_counts[%zu] = 10 is below min_rows 11", n - 1);
  expect_error(create_with(rows, counts, 11, rank, size), HLB_EINVAL, needle, "below min_rows");

  /* Rank 0 alone moves a row from its first entry to its last: the ranks disagree. */
  size_t *mine = calloc(n, sizeof *mine);
  memcpy(mine, counts, n * sizeof *mine);
  if (rank == 0) {
    mine[0]--;
    mine[n - 1]++;
  }
  expect_error(create_with(rows, mine, 1, rank, size), HLB_EINVAL, "initial_counts[0] differs",
               "ranks disagree");
  /* The last rank alone passes NULL. */
  expect_error(create_with(rows, rank == size - 1 ? NULL : counts, 1, rank, size), HLB_EINVAL,
               "some ranks", "NULL on one rank");
  /* One rank's own setting fails (an unknown policy there): the others fail too, and nobody
   * waits. */
  hlb_spmd_options opt;
  hlb_spmd_options_default(&opt);
  opt.policy = rank == 0 ? "no-such-policy" : "none";
  opt.use_papi = 0;
  hlb_spmd *s = NULL;
  int rc = hlb_spmd_create(MPI_COMM_WORLD, rows, &opt, &s);
  expect_error(rc, rank == 0 ? HLB_ENOTFOUND : HLB_EINVAL,
               rank == 0 ? "no-such-policy" : "another rank", "policy failing on rank 0");

  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("spmd start: %d ranks, %s\n", size, all ? "FAILED" : "ok");
  free(counts);
  free(mine);
  MPI_Finalize();
  return all ? 1 : 0;
}
