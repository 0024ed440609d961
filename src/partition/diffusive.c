/* Diffusive refinement of 1-D split offsets (Issakhov et al. section 1, eq. 5-7, and the power
 * weights at the end of that section).
 *
 * Each inner offset o_j is moved on its own, from the measured loads and the per-cell
 * weights: the cumulative imbalance s_j = sum_{i<j} l_i - j says how much load the ranks left
 * of o_j carry beyond their share; crossing cells of the heavy side moves their load share
 * w~ = l_i * w_k / W_i over, inflated by f_penalty >= 1 so the offset moves conservatively
 * (the load estimate of a cell is rough; overshooting makes the next step oscillate).
 */
#include <math.h>
#include <stddef.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"

void hlb_diffusive_options_default(hlb_diffusive_options *opt) {
  opt->f_penalty = HLB_DIFFUSIVE_F_PENALTY;
  opt->power = HLB_POWER_NONE;
  opt->power_given = NULL;
  opt->max_shift = 0;
  opt->power_mix = 0;
}

/* Validate the weights, loads and offsets shared by both entry points; *total gets the sum of
 * the weights and *mean the mean load. */
static int check_common(const double *w, size_t m, const double *load, unsigned N,
                        const size_t *offsets, double *total, double *mean) {
  if (m == 0) return hlb__error(HLB_EINVAL, "diffusive: number of cells m must be > 0");
  if (N == 0) return hlb__error(HLB_EINVAL, "diffusive: number of ranks N must be > 0");
  if (!w || !load || !offsets)
    return hlb__error(HLB_EINVAL, "diffusive: weights, loads and offsets must not be NULL");
  double acc = 0.0;
  for (size_t k = 0; k < m; k++) {
    if (!isfinite(w[k]) || w[k] < 0)
      return hlb__error(HLB_EINVAL, "diffusive: weight w[%zu] must be finite and >= 0, got %g", k,
                        w[k]);
    acc += w[k];
  }
  if (!isfinite(acc))
    return hlb__error(HLB_ERANGE, "diffusive: total weight of %zu cells overflows", m);
  double lsum = 0.0;
  for (unsigned i = 0; i < N; i++) {
    if (!isfinite(load[i]) || load[i] < 0)
      return hlb__error(HLB_EINVAL, "diffusive: load[%u] must be finite and >= 0, got %g", i,
                        load[i]);
    lsum += load[i];
  }
  if (!(lsum > 0) || !isfinite(lsum))
    return hlb__error(HLB_EINVAL, "diffusive: loads must not all be 0 (sum %g)", lsum);
  int rc = hlb_ccp_check_offsets(offsets, N, m);
  if (rc) return hlb__error_prefix(rc, "diffusive: ");
  *total = acc;
  *mean = lsum / N;
  return 0;
}

static int check_options(const hlb_diffusive_options *o, unsigned N) {
  if (!isfinite(o->f_penalty) || !(o->f_penalty >= 1.0))
    return hlb__error(HLB_EINVAL, "diffusive: f_penalty must be finite and >= 1, got %g",
                      o->f_penalty);
  switch (o->power) {
  case HLB_POWER_NONE:
  case HLB_POWER_MEASURED:
    return 0;
  case HLB_POWER_GIVEN:
    if (!o->power_given)
      return hlb__error(HLB_EINVAL, "diffusive: power HLB_POWER_GIVEN needs power_given");
    for (unsigned i = 0; i < N; i++)
      if (!isfinite(o->power_given[i]) || !(o->power_given[i] > 0))
        return hlb__error(HLB_EINVAL,
                          "diffusive: power_given[%u] must be finite and > 0, "
                          "got %g",
                          i, o->power_given[i]);
    return 0;
  }
  return hlb__error(HLB_EINVAL, "diffusive: unknown power mode %d", (int)o->power);
}

static double domain_sum(const double *w, size_t b, size_t e) {
  double s = 0.0;
  for (size_t k = b; k < e; k++)
    s += w[k];
  return s;
}

/* What the step knows about one old domain. */
typedef struct domain {
  size_t begin, end; /* old cells [begin, end) */
  double W;          /* sum of the weights of those cells */
  double l;          /* normalised load l_i */
  double p;          /* power weight p_i; 0 when undefined */
} domain;

static domain make_domain(const double *w, const size_t *offsets, const double *load, double mean,
                          unsigned i, double W_bar, const hlb_diffusive_options *o) {
  domain d = {offsets[i], offsets[i + 1], 0.0, load[i] / mean, 0.0};
  d.W = domain_sum(w, d.begin, d.end);
  if (o->power == HLB_POWER_GIVEN)
    d.p = o->power_given[i];
  else if (o->power == HLB_POWER_MEASURED && d.W > 0)
    d.p = d.l * W_bar / d.W; /* Issakhov et al.: p_i = l_i * W_bar / W_i */
  return d;
}

/* Load share w~ = l_i * w_k / W_i of cell k in its domain (Issakhov et al., eq. 6); a domain whose
 * weights are all zero spreads its load evenly over its cells. */
static double cell_share(const domain *src, const double *w, size_t k) {
  if (src->W > 0) return src->l * w[k] / src->W;
  return src->l / (double)(src->end - src->begin);
}

/* p_dest / p_src for a cell moving from src to dest (Issakhov et al.: factor 1.5 for 0.8 -> 1.2); 1
 * when either power weight is undefined or power weights are off. */
static double power_factor(const domain *src, const domain *dest) {
  if (src->p > 0 && dest->p > 0) return dest->p / src->p;
  return 1.0;
}

/* The factor a crossing cell's load w~ is multiplied with at offset j of N, moving in
 * direction dir. Issakhov et al. uses r = p_dest / p_src. With power_mix: after the move the left
 * side carries L - w~ (or L + r w~) and the total changes by (r - 1) w~, so once the loads are
 * normalised again s_j changes, to first order near balance (L ~ j), by
 * w~ ((N-j) + j r) / N moving right and w~ ((N-j) r + j) / N moving left. */
static double step_factor(const domain *src, const domain *dest, int dir, unsigned j, unsigned N,
                          const hlb_diffusive_options *opt) {
  double r = power_factor(src, dest);
  if (!opt->power_mix || r == 1.0) return r;
  double right = (double)(N - j) / N, left = (double)j / N;
  return dir < 0 ? right + left * r : right * r + left;
}

/* Move one offset (Issakhov et al., eq. 7). Cells are taken from src, the heavy side, beginning
 * next to the offset: o - k for dir = -1 (lower bound `limit`), o + k - 1 for dir = +1 (up to
 * `limit`). Returns the number of cells crossed; *s ends as the last accepted s_j^k. */
static size_t shift_offset(const double *w, size_t o, int dir, size_t limit, const domain *src,
                           double factor, const hlb_diffusive_options *opt, double *s) {
  size_t avail = dir < 0 ? o - limit : limit - o;
  if (opt->max_shift && avail > opt->max_shift) avail = opt->max_shift;
  double cur = *s;
  size_t best = 0;
  for (size_t k = 1; k <= avail; k++) {
    size_t cell = dir < 0 ? o - k : o + k - 1;
    double step = dir * opt->f_penalty * cell_share(src, w, cell) * factor;
    if (step == 0.0) continue; /* crossed only if a later cell is accepted */
    if (!(fabs(cur + step) < fabs(cur))) break;
    cur += step;
    best = k;
  }
  *s = cur;
  return best;
}

int hlb_diffusive_step(const double *w, size_t m, const double *load, unsigned N,
                       const size_t *offsets, const hlb_diffusive_options *opt, size_t *new_offsets,
                       double *s_out) {
  hlb_diffusive_options def;
  if (!opt) {
    hlb_diffusive_options_default(&def);
    opt = &def;
  }
  double total, mean;
  int rc = check_common(w, m, load, N, offsets, &total, &mean);
  if (rc == 0) rc = check_options(opt, N);
  if (rc) return rc;
  if (!new_offsets) return hlb__error(HLB_EINVAL, "diffusive: new_offsets must not be NULL");
  double W_bar = total / N;
  domain left = make_domain(w, offsets, load, mean, 0, W_bar, opt);
  double lsum = 0.0;
  size_t new_prev = 0; /* new o_{j-1}; o_0 stays 0 */
  new_offsets[0] = 0;
  if (s_out) s_out[0] = 0.0;
  for (unsigned j = 1; j < N; j++) {
    domain right = make_domain(w, offsets, load, mean, j, W_bar, opt);
    lsum += left.l;
    double s =
        lsum - (double)j; /* Issakhov et al. eq. 5 (printed "- 1"; only "- j" gives s_N = 0) */
    size_t o = offsets[j], moved = 0;
    if (s > 0) {
      /* Left side heavy: cross cells of the old domain j-1 still on the left. */
      size_t lower = left.begin > new_prev ? left.begin : new_prev;
      double factor = step_factor(&left, &right, -1, j, N, opt);
      moved = shift_offset(w, o, -1, lower, &left, factor, opt, &s);
      o -= moved;
    } else if (s < 0) {
      double factor = step_factor(&right, &left, +1, j, N, opt);
      moved = shift_offset(w, o, +1, right.end, &right, factor, opt, &s);
      o += moved;
    }
    /* o <= old o_{j+1}, and o_{j+1} will not move below o: the split stays monotone. */
    new_offsets[j] = o;
    new_prev = o;
    if (s_out) s_out[j] = s;
    left = right;
  }
  new_offsets[N] = m;
  if (s_out) s_out[N] = 0.0;
  return 0;
}

int hlb_diffusive_powers(const double *w, size_t m, const double *load, unsigned N,
                         const size_t *offsets, double *p_out) {
  double total, mean;
  int rc = check_common(w, m, load, N, offsets, &total, &mean);
  if (rc) return rc;
  if (!p_out) return hlb__error(HLB_EINVAL, "diffusive: p_out must not be NULL");
  hlb_diffusive_options o;
  hlb_diffusive_options_default(&o);
  o.power = HLB_POWER_MEASURED;
  for (unsigned i = 0; i < N; i++)
    p_out[i] = make_domain(w, offsets, load, mean, i, total / N, &o).p;
  return 0;
}
