/* Equal-finish-time partition solvers (PLB-HeC III.C, eq. 3-5).
 *
 * Thread safety: every function without a workspace is pure (no shared state) and safe from
 * any thread; a hlb_eft_workspace belongs to one thread at a time. Errors name the PU and the
 * value (hlb_last_error()). docs/partition.md describes the methods.
 *
 * Given n PUs with non-decreasing time curves E_p (hlb_curve: compute + transfer) and ready
 * times r_p (when each PU becomes free; 0 for all if NULL), split W items into x_p >= 0 with
 * sum x_p = W minimising the makespan max_p (r_p + E_p(x_p)) over PUs with x_p > 0. A PU whose
 * r_p + E_p(0+) already exceeds the optimum gets 0 instead of dragging everyone down.
 */
#ifndef HLB_PARTITION_H
#define HLB_PARTITION_H

#include <stddef.h>

#include "hlb/export.h"
#include "hlb/model.h"

HLB_BEGIN_DECLS

/* Continuous solve. x_out has n entries; *makespan_out (may be NULL) gets the makespan of
 * x_out (0 when items == 0), within about 1e-12 (relative) of the optimum.
 * HLB_EINVAL for n == 0, items < 0 or not finite, a non-finite ready time, or a curve that is
 * not finite or is found decreasing (E(0+) > E(W), a negative slope at W, or a negative slope
 * where the search for a share evaluates it above the time sought); the error names the PU and
 * the x. A dip below E(0+) (an x ln x term just above 0) is no error: no share lies in it. */
HLB_EXTERN int hlb_eft_solve(const hlb_curve *curves, const double *ready_s, unsigned n,
                             double items, double *x_out, double *makespan_out);

/* Check that a curve is usable on [x_lo, x_hi] (0 < x_lo <= x_hi): finite coefficients and
 * scale, finite time at both ends, and a slope that is finite and not negative (beyond
 * rounding) at 24 log-spaced points and, for polynomial curves, at the vertex of the slope.
 * HLB_EINVAL naming `pu` and the x where it fails. The solvers themselves only check the
 * endpoints and every slope their Newton steps evaluate, to stay cheap. */
HLB_EXTERN int hlb_eft_check_curve(const hlb_curve *c, unsigned pu, double x_lo, double x_hi);

/* Reusable state for repeated continuous solves of the same n PUs (the online case: one
 * curve changes after each new sample). It keeps buffers and the previous solution, so a
 * re-solve allocates nothing and starts Newton from the previous finish time and sizes.
 * One owner at a time: a workspace is not locked. */
typedef struct hlb_eft_workspace hlb_eft_workspace;

/* A workspace for n > 0 PUs. HLB_ENOMEM, HLB_EINVAL for n == 0. */
HLB_EXTERN int hlb_eft_workspace_create(unsigned n, hlb_eft_workspace **out);
HLB_EXTERN void hlb_eft_workspace_destroy(hlb_eft_workspace *ws);
/* Forget the previous solution, so the next solve starts cold. */
HLB_EXTERN void hlb_eft_workspace_reset(hlb_eft_workspace *ws);
/* Outer (finish-time) iterations and curve evaluations of the last solve, for benchmarks. */
HLB_EXTERN void hlb_eft_workspace_stats(const hlb_eft_workspace *ws, unsigned *iterations,
                                        unsigned long *evaluations);

/* hlb_eft_solve with the workspace's n: same result, warm-started from the previous solve
 * of this workspace when there was one. */
HLB_EXTERN int hlb_eft_solve_ws(hlb_eft_workspace *ws, const hlb_curve *curves,
                                const double *ready_s, double items, double *x_out,
                                double *makespan_out);

/* Constraints of the integer solve; NULL means none. */
typedef struct hlb_eft_int_options {
  size_t granularity;      /* each x_p is a multiple of this (0 or 1: any integer), except
                              that one PU also takes the remainder W mod granularity */
  const size_t *min_block; /* per PU: x_p is 0 or >= min_block[p]; NULL for none */
  const size_t *max_block; /* per PU: x_p <= max_block[p] (0 = no limit); NULL for none */
} hlb_eft_int_options;

/* Exact integer optimum of the makespan under the options (not a rounding of the continuous
 * solution): every x_p is 0 or in [min_block[p], max_block[p]], a multiple of the granularity
 * g except for the one PU (chosen optimally) that also holds W mod g. *makespan_out is
 * max over x_p > 0 of ready_s[p] + hlb_curve_time(x_p), computed exactly that way. Curves are
 * checked with hlb_eft_check_curve on [min(g, W), W]. When the minimum blocks of the usable
 * PUs add up to more than W the solver picks a subset by an exact branch and bound, which is
 * exponential in the worst case (the problem contains subset-sum). HLB_EINFEASIBLE when no
 * assignment obeys the block limits; HLB_EINVAL as for hlb_eft_solve. */
HLB_EXTERN int hlb_eft_solve_int(const hlb_curve *curves, const double *ready_s, unsigned n,
                                 size_t items, const hlb_eft_int_options *opt, size_t *x_out,
                                 double *makespan_out);

HLB_END_DECLS

#endif
