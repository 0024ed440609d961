/* k-means (Lloyd) over n points in D dimensions (PLB-HAC, "Applications"). Each iteration
 * is one balanced pass: the blocks assign their points to the nearest centroid (the costly
 * O(n k D) part, on any PU), then the host recomputes the centroids from the labels. The
 * executor carries the PUs' measured speeds from one pass to the next, so later iterations
 * start balanced. Checked against a serial run of the same iterations from the same start. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "common/error_internal.h"

#define KM_D 4
#define KM_K 8
/* Iterations per run: fixed, so a run's cost is known and the reference is comparable. */
#define KM_ITERS 6

typedef struct km {
  size_t n;
  double *pts;              /* n x KM_D */
  int32_t *label;           /* n */
  double cent[KM_K * KM_D]; /* the current centroids (the shared buffer of a pass) */
  double params[2];         /* k, d for the device kernels */
  double final_cent[KM_K * KM_D];
  hlb_codelet cl;
} km;

static const char km_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void hlb_kmeans(global const uchar *in, global uchar *out, ulong begin,\n"
    "    ulong count, global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "    global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  global const double *c = (global const double *)s0;\n"
    "  int k = (int)((global const double *)s1)[0], d = (int)((global const double *)s1)[1];\n"
    "  global const double *p = (global const double *)in + i * d;\n"
    "  int best = 0; double bd = INFINITY;\n"
    "  for (int j = 0; j < k; j++) {\n"
    "    double s = 0.0;\n"
    "    for (int q = 0; q < d; q++) { double t = p[q] - c[j * d + q]; s += t * t; }\n"
    "    if (s < bd) { bd = s; best = j; }\n"
    "  }\n"
    "  ((global int *)out)[i] = best;\n"
    "}\n";

static double dist2(const double *p, const double *c) {
  double s = 0;
  for (int q = 0; q < KM_D; q++) {
    double t = p[q] - c[q];
    s += t * t;
  }
  return s;
}

static int32_t nearest(const double *p, const double *cent) {
  int32_t best = 0;
  double bd = INFINITY;
  for (int j = 0; j < KM_K; j++) {
    double s = dist2(p, cent + j * KM_D);
    if (s < bd) {
      bd = s;
      best = j;
    }
  }
  return best;
}

static int km_cpu(const hlb_exec_call *c) {
  const double *pts = c->in, *cent = c->shared[0];
  int32_t *lab = c->out;
  long n = (long)c->count;
#pragma omp parallel for num_threads(c->threads) schedule(static)
  for (long i = 0; i < n; i++)
    lab[i] = nearest(pts + i * KM_D, cent);
  return 0;
}

/* New centroids: the mean of each cluster's points (an empty cluster keeps its centroid). */
static void update(const double *pts, const int32_t *lab, size_t n, double *cent) {
  double sum[KM_K * KM_D] = {0};
  size_t cnt[KM_K] = {0};
  for (size_t i = 0; i < n; i++) {
    cnt[lab[i]]++;
    for (int q = 0; q < KM_D; q++)
      sum[lab[i] * KM_D + q] += pts[i * KM_D + q];
  }
  for (int j = 0; j < KM_K; j++)
    for (int q = 0; cnt[j] && q < KM_D; q++)
      cent[j * KM_D + q] = sum[j * KM_D + q] / (double)cnt[j];
}

static void km_destroy(void *s) {
  km *m = s;
  if (!m) return;
  free(m->pts);
  free(m->label);
  free(m);
}

/* Points around KM_K random centres, so the clusters are real. */
static int km_create(size_t n, uint64_t seed, void **out) {
  km *m = calloc(1, sizeof *m);
  if (!m) return hlb__error(HLB_ENOMEM, "kmeans: out of memory");
  m->n = n;
  m->pts = malloc(n * KM_D * sizeof(double));
  m->label = malloc(n * sizeof(int32_t));
  if (!m->pts || !m->label) {
    km_destroy(m);
    return hlb__error(HLB_ENOMEM, "kmeans: cannot allocate %zu points", n);
  }
  double centre[KM_K * KM_D];
  for (int i = 0; i < KM_K * KM_D; i++)
    centre[i] = 10 * hlb__app_uniform(&seed);
  for (size_t i = 0; i < n; i++) {
    int j = (int)(hlb__app_uniform(&seed) * KM_K);
    for (int q = 0; q < KM_D; q++)
      m->pts[i * KM_D + q] = centre[j * KM_D + q] + hlb__app_uniform(&seed) - 0.5;
  }
  m->params[0] = KM_K;
  m->params[1] = KM_D;
  m->cl = (hlb_codelet){.name = "kmeans",
                        .user = m,
                        .in_bytes_per_item = KM_D * sizeof(double),
                        .out_bytes_per_item = sizeof(int32_t),
                        .in = m->pts,
                        .out = m->label,
                        .shared = {{m->cent, sizeof m->cent}, {m->params, sizeof m->params}},
                        .n_shared = 2,
                        .cpu = km_cpu,
                        .opencl_source = km_cl,
                        .opencl_kernel = "hlb_kmeans",
                        .cuda = hlb__cuda_kmeans};
  *out = m;
  return 0;
}

static size_t km_items(const void *s) {
  return ((const km *)s)->n;
}

/* The starting centroids: the first KM_K points (deterministic). */
static void start(const km *m, double *cent) {
  memcpy(cent, m->pts, KM_K * KM_D * sizeof(double));
}

static void km_clear(void *s) {
  km *m = s;
  for (size_t i = 0; i < m->n; i++)
    m->label[i] = -1;
  start(m, m->cent);
}

static int km_run(void *s, hlb_app_pass_fn run_pass, void *ctx, hlb_exec_stats *st) {
  km *m = s;
  hlb_exec_stats total = {0}, pass = {0};
  int rc = 0;
  for (int it = 0; it < KM_ITERS && rc == 0; it++) {
    /* Between passes the host changes the centroids (shared buffer 0) only. */
    rc = run_pass(ctx, &m->cl, m->n, it ? 1u : HLB_APP_ALL_SHARED, st ? &pass : NULL);
    if (rc == 0 && st) rc = hlb__app_stats_append(&total, &pass);
    if (rc == 0) update(m->pts, m->label, m->n, m->cent);
  }
  hlb_exec_stats_clear(&pass);
  memcpy(m->final_cent, m->cent, sizeof m->cent);
  if (st) {
    hlb_exec_stats_clear(st);
    *st = total;
  } else {
    hlb_exec_stats_clear(&total);
  }
  return rc;
}

static int km_verify(void *s) {
  km *m = s;
  int32_t *lab = malloc(m->n * sizeof *lab);
  if (!lab) return hlb__error(HLB_ENOMEM, "kmeans: out of memory for the check");
  double cent[KM_K * KM_D], prev[KM_K * KM_D];
  start(m, cent);
  for (int it = 0; it < KM_ITERS; it++) {
    memcpy(prev, cent, sizeof cent);
    for (size_t i = 0; i < m->n; i++)
      lab[i] = nearest(m->pts + i * KM_D, cent);
    update(m->pts, lab, m->n, cent);
  }
  int rc = 0;
  /* The labels of the last pass were computed against `prev`; a different label is only
   * acceptable as an exact tie of distances (rounding order differs between devices). */
  for (size_t i = 0; i < m->n && rc == 0; i++)
    if (lab[i] != m->label[i]) {
      const double *p = m->pts + i * KM_D;
      int32_t got = m->label[i];
      if (got < 0 || got >= KM_K ||
          fabs(dist2(p, prev + got * KM_D) - dist2(p, prev + lab[i] * KM_D)) > 1e-12)
        rc = hlb__error(HLB_EVERIFY, "kmeans: point %zu labelled %d, expected %d", i, (int)got,
                        (int)lab[i]);
    }
  for (int j = 0; j < KM_K * KM_D && rc == 0; j++)
    if (!(fabs(cent[j] - m->final_cent[j]) <= 1e-9 * (1 + fabs(cent[j]))))
      rc = hlb__error(HLB_EVERIFY, "kmeans: centroid %d coordinate %d = %.17g, expected %.17g",
                      j / KM_D, j % KM_D, m->final_cent[j], cent[j]);
  free(lab);
  return rc;
}

const hlb__app_ops hlb__app_kmeans = {
    .info = {.name = "kmeans",
             .description = "k-means, 8 clusters in 4-D, 6 iterations of one balanced pass "
                            "each (PLB-HAC)",
             .size_meaning = "points",
             .default_size = 2000000,
             .test_size = 20000,
             .max_size = 200000000,
             /* The starting centroids are the first KM_K points: fewer points cannot start. */
             .min_size = KM_K},
    .create = km_create,
    .destroy = km_destroy,
    .items = km_items,
    .clear = km_clear,
    .run = km_run,
    .verify = km_verify,
};
