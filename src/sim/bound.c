/* The reference makespan of a simulation (hlb_sim_lower_bound; docs/simulator.md).
 *
 * A true lower bound, whatever the curves. Write c_p(y) = F_p(y) + G_p(y) for the time of one
 * block of y items on PU p (its compute curve plus the uncontended transfer of the block), and
 *
 *     m_p(x) = min over real y in [1, x] of c_p(y) / y     (the best time per item of a block
 *                                                          that fits in x items; c_p(1) for x < 1)
 *     L_p(x) = x * m_p(x).
 *
 * Claim: a PU that processes x items, in any number of blocks of any sizes, is busy at least
 * L_p(x). Proof: its blocks y_1..y_k are whole items, 1 <= y_i <= x, sum y_i = x, and each takes
 * c_p(y_i) at least (noise-free; a shared link or a slowdown only adds), so the busy time is
 * at least sum c_p(y_i) = sum y_i * c_p(y_i) / y_i >= sum y_i * m_p(x) = x m_p(x).
 * L_p is nondecreasing (for x < x', if m_p(x') < m_p(x) the minimum is reached at some
 * y in (x, x'], and x' m_p(x') = x' c_p(y) / y >= c_p(y) >= c_p(x) >= x m_p(x), c_p being
 * nondecreasing as the cluster loader checks). A PU's max_items caps each of its blocks (as in
 * the simulator, not its total): the minimum then runs over y <= Y as well, and L_p stays
 * nondecreasing (past Y it is x m_p(Y)). So in any run that ends at T, PU p did at most
 * X_p(T) = sup {x : L_p(x) <= T} items, and sum X_p(T) >= N. The bound is the smallest such T,
 * found by bisection over T, each X_p(T) by bisection over x.
 *
 * Whole blocks (the F*(x) = min over k of k F(x / k)). L_p lets a PU's share be cut
 * into a fractional number of best blocks; a run cuts it into a whole number k. Where c_p is
 * convex (no negative quadratic, cubic or x ln x term) and nondecreasing from the smallest
 * block ymin on, write c~(y) = c_p(max(y, ymin)): convex and nondecreasing on (0, inf), equal
 * to c_p at every real block size. Claim: a PU that processes x items in blocks of at most Y
 * items is busy at least
 *
 *     W_p(x) = min over whole k >= max(1, x / Y) of k c~(x / k).
 *
 * Proof: its k blocks y_1..y_k (k >= x / Y, as none holds more than Y) take at least
 * sum c_p(y_i) = sum c~(y_i) >= k c~(x / k) by Jensen's inequality (c~ convex), which is
 * >= W_p(x). W_p is nondecreasing: each k c~(x / k) is (c~ nondecreasing), and a larger x only
 * removes small k from the set. So max(L_p, W_p) is a bound and nondecreasing, and the
 * bisections below hold for it. k c~(x / k) is the perspective of a convex function, convex
 * in k; its real minimum is at k = x / y_s, y_s the point where c~(y) / y is least, so the
 * whole minimum is at the whole k next to it (we try two either side). The difference from L_p
 * is largest for PUs that do few blocks: 1.5 best blocks' worth of a PU with c = f + q y^2 costs
 * 4 % more than L_p says.
 *
 * For subadditive curves (fixed cost >= 0 plus linear, every paper preset) without a largest
 * block c_p(y) / y falls with y, m_p(x) = c_p(x) / x, L_p = W_p = c_p, and the bound is the
 * one-block-per-PU equal-finish-time split it always was; with one, W_p = ceil(x / Y) blocks. With
 * quadratic, cubic or x ln x terms, cutting a share into blocks near the best size per item is
 * cheaper than one block, and the bound says so.
 *
 * m_p needs the minima of c_p(y) / y = f / y + l + q y + r y^2 + s ln y (f: fixed cost per
 * block incl. latencies, l: per-item cost incl. bytes, q, r, s: quadratic, cubic, x ln x); its
 * derivative times y^2 is the cubic g(y) = 2 r y^3 + q y^2 + s y - f, whose real roots (at most
 * three) are found exactly enough by bisection between the cubic's own turning points. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/partition.h"
#include "hlb/sim.h"
#include "partition/cost_map.h"

static double per_byte(const hlb_link *l) {
  return isinf(l->bandwidth_Bps) ? 0.0 : 1.0 / l->bandwidth_Bps;
}

void hlb_sim_pu_curve(const hlb_cluster *c, unsigned p, hlb_curve *out) {
  const hlb_cluster_pu *cp = &c->pus[p];
  const hlb_link *ln = &c->nodes[cp->node].link, *lp = &cp->link;
  *out = cp->time;
  /* One block in and out over both links, uncontended: bytes at each link's bandwidth and
   * each latency once per direction. */
  out->transfer_per_item = (c->item_in_bytes + c->item_out_bytes) * (per_byte(ln) + per_byte(lp));
  out->transfer_fixed = 2.0 * (ln->latency_s + lp->latency_s);
}

/* One PU's block time c(y) = f + l y + q y^2 + r y^3 + s y ln y, its largest block, and the
 * stationary points of c(y) / y on [ymin, inf). */
typedef struct pu_bound {
  double f, l, q, r, s;
  int off;          /* left out of the run (a driver-core PU released from the start) */
  double block_cap; /* the largest block, in the unit x counts (INFINITY: none) */
  double ymin; /* the least a block can cost: one item (1), or the cheapest item of a cost map */
  double stat[3];
  unsigned n_stat;
  int whole_blocks; /* W_p applies (whole_blocks_of) */
  double y_best;    /* where c(y) / y is least on [ymin, inf) (INFINITY: it falls all the way) */
  double tau;       /* with the transfer apart (item_bound): the transfer per item, else 0 */
} pu_bound;

static double block_time(const pu_bound *b, double y) {
  /* Never below 0, as in the simulator (an x ln x term is negative below one item). */
  return fmax(0.0, b->f + y * (b->l + y * (b->q + y * b->r)) + (y > 0 ? b->s * y * log(y) : 0.0));
}

static double cubic(const pu_bound *b, double y) {
  return ((2.0 * b->r * y + b->q) * y + b->s) * y - b->f;
}

/* A root of the cubic in [lo, hi], where it changes sign (or lo when it does not). */
static double root_between(const pu_bound *b, double lo, double hi) {
  double glo = cubic(b, lo), ghi = cubic(b, hi);
  if (glo == 0) return lo;
  if ((glo < 0) == (ghi < 0)) return NAN;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * fmax(1.0, fabs(hi)); i++) {
    double mid = 0.5 * (lo + hi), gm = cubic(b, mid);
    if ((gm < 0) == (glo < 0))
      lo = mid, glo = gm;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

/* The cubic's real roots >= 1: between its turning points (roots of 6 r y^2 + 2 q y + s) it is
 * monotone, so each stretch holds at most one root. */
static void find_stationary(pu_bound *b, double y_max) {
  double y0 = b->ymin, cut[4] = {y0}, a = 6.0 * b->r, bq = 2.0 * b->q, cs = b->s;
  unsigned n = 1;
  if (a != 0) {
    double disc = bq * bq - 4.0 * a * cs;
    if (disc >= 0) {
      double t1 = (-bq - sqrt(disc)) / (2.0 * a), t2 = (-bq + sqrt(disc)) / (2.0 * a);
      if (t1 > t2) {
        double t = t1;
        t1 = t2, t2 = t;
      }
      if (t1 > y0 && t1 < y_max) cut[n++] = t1;
      if (t2 > y0 && t2 < y_max) cut[n++] = t2;
    }
  } else if (bq != 0 && -cs / bq > y0 && -cs / bq < y_max) {
    cut[n++] = -cs / bq;
  }
  cut[n++] = y_max;
  b->n_stat = 0;
  for (unsigned i = 0; i + 1 < n && b->n_stat < 3; i++) {
    double y = root_between(b, cut[i], cut[i + 1]);
    if (isfinite(y)) b->stat[b->n_stat++] = y;
  }
}

/* L(x) = x * (least c(y) / y over y in [ymin, min(x, Y)]); x c(ymin) / ymin below the smallest
 * block. */
static double least_busy_fractional(const pu_bound *b, double x) {
  if (x <= 0) return 0;
  double y0 = b->ymin, top = fmin(x, b->block_cap);
  if (top <= y0) return x * block_time(b, y0) / y0;
  double best = fmin(block_time(b, y0) / y0, block_time(b, top) / top);
  for (unsigned i = 0; i < b->n_stat; i++)
    if (b->stat[i] <= top) best = fmin(best, block_time(b, b->stat[i]) / b->stat[i]);
  return x * best;
}

/* k c~(x / k), c~(y) = c(max(y, ymin)). */
static double k_blocks(const pu_bound *b, double x, double k) {
  return k * block_time(b, fmax(x / k, b->ymin));
}

/* W(x) = least k c~(x / k) over whole k >= max(1, x / Y): convex in k, so the least is at the
 * whole k next to the real best x / y_best (two tried each side, against rounding), or at the
 * smallest k allowed when that lies below it. Each k tried is allowed, so trying more only
 * keeps W a bound. */
static double least_busy_whole(const pu_bound *b, double x) {
  double k_lo = fmax(1.0, ceil(x / b->block_cap * (1 - 1e-12)));
  if (!isfinite(b->y_best)) return k_blocks(b, x, k_lo);
  double k_first = fmax(k_lo, floor(x / b->y_best) - 1), best = INFINITY;
  for (double k = k_first; k <= k_first + 3; k++)
    best = fmin(best, k_blocks(b, x, k));
  return best;
}

static double least_busy(const pu_bound *b, double x) {
  double fractional = least_busy_fractional(b, x);
  return b->whole_blocks && x > 0 ? fmax(fractional, least_busy_whole(b, x)) : fractional;
}

/* Brackets the most the PU can process within T, at most cap: least_busy(lo) <= T, and hi is cap
 * or least_busy(hi) > T, hi - lo within `tol` of hi. L is nondecreasing, so bisect. */
static void bracket_most(const pu_bound *b, double T, double cap, double tol, double *lo,
                         double *hi) {
  *lo = 0, *hi = cap;
  if (least_busy(b, cap) <= T) {
    *lo = cap;
    return;
  }
  for (int i = 0; i < 100 && *hi - *lo > tol * fmax(1.0, *hi); i++) {
    double mid = 0.5 * (*lo + *hi);
    if (least_busy(b, mid) <= T)
      *lo = mid;
    else
      *hi = mid;
  }
}

/* The most items the PU can have done by T, rounded down. */
static double most_items(const pu_bound *b, double T, double n_items) {
  if (b->off) return 0;
  double lo, hi;
  bracket_most(b, T, n_items, 1e-9, &lo, &hi);
  return lo;
}

static double items_by(const pu_bound *pb, unsigned n, double T, double n_items) {
  double sum = 0;
  for (unsigned p = 0; p < n; p++)
    sum += most_items(&pb[p], T, n_items);
  return sum;
}

/* Whether W_p applies (c convex: no negative superlinear term; nondecreasing from ymin: its
 * slope there >= 0; superlinear or with a largest block: an affine curve without one has
 * c(y) / y falling, one block is best and W_p = L_p), and y_best. With c
 * convex, y c'(y) - c(y) is nondecreasing (its slope is y c''(y)), so c(y) / y has at most one
 * stationary point on [ymin, inf), a minimum. */
static void whole_blocks_of(pu_bound *b) {
  double y0 = b->ymin;
  double slope0 = b->l + y0 * (2 * b->q + 3 * b->r * y0) + b->s * (log(y0) + 1);
  int superlinear = b->q > 0 || b->r > 0 || b->s > 0;
  b->whole_blocks =
      b->q >= 0 && b->r >= 0 && b->s >= 0 && slope0 >= 0 && (superlinear || isfinite(b->block_cap));
  b->y_best = INFINITY;
  if (!b->whole_blocks) return;
  if (cubic(b, y0) >= 0) /* c(y) / y rises from the smallest block on */
    b->y_best = y0;
  for (unsigned i = 0; i < b->n_stat; i++)
    if (b->y_best == INFINITY ||
        block_time(b, b->stat[i]) / b->stat[i] < block_time(b, b->y_best) / b->y_best)
      b->y_best = b->stat[i];
}

/* `slow` multiplies the compute curve (a cpu PU on fewer cores than its curve's); `off` leaves
 * the PU out (a driver-core PU released from the start). `transfer_apart`: the transfer per item
 * is kept out of the curve, in tau, for item_bound; else it is in l as below. */
static void describe_pu(const hlb_cluster *c, unsigned p, double n_items, double slow, int off,
                        int transfer_apart, pu_bound *b) {
  hlb_curve g;
  hlb_sim_pu_curve(c, p, &g);
  const double *poly = c->pus[p].poly; /* const, linear, quadratic, cubic, x ln x */
  /* With a cost map, x counts average items (cost) and a block of cost y holds at least
   * y / w_max items, each crossing the links: the transfer per unit of cost is at least the
   * per-item one over w_max, and a block costs at least w_min. Without one both are 1. */
  double w_min, w_max;
  hlb__cost_map_extremes(c, &w_min, &w_max);
  double tau = g.transfer_per_item;
  *b = (pu_bound){.f = slow * poly[0] + g.transfer_fixed,
                  .l = slow * poly[1] + (transfer_apart ? 0.0 : tau / w_max),
                  .tau = transfer_apart ? tau : 0.0,
                  .ymin = fmin(1.0, w_min),
                  .q = slow * poly[2],
                  .r = slow * poly[3],
                  .s = slow * poly[4],
                  .off = off,
                  /* A block of at most max_items items costs at most max_items w_max. */
                  .block_cap = c->pus[p].max_items == SIZE_MAX
                                   ? INFINITY
                                   : (double)c->pus[p].max_items * w_max};
  find_stationary(b, fmax(2.0, n_items));
  whole_blocks_of(b);
}

/* Items of different costs (a cost map): the bound above lets every PU's blocks hold the dearest
 * items, so each carries only 1 / w_max of an item's bytes per unit of cost. But every item
 * crosses some PU's links once, and the PUs together cannot all hold the dear ones. item_bound
 * counts both. For PU p, write x_p for the cost it processes (in average items, as above) and n_p
 * for its items, and C(n), D(n) for the least and the most cost that n items can hold: the
 * cheapest n and the dearest n, over the map's slices taken as a continuum of items (any n whole
 * items cover n / N of the index range, whose cost lies between those two). Then
 *
 *     C(n_p) <= x_p <= D(n_p),   L'_p(x_p) + tau_p n_p <= T,   sum x_p = N,   sum n_p = N
 *
 * hold in any run that ends by T, where L'_p is least_busy with the transfer per item tau_p kept
 * out of the curve (its blocks' transfers add tau_p per item, and their compute and fixed costs
 * are bounded as above). So (N, N) lies in the sum of the sets R_p(T) of the (x_p, n_p) each PU
 * can reach, and in the sum of their convex hulls: for every direction (a, b),
 *
 *     a N + b N <= sum over p of h_p(a, b),   h_p(a, b) = max over R_p(T) of a x + b n.
 *
 * A T at which some direction fails is below every run's makespan. Each h_p is bounded above
 * (never below: the test then fails less often and the bound only drops) by cutting [0, N] into
 * segments at the breakpoints of C and D and at ITEM_GRID even points n_k. On a segment starting
 * at or after n_k, x <= X_p(T - tau_p n_k), X_p(s) the most cost L'_p allows in s (X_p is
 * nondecreasing), and C, D are linear, so the set's part there lies in a polygon whose corners
 * are listed below. ITEM_DIRECTIONS directions are tried: fewer only let more T pass. Every R_p
 * grows with T, so bisection finds the least T that passes; the bound is the larger of it and
 * the bound above. On the random spikes preset (5 % of the slices 30x the others) it is 1.8 %
 * higher than the one above, at 5000 and at 10^5 items; without the map the same cluster's bound
 * is 2.6 % higher. */
#define ITEM_GRID 128
#define ITEM_DIRECTIONS 64
#define ITEM_STEPS_MAX 4096 /* distinct weights beyond which the bound above is used alone */
#define ITEM_CORNERS_MAX (1u << 24) /* corners of all PUs beyond which it is used alone too */
#define TWO_PI 6.283185307179586

/* The map's item-count breakpoints (those of C and D, and the grid) for N items, with C and D
 * there and the grid point at or before each. */
typedef struct item_steps {
  unsigned m;     /* breakpoints, the first 0 and the last N */
  double *n;      /* item counts */
  double *cheap;  /* C(n): the cheapest n items' cost */
  double *dear;   /* D(n): the dearest n items' cost */
  unsigned *grid; /* the grid point k with n_k <= n */
} item_steps;

static void item_steps_free(item_steps *s) {
  if (!s) return;
  free(s->n);
  free(s->cheap);
  free(s->dear);
  free(s->grid);
  free(s);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Cost of the first n items in the order of the sorted slice weights w (each slice N / S
 * items), `prefix` their running sums. */
static double cost_of_first(const double *w, const double *prefix, unsigned S, double N, double n) {
  double per = N / S;
  unsigned whole = n >= N ? S : (unsigned)floor(n / per);
  if (whole >= S) return prefix[S] * per;
  return prefix[whole] * per + (n - whole * per) * w[whole];
}

/* NULL, with *rc 0, where item_bound adds nothing: no map, one weight, no transfer, or over
 * ITEM_STEPS_MAX distinct weights; *rc HLB_ENOMEM when out of memory. */
static item_steps *item_steps_of(const hlb_cluster *c, double N, int *rc) {
  *rc = 0;
  unsigned S = c->cost_slices;
  int moves = 0;
  for (unsigned p = 0; p < c->n_pus; p++) {
    hlb_curve g;
    hlb_sim_pu_curve(c, p, &g);
    moves |= g.transfer_per_item > 0;
  }
  if (S < 2 || !moves) return NULL;
  double *w = malloc(S * sizeof *w), *prefix = NULL;
  item_steps *s = calloc(1, sizeof *s);
  if (!w || !s) goto oom;
  memcpy(w, c->cost_weight, S * sizeof *w);
  qsort(w, S, sizeof *w, by_double);
  unsigned distinct = 1;
  for (unsigned k = 1; k < S; k++)
    distinct += w[k] != w[k - 1];
  if (distinct < 2 || distinct > ITEM_STEPS_MAX) {
    free(w);
    free(s);
    return NULL;
  }
  /* Breakpoints: where the weight changes, counted from the cheap end (C) and from the dear end
   * (D, at N minus those), and the grid. */
  unsigned cap = 2 * distinct + ITEM_GRID + 3, m = 0;
  s->n = malloc(cap * sizeof *s->n);
  if (!s->n) goto oom;
  s->n[m++] = 0;
  for (unsigned k = 1; k < S; k++)
    if (w[k] != w[k - 1]) {
      s->n[m++] = N * k / S;
      s->n[m++] = N - N * k / S;
    }
  for (unsigned k = 1; k <= ITEM_GRID; k++)
    s->n[m++] = N * k / ITEM_GRID;
  qsort(s->n, m, sizeof *s->n, by_double);
  unsigned u = 1;
  for (unsigned i = 1; i < m; i++)
    if (s->n[i] > s->n[u - 1]) s->n[u++] = s->n[i];
  s->m = u;
  s->cheap = malloc(u * sizeof *s->cheap);
  s->dear = malloc(u * sizeof *s->dear);
  s->grid = malloc(u * sizeof *s->grid);
  if (!s->cheap || !s->dear || !s->grid) goto oom;
  prefix = malloc((S + 1) * sizeof *prefix);
  if (!prefix) goto oom;
  prefix[0] = 0;
  for (unsigned k = 0; k < S; k++)
    prefix[k + 1] = prefix[k] + w[k];
  double total = cost_of_first(w, prefix, S, N, N);
  for (unsigned i = 0; i < u; i++) {
    s->cheap[i] = cost_of_first(w, prefix, S, N, s->n[i]);
    s->dear[i] = total - cost_of_first(w, prefix, S, N, N - s->n[i]);
    unsigned k = (unsigned)floor(s->n[i] / N * ITEM_GRID * (1 + 1e-12));
    while (k > 0 && N * k / ITEM_GRID > s->n[i]) /* rounding: n_k must not pass n */
      k--;
    s->grid[i] = k > ITEM_GRID ? ITEM_GRID : k;
  }
  free(w);
  free(prefix);
  return s;
oom:
  free(w);
  free(prefix);
  item_steps_free(s);
  *rc = hlb__error(HLB_ENOMEM, "sim: lower bound over %u cost slices: out of memory", S);
  return NULL;
}

/* The most cost L'_p allows within s, rounded up (an upper bound on X_p(s)); -1 below 0. */
static double most_cost_within(const pu_bound *b, double s, double cap) {
  if (s < 0) return -1;
  if (b->q == 0 && b->r == 0 && b->s == 0 && !isfinite(b->block_cap) && b->l > 0) {
    /* Affine (every paper preset), no largest block: L'(x) = x c(ymin) / ymin below the
     * smallest block, c(x) = f + l x from there on (c(y) / y falls), so X is read off directly. */
    double c0 = block_time(b, b->ymin);
    double x = s <= c0 ? s * b->ymin / c0 : (s - b->f) / b->l;
    return fmin(cap, x * (1 + 1e-12));
  }
  double lo, hi;
  bracket_most(b, s, cap, 1e-12, &lo, &hi);
  return hi;
}

typedef struct corner {
  double x, n; /* cost, items */
} corner;

/* The corners of PU p's reachable (cost, items) set at T, bounded outward (item_bound's
 * comment), into c[]; returns how many (at most 5 s->m + 1). */
static unsigned pu_corners(const pu_bound *b, const item_steps *s, double N, double T, corner *c) {
  double most[ITEM_GRID + 1];
  for (unsigned k = 0; k <= ITEM_GRID; k++)
    most[k] = most_cost_within(b, T - b->tau * (N * k / ITEM_GRID), N);
  unsigned count = 0;
  c[count++] = (corner){0, 0}; /* the PU doing nothing */
  double n_end = b->tau > 0 ? fmin(N, T / b->tau) : N;
  for (unsigned i = 0; i + 1 < s->m && s->n[i] <= n_end; i++) {
    double a = s->n[i], top = most[s->grid[i]], width = s->n[i + 1] - a;
    if (top < 0) break;
    double c0 = s->cheap[i], dc = (s->cheap[i + 1] - c0) / width;
    double d0 = s->dear[i], dd = (s->dear[i + 1] - d0) / width;
    if (c0 > top) break;                     /* C rises and top falls: nothing further fits */
    double e = fmin(s->n[i + 1], n_end) - a; /* the segment's part within reach */
    if (dc > 0 && c0 + dc * e > top) e = (top - c0) / dc;
    /* At each end the cheap side, then the dear side (D capped at top), and between them where
     * D meets top: by items, then by cost (C <= top and C <= D). */
    c[count++] = (corner){c0, a};
    c[count++] = (corner){fmin(d0, top), a};
    if (d0 < top && d0 + dd * e > top) c[count++] = (corner){top, a + (top - d0) / dd};
    c[count++] = (corner){c0 + dc * e, a + e};
    c[count++] = (corner){fmin(d0 + dd * e, top), a + e};
  }
  return count;
}

/* Corners of every PU at one T: PU p's are at[p * per..], count[p] of them. */
typedef struct corners {
  unsigned per, *count;
  corner *at, *scratch; /* scratch: per + 1 corners for hull */
} corners;

/* z component of (b - a) x (c - a): > 0 when a, b, c turn left. */
static double turn(const corner *a, const corner *b, const corner *c) {
  return (b->n - a->n) * (c->x - a->x) - (b->x - a->x) * (c->n - a->n);
}

/* The convex hull of the k corners in place (monotone chain), its size returned: the same
 * support function from fewer corners. pu_corners lists them by items, then by cost, as the
 * chain needs. */
static unsigned hull(corner *p, unsigned k, corner *scratch) {
  if (k < 3) return k;
  unsigned h = 0;
  for (unsigned i = 0; i < k; i++) { /* lower chain */
    while (h >= 2 && turn(&scratch[h - 2], &scratch[h - 1], &p[i]) <= 0)
      h--;
    scratch[h++] = p[i];
  }
  for (unsigned i = k - 1, low = h + 1; i-- > 0;) { /* upper chain */
    while (h >= low && turn(&scratch[h - 2], &scratch[h - 1], &p[i]) <= 0)
      h--;
    scratch[h++] = p[i];
  }
  h--; /* the first corner again */
  memcpy(p, scratch, h * sizeof *p);
  return h;
}

/* sum over PUs of h_p(cos t, sin t), less (cos t + sin t) N: below 0, no run ends by T. */
static double slack_towards(const corners *k, unsigned n_pus, double N, double t) {
  double a = cos(t), b = sin(t), sum = -(a + b) * N;
  for (unsigned p = 0; p < n_pus; p++) {
    const corner *c = k->at + (size_t)p * k->per;
    double h = 0; /* the PU doing nothing, a corner of every PU's set */
    for (unsigned i = 0; i < k->count[p]; i++) {
      double v = a * c[i].x + b * c[i].n;
      if (v > h) h = v;
    }
    sum += h;
  }
  return sum;
}

/* 1 when no direction tried rules out a run ending by T: ITEM_DIRECTIONS even ones, then a
 * golden-section search between the neighbours of the tightest (the directions that rule T out,
 * if any, form one arc: the set is convex). Trying fewer only lets more T pass. */
static int items_fit(const pu_bound *pb, unsigned n_pus, const item_steps *s, double N, double T,
                     corners *k) {
  for (unsigned p = 0; p < n_pus; p++) {
    corner *c = k->at + (size_t)p * k->per;
    k->count[p] = pb[p].off ? 0 : hull(c, pu_corners(&pb[p], s, N, T, c), k->scratch);
  }
  double step = TWO_PI / ITEM_DIRECTIONS, best_t = 0, best = INFINITY;
  double tol = 1e-9 * N, g = 0.6180339887498949;
  for (unsigned j = 0; j < ITEM_DIRECTIONS && best >= -tol; j++) {
    double v = slack_towards(k, n_pus, N, j * step);
    if (v < best) best = v, best_t = j * step;
  }
  double lo = best_t - step, hi = best_t + step;
  for (int i = 0; i < 40 && best >= -tol; i++) {
    double t1 = hi - g * (hi - lo), t2 = lo + g * (hi - lo);
    double v1 = slack_towards(k, n_pus, N, t1), v2 = slack_towards(k, n_pus, N, t2);
    best = fmin(best, fmin(v1, v2));
    if (v1 < v2)
      hi = t2;
    else
      lo = t1;
  }
  return best >= -tol;
}

/* The least T that items_fit passes, at or above `from` (the bound above, which it can only
 * raise); pb describes the PUs with their transfer apart. `from` as it is when the corners would
 * not fit in memory. */
static double item_bound(const pu_bound *pb, unsigned n_pus, const item_steps *s, double N,
                         double from) {
  corners k = {.per = 5 * s->m + 1};
  size_t total = (size_t)n_pus * k.per;
  if (!(from > 0) || total > ITEM_CORNERS_MAX) return from;
  k.count = malloc(n_pus * sizeof *k.count);
  k.at = malloc(total * sizeof *k.at);
  k.scratch = malloc((k.per + 1) * sizeof *k.scratch);
  double lo = from;
  if (k.count && k.at && k.scratch && !items_fit(pb, n_pus, s, N, from, &k)) {
    double hi = 2.0 * from;
    for (int i = 0; i < 60 && !items_fit(pb, n_pus, s, N, hi, &k); i++)
      lo = hi, hi *= 2.0;
    for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; i++) {
      double mid = 0.5 * (lo + hi);
      if (items_fit(pb, n_pus, s, N, mid, &k))
        hi = mid;
      else
        lo = mid;
    }
  }
  free(k.count);
  free(k.at);
  free(k.scratch);
  return lo; /* ruled out: below every run */
}

/* The bound of one configuration of driver cores: PU p's compute curve times slow[p], PUs
 * with off[p] left out (both NULL: none). */
static int bound_of(const hlb_cluster *c, size_t n_items, const double *slow, const int *off,
                    const item_steps *steps, pu_bound *pb, double *out) {
  double N = (double)n_items, hi = 0;
  unsigned on = 0;
  for (unsigned p = 0; p < c->n_pus; p++) {
    describe_pu(c, p, N, slow ? slow[p] : 1.0, off ? off[p] : 0, 0, &pb[p]);
    if (pb[p].off) continue;
    on++;
    hi = fmax(hi, least_busy(&pb[p], N)); /* any one PU doing everything */
  }
  if (on == 0)
    return hlb__error(HLB_EINVAL, "sim: lower bound: no PU is left to process %zu items", n_items);
  double lo = 0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if (items_by(pb, c->n_pus, mid, N) >= N * (1 - 1e-12))
      hi = mid;
    else
      lo = mid;
  }
  /* lo is below the bound by at most the bisection's width: a bound stays a bound. */
  if (steps) {
    for (unsigned p = 0; p < c->n_pus; p++)
      describe_pu(c, p, N, slow ? slow[p] : 1.0, off ? off[p] : 0, 1, &pb[p]);
    lo = item_bound(pb, c->n_pus, steps, N, lo);
  }
  *out = lo;
  return 0;
}

/* Driver cores (docs/cluster-format.md): a run keeps some driver-core PUs, with their cpu PUs on
 * the cores left, and releases others, from the start or later. Each of the 2^d choices of
 * which are kept all run is a configuration with a bound of its own, and the bound is their
 * least. A run that releases a PU mid-run mixes two configurations over time; when every PU's
 * items-by-T X_p(T) is convex in T (affine curves: X_p(T) = (T - a) / b past the fixed cost),
 * the best mix is an end point, so the least is still a bound. With superlinear curves X_p is
 * concave below the time of one best block, and a mix could beat both ends by at most about
 * one such block per released PU (docs/simulator.md says so). With more than
 * DRIVER_CONFIGS_MAX driver-core PUs, every PU counts with its cpu PU on all its cores: a bound
 * for every run, looser by what the held cores do. */
#define DRIVER_CONFIGS_MAX 10

int hlb_sim_lower_bound(const hlb_cluster *c, size_t n_items, double *out) {
  if (!c || !out || c->n_pus == 0 || n_items == 0)
    return hlb__error(HLB_EINVAL, "sim: lower bound needs a cluster with PUs and items > 0");
  unsigned nd = 0;
  for (unsigned p = 0; p < c->n_pus; p++)
    nd += c->pus[p].driver_of >= 0;
  pu_bound *pb = malloc(c->n_pus * sizeof *pb);
  double *slow = nd ? calloc(c->n_pus, sizeof *slow) : NULL;
  int *off = nd ? calloc(c->n_pus, sizeof *off) : NULL;
  unsigned *drv = nd ? calloc(nd, sizeof *drv) : NULL;
  int rc = 0;
  item_steps *steps = item_steps_of(c, (double)n_items, &rc);
  if (rc == 0 && (!pb || (nd && (!slow || !off || !drv))))
    rc = hlb__error(HLB_ENOMEM, "sim: lower bound for %u PUs: out of memory", c->n_pus);
  if (rc == 0 && (nd == 0 || nd > DRIVER_CONFIGS_MAX))
    rc = bound_of(c, n_items, NULL, NULL, steps, pb, out);
  for (unsigned p = 0, k = 0; rc == 0 && nd && p < c->n_pus; p++)
    if (c->pus[p].driver_of >= 0) drv[k++] = p;
  double best = INFINITY;
  for (unsigned long mask = 0; rc == 0 && nd && nd <= DRIVER_CONFIGS_MAX && mask < (1ul << nd);
       mask++) {
    /* Bit i set: driver-core PU drv[i] is kept all run and holds its cores. */
    for (unsigned p = 0; p < c->n_pus; p++)
      slow[p] = 0.0, off[p] = 0;
    for (unsigned i = 0; i < nd; i++) {
      const hlb_cluster_pu *d = &c->pus[drv[i]];
      if (mask >> i & 1)
        slow[d->driver_of] += d->driver_cores; /* cores held, for now */
      else
        off[drv[i]] = 1;
    }
    for (unsigned p = 0; p < c->n_pus; p++)
      slow[p] = c->pus[p].cores ? c->pus[p].cores / (c->pus[p].cores - slow[p]) : 1.0;
    double b = 0;
    rc = bound_of(c, n_items, slow, off, steps, pb, &b);
    if (rc == HLB_EINVAL && mask + 1 < (1ul << nd)) { /* every PU released: not a run */
      hlb_clear_error();
      rc = 0;
      continue;
    }
    if (rc == 0 && b < best) best = b;
  }
  if (rc == 0 && nd && nd <= DRIVER_CONFIGS_MAX) *out = best;
  item_steps_free(steps);
  free(pb);
  free(slow);
  free(off);
  free(drv);
  return rc;
}
