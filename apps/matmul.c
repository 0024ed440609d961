/* Matrix multiplication C = A B of n x n doubles, split by rows of A and C (PLB-HeC,
 * "Applications": every PU holds the whole shared operand, the other is divided by the
 * balancer; one row is the smallest block). cpu: OpenBLAS dgemm; OpenCL: one work item per
 * element; CUDA: cuBLAS dgemm. Checked with Freivalds' test C r = A (B r) for random r,
 * which sees every row, plus exact rows against a naive product. */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "common/error_internal.h"

typedef struct matmul {
  size_t n;
  double *a, *b, *c;
  double params[1]; /* n, for the device kernels */
  hlb_codelet cl;
} matmul;

static const char matmul_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void hlb_matmul(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "                       global const uchar *s0, global const uchar *s1,\n"
    "                       global const uchar *s2, global const uchar *s3) {\n"
    "  global const double *a = (global const double *)in;\n"
    "  global const double *b = (global const double *)s0;\n"
    "  global double *c = (global double *)out;\n"
    "  ulong n = (ulong)((global const double *)s1)[0];\n"
    "  ulong g = get_global_id(0), i = g / n, j = g % n;\n"
    "  if (i >= count) return;\n"
    "  double acc = 0.0;\n"
    "  for (ulong k = 0; k < n; k++) acc += a[i * n + k] * b[k * n + j];\n"
    "  c[i * n + j] = acc;\n"
    "}\n";

static int matmul_cpu(const hlb_exec_call *c) {
  const matmul *m = c->user;
  int n = (int)m->n;
  /* OpenBLAS parallelises the block over the PU's cores itself. Its thread count is one
   * global setting: change it only when it differs, not under another PU's running dgemm
   * at every block. */
  static _Atomic int blas_threads = -1;
  if (atomic_exchange(&blas_threads, (int)c->threads) != (int)c->threads)
    openblas_set_num_threads((int)c->threads);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->count, n, n, 1.0, c->in, n,
              c->shared[0], n, 0.0, c->out, n);
  return 0;
}

static void matmul_destroy(void *s) {
  matmul *m = s;
  if (!m) return;
  free(m->a);
  free(m->b);
  free(m->c);
  free(m);
}

static int matmul_create(size_t n, uint64_t seed, void **out) {
  matmul *m = calloc(1, sizeof *m);
  if (!m) return hlb__error(HLB_ENOMEM, "matmul: out of memory");
  m->n = n;
  m->a = malloc(n * n * sizeof(double));
  m->b = malloc(n * n * sizeof(double));
  m->c = calloc(n * n, sizeof(double));
  if (!m->a || !m->b || !m->c) {
    matmul_destroy(m);
    return hlb__error(HLB_ENOMEM, "matmul: cannot allocate three %zu x %zu matrices", n, n);
  }
  for (size_t i = 0; i < n * n; i++) {
    m->a[i] = hlb__app_uniform(&seed) - 0.5;
    m->b[i] = hlb__app_uniform(&seed) - 0.5;
  }
  m->params[0] = (double)n;
  m->cl = (hlb_codelet){.name = "matmul",
                        .user = m,
                        .in_bytes_per_item = n * sizeof(double),
                        .out_bytes_per_item = n * sizeof(double),
                        .in = m->a,
                        .out = m->c,
                        .shared = {{m->b, n * n * sizeof(double)}, {m->params, sizeof m->params}},
                        .n_shared = 2,
                        .cpu = matmul_cpu,
                        .opencl_source = matmul_cl,
                        .opencl_kernel = "hlb_matmul",
                        .opencl_work_per_item = n,
                        .cuda = hlb__cuda_matmul};
  *out = m;
  return 0;
}

static size_t matmul_items(const void *s) {
  return ((const matmul *)s)->n;
}

static void matmul_clear(void *s) {
  matmul *m = s;
  /* NaN, so a row nobody computed cannot pass the check by accident. */
  for (size_t i = 0; i < m->n * m->n; i++)
    m->c[i] = NAN;
}

static const hlb_codelet *matmul_codelet(void *s) {
  return &((matmul *)s)->cl;
}

/* y = M x for an n x n row-major M. */
static void matvec(const double *mat, const double *x, double *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double acc = 0;
    for (size_t k = 0; k < n; k++)
      acc += mat[i * n + k] * x[k];
    y[i] = acc;
  }
}

/* Freivalds: C r must equal A (B r) in every row (tolerance for rounding order). */
static int freivalds(const matmul *m, double *r, double *br, double *abr, double *cr) {
  size_t n = m->n;
  uint64_t seed = 12345;
  for (size_t i = 0; i < n; i++)
    r[i] = hlb__app_uniform(&seed) - 0.5;
  matvec(m->b, r, br, n);
  matvec(m->a, br, abr, n);
  matvec(m->c, r, cr, n);
  for (size_t i = 0; i < n; i++) {
    double tol = 1e-9 * (double)n;
    if (!(fabs(cr[i] - abr[i]) <= tol))
      return hlb__error(HLB_EVERIFY,
                        "matmul: row %zu of C is wrong: (C r)[%zu] = %.17g, "
                        "(A B r)[%zu] = %.17g",
                        i, i, cr[i], i, abr[i]);
  }
  return 0;
}

/* A few rows element by element: first, middle, last. */
static int exact_rows(const matmul *m) {
  size_t n = m->n, rows[3] = {0, n / 2, n - 1};
  for (int k = 0; k < 3; k++)
    for (size_t j = 0; j < n; j++) {
      size_t i = rows[k];
      double acc = 0;
      for (size_t q = 0; q < n; q++)
        acc += m->a[i * n + q] * m->b[q * n + j];
      if (!(fabs(acc - m->c[i * n + j]) <= 1e-10 * (double)n))
        return hlb__error(HLB_EVERIFY, "matmul: C[%zu][%zu] = %.17g, expected %.17g", i, j,
                          m->c[i * n + j], acc);
    }
  return 0;
}

static int matmul_verify(void *s) {
  matmul *m = s;
  double *w = malloc(4 * m->n * sizeof(double));
  if (!w) return hlb__error(HLB_ENOMEM, "matmul: out of memory for the check");
  int rc = freivalds(m, w, w + m->n, w + 2 * m->n, w + 3 * m->n);
  free(w);
  return rc ? rc : exact_rows(m);
}

const hlb__app_ops hlb__app_matmul = {
    .info = {.name = "matmul",
             .description = "C = A B of n x n doubles, split by rows (PLB-HeC and PLB-HAC)",
             .size_meaning = "matrix order n",
             .default_size = 1536,
             .test_size = 96,
             .max_size = 32768},
    .create = matmul_create,
    .destroy = matmul_destroy,
    .items = matmul_items,
    .clear = matmul_clear,
    .codelet = matmul_codelet,
    .verify = matmul_verify,
};
