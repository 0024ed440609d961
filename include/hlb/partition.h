/* Equal-finish-time partition solvers (PLB-HeC III.C, eq. 3-5). Pure functions: no state,
 * safe from any thread.
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

/* Continuous solve. x_out has n entries; *makespan_out (may be NULL) gets the optimum.
 * HLB_EINVAL for n == 0, items < 0 or a curve that is not finite/non-decreasing on (0, items]. */
HLB_EXTERN int hlb_eft_solve(const hlb_curve *curves, const double *ready_s, unsigned n,
                             double items, double *x_out, double *makespan_out);

/* Constraints of the integer solve; NULL means none. */
typedef struct hlb_eft_int_options {
  size_t granularity;      /* each x_p is a multiple of this (0 or 1: any integer), except
                              that one PU also takes the remainder W mod granularity */
  const size_t *min_block; /* per PU: x_p is 0 or >= min_block[p]; NULL for none */
  const size_t *max_block; /* per PU: x_p <= max_block[p] (0 = no limit); NULL for none */
} hlb_eft_int_options;

/* Exact integer optimum of the makespan under the options (not a rounding of the continuous
 * solution). HLB_EINFEASIBLE when the caps cannot hold W items. */
HLB_EXTERN int hlb_eft_solve_int(const hlb_curve *curves, const double *ready_s, unsigned n,
                                 size_t items, const hlb_eft_int_options *opt, size_t *x_out,
                                 double *makespan_out);

HLB_END_DECLS

#endif
