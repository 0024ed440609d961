/* Equal-finish-time solve: hlb's Newton/bracketing solver against IPOPT (what PLB-HeC used,
 * PLB-HeC section III.C) on the same random problems, n = 4, 8, 64, 1024.
 *
 * IPOPT gets its best formulation: variables (y_1..y_n, T) with y_p = x_p / W (the paper's
 * normalisation, eq. 3; unscaled item counts make IPOPT fail), minimise T subject to
 * E_p(W y_p) - T <= 0 and sum y_p = 1, 0 <= y <= 1, exact first and second derivatives,
 * quiet output, tol 1e-10, adaptive barrier update. Curves are CPU/GPU-like with a 30x speed
 * spread, some with quadratic, cubic or x ln x terms and fixed overheads.
 *
 * Prints one row per n: time per solve of each, both makespans and their relative
 * difference, the speed ratio, hlb's warm re-solve time after one curve changed, and the
 * exact integer solve. Never fails on time. Usage: bench_eft [--quick]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/rng.h"
#include "hlb/error.h"
#include "hlb/partition.h"

#ifdef HLB_HAVE_IPOPT
#include <IpStdCInterface.h>
#endif

typedef struct problem {
  unsigned n;
  double W;
  hlb_curve *c;
} problem;

static void random_problem(hlb__rng *g, unsigned n, double W, problem *P) {
  P->n = n;
  P->W = W;
  P->c = calloc(n, sizeof *P->c);
  for (unsigned p = 0; p < n; p++) {
    int gpu = p % 4 == 0;
    /* GPUs 10-30x faster than the slowest CPU, with a launch/transfer overhead. */
    double secs = gpu ? 1.0 + 2.0 * hlb__rng_uniform(g) : 10.0 + 20.0 * hlb__rng_uniform(g);
    double lin = secs / W * n / 4.0;
    hlb_curve *c = &P->c[p];
    hlb_curve_from_poly(c, 0.0, 0.0, 0.0, 0.0, 0.0);
    c->scale = W;
    c->coef[HLB_TERM_U] = lin * W;
    double k = hlb__rng_uniform(g);
    if (k < 0.25)
      c->coef[HLB_TERM_U2] = 0.3 * lin * W * hlb__rng_uniform(g);
    else if (k < 0.45)
      c->coef[HLB_TERM_U3] = 0.3 * lin * W * hlb__rng_uniform(g);
    else if (k < 0.65)
      c->coef[HLB_TERM_ULOG] = 0.04 * lin * W * hlb__rng_uniform(g);
    if (gpu) {
      c->transfer_fixed = 1e-3 * hlb__rng_uniform(g);
      c->transfer_per_item = 0.1 * lin;
    } else {
      c->coef[HLB_TERM_CONST] = 1e-4 * hlb__rng_uniform(g);
    }
  }
}

static double makespan(const problem *P, const double *x) {
  double m = 0.0;
  for (unsigned p = 0; p < P->n; p++)
    if (x[p] > 0) m = fmax(m, hlb_curve_time(&P->c[p], x[p]));
  return m;
}

/* Repeat body until at least min_s seconds passed; out = seconds per repetition. */
#define TIME_LOOP(out, min_s, body)                                                                \
  do {                                                                                             \
    long reps_ = 0;                                                                                \
    double t0_ = hlb__now(), el_;                                                                  \
    do {                                                                                           \
      body;                                                                                        \
      reps_++;                                                                                     \
    } while ((el_ = hlb__now() - t0_) < (min_s));                                                  \
    (out) = el_ / (double)reps_;                                                                   \
  } while (0)

#ifdef HLB_HAVE_IPOPT
static double second_derivative(const hlb_curve *c, double x) {
  const double *k = c->coef;
  double u = x / c->scale;
  double d = 2.0 * k[HLB_TERM_U2] + 6.0 * k[HLB_TERM_U3] * u;
  if (k[HLB_TERM_EXP] != 0.0 || k[HLB_TERM_UEXP] != 0.0)
    d += exp(u) * (k[HLB_TERM_EXP] + k[HLB_TERM_UEXP] * (2.0 + u));
  if (k[HLB_TERM_LOG] != 0.0 || k[HLB_TERM_ULOG] != 0.0)
    d += -k[HLB_TERM_LOG] / (u * u) + k[HLB_TERM_ULOG] / u;
  return d / (c->scale * c->scale);
}

static Bool ip_f(Index n, Number *x, Bool nx, Number *f, UserDataPtr u) {
  (void)nx, (void)u;
  *f = x[n - 1];
  return TRUE;
}

static Bool ip_grad_f(Index n, Number *x, Bool nx, Number *g, UserDataPtr u) {
  (void)x, (void)nx, (void)u;
  memset(g, 0, (size_t)n * sizeof *g);
  g[n - 1] = 1.0;
  return TRUE;
}

static Bool ip_g(Index n, Number *x, Bool nx, Index m, Number *g, UserDataPtr ud) {
  (void)nx, (void)m;
  const problem *P = ud;
  double s = 0.0;
  for (unsigned p = 0; p < P->n; p++) {
    g[p] = hlb_curve_time(&P->c[p], fmax(x[p], 1e-300) * P->W) - x[n - 1];
    s += x[p];
  }
  g[P->n] = s;
  return TRUE;
}

static Bool ip_jac(Index n, Number *x, Bool nx, Index m, Index ne, Index *iRow, Index *jCol,
                   Number *v, UserDataPtr ud) {
  (void)nx, (void)m, (void)ne;
  const problem *P = ud;
  Index k = 0;
  for (unsigned p = 0; p < P->n; p++) {
    if (!v) {
      iRow[k] = (Index)p, jCol[k++] = (Index)p;
      iRow[k] = (Index)p, jCol[k++] = n - 1;
      iRow[k] = (Index)P->n, jCol[k++] = (Index)p;
    } else {
      v[k++] = hlb_curve_slope(&P->c[p], fmax(x[p], 1e-300) * P->W) * P->W;
      v[k++] = -1.0;
      v[k++] = 1.0;
    }
  }
  return TRUE;
}

static Bool ip_h(Index n, Number *x, Bool nx, Number of, Index m, Number *lam, Bool nl, Index ne,
                 Index *iRow, Index *jCol, Number *v, UserDataPtr ud) {
  (void)n, (void)nx, (void)of, (void)m, (void)nl, (void)ne;
  const problem *P = ud;
  for (unsigned p = 0; p < P->n; p++) {
    if (!v)
      iRow[p] = jCol[p] = (Index)p;
    else
      v[p] = lam[p] * second_derivative(&P->c[p], fmax(x[p], 1e-300) * P->W) * P->W * P->W;
  }
  return TRUE;
}

/* IPOPT at its best: the problem object (options, MUMPS set-up) is made once per problem and
 * reused, so a timed solve is IpoptSolve alone, from the equal split. */
static IpoptProblem ipopt_create(const problem *P) {
  Index n = (Index)P->n + 1, m = (Index)P->n + 1;
  double *xl = calloc((size_t)n, sizeof *xl), *xu = calloc((size_t)n, sizeof *xu);
  double *gl = calloc((size_t)m, sizeof *gl), *gu = calloc((size_t)m, sizeof *gu);
  for (unsigned p = 0; p < P->n; p++) {
    xl[p] = 0.0, xu[p] = 1.0;
    gl[p] = -1e20, gu[p] = 0.0;
  }
  xl[P->n] = -1e20, xu[P->n] = 1e20;
  gl[P->n] = gu[P->n] = 1.0;
  IpoptProblem ip = CreateIpoptProblem(n, xl, xu, m, gl, gu, 3 * (Index)P->n, (Index)P->n, 0, ip_f,
                                       ip_g, ip_grad_f, ip_jac, ip_h);
  AddIpoptIntOption(ip, "print_level", 0);
  AddIpoptStrOption(ip, "sb", "yes");
  AddIpoptNumOption(ip, "tol", 1e-10);
  AddIpoptStrOption(ip, "mu_strategy", "adaptive");
  free(xl), free(xu), free(gl), free(gu);
  return ip;
}

/* One IPOPT solve from the equal split; 0 on success. */
static int ipopt_solve(IpoptProblem ip, const problem *P, double *x, double *x_out) {
  double t0 = 0.0;
  for (unsigned p = 0; p < P->n; p++) {
    x[p] = 1.0 / P->n;
    t0 = fmax(t0, hlb_curve_time(&P->c[p], x[p] * P->W));
  }
  x[P->n] = t0;
  enum ApplicationReturnStatus st = IpoptSolve(ip, x, NULL, NULL, NULL, NULL, NULL, (void *)P);
  for (unsigned p = 0; p < P->n; p++)
    x_out[p] = x[p] * P->W;
  return st == Solve_Succeeded || st == Solved_To_Acceptable_Level ? 0 : (int)st;
}
#endif

static void row(unsigned n, int quick, hlb__rng *g) {
  problem P;
  double W = 1e7;
  random_problem(g, n, W, &P);
  double *x = calloc(n, sizeof *x), *xi = calloc(n, sizeof *xi), m = 0.0;
  size_t *xz = calloc(n, sizeof *xz);
  double min_s = quick ? 0.01 : 0.2;
  if (hlb_eft_solve(P.c, NULL, n, W, x, &m)) {
    printf("%6u  hlb failed: %s\n", n, hlb_last_error());
    return;
  }
  double t_hlb, t_warm, t_int;
  TIME_LOOP(t_hlb, min_s, hlb_eft_solve(P.c, NULL, n, W, x, &m));
  /* Warm re-solve: one curve changes by a few percent per solve, as after one new sample. */
  hlb_curve *saved = malloc(n * sizeof *saved);
  memcpy(saved, P.c, n * sizeof *saved);
  hlb_eft_workspace *ws = NULL;
  hlb_eft_workspace_create(n, &ws);
  hlb_eft_solve_ws(ws, P.c, NULL, W, x, &m);
  unsigned step = 0;
  TIME_LOOP(t_warm, min_s, {
    /* Each PU alternates between +3 % and back, so the problem does not drift. */
    hlb_curve *c = &P.c[step % n];
    c->coef[HLB_TERM_U] *= ((step / n) & 1) ? 1 / 1.03 : 1.03;
    step++;
    hlb_eft_solve_ws(ws, P.c, NULL, W, x, &m);
  });
  hlb_eft_workspace_destroy(ws);
  memcpy(P.c, saved, n * sizeof *saved); /* the same problem for every column */
  free(saved);
  hlb_eft_solve(P.c, NULL, n, W, x, &m);
  double mi = 0.0;
  TIME_LOOP(t_int, min_s, hlb_eft_solve_int(P.c, NULL, n, (size_t)W, NULL, xz, &mi));
  double t_ip = NAN, m_ip = NAN;
#ifdef HLB_HAVE_IPOPT
  IpoptProblem ip = ipopt_create(&P);
  double *xw = calloc(n + 1, sizeof *xw);
  int st = ipopt_solve(ip, &P, xw, xi);
  if (st == 0) {
    TIME_LOOP(t_ip, quick ? 0.01 : 0.5, ipopt_solve(ip, &P, xw, xi));
    m_ip = makespan(&P, xi);
  } else {
    printf("       (IPOPT status %d at n = %u)\n", st, n);
  }
  FreeIpoptProblem(ip);
  free(xw);
#endif
  printf("%6u %12.2f %12.1f %10.0f %12.2f %12.1f %20.15g %20.15g %12.2e\n", n, t_hlb * 1e6,
         t_ip * 1e6, t_ip / t_hlb, t_warm * 1e6, t_int * 1e6, m, m_ip, (m - m_ip) / m_ip);
  free(x), free(xi), free(xz), free(P.c);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  hlb__rng g;
  hlb__rng_seed(&g, 2015);
#ifndef HLB_HAVE_IPOPT
  printf("(built without IPOPT: its columns are nan)\n");
#endif
  printf("%6s %12s %12s %10s %12s %12s %20s %20s %12s\n", "n", "hlb_us", "ipopt_us", "speedup",
         "warm_us", "int_us", "makespan_hlb", "makespan_ipopt", "rel_diff");
  unsigned sizes[] = {4, 8, 64, 1024};
  for (unsigned i = 0; i < 4; i++)
    row(sizes[i], quick, &g);
  return 0;
}
