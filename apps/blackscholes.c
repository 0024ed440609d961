/* Black-Scholes prices of European call and put options (PLB-HeC, "Applications": each
 * PU gets a range of the option vector; O(n)). Input per option: spot S, strike K, years T,
 * rate r, volatility v; output: call and put. Checked against a serial reference and the
 * put-call parity C - P = S - K e^{-rT}. */
#include <math.h>
#include <stdlib.h>

#include "apps.h"
#include "common/error_internal.h"

#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif

typedef struct bs {
  size_t n;
  double *in;  /* 5 per option */
  double *out; /* 2 per option */
  hlb_codelet cl;
} bs;

#define BS_FORMULA                                                                                 \
  "  double s = x[0], k = x[1], t = x[2], r = x[3], v = x[4];\n"                                   \
  "  double sq = v * sqrt(t);\n"                                                                   \
  "  double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / sq, d2 = d1 - sq;\n"                       \
  "  double df = k * exp(-r * t);\n"                                                               \
  "  double n1 = 0.5 * erfc(-d1 * M_SQRT1_2), n2 = 0.5 * erfc(-d2 * M_SQRT1_2);\n"                 \
  "  y[0] = s * n1 - df * n2;\n"                                                                   \
  "  y[1] = df * (1.0 - n2) - s * (1.0 - n1);\n"

static const char bs_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void hlb_blackscholes(global const uchar *in, global uchar *out, ulong begin,\n"
    "    ulong count, global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "    global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  global const double *x = (global const double *)in + 5 * i;\n"
    "  global double *y = (global double *)out + 2 * i;\n" BS_FORMULA "}\n";

static void price(const double *x, double *y) {
  double s = x[0], k = x[1], t = x[2], r = x[3], v = x[4];
  double sq = v * sqrt(t);
  double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / sq, d2 = d1 - sq;
  double df = k * exp(-r * t);
  double n1 = 0.5 * erfc(-d1 * M_SQRT1_2), n2 = 0.5 * erfc(-d2 * M_SQRT1_2);
  y[0] = s * n1 - df * n2;
  y[1] = df * (1.0 - n2) - s * (1.0 - n1);
}

static int bs_cpu(const hlb_exec_call *c) {
  const double *in = c->in;
  double *out = c->out;
  long n = (long)c->count;
#pragma omp parallel for num_threads(c->threads) schedule(static)
  for (long i = 0; i < n; i++)
    price(in + 5 * i, out + 2 * i);
  return 0;
}

static void bs_destroy(void *s) {
  bs *b = s;
  if (!b) return;
  free(b->in);
  free(b->out);
  free(b);
}

static int bs_create(size_t n, uint64_t seed, void **out) {
  bs *b = calloc(1, sizeof *b);
  if (!b) return hlb__error(HLB_ENOMEM, "blackscholes: out of memory");
  b->n = n;
  b->in = malloc(5 * n * sizeof(double));
  b->out = malloc(2 * n * sizeof(double));
  if (!b->in || !b->out) {
    bs_destroy(b);
    return hlb__error(HLB_ENOMEM, "blackscholes: cannot allocate %zu options", n);
  }
  for (size_t i = 0; i < n; i++) {
    double *x = b->in + 5 * i;
    x[0] = 5 + 95 * hlb__app_uniform(&seed);      /* spot */
    x[1] = 1 + 99 * hlb__app_uniform(&seed);      /* strike */
    x[2] = 0.25 + 9.75 * hlb__app_uniform(&seed); /* years */
    x[3] = 0.02;                                  /* rate */
    x[4] = 0.30;                                  /* volatility */
  }
  b->cl = (hlb_codelet){.name = "blackscholes",
                        .user = b,
                        .in_bytes_per_item = 5 * sizeof(double),
                        .out_bytes_per_item = 2 * sizeof(double),
                        .in = b->in,
                        .out = b->out,
                        .cpu = bs_cpu,
                        .opencl_source = bs_cl,
                        .opencl_kernel = "hlb_blackscholes",
                        .cuda = hlb__cuda_blackscholes};
  *out = b;
  return 0;
}

static size_t bs_items(const void *s) {
  return ((const bs *)s)->n;
}

static void bs_clear(void *s) {
  bs *b = s;
  for (size_t i = 0; i < 2 * b->n; i++)
    b->out[i] = NAN;
}

static const hlb_codelet *bs_codelet(void *s) {
  return &((bs *)s)->cl;
}

static int bs_verify(void *s) {
  bs *b = s;
  for (size_t i = 0; i < b->n; i++) {
    const double *x = b->in + 5 * i, *y = b->out + 2 * i;
    double ref[2];
    price(x, ref);
    for (int k = 0; k < 2; k++)
      if (!(fabs(y[k] - ref[k]) <= 1e-9 * (1 + fabs(ref[k]))))
        return hlb__error(HLB_EVERIFY, "blackscholes: option %zu %s = %.17g, expected %.17g", i,
                          k ? "put" : "call", y[k], ref[k]);
    double parity = x[0] - x[1] * exp(-x[3] * x[2]);
    if (!(fabs((y[0] - y[1]) - parity) <= 1e-8 * (1 + fabs(parity))))
      return hlb__error(HLB_EVERIFY, "blackscholes: option %zu breaks put-call parity", i);
  }
  return 0;
}

const hlb__app_ops hlb__app_blackscholes = {
    .info = {.name = "blackscholes",
             .description = "European option prices, a range of options per block (PLB-HeC)",
             .size_meaning = "options",
             .default_size = 4000000,
             .test_size = 20000,
             .max_size = 400000000},
    .create = bs_create,
    .destroy = bs_destroy,
    .items = bs_items,
    .clear = bs_clear,
    .codelet = bs_codelet,
    .verify = bs_verify,
};
