/* `model`: PLB-style repartition for SPMD codes. Each rank's compute time per iteration as a
 * function of its row count is a fitted performance curve (hlb_model, PLB-HeC III.B, with
 * forgetting so it follows external load); the new split is the integer equal-finish-time
 * optimum of those curves (PLB-HeC III.C). Until a rank has samples at two distinct sizes its
 * curve is the line through the origin and its one measurement. Rebalance when the predicted
 * iteration time improves by more than `gain` (PLB-HeC's 10 % rebalance threshold, III.D). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/model.h"
#include "hlb/partition.h"
#include "policy/repart_common.h"

enum { P_GAIN, P_FORGET, P_COUNT };

static const hlb_param_def model_params[P_COUNT] = {
    {"gain", 0.10, 0.0, 1.0,
     "rebalance when the predicted iteration time drops by more than this (PLB-HeC III.D: 10 %)"},
    {"forgetting", 0.5, 0.01, 1.0,
     "weight kept by older samples at each new one (1 = never forget)"},
};

typedef struct model_state {
  hlb__repart_base base; /* first: copies of the context, stats */
  hlb_model **models;
  hlb_curve *curves;
} model_state;

static void model_fini(void *state) {
  model_state *s = state;
  if (!s) return;
  for (unsigned r = 0; s->models && r < s->base.ctx.n_ranks; r++)
    hlb_model_destroy(s->models[r]);
  hlb__repart_base_fini(&s->base);
  free(s->models);
  free(s->curves);
  free(s);
}

extern const hlb_repart_ops hlb__repart_model;

static int model_init(const hlb_repart_ctx *ctx, void **state) {
  model_state *s = calloc(1, sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "model repartition: out of memory");
  s->models = calloc(ctx->n_ranks, sizeof *s->models);
  s->curves = calloc(ctx->n_ranks, sizeof *s->curves);
  if (!s->models || !s->curves) {
    model_fini(s);
    return hlb__error(HLB_ENOMEM, "model repartition: out of memory for %u ranks", ctx->n_ranks);
  }
  int rc = hlb__repart_base_init(&s->base, &hlb__repart_model, ctx, 0);
  if (rc) {
    model_fini(s);
    return rc;
  }
  hlb_model_options opt;
  hlb_model_options_default(&opt);
  opt.forgetting = ctx->param[P_FORGET];
  for (unsigned r = 0; r < ctx->n_ranks; r++) {
    rc = hlb_model_create((double)ctx->total_rows, &opt, &s->models[r]);
    if (rc) {
      model_fini(s);
      return rc;
    }
  }
  *state = s;
  return 0;
}

/* The rank's curve: the fitted model, or the line through the origin and the last sample. */
static void rank_curve(model_state *s, unsigned r, double rows, double per_iter_s) {
  hlb_curve *c = &s->curves[r];
  double total = (double)s->base.ctx.total_rows;
  if (hlb_model_fit(s->models[r], total) == 0 && hlb_model_curve(s->models[r], c) == 0) return;
  memset(c, 0, sizeof *c);
  c->scale = total;
  c->coef[HLB_TERM_U] = rows > 0 ? per_iter_s / rows * c->scale : 0.0;
}

static int model_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                        size_t *new_counts, hlb_repart_decision *d) {
  model_state *s = state;
  unsigned n = s->base.ctx.n_ranks;
  int rc = hlb__repart_admit(&s->base, iv, counts, new_counts, d);
  if (rc) return rc;
  double current = 0.0;
  for (unsigned r = 0; r < n; r++) {
    double per_iter = hlb__repart_compute_s(&iv[r]) / (iv[r].iterations ? iv[r].iterations : 1);
    current = per_iter > current ? per_iter : current;
    if (counts[r] > 0)
      hlb_model_add(s->models[r], (double)counts[r], per_iter, 0.0); /* bad values: counted */
    rank_curve(s, r, (double)counts[r], per_iter);
  }
  double predicted = 0.0;
  rc = hlb_eft_solve_int(s->curves, NULL, n, s->base.ctx.total_rows, NULL, new_counts, &predicted);
  if (rc) {
    memcpy(new_counts, counts, n * sizeof *counts); /* the split stands on failure */
    return rc;
  }
  d->predicted_gain_s = current > predicted ? current - predicted : 0.0;
  if (!(current > 0.0) || (current - predicted) / current <= s->base.ctx.param[P_GAIN]) {
    memcpy(new_counts, counts, n * sizeof *counts);
    return 0;
  }
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  return 0;
}

const hlb_repart_ops hlb__repart_model = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "model",
    .description = "PLB curves per rank, integer equal-finish-time split (PLB-HeC, section III)",
    .params = model_params,
    .n_params = P_COUNT,
    .init = model_init,
    .decide = model_decide,
    .fini = model_fini,
    .stats = hlb__repart_base_stats,
};
