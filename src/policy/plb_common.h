/* Helpers shared by the model-based block policies plb-hec, plb-hac and hlb: sample checks,
 * per-PU speed bookkeeping, fitting the balancer's models into plain curves, and the
 * equal-finish-time solve with ready times of busy PUs (PLB-HeC III.C, PLB-HAC 3.2).
 *
 * Thread safety: none of this is locked; the balancer serialises every call into a policy,
 * and a hlb__plb_ws belongs to one policy state.
 */
#ifndef HLB_POLICY_PLB_COMMON_H
#define HLB_POLICY_PLB_COMMON_H

#include <stddef.h>

#include "hlb/balancer.h"
#include "hlb/model.h"
#include "hlb/partition.h"
#include "hlb/policy.h"

/* What a policy remembers of one PU between calls. */
typedef struct hlb__plb_pu {
  double rate;      /* items per second, from the accepted samples so far; 0 = unknown */
  double sum_items; /* accepted items and their times, for `rate` */
  double sum_s;
  double max_items;    /* largest block with an accepted sample */
  double min_items;    /* smallest block with an accepted sample */
  size_t good;         /* accepted samples */
  size_t bad;          /* rejected samples (NaN, infinite, non-positive times) */
  double sxx, sxt, st; /* sums of x^2, x*t and t over accepted samples, for the affine fit */
  int fitted;          /* `curve` is a fit of the PU's model, not the linear fallback */
  hlb_curve curve;     /* the current time estimate; valid once rate > 0 */
} hlb__plb_pu;

/* Scratch arrays for one solve over all PUs, allocated once per policy state. */
typedef struct hlb__plb_ws {
  unsigned n;
  hlb_curve *curves;
  double *ready;
  double *x;
  unsigned *idx; /* compacted index -> PU */
  /* The equal-finish-time solver's workspace for the last solve over eft_n > 32 PUs, kept
   * for the next solve over as many (reset: no warm start, as a fresh one). */
  hlb_eft_workspace *eft;
  unsigned eft_n;
} hlb__plb_ws;

int hlb__plb_ws_init(hlb__plb_ws *ws, unsigned n);
void hlb__plb_ws_free(hlb__plb_ws *ws);

/* 1 when a sample's times can be learned from: finite, compute > 0, transfer >= 0, count > 0.
 * The balancer already counts and rejects such samples in the model; policies must not let
 * them into their own speed estimates either. */
int hlb__plb_sample_ok(const hlb_sample *s);

/* What a sample's block is worth to the curves: its cost in average items (the count unless
 * the balancer has an item cost density for this policy). */
double hlb__plb_sample_x(const hlb_sample *s);

/* compute + transfer of a sample. */
double hlb__plb_sample_s(const hlb_sample *s);

/* Learn the speed of u from an accepted sample; a rejected one only counts in u->bad. When
 * u has no fitted curve, u->curve becomes the straight line through its samples
 * (hlb__plb_affine_curve). */
void hlb__plb_observe(hlb__plb_pu *u, const hlb_sample *s);

/* The curve x / rate (no fixed part); the estimate before a fit is possible. */
void hlb__plb_linear_curve(hlb_curve *c, double rate);

/* The least-squares line t = a + b x through u's accepted samples (a >= 0, b > 0): a fixed
 * cost per block plus a cost per item, which extrapolates safely beyond the sizes seen.
 * Returns 0 (and the curve through the mean rate) with fewer than two distinct sizes. */
int hlb__plb_affine_curve(const hlb__plb_pu *u, hlb_curve *c);

/* c with every time multiplied by f > 0 (a measured slowdown or speed-up). */
void hlb__plb_curve_scaled(hlb_curve *out, const hlb_curve *c, double f);

/* Fit PU p's model over (0, x_max] and keep the result in u->curve when it is sane (see
 * plb_common.c: monotone, and within a factor 1.4 of the measured straight line up to 16
 * times the largest block seen). Otherwise u->curve is that straight line (fixed cost + cost
 * per item), or the mean rate while fewer than two distinct sizes were measured. Returns 1
 * for a fit, 0 for a line, -1 when the PU has no estimate at all (no accepted sample). */
int hlb__plb_refit(const hlb_policy_ctx *ctx, unsigned p, hlb__plb_pu *u, double x_max);

/* R^2 of PU p's last fit (NaN before one). */
double hlb__plb_r2(const hlb_policy_ctx *ctx, unsigned p);

/* Largest x in [0, x_max] with time(c, x) <= t, by bisection (curves are non-decreasing). */
/* The points a bisection of hlb__plb_inverse_memo evaluated, by step: another bisection on the
 * same curve and range takes the same steps until its comparisons differ, and reuses their
 * times instead of evaluating the curve again. Set c to NULL before the first use; the curve
 * must not change while memo->c points to it (a call with another curve or x_max starts
 * afresh). */
typedef struct hlb__plb_memo {
  const hlb_curve *c;
  double x_max, t_max; /* the curve's time at x_max */
  unsigned n;          /* steps kept */
  double x[64], t[64];
} hlb__plb_memo;

/* hlb__plb_inverse with the steps kept in (and taken from) memo: the same result. */
double hlb__plb_inverse_memo(hlb__plb_memo *memo, const hlb_curve *c, double t, double x_max);
double hlb__plb_inverse(const hlb_curve *c, double t, double x_max);

/* Ready time (seconds from now, >= 0) of PU p: when its blocks in flight will be done by
 * curve c; 0 when idle. A block already overdue is assumed to need a quarter of its
 * prediction more, so an overdue PU is neither ignored nor waited for forever. */
double hlb__plb_ready_in(const hlb_policy_ctx *ctx, unsigned p, const hlb_curve *c, double now);

/* Equal-finish-time split of `items` over the alive PUs with usable curves (curves[p] is used
 * when usable[p]; ready[p] in seconds from now, may be NULL). x[p] gets each PU's share
 * (0 for the others); *makespan (may be NULL) the predicted finish, seconds from now.
 * When the solver fails, falls back to shares proportional to the curves' speeds, so a bad
 * model slows the run down but never stops it. Returns the number of PUs used (0: none). */
unsigned hlb__plb_solve(const hlb_policy_ctx *ctx, hlb__plb_ws *ws, const hlb_curve *curves,
                        const int *usable, const double *ready, double items, double *x,
                        double *makespan);

/* Round a wanted block size to the balancer's granularity, at least one granule. */
size_t hlb__plb_round(const hlb_policy_ctx *ctx, double x);

/* Smallest and largest of one value per PU, with PUs leaving and entering, each change in
 * O(log n) and the range in O(1): a tournament tree over the PUs (an empty leaf holds
 * +inf / -inf). Lets a policy compare every PU's figure after each block without a scan. */
typedef struct hlb__plb_minmax {
  unsigned size; /* leaves: a power of two >= n */
  double *lo, *hi;
} hlb__plb_minmax;

int hlb__plb_minmax_init(hlb__plb_minmax *m, unsigned n);
void hlb__plb_minmax_free(hlb__plb_minmax *m);
void hlb__plb_minmax_clear(hlb__plb_minmax *m); /* every PU empty */
void hlb__plb_minmax_set(hlb__plb_minmax *m, unsigned p, double v);
void hlb__plb_minmax_remove(hlb__plb_minmax *m, unsigned p);
/* Over the non-empty PUs: *lo > *hi when there is none. */
void hlb__plb_minmax_range(const hlb__plb_minmax *m, double *lo, double *hi);

/* Number of alive PUs, and the number of alive PUs with a block in flight; both O(1). */
unsigned hlb__plb_alive(const hlb_policy_ctx *ctx);
unsigned hlb__plb_busy(const hlb_policy_ctx *ctx);

#endif
