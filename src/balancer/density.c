/* The cost density (density.h). */
#include "balancer/density.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/balancer.h"

/* Rounds of alternating least squares: the density of one pass's blocks settles in 3-5 on
 * the simulator's cost maps; 8 leaves margin at a cost of microseconds per pass. */
#define LEARN_ROUNDS 8
/* An implied cost below this share of the estimated one is noise in the fixed cost. */
#define MIN_IMPLIED 1e-3
/* The least weight of a block whose time is nearly all fixed cost. */
#define MIN_WEIGHT 0.01
/* The cheapest a slice may be, relative to the average: the mandelbrot app's rows outside the
 * set cost about 0.03 of the average row (1 iteration against 256), so 0.02 keeps its map. */
#define FLOOR 0.02
/* Weight of the earlier passes' density against one slice fully covered by this pass's blocks. */
#define PASS_WEIGHT 1.0
/* Blocks of one PU it takes to score a density against counts (hlb__density_misfit). */
#define MISFIT_MIN_BLOCKS 3
/* A prediction counts as at least this share of the measured time (a line fitted through a
 * PU's other blocks may predict nothing, or less, for a block). */
#define MISFIT_FLOOR 1e-3

unsigned hlb__density_bins(size_t n_items, size_t granularity) {
  size_t g = granularity ? granularity : 1;
  size_t granules = (n_items + g - 1) / g;
  if (granules > HLB_ITEM_COST_SLICES) granules = HLB_ITEM_COST_SLICES;
  return granules ? (unsigned)granules : 1u;
}

/* Sum of the m slice values over [u0, u1) of [0, 1), in slice units. */
static double slice_sum(const double *v, unsigned m, double u0, double u1) {
  double a = u0 * m, z = u1 * m, sum = 0;
  if (a < 0) a = 0;
  if (z > m) z = m;
  for (unsigned k = (unsigned)a; k < m && (double)k < z; k++) {
    double lo = fmax(a, (double)k), hi = fmin(z, (double)k + 1);
    if (hi > lo) sum += (hi - lo) * v[k];
  }
  return sum;
}

/* Values valid (finite > 0) or replaced by the mean of the valid ones, then scaled to mean 1.
 * Returns 0 when none is valid. */
static int normalise(double *v, unsigned m) {
  double sum = 0;
  unsigned ok = 0;
  for (unsigned k = 0; k < m; k++)
    if (isfinite(v[k]) && v[k] > 0) sum += v[k], ok++;
  if (ok == 0) return 0;
  double mean = sum / ok;
  for (unsigned k = 0; k < m; k++)
    v[k] = isfinite(v[k]) && v[k] > 0 ? v[k] / mean : 1.0;
  /* Replacing the invalid ones by the mean keeps the mean at 1 only when all were valid. */
  sum = 0;
  for (unsigned k = 0; k < m; k++)
    sum += v[k];
  for (unsigned k = 0; k < m; k++)
    v[k] *= (double)m / sum;
  return 1;
}

int hlb__density_init(hlb__density *d, size_t n_items, unsigned bins, const double *rel,
                      unsigned m) {
  memset(d, 0, sizeof *d);
  d->n_items = n_items;
  if (!rel || m == 0 || n_items == 0 || bins == 0) return 0;
  double *src = malloc(m * sizeof *src);
  d->rel = malloc(bins * sizeof *d->rel);
  d->prefix = malloc((bins + 1) * sizeof *d->prefix);
  if (!src || !d->rel || !d->prefix) {
    free(src);
    hlb__density_fini(d);
    return hlb__error(HLB_ENOMEM, "cost density: out of memory for %u bins", bins);
  }
  memcpy(src, rel, m * sizeof *src);
  if (!normalise(src, m)) { /* nothing usable: no density */
    free(src);
    hlb__density_fini(d);
    d->n_items = n_items;
    return 0;
  }
  d->n = bins;
  d->per_bin = (double)n_items / bins;
  for (unsigned k = 0; k < bins; k++)
    d->rel[k] = slice_sum(src, m, (double)k / bins, (double)(k + 1) / bins) * bins / m;
  free(src);
  d->prefix[0] = 0;
  for (unsigned k = 0; k < bins; k++)
    d->prefix[k + 1] = d->prefix[k] + d->rel[k] * d->per_bin;
  return 0;
}

void hlb__density_fini(hlb__density *d) {
  free(d->rel);
  free(d->prefix);
  memset(d, 0, sizeof *d);
}

/* Cost of items [0, z). */
static double cost_to(const hlb__density *d, double z) {
  if (z <= 0) return 0;
  double at = z / d->per_bin;
  if (at >= d->n) return d->prefix[d->n];
  unsigned k = (unsigned)at;
  return d->prefix[k] + (z - k * d->per_bin) * d->rel[k];
}

double hlb__density_cost(const hlb__density *d, size_t begin, size_t count) {
  if (d->n == 0) return (double)count;
  return cost_to(d, (double)(begin + count)) - cost_to(d, (double)begin);
}

double hlb_item_cost_spread(const double *cost, unsigned m) {
  if (m == 0) return 0.0;
  double sum = 0.0, sq = 0.0;
  for (unsigned k = 0; k < m; k++) {
    sum += cost[k];
    sq += cost[k] * cost[k];
  }
  double mean = sum / m;
  return mean > 0 ? sqrt(fmax(sq / m - mean * mean, 0.0)) / mean : 0.0;
}

double hlb__density_spread(const hlb__density *d) {
  return hlb_item_cost_spread(d->rel, d->n);
}

size_t hlb__density_count_for_cost(const hlb__density *d, size_t begin, size_t max, double cost) {
  if (!(cost > 0)) return 0;
  if (d->n == 0) return cost >= (double)max ? max : (size_t)cost;
  double target = cost_to(d, (double)begin) + cost;
  if (target >= d->prefix[d->n]) return max;
  /* The bin where the cumulative cost reaches the target: prefix is increasing. */
  unsigned lo = 0, hi = d->n;
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (d->prefix[mid] <= target)
      lo = mid;
    else
      hi = mid;
  }
  double z = lo * d->per_bin + (target - d->prefix[lo]) / d->rel[lo];
  double c = floor(z - (double)begin + 1e-9);
  if (c < 0) return 0;
  return c >= (double)max ? max : (size_t)c;
}

/* ---- learning one pass's density ------------------------------------------------------- */

typedef struct pu_line {
  double n, sc, st, scc, sct; /* sums over the PU's blocks: 1, cost, t, cost^2, cost t */
  double fixed, per;          /* t = fixed + per * cost */
} pu_line;

/* The least-squares line of each PU through (cost, t); through the origin when the fixed part
 * comes out negative or the costs do not spread. */
static void fit_lines(pu_line *line, unsigned n_pus) {
  for (unsigned p = 0; p < n_pus; p++) {
    pu_line *l = &line[p];
    double det = l->n * l->scc - l->sc * l->sc;
    l->fixed = 0;
    l->per = l->sc > 0 ? l->st / l->sc : 0;
    if (l->n >= 2 && det > 1e-12 * l->n * l->scc) {
      double b = (l->n * l->sct - l->sc * l->st) / det, a = (l->st - b * l->sc) / l->n;
      if (b > 0 && a >= 0)
        l->fixed = a, l->per = b;
      else if (l->scc > 0 && l->sct > 0)
        l->per = l->sct / l->scc;
    }
  }
}

/* One round: block costs under `rel`, lines per PU, then each slice's implied cost. */
static void learn_round(size_t n_items, unsigned n_pus, const hlb__density_obs *obs, size_t n_obs,
                        double *rel, unsigned m, pu_line *line, double *num, double *den) {
  double n = (double)n_items;
  memset(line, 0, n_pus * sizeof *line);
  for (size_t i = 0; i < n_obs; i++) {
    double c = slice_sum(rel, m, obs[i].begin / n, (obs[i].begin + obs[i].count) / n) * n / m;
    pu_line *l = &line[obs[i].pu];
    l->n += 1, l->sc += c, l->st += obs[i].seconds, l->scc += c * c, l->sct += c * obs[i].seconds;
  }
  fit_lines(line, n_pus);
  memset(num, 0, m * sizeof *num);
  memset(den, 0, m * sizeof *den);
  for (size_t i = 0; i < n_obs; i++) {
    const pu_line *l = &line[obs[i].pu];
    double u0 = obs[i].begin / n, u1 = (obs[i].begin + obs[i].count) / n;
    double c = slice_sum(rel, m, u0, u1) * n / m;
    if (!(l->per > 0) || !(c > 0)) continue;
    double implied = fmax((obs[i].seconds - l->fixed) / l->per, MIN_IMPLIED * c),
           ratio = implied / c;
    /* A block whose time is mostly the PU's fixed cost says little about its items (a tiny
     * block at the end of a run: its implied cost is the noise of the fixed cost): weigh it by
     * the share of its predicted time that its cost explains. */
    double explained = l->per * c / (l->fixed + l->per * c);
    double w = fmax(explained, MIN_WEIGHT);
    /* Every slice the block covers, weighted by its overlap, keeps its shape within the block. */
    for (unsigned k = (unsigned)(u0 * m); k < m && (double)k < u1 * m; k++) {
      double ov = fmin(u1 * m, k + 1.0) - fmax(u0 * m, (double)k);
      if (ov <= 0) continue;
      num[k] += w * ov * rel[k] * ratio;
      den[k] += w * ov;
    }
  }
  for (unsigned k = 0; k < m; k++)
    if (den[k] > 0) rel[k] = num[k] / den[k]; /* a slice no block covered keeps its value */
  normalise(rel, m);
  /* Underestimating a slice makes a block that runs far past the common finish; overestimating
   * one only makes a block smaller. A single PU's odd block can imply a near-zero cost, so no
   * slice is trusted to be cheaper than FLOOR of the average. */
  for (unsigned k = 0; k < m; k++)
    if (rel[k] < FLOOR) rel[k] = FLOOR;
  normalise(rel, m);
}

/* One pass's estimate of a slice rests on the one or two blocks that covered it; replacing the
 * density with it made passes alternate between good and bad (random spikes in the simulator:
 * 1.00, 1.30, 1.04 x the bound on passes 2-4). An underestimated slice costs a block that runs
 * past everyone, an overestimated one only a smaller block: a slice found dearer is believed
 * at once, one found cheaper counts as den slices' worth of blocks against PASS_WEIGHT for
 * what the earlier passes learnt. */
static void blend(double *out, const double *before, const double *den, unsigned m) {
  for (unsigned k = 0; k < m; k++)
    if (out[k] < before[k]) /* cheaper than thought: believed slowly (see above) */
      out[k] = (PASS_WEIGHT * before[k] + den[k] * out[k]) / (PASS_WEIGHT + den[k]);
  normalise(out, m);
}

/* The relative cost of each of m equal slices under `start` (1 without one): where the
 * alternating least squares begins, and what a slice no block covered keeps. */
static void start_values(const hlb__density *start, double *out, unsigned m) {
  for (unsigned k = 0; k < m; k++)
    out[k] = 1.0;
  if (!start || start->n == 0) return;
  for (unsigned k = 0; k < m; k++) {
    double u0 = (double)k / m, u1 = (double)(k + 1) / m;
    /* The density's bins as m-slices: its rel over [u0, u1), averaged. */
    out[k] = slice_sum(start->rel, start->n, u0, u1) * m / start->n;
  }
}

/* A block with items, a known PU, a time and a range inside the run. */
static int obs_usable(const hlb__density_obs *o, size_t n_items, unsigned n_pus) {
  return o->count > 0 && o->pu < n_pus && isfinite(o->seconds) && o->seconds > 0 &&
         o->begin + o->count <= n_items;
}

int hlb__density_learn(size_t n_items, unsigned n_pus, const hlb__density_obs *obs, size_t n_obs,
                       const hlb__density *start, double *out, unsigned m) {
  size_t usable = 0;
  for (size_t i = 0; i < n_obs; i++)
    usable += obs_usable(&obs[i], n_items, n_pus);
  if (usable == 0 || m == 0 || n_items == 0 || n_pus == 0)
    return hlb__error(HLB_EINVAL, "cost density: no block to learn from (%zu given)", n_obs);
  hlb__density_obs *ok = malloc(usable * sizeof *ok);
  pu_line *line = malloc(n_pus * sizeof *line);
  double *num = malloc(m * sizeof *num), *den = malloc(m * sizeof *den);
  if (!ok || !line || !num || !den) {
    free(ok), free(line), free(num), free(den);
    return hlb__error(HLB_ENOMEM, "cost density: out of memory for %zu blocks", n_obs);
  }
  size_t k = 0;
  for (size_t i = 0; i < n_obs; i++)
    if (obs_usable(&obs[i], n_items, n_pus)) ok[k++] = obs[i];
  start_values(start, out, m);
  double *before = start && start->n ? malloc(m * sizeof *before) : NULL;
  if (before) memcpy(before, out, m * sizeof *before);
  for (int r = 0; r < LEARN_ROUNDS; r++)
    learn_round(n_items, n_pus, ok, usable, out, m, line, num, den);
  if (before) blend(out, before, den, m);
  free(before), free(ok), free(line), free(num), free(den);
  return 0;
}

/* ---- scoring a density against a pass's blocks ------------------------------------------ */

/* Weighted sums of one PU's blocks for the line t = a + b * cost with weights 1 / t^2 (so
 * the least squares minimise relative errors: a block of 1 ms mispredicted by 1 ms counts as
 * much as one of 1 s by 1 s). */
typedef struct rel_line {
  size_t n;
  double sw, sc, st, scc, sct; /* sums of w, w c, w t, w c^2, w c t */
  double a, b;
} rel_line;

static void rel_line_add(rel_line *l, double c, double t) {
  double w = 1.0 / (t * t);
  l->n++;
  l->sw += w, l->sc += w * c, l->st += w * t, l->scc += w * c * c, l->sct += w * c * t;
}

/* The weighted least-squares line; through the origin when the costs do not spread. */
static void rel_line_fit(rel_line *l) {
  double det = l->sw * l->scc - l->sc * l->sc;
  if (det > 1e-12 * l->sw * l->scc) {
    l->b = (l->sw * l->sct - l->sc * l->st) / det;
    l->a = (l->st - l->b * l->sc) / l->sw;
  } else {
    l->b = l->scc > 0 ? l->sct / l->scc : 0;
    l->a = 0;
  }
}

double hlb__density_misfit(size_t n_items, unsigned n_pus, const hlb__density_obs *obs,
                           size_t n_obs, const hlb__density *d, size_t *n_scored) {
  rel_line *line = calloc(n_pus ? n_pus : 1, sizeof *line);
  unsigned char *skip = calloc(n_obs ? n_obs : 1, 1), *seen = calloc(n_pus ? n_pus : 1, 1);
  static const hlb__density counts = {0};
  if (!d) d = &counts;
  *n_scored = 0;
  if (!line || !skip || !seen) {
    free(line), free(skip), free(seen);
    return NAN;
  }
  for (size_t i = 0; i < n_obs; i++) {
    /* Each PU's first block is left out: it pays for what a process sets up once (a GPU
     * library's handle and kernels, an OpenCL compiler), which no map of the items explains. */
    int usable = obs_usable(&obs[i], n_items, n_pus);
    skip[i] = !usable || !seen[obs[i].pu];
    if (usable) seen[obs[i].pu] = 1;
    if (!skip[i])
      rel_line_add(&line[obs[i].pu], hlb__density_cost(d, obs[i].begin, obs[i].count),
                   obs[i].seconds);
  }
  for (unsigned p = 0; p < n_pus; p++)
    rel_line_fit(&line[p]);
  double sum = 0, seconds = 0;
  for (size_t i = 0; i < n_obs; i++) {
    const rel_line *l = &line[obs[i].pu];
    /* Two blocks fit any line exactly: a PU scores from its third scored block on. */
    if (skip[i] || l->n < MISFIT_MIN_BLOCKS) continue;
    double pred = l->a + l->b * hlb__density_cost(d, obs[i].begin, obs[i].count);
    double e = fmax(0.0, log(obs[i].seconds / fmax(pred, MISFIT_FLOOR * obs[i].seconds)));
    sum += obs[i].seconds * e * e; /* weighed by the time at stake */
    seconds += obs[i].seconds;
    (*n_scored)++;
  }
  free(line), free(skip), free(seen);
  return *n_scored ? sum / seconds : 0.0;
}
