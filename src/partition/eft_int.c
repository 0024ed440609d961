/* Exact integer equal-finish-time solver.
 *
 * Units: with granularity g, W = K g + rem. Every PU takes k_p g items, except that when
 * rem > 0 exactly one PU q takes k_q g + rem. PU p is either idle (0 items) or takes between
 * min_block[p] and max_block[p] items.
 *
 * The optimum T* is one of the finish values r_p + E_p(x) of some allowed x, and feasibility
 * is monotone in T: as T grows each PU's set of allowed counts {0} U [lo_p, hi_p(T)] only
 * grows. But the "0 or >= min" rule makes the test more than sum_p hi_p(T) >= K: a PU whose
 * minimum is larger than what is left must be idle, so the question is whether some set A of
 * PUs has sum_A lo_p <= K <= sum_A hi_p(T) (every count in between is reachable one unit at a
 * time). When the minima of all eligible PUs fit (the usual case) A = all eligible PUs and the
 * test is O(n); otherwise it is a 0/1 knapsack (maximise sum hi under sum lo <= K), solved
 * exactly by branch and bound. That is exponential in the worst case, as it must be: with
 * min = max the problem contains subset-sum.
 *
 * T* is found by a search over T that never needs the list of candidates: a feasible probe
 * yields an assignment whose makespan (a candidate) becomes the upper end; an infeasible probe
 * at T proves every T' below the next candidate above T (the smallest r_p + E_p(x) > T over
 * all PUs) infeasible too, since no PU's allowed set changes in between. The search starts
 * from the continuous optimum, a lower bound, and gallops upwards before it bisects. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/partition.h"
#include "partition/eft_internal.h"

#define NONE SIZE_MAX

typedef struct ipu {
  size_t lo, umax;  /* units k when taking k g items; active only if lo <= umax */
  size_t rlo, rmax; /* units k when taking k g + rem items (rem > 0 only) */
  double ready;
  double guess;  /* last continuous inverse, a warm start for the next */
  size_t hi, hr; /* caps at the last probe (NONE: not eligible) */
  size_t ha, ra; /* caps at the highest probe known infeasible (NONE: none or not eligible) */
  size_t hb, rb; /* caps at the lowest probe known feasible (umax, rmax before any) */
} ipu;

typedef struct item {
  size_t lo, hi;
  unsigned p;
} item;

typedef struct fin_idx {
  double f;
  unsigned p;
} fin_idx;

typedef struct ictx {
  const hlb_curve *c;
  unsigned n;
  size_t W, g, K, rem;
  ipu *pu;
  hlb__eft_pu *q;
  item *items;
  unsigned char *take;   /* knapsack choice, by item */
  unsigned char *active; /* assignment of the last feasible probe, by PU */
  fin_idx *order;        /* scratch for assign() */
  unsigned rem_pu;       /* who takes the remainder (rem > 0) */
} ictx;

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static double finish(const ictx *x, unsigned p, size_t k, int with_rem) {
  double items = (double)k * (double)x->g + (with_rem ? (double)x->rem : 0.0);
  return x->pu[p].ready + hlb_curve_time(&x->c[p], items);
}

/* Caps at probes already made bound the cap at t: a probe below t (cap `a`, NONE when the PU
 * was not eligible or nothing was probed below) gives a k known to fit, a probe above t (cap
 * `b`) a k + 1 known not to. Late in the search the two agree for most PUs and the cap costs
 * no evaluation at all. */
typedef struct cap_hint {
  size_t a, b;
} cap_hint;

/* Gallop from k towards the cap, keeping finish(good) <= t < finish(bad). */
static void gallop(const ictx *x, unsigned p, double t, int with_rem, size_t k, size_t *good,
                   size_t *bad) {
  size_t step = 1;
  if (k <= *good || k >= *bad) return;
  if (finish(x, p, k, with_rem) <= t) {
    *good = k;
    while (*good + step < *bad && finish(x, p, *good + step, with_rem) <= t) {
      *good += step;
      step *= 2;
    }
    if (*good + step < *bad) *bad = *good + step;
  } else {
    *bad = k;
    while (*bad - step > *good && finish(x, p, *bad - step, with_rem) > t) {
      *bad -= step;
      step *= 2;
    }
    if (*bad - step > *good) *good = *bad - step;
  }
}

/* Largest k in [lo, umax] with finish <= t, or NONE. A continuous inverse gives the guess when
 * the range is wide; galloping and bisection on the exact finish values make the answer
 * exact. */
static size_t cap(ictx *x, unsigned p, double t, size_t lo, size_t umax, int with_rem, cap_hint h) {
  if (lo > umax || h.b == NONE) return NONE;
  size_t good = h.a, bad;
  if (good == NONE) {
    if (finish(x, p, lo, with_rem) > t) return NONE;
    good = lo;
  }
  if (h.b < umax) {
    bad = h.b + 1;
  } else {
    if (finish(x, p, umax, with_rem) <= t) return umax;
    bad = umax;
  }
  /* Hints from a curve whose rounded values are not monotone could cross: start over. */
  if (bad <= good && (h.a != NONE || h.b != umax))
    return cap(x, p, t, lo, umax, with_rem, (cap_hint){NONE, umax});
  if (bad <= good) return good;
  if (bad - good > 8) {
    double d, bad_x;
    unsigned long ev = 0;
    double xc = hlb__eft_inverse(&x->c[p], &x->q[p], t - x->pu[p].ready, (double)x->W,
                                 x->pu[p].guess, &d, &bad_x, &ev);
    if (xc >= 0) {
      x->pu[p].guess = xc;
      double kk = floor((xc - (with_rem ? (double)x->rem : 0.0)) / (double)x->g);
      size_t k = kk <= (double)good ? good : kk >= (double)bad ? bad : (size_t)kk;
      gallop(x, p, t, with_rem, k, &good, &bad);
    }
  }
  while (bad - good > 1) {
    size_t mid = good + (bad - good) / 2;
    if (finish(x, p, mid, with_rem) <= t)
      good = mid;
    else
      bad = mid;
  }
  return good;
}

static int by_ratio(const void *a, const void *b) {
  const item *x = a, *y = b;
  /* hi / lo descending, compared without division. */
  double l = (double)x->hi * (double)y->lo, r = (double)y->hi * (double)x->lo;
  return l > r ? -1 : l < r ? 1 : (x->p > y->p) - (x->p < y->p);
}

/* Fractional-knapsack bound on the largest sum of hi from items i.. within capacity a. */
static double frac_bound(const item *it, unsigned m, unsigned i, size_t a) {
  double h = 0.0;
  for (; i < m; i++) {
    if (it[i].lo <= a) {
      a -= it[i].lo;
      h += (double)it[i].hi;
    } else {
      return h + (double)it[i].hi * (double)a / (double)it[i].lo;
    }
  }
  return h;
}

static int knap(const item *it, unsigned m, unsigned i, size_t a, size_t h, size_t b,
                unsigned char *take) {
  if (h >= b) return 1;
  if (i == m || (double)h + frac_bound(it, m, i, a) < (double)b) return 0;
  if (it[i].lo <= a) {
    take[i] = 1;
    if (knap(it, m, i + 1, a - it[i].lo, sat_add(h, it[i].hi), b, take)) return 1;
  }
  take[i] = 0;
  return knap(it, m, i + 1, a, h, b, take);
}

/* Is there a set A of eligible PUs (other than `skip`) with sum lo <= a and sum hi >= b?
 * On success x->active marks A. */
static int choose_set(ictx *x, unsigned skip, size_t a, size_t b) {
  size_t L = 0, H = 0;
  for (unsigned p = 0; p < x->n; p++) {
    int e = p != skip && x->pu[p].hi != NONE;
    x->active[p] = (unsigned char)e;
    if (e) {
      L = sat_add(L, x->pu[p].lo);
      H = sat_add(H, x->pu[p].hi);
    }
  }
  if (H < b) return 0;
  if (L <= a) return 1;
  unsigned m = 0;
  for (unsigned p = 0; p < x->n; p++)
    if (x->active[p] && x->pu[p].lo <= a) x->items[m++] = (item){x->pu[p].lo, x->pu[p].hi, p};
  qsort(x->items, m, sizeof *x->items, by_ratio);
  memset(x->take, 0, m);
  if (!knap(x->items, m, 0, a, 0, b, x->take)) return 0;
  memset(x->active, 0, x->n);
  for (unsigned i = 0; i < m; i++)
    if (x->take[i]) x->active[x->items[i].p] = 1;
  return 1;
}

static int feasible(ictx *x, double t) {
  for (unsigned p = 0; p < x->n; p++) {
    ipu *u = &x->pu[p];
    u->hi = cap(x, p, t, u->lo, u->umax, 0, (cap_hint){u->ha, u->hb});
    u->hr = x->rem ? cap(x, p, t, u->rlo, u->rmax, 1, (cap_hint){u->ra, u->rb}) : NONE;
  }
  if (x->rem == 0) return choose_set(x, x->n, x->K, x->K);
  for (unsigned q = 0; q < x->n; q++) {
    const ipu *u = &x->pu[q];
    if (u->hr == NONE || u->rlo > x->K) continue;
    size_t b = u->hr >= x->K ? 0 : x->K - u->hr;
    if (choose_set(x, q, x->K - u->rlo, b)) {
      x->rem_pu = q;
      return 1;
    }
  }
  return 0;
}

/* Smallest finish value above t over all PUs' allowed counts (+inf when none). */
static double next_candidate(ictx *x, double t) {
  double best = INFINITY;
  for (unsigned p = 0; p < x->n; p++) {
    const ipu *u = &x->pu[p];
    size_t k = u->hi == NONE ? u->lo : u->hi + 1;
    if (k <= u->umax && u->lo <= u->umax) best = fmin(best, finish(x, p, k, 0));
    if (x->rem) {
      k = u->hr == NONE ? u->rlo : u->hr + 1;
      if (k <= u->rmax && u->rlo <= u->rmax) best = fmin(best, finish(x, p, k, 1));
    }
  }
  return best > t ? best : nextafter(t, INFINITY);
}

/* Sort key of assign(): finish times, largest first, then by PU for determinism. */
static int by_finish_desc(const void *a, const void *b) {
  const fin_idx *x = a, *y = b;
  return x->f > y->f ? -1 : x->f < y->f ? 1 : (x->p > y->p) - (x->p < y->p);
}

/* Counts for the last feasible probe: start every chosen PU at its cap and give back the
 * excess from the PUs that finish last, so the makespan is as small as the caps allow
 * cheaply. (At the optimum any give-back is optimal: every chosen PU finishes by T*.) */
static void assign(ictx *x, size_t *units, double *fin) {
  size_t total = 0;
  unsigned m = 0;
  for (unsigned p = 0; p < x->n; p++) {
    int r = x->rem && p == x->rem_pu;
    units[p] = r ? x->pu[p].hr : x->active[p] ? x->pu[p].hi : 0;
    total += units[p];
    if (r || x->active[p]) {
      fin[p] = finish(x, p, units[p], r);
      x->order[m++] = (fin_idx){fin[p], p};
    }
  }
  size_t excess = total - x->K;
  if (excess == 0) return;
  qsort(x->order, m, sizeof *x->order, by_finish_desc);
  for (unsigned i = 0; i < m && excess > 0; i++) {
    unsigned p = x->order[i].p;
    size_t lo = x->rem && p == x->rem_pu ? x->pu[p].rlo : x->pu[p].lo;
    size_t give = units[p] - lo < excess ? units[p] - lo : excess;
    units[p] -= give;
    excess -= give;
  }
}

static double makespan_of(const ictx *x, const size_t *units) {
  double m = 0.0;
  int any = 0;
  for (unsigned p = 0; p < x->n; p++) {
    int r = x->rem && p == x->rem_pu;
    if (units[p] > 0 || r) {
      double f = finish(x, p, units[p], r);
      m = any ? fmax(m, f) : f;
      any = 1;
    }
  }
  return m;
}

static int setup(ictx *x, const hlb_curve *c, const double *ready_s, unsigned n, size_t W,
                 const hlb_eft_int_options *opt) {
  x->c = c;
  x->n = n;
  x->W = W;
  x->g = opt && opt->granularity > 1 ? opt->granularity : 1;
  x->K = W / x->g;
  x->rem = W % x->g;
  for (unsigned p = 0; p < n; p++) {
    ipu *u = &x->pu[p];
    size_t mn = opt && opt->min_block ? opt->min_block[p] : 0;
    size_t mx = opt && opt->max_block && opt->max_block[p] ? opt->max_block[p] : W;
    mx = mx < W ? mx : W;
    u->ready = ready_s ? ready_s[p] : 0.0;
    if (!isfinite(u->ready))
      return hlb__error(HLB_EINVAL, "pu %u: ready time must be finite, got %g", p, u->ready);
    u->lo = mn > x->g ? (mn + x->g - 1) / x->g : 1;
    u->umax = mx / x->g < x->K ? mx / x->g : x->K;
    u->rlo = mn > x->rem ? (mn - x->rem + x->g - 1) / x->g : 0;
    u->rmax = mx >= x->rem ? (mx - x->rem) / x->g : 0;
    u->rmax = u->rmax < x->K ? u->rmax : x->K;
    if (mx < x->rem) u->rlo = 1, u->rmax = 0;
    u->ha = u->ra = NONE;
    u->hb = u->umax;
    u->rb = u->rmax;
    int rc = hlb__eft_prepare(&c[p], p, u->ready, (double)W, &x->q[p]);
    if (rc) return rc;
    rc = hlb_eft_check_curve(&c[p], p, fmin((double)W, (double)x->g), (double)W);
    if (rc) return rc;
  }
  return 0;
}

static int alloc_ctx(ictx *x, unsigned n) {
  x->pu = calloc(n, sizeof *x->pu);
  x->q = calloc(n, sizeof *x->q);
  x->items = calloc(n, sizeof *x->items);
  x->take = calloc(n, 1);
  x->active = calloc(n, 1);
  x->order = calloc(n, sizeof *x->order);
  if (x->pu && x->q && x->items && x->take && x->active && x->order) return 0;
  return hlb__error(HLB_ENOMEM, "hlb_eft_solve_int: out of memory for %u PUs", n);
}

static void free_ctx(ictx *x) {
  free(x->pu);
  free(x->q);
  free(x->items);
  free(x->take);
  free(x->active);
  free(x->order);
}

/* 1 when some curve's time at the smallest block a PU can get (a granule, or the remainder) is
 * below its time at 0+ (e0, filled by setup): a dip that reaches the integer sizes
 * (relaxation). */
static int dips_past_smallest_block(const ictx *x) {
  double smallest = (double)(x->rem > 0 && x->rem < x->g ? x->rem : x->g);
  for (unsigned p = 0; p < x->n; p++)
    if (hlb_curve_time(&x->c[p], smallest) < x->q[p].e0) return 1;
  return 0;
}

/* Continuous optimum (a lower bound: every integer assignment is a continuous one) and the
 * time of one more granule on the slowest margin (the first gallop step). */
static int relaxation(ictx *x, const hlb_curve *c, const double *ready_s, double *lo,
                      double *step) {
  double *xc = malloc(x->n * sizeof *xc), t;
  if (!xc) return hlb__error(HLB_ENOMEM, "hlb_eft_solve_int: out of memory for %u PUs", x->n);
  int rc = hlb_eft_solve(c, ready_s, x->n, (double)x->W, xc, &t);
  double s = 0.0;
  for (unsigned p = 0; !rc && p < x->n; p++) {
    x->pu[p].guess = xc[p];
    if (xc[p] > 0) s = fmax(s, hlb_curve_slope(&c[p], xc[p]) * (double)x->g);
  }
  free(xc);
  if (rc == HLB_EINVAL || (rc == 0 && dips_past_smallest_block(x))) {
    /* The relaxation also looks below one item, where a curve with an x ln x term may dip
     * although it rises on the integer sizes that matter: it refuses a curve that decreases
     * above the time it seeks there, and reads a dip below the time at 0+ as that time, which is
     * no lower bound where the dip reaches past the smallest block. Any lower bound serves the
     * search: every active PU takes at least one item. */
    hlb_clear_error();
    t = INFINITY;
    for (unsigned p = 0; p < x->n; p++)
      t = fmin(t, x->pu[p].ready + hlb_curve_time(&c[p], 1.0));
    s = 0.0;
    rc = 0;
  }
  *lo = t - 1e-9 * fabs(t) - DBL_MIN;
  *step = fmax(s, 1e-12 * fabs(t) + DBL_MIN);
  return rc;
}

/* Later probes lie between the highest infeasible and the lowest feasible probe so far. */
static void remember_caps(ictx *x, int feasible_probe) {
  for (unsigned p = 0; p < x->n; p++) {
    ipu *u = &x->pu[p];
    if (feasible_probe) {
      u->hb = u->hi;
      u->rb = u->hr;
    } else {
      u->ha = u->hi;
      u->ra = u->hr;
    }
  }
}

static int search(ictx *x, double lo, double step, size_t *units, double *fin, double *best) {
  if (!feasible(x, INFINITY))
    return hlb__error(HLB_EINFEASIBLE,
                      "hlb_eft_solve_int: %zu items cannot be placed within the min/max block "
                      "sizes (granularity %zu)",
                      x->W, x->g);
  assign(x, units, fin);
  double hi = makespan_of(x, units);
  int up = 1; /* galloping upwards from the lower bound until the first feasible probe */
  while (lo < hi) {
    double t = up ? lo + step : lo + 0.5 * (hi - lo);
    step *= 2.0;
    if (!(t < hi)) {
      up = 0;
      t = lo + 0.5 * (hi - lo);
    }
    if (!(t < hi) || t < lo) t = lo;
    int ok = feasible(x, t);
    remember_caps(x, ok);
    if (ok) {
      assign(x, units, fin);
      hi = makespan_of(x, units);
      up = 0;
    } else {
      lo = next_candidate(x, t);
    }
  }
  *best = hi;
  return 0;
}

int hlb_eft_solve_int(const hlb_curve *curves, const double *ready_s, unsigned n, size_t items,
                      const hlb_eft_int_options *opt, size_t *x_out, double *makespan_out) {
  if (!curves || !x_out)
    return hlb__error(HLB_EINVAL, "hlb_eft_solve_int: curves and x_out must not be NULL");
  if (n == 0) return hlb__error(HLB_EINVAL, "hlb_eft_solve_int: n must be > 0, got 0");
  memset(x_out, 0, n * sizeof *x_out);
  if (items == 0) {
    if (makespan_out) *makespan_out = 0.0;
    return 0;
  }
  ictx x = {0};
  int rc = alloc_ctx(&x, n);
  size_t *units = NULL;
  double *fin = NULL, lo = 0.0, step = 0.0, best = 0.0;
  if (!rc && (!(units = calloc(n, sizeof *units)) || !(fin = calloc(n, sizeof *fin))))
    rc = hlb__error(HLB_ENOMEM, "hlb_eft_solve_int: out of memory for %u PUs", n);
  if (!rc) rc = setup(&x, curves, ready_s, n, items, opt);
  if (!rc) rc = relaxation(&x, curves, ready_s, &lo, &step);
  if (!rc) rc = search(&x, lo, step, units, fin, &best);
  if (!rc) {
    for (unsigned p = 0; p < n; p++)
      x_out[p] = units[p] * x.g + (x.rem && p == x.rem_pu ? x.rem : 0);
    if (makespan_out) *makespan_out = best;
  }
  free(units);
  free(fin);
  free_ctx(&x);
  return rc;
}
