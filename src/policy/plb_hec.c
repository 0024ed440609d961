/* plb-hec: PLB-HeC (Sant'Ana, Camargo, Cordeiro; CLUSTER 2015), section III.
 *
 * 1. Training (III.B, Algorithm 1): synchronous rounds. Round 0 gives every PU a block of
 *    initialBlockSize; round r > 0 gives PU k initialBlockSize * 2^r * t_f / t_k, t_f / t_k
 *    being k's speed in its last round relative to the fastest PU (for equal blocks, exactly
 *    the paper's ratio of finish times). After four rounds the models are fitted; training
 *    goes on, one more round at a time, until every PU's R^2 >= 0.7 or 20 % of the data went
 *    to training.
 * 2. Block size selection (III.C): the equal-finish-time split of one step's worth of items
 *    (hlb_eft_solve instead of IPOPT; same optimum for non-decreasing curves).
 * 3. Execution and rebalancing (III.D, Algorithm 2): each PU gets blocks of its size, without
 *    synchronisation, until the blocks' execution times differ by more than 10 % of a block's
 *    time. Then the PU that noticed gets one more block, every other PU waits (HLB_WAIT) until
 *    nothing is in flight, the models are refitted with every sample and the split re-solved.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/plb_common.h"

enum { P_INITIAL, P_ROUNDS, P_R2, P_TRAIN_MAX, P_THRESHOLD, P_STEP, P_TAIL, P_COUNT };

static const hlb_param_def hec_params[P_COUNT] = {
    {"initial_fraction", 0.002, 1e-9, 1.0,
     "initialBlockSize as a fraction of n_items / n_pus. PLB-HeC V.A chose it per application "
     "so that the initial phase takes about 10 % of the run time. Round 0 gives every PU the "
     "same size, so with a 10-30x speed spread the slowest PU sets the pace of each round; "
     "0.002 keeps training near 10 % of the time on the papers' clusters (0.1 / 15, 10 % of "
     "the data, takes 20-30 %)."},
    {"train_rounds", 4, 2, 16,
     "Training rounds before the first fit, block multipliers 1, 2, 4, 8 (PLB-HeC III.B, "
     "Algorithm 1: four points)."},
    {"r2_min", 0.7, 0.0, 1.0,
     "Training ends when every PU's fit has R^2 >= this (PLB-HeC III.B: 0.7)."},
    {"train_max_fraction", 0.2, 0.0, 1.0,
     "... or when this fraction of the data went to training (PLB-HeC III.B: 20 %)."},
    {"rebalance_threshold", 0.1, 0.0, 10.0,
     "Rebalance when the blocks' execution times differ by more than this fraction of a "
     "block's time (PLB-HeC III.D and V.A: 10 %)."},
    {"step_fraction", 0.05, 1e-6, 1.0,
     "Items of one round of equal-time blocks, as a fraction of n_items. Not in the paper "
     "(its x_g are fractions of an unstated amount); hlb's choice."},
    {"tail_solve", 1, 0, 1,
     "1: when less than one round of blocks is left, split the rest once by equal finish "
     "time with the busy PUs' ready times (hlb addition, not in the paper); 0: paper-strict."},
};

enum { TRAIN, EXEC };

typedef struct hec {
  const hlb_policy_ctx *ctx;
  double prm[P_COUNT];
  unsigned n;
  hlb__plb_pu *u;
  hlb__plb_ws ws;
  hlb_curve *curves;
  int *usable;
  double *x, *ready;
  double *last_rate; /* items/s of each PU's latest accepted training block */
  int phase;
  int round;
  size_t x_init;
  int *granted_round, *done_round;
  size_t *round_size;
  double train_items;
  size_t *X; /* block size of each PU in the execution phase */
  int rebalance;
  unsigned exempt;
  double epoch_start;
  double *dur_sum;
  unsigned *dur_n;
  hlb__plb_minmax spread; /* each PU's mean dur_sum / dur_n this epoch */
  size_t step_sum;        /* sum of X over the alive PUs */
  unsigned round_scan;    /* PUs below this are known done with the round (or retired) */
  int tail_done;
} hec;

static void hec_fini(void *state) {
  hec *h = state;
  if (!h) return;
  hlb__plb_ws_free(&h->ws);
  free(h->u);
  free(h->curves);
  free(h->usable);
  free(h->x);
  free(h->ready);
  free(h->last_rate);
  free(h->granted_round);
  free(h->done_round);
  free(h->round_size);
  free(h->X);
  free(h->dur_sum);
  free(h->dur_n);
  hlb__plb_minmax_free(&h->spread);
  free(h);
}

static int hec_init(const hlb_policy_ctx *ctx, void **state) {
  unsigned n = ctx->n_pus;
  hec *h = calloc(1, sizeof *h);
  if (!h) return hlb__error(HLB_ENOMEM, "plb-hec: no memory for %u PUs", n);
  h->ctx = ctx;
  h->n = n;
  memcpy(h->prm, ctx->param, sizeof h->prm);
  h->u = calloc(n, sizeof *h->u);
  h->curves = calloc(n, sizeof *h->curves);
  h->usable = calloc(n, sizeof *h->usable);
  h->x = calloc(n, sizeof *h->x);
  h->ready = calloc(n, sizeof *h->ready);
  h->last_rate = calloc(n, sizeof *h->last_rate);
  h->granted_round = calloc(n, sizeof *h->granted_round);
  h->done_round = calloc(n, sizeof *h->done_round);
  h->round_size = calloc(n, sizeof *h->round_size);
  h->X = calloc(n, sizeof *h->X);
  h->dur_sum = calloc(n, sizeof *h->dur_sum);
  h->dur_n = calloc(n, sizeof *h->dur_n);
  if (!h->u || !h->curves || !h->usable || !h->x || !h->ready || !h->last_rate ||
      !h->granted_round || !h->done_round || !h->round_size || !h->X || !h->dur_sum || !h->dur_n ||
      hlb__plb_ws_init(&h->ws, n) != 0 || hlb__plb_minmax_init(&h->spread, n) != 0) {
    hec_fini(h);
    return hlb__error(HLB_ENOMEM, "plb-hec: no memory for %u PUs", n);
  }
  double x0 = h->prm[P_INITIAL] * (double)ctx->n_items / n;
  h->x_init = hlb__plb_round(ctx, x0);
  for (unsigned p = 0; p < n; p++) {
    h->granted_round[p] = -1;
    h->done_round[p] = -1;
    h->round_size[p] = h->x_init;
  }
  h->exempt = UINT_MAX;
  *state = h;
  return 0;
}

/* Sizes of training round h->round: x_init * 2^round * (speed / fastest speed). */
static void set_round_sizes(hec *h) {
  double fastest = 0.0, slowest = INFINITY;
  for (unsigned p = 0; p < h->n; p++) {
    if (h->last_rate[p] > fastest) fastest = h->last_rate[p];
    if (h->last_rate[p] > 0 && h->last_rate[p] < slowest) slowest = h->last_rate[p];
  }
  double mult = ldexp(1.0, h->round);
  h->round_scan = 0;
  for (unsigned p = 0; p < h->n; p++) {
    /* A PU with no usable measurement yet is treated like the slowest one measured. */
    double r = h->last_rate[p] > 0 ? h->last_rate[p] : slowest;
    double ratio = fastest > 0 && isfinite(r) ? r / fastest : 1.0;
    h->round_size[p] = hlb__plb_round(h->ctx, (double)h->x_init * mult * ratio);
  }
}

static void refit_all(hec *h) {
  for (unsigned p = 0; p < h->n; p++) {
    int r = hlb__plb_refit(h->ctx, p, &h->u[p], (double)h->ctx->n_items);
    h->usable[p] = r >= 0;
    if (r >= 0) h->curves[p] = h->u[p].curve;
  }
}

/* Give PUs without any estimate (only rejected samples so far) the slowest known curve, so
 * they still get blocks and their next sample can teach us their speed. */
static void cover_unknown(hec *h) {
  int slow = -1;
  for (unsigned p = 0; p < h->n; p++)
    if (h->usable[p] && (slow < 0 || h->u[p].rate < h->u[slow].rate)) slow = (int)p;
  for (unsigned p = 0; p < h->n && slow >= 0; p++)
    if (!h->usable[p]) {
      h->curves[p] = h->curves[slow];
      h->usable[p] = 1;
    }
}

/* Re-solve the execution block sizes for `items`; busy PUs count with their ready times. */
static void solve_sizes(hec *h, double items, double now, int with_ready) {
  cover_unknown(h);
  for (unsigned p = 0; p < h->n; p++)
    h->ready[p] =
        with_ready && h->usable[p] ? hlb__plb_ready_in(h->ctx, p, &h->curves[p], now) : 0.0;
  unsigned m = hlb__plb_solve(h->ctx, &h->ws, h->curves, h->usable, h->ready, items, h->x, NULL);
  h->step_sum = 0;
  for (unsigned p = 0; p < h->n; p++) {
    h->X[p] = m ? hlb__plb_round(h->ctx, h->x[p]) : h->x_init;
    if (hlb_balancer_pu_alive(h->ctx->balancer, p)) h->step_sum += h->X[p];
  }
}

static void start_epoch(hec *h, double now) {
  h->epoch_start = now;
  for (unsigned p = 0; p < h->n; p++) {
    h->dur_sum[p] = 0.0;
    h->dur_n[p] = 0;
  }
  hlb__plb_minmax_clear(&h->spread);
}

static void enter_exec(hec *h, double now) {
  h->phase = EXEC;
  solve_sizes(h, h->prm[P_STEP] * (double)h->ctx->n_items, now, 0);
  start_epoch(h, now);
}

/* Algorithm 1's loop condition: every PU fitted with R^2 >= r2_min. */
static int fits_good(hec *h) {
  for (unsigned p = 0; p < h->n; p++) {
    if (!hlb_balancer_pu_alive(h->ctx->balancer, p)) continue;
    double r2 = hlb__plb_r2(h->ctx, p);
    if (!h->u[p].fitted || !(r2 >= h->prm[P_R2])) return 0;
  }
  return 1;
}

static void end_round(hec *h, double now) {
  int last = h->round + 1 >= (int)h->prm[P_ROUNDS];
  int capped = h->train_items >= h->prm[P_TRAIN_MAX] * (double)h->ctx->n_items;
  if (last || capped) {
    refit_all(h);
    if (capped || fits_good(h)) {
      enter_exec(h, now);
      return;
    }
  }
  h->round++;
  set_round_sizes(h);
}

/* Within a round a PU only goes from not done to done, or from alive to retired, so the scan
 * resumes where it stopped: O(n) per round, not per call (a thousand waiting PUs ask again
 * after every block). */
static int round_complete(hec *h) {
  while (h->round_scan < h->n && (!hlb_balancer_pu_alive(h->ctx->balancer, h->round_scan) ||
                                  h->done_round[h->round_scan] >= h->round))
    h->round_scan++;
  return h->round_scan == h->n;
}

static int exec_next(hec *h, unsigned pu, double now, size_t *count);

static int train_next(hec *h, unsigned pu, double now, size_t *count) {
  if (h->granted_round[pu] < h->round) {
    h->granted_round[pu] = h->round;
    *count = h->round_size[pu];
    h->train_items += (double)*count;
    return HLB_GRANT;
  }
  /* Algorithm 1 executes each round as a whole: wait for the others, unless nothing is in
   * flight (a PU that never asks must not hold the others forever). */
  if (!round_complete(h) && hlb__plb_busy(h->ctx) > 0) return HLB_WAIT;
  end_round(h, now);
  if (h->phase == EXEC) return exec_next(h, pu, now, count);
  return train_next(h, pu, now, count);
}

static int exec_next(hec *h, unsigned pu, double now, size_t *count) {
  if (h->rebalance) {
    if (pu == h->exempt) {
      /* III.D: the PU that detected the imbalance gets a block, not an idle wait. */
      h->exempt = UINT_MAX;
      *count = h->X[pu];
      return HLB_GRANT;
    }
    if (hlb__plb_busy(h->ctx) > 0)
      return HLB_WAIT; /* synchronise: let every block in flight finish */
    refit_all(h);
    solve_sizes(h, h->prm[P_STEP] * (double)h->ctx->n_items, now, 0);
    start_epoch(h, now);
    h->rebalance = 0;
    h->exempt = UINT_MAX;
  }
  size_t left = hlb_balancer_remaining(h->ctx->balancer);
  if (h->prm[P_TAIL] != 0 && !h->tail_done && left < h->step_sum) {
    h->tail_done = 1;
    refit_all(h);
    solve_sizes(h, (double)left, now, 1);
  }
  *count = h->X[pu];
  return HLB_GRANT;
}

static int hec_next(void *state, unsigned pu, double now, size_t *count) {
  hec *h = state;
  if (pu >= h->n) return hlb__error(HLB_EINVAL, "plb-hec: pu %u out of range (%u PUs)", pu, h->n);
  return h->phase == TRAIN ? train_next(h, pu, now, count) : exec_next(h, pu, now, count);
}

/* III.D: rebalance when the blocks' times differ by more than the threshold times a block's
 * time. Blocks were sized to take the same predicted time, so this compares each PU's mean
 * measured / predicted ratio over the epoch. The compute part is compared with the model's
 * F alone: the measured transfer includes queueing on a shared link, which is worst right
 * after a synchronisation (everyone sends at once) and which no new split can remove. */
static void check_spread(hec *h, unsigned pu) {
  double lo, hi;
  hlb__plb_minmax_set(&h->spread, pu, h->dur_sum[pu] / h->dur_n[pu]);
  hlb__plb_minmax_range(&h->spread, &lo, &hi);
  /* hi - lo > threshold >= 0 needs two PUs with different means, as the scan did. */
  if (hi - lo > h->prm[P_THRESHOLD]) {
    h->rebalance = 1;
    h->exempt = pu;
  }
}

/* Measured / predicted time of a block (see check_spread); NaN when there is no prediction. */
static double block_ratio(const hec *h, unsigned pu, const hlb_sample *s) {
  const hlb_curve *c = &h->curves[pu];
  double x = (double)s->block.count;
  if (h->u[pu].fitted) {
    double f = hlb_curve_compute(c, x);
    return f > 0 ? s->compute_s / f : NAN;
  }
  double t = hlb_curve_time(c, x);
  return t > 0 ? hlb__plb_sample_s(s) / t : NAN;
}

static void hec_done(void *state, unsigned pu, const hlb_sample *s) {
  hec *h = state;
  if (pu >= h->n) return;
  hlb__plb_observe(&h->u[pu], s);
  int ok = hlb__plb_sample_ok(s);
  if (h->phase == TRAIN) {
    if (ok) h->last_rate[pu] = (double)s->block.count / hlb__plb_sample_s(s);
    h->done_round[pu] = h->granted_round[pu];
    return;
  }
  /* Only equal-time blocks of this epoch say whether the split is balanced: not the tail,
   * and not the pool's last, clipped block. */
  if (!ok || h->rebalance || h->tail_done || s->block.granted_s < h->epoch_start ||
      2 * s->block.count < h->X[pu])
    return;
  double ratio = block_ratio(h, pu, s);
  if (!isfinite(ratio)) return;
  h->dur_sum[pu] += ratio;
  h->dur_n[pu]++;
  check_spread(h, pu);
}

static void hec_failed(void *state, unsigned pu, const hlb_block *blk) {
  hec *h = state;
  (void)blk;
  /* A lost training block ends the PU's round without a measurement; its items are back in
   * the pool. */
  if (pu < h->n && h->phase == TRAIN) h->done_round[pu] = h->granted_round[pu];
}

/* A retired PU takes no part in the step or in the spread any more. */
static void hec_retired(void *state, unsigned pu) {
  hec *h = state;
  if (pu >= h->n) return;
  if (h->phase == EXEC) h->step_sum -= h->step_sum >= h->X[pu] ? h->X[pu] : h->step_sum;
  hlb__plb_minmax_remove(&h->spread, pu);
}

const hlb_policy_ops hlb__policy_plb_hec = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "plb-hec",
    .description = "PLB-HeC: training rounds x2/x4/x8, equal-time blocks, synchronising "
                   "rebalance when block times differ by > 10 %",
    .params = hec_params,
    .n_params = P_COUNT,
    .init = hec_init,
    .next = hec_next,
    .done = hec_done,
    .failed = hec_failed,
    .retired = hec_retired,
    .fini = hec_fini,
};
