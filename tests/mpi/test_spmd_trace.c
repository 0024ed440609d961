/* HLB_SPMD_TRACE / hlb_spmd_options.trace: rank 0 writes one record per sampling interval, with
 * every rank's rows, at hlb_spmd_destroy; a path that cannot be written fails hlb_spmd_create on
 * every rank, naming the path, and nobody is left waiting in a collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlb/mpi.h"
#include "mpi/check.h"

static int create(const char *trace, hlb_spmd **s) {
  hlb_spmd_options opt;
  hlb_spmd_options_default(&opt);
  opt.policy = "none";
  opt.use_papi = 0;
  opt.interval = 5;
  opt.trace = trace;
  return hlb_spmd_create(MPI_COMM_WORLD, 40, &opt, s);
}

static size_t occurrences(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *text = calloc(1, 1 << 20);
  if (text && fread(text, 1, (1 << 20) - 1, f) == 0) text[0] = 0;
  fclose(f);
  return text;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);

  /* A directory that does not exist: rank 0 says which path, the others that a rank failed. */
  hlb_spmd *s = NULL;
  int rc = create("/nonexistent-hlb-dir/t.json", &s);
  CHECK(rc == (rank == 0 ? HLB_EIO : HLB_EINVAL) && s == NULL, "unwritable trace: code %d", rc);
  const char *want = rank == 0 ? "HLB_SPMD_TRACE=/nonexistent-hlb-dir/t.json" : "another rank";
  CHECK(strstr(hlb_last_error(), want) != NULL, "message '%s' lacks '%s'", hlb_last_error(), want);

  /* 23 iterations at 5 per interval: 4 intervals, traced on rank 0 only. */
  char path[64] = "";
  if (rank == 0) snprintf(path, sizeof path, "/tmp/hlb-spmd-trace-%ld.json", (long)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  rc = create(path, &s);
  CHECK(rc == 0, "create: %s", hlb_last_error());
  for (int it = 0; rc == 0 && it < 23; it++) {
    hlb_spmd_begin(s);
    int changed = 0;
    rc = hlb_spmd_end(s, 0.0, &changed);
  }
  CHECK(rc == 0, "iterations: %s", hlb_last_error());
  hlb_spmd_destroy(s);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char *text = slurp(path);
    CHECK(text != NULL, "no trace at %s", path);
    if (text) {
      char ranks[32], rows[32 + 8 * 16] = "\"rows\":[";
      snprintf(ranks, sizeof ranks, "\"ranks\":%d,", size);
      for (int r = 0; r < size && r < 16; r++) /* the even split of 40 rows */
        snprintf(rows + strlen(rows), 8, "%s%d", r ? "," : "", 40 / size + (r < 40 % size));
      CHECK(strstr(text, ranks) != NULL, "trace lacks %s", ranks);
      CHECK(occurrences(text, "{\"iteration\":") == 4, "%zu intervals traced, expected 4",
            occurrences(text, "{\"iteration\":"));
      CHECK(occurrences(text, rows) == 4, "the intervals' rows are not %s]", rows);
      CHECK(occurrences(text, "\"cat\":\"interval\"") == 4 * (size_t)size,
            "%zu interval slices, expected one per rank and interval",
            occurrences(text, "\"cat\":\"interval\""));
      free(text);
    }
    remove(path);
  }

  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("spmd trace: %d ranks, %s\n", size, all ? "FAILED" : "ok");
  MPI_Finalize();
  return all ? 1 : 0;
}
