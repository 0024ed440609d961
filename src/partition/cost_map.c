/* Cost maps of cluster files (docs/cluster-format.md, "cost_map"): how the cost of one item
 * varies along the item index, for the simulator. Real codes have such maps (a fractal's rows,
 * sparse rows of a power-law matrix, an adaptive mesh); a simulator whose items all cost the
 * same tunes policies for work that does not exist.
 *
 * Every map is piecewise constant over S equal slices of the items, normalised so the mean
 * weight is 1: a block's cost in "average items" is then what a PU's curve is applied to, and
 * the whole run costs n_items whatever the map, so makespans stay comparable with and without
 * one. Three ways to give the slices:
 *   "segments": [w0, w1, ...]                   the weights themselves (any positive numbers);
 *   "profile": "mandelbrot"                     the iteration counts of the rows of the image
 *                                               the mandelbrot app draws (same view and cap);
 *   "spikes": {"seed", "fraction", "height"}    weight `height` on a random `fraction` of the
 *                                               slices, 1 elsewhere (seeded: every machine
 *                                               draws the same map).
 * "slices" sets S for the last two (default 256). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/json.h"
#include "common/mandel_point.h"
#include "common/rng.h"
#include "partition/cost_map.h"

#define DEFAULT_SLICES 256
#define MAX_SLICES 1000000
/* The mandelbrot app's view and iteration cap (apps/mandelbrot.c): rows y of an n x n image
 * at cy = -1.5 + 3 y / n, columns at cx = -2 + 3 x / n, 256 iterations. */
#define MANDEL_ITERS 256
#define MANDEL_COLUMNS 128

/* Slice k of S is the row at (k + 0.5) / S of the image, sampled at MANDEL_COLUMNS column
 * centres; each pixel costs its iterations plus one (its own cost when it escapes at once).
 * hlb__mandel_point takes integer pixels of an n x n image: in one of n = S * MANDEL_COLUMNS,
 * row k * MANDEL_COLUMNS + MANDEL_COLUMNS / 2 and column x * S + S / 2 are those centres. */
static void mandel_profile(double *w, unsigned s) {
  size_t n = (size_t)s * MANDEL_COLUMNS;
  for (unsigned k = 0; k < s; k++) {
    size_t row = (size_t)k * MANDEL_COLUMNS + MANDEL_COLUMNS / 2;
    double sum = 0;
    for (unsigned x = 0; x < MANDEL_COLUMNS; x++)
      sum += 1.0 + hlb__mandel_point(n, MANDEL_ITERS, row, (size_t)x * s + s / 2);
    w[k] = sum;
  }
}

static void spike_profile(double *w, unsigned s, uint64_t seed, double fraction, double height) {
  hlb__rng r;
  hlb__rng_seed(&r, seed);
  for (unsigned k = 0; k < s; k++)
    w[k] = hlb__rng_uniform(&r) < fraction ? height : 1.0;
}

/* Mean 1, and the prefix sums that make a range's cost O(1). */
static int finish(const hlb__jctx *c, hlb_cluster *cl, double *w, unsigned s) {
  double sum = 0;
  for (unsigned k = 0; k < s; k++)
    sum += w[k];
  double *prefix = malloc((s + 1) * sizeof *prefix);
  if (!prefix || !(sum > 0) || !isfinite(sum)) {
    free(prefix);
    free(w);
    if (!prefix) return hlb__error(HLB_ENOMEM, "%s: cost_map: out of memory", c->file);
    return hlb__error(HLB_EPARSE, "%s: cost_map: the weights must have a positive finite sum",
                      c->file);
  }
  prefix[0] = 0;
  for (unsigned k = 0; k < s; k++) {
    w[k] *= (double)s / sum;
    prefix[k + 1] = prefix[k] + w[k];
  }
  cl->cost_slices = s;
  cl->cost_weight = w;
  cl->cost_prefix = prefix;
  return 0;
}

static int read_segments(const hlb__jctx *c, const cJSON *arr, hlb_cluster *cl) {
  unsigned s = (unsigned)cJSON_GetArraySize(arr);
  if (s == 0 || s > MAX_SLICES)
    return hlb__error(HLB_EPARSE, "%s: cost_map.segments: must hold 1 to %d weights, got %u",
                      c->file, MAX_SLICES, s);
  double *w = malloc(s * sizeof *w);
  if (!w) return hlb__error(HLB_ENOMEM, "%s: cost_map: out of memory", c->file);
  unsigned k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble)) {
      free(w);
      return hlb__error(HLB_EPARSE, "%s: cost_map.segments[%u]: must be a number > 0, got %s",
                        c->file, k, cJSON_IsNumber(e) ? "a number <= 0" : "something else");
    }
    w[k++] = e->valuedouble;
  }
  return finish(c, cl, w, s);
}

static int read_spikes(const hlb__jctx *c, const cJSON *obj, uint64_t *seed, double *fraction,
                       double *height) {
  static const char *const known[] = {"seed", "fraction", "height", "comment", NULL};
  size_t sd = 0;
  int rc = hlb__json_only_keys(c, obj, "cost_map.spikes", known);
  if (!rc) rc = hlb__json_size(c, obj, "cost_map.spikes", "seed", 0, 1, SIZE_MAX, &sd);
  if (!rc) rc = hlb__json_number(c, obj, "cost_map.spikes", "fraction", 1, 0, 0, 1, fraction);
  if (!rc) rc = hlb__json_number(c, obj, "cost_map.spikes", "height", 1, 0, DBL_MIN, 1e9, height);
  *seed = sd;
  return rc;
}

/* Exactly one of segments, profile and spikes. */
static int count_kinds(const hlb__jctx *c, const cJSON *map) {
  int n = !!cJSON_GetObjectItemCaseSensitive(map, "segments") +
          !!cJSON_GetObjectItemCaseSensitive(map, "profile") +
          !!cJSON_GetObjectItemCaseSensitive(map, "spikes");
  if (n != 1)
    return hlb__error(HLB_EPARSE,
                      "%s: cost_map: needs exactly one of \"segments\", \"profile\" and "
                      "\"spikes\", got %d",
                      c->file, n);
  return 0;
}

int hlb__cost_map_read(const hlb__jctx *c, const cJSON *root, hlb_cluster *cl) {
  static const char *const known[] = {"segments", "profile", "spikes", "slices",
                                      "declared", "comment", NULL};
  const cJSON *map = NULL, *arr = NULL, *spikes = NULL;
  int rc = hlb__json_object(c, root, "", "cost_map", 0, &map);
  if (rc || !map) return rc;
  if ((rc = hlb__json_only_keys(c, map, "cost_map", known)) || (rc = count_kinds(c, map)))
    return rc;
  if ((rc = hlb__json_bool(c, map, "cost_map", "declared", 0, 0, &cl->cost_declared))) return rc;
  if ((rc = hlb__json_array(c, map, "cost_map", "segments", 0, &arr))) return rc;
  if (arr) {
    if (cJSON_GetObjectItemCaseSensitive(map, "slices"))
      return hlb__error(HLB_EPARSE, "%s: cost_map.slices: not with segments (one slice each)",
                        c->file);
    return read_segments(c, arr, cl);
  }
  size_t s = 0;
  if ((rc = hlb__json_size(c, map, "cost_map", "slices", 0, DEFAULT_SLICES, MAX_SLICES, &s)))
    return rc;
  if (s == 0) return hlb__error(HLB_EPARSE, "%s: cost_map.slices: must be >= 1, got 0", c->file);
  uint64_t seed = 0;
  double fraction = 0, height = 0;
  const char *profile = NULL;
  if ((rc = hlb__json_object(c, map, "cost_map", "spikes", 0, &spikes))) return rc;
  if (spikes && (rc = read_spikes(c, spikes, &seed, &fraction, &height))) return rc;
  if (!spikes && (rc = hlb__json_string(c, map, "cost_map", "profile", 1, NULL, &profile)))
    return rc;
  if (profile && strcmp(profile, "mandelbrot"))
    return hlb__error(HLB_EPARSE,
                      "%s: cost_map.profile: the profile known is \"mandelbrot\", got \"%s\"",
                      c->file, profile);
  double *w = malloc(s * sizeof *w);
  if (!w) return hlb__error(HLB_ENOMEM, "%s: cost_map: out of memory", c->file);
  if (spikes)
    spike_profile(w, (unsigned)s, seed, fraction, height);
  else
    mandel_profile(w, (unsigned)s);
  return finish(c, cl, w, (unsigned)s);
}

/* Cost of the items [0, u * n) in slice units (u in [0, 1]). */
static double cumulative(const hlb_cluster *c, double u) {
  double at = u * (double)c->cost_slices;
  if (at <= 0) return 0;
  if (at >= c->cost_slices) return c->cost_prefix[c->cost_slices];
  unsigned k = (unsigned)at;
  return c->cost_prefix[k] + (at - k) * c->cost_weight[k];
}

double hlb_cluster_range_cost(const hlb_cluster *c, size_t n_items, size_t begin, size_t count) {
  if (!c || c->cost_slices == 0 || n_items == 0) return (double)count;
  double n = (double)n_items, s = (double)c->cost_slices;
  double a = cumulative(c, (double)begin / n), z = cumulative(c, (double)(begin + count) / n);
  return (z - a) * n / s;
}

void hlb__cost_map_extremes(const hlb_cluster *c, double *lo, double *hi) {
  *lo = *hi = 1.0;
  for (unsigned k = 0; k < c->cost_slices; k++) {
    if (c->cost_weight[k] < *lo) *lo = c->cost_weight[k];
    if (c->cost_weight[k] > *hi) *hi = c->cost_weight[k];
  }
}
