/* Mandelbrot set, one image row per item: the irregular-cost app. Rows through the set
 * iterate to the cap, rows outside escape at once, so equal blocks of rows cost very
 * different times and a balancer that assumes cost proportional to size is tested.
 * Output: the iteration count of each pixel. Checked against a serial reference; a pixel
 * on the set's boundary may differ by rounding (fused multiply-add on a device), so a
 * tolerance of HLB_MANDEL_TOLERANCE of the pixels is allowed. */
#include <math.h>
#include <stdlib.h>

#include "apps.h"
#include "common/error_internal.h"
#include "common/mandel_point.h"

#define MANDEL_ITERS 256
/* Pixels allowed to differ from the reference (boundary rounding on devices): 0.1 %. */
#define HLB_MANDEL_TOLERANCE 0.001

typedef struct mandel {
  size_t n; /* n x n pixels */
  uint32_t *img;
  double params[2]; /* width, max iterations */
  hlb_codelet cl;
} mandel;

/* The per-row loop, shared in spirit with mandel_row() below. */
#define MANDEL_BODY                                                                                \
  "  double cy = -1.5 + 3.0 * (double)row / (double)n;\n"                                          \
  "  for (ulong x = 0; x < n; x++) {\n"                                                            \
  "    double cx = -2.0 + 3.0 * (double)x / (double)n, zx = 0.0, zy = 0.0;\n"                      \
  "    uint it = 0;\n"                                                                             \
  "    while (it < iters && zx * zx + zy * zy <= 4.0) {\n"                                         \
  "      double t = zx * zx - zy * zy + cx;\n"                                                     \
  "      zy = 2.0 * zx * zy + cy;\n"                                                               \
  "      zx = t;\n"                                                                                \
  "      it++;\n"                                                                                  \
  "    }\n"                                                                                        \
  "    out[x] = it;\n"                                                                             \
  "  }\n"

static const char mandel_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void hlb_mandelbrot(global const uchar *in, global uchar *outb, ulong begin,\n"
    "    ulong count, global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "    global const uchar *s3) {\n"
    "  ulong g = get_global_id(0);\n"
    "  if (g >= count) return;\n" HLB_APP_SPREAD_ITEM
    "  ulong n = (ulong)((global const double *)s0)[0];\n"
    "  uint iters = (uint)((global const double *)s0)[1];\n"
    "  ulong row = begin + i;\n"
    "  global uint *out = (global uint *)outb + i * n;\n" MANDEL_BODY "}\n";

/* The kernel of MANDEL_BODY, in C. */
static void mandel_row(size_t n, unsigned iters, size_t row, uint32_t *out) {
  for (size_t x = 0; x < n; x++)
    out[x] = hlb__mandel_point(n, iters, row, x);
}

static int mandel_cpu(const hlb_exec_call *c) {
  const mandel *m = c->user;
  uint32_t *out = c->out;
  long cnt = (long)c->count;
  /* Dynamic: the rows of one block differ in cost too. */
#pragma omp parallel for num_threads(c->threads) schedule(dynamic, 1)
  for (long i = 0; i < cnt; i++)
    mandel_row(m->n, MANDEL_ITERS, c->begin + (size_t)i, out + (size_t)i * m->n);
  return 0;
}

static void mandel_destroy(void *s) {
  mandel *m = s;
  if (m) free(m->img);
  free(m);
}

static int mandel_create(size_t n, uint64_t seed, void **out) {
  (void)seed; /* the input is the image plane itself */
  mandel *m = calloc(1, sizeof *m);
  if (!m || !(m->img = malloc(n * n * sizeof(uint32_t)))) {
    free(m);
    return hlb__error(HLB_ENOMEM, "mandelbrot: cannot allocate %zu x %zu pixels", n, n);
  }
  m->n = n;
  m->params[0] = (double)n;
  m->params[1] = MANDEL_ITERS;
  m->cl = (hlb_codelet){.name = "mandelbrot",
                        .user = m,
                        .out_bytes_per_item = n * sizeof(uint32_t),
                        .out = m->img,
                        .shared = {{m->params, sizeof m->params}},
                        .n_shared = 1,
                        .cpu = mandel_cpu,
                        .opencl_source = mandel_cl,
                        .opencl_kernel = "hlb_mandelbrot",
                        .cuda = hlb__cuda_mandelbrot};
  *out = m;
  return 0;
}

static size_t mandel_items(const void *s) {
  return ((const mandel *)s)->n;
}

static void mandel_clear(void *s) {
  mandel *m = s;
  /* An impossible count, so an unwritten pixel fails the check. */
  for (size_t i = 0; i < m->n * m->n; i++)
    m->img[i] = UINT32_MAX;
}

static const hlb_codelet *mandel_codelet(void *s) {
  return &((mandel *)s)->cl;
}

static int mandel_verify(void *s) {
  mandel *m = s;
  uint32_t *ref = malloc(m->n * sizeof *ref);
  if (!ref) return hlb__error(HLB_ENOMEM, "mandelbrot: out of memory for the check");
  size_t differ = 0, allowed = (size_t)(HLB_MANDEL_TOLERANCE * (double)(m->n * m->n));
  int rc = 0;
  for (size_t r = 0; r < m->n && rc == 0; r++) {
    mandel_row(m->n, MANDEL_ITERS, r, ref);
    for (size_t x = 0; x < m->n && rc == 0; x++) {
      uint32_t got = m->img[r * m->n + x];
      if (got > MANDEL_ITERS)
        rc = hlb__error(HLB_EVERIFY, "mandelbrot: pixel (%zu, %zu) was never computed", r, x);
      else if (got != ref[x] && ++differ > allowed)
        rc = hlb__error(HLB_EVERIFY,
                        "mandelbrot: more than %zu pixels differ from the reference; pixel "
                        "(%zu, %zu) = %u, expected %u",
                        allowed, r, x, got, ref[x]);
    }
  }
  free(ref);
  return rc;
}

const hlb__app_ops hlb__app_mandelbrot = {
    .info = {.name = "mandelbrot",
             .description = "Mandelbrot image, one row per item: irregular cost per row",
             .size_meaning = "image side in pixels",
             .default_size = 2048,
             .test_size = 128,
             .max_size = 65536},
    .create = mandel_create,
    .destroy = mandel_destroy,
    .items = mandel_items,
    .clear = mandel_clear,
    .codelet = mandel_codelet,
    .verify = mandel_verify,
};
