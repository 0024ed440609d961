/* k-means passes on one executor (the session: docs/executor.md, "A session") against a new
 * executor for every pass, the issue #14 figure "kmeans: time per iteration before and after".
 *
 * Each pass is one hlb_executor_run over the points (labels against the current centroids,
 * cpu and OpenCL kernels, the centroids a shared buffer) and the host's centroid update, as
 * apps/kmeans.c does. Per pass it records the iteration's wall time, the run's set-up outside
 * its clock (hlb_executor_run's wall time minus the makespan) and the PUs' summed setup_s.
 * The modes are interleaved run by run (--runs R, default 5) and each figure is the median
 * over runs of the median over passes 2..P (pass 1 builds the kernels in either mode, and is
 * shown apart). Devices are kept (keep_weak_devices), so a device that is slower than its core
 * still takes part in every pass and its set-up is seen. Uses the public API only, so the
 * same file builds against an older hlb for a before/after. Never passes or fails on time.
 *
 * Usage: bench_session [--quick] [--points N] [--passes P] [--runs R] [--pus SPEC]
 *                      [--mode session|per-pass|both]
 * One line per run and mode (RUN ...), then the medians. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_median.h"
#include "hlb/error.h"
#include "hlb/exec.h"

#define D 4
#define K 8

static const char km_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void bench_kmeans(global const uchar *in, global uchar *out, ulong begin,\n"
    "    ulong count, global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "    global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  global const double *c = (global const double *)s0;\n"
    "  global const double *p = (global const double *)in + i * 4;\n"
    "  int best = 0; double bd = INFINITY;\n"
    "  for (int j = 0; j < 8; j++) {\n"
    "    double s = 0.0;\n"
    "    for (int q = 0; q < 4; q++) { double t = p[q] - c[j * 4 + q]; s += t * t; }\n"
    "    if (s < bd) { bd = s; best = j; }\n"
    "  }\n"
    "  ((global int *)out)[i] = best;\n"
    "}\n";

static int km_cpu(const hlb_exec_call *c) {
  const double *pts = c->in, *cent = c->shared[0];
  int *lab = c->out;
  long n = (long)c->count;
#pragma omp parallel for num_threads(c->threads) schedule(static)
  for (long i = 0; i < n; i++) {
    int best = 0;
    double bd = INFINITY;
    for (int j = 0; j < K; j++) {
      double s = 0;
      for (int q = 0; q < D; q++) {
        double t = pts[i * D + q] - cent[j * D + q];
        s += t * t;
      }
      if (s < bd) bd = s, best = j;
    }
    lab[i] = best;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void update(const double *pts, const int *lab, size_t n, double *cent) {
  double sum[K * D] = {0};
  size_t cnt[K] = {0};
  for (size_t i = 0; i < n; i++) {
    cnt[lab[i]]++;
    for (int q = 0; q < D; q++)
      sum[lab[i] * D + q] += pts[i * D + q];
  }
  for (int j = 0; j < K; j++)
    for (int q = 0; cnt[j] && q < D; q++)
      cent[j * D + q] = sum[j * D + q] / (double)cnt[j];
}

typedef struct figures {
  double first_iter, iter, overhead, pu_setup; /* seconds: pass 1, medians of passes 2..P */
} figures;

/* One run of `passes` passes; per_pass: a new executor for every pass. */
static int run_once(const hlb_exec_pu *pus, unsigned n_pus, size_t n, const double *pts, int *lab,
                    unsigned passes, int per_pass, figures *f) {
  double cent[K * D];
  memcpy(cent, pts, sizeof cent);
  hlb_codelet cl = {.name = "bench-kmeans",
                    .in_bytes_per_item = D * sizeof(double),
                    .out_bytes_per_item = sizeof(int),
                    .in = pts,
                    .out = lab,
                    .shared = {{cent, sizeof cent}},
                    .n_shared = 1,
                    .cpu = km_cpu,
                    .opencl_source = km_cl,
                    .opencl_kernel = "bench_kmeans"};
  hlb_exec_options opt;
  hlb_exec_options_default(&opt);
  opt.keep_weak_devices = 1;
  opt.models = HLB_MODELS_OFF;
  double *iter = calloc(passes, sizeof *iter), *over = calloc(passes, sizeof *over),
         *setup = calloc(passes, sizeof *setup);
  hlb_executor *ex = NULL;
  int rc = iter && over && setup ? 0 : HLB_ENOMEM;
  for (unsigned p = 0; p < passes && rc == 0; p++) {
    double t0 = now_s();
    if (!ex && (rc = hlb_executor_create(pus, n_pus, &ex))) break;
    hlb_exec_stats st = {0};
    double t1 = now_s();
    rc = hlb_executor_run(ex, &cl, n, &opt, &st);
    double t2 = now_s();
    if (rc == 0) update(pts, lab, n, cent);
    if (per_pass) {
      hlb_executor_destroy(ex);
      ex = NULL;
    }
    iter[p] = now_s() - t0;
    over[p] = (t2 - t1) - st.makespan_s;
    for (unsigned i = 0; i < st.n_pus; i++)
      setup[p] += st.per_pu[i].setup_s;
    hlb_exec_stats_clear(&st);
  }
  hlb_executor_destroy(ex);
  if (rc == 0) {
    f->first_iter = iter[0];
    f->iter = bench_median(iter + 1, passes - 1);
    f->overhead = bench_median(over + 1, passes - 1);
    f->pu_setup = bench_median(setup + 1, passes - 1);
  }
  free(iter);
  free(over);
  free(setup);
  return rc;
}

int main(int argc, char **argv) {
  size_t n = 2000000;
  unsigned passes = 10, runs = 5;
  const char *spec = "cpu,opencl:0", *mode = "both";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      n = 20000;
      passes = 3;
      runs = 1;
    } else if (!strcmp(argv[i], "--points") && i + 1 < argc) {
      n = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
      passes = (unsigned)atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = (unsigned)atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--pus") && i + 1 < argc) {
      spec = argv[++i];
    } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
      mode = argv[++i];
    } else {
      fprintf(stderr,
              "usage: bench_session [--quick] [--points N] [--passes P] [--runs R] [--pus SPEC] "
              "[--mode session|per-pass|both]\nbad argument '%s'\n",
              argv[i]);
      return 2;
    }
  }
  int modes = !strcmp(mode, "both")       ? 3
              : !strcmp(mode, "session")  ? 1
              : !strcmp(mode, "per-pass") ? 2
                                          : 0;
  if (n < K || passes < 2 || runs < 1 || !modes) {
    fprintf(stderr,
            "bench_session: need --points >= %d, --passes >= 2, --runs >= 1 and a mode "
            "of session, per-pass or both (got %zu, %u, %u, '%s')\n",
            K, n, passes, runs, mode);
    return 2;
  }
  hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
  unsigned n_pus = 0;
  if (hlb_exec_parse_pus(spec, pus, HLB_EXEC_MAX_LOCAL_PUS, &n_pus)) {
    /* No OpenCL device here: the cpu alone still shows the run's own set-up. */
    fprintf(stderr, "bench_session: %s; using cpu\n", hlb_last_error());
    spec = "cpu";
    if (hlb_exec_parse_pus(spec, pus, HLB_EXEC_MAX_LOCAL_PUS, &n_pus)) {
      fprintf(stderr, "bench_session: %s\n", hlb_last_error());
      return 1;
    }
  }
  double *pts = malloc(n * D * sizeof *pts);
  int *lab = malloc(n * sizeof *lab);
  if (!pts || !lab) {
    fprintf(stderr, "bench_session: cannot allocate %zu points\n", n);
    return 1;
  }
  uint64_t seed = 42;
  double centre[K * D];
  for (int i = 0; i < K * D; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    centre[i] = 10.0 * (double)(seed >> 11) / 9007199254740992.0;
  }
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    int j = (int)((seed >> 33) % K);
    for (int q = 0; q < D; q++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      pts[i * D + q] = centre[j * D + q] + (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
  }
  printf("kmeans %zu points, %u passes, PUs %s, %u runs per mode (interleaved)\n", n, passes, spec,
         runs);
  static const char *name[2] = {"session", "per-pass"};
  double *v[2][4];
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < 4; k++)
      v[m][k] = calloc(runs, sizeof(double));
  int rc = 0;
  for (unsigned r = 0; r < runs && rc == 0; r++)
    for (int m = 0; m < 2 && rc == 0; m++) {
      if (!(modes & (1 << m))) continue;
      figures f = {0};
      rc = run_once(pus, n_pus, n, pts, lab, passes, m == 1, &f);
      if (rc) {
        fprintf(stderr, "bench_session: %s run %u: %s\n", name[m], r + 1, hlb_last_error());
        break;
      }
      printf("RUN mode=%s run=%u first_iter_ms=%.3f iter_ms=%.3f overhead_ms=%.3f "
             "pu_setup_ms=%.3f\n",
             name[m], r + 1, 1e3 * f.first_iter, 1e3 * f.iter, 1e3 * f.overhead, 1e3 * f.pu_setup);
      v[m][0][r] = f.first_iter, v[m][1][r] = f.iter, v[m][2][r] = f.overhead,
      v[m][3][r] = f.pu_setup;
    }
  if (rc == 0) {
    printf("\n| mode | pass 1 (ms) | time per iteration, passes 2..%u (ms) | run set-up outside "
           "the clock (ms) | PUs' setup_s summed (ms) |\n|---|---|---|---|---|\n",
           passes);
    for (int m = 0; m < 2; m++) {
      if (!(modes & (1 << m))) continue;
      printf("| %s | %.2f | %.2f | %.3f | %.3f |\n", name[m], 1e3 * bench_median(v[m][0], runs),
             1e3 * bench_median(v[m][1], runs), 1e3 * bench_median(v[m][2], runs),
             1e3 * bench_median(v[m][3], runs));
    }
  }
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < 4; k++)
      free(v[m][k]);
  free(pts);
  free(lab);
  return rc ? 1 : 0;
}
