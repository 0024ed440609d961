/* The exact solver of the two-level assignment: bisection on the makespan T over the doubles.
 *
 * Why it is optimal. Let M(x) be the makespan of an integer assignment x as hlb evaluates it
 * (plan.c: node base + max of PU times, all in doubles), and P(T) = "some assignment within
 * the caps has M(x) <= T". P is monotone in T, so the smallest double T* with P(T*) true is
 * found by bisection on the ordered bit patterns of the non-negative doubles (at most 63
 * steps). T* = min over x of M(x): M(x_opt) is itself a double for which P holds, and any T
 * with P(T) has an x with M(x) <= T. So the result is the exact integer optimum of the model,
 * not an approximation, with no tolerance anywhere.
 *
 * Deciding P(T). A node i with share D > 0 fits in T iff its PUs can split D so that
 * base_i(D) + f_j(d_j) <= T for every PU with d_j > 0. The PU times f_j are non-decreasing
 * in d (the cluster file guarantees it), so PU j can take any d in 1..c_j(D, T), where c_j is
 * the largest such d within its cap, and the node fits iff sum_j c_j(D, T) >= D. base_i(D)
 * grows with D, so c_j shrinks as D grows and sum_j c_j(D, T) - D strictly decreases: the
 * shares that fit form a prefix 0..D_i(T), found by binary search on D. Then P(T) iff
 * sum_i D_i(T) >= items (give any node less than its D_i(T) and it still fits).
 *
 * Cost. c_j is O(1) for linear curves (a closed-form guess checked against the exact
 * comparison, which is the one that counts) and a binary search otherwise. D_i(T) is monotone
 * in T, so the bisection keeps per-node brackets D_i(T_lo) <= D_i(T) <= D_i(T_hi) and each
 * step searches only inside them: the steps far from T* cost O(PUs), those near it O(PUs *
 * log(bracket)). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "partition/plan_internal.h"

typedef struct exact {
  const hlb__plan_terms *t;
  size_t *dlo; /* per node: a share known to fit at the current lower end of T */
  size_t *dhi; /* per node: no larger share fits at the current upper end of T */
  size_t *cur; /* per node: D_i(T) at the T last tested */
} exact;

static size_t min_size(size_t a, size_t b) {
  return a < b ? a : b;
}

/* The one comparison that decides everything: the same expression plan.c reports. */
static int pu_ok(const hlb__plan_terms *t, unsigned j, double base, size_t d, double T) {
  return base + hlb__plan_pu_time(t, j, d) <= T;
}

/* First guess for a linear PU: solve base + p_fixed + c0 + d * slope = T for d. Only a guess;
 * pu_fit checks it with pu_ok. Returns a value in [lo, hi - 1]. */
static size_t linear_guess(const hlb__plan_terms *t, unsigned j, double base, double T, size_t lo,
                           size_t hi) {
  const double *k = t->c->pus[j].poly;
  double slope = t->p_per[j] + k[1];
  double g = slope > 0 ? floor((T - base - t->p_fixed[j] - k[0]) / slope) : (double)(hi - 1);
  if (!(g >= (double)lo)) return lo;
  if (g >= (double)(hi - 1)) return hi - 1;
  return (size_t)g;
}

/* Largest d in [0, min(cap_j, limit)] with pu_ok (d = 0 always fits: an idle PU costs nothing). */
static size_t pu_fit(const hlb__plan_terms *t, unsigned j, double base, double T, size_t limit) {
  size_t cap = min_size(t->pu_cap[j], limit);
  if (cap == 0 || !pu_ok(t, j, base, 1, T)) return 0;
  if (pu_ok(t, j, base, cap, T)) return cap;
  size_t lo = 1, hi = cap; /* invariant: lo fits, hi does not */
  if (t->pu_linear[j] && hi - lo > 1) {
    size_t g = linear_guess(t, j, base, T, lo, hi);
    if (pu_ok(t, j, base, g, T)) {
      lo = g;
      if (!pu_ok(t, j, base, g + 1, T)) return g;
      lo = g + 1;
    } else {
      hi = g;
    }
  }
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (pu_ok(t, j, base, mid, T))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* h(D) = (items node i's PUs can take by T when its share is D) - D. The node finishes a
 * share of D by T iff h(D) >= 0 (D = 0 always fits: an idle node costs nothing). h strictly
 * decreases in D and is close to linear (a sum of floors of linear functions for linear
 * curves), which node_fit exploits. */
static double node_slack(const hlb__plan_terms *t, unsigned i, size_t D, double T) {
  const hlb_cluster_node *n = &t->c->nodes[i];
  double base = hlb__plan_node_base(t, i, D);
  if (!(base <= T)) return -(double)D - 1;
  double sum = 0;
  for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++)
    sum += (double)pu_fit(t, j, base, T, t->pu_cap[j]);
  return sum - (double)D;
}

/* One probe of the root search: p fits (moves lo up) or not (moves hi down); returns 1 when
 * it fit. */
static int probe(const hlb__plan_terms *t, unsigned i, double T, size_t p, size_t *lo, double *h_lo,
                 size_t *hi, double *h_hi) {
  double h = p == 0 ? 0.0 : node_slack(t, i, p, T);
  if (p == 0 || h >= 0) {
    *lo = p, *h_lo = h;
    return 1;
  }
  *hi = p, *h_hi = h;
  return 0;
}

/* D_i(T): the largest share that fits, searched inside the bracket [dlo, dhi] that earlier
 * bisection steps established. Each round interpolates the root of h linearly between the
 * bracket ends (accurate to about one item per PU) and then gallops away from the guess until
 * the root is bracketed again, so a round costs O(log(PUs)) probes instead of O(log(items)). */
static size_t node_fit(const exact *e, unsigned i, double T) {
  const hlb__plan_terms *t = e->t;
  size_t lo = e->dlo[i], hi = e->dhi[i];
  double h_lo, h_hi;
  if (lo == hi || probe(t, i, T, hi, &lo, &h_lo, &hi, &h_hi))
    return lo; /* lo == hi, or the whole bracket fits (probe moved lo to hi) */
  h_lo = node_slack(t, i, lo, T);
  h_lo = h_lo < 0 ? 0 : h_lo; /* only at lo = 0, which fits by definition */
  while (hi - lo > 1) {       /* invariant: lo fits (h_lo >= 0), hi does not (h_hi < 0) */
    double frac = h_lo / (h_lo - h_hi);
    size_t g = lo + (size_t)(frac * (double)(hi - lo));
    g = g <= lo ? lo + 1 : g >= hi ? hi - 1 : g;
    int up = probe(t, i, T, g, &lo, &h_lo, &hi, &h_hi);
    for (size_t step = 1; hi - lo > 1; step *= 2) { /* gallop from g towards the root */
      if (up ? lo + step >= hi : hi - lo <= step) break;
      if (probe(t, i, T, up ? lo + step : hi - step, &lo, &h_lo, &hi, &h_hi) != up) break;
    }
  }
  return lo;
}

/* P(T); on return e->cur[0 .. *tested) hold D_i(T) for the nodes examined (it stops early
 * once the items are covered). */
static int feasible(exact *e, double T, unsigned *tested) {
  const hlb__plan_terms *t = e->t;
  size_t total = 0;
  unsigned i;
  for (i = 0; i < t->c->n_nodes && total < t->items; i++) {
    e->cur[i] = node_fit(e, i, T);
    total += min_size(e->cur[i], t->items - total);
  }
  *tested = i;
  return total >= t->items;
}

static uint64_t bits_of(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static double double_of(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* Smallest double T with P(T); non-negative doubles order like their bit patterns. */
static double bisect(exact *e) {
  unsigned tested;
  if (feasible(e, 0.0, &tested)) return 0.0;
  for (unsigned i = 0; i < tested; i++)
    e->dlo[i] = e->cur[i];
  uint64_t lo = bits_of(0.0), hi = bits_of(INFINITY); /* P(lo) false, P(hi) true */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    int ok = feasible(e, double_of(mid), &tested);
    for (unsigned i = 0; i < tested; i++)
      *(ok ? &e->dhi[i] : &e->dlo[i]) = e->cur[i];
    *(ok ? &hi : &lo) = mid;
  }
  return double_of(hi);
}

/* The assignment behind P(T*): nodes in order take up to D_i(T*), each splits its share
 * greedily over its PUs' c_j. */
static int build(exact *e, double T, size_t *pu_items) {
  const hlb__plan_terms *t = e->t;
  const hlb_cluster *c = t->c;
  size_t rem = t->items;
  for (unsigned i = 0; i < c->n_nodes && rem > 0; i++) {
    size_t D = min_size(node_fit(e, i, T), rem), s = 0;
    if (D == 0) continue;
    double base = hlb__plan_node_base(t, i, D);
    const hlb_cluster_node *n = &c->nodes[i];
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus && s < D; j++) {
      pu_items[j] = pu_fit(t, j, base, T, D - s);
      s += pu_items[j];
    }
    if (s != D)
      return hlb__error(HLB_ENUMERIC,
                        "plan exact: node '%s' fits %zu items at T = %.17g but "
                        "only %zu could be placed",
                        n->name, D, T, s);
    rem -= D;
  }
  if (rem != 0)
    return hlb__error(HLB_ENUMERIC, "plan exact: %zu items left unplaced at T = %.17g", rem, T);
  return 0;
}

int hlb__plan_exact(const hlb__plan_terms *t, hlb_plan_result *r) {
  unsigned nn = t->c->n_nodes;
  exact e = {t, calloc(nn, sizeof(size_t)), calloc(nn, sizeof(size_t)), calloc(nn, sizeof(size_t))};
  int rc = 0;
  if (!e.dlo || !e.dhi || !e.cur) {
    rc = hlb__error(HLB_ENOMEM, "plan exact: out of memory for %u nodes", nn);
  } else if (t->items > 0) {
    for (unsigned i = 0; i < nn; i++)
      e.dhi[i] = t->node_cap[i];
    double T = bisect(&e);
    if (isinf(T)) /* only when times of ~1e308 s overflow; no finite makespan to report */
      rc = hlb__error(HLB_ERANGE, "plan exact: every assignment's makespan overflows a double");
    else
      rc = build(&e, T, r->pu_items);
  }
  r->optimal = rc == 0;
  free(e.dlo);
  free(e.dhi);
  free(e.cur);
  return rc;
}
