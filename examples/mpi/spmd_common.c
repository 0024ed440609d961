#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spmd_common.h"

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!s[0] || *end || errno || v < lo || v > hi) {
    fprintf(stderr, "%s: expected a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

/* "A,B,..." of row counts, each at least 1. */
static int parse_counts(const char *opt, const char *s, spmd_args *a) {
  a->n_counts = 0;
  for (const char *p = s;; p++) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno || v == 0 || *p == '-' || (*end && *end != ',')) {
      fprintf(stderr, "%s: expected row counts >= 1 separated by commas, got '%s'\n", opt, s);
      return -1;
    }
    if (a->n_counts == SPMD_MAX_COUNTS) {
      fprintf(stderr, "%s: more than %d counts\n", opt, SPMD_MAX_COUNTS);
      return -1;
    }
    a->counts[a->n_counts++] = (size_t)v;
    p = end;
    if (!*p) return 0;
  }
}

/* Iterations of the run, for the progress line. */
static unsigned progress_total;

int spmd_parse_args(int argc, char **argv, spmd_args *a, const char *usage) {
  memset(a, 0, sizeof *a);
  a->rows = 1000;
  a->iterations = 1000;
  a->interval = 100;
  a->inject_rank = -1;
  a->inject_to = ~0u;
  a->inject_frac = 1.0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "--help")) {
      printf("%s", usage);
      exit(0);
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: unknown option or missing value\n", o);
      return 2;
    }
    const char *v = argv[++i];
    double x = 0;
    int bad = 0;
    if (!strcmp(o, "--policy"))
      a->policy = v;
    else if (!strcmp(o, "--params"))
      a->params = v;
    else if (!strcmp(o, "--mtx"))
      a->mtx = v;
    else if (!strcmp(o, "--counts"))
      bad = parse_counts(o, v, a);
    else if (!strcmp(o, "--rows") && !(bad = parse_num(o, v, 1, 1e9, &x)))
      a->rows = (size_t)x;
    else if (!strcmp(o, "--iters") && !(bad = parse_num(o, v, 1, 1e9, &x)))
      a->iterations = (unsigned)x;
    else if (!strcmp(o, "--interval") && !(bad = parse_num(o, v, 1, 1e9, &x)))
      a->interval = (unsigned)x;
    else if (!strcmp(o, "--inject-rank") && !(bad = parse_num(o, v, 0, 1e6, &x)))
      a->inject_rank = (int)x;
    else if (!strcmp(o, "--inject-from") && !(bad = parse_num(o, v, 0, 1e9, &x)))
      a->inject_from = (unsigned)x;
    else if (!strcmp(o, "--inject-to") && !(bad = parse_num(o, v, 0, 1e9, &x)))
      a->inject_to = (unsigned)x;
    else if (!strcmp(o, "--inject-frac") && !(bad = parse_num(o, v, 0, 100, &x)))
      a->inject_frac = x;
    else if (!bad) {
      fprintf(stderr, "%s: unknown option\n", o);
      return 2;
    }
    if (bad) return 2;
  }
  progress_total = a->iterations;
  return 0;
}

void spmd_inject_load(const spmd_args *a, int rank, unsigned it, double compute_s) {
  if (rank != a->inject_rank || it < a->inject_from || it >= a->inject_to) return;
  /* Sleeps shorter than a millisecond overshoot badly; owe them and pay in larger pieces so the
   * emulated load stays proportional to the work on average. */
  static double owed_s = 0.0;
  owed_s += compute_s * a->inject_frac;
  if (owed_s < 1e-3) return;
  double t0 = MPI_Wtime();
  struct timespec ts = {(time_t)owed_s, (long)((owed_s - (double)(time_t)owed_s) * 1e9)};
  nanosleep(&ts, NULL);
  owed_s -= MPI_Wtime() - t0;
}

uint64_t spmd_hash(const void *data, size_t bytes) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

#define MAX_NOTES 256
static unsigned note_iter[MAX_NOTES];
static double note_time[MAX_NOTES];
static unsigned n_notes;
static double start_mpi_s, start_epoch_s;

void spmd_start_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  start_epoch_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  start_mpi_s = MPI_Wtime();
}

void spmd_note_redistribution(unsigned it) {
  if (n_notes < MAX_NOTES) {
    note_iter[n_notes] = it;
    note_time[n_notes++] = MPI_Wtime() - start_mpi_s;
  }
}

int spmd_create(const spmd_args *a, const char *app, size_t rows, hlb_spmd **out) {
  hlb_spmd_options opt;
  hlb_spmd_options_default(&opt);
  if (a->policy) opt.policy = a->policy;
  opt.params = a->params;
  opt.interval = a->interval;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (a->n_counts && a->n_counts != (unsigned)size) {
    if (rank == 0)
      fprintf(stderr, "hlb_%s: --counts has %u entries for %d ranks\n", app, a->n_counts, size);
    return 2;
  }
  if (a->n_counts) opt.initial_counts = a->counts;
  int rc = hlb_spmd_create(MPI_COMM_WORLD, rows, &opt, out);
  if (rc && rank == 0) fprintf(stderr, "hlb_%s: %s\n", app, hlb_last_error());
  return rc;
}

void spmd_layout_ints(const hlb_spmd *s, int size, int *counts, int *displs) {
  const size_t *c, *d;
  hlb_spmd_layout(s, &c, &d);
  for (int r = 0; r < size; r++) {
    counts[r] = (int)c[r];
    displs[r] = (int)d[r];
  }
}

/* Whether the person's stderr is a terminal. Under mpirun a rank's stderr is a pipe to mpirun
 * even then (Open MPI forwards it), so when rank 0's own stderr is not a terminal, ask about
 * its parent's: mpirun, when it started rank 0 on this node (Linux /proc). */
static int stderr_is_terminal(void) {
  if (isatty(STDERR_FILENO)) return 1;
  char path[64], target[256];
  snprintf(path, sizeof path, "/proc/%ld/fd/2", (long)getppid());
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return !strncmp(target, "/dev/pts/", 9) || !strncmp(target, "/dev/tty", 8);
}

/* Rank 0's progress line on a terminal (stderr), at most ten times a second; nothing when
 * stderr is a pipe or a file, so the JSON report and the logs stay the same. */
static int progress_shown;
static void show_progress(const char *app, unsigned it) {
  static double last_s = -1;
  static int tty = -1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (tty < 0) tty = rank == 0 && stderr_is_terminal();
  double now = MPI_Wtime() - start_mpi_s;
  if (!tty || (now - last_s < 0.1 && it + 1 < progress_total)) return;
  last_s = now;
  progress_shown = 1;
  fprintf(stderr, "\r\033[Khlb_%s: iteration %u/%u, %.1f s, %u redistributions", app, it + 1,
          progress_total, now, n_notes);
  fflush(stderr);
}

void spmd_end_iteration(hlb_spmd *s, const char *app, double work, unsigned it) {
  int changed = 0;
  if (hlb_spmd_end(s, work, &changed)) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "hlb_%s: rank %d: %s\n", app, rank, hlb_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (changed) spmd_note_redistribution(it);
  show_progress(app, it);
}

void spmd_report(const char *app, const spmd_args *a, hlb_spmd *s, double time_s, double error,
                 uint64_t checksum, int rank) {
  hlb_spmd_stats st;
  hlb_spmd_stats_get(s, &st);
  if (rank != 0) return;
  if (progress_shown) fputs("\r\033[K", stderr);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t *counts = NULL;
  hlb_spmd_layout(s, &counts, NULL);
  size_t total_rows = 0; /* CG's --rows is the grid side; report the rows that were split */
  for (int r = 0; r < size; r++)
    total_rows += counts[r];
  printf("{\"app\":\"%s\",\"ranks\":%d,\"rows\":%zu,\"iterations\":%u,\"policy\":\"%s\","
         "\"time_s\":%.6f,\"redistributions\":%u,\"redistribute_s\":%.6f,\"rows_moved\":%zu,"
         "\"first_redistribution_iter\":%ld,\"shared_intervals\":%u,\"papi\":%s,\"error\":%.3e,"
         "\"checksum\":\"%016llx\",\"final_counts\":[",
         app, size, total_rows, a->iterations, a->policy ? a->policy : "default", time_s,
         st.redistributions, st.redistribute_s, st.rows_moved,
         hlb_spmd_redistribution_iteration(s, 0), st.shared_intervals, st.papi ? "true" : "false",
         error, (unsigned long long)checksum);
  for (int r = 0; r < size; r++)
    printf("%s%zu", r ? "," : "", counts[r]);
  printf("],\"start_epoch\":%.3f,\"redistributions_at\":[", start_epoch_s);
  for (unsigned k = 0; k < n_notes; k++)
    printf("%s[%u,%.3f]", k ? "," : "", note_iter[k], note_time[k]);
  printf("]}\n");
  fflush(stdout);
}
