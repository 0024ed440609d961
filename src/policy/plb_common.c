#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/partition.h"
#include "policy/plb_common.h"

int hlb__plb_ws_init(hlb__plb_ws *ws, unsigned n) {
  memset(ws, 0, sizeof *ws);
  ws->n = n;
  ws->curves = calloc(n, sizeof *ws->curves);
  ws->ready = calloc(n, sizeof *ws->ready);
  ws->x = calloc(n, sizeof *ws->x);
  ws->idx = calloc(n, sizeof *ws->idx);
  if (!ws->curves || !ws->ready || !ws->x || !ws->idx) {
    hlb__plb_ws_free(ws);
    return hlb__error(HLB_ENOMEM, "policy: no memory for a solve over %u PUs", n);
  }
  return 0;
}

void hlb__plb_ws_free(hlb__plb_ws *ws) {
  hlb_eft_workspace_destroy(ws->eft);
  free(ws->curves);
  free(ws->ready);
  free(ws->x);
  free(ws->idx);
  memset(ws, 0, sizeof *ws);
}

int hlb__plb_sample_ok(const hlb_sample *s) {
  return s && s->block.count > 0 && isfinite(s->compute_s) && s->compute_s > 0 &&
         isfinite(s->transfer_s) && s->transfer_s >= 0;
}

double hlb__plb_sample_x(const hlb_sample *s) {
  return s->cost > 0 ? s->cost : (double)s->block.count;
}

double hlb__plb_sample_s(const hlb_sample *s) {
  return s->compute_s + s->transfer_s;
}

void hlb__plb_linear_curve(hlb_curve *c, double rate) {
  hlb_curve_from_poly(c, 0.0, rate > 0 ? 1.0 / rate : 0.0, 0.0, 0.0, 0.0);
}

void hlb__plb_observe(hlb__plb_pu *u, const hlb_sample *s) {
  if (!hlb__plb_sample_ok(s)) {
    u->bad++;
    return;
  }
  double x = hlb__plb_sample_x(s), t = hlb__plb_sample_s(s);
  u->sum_items += x;
  u->sum_s += t;
  u->sxx += x * x;
  u->sxt += x * t;
  u->st += t;
  u->rate = u->sum_items / u->sum_s;
  if (x > u->max_items) u->max_items = x;
  if (u->good == 0 || x < u->min_items) u->min_items = x;
  u->good++;
  if (!u->fitted) hlb__plb_linear_curve(&u->curve, u->rate);
}

int hlb__plb_affine_curve(const hlb__plb_pu *u, hlb_curve *c) {
  double n = (double)u->good, sx = u->sum_items;
  double det = n * u->sxx - sx * sx;
  hlb__plb_linear_curve(c, u->rate);
  /* Distinct sizes make det > 0; demand a clear spread so noise cannot tilt the line. */
  if (u->good < 2 || !(u->max_items > 1.5 * u->min_items) || !(det > 0)) return 0;
  double b = (n * u->sxt - sx * u->st) / det;
  double a = (u->st - b * sx) / n;
  if (a < 0) { /* a negative fixed cost is noise: refit through the origin */
    a = 0;
    b = u->sxt / u->sxx;
  }
  if (!(b > 0) || !isfinite(a) || !isfinite(b)) return 0;
  hlb_curve_from_poly(c, a, b, 0.0, 0.0, 0.0);
  return 1;
}

void hlb__plb_curve_scaled(hlb_curve *out, const hlb_curve *c, double f) {
  *out = *c;
  for (int k = 0; k < HLB_TERM_COUNT; k++)
    out->coef[k] *= f;
  out->transfer_per_item *= f;
  out->transfer_fixed *= f;
}

/* A fit is usable where it will be used when it predicts finite, positive times that grow
 * with the block over (0, x_max], and agrees with the measured straight line (fixed cost +
 * cost per item) within a factor 1.4 from the largest block seen to 16 times it: a fit of a
 * few small blocks can bend away wildly beyond them, and the equal-finish-time solve
 * extrapolates to each PU's whole share. */
static int fit_sane(const hlb_curve *c, const hlb__plb_pu *u, const hlb_curve *line, double x_max) {
  double lo = u->min_items > 0 ? u->min_items : 1.0;
  double prev = 0.0;
  for (int i = 0; i <= 8; i++) {
    double x = lo * pow(x_max / lo, i / 8.0);
    double t = hlb_curve_time(c, x);
    if (!isfinite(t) || t <= 0 || t < prev * (1.0 - 1e-9)) return 0;
    prev = t;
  }
  for (int i = 0; i <= 2; i++) {
    double x = u->max_items * (double)(1 << (2 * i)); /* 1x, 4x, 16x */
    double r = hlb_curve_time(c, x) / hlb_curve_time(line, x);
    if (!(r > 1.0 / 1.4 && r < 1.4)) return 0;
  }
  return 1;
}

int hlb__plb_refit(const hlb_policy_ctx *ctx, unsigned p, hlb__plb_pu *u, double x_max) {
  if (!(u->rate > 0)) return -1;
  hlb_curve c, line;
  int have_line = hlb__plb_affine_curve(u, &line);
  if (x_max < 1) x_max = 1;
  if (have_line && hlb_model_fit(ctx->models[p], x_max) == 0 &&
      hlb_model_curve(ctx->models[p], &c) == 0 && fit_sane(&c, u, &line, x_max)) {
    u->curve = c;
    u->fitted = 1;
    return 1;
  }
  hlb_clear_error(); /* too few distinct sizes is the normal state early on */
  u->fitted = 0;
  u->curve = line; /* the straight line, or the mean rate without two distinct sizes */
  return 0;
}

double hlb__plb_r2(const hlb_policy_ctx *ctx, unsigned p) {
  return hlb_model_r2(ctx->models[p]);
}

double hlb__plb_inverse_memo(hlb__plb_memo *memo, const hlb_curve *c, double t, double x_max) {
  if (!(t > 0) || !(x_max > 0)) return 0.0;
  if (memo->c != c || memo->x_max != x_max) {
    memo->c = c;
    memo->x_max = x_max;
    memo->t_max = hlb_curve_time(c, x_max);
    memo->n = 0;
  }
  if (memo->t_max <= t) return x_max;
  double lo = 0.0, hi = x_max;
  for (unsigned i = 0; i < 64 && hi - lo > 1e-3; i++) {
    double mid = 0.5 * (lo + hi), tm;
    if (i < memo->n && memo->x[i] == mid) {
      tm = memo->t[i];
    } else { /* off the kept path from here on: keep this one's */
      tm = hlb_curve_time(c, mid);
      memo->x[i] = mid;
      memo->t[i] = tm;
      memo->n = i + 1;
    }
    if (tm <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

double hlb__plb_inverse(const hlb_curve *c, double t, double x_max) {
  hlb__plb_memo memo;
  memo.c = NULL;
  return hlb__plb_inverse_memo(&memo, c, t, x_max);
}

double hlb__plb_ready_in(const hlb_policy_ctx *ctx, unsigned p, const hlb_curve *c, double now) {
  unsigned n = hlb_balancer_in_flight(ctx->balancer, p);
  hlb_block blk;
  if (n == 0 || !hlb_balancer_oldest_in_flight(ctx->balancer, p, &blk)) return 0.0;
  double one = hlb_curve_time(c, hlb_balancer_range_cost(ctx->balancer, blk.begin, blk.count));
  double left = blk.granted_s + one - now;
  /* Overdue, or in its last quarter: expect it soon, but not now. The floor holds inside the
   * prediction too, which makes a PU near the end of a block look busier than it is; taking a
   * block still inside its prediction at its word (the floor for overdue ones only) gave the
   * simulator's spikes map 1.127 -> 1.177 x the bound in a first run: on irregular items a
   * block near its predicted end is often far from its real one. */
  if (left < 0.25 * one) left = 0.25 * one;
  return left + (n - 1) * one;
}

/* Shares proportional to each curve's speed at `items` / n: the fallback when the solver
 * rejects the curves. */
static void proportional(const hlb_curve *curves, unsigned m, double items, double *x,
                         double *makespan) {
  double sum = 0.0;
  for (unsigned i = 0; i < m; i++) {
    double probe = items / m;
    double t = hlb_curve_time(&curves[i], probe);
    x[i] = t > 0 && isfinite(t) ? probe / t : 0.0;
    sum += x[i];
  }
  double worst = 0.0;
  for (unsigned i = 0; i < m; i++) {
    x[i] = sum > 0 ? items * x[i] / sum : items / m;
    double t = hlb_curve_time(&curves[i], x[i]);
    if (t > worst) worst = t;
  }
  if (makespan) *makespan = worst;
}

/* hlb_eft_solve, with the workspace of the last solve over as many PUs kept rather than
 * allocated and zeroed anew (at 10^4 PUs, 0.7 MB a solve). Reset, it starts cold as a fresh one
 * does, and the solve reads nothing of it before writing it: the same answer. */
static int eft_solve(hlb__plb_ws *ws, const hlb_curve *curves, const double *ready, unsigned m,
                     double items, double *x, double *makespan) {
  if (m <= 32) return hlb_eft_solve(curves, ready, m, items, x, makespan);
  if (ws->eft && ws->eft_n != m) {
    hlb_eft_workspace_destroy(ws->eft);
    ws->eft = NULL;
  }
  if (!ws->eft) {
    int rc = hlb_eft_workspace_create(m, &ws->eft);
    if (rc) return rc;
    ws->eft_n = m;
  }
  hlb_eft_workspace_reset(ws->eft);
  return hlb_eft_solve_ws(ws->eft, curves, ready, items, x, makespan);
}

unsigned hlb__plb_solve(const hlb_policy_ctx *ctx, hlb__plb_ws *ws, const hlb_curve *curves,
                        const int *usable, const double *ready, double items, double *x,
                        double *makespan) {
  unsigned m = 0;
  for (unsigned p = 0; p < ctx->n_pus; p++) {
    x[p] = 0.0;
    if (!usable[p] || !hlb_balancer_pu_alive(ctx->balancer, p)) continue;
    ws->idx[m++] = p;
  }
  if (m == 0 || !(items > 0)) {
    if (makespan) *makespan = 0.0;
    return m;
  }
  /* Every PU in the solve: its arrays as they are, else the usable ones compacted. */
  const hlb_curve *cs = curves;
  const double *rs = ready;
  if (m < ctx->n_pus) {
    for (unsigned i = 0; i < m; i++) {
      ws->curves[i] = curves[ws->idx[i]];
      ws->ready[i] = ready ? ready[ws->idx[i]] : 0.0;
    }
    cs = ws->curves;
    rs = ws->ready;
  } else if (!ready) {
    memset(ws->ready, 0, m * sizeof *ws->ready);
    rs = ws->ready;
  }
  double ms = 0.0;
  if (eft_solve(ws, cs, rs, m, items, ws->x, &ms) != 0) {
    hlb_clear_error();
    proportional(cs, m, items, ws->x, &ms);
  }
  for (unsigned i = 0; i < m; i++)
    x[ws->idx[i]] = ws->x[i] > 0 && isfinite(ws->x[i]) ? ws->x[i] : 0.0;
  if (makespan) *makespan = ms;
  return m;
}

size_t hlb__plb_round(const hlb_policy_ctx *ctx, double x) {
  size_t g = ctx->granularity ? ctx->granularity : 1;
  if (!(x > 0) || !isfinite(x)) return g;
  double k = floor(x / (double)g + 0.5);
  if (k < 1) k = 1;
  if (k > (double)(ctx->n_items / g + 1)) k = (double)(ctx->n_items / g + 1);
  return (size_t)k * g;
}

int hlb__plb_minmax_init(hlb__plb_minmax *m, unsigned n) {
  unsigned size = 1;
  while (size < n)
    size *= 2;
  m->size = size;
  m->lo = malloc(2 * (size_t)size * sizeof *m->lo);
  m->hi = malloc(2 * (size_t)size * sizeof *m->hi);
  if (!m->lo || !m->hi) {
    hlb__plb_minmax_free(m);
    return hlb__error(HLB_ENOMEM, "policy: no memory for a min/max tree over %u PUs", n);
  }
  hlb__plb_minmax_clear(m);
  return 0;
}

void hlb__plb_minmax_free(hlb__plb_minmax *m) {
  free(m->lo);
  free(m->hi);
  memset(m, 0, sizeof *m);
}

void hlb__plb_minmax_clear(hlb__plb_minmax *m) {
  for (size_t i = 0; i < 2 * (size_t)m->size; i++) {
    m->lo[i] = INFINITY;
    m->hi[i] = -INFINITY;
  }
}

static void minmax_put(hlb__plb_minmax *m, unsigned p, double lo, double hi) {
  size_t i = (size_t)m->size + p;
  m->lo[i] = lo;
  m->hi[i] = hi;
  for (i /= 2; i >= 1; i /= 2) {
    m->lo[i] = fmin(m->lo[2 * i], m->lo[2 * i + 1]);
    m->hi[i] = fmax(m->hi[2 * i], m->hi[2 * i + 1]);
  }
}

void hlb__plb_minmax_set(hlb__plb_minmax *m, unsigned p, double v) {
  if (p < m->size) minmax_put(m, p, v, v);
}

void hlb__plb_minmax_remove(hlb__plb_minmax *m, unsigned p) {
  if (p < m->size) minmax_put(m, p, INFINITY, -INFINITY);
}

void hlb__plb_minmax_range(const hlb__plb_minmax *m, double *lo, double *hi) {
  *lo = m->lo[1];
  *hi = m->hi[1];
}

/* Both O(1): the balancer keeps the counts (policy.h). A retired PU has nothing in flight, so
 * the balancer's busy count covers alive PUs only. */
unsigned hlb__plb_alive(const hlb_policy_ctx *ctx) {
  return hlb_balancer_alive(ctx->balancer);
}

unsigned hlb__plb_busy(const hlb_policy_ctx *ctx) {
  return hlb_balancer_busy(ctx->balancer);
}
