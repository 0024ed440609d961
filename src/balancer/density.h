/* The cost density: how the cost of an item varies along the item index (docs/policies.md,
 * "Items that do not cost the same").
 *
 * PLB-HeC and PLB-HAC assume every item costs the same, so a PU's curve F(x) of the item count
 * predicts any block. Fractal rows, sparse rows of a power-law matrix or an adaptive mesh break
 * that: two blocks of the same count can differ by 100x. When the same items are processed
 * again (iterations of a solver, passes of kmeans or power iteration, time steps of a stencil),
 * the previous pass measured what each part of the index costs. The balancer keeps that as the
 * relative cost of each of n equal bins of the items (mean 1, so a cost is in "average items"),
 * and a PU's curve is applied to a block's cost instead of its count. This is the per-cell
 * weight estimation of Issakhov et al. (the diffusive 1-D balancer) combined with PLB's per-PU
 * curves: one density for all PUs, one curve per PU.
 *
 * Learning it from one pass's blocks (hlb__density_learn) separates the two factors of a
 * block's time, t = (fixed_p + per_p * cost), by alternating least squares: with the density
 * fixed, each PU's line through (cost, t); with the lines fixed, each block's items cost
 * (t - fixed_p) / per_p, spread over the bins it covers by overlap. Every PU sees the same
 * density, so a PU that was slow everywhere stays a slow PU, not an expensive region.
 *
 * Within a pass the density does not change: a single pass over unknown items cannot tell an
 * expensive region from a slow PU block by block, and the policies' own per-PU corrections
 * follow drift. (Irregular work seen for the first time is handled by the hlb policy's
 * guard against mispredictions instead.)
 *
 * Thread safety: none; the balancer serialises every call.
 */
#ifndef HLB_BALANCER_DENSITY_H
#define HLB_BALANCER_DENSITY_H

#include <stddef.h>

typedef struct hlb__density {
  size_t n_items;
  unsigned n;     /* bins; 0: every item costs 1 (no density) */
  double per_bin; /* items per bin: n_items / n */
  double *rel;    /* relative cost per bin, mean 1 */
  double *prefix; /* prefix[k]: cost of bins 0..k-1 in average items */
} hlb__density;

/* One finished block, as hlb__density_learn needs it. */
typedef struct hlb__density_obs {
  size_t begin, count;
  unsigned pu;
  double seconds; /* compute + transfer */
} hlb__density_obs;

/* Bins for n_items items of granularity g: at most HLB_ITEM_COST_SLICES (balancer.h), at
 * least a granule each. */
unsigned hlb__density_bins(size_t n_items, size_t granularity);

/* A density from m relative costs of m equal slices of the items (any positive scale; slices
 * with NaN or values <= 0 count as average), resampled to `bins` bins. rel NULL or m 0: no
 * density, every item costs 1. HLB_ENOMEM or 0. */
int hlb__density_init(hlb__density *d, size_t n_items, unsigned bins, const double *rel,
                      unsigned m);
void hlb__density_fini(hlb__density *d);

/* Cost of items [begin, begin + count) in average items (count without a density). */
double hlb__density_cost(const hlb__density *d, size_t begin, size_t count);

/* The coefficient of variation of the bins' relative costs: 0 for no density or a flat one. */
double hlb__density_spread(const hlb__density *d);

/* The largest count from `begin` (at most `max`) whose cost is at most `cost`. */
size_t hlb__density_count_for_cost(const hlb__density *d, size_t begin, size_t max, double cost);

/* Learn the relative cost of m equal slices of n_items items from a pass's finished blocks
 * (alternating least squares, above), starting from the density the pass had (`start`, NULL
 * or empty: every item average); out gets m values of mean 1. Slices no block covered keep
 * their starting value. Returns 0, HLB_EINVAL for no usable block, HLB_ENOMEM. */
int hlb__density_learn(size_t n_items, unsigned n_pus, const hlb__density_obs *obs, size_t n_obs,
                       const hlb__density *start, double *out, unsigned m);

/* How badly a density predicts a pass's finished blocks: each PU's least-squares line of time
 * against the blocks' cost under d (NULL or empty: their counts), weighted for relative
 * error, and the mean squared relative error of the blocks it was fitted to. A PU's first
 * block is left out (set-up costs), and a PU scores only from its third block on (two fit
 * any line). The error of a block is how far its time exceeds the prediction, on a log scale
 * (ln(t / predicted), 0 when it took less): a block that ran longer than planned holds the
 * others idle at the end, one that ran shorter only made a smaller block than it could have.
 * *n_scored: the blocks scored (0: no evidence, and 0 returned). NaN without
 * memory. Comparing a map's misfit with the counts' on blocks the map was not learnt from says
 * whether the map predicts: a map learnt from noise fits its own pass, not the next. */
double hlb__density_misfit(size_t n_items, unsigned n_pus, const hlb__density_obs *obs,
                           size_t n_obs, const hlb__density *d, size_t *n_scored);

#endif
