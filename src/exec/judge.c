/* Comparing a device on the host's cores with the cpu PU (judge.h). */
#include "exec/judge.h"

#include <math.h>
#include <stdlib.h>

/* A finished block of the cpu PU: its items and the core-seconds each took. */
typedef struct cpu_span {
  size_t begin, end;
  double core_s_per_item;
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

/* The cpu PU's finished blocks among the newest window of the log, sorted by begin, with their
 * core-seconds per item less the cost per block. */
static size_t cpu_spans(const hlb_decision *log, size_t n_log, unsigned cpu_b, unsigned cores,
                        cpu_span span[HLB__JUDGE_WINDOW], size_t *from) {
  *from = n_log > HLB__JUDGE_WINDOW ? n_log - HLB__JUDGE_WINDOW : 0;
  double fixed = cpu_fixed_s(log, *from, n_log, cpu_b, cores);
  size_t n = 0;
  for (size_t k = *from; k < n_log; k++) {
    const hlb_decision *e = &log[k];
    double t = block_seconds(e) - fixed;
    if (e->pu == cpu_b && e->outcome == HLB_OUTCOME_DONE && e->count > 0 && t > 0)
      span[n++] = (cpu_span){e->begin, e->begin + e->count, t / cpu_rounds(e->count, cores)};
  }
  qsort(span, n, sizeof *span, by_begin);
  return n;
}

/* The mean core-seconds per item of the cpu blocks nearest [begin, end) on either side (spans
 * sorted and disjoint from the range: the pool hands each item out once). 0: none. */
static double near_cost(const cpu_span *s, size_t n, size_t begin, size_t end) {
  size_t lo = 0, hi = n; /* the first span that begins at or after `end` */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s[mid].begin < end)
      lo = mid + 1;
    else
      hi = mid;
  }
  double sum = 0;
  int k = 0;
  if (lo > 0 && s[lo - 1].end <= begin) sum += s[lo - 1].core_s_per_item, k++;
  if (lo < n) sum += s[lo].core_s_per_item, k++;
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

double hlb__judge_core_ratio(const hlb_decision *log, size_t n_log, unsigned cpu_b, unsigned dev_b,
                             unsigned cpu_cores, unsigned held) {
  cpu_span span[HLB__JUDGE_WINDOW];
  size_t from, n = cpu_spans(log, n_log, cpu_b, cpu_cores, span, &from);
  hlb__line_sums l = {0};
  for (size_t k = from; k < n_log && n; k++) {
    const hlb_decision *e = &log[k];
    double t = block_seconds(e);
    if (e->pu != dev_b || e->outcome != HLB_OUTCOME_DONE || !(t > 0)) continue;
    double x = (double)e->count * near_cost(span, n, e->begin, e->begin + e->count);
    if (x > 0) hlb__line_add(&l, x, t * held);
  }
  return l.n < 2 ? NAN : hlb__line_slope(&l, NULL);
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
