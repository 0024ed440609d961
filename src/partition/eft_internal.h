/* Internal pieces shared by the continuous (eft.c) and integer (eft_int.c) equal-finish-time
 * solvers: per-PU preparation and the inverse of one curve. Not thread-safe across a shared
 * hlb__eft_pu array; each solve owns its own. */
#ifndef HLB_PARTITION_EFT_INTERNAL_H
#define HLB_PARTITION_EFT_INTERNAL_H

#include "hlb/model.h"

/* What a solve knows about one PU's curve on (0, W]. */
typedef struct hlb__eft_pu {
  double e0;   /* time as x -> 0+ (may be -inf with a positive ln u term) */
  double ew;   /* time at W */
  double a, b; /* affine curves: time = a + b x on x > 0 */
  double stol; /* a slope below -stol counts as decreasing, not rounding */
  int affine;  /* 1 when only const, u and transfer terms are present */
} hlb__eft_pu;

/* Check the curve of PU p on (0, W] cheaply (finite coefficients, finite time and slope at W,
 * not decreasing from 0+ to W) and fill *q. HLB_EINVAL naming p and x otherwise. */
int hlb__eft_prepare(const hlb_curve *c, unsigned p, double ready, double W, hlb__eft_pu *q);

/* Time and slope together (one exp/log for both); same value as hlb_curve_time up to
 * rounding. x > 0. */
double hlb__eft_eval(const hlb_curve *c, double x, double *slope);

/* Largest x in [0, W] with time(x) <= t, by safeguarded Newton from `guess` inside a
 * bracket, so it always converges. *slope gets the slope at the result (0 when the result
 * is 0 or W). Returns -1 with *bad_x set when a slope below -q->stol was met (the curve
 * decreases there). *evals is incremented per curve evaluation. */
double hlb__eft_inverse(const hlb_curve *c, const hlb__eft_pu *q, double t, double W, double guess,
                        double *slope, double *bad_x, unsigned long *evals);

#endif
