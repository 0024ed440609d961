/* One curve as the equal-finish-time solvers see it: checks, fused time+slope, inverse. */
#include <float.h>
#include <math.h>

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

/* Points sampled by hlb_eft_check_curve (log-spaced over [x_lo, x_hi]). */
#define HLB__EFT_CHECK_POINTS 24
/* A slope below -(this) * (time span / W) is a decrease, not rounding of a flat curve. */
#define HLB__EFT_SLOPE_RTOL 1e-9

double hlb__eft_eval(const hlb_curve *c, double x, double *slope) {
  const double *k = c->coef;
  double u = x / c->scale;
  double t = k[HLB_TERM_CONST] + u * (k[HLB_TERM_U] + u * (k[HLB_TERM_U2] + u * k[HLB_TERM_U3]));
  double d = k[HLB_TERM_U] + u * (2.0 * k[HLB_TERM_U2] + 3.0 * u * k[HLB_TERM_U3]);
  if (k[HLB_TERM_EXP] != 0.0 || k[HLB_TERM_UEXP] != 0.0) {
    double e = exp(u);
    t += e * (k[HLB_TERM_EXP] + u * k[HLB_TERM_UEXP]);
    d += e * (k[HLB_TERM_EXP] + k[HLB_TERM_UEXP] * (1.0 + u));
  }
  if (k[HLB_TERM_LOG] != 0.0 || k[HLB_TERM_ULOG] != 0.0) {
    double l = log(u);
    t += l * (k[HLB_TERM_LOG] + u * k[HLB_TERM_ULOG]);
    d += k[HLB_TERM_LOG] / u + k[HLB_TERM_ULOG] * (l + 1.0);
  }
  *slope = d / c->scale + c->transfer_per_item;
  return t + c->transfer_per_item * x + c->transfer_fixed;
}

static int coefficients_ok(const hlb_curve *c, unsigned p) {
  /* Fast path: x * 0 is NaN exactly when x is not finite, so one sum tests them all. */
  double z = c->transfer_per_item * 0.0 + c->transfer_fixed * 0.0;
  for (int k = 0; k < HLB_TERM_COUNT; k++)
    z += c->coef[k] * 0.0;
  if (z == 0.0 && c->scale > 0 && c->scale < INFINITY) return 0;
  if (!(c->scale > 0) || !isfinite(c->scale))
    return hlb__error(HLB_EINVAL, "pu %u: curve scale must be finite and > 0, got %g", p, c->scale);
  for (int k = 0; k < HLB_TERM_COUNT; k++)
    if (!isfinite(c->coef[k]))
      return hlb__error(HLB_EINVAL, "pu %u: coefficient of %s is not finite (%g)", p,
                        hlb_term_name((hlb_term)k), c->coef[k]);
  if (!isfinite(c->transfer_per_item) || !isfinite(c->transfer_fixed))
    return hlb__error(HLB_EINVAL, "pu %u: transfer coefficients are not finite (%g, %g)", p,
                      c->transfer_per_item, c->transfer_fixed);
  return 0;
}

/* Limit of the time as x -> 0+: u^k and u ln u vanish, e^u -> 1, ln u -> -inf. */
static double time_at_0(const hlb_curve *c) {
  const double *k = c->coef;
  if (k[HLB_TERM_LOG] > 0) return -INFINITY;
  if (k[HLB_TERM_LOG] < 0) return INFINITY;
  return k[HLB_TERM_CONST] + k[HLB_TERM_EXP] + c->transfer_fixed;
}

static int is_affine(const hlb_curve *c) {
  const double *k = c->coef;
  for (int t = HLB_TERM_U2; t < HLB_TERM_COUNT; t++)
    if (k[t] != 0.0) return 0;
  return 1;
}

int hlb__eft_prepare(const hlb_curve *c, unsigned p, double ready, double W, hlb__eft_pu *q) {
  int rc = coefficients_ok(c, p);
  if (rc) return rc;
  double sw;
  q->e0 = time_at_0(c);
  q->ew = hlb__eft_eval(c, W, &sw);
  q->affine = is_affine(c);
  q->a = c->coef[HLB_TERM_CONST] + c->transfer_fixed;
  q->b = c->coef[HLB_TERM_U] / c->scale + c->transfer_per_item;
  if (!isfinite(q->ew) || !isfinite(ready + q->ew))
    return hlb__error(HLB_EINVAL, "pu %u: time at x = %g is not finite (%g)", p, W, q->ew);
  if (q->e0 == INFINITY)
    return hlb__error(HLB_EINVAL, "pu %u: curve decreases near x = 0 (negative ln u term %g)", p,
                      c->coef[HLB_TERM_LOG]);
  double span = fabs(q->ew) + (isfinite(q->e0) ? fabs(q->e0) : 0.0);
  q->stol = HLB__EFT_SLOPE_RTOL * span / W + DBL_MIN;
  if (!isfinite(sw) || sw < -q->stol)
    return hlb__error(HLB_EINVAL, "pu %u: curve slope at x = %g is %g (must be finite, >= 0)", p, W,
                      sw);
  if (q->e0 > q->ew + HLB__EFT_SLOPE_RTOL * span)
    return hlb__error(HLB_EINVAL, "pu %u: curve decreases on (0, %g]: time %g at 0+ > %g at x = %g",
                      p, W, q->e0, q->ew, W);
  return 0;
}

double hlb__eft_inverse(const hlb_curve *c, const hlb__eft_pu *q, double t, double W, double guess,
                        double *slope, double *bad_x, unsigned long *evals) {
  *slope = 0.0;
  if (t >= q->ew) return W;
  if (t <= q->e0) return 0.0;
  if (q->affine) {
    /* e0 < t < ew implies b > 0 here. */
    *slope = q->b;
    return dmin(W, dmax(0.0, (t - q->a) / q->b));
  }
  /* Invariant: time(a) < t < time(b) (a = 0 stands for 0+). */
  double a = 0.0, b = W, x = guess;
  if (!(x > a && x < b)) x = isfinite(q->e0) ? W * (t - q->e0) / (q->ew - q->e0) : 0.5 * W;
  if (!(x > a && x < b)) x = 0.5 * W;
  for (int it = 0; it < 400; it++) {
    double d, f = hlb__eft_eval(c, x, &d) - t;
    ++*evals;
    /* Decreasing below t is a dip under the time at 0+ (an x ln x term's, just above 0): the
     * root is further on, where the curve rises through t, and halving finds it. Decreasing
     * above t would make the root not unique. */
    if (!(d >= -q->stol)) {
      if (!(f < 0 && isfinite(d))) {
        *bad_x = x;
        return -1.0;
      }
      a = x;
      x = 0.5 * (a + b);
      continue;
    }
    if (f == 0.0) {
      *slope = d;
      return x;
    }
    if (f > 0)
      b = x;
    else
      a = x;
    double xn = d > 0 ? x - f / d : NAN;
    int newton = xn > a && xn < b;
    if (!newton) xn = 0.5 * (a + b);
    /* A Newton step this small leaves an error of order its square: done. */
    if (newton && fabs(xn - x) <= 1e-8 * x) {
      *slope = d;
      return xn;
    }
    if (b - a <= 4.0 * DBL_EPSILON * b) {
      *slope = d;
      return a;
    }
    x = xn;
  }
  *slope = 0.0;
  return a;
}

/* Slope of the polynomial part is A + B u + C u^2 (u = x / scale); its minimum on an interval
 * is at an end or at the vertex. Returns the vertex x, or NAN when it is not inside. */
static double poly_vertex(const hlb_curve *c, double x_lo, double x_hi) {
  double B = 2.0 * c->coef[HLB_TERM_U2], C = 3.0 * c->coef[HLB_TERM_U3];
  if (!(C > 0)) return NAN;
  double x = -B / (2.0 * C) * c->scale;
  return x > x_lo && x < x_hi ? x : NAN;
}

static int check_point(const hlb_curve *c, unsigned p, double x, double stol) {
  double d, t = hlb__eft_eval(c, x, &d);
  if (!isfinite(t))
    return hlb__error(HLB_EINVAL, "pu %u: time at x = %g is not finite (%g)", p, x, t);
  if (!isfinite(d) || d < -stol)
    return hlb__error(HLB_EINVAL, "pu %u: curve decreases at x = %g (slope %g)", p, x, d);
  return 0;
}

int hlb_eft_check_curve(const hlb_curve *c, unsigned pu, double x_lo, double x_hi) {
  if (!c) return hlb__error(HLB_EINVAL, "hlb_eft_check_curve: curve is NULL");
  if (!(x_lo > 0) || !(x_hi >= x_lo) || !isfinite(x_hi))
    return hlb__error(HLB_EINVAL, "hlb_eft_check_curve: need 0 < x_lo <= x_hi, got [%g, %g]", x_lo,
                      x_hi);
  int rc = coefficients_ok(c, pu);
  if (rc) return rc;
  double d, t_lo = hlb__eft_eval(c, x_lo, &d), t_hi = hlb__eft_eval(c, x_hi, &d);
  double stol = HLB__EFT_SLOPE_RTOL * (fabs(t_lo) + fabs(t_hi)) / x_hi + DBL_MIN;
  double ratio = x_hi / x_lo;
  for (int i = 0; i < HLB__EFT_CHECK_POINTS; i++) {
    double x = i == HLB__EFT_CHECK_POINTS - 1
                   ? x_hi
                   : x_lo * pow(ratio, (double)i / (HLB__EFT_CHECK_POINTS - 1));
    if ((rc = check_point(c, pu, x, stol))) return rc;
  }
  double v = poly_vertex(c, x_lo, x_hi);
  if (!isnan(v) && (rc = check_point(c, pu, v, stol))) return rc;
  if (t_hi < t_lo - stol * x_hi)
    return hlb__error(HLB_EINVAL, "pu %u: curve decreases: time %g at x = %g > %g at x = %g", pu,
                      t_lo, x_lo, t_hi, x_hi);
  return 0;
}
