/* Per-PU performance models (PLB-HeC III.B, PLB-HAC 3.1-3.2).
 *
 * F(x) is the compute time of a block of x items, a least-squares fit over the basis
 * {1, u, u^2, u^3, e^u, ln u, u e^u, u ln u} of u = x / scale; G(x) = a x + b is the
 * transfer time. hlb_curve is the plain-data form of F + G that the partition solvers,
 * the simulator (true curves) and the policies (fitted curves) all share.
 *
 * Thread safety: a hlb_model is not locked; one owner at a time. hlb_curve functions are
 * pure and safe from any thread.
 */
#ifndef HLB_MODEL_H
#define HLB_MODEL_H

#include <stddef.h>

#include "hlb/export.h"

HLB_BEGIN_DECLS

/* The basis terms, in the papers' order. Bit (1u << term) selects a term in masks. */
typedef enum hlb_term {
  HLB_TERM_CONST = 0, /* 1 */
  HLB_TERM_U,         /* u */
  HLB_TERM_U2,        /* u^2 */
  HLB_TERM_U3,        /* u^3 */
  HLB_TERM_EXP,       /* e^u */
  HLB_TERM_LOG,       /* ln u */
  HLB_TERM_UEXP,      /* u e^u */
  HLB_TERM_ULOG,      /* u ln u */
  HLB_TERM_COUNT
} hlb_term;

/* Short name of a term ("const", "u", "u2", "u3", "exp", "log", "uexp", "ulog"). */
HLB_EXTERN const char *hlb_term_name(hlb_term t);

/* A time curve: seconds to process a block of x items on one PU, transfers included.
 * time(x) = sum_k coef[k] * phi_k(x / scale) + transfer_per_item * x + transfer_fixed,
 * and time(0) = 0 (no block, no cost). */
typedef struct hlb_curve {
  double scale;                /* u = x / scale; must be > 0 */
  double coef[HLB_TERM_COUNT]; /* compute-time coefficients */
  double transfer_per_item;    /* G(x) = transfer_per_item * x + transfer_fixed */
  double transfer_fixed;
} hlb_curve;

/* Compute part F(x) alone; x > 0. */
HLB_EXTERN double hlb_curve_compute(const hlb_curve *c, double x);
/* Transfer part G(x) alone; 0 for x <= 0. */
HLB_EXTERN double hlb_curve_transfer(const hlb_curve *c, double x);
/* F(x) + G(x); 0 for x <= 0. */
HLB_EXTERN double hlb_curve_time(const hlb_curve *c, double x);
/* d/dx of F(x) + G(x) at x > 0. */
HLB_EXTERN double hlb_curve_slope(const hlb_curve *c, double x);

/* A curve from the polynomial form used in hlb's JSON files, time for a block of x items:
 * c0 + c1 x + c2 x^2 + c3 x^3 + cxlogx x ln x (scale 1, no transfer part). */
HLB_EXTERN void hlb_curve_from_poly(hlb_curve *out, double c0, double c1, double c2, double c3,
                                    double cxlogx);

/* ---- Fitted models ------------------------------------------------------------------- */

/* Why a sample was rejected; each reason is counted per model. */
typedef enum hlb_reject_reason {
  HLB_REJECT_NAN = 0,     /* a time is NaN */
  HLB_REJECT_INF,         /* a time is infinite */
  HLB_REJECT_NONPOSITIVE, /* compute time <= 0, or transfer time < 0 */
  HLB_REJECT_ZERO_ITEMS,  /* items <= 0 (or NaN) */
  HLB_REJECT_COUNT
} hlb_reject_reason;

/* Short name of a reason ("nan", "inf", "nonpositive", "zero_items"). */
HLB_EXTERN const char *hlb_reject_name(hlb_reject_reason r);

/* How terms are chosen. */
typedef enum hlb_select {
  HLB_SELECT_AICC = 0, /* smallest corrected Akaike criterion (default) */
  HLB_SELECT_LOOCV     /* smallest leave-one-out prediction error */
} hlb_select;

/* How samples are weighted in the least squares. */
typedef enum hlb_weighting {
  /* Weight 1 / t^2: squared relative errors. Timing noise grows with the time, so this is the
   * right likelihood for it, and small blocks are predicted as well as large ones (default). */
  HLB_WEIGHT_RELATIVE = 0,
  /* Weight 1: squared absolute errors, the papers' plain least squares. */
  HLB_WEIGHT_UNIFORM
} hlb_weighting;

typedef struct hlb_model_options {
  unsigned allowed_terms; /* mask of (1u << hlb_term); 0 means every term */
  hlb_select criterion;
  double forgetting; /* in (0, 1]: each new sample multiplies older weights by this; 1 = none */
  /* Leave-one-out needs the samples themselves: it scores subsets on the most recent
   * loo_window samples (a ring buffer, so hlb_model_add stays O(1)). >= 2; default 256.
   * Unused (and not allocated) with HLB_SELECT_AICC. */
  size_t loo_window;
  /* Points of each of the two grids (geometric and linear over [x_lo, x_max]) on which a
   * candidate curve must be positive and non-decreasing. >= 2; default 128. */
  unsigned grid_points;
  /* A subset whose scaled normal matrix has a Cholesky pivot below this (a column explained
   * by the others to within sqrt(tol) of its norm) is collinear and skipped. In (0, 1);
   * default 1e-10. */
  double collinear_tol;
  /* AICc only: among subsets whose AICc is within this of the best, the one with the fewest
   * terms wins (then the lowest AICc). Small differences are not evidence for the bigger
   * model (Burnham & Anderson take 2 as the limit for one comparison), and with up to 255
   * candidate subsets the plain minimum picks spurious terms on 40 % of data sets from a
   * 2-term curve, 4 on 8 % (docs/models.md). >= 0; default 4; 0 = plain minimum. */
  double aicc_delta;
  hlb_weighting weighting; /* default HLB_WEIGHT_RELATIVE; also used for the transfer line */
} hlb_model_options;

/* Defaults: every term, AICc, no forgetting, loo_window 256, grid_points 128,
 * collinear_tol 1e-10, aicc_delta 4, relative weighting. */
HLB_EXTERN void hlb_model_options_default(hlb_model_options *o);

typedef struct hlb_model hlb_model;

/* A model of blocks up to about `scale` items (u = x / scale); scale > 0. opt may be NULL. */
HLB_EXTERN int hlb_model_create(double scale, const hlb_model_options *opt, hlb_model **out);
HLB_EXTERN void hlb_model_destroy(hlb_model *m);
/* Forget every sample and the fit (scale and options stay): for a model that started from a
 * previous run's samples which the first blocks of this run contradict. */
HLB_EXTERN void hlb_model_clear(hlb_model *m);
/* How many times hlb_model_clear was called on m: > 0 when a policy forgot what the model was
 * started from (the executor then replaces the stored samples instead of adding to them). */
HLB_EXTERN unsigned hlb_model_clears(const hlb_model *m);

/* Add one measurement: a block of `items` took compute_s to compute and transfer_s to move
 * (0 when not measured). Returns 0, or HLB_ESAMPLE when rejected (counted by reason, the
 * detail in hlb_last_error()). Cheap: O(1); the fit happens in hlb_model_fit(). */
HLB_EXTERN int hlb_model_add(hlb_model *m, double items, double compute_s, double transfer_s);

/* Every compute time the model holds, and its fit, times `factor` (finite, > 0), as if its
 * samples had been measured on a PU that much slower: for a PU whose capacity changed by a known
 * ratio mid-run (a cpu PU given a released device's cores: `factor` = cores before / cores
 * after). What the samples showed of the curve's shape stays; transfer times stay. O(1).
 * HLB_EINVAL for a NULL model or a bad factor. */
HLB_EXTERN int hlb_model_scale_compute(hlb_model *m, double factor);

/* Refit from the samples so far so that predictions are positive and non-decreasing for
 * x in [min(1, smallest block), x_max] (docs/models.md gives the criterion). Costs about
 * 20-30 us with AICc (every subset of at most 8 terms), independent of the sample count.
 * HLB_EINVAL for a bad x_max; HLB_ESTATE with fewer than two distinct sizes; HLB_ENUMERIC when
 * allowed_terms admits no positive non-decreasing curve. On failure the previous fit, if
 * any, stays in use. */
HLB_EXTERN int hlb_model_fit(hlb_model *m, double x_max);

/* 1 once hlb_model_fit() has succeeded. */
HLB_EXTERN int hlb_model_fitted(const hlb_model *m);
/* Accepted samples, and rejected samples for one reason. */
HLB_EXTERN size_t hlb_model_samples(const hlb_model *m);
HLB_EXTERN size_t hlb_model_rejected(const hlb_model *m, hlb_reject_reason r);
/* Coefficient of determination of the compute fit (1 = perfect), under the model's weighting
 * (with relative weighting it measures relative errors); NaN before a fit. */
HLB_EXTERN double hlb_model_r2(const hlb_model *m);
/* The scale given to hlb_model_create (u = x / scale). */
HLB_EXTERN double hlb_model_scale(const hlb_model *m);
/* Value of the selection criterion (AICc, or mean leave-one-out squared error) of the chosen
 * subset; NaN before a fit or when too few samples made the criterion undefined (then the
 * best one-term fit by residual was taken, see docs/models.md). */
HLB_EXTERN double hlb_model_score(const hlb_model *m);
/* Mask of the terms chosen by the last fit. */
HLB_EXTERN unsigned hlb_model_terms(const hlb_model *m);
/* The fitted F + G as a plain curve. HLB_ESTATE before a fit. */
HLB_EXTERN int hlb_model_curve(const hlb_model *m, hlb_curve *out);
/* F(x) + G(x) of the last fit; NaN before a fit. */
HLB_EXTERN double hlb_model_predict(const hlb_model *m, double x);
/* Largest x in [0, x_max] with F(x) + G(x) <= t (0 if even the smallest block exceeds t), by
 * bisection on the fit, which is non-decreasing up to the x_max it was fitted for. NaN before
 * a fit or for a NaN argument. */
HLB_EXTERN double hlb_model_inverse(const hlb_model *m, double t, double x_max);

HLB_END_DECLS

#endif
