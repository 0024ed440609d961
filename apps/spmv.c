/* Sparse matrix-vector products over the rows of a power-law matrix: the irregular app whose
 * cost lives in the data. Row lengths follow a Pareto law (a few rows hold hundreds of times
 * the mean) scaled by a smooth profile along the row index (dense and sparse regions, as a
 * web or social graph numbered by crawl order has), so cost varies both in spikes and
 * regionally, and equal blocks of rows cost very different times. Each run is SPMV_PASSES
 * steps of power iteration x <- A x / |A x|_inf; each step is one balanced pass over the rows
 * (one item = one row of y = A x), and the host normalises between passes. Checked against a
 * serial run of the same steps. The matrix is generated from the seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "common/error_internal.h"

/* Power-iteration steps per run: fixed, so a run's cost is known and the reference matches. */
#define SPMV_PASSES 8
/* Pareto law of the row lengths: shape 1.5 (finite mean, infinite variance: real heavy
 * tails), smallest row 4 nonzeros; the mean is 3 * 4 = 12 before the profile's scaling. */
#define SPMV_PARETO_SHAPE 1.5
#define SPMV_MIN_ROW 4.0
/* The longest row, as a share of the columns (a hub row never exceeds the matrix). */
#define SPMV_MAX_ROW_SHARE 0.05
/* Relative difference allowed between a device's y and the reference (sum order and FMA). */
#define SPMV_TOLERANCE 1e-9

typedef struct spmv {
  size_t n;       /* rows = columns */
  uint64_t *rowp; /* n + 1 row starts */
  uint32_t *col;  /* nnz column indices */
  double *val;    /* nnz values */
  double *x;      /* the current vector (the shared input of a pass) */
  double *y;      /* n: the output of a pass */
  double *final_x;
  hlb_codelet cl;
} spmv;

/* One row's product; the same loop as the device kernels below. */
#define SPMV_ROW_BODY                                                                              \
  "  double s = 0.0;\n"                                                                            \
  "  for (ulong k = rowp[row]; k < rowp[row + 1]; k++) s += val[k] * x[col[k]];\n"

static const char spmv_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void hlb_spmv(global const uchar *in, global uchar *outb, ulong begin,\n"
    "    ulong count, global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "    global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  global const ulong *rowp = (global const ulong *)s0;\n"
    "  global const uint *col = (global const uint *)s1;\n"
    "  global const double *val = (global const double *)s2;\n"
    "  global const double *x = (global const double *)s3;\n"
    "  ulong row = begin + i;\n" SPMV_ROW_BODY "  ((global double *)outb)[i] = s;\n"
    "}\n";

static double row_product(const spmv *m, size_t row, const double *x) {
  double s = 0.0;
  for (uint64_t k = m->rowp[row]; k < m->rowp[row + 1]; k++)
    s += m->val[k] * x[m->col[k]];
  return s;
}

static int spmv_cpu(const hlb_exec_call *c) {
  const spmv *m = c->user;
  const double *x = c->shared[3];
  double *y = c->out;
  long cnt = (long)c->count;
  /* Dynamic: a block's rows differ in length by orders of magnitude. */
#pragma omp parallel for num_threads(c->threads) schedule(dynamic, 64)
  for (long i = 0; i < cnt; i++)
    y[i] = row_product(m, c->begin + (size_t)i, x);
  return 0;
}

static void spmv_destroy(void *s) {
  spmv *m = s;
  if (!m) return;
  free(m->rowp);
  free(m->col);
  free(m->val);
  free(m->x);
  free(m->y);
  free(m->final_x);
  free(m);
}

/* The regional density along the rows: 1 plus three bumps at seeded places, between about
 * 0.3 and 4 times the mean, so neighbouring rows cost alike and distant ones do not. */
static double profile(double t, const double *centre) {
  double p = 0.3;
  for (int b = 0; b < 3; b++) {
    double d = (t - centre[b]) / 0.06;
    p += 3.0 * exp(-d * d);
  }
  return p;
}

static size_t row_length(size_t n, double t, const double *centre, uint64_t *seed) {
  double u = 1.0 - hlb__app_uniform(seed); /* (0, 1] */
  double len = SPMV_MIN_ROW * pow(u, -1.0 / SPMV_PARETO_SHAPE) * profile(t, centre);
  double cap = fmax(1.0, SPMV_MAX_ROW_SHARE * (double)n);
  return (size_t)fmin(fmax(1.0, len), cap);
}

static int spmv_alloc(spmv *m, size_t nnz) {
  m->col = malloc(nnz * sizeof *m->col);
  m->val = malloc(nnz * sizeof *m->val);
  m->x = malloc(m->n * sizeof *m->x);
  m->y = malloc(m->n * sizeof *m->y);
  m->final_x = malloc(m->n * sizeof *m->final_x);
  if (!m->col || !m->val || !m->x || !m->y || !m->final_x)
    return hlb__error(HLB_ENOMEM, "spmv: cannot allocate %zu rows with %zu nonzeros", m->n, nnz);
  return 0;
}

static int spmv_create(size_t n, uint64_t seed, void **out) {
  if (n > UINT32_MAX) return hlb__error(HLB_EINVAL, "spmv: %zu rows exceed 2^32", n);
  spmv *m = calloc(1, sizeof *m);
  if (!m || !(m->rowp = malloc((n + 1) * sizeof *m->rowp))) {
    free(m);
    return hlb__error(HLB_ENOMEM, "spmv: cannot allocate %zu rows", n);
  }
  m->n = n;
  double centre[3];
  for (int b = 0; b < 3; b++)
    centre[b] = hlb__app_uniform(&seed);
  m->rowp[0] = 0;
  for (size_t i = 0; i < n; i++)
    m->rowp[i + 1] = m->rowp[i] + row_length(n, (double)i / (double)n, centre, &seed);
  int rc = spmv_alloc(m, (size_t)m->rowp[n]);
  if (rc) {
    spmv_destroy(m);
    return rc;
  }
  /* Positive values keep the power iteration away from cancellation, so the device and the
   * reference agree to rounding. */
  for (uint64_t k = 0; k < m->rowp[n]; k++) {
    m->col[k] = (uint32_t)(hlb__app_uniform(&seed) * (double)n);
    m->val[k] = 0.5 + hlb__app_uniform(&seed);
  }
  m->cl = (hlb_codelet){.name = "spmv",
                        .user = m,
                        .out_bytes_per_item = sizeof(double),
                        .out = m->y,
                        .shared = {{m->rowp, (n + 1) * sizeof *m->rowp},
                                   {m->col, (size_t)m->rowp[n] * sizeof *m->col},
                                   {m->val, (size_t)m->rowp[n] * sizeof *m->val},
                                   {m->x, n * sizeof *m->x}},
                        .n_shared = 4,
                        .cpu = spmv_cpu,
                        .opencl_source = spmv_cl,
                        .opencl_kernel = "hlb_spmv",
                        .cuda = hlb__cuda_spmv,
                        /* The power law's long rows fall at random rows (the column and row
                         * draws are uniform): no block before them shows where. */
                        .items_vary = 1};
  *out = m;
  return 0;
}

static size_t spmv_items(const void *s) {
  return ((const spmv *)s)->n;
}

static void start_vector(size_t n, double *x) {
  for (size_t i = 0; i < n; i++)
    x[i] = 1.0;
}

/* x <- y / max|y|: the power iteration's step between passes. */
static void normalise(size_t n, const double *y, double *x) {
  double top = 0;
  for (size_t i = 0; i < n; i++)
    top = fmax(top, fabs(y[i]));
  for (size_t i = 0; i < n; i++)
    x[i] = top > 0 ? y[i] / top : 0.0;
}

static void spmv_clear(void *s) {
  spmv *m = s;
  /* NaN in every output row, so a row no block wrote fails the check. */
  for (size_t i = 0; i < m->n; i++)
    m->y[i] = NAN;
  start_vector(m->n, m->x);
}

static int spmv_run(void *s, hlb_app_pass_fn run_pass, void *ctx, hlb_exec_stats *st) {
  spmv *m = s;
  hlb_exec_stats total = {0}, pass = {0};
  int rc = 0;
  for (int it = 0; it < SPMV_PASSES && rc == 0; it++) {
    if (it > 0) normalise(m->n, m->y, m->x);
    /* Between passes the host changes x (shared buffer 3) only; the matrix stays. */
    rc = run_pass(ctx, &m->cl, m->n, it ? 1u << 3 : HLB_APP_ALL_SHARED, st ? &pass : NULL);
    if (rc == 0 && st) rc = hlb__app_stats_append(&total, &pass);
  }
  hlb_exec_stats_clear(&pass);
  memcpy(m->final_x, m->y, m->n * sizeof *m->y);
  if (st) {
    hlb_exec_stats_clear(st);
    *st = total;
  } else {
    hlb_exec_stats_clear(&total);
  }
  return rc;
}

static int spmv_verify(void *s) {
  spmv *m = s;
  double *x = malloc(m->n * sizeof *x), *y = malloc(m->n * sizeof *y);
  int rc = 0;
  if (!x || !y) rc = hlb__error(HLB_ENOMEM, "spmv: out of memory for the check");
  if (rc == 0) start_vector(m->n, x);
  for (int it = 0; it < SPMV_PASSES && rc == 0; it++) {
    if (it > 0) normalise(m->n, y, x);
    for (size_t i = 0; i < m->n; i++)
      y[i] = row_product(m, i, x);
  }
  for (size_t i = 0; i < m->n && rc == 0; i++)
    if (!(fabs(m->final_x[i] - y[i]) <= SPMV_TOLERANCE * fmax(1.0, fabs(y[i]))))
      rc = hlb__error(HLB_EVERIFY, "spmv: row %zu of the last product = %.17g, expected %.17g", i,
                      m->final_x[i], y[i]);
  free(x);
  free(y);
  return rc;
}

const hlb__app_ops hlb__app_spmv = {
    .info = {.name = "spmv",
             .description = "power iteration on a power-law sparse matrix, 8 passes of one "
                            "balanced pass over the rows each: irregular cost per row",
             .size_meaning = "rows",
             .default_size = 1000000,
             .test_size = 20000,
             .max_size = 50000000},
    .create = spmv_create,
    .destroy = spmv_destroy,
    .items = spmv_items,
    .clear = spmv_clear,
    .run = spmv_run,
    .verify = spmv_verify,
};
