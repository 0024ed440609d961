/* `ccp` and `diffusive`: the 1-D balancer of Issakhov et al. as repartition policies.
 *
 * Both see the rows as a chain of cells with weights (the application's row weights, or 1)
 * and measure each rank's speed as the weight it owned per compute second.
 *  - `ccp` moves straight to the exact chains-on-chains optimum for those speeds
 *    (hlb_ccp_solve_prefix), when that optimum beats the current slowest rank by `gain`.
 *  - `diffusive` moves each offset cell by cell towards the lighter side (Issakhov et al. eq. 5-7,
 * with the penalty factor and measured power weights), when the imbalance percentage I% of the
 *    loads exceeds `imbalance`; the loads are 25 % truncated means over the last `window`
 *    intervals (Issakhov et al., section 1), so one noisy interval does not move the split.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"
#include "policy/repart_common.h"

#define WINDOW_MAX 16

typedef struct chain_state {
  hlb__repart_base base; /* first: copies of the context, stats */
  double *w, *prefix, *speed, *load, *history, *work;
  size_t *offsets, *new_offsets;
  unsigned filled; /* intervals in history so far (at most the window) */
} chain_state;

static void chain_fini(void *state) {
  chain_state *s = state;
  if (!s) return;
  hlb__repart_base_fini(&s->base);
  free(s->w);
  free(s->prefix);
  free(s->speed);
  free(s->load);
  free(s->history);
  free(s->work);
  free(s->offsets);
  free(s->new_offsets);
  free(s);
}

/* Both policies share this state; `ops` names the one being made. */
static int chain_init(const hlb_repart_ops *ops, const hlb_repart_ctx *ctx, void **state) {
  chain_state *s = calloc(1, sizeof *s);
  size_t m = ctx->total_rows, n = ctx->n_ranks;
  if (s) {
    s->w = malloc(m * sizeof *s->w);
    s->prefix = malloc((m + 1) * sizeof *s->prefix);
    s->speed = malloc(n * sizeof *s->speed);
    s->load = malloc(n * sizeof *s->load);
    s->history = calloc(n * WINDOW_MAX, sizeof *s->history);
    s->work = malloc(WINDOW_MAX * sizeof *s->work);
    s->offsets = malloc((n + 1) * sizeof *s->offsets);
    s->new_offsets = malloc((n + 1) * sizeof *s->new_offsets);
  }
  if (!s || !s->w || !s->prefix || !s->speed || !s->load || !s->history || !s->work ||
      !s->offsets || !s->new_offsets) {
    chain_fini(s);
    return hlb__error(HLB_ENOMEM, "%s repartition: out of memory for %zu rows", ops->name, m);
  }
  /* s->w is this state's copy of the weights, so the base keeps none. */
  int rc = hlb__repart_base_init(&s->base, ops, ctx, 0);
  if (rc) {
    chain_fini(s);
    return rc;
  }
  for (size_t i = 0; i < m; i++)
    s->w[i] = ctx->row_weights ? ctx->row_weights[i] : 1.0;
  rc = hlb_ccp_prefix(s->w, m, s->prefix);
  if (rc) {
    chain_fini(s);
    return rc;
  }
  *state = s;
  return 0;
}

extern const hlb_repart_ops hlb__repart_ccp, hlb__repart_diffusive;

static int ccp_init(const hlb_repart_ctx *ctx, void **state) {
  return chain_init(&hlb__repart_ccp, ctx, state);
}

static int diffusive_init(const hlb_repart_ctx *ctx, void **state) {
  return chain_init(&hlb__repart_diffusive, ctx, state);
}

static void to_offsets(const size_t *counts, unsigned n, size_t *offsets) {
  offsets[0] = 0;
  for (unsigned r = 0; r < n; r++)
    offsets[r + 1] = offsets[r] + counts[r];
}

static void to_counts(const size_t *offsets, unsigned n, size_t *counts) {
  for (unsigned r = 0; r < n; r++)
    counts[r] = offsets[r + 1] - offsets[r];
}

/* ---- ccp ---------------------------------------------------------------------------------- */

enum { CCP_GAIN, CCP_COUNT };
static const hlb_param_def ccp_params[CCP_COUNT] = {
    {"gain", 0.05, 0.0, 1.0,
     "move to the CCP optimum when it is this much faster than the slowest rank (hlb's choice; "
     "Issakhov et al. gives no threshold)"},
};

static int ccp_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                      size_t *new_counts, hlb_repart_decision *d) {
  chain_state *s = state;
  unsigned n = s->base.ctx.n_ranks;
  int rc = hlb__repart_admit(&s->base, iv, counts, new_counts, d);
  if (rc) return rc;
  to_offsets(counts, n, s->offsets);
  double slowest = 0.0;
  for (unsigned r = 0; r < n; r++) {
    double c = hlb__repart_compute_s(&iv[r]);
    double owned = s->prefix[s->offsets[r + 1]] - s->prefix[s->offsets[r]];
    s->speed[r] = c > 0.0 && owned > 0.0 ? owned / c : 0.0;
    slowest = c > slowest ? c : slowest;
  }
  /* A rank that owned no weight has no measured speed: give it the slowest measured one, so
   * it gets a little work back and is measured next time. */
  double min_speed = INFINITY;
  for (unsigned r = 0; r < n; r++)
    if (s->speed[r] > 0.0 && s->speed[r] < min_speed) min_speed = s->speed[r];
  for (unsigned r = 0; r < n; r++)
    if (!(s->speed[r] > 0.0)) s->speed[r] = isfinite(min_speed) ? min_speed : 1.0;
  double bottleneck = 0.0;
  rc = hlb_ccp_solve_prefix(s->prefix, s->base.ctx.total_rows, s->speed, n, s->new_offsets,
                            &bottleneck);
  if (rc) return rc;
  d->predicted_gain_s = slowest > bottleneck ? slowest - bottleneck : 0.0;
  if (!(slowest > 0.0) || d->predicted_gain_s / slowest <= s->base.ctx.param[CCP_GAIN]) return 0;
  to_counts(s->new_offsets, n, new_counts);
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  return 0;
}

const hlb_repart_ops hlb__repart_ccp = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "ccp",
    .description =
        "exact chains-on-chains split of weighted rows for measured speeds (Issakhov et al.)",
    .params = ccp_params,
    .n_params = CCP_COUNT,
    .init = ccp_init,
    .decide = ccp_decide,
    .fini = chain_fini,
    .stats = hlb__repart_base_stats,
};

/* ---- diffusive ------------------------------------------------------------------------------ */

enum { DIF_IMBALANCE, DIF_PENALTY, DIF_WINDOW, DIF_COUNT };
static const hlb_param_def diffusive_params[DIF_COUNT] = {
    {"imbalance", 5.0, 0.0, 100.0,
     "diffuse when the imbalance percentage I% of the loads exceeds this (Issakhov et al. section "
     "1 "
     "defines I%; the threshold is hlb's choice)"},
    {"penalty", HLB_DIFFUSIVE_F_PENALTY, 1.0, 10.0,
     "f_penalty of Issakhov et al. eq. 7 (the paper's example: 1.25)"},
    {"window", 4, 1, WINDOW_MAX,
     "intervals in the 25 % truncated mean of each rank's compute time (Issakhov et al., section "
     "1)"},
};

static int diffusive_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                            size_t *new_counts, hlb_repart_decision *d) {
  chain_state *s = state;
  unsigned n = s->base.ctx.n_ranks, window = (unsigned)s->base.ctx.param[DIF_WINDOW];
  int rc = hlb__repart_admit(&s->base, iv, counts, new_counts, d);
  if (rc) return rc;
  /* Shift each rank's history and add this interval's compute time per iteration. */
  for (unsigned r = 0; r < n; r++) {
    double *h = s->history + (size_t)r * WINDOW_MAX;
    memmove(h + 1, h, (WINDOW_MAX - 1) * sizeof *h);
    h[0] = hlb__repart_compute_s(&iv[r]) / (iv[r].iterations ? iv[r].iterations : 1);
  }
  s->filled = s->filled < window ? s->filled + 1 : window;
  for (unsigned r = 0; r < n; r++) {
    rc = hlb_truncated_mean(s->history + (size_t)r * WINDOW_MAX, s->filled, HLB_TRUNCATED_MEAN_TRIM,
                            s->work, &s->load[r]);
    if (rc) return rc;
  }
  hlb_imbalance imb;
  rc = hlb_imbalance_compute(s->load, n, &imb);
  if (rc) return rc;
  d->predicted_gain_s = imb.time;
  if (imb.percent <= s->base.ctx.param[DIF_IMBALANCE]) return 0;
  to_offsets(counts, n, s->offsets);
  hlb_diffusive_options opt;
  hlb_diffusive_options_default(&opt);
  opt.f_penalty = s->base.ctx.param[DIF_PENALTY];
  opt.power = HLB_POWER_MEASURED;
  opt.power_mix = 1; /* stable for the large speed ratios of shared cores */
  rc = hlb_diffusive_step(s->w, s->base.ctx.total_rows, s->load, n, s->offsets, &opt,
                          s->new_offsets, NULL);
  if (rc) return rc;
  to_counts(s->new_offsets, n, new_counts);
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  if (d->rebalance) s->filled = 0; /* the old timings describe the old split */
  return 0;
}

const hlb_repart_ops hlb__repart_diffusive = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "diffusive",
    .description = "Issakhov et al.'s diffusive offset refinement with truncated-mean loads",
    .params = diffusive_params,
    .n_params = DIF_COUNT,
    .init = diffusive_init,
    .decide = diffusive_decide,
    .fini = chain_fini,
    .stats = hlb__repart_base_stats,
};
