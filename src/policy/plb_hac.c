/* plb-hac: PLB-HAC (Sant'Ana, Camargo, Cordeiro; Euro-Par 2017 workshops), sections 3.1-3.4.
 *
 * Training (3.1): every PU gets x_init; after its first block, PU p gets 2 * x_init * R, R
 * being its speed relative to the fastest first block seen so far (the first to finish gets
 * exactly 2 * x_init). Then the only synchronisation of the run (3.3, Fig. 3): once every PU
 * has finished both blocks, the first model is fitted and solved.
 * Execution (3.3, Algorithm 1): asynchronous "virtual steps". Each PU gets one block of its
 * size x_p per step; the first PU to enter a new step refits every model with all samples so
 * far and re-solves the equal-time split, and the others use the newest sizes. A PU that
 * finishes its block at least gap_threshold_s earlier than its model predicted first gets a
 * gap-filling block sized to fill that gap. Once 70 % of the data is assigned, each new step
 * multiplies the block sizes by (1 - alpha).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/plb_common.h"

enum { P_INITIAL, P_GAP, P_DECAY_START, P_ALPHA, P_STEP, P_COUNT };

static const hlb_param_def hac_params[P_COUNT] = {
    {"initial_fraction", 0.002, 1e-9, 1.0,
     "x_init as a fraction of n_items / n_pus. PLB-HAC 3.1 leaves it to the user (section 5 "
     "used 1024 elements); as for plb-hec, 0.002 keeps training near PLB-HeC V.A's 10 % of "
     "the run time on the papers' clusters."},
    {"gap_threshold_s", 0.4, 0.0, 1e9,
     "A PU that finishes a block at least this many seconds before its prediction gets a "
     "gap-filling block (PLB-HAC 3.3: 400 ms)."},
    {"decay_start", 0.7, 0.0, 1.0,
     "Block sizes start to decrease once this fraction of the data is assigned (PLB-HAC 3.3: "
     "70 %)."},
    {"decay_alpha", 0.1, 0.0, 0.99,
     "Each virtual step after decay_start multiplies block sizes by 1 - alpha (PLB-HAC 3.3: "
     "alpha = 0.1; Algorithm 1's X <- X * k with k = 1 - alpha, applied cumulatively so the "
     "decrease is gradual)."},
    {"step_fraction", 0.05, 1e-6, 1.0,
     "Items of one virtual step (the sum of the x_p), as a fraction of n_items. Not stated in "
     "the paper; hlb's choice."},
};

enum { TRAIN, EXEC };

typedef struct hac {
  const hlb_policy_ctx *ctx;
  double prm[P_COUNT];
  unsigned n;
  hlb__plb_pu *u;
  hlb__plb_ws ws;
  hlb_curve *curves;
  int *usable;
  double *x;
  int phase;
  size_t x_init;
  unsigned *granted, *finished; /* training blocks per PU */
  double *first_rate;           /* items/s of each PU's first block */
  double fastest_first;
  size_t *X;       /* regular block size of each PU */
  size_t *gap;     /* pending gap-filling block, 0 = none */
  unsigned *vstep; /* virtual step of each PU */
  unsigned step;   /* newest virtual step */
  double decay;    /* product of the (1 - alpha) factors so far */
  unsigned scan;   /* PUs below this have finished training (or were retired) */
} hac;

static void hac_fini(void *state) {
  hac *h = state;
  if (!h) return;
  hlb__plb_ws_free(&h->ws);
  free(h->u);
  free(h->curves);
  free(h->usable);
  free(h->x);
  free(h->granted);
  free(h->finished);
  free(h->first_rate);
  free(h->X);
  free(h->gap);
  free(h->vstep);
  free(h);
}

static int hac_init(const hlb_policy_ctx *ctx, void **state) {
  unsigned n = ctx->n_pus;
  hac *h = calloc(1, sizeof *h);
  if (!h) return hlb__error(HLB_ENOMEM, "plb-hac: no memory for %u PUs", n);
  h->ctx = ctx;
  h->n = n;
  memcpy(h->prm, ctx->param, sizeof h->prm);
  h->u = calloc(n, sizeof *h->u);
  h->curves = calloc(n, sizeof *h->curves);
  h->usable = calloc(n, sizeof *h->usable);
  h->x = calloc(n, sizeof *h->x);
  h->granted = calloc(n, sizeof *h->granted);
  h->finished = calloc(n, sizeof *h->finished);
  h->first_rate = calloc(n, sizeof *h->first_rate);
  h->X = calloc(n, sizeof *h->X);
  h->gap = calloc(n, sizeof *h->gap);
  h->vstep = calloc(n, sizeof *h->vstep);
  if (!h->u || !h->curves || !h->usable || !h->x || !h->granted || !h->finished || !h->first_rate ||
      !h->X || !h->gap || !h->vstep || hlb__plb_ws_init(&h->ws, n) != 0) {
    hac_fini(h);
    return hlb__error(HLB_ENOMEM, "plb-hac: no memory for %u PUs", n);
  }
  h->x_init = hlb__plb_round(ctx, h->prm[P_INITIAL] * (double)ctx->n_items / n);
  h->decay = 1.0;
  *state = h;
  return 0;
}

/* determineModel + solveEquationSystem of Algorithm 1, with every sample so far. */
static void model_and_solve(hac *h) {
  int slow = -1;
  for (unsigned p = 0; p < h->n; p++) {
    int r = hlb__plb_refit(h->ctx, p, &h->u[p], (double)h->ctx->n_items);
    h->usable[p] = r >= 0;
    if (r >= 0) {
      h->curves[p] = h->u[p].curve;
      if (slow < 0 || h->u[p].rate < h->u[slow].rate) slow = (int)p;
    }
  }
  /* A PU with only rejected samples is assumed as slow as the slowest one measured. */
  for (unsigned p = 0; p < h->n && slow >= 0; p++)
    if (!h->usable[p]) {
      h->curves[p] = h->curves[slow];
      h->usable[p] = 1;
    }
  double items = h->prm[P_STEP] * (double)h->ctx->n_items;
  unsigned m = hlb__plb_solve(h->ctx, &h->ws, h->curves, h->usable, NULL, items, h->x, NULL);
  for (unsigned p = 0; p < h->n; p++)
    h->X[p] = m ? hlb__plb_round(h->ctx, h->x[p]) : h->x_init;
}

/* A PU only goes from training to trained, or from alive to retired, so the scan resumes
 * where it stopped: O(n) over the whole training, not per call (every waiting PU asks again
 * after each block). */
static int training_over(hac *h) {
  while (h->scan < h->n &&
         (!hlb_balancer_pu_alive(h->ctx->balancer, h->scan) || h->finished[h->scan] >= 2))
    h->scan++;
  return h->scan == h->n;
}

static int exec_next(hac *h, unsigned pu, size_t *count);

static int train_next(hac *h, unsigned pu, size_t *count) {
  if (h->granted[pu] == 0 || (h->granted[pu] == 1 && h->finished[pu] == 0)) {
    h->granted[pu] = 1;
    *count = h->x_init;
    return HLB_GRANT;
  }
  if (h->granted[pu] == 1) {
    double r =
        h->first_rate[pu] > 0 && h->fastest_first > 0 ? h->first_rate[pu] / h->fastest_first : 1.0;
    h->granted[pu] = 2;
    *count = hlb__plb_round(h->ctx, 2.0 * (double)h->x_init * r);
    return HLB_GRANT;
  }
  /* The one synchronisation of PLB-HAC: the first full model needs every PU's two points. */
  if (!training_over(h) && hlb__plb_busy(h->ctx) > 0) return HLB_WAIT;
  h->phase = EXEC;
  return exec_next(h, pu, count);
}

static int exec_next(hac *h, unsigned pu, size_t *count) {
  if (h->gap[pu]) {
    *count = h->gap[pu];
    h->gap[pu] = 0;
    return HLB_GRANT;
  }
  if (h->vstep[pu] >= h->step) {
    /* firstProcessVirtualStep: this PU opens a new step and updates the sizes for all. */
    h->step++;
    model_and_solve(h);
    size_t left = hlb_balancer_remaining(h->ctx->balancer);
    double assigned = (double)(h->ctx->n_items - left);
    if (assigned >= h->prm[P_DECAY_START] * (double)h->ctx->n_items)
      h->decay *= 1.0 - h->prm[P_ALPHA];
  }
  h->vstep[pu]++;
  /* 3.2: "a minimum block size that does not underutilize the GPUs"; the decay stops at the
   * user's initial block size (or the PU's solved size, if smaller). */
  double x = (double)h->X[pu] * h->decay;
  double floor_x = (double)(h->x_init < h->X[pu] ? h->x_init : h->X[pu]);
  *count = hlb__plb_round(h->ctx, x > floor_x ? x : floor_x);
  return HLB_GRANT;
}

static int hac_next(void *state, unsigned pu, double now, size_t *count) {
  hac *h = state;
  (void)now;
  if (pu >= h->n) return hlb__error(HLB_EINVAL, "plb-hac: pu %u out of range (%u PUs)", pu, h->n);
  return h->phase == TRAIN ? train_next(h, pu, count) : exec_next(h, pu, count);
}

static void hac_done(void *state, unsigned pu, const hlb_sample *s) {
  hac *h = state;
  if (pu >= h->n) return;
  hlb__plb_observe(&h->u[pu], s);
  int ok = hlb__plb_sample_ok(s);
  if (h->phase == TRAIN) {
    if (h->finished[pu] == 0 && ok) {
      h->first_rate[pu] = (double)s->block.count / hlb__plb_sample_s(s);
      if (h->first_rate[pu] > h->fastest_first) h->fastest_first = h->first_rate[pu];
    }
    h->finished[pu]++;
    return;
  }
  if (!ok || !h->usable[pu] || hlb_balancer_remaining(h->ctx->balancer) == 0) return;
  /* Gap filling (3.3): the block ended early by more than the threshold; fill the time the
   * model expected it to take with one more block. */
  double early = hlb_curve_time(&h->curves[pu], (double)s->block.count) - hlb__plb_sample_s(s);
  if (early >= h->prm[P_GAP] && early > 0) {
    double x = hlb__plb_inverse(&h->curves[pu], early, (double)h->ctx->n_items);
    if (x >= 1.0) h->gap[pu] = hlb__plb_round(h->ctx, x);
  }
}

static void hac_failed(void *state, unsigned pu, const hlb_block *blk) {
  hac *h = state;
  (void)blk;
  /* A lost training block counts as finished without a measurement, so the synchronisation
   * after training does not wait for it. */
  if (pu < h->n && h->phase == TRAIN && h->finished[pu] < h->granted[pu]) h->finished[pu]++;
}

const hlb_policy_ops hlb__policy_plb_hac = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "plb-hac",
    .description = "PLB-HAC: asynchronous virtual steps re-solved by the first idle PU, "
                   "gap-filling blocks (400 ms), sizes decaying after 70 % of the data",
    .params = hac_params,
    .n_params = P_COUNT,
    .init = hac_init,
    .next = hac_next,
    .done = hac_done,
    .failed = hac_failed,
    .retired = NULL,
    .fini = hac_fini,
};
