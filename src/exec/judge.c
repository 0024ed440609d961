/* Comparing a device on the host's cores with the cpu PU (judge.h). */
#include "exec/judge.h"

#include <math.h>
#include <stdlib.h>

#include "hlb/exec.h"

/* A block of the cpu PU: its items and the core-seconds each took; for its block still
 * running (`running`), the core-seconds each has taken so far: a lower bound. */
typedef struct cpu_span {
  size_t begin, end;
  double core_s_per_item;
  int running;
} cpu_span;

static int by_begin(const void *a, const void *b) {
  size_t x = ((const cpu_span *)a)->begin, y = ((const cpu_span *)b)->begin;
  return (x > y) - (x < y);
}

double hlb__line_slope(const hlb__line_sums *l, double *fixed) {
  if (fixed) *fixed = 0;
  if (!(l->sxx > 0)) return 0;
  double det = l->n * l->sxx - l->sx * l->sx;
  if (l->n >= 2 && det > 1e-9 * l->n * l->sxx) {
    double slope = (l->n * l->sxy - l->sx * l->sy) / det, a = (l->sy - slope * l->sx) / l->n;
    if (slope > 0 && a >= 0) {
      if (fixed) *fixed = a;
      return slope;
    }
  }
  return l->sxy / l->sxx;
}

static double block_seconds(const hlb_decision *e) {
  return e->compute_s + e->transfer_s;
}

/* Rounds of items a cpu block of `count` items on `cores` cores runs one after another. The
 * kernel parallelises over the block's items, so a block of fewer items than cores keeps only
 * that many busy, and its time is ceil(count / cores) items' in a row. Counted as
 * count / cores, a one-row mandelbrot block of 0.79 ms on an H100 machine's 14 cores read 11 ms
 * a row per core, and PoCL on one core looked 8x faster per core than the cpu PU. */
static double cpu_rounds(size_t count, unsigned cores) {
  return ceil((double)count / (double)(cores ? cores : 1));
}

/* The cpu PU's cost per block: the intercept of the least-squares line through its blocks'
 * (rounds, seconds), kept between 0 and 0.9 of its shortest block. Left out of its cost per
 * item as the device's is (hlb__judge_core_ratio): with the small blocks of greedy's chunks or
 * of a run's start, a thread team's start-up made the cpu kernel look several times slower per
 * item than it is. */
static double cpu_fixed_s(const hlb_decision *log, size_t from, size_t n_log, unsigned cpu_b,
                          unsigned cores) {
  hlb__line_sums l = {0};
  double t_min = INFINITY, fixed = 0;
  for (size_t k = from; k < n_log; k++) {
    const hlb_decision *e = &log[k];
    double t = block_seconds(e);
    if (e->pu != cpu_b || e->outcome != HLB_OUTCOME_DONE || e->count == 0 || !(t > 0)) continue;
    hlb__line_add(&l, cpu_rounds(e->count, cores), t);
    t_min = fmin(t_min, t);
  }
  hlb__line_slope(&l, &fixed);
  return fmin(fixed, 0.9 * t_min);
}

/* The cpu PU's finished blocks among the newest window of the log, and its pending ones with
 * the time they have run so far, sorted by begin, with their core-seconds per item less the
 * cost per block. */
static size_t cpu_spans(const hlb_decision *log, size_t n_log, unsigned cpu_b, unsigned cores,
                        cpu_span span[HLB__JUDGE_WINDOW], size_t *from) {
  *from = n_log > HLB__JUDGE_WINDOW ? n_log - HLB__JUDGE_WINDOW : 0;
  double fixed = cpu_fixed_s(log, *from, n_log, cpu_b, cores);
  size_t n = 0;
  for (size_t k = *from; k < n_log; k++) {
    const hlb_decision *e = &log[k];
    int running = e->outcome == HLB_OUTCOME_PENDING;
    double t = block_seconds(e) - fixed;
    if (e->pu == cpu_b && (e->outcome == HLB_OUTCOME_DONE || running) && e->count > 0 && t > 0)
      span[n++] =
          (cpu_span){e->begin, e->begin + e->count, t / cpu_rounds(e->count, cores), running};
  }
  qsort(span, n, sizeof *span, by_begin);
  return n;
}

/* The core-seconds per item of the nearest finished cpu block on one side of a range, starting
 * at span `at` and stepping by `step` (-1: left, +1: right) while 0 <= at < n; 0 when none. A
 * running block passed on the way, nearer the range, raises it to what that block has taken so
 * far: on mandelbrot the cpu PU's block next to the set was still running when PoCL's rows
 * beside it were judged, and the finished one beyond it covered cheap rows 100-200 rows away
 * (0.013 against 0.083 ms a row): PoCL read 8x slower per core than a core, and was released. A
 * running block alone says nothing (just started, it has taken almost nothing). */
static double side_cost(const cpu_span *s, size_t n, size_t at, int step) {
  double floor = 0;
  for (; at < n; at += (size_t)step) { /* at wraps past 0 to SIZE_MAX going left */
    if (!s[at].running) return fmax(s[at].core_s_per_item, floor);
    floor = fmax(floor, s[at].core_s_per_item);
  }
  return 0;
}

/* The mean core-seconds per item of the cpu blocks nearest [begin, end) on either side (spans
 * sorted and disjoint from the range: the pool hands each item out once; side_cost). 0: none. */
static double near_cost(const cpu_span *s, size_t n, size_t begin, size_t end) {
  size_t lo = 0, hi = n; /* the first span that begins at or after `end` */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s[mid].begin < end)
      lo = mid + 1;
    else
      hi = mid;
  }
  double sum = 0, c;
  int k = 0;
  if (lo > 0 && s[lo - 1].end <= begin && (c = side_cost(s, n, lo - 1, -1)) > 0) sum += c, k++;
  if (lo < n && (c = side_cost(s, n, lo, +1)) > 0) sum += c, k++;
  return k ? sum / k : 0;
}

double hlb__judge_cpu_rate_near(const hlb_decision *log, size_t n_log, unsigned cpu_b,
                                unsigned dev_b, unsigned cpu_cores, int with_pending) {
  cpu_span span[HLB__JUDGE_WINDOW];
  size_t from, n = cpu_spans(log, n_log, cpu_b, cpu_cores, span, &from);
  double items = 0, core_s = 0;
  for (size_t k = from; k < n_log && n; k++) {
    const hlb_decision *e = &log[k];
    int counted =
        e->outcome == HLB_OUTCOME_DONE || (with_pending && e->outcome == HLB_OUTCOME_PENDING);
    if (e->pu != dev_b || !counted) continue;
    double c = near_cost(span, n, e->begin, e->begin + e->count);
    if (c > 0) items += (double)e->count, core_s += (double)e->count * c;
  }
  return core_s > 0 ? items / core_s : 0;
}

static void swap_values(double *a, double *b) {
  double t = *a;
  *a = *b, *b = t;
}

/* The k-th smallest of v[0..n) (0-based, k < n), by quickselect with a three-way partition;
 * v is reordered so that v[0..k) are no larger. */
static double kth_smallest(double *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = v[lo + (hi - lo) / 2];
    size_t lt = lo, i = lo, gt = hi; /* [lo, lt) < pivot, [lt, i) == pivot, (gt, hi] > pivot */
    while (i <= gt) {
      if (v[i] < pivot)
        swap_values(&v[lt++], &v[i++]);
      else if (v[i] > pivot)
        swap_values(&v[i], &v[gt--]); /* gt >= 1 here: the pivot's value lies below it */
      else
        i++;
    }
    if (k < lt)
      hi = lt - 1;
    else if (k > gt)
      lo = gt + 1;
    else
      return pivot;
  }
  return v[k];
}

/* The median of v[0..n) (n >= 1); v is reordered. */
static double median_of(double *v, size_t n) {
  double upper = kth_smallest(v, n, n / 2);
  if (n % 2) return upper;
  double lower = v[0]; /* the largest of v[0..n/2) */
  for (size_t i = 1; i < n / 2; i++)
    if (v[i] > lower) lower = v[i];
  return 0.5 * (lower + upper);
}

/* A pair's slope and its weight in a weighted median. */
typedef struct weighted_slope {
  double slope, weight;
} weighted_slope;

static int by_slope(const void *a, const void *b) {
  double x = ((const weighted_slope *)a)->slope, y = ((const weighted_slope *)b)->slope;
  return (x > y) - (x < y);
}

/* The weighted median of the m (>= 1) slopes: the smallest whose weight, with the smaller
 * slopes', reaches half the total; v is reordered. */
static double weighted_median(weighted_slope *v, size_t m) {
  qsort(v, m, sizeof *v, by_slope);
  double total = 0, sum = 0;
  for (size_t i = 0; i < m; i++)
    total += v[i].weight;
  for (size_t i = 0; i < m; i++)
    if ((sum += v[i].weight) >= 0.5 * total) return v[i].slope;
  return v[m - 1].slope;
}

/* The Theil-Sen line through the newest HLB__JUDGE_ROBUST_POINTS points: its slope is the
 * median of the slopes between pairs of points whose x differ by more than 10 % (closer pairs
 * give a slope that is all noise), its intercept the median of y - slope x; when that is
 * negative, or no pair is apart, the median of y / x (a line through the origin). A least-
 * squares line follows its largest points, and one block delayed by a lost time slice (PoCL's
 * 2-row mandelbrot block: 4.2 ms where its neighbours took 0.08 ms a row, on a 2-core machine
 * where the cpu PU and PoCL each fill a core) read PoCL 4.2x slower per core than a core, though
 * its other 35 blocks said 0.6-1.0x: it was released in 8 of 10 first runs. The median ignores
 * up to 29 % of such points. With `by_gap` (hlb__judge_gap_slope) each pair's slope weighs as
 * the gap between its x. */
static double theil_sen(const double *x, const double *y, size_t n, int by_gap, int *line) {
  double pair[HLB__JUDGE_ROBUST_POINTS * (HLB__JUDGE_ROBUST_POINTS - 1) / 2];
  weighted_slope weighted[HLB__JUDGE_ROBUST_POINTS * (HLB__JUDGE_ROBUST_POINTS - 1) / 2];
  double rest[HLB__JUDGE_ROBUST_POINTS];
  if (n > HLB__JUDGE_ROBUST_POINTS) {
    x += n - HLB__JUDGE_ROBUST_POINTS, y += n - HLB__JUDGE_ROBUST_POINTS;
    n = HLB__JUDGE_ROBUST_POINTS;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      double gap = fabs(x[j] - x[i]);
      if (!(gap > 0.1 * fmax(x[i], x[j]))) continue;
      double slope = (y[j] - y[i]) / (x[j] - x[i]);
      if (by_gap)
        weighted[m++] = (weighted_slope){slope, gap};
      else
        pair[m++] = slope;
    }
  if (m > 0) {
    double slope = by_gap ? weighted_median(weighted, m) : median_of(pair, m);
    for (size_t i = 0; i < n; i++)
      rest[i] = y[i] - slope * x[i];
    if (slope > 0 && median_of(rest, n) >= 0) {
      *line = 1;
      return slope;
    }
  }
  *line = 0;
  for (size_t i = 0; i < n; i++)
    rest[i] = y[i] / x[i];
  return median_of(rest, n);
}

double hlb__judge_robust_slope(const double *x, const double *y, size_t n, int *line) {
  return theil_sen(x, y, n, 0, line);
}

/* A pair's slope errs by the noise of its two times over the gap between their items: two
 * blocks of 1 and 2 points that took 0.33 and 0.22 ms (PoCL's launches) give -1.1e-4 s a
 * point, two of 16384 and 32768 that took 1.5 and 3.6 ms give 1.3e-7. PoCL's k-means trial cut
 * after blocks of 1, 2, 4, ... 32768 points read 1.6e8 points per second by the median of its
 * 120 pairs, most of them launches against launches, and 9.9e6 (what its largest blocks did)
 * weighted by their gaps; the cpu PU did 9.7e7 on the same cores, and the next pass gave PoCL
 * the cores: 0.28 s for a pass the cpu PU does in 0.013 s. */
double hlb__judge_gap_slope(const double *x, const double *y, size_t n, int *line) {
  return theil_sen(x, y, n, 1, line);
}

double hlb__judge_core_ratio(const hlb_decision *log, size_t n_log, unsigned cpu_b, unsigned dev_b,
                             unsigned cpu_cores, unsigned held, int *kernel_read) {
  cpu_span span[HLB__JUDGE_WINDOW];
  double x[HLB__JUDGE_WINDOW], y[HLB__JUDGE_WINDOW];
  size_t from, n = cpu_spans(log, n_log, cpu_b, cpu_cores, span, &from), m = 0;
  for (size_t k = from; k < n_log && n; k++) {
    const hlb_decision *e = &log[k];
    double t = block_seconds(e);
    if (e->pu != dev_b || e->outcome != HLB_OUTCOME_DONE || !(t > 0)) continue;
    double c = (double)e->count * near_cost(span, n, e->begin, e->begin + e->count);
    if (c > 0) x[m] = c, y[m++] = t * held;
  }
  int line = 0;
  double ratio = m < 2 ? NAN : hlb__judge_robust_slope(x, y, m, &line);
  if (kernel_read) *kernel_read = line;
  return ratio;
}

int hlb__judge_release_on_ratio(double ratio, double busy_s) {
  if (!(ratio > HLB_EXEC_RELEASE_MIN_FACTOR)) return 0;
  return ratio >= HLB_EXEC_MARGINAL_FACTOR || busy_s >= HLB_EXEC_MARGINAL_JUDGE_S;
}

double hlb__judge_best_rate(const hlb_decision *log, size_t n_log, unsigned dev_b,
                            double launch_s) {
  double best = 0;
  for (size_t k = 0; k < n_log; k++) {
    const hlb_decision *e = &log[k];
    if (e->pu != dev_b || e->outcome != HLB_OUTCOME_DONE || e->count == 0) continue;
    double t = block_seconds(e) - launch_s;
    double rate = t > 0 ? (double)e->count / t : INFINITY;
    if (rate > best) best = rate;
  }
  return best;
}

double hlb__judge_trial_rate(const hlb_decision *log, size_t n_log, unsigned dev_b) {
  double x[HLB__JUDGE_WINDOW], y[HLB__JUDGE_WINDOW], items = 0, seconds = 0;
  size_t m = 0;
  for (size_t k = 0; k < n_log && m < HLB__JUDGE_WINDOW; k++) {
    const hlb_decision *e = &log[k];
    double t = block_seconds(e);
    if (e->pu != dev_b || e->outcome != HLB_OUTCOME_DONE || e->count == 0 || !(t > 0)) continue;
    x[m] = (double)e->count, y[m++] = t;
    items += (double)e->count, seconds += t;
  }
  if (m == 0) return 0;
  int line = 0;
  double per_item = m < 2 ? 0 : hlb__judge_gap_slope(x, y, m, &line);
  double overall = items / seconds, kernel = line && per_item > 0 ? 1.0 / per_item : 0;
  return kernel > overall ? kernel : overall;
}

int hlb__judge_release_driver(double best_rate, double core_rate, unsigned held) {
  return core_rate > 0 && best_rate * HLB_EXEC_RELEASE_CLEAR_FACTOR < core_rate * (double)held;
}
