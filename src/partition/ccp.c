/* Exact chains-on-chains partitioning with heterogeneous rank speeds (Issakhov et al. section 1
 * reduces the domain decomposition to this problem; the solver follows the probe-based exact
 * bisection of Pinar & Aykanat, Issakhov et al.'s reference [8], extended to speeds as in [11]).
 *
 * The cost of part p = [b, e) is c(p, b, e) = (prefix[e] - prefix[b]) / speed[p], evaluated
 * in floating point exactly this way everywhere, so the optimum is exact for that cost.
 * c is non-decreasing in e and non-increasing in b (rounding is monotone), which is all the
 * greedy probe needs to be optimal: for a bound B, giving each rank in order the longest part
 * with cost <= B reaches m iff some split has bottleneck <= B.
 *
 * The search keeps lo <= B* <= hi, hi always the bottleneck of a real split:
 *  - a successful probe at B yields a split whose real bottleneck (<= B) becomes hi;
 *  - a failed probe at B yields lo = min over ranks of the cost of its part plus the next
 *    cell, a candidate value. It is a lower bound: the greedy ends only move right as B grows,
 *    and at B* the first rank whose end differs must have taken that next cell.
 * Every probe at the midpoint therefore at least halves the interval, and both ends jump to
 * candidate values, so the loop ends with lo == hi == B* (8-16 probes at m = 10^6, P = 1024).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"

/* Far more probes than the interval halving can need in double precision (about 64 per
 * binade crossed); reaching it means the cost function was not monotone. */
#define CCP_MAX_PROBES 4096

static double speed_of(const double *speed, unsigned p) {
  return speed ? speed[p] : 1.0;
}

static double part_cost(const double *prefix, const double *speed, unsigned p, size_t b, size_t e) {
  return (prefix[e] - prefix[b]) / speed_of(speed, p);
}

int hlb_ccp_prefix(const double *w, size_t m, double *prefix_out) {
  if (m == 0) return hlb__error(HLB_EINVAL, "ccp: number of cells m must be > 0");
  if (!w || !prefix_out)
    return hlb__error(HLB_EINVAL, "ccp: weights and prefix output must not be NULL");
  double acc = 0.0;
  prefix_out[0] = 0.0;
  for (size_t k = 0; k < m; k++) {
    if (!isfinite(w[k]) || w[k] < 0)
      return hlb__error(HLB_EINVAL, "ccp: weight w[%zu] must be finite and >= 0, got %g", k, w[k]);
    acc += w[k];
    prefix_out[k + 1] = acc;
  }
  if (!isfinite(acc)) return hlb__error(HLB_ERANGE, "ccp: total weight of %zu cells overflows", m);
  return 0;
}

static int check_speeds(const double *speed, unsigned P) {
  if (P == 0) return hlb__error(HLB_EINVAL, "ccp: number of ranks P must be > 0");
  for (unsigned p = 0; speed && p < P; p++)
    if (!isfinite(speed[p]) || !(speed[p] > 0))
      return hlb__error(HLB_EINVAL, "ccp: speed[%u] must be finite and > 0, got %g", p, speed[p]);
  return 0;
}

/* Also gives the heaviest cell, for the initial bracket of the search. */
static int check_prefix(const double *prefix, size_t m, double *wmax) {
  if (m == 0) return hlb__error(HLB_EINVAL, "ccp: number of cells m must be > 0");
  if (prefix[0] != 0.0)
    return hlb__error(HLB_EINVAL, "ccp: prefix[0] must be 0, got %g", prefix[0]);
  double heaviest = 0.0;
  for (size_t k = 1; k <= m; k++) {
    if (!isfinite(prefix[k]) || prefix[k] < prefix[k - 1])
      return hlb__error(HLB_EINVAL,
                        "ccp: prefix[%zu] must be finite and >= prefix[%zu] = %g, got %g", k, k - 1,
                        prefix[k - 1], prefix[k]);
    if (prefix[k] - prefix[k - 1] > heaviest) heaviest = prefix[k] - prefix[k - 1];
  }
  *wmax = heaviest;
  return 0;
}

/* Largest e in [b, m] with c(p, b, e) <= B (b itself always qualifies: cost 0 <= B).
 * Galloping from a hint (where this rank's part ended in the previous probe; consecutive
 * probes differ little), then bisection: O(log |e - hint|) steps, all close to the hint in
 * memory. A plain bisection over [b, m] would jump across the whole prefix array, and at
 * m = 10^6 its cache misses dominate the solve. */
static size_t longest_part(const double *prefix, size_t m, const double *speed, unsigned p,
                           size_t b, double B, size_t hint) {
  size_t lo, hi, step = 1; /* invariant: cost(lo) <= B < cost(hi + 1); answer in [lo, hi] */
  if (hint <= b || hint > m) hint = b;
  if (part_cost(prefix, speed, p, b, hint) <= B) {
    lo = hint;
    hi = m;
    while (lo < m) {
      size_t e = m - lo > step ? lo + step : m;
      if (part_cost(prefix, speed, p, b, e) > B) {
        hi = e - 1;
        break;
      }
      lo = e;
      step *= 2;
    }
  } else {
    hi = hint - 1;
    lo = b;
    while (hi > b) {
      size_t e = hi - b > step ? hi - step : b;
      if (part_cost(prefix, speed, p, b, e) <= B) {
        lo = e;
        break;
      }
      hi = e - 1;
      step *= 2;
    }
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (part_cost(prefix, speed, p, b, mid) <= B)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Greedy probe at bound B. Writes the split into off (P + 1 entries); with use_hints, off holds
 * the previous probe's split on entry and serves as the search hints. Returns 1 when it covers
 * all m cells, with *achieved = its real bottleneck; otherwise 0 with *next = the smallest cost
 * some rank would have with one more cell (a lower bound of the optimum, see the top). */
static int probe(const double *prefix, size_t m, const double *speed, unsigned P, double B,
                 int use_hints, size_t *off, double *achieved, double *next) {
  double worst = 0.0, nxt = INFINITY;
  size_t b = 0;
  off[0] = 0;
  for (unsigned p = 0; p < P; p++) {
    size_t hint = use_hints ? off[p + 1] : b;
    size_t e = b < m ? longest_part(prefix, m, speed, p, b, B, hint) : m;
    off[p + 1] = e;
    double c = part_cost(prefix, speed, p, b, e);
    if (c > worst) worst = c;
    if (e < m) {
      double grow = part_cost(prefix, speed, p, b, e + 1);
      if (grow < nxt) nxt = grow;
    }
    b = e;
  }
  *achieved = worst;
  *next = nxt;
  return b == m;
}

/* Initial bracket lo <= B* <= hi, hi the cost of a real split (Pinar & Aykanat's bounds with
 * speeds). Some rank carries at least its speed share: B* >= total / sum(s), less the rounding
 * of P prefix differences. And at B = total / sum(s) + wmax / min(s) the greedy part of every
 * rank stops less than one cell short of its share, so the probe there succeeds. */
static int bracket(const double *prefix, size_t m, const double *speed, unsigned P, double wmax,
                   size_t *off, double *lo, double *hi) {
  double ssum = 0.0, smin = INFINITY, smax = 0.0;
  for (unsigned p = 0; p < P; p++) {
    double s = speed_of(speed, p);
    ssum += s;
    smin = s < smin ? s : smin;
    smax = s > smax ? s : smax;
  }
  double total = prefix[m], even = total / ssum;
  *lo = even * (1.0 - (double)(P + 4) * DBL_EPSILON);
  /* Everything on the fastest rank is always a valid split. */
  *hi = total / smax;
  double achieved, next, B = (even + wmax / smin) * (1.0 + 1e-9);
  int probed = B < *hi;
  if (probed && probe(prefix, m, speed, P, B, 0, off, &achieved, &next) && achieved < *hi)
    *hi = achieved;
  if (*lo > *hi) *lo = *hi;
  return probed; /* off holds a split to start the next probe's searches from */
}

int hlb_ccp_solve_prefix(const double *prefix, size_t m, const double *speed, unsigned P,
                         size_t *offsets_out, double *bottleneck_out) {
  if (!prefix || !offsets_out)
    return hlb__error(HLB_EINVAL, "ccp: prefix and offsets output must not be NULL");
  double wmax = 0.0;
  int rc = check_prefix(prefix, m, &wmax);
  if (rc == 0) rc = check_speeds(speed, P);
  if (rc) return rc;
  double lo, hi, achieved, next;
  int hinted = bracket(prefix, m, speed, P, wmax, offsets_out, &lo, &hi);
  for (int it = 0; lo < hi; it++) {
    if (it == CCP_MAX_PROBES)
      return hlb__error(HLB_ENUMERIC,
                        "ccp: bisection did not close after %d probes "
                        "(lo %.17g, hi %.17g)",
                        it, lo, hi);
    double mid = lo + (hi - lo) / 2;
    if (!(mid < hi)) mid = lo; /* adjacent doubles: probe lo itself */
    if (probe(prefix, m, speed, P, mid, hinted, offsets_out, &achieved, &next))
      hi = achieved;
    else
      lo = next;
    hinted = 1;
  }
  /* The final split: the greedy probe at the optimum. */
  if (!probe(prefix, m, speed, P, hi, hinted, offsets_out, &achieved, &next))
    return hlb__error(HLB_ENUMERIC, "ccp: probe at the optimum %.17g failed", hi);
  if (bottleneck_out) *bottleneck_out = achieved;
  return 0;
}

int hlb_ccp_solve(const double *w, size_t m, const double *speed, unsigned P, size_t *offsets_out,
                  double *bottleneck_out) {
  if (m == 0) return hlb__error(HLB_EINVAL, "ccp: number of cells m must be > 0");
  double *prefix = malloc((m + 1) * sizeof *prefix);
  if (!prefix) return hlb__error(HLB_ENOMEM, "ccp: cannot allocate prefix sums of %zu cells", m);
  int rc = hlb_ccp_prefix(w, m, prefix);
  if (rc == 0) rc = hlb_ccp_solve_prefix(prefix, m, speed, P, offsets_out, bottleneck_out);
  free(prefix);
  return rc;
}

int hlb_ccp_check_offsets(const size_t *offsets, unsigned P, size_t m) {
  if (P == 0) return hlb__error(HLB_EINVAL, "ccp: number of ranks P must be > 0");
  if (!offsets) return hlb__error(HLB_EINVAL, "ccp: offsets must not be NULL");
  if (offsets[0] != 0)
    return hlb__error(HLB_EINVAL, "ccp: offsets[0] must be 0, got %zu", offsets[0]);
  for (unsigned p = 1; p <= P; p++)
    if (offsets[p] < offsets[p - 1] || offsets[p] > m)
      return hlb__error(HLB_EINVAL,
                        "ccp: offsets[%u] must be in [offsets[%u] = %zu, m = %zu], "
                        "got %zu",
                        p, p - 1, offsets[p - 1], m, offsets[p]);
  if (offsets[P] != m)
    return hlb__error(HLB_EINVAL, "ccp: offsets[%u] must be m = %zu, got %zu", P, m, offsets[P]);
  return 0;
}

int hlb_ccp_offsets_from_counts(const size_t *counts, unsigned P, size_t m, size_t *offsets_out) {
  if (P == 0) return hlb__error(HLB_EINVAL, "ccp: number of ranks P must be > 0");
  if (!counts || !offsets_out)
    return hlb__error(HLB_EINVAL, "ccp: counts and offsets output must not be NULL");
  size_t acc = 0;
  for (unsigned p = 0; p < P; p++) {
    if (counts[p] > m - acc)
      return hlb__error(HLB_EINVAL, "ccp: counts[0..%u] add up to more than m = %zu", p, m);
    acc += counts[p];
  }
  if (acc != m) return hlb__error(HLB_EINVAL, "ccp: counts add up to %zu, must be m = %zu", acc, m);
  offsets_out[0] = 0;
  for (unsigned p = 0; p < P; p++)
    offsets_out[p + 1] = offsets_out[p] + counts[p];
  return 0;
}

int hlb_ccp_counts_from_offsets(const size_t *offsets, unsigned P, size_t m, size_t *counts_out) {
  int rc = hlb_ccp_check_offsets(offsets, P, m);
  if (rc) return rc;
  if (!counts_out) return hlb__error(HLB_EINVAL, "ccp: counts output must not be NULL");
  for (unsigned p = 0; p < P; p++)
    counts_out[p] = offsets[p + 1] - offsets[p];
  return 0;
}

int hlb_ccp_evaluate(const double *w, size_t m, const double *speed, unsigned P,
                     const size_t *offsets, double *bottleneck_out) {
  if (m == 0) return hlb__error(HLB_EINVAL, "ccp: number of cells m must be > 0");
  if (!w || !bottleneck_out)
    return hlb__error(HLB_EINVAL, "ccp: weights and bottleneck output must not be NULL");
  int rc = check_speeds(speed, P);
  if (rc == 0) rc = hlb_ccp_check_offsets(offsets, P, m);
  if (rc) return rc;
  double worst = 0.0;
  for (unsigned p = 0; p < P; p++) {
    double sum = 0.0;
    for (size_t k = offsets[p]; k < offsets[p + 1]; k++) {
      if (!isfinite(w[k]) || w[k] < 0)
        return hlb__error(HLB_EINVAL, "ccp: weight w[%zu] must be finite and >= 0, got %g", k,
                          w[k]);
      sum += w[k];
    }
    double c = sum / speed_of(speed, p);
    if (c > worst) worst = c;
  }
  *bottleneck_out = worst;
  return 0;
}
