/* Continuous equal-finish-time solver (PLB-HeC III.C, eq. 3-5).
 *
 * PLB-HeC minimises the common finish time T subject to sum x_p = W with IPOPT (an interior
 * point method, ~170 ms a solve in the paper). The problem has more structure than a general
 * NLP: with non-decreasing curves, x_p(T) = max{x in [0, W] : r_p + E_p(x) <= T} is
 * non-decreasing in T, so S(T) = sum_p x_p(T) is monotone and the optimum is the smallest T
 * with S(T) >= W. We solve that one-dimensional equation by Newton on T (dS/dT =
 * sum 1/E_p'(x_p) over PUs strictly inside (0, W)) inside a bracket [T_lo, T_hi] that every
 * evaluation shrinks, falling back to bisection when Newton leaves the bracket or stalls;
 * each x_p(T) is itself a safeguarded Newton solve warm-started from the previous x_p
 * extrapolated along its slope. It stops when the bracket is narrower than HLB__EFT_RTOL or
 * S(T) is within HLB__EFT_RES_RTOL of W; the final sizes are x_p(T) scaled by W / S(T), so
 * they sum to W and the makespan is within about 1e-12 (relative) of the optimum. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/partition.h"
#include "partition/eft_internal.h"

/* fmin/fmax are library calls at -O2 (NaN rules); inputs here are never NaN. */
static inline double dmin(double a, double b) {
  return a < b ? a : b;
}
static inline double dmax(double a, double b) {
  return a > b ? a : b;
}

/* Relative width of the final bracket on T. The brief asks for a makespan no worse than
 * IPOPT's within 1e-9; 1e-13 leaves four orders of margin and costs one extra iteration. */
#define HLB__EFT_RTOL 1e-13
/* ... or stop when S(T) is within this relative distance of W: that is the rounding floor of
 * a sum of n inverses, and rescaling the sizes by W / S(T) then moves the makespan by about
 * this much times the curves' elasticity (<= 3 for cubics). */
#define HLB__EFT_RES_RTOL 1e-12
/* Outer iterations before giving up (bisection alone needs < 2100 on doubles; Newton a few). */
#define HLB__EFT_MAX_OUTER 3000

struct hlb_eft_workspace {
  unsigned n;
  hlb__eft_pu *pu;
  double *x;     /* x_p at the last evaluated T */
  double *d;     /* slope at x_p (0 when x_p is 0 or W) */
  double *xhi;   /* x_p(T_hi), the best feasible point */
  double prev_t; /* finish time of the previous solve, for a warm start */
  double prev_w; /* its W: a warm start is used only for the same W */
  int have_prev;
  unsigned iterations;
  unsigned long evals;
};

int hlb_eft_workspace_create(unsigned n, hlb_eft_workspace **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_eft_workspace_create: out is NULL");
  *out = NULL;
  if (n == 0) return hlb__error(HLB_EINVAL, "hlb_eft_workspace_create: n must be > 0, got 0");
  hlb_eft_workspace *ws = calloc(1, sizeof *ws);
  if (!ws) return hlb__error(HLB_ENOMEM, "hlb_eft_workspace_create: out of memory for %u PUs", n);
  ws->n = n;
  ws->pu = calloc(n, sizeof *ws->pu);
  ws->x = calloc(3 * (size_t)n, sizeof(double));
  if (!ws->pu || !ws->x) {
    hlb_eft_workspace_destroy(ws);
    return hlb__error(HLB_ENOMEM, "hlb_eft_workspace_create: out of memory for %u PUs", n);
  }
  ws->d = ws->x + n;
  ws->xhi = ws->x + 2 * (size_t)n;
  *out = ws;
  return 0;
}

void hlb_eft_workspace_destroy(hlb_eft_workspace *ws) {
  if (!ws) return;
  free(ws->pu);
  free(ws->x);
  free(ws);
}

void hlb_eft_workspace_reset(hlb_eft_workspace *ws) {
  if (ws) ws->have_prev = 0;
}

void hlb_eft_workspace_stats(const hlb_eft_workspace *ws, unsigned *iterations,
                             unsigned long *evaluations) {
  if (iterations) *iterations = ws ? ws->iterations : 0;
  if (evaluations) *evaluations = ws ? ws->evals : 0;
}

static double ready_of(const double *ready_s, unsigned p) {
  return ready_s ? ready_s[p] : 0.0;
}

/* Lower bound on the optimum: some PU gets at least W / n items. */
static double lower_bound(const hlb_curve *c, const double *ready_s, unsigned n, double W,
                          const hlb__eft_pu *pu, unsigned long *evals) {
  double lo = INFINITY;
  int finite = 1;
  for (unsigned p = 0; p < n; p++) {
    double v = ready_of(ready_s, p) + pu[p].e0;
    finite &= isfinite(v);
    lo = dmin(lo, v);
  }
  if (finite) return lo;
  lo = INFINITY;
  for (unsigned p = 0; p < n; p++) {
    lo = dmin(lo, ready_of(ready_s, p) + hlb_curve_time(&c[p], W / n));
    ++*evals;
  }
  return lo;
}

/* Cold start: treat each curve as the secant from 0+ to W and solve that linear problem. */
static double cold_guess(const double *ready_s, unsigned n, double W, const hlb__eft_pu *pu,
                         double *x) {
  double num = W, den = 0.0;
  for (unsigned p = 0; p < n; p++) {
    double e0 = isfinite(pu[p].e0) ? pu[p].e0 : pu[p].ew * 1e-9;
    double v = pu[p].ew > e0 ? W / (pu[p].ew - e0) : 0.0;
    num += v * (ready_of(ready_s, p) + e0);
    den += v;
  }
  double t = den > 0 ? num / den : NAN;
  for (unsigned p = 0; p < n; p++) {
    double e0 = isfinite(pu[p].e0) ? pu[p].e0 : pu[p].ew * 1e-9;
    double v = pu[p].ew > e0 ? W / (pu[p].ew - e0) : 0.0;
    x[p] = dmin(W, dmax(0.0, v * (t - ready_of(ready_s, p) - e0)));
  }
  return t;
}

/* S(T) and dS/dT; x and d hold the previous point's sizes and slopes on entry (the warm
 * start) and this point's on return. */
static int eval_sum(hlb_eft_workspace *ws, const hlb_curve *c, const double *ready_s, double W,
                    double t_prev, double t, double *s_out, double *ds_out) {
  double s = 0.0, ds = 0.0;
  for (unsigned p = 0; p < ws->n; p++) {
    double guess = ws->x[p];
    if (ws->d[p] > 0) guess += (t - t_prev) / ws->d[p];
    double bad_x = 0.0;
    double x = hlb__eft_inverse(&c[p], &ws->pu[p], t - ready_of(ready_s, p), W, guess, &ws->d[p],
                                &bad_x, &ws->evals);
    if (x < 0)
      return hlb__error(HLB_EINVAL, "pu %u: curve decreases at x = %g (slope %g)", p, bad_x,
                        hlb_curve_slope(&c[p], bad_x));
    ws->x[p] = x;
    s += x;
    if (ws->d[p] > 0) ds += 1.0 / ws->d[p];
  }
  *s_out = s;
  *ds_out = ds;
  return 0;
}

static int check_args(const hlb_curve *curves, const double *ready_s, unsigned n, double items,
                      const double *x_out) {
  if (!curves || !x_out)
    return hlb__error(HLB_EINVAL, "hlb_eft_solve: curves and x_out must not be NULL");
  if (n == 0) return hlb__error(HLB_EINVAL, "hlb_eft_solve: n must be > 0, got 0");
  if (!(items >= 0) || !isfinite(items))
    return hlb__error(HLB_EINVAL, "hlb_eft_solve: items must be finite and >= 0, got %g", items);
  for (unsigned p = 0; ready_s && p < n; p++)
    if (!isfinite(ready_s[p]))
      return hlb__error(HLB_EINVAL, "pu %u: ready time must be finite, got %g", p, ready_s[p]);
  return 0;
}

/* Newton step on T from the current point, kept inside (lo, hi); bisection otherwise. */
static double next_t(double t, double s, double ds, double W, double lo, double hi, int stalled,
                     double tol) {
  double tn = NAN;
  if (ds > 0 && isfinite(ds) && !stalled) {
    double step = (W - s) / ds;
    tn = t + step;
    /* From below, Newton on a concave S approaches the root from one side only; once the
     * step is tiny, overshoot a little so the next point is feasible and closes the
     * bracket. The margin covers the quadratic error of the step. */
    if (step > 0 && step <= 1e-7 * fabs(t)) tn += dmax(16.0 * step * step / fabs(t), 2.0 * tol);
  }
  if (!(tn > lo && tn < hi)) tn = isfinite(lo) ? 0.5 * (lo + hi) : hi - dmax(1.0, 2.0 * fabs(hi));
  return tn;
}

static double makespan_of(const hlb_curve *c, const double *ready_s, unsigned n, const double *x) {
  double m = 0.0;
  int any = 0;
  for (unsigned p = 0; p < n; p++) {
    if (x[p] > 0) {
      double f = ready_of(ready_s, p) + hlb_curve_time(&c[p], x[p]);
      m = any ? dmax(m, f) : f;
      any = 1;
    }
  }
  return m;
}

static int prepare_all(hlb_eft_workspace *ws, const hlb_curve *c, const double *ready_s, double W,
                       double *t_hi, unsigned *best) {
  *t_hi = INFINITY;
  *best = 0;
  for (unsigned p = 0; p < ws->n; p++) {
    int rc = hlb__eft_prepare(&c[p], p, ready_of(ready_s, p), W, &ws->pu[p]);
    if (rc) return rc;
    double f = ready_of(ready_s, p) + ws->pu[p].ew;
    if (f < *t_hi) {
      *t_hi = f;
      *best = p;
    }
  }
  ws->evals += ws->n;
  return 0;
}

/* Starting T and per-PU guesses: the previous solve's when warm, the secant model's else. */
static double start_point(hlb_eft_workspace *ws, const double *ready_s, double W, double lo,
                          double hi) {
  double t;
  if (ws->have_prev && ws->prev_w == W) {
    t = ws->prev_t;
  } else {
    t = cold_guess(ready_s, ws->n, W, ws->pu, ws->x);
    memset(ws->d, 0, ws->n * sizeof(double));
  }
  if (!(t > lo && t < hi)) t = isfinite(lo) ? 0.5 * (lo + hi) : hi;
  return t;
}

/* Final sizes: the point's x_p(T) scaled to sum exactly to W. For the feasible end of the
 * bracket (S >= W) scaling down never raises a finish time; for a point within the residual
 * tolerance below W, scaling up raises them by a relative amount of that order. */
static void finish_sizes(unsigned n, double W, const double *src, double s, unsigned best,
                         double *x_out) {
  if (!(s > 0)) {
    memset(x_out, 0, n * sizeof(double));
    x_out[best] = W;
    return;
  }
  double k = W / s, sum = 0.0;
  unsigned big = 0;
  for (unsigned p = 0; p < n; p++) {
    x_out[p] = dmin(W, src[p] * k);
    sum += x_out[p];
    if (x_out[p] > x_out[big]) big = p;
  }
  /* Rounding of the scaling: put the last few ulps on the largest block. */
  x_out[big] = dmax(0.0, x_out[big] + (W - sum));
}

int hlb_eft_solve_ws(hlb_eft_workspace *ws, const hlb_curve *curves, const double *ready_s,
                     double items, double *x_out, double *makespan_out) {
  if (!ws) return hlb__error(HLB_EINVAL, "hlb_eft_solve_ws: workspace is NULL");
  unsigned n = ws->n;
  int rc = check_args(curves, ready_s, n, items, x_out);
  if (rc) return rc;
  ws->iterations = 0;
  ws->evals = 0;
  if (items == 0) {
    memset(x_out, 0, n * sizeof(double));
    if (makespan_out) *makespan_out = 0.0;
    return 0;
  }
  const double W = items;
  double hi, s_hi = -1.0;
  unsigned best;
  if ((rc = prepare_all(ws, curves, ready_s, W, &hi, &best))) return rc;
  double lo = lower_bound(curves, ready_s, n, W, ws->pu, &ws->evals);
  double t = start_point(ws, ready_s, W, lo, hi), t_prev = t;
  double res_prev = INFINITY;
  int slow = 0;
  for (;;) {
    double s = 0.0, ds = 0.0;
    if (++ws->iterations > HLB__EFT_MAX_OUTER)
      return hlb__error(HLB_ENUMERIC, "hlb_eft_solve: no convergence, T in [%.17g, %.17g]", lo, hi);
    if ((rc = eval_sum(ws, curves, ready_s, W, t_prev, t, &s, &ds))) return rc;
    t_prev = t;
    if (s >= W) {
      hi = t;
      s_hi = s;
      memcpy(ws->xhi, ws->x, n * sizeof(double));
    } else {
      lo = t;
    }
    if (fabs(W - s) <= HLB__EFT_RES_RTOL * W) {
      hi = t;
      s_hi = s;
      if (s < W) memcpy(ws->xhi, ws->x, n * sizeof(double));
      break;
    }
    double tol = HLB__EFT_RTOL * (fabs(hi) + (isfinite(lo) ? fabs(lo) : 0.0)) + DBL_MIN;
    if (hi - lo <= tol) break;
    /* Newton should cut the residual fast; two slow steps in a row mean a kink or a jump
     * of S (a flat curve), where bisection is the safe move. */
    double res = fabs(W - s);
    slow = res > 0.5 * res_prev ? slow + 1 : 0;
    res_prev = res;
    t = next_t(t, s, ds, W, lo, hi, slow >= 2, tol);
    if (slow >= 2) slow = 0;
  }
  finish_sizes(n, W, ws->xhi, s_hi, best, x_out);
  ws->prev_t = hi;
  ws->prev_w = W;
  ws->have_prev = 1;
  if (makespan_out) *makespan_out = makespan_of(curves, ready_s, n, x_out);
  return 0;
}

/* Up to this many PUs, hlb_eft_solve keeps its workspace on the stack: at n = 8 a solve
 * takes a few microseconds and two allocations would be a visible part of it. */
#define HLB__EFT_STACK_N 32

int hlb_eft_solve(const hlb_curve *curves, const double *ready_s, unsigned n, double items,
                  double *x_out, double *makespan_out) {
  int rc = check_args(curves, ready_s, n, items, x_out);
  if (rc) return rc;
  if (n <= HLB__EFT_STACK_N) {
    hlb__eft_pu pu[HLB__EFT_STACK_N];
    double buf[3 * HLB__EFT_STACK_N];
    hlb_eft_workspace ws = {.n = n, .pu = pu, .x = buf, .d = buf + n, .xhi = buf + 2 * n};
    memset(buf, 0, 3 * n * sizeof(double));
    return hlb_eft_solve_ws(&ws, curves, ready_s, items, x_out, makespan_out);
  }
  hlb_eft_workspace *ws = NULL;
  if ((rc = hlb_eft_workspace_create(n, &ws))) return rc;
  rc = hlb_eft_solve_ws(ws, curves, ready_s, items, x_out, makespan_out);
  hlb_eft_workspace_destroy(ws);
  return rc;
}
