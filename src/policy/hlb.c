/* hlb: hlb's own default policy. It keeps the PLB papers' core (per-PU curves fitted by least
 * squares, equal-finish-time split; PLB-HeC III.C, PLB-HAC 3.2) and fixes their weak spots:
 *
 * - No synchronisation, no training rounds: each PU's first block is a small probe; after
 *   that it is planned like every other block, its size capped at `grow` times the largest
 *   block the PU has completed, so a young model is never trusted far beyond its data
 *   (`tail_grow` times near the end, in a pass that starts from measured item costs, and
 *   for a PU that starts from an earlier run's blocks).
 * - Until the model can be fitted, a PU's curve is the least-squares line through its
 *   samples (fixed cost + cost per item), not its mean rate: the mean rate of small blocks
 *   carries their fixed cost into the cost per item and hides the fixed cost itself, so the
 *   PU looks slow and gets small blocks that keep it looking slow.
 * - Every plan is the equal-finish-time split of the items still in the pool, with the busy
 *   PUs' predicted ready times (PLB-HAC solves a fixed step instead and needs gap filling and
 *   a 70 % decay to repair the end). A PU gets `fraction` of its share, so blocks shrink
 *   geometrically towards a common finish time and the last ones are small; but never below
 *   a size that keeps the curve's fixed cost per block (not the time of a granule) under
 *   `overhead_max` of the block. A PU's last block is its share rounded down, never up,
 *   unless what that leaves would cost a block of its own more than this one (take_rest).
 * - A misprediction guard (tail_idle, guarded_size) keeps each block small enough that a miss
 *   as bad as the PU's recent ones, or the run's, cannot leave the others idle long at the end,
 *   and that a miss as bad as the run's worst (note_worst_miss) still ends near the finish;
 *   it does not shave a last block by less than a block's fixed cost (cut_pays), and may cut a
 *   last block larger than any the PU has run back to the largest, below the amortising floor.
 *   In a run without item costs a PU whose curve missed beyond prior_tolerance stays distrusted
 *   for the run (note_uneven): items that do not cost the same. A distrusted PU is not cut below
 *   its flat size, or twice that where its curve agrees (flat_floor), unless items said to vary
 *   may explain that size and its block could end past the finish (flat_may_be_dear_items).
 * - block_budget: where the caller says the items' costs vary (hlb_codelet.items_vary, a
 *   simulated cost_map.declared) and no pass measured them before, no block is planned longer than
 * that share of the predicted makespan unless its fixed cost needs more; it keeps a slow PU out of
 *   dear items nobody has met yet (budget_size).
 * - The end is discrete: when fewer granules are left than the split can place, a PU whose
 *   share is under a granule works unless the busy PUs would finish every granule left
 *   before it finishes one (earliest completion, as greedy does by accident). Where the items
 *   are said to vary, a PU whose guard leaves less than a granule also waits while one granule,
 *   at its dearest recent time per item, would end past the finish (dear_granule_ends_late).
 *   In a pass sized by measured item costs, a PU waits rather than take one known dear item that
 *   would end past the finish (dear_item_ends_late).
 * - Models are fitted rarely (each time a PU's sample count grows by `refit_growth`); in
 *   between, a per-PU correction factor (exponentially weighted ratio of measured to
 *   predicted times) follows slowdowns and speed-ups within a few blocks.
 * - Rejected samples teach nothing and stop nothing; lost blocks go back to the pool and the
 *   plan is redone; a PU is kept waiting only at the very end, when even its smallest block
 *   would finish after the others and someone else is still busy.
 * - Cost: the split is re-solved once per n/16 grants, a changed estimate (a PU's first
 *   sample, or a correction that moved by more than 10 %) counting as four grants; below 80
 *   PUs that means every change re-solves at once. A decision thus costs O(1) amortised plus
 *   its share of the solve, about 16 curve evaluations per solver iteration at any n. (Every
 *   change re-solving at once cost O(n) per decision: at 10^4 PUs, 10^4 first samples alone
 *   made 10^4 solves.) A PU's own block always uses its newest curve against the last
 *   solve's common finish time.
 * - Priors (samples an earlier run stored, hlb_balancer_config.prior) are learnt like
 *   finished blocks, so a PU with priors plans its first block instead of probing. They are
 *   not trusted blindly: if the median of measured / predicted time over the PU's first
 *   `prior_check` blocks after its first is beyond `prior_tolerance` either way (the machine
 *   is loaded, the device changed), the PU forgets its priors, model included, and relearns
 *   from this run's blocks alone. Before that, at its first grant, priors that do not fit
 *   the curve they give (items that do not cost the same, stored without the item costs that
 *   explain them) are forgotten at once (check_prior_fit). Its first block of the run may
 *   carry one-time work (a GPU library's set-up) and moves neither the check nor the
 *   correction (hlb_done). Priors do not count for best_block (see learn).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/plb_common.h"

enum {
  P_PROBE,
  P_FRACTION,
  P_GROW,
  P_SMOOTH,
  P_MIN,
  P_OVERHEAD,
  P_REFIT,
  P_PRIOR_CHECK,
  P_PRIOR_TOL,
  P_TAIL,
  P_BEST,
  P_BEST_SLACK,
  P_TAIL_GROW,
  P_BUDGET,
  P_COUNT
};

static const hlb_param_def hlb_params[P_COUNT] = {
    {"probe_fraction", 0.002, 1e-9, 1.0,
     "Size of each PU's first block, as a fraction of n_items / n_pus."},
    {"fraction", 0.35, 0.01, 1.0,
     "Each block is this fraction of the PU's equal-finish-time share of the remaining items."},
    {"grow", 4.0, 1.0, 1e6,
     "A block is at most this many times the largest block the PU has completed."},
    {"smoothing", 0.4, 0.01, 1.0,
     "Weight of the newest block in the per-PU correction factor (1 = newest only)."},
    {"min_fraction", 0.01, 0.0, 1.0,
     "Smallest block before the PU's last one, as a fraction of n_items / n_pus."},
    {"overhead_max", 0.05, 1e-4, 1.0,
     "Blocks are kept large enough that the curve's fixed cost is at most this fraction of the "
     "block's time (except a PU's last block)."},
    {"refit_growth", 1.5, 1.01, 100.0,
     "Refit a PU's model when its accepted samples grew by this factor since the last fit."},
    {"prior_check", 3, 1, 8,
     "Blocks of this run, after its first, against which an earlier run's stored samples "
     "(priors) are checked: 3, the smallest count with a median that one odd block cannot "
     "move."},
    {"prior_tolerance", 1.5, 1.01, 100.0,
     "Priors are forgotten when the median measured / predicted time of the prior_check "
     "blocks after a PU's first is beyond this factor either way (the report's 1.5x band); "
     "in a run without item costs, also when the median of the priors' own misses against "
     "their curve is (items that do not cost the same, stored without what explains them)."},
    {"tail_idle", 0.02, 0.0, 1.0,
     "Misprediction guard: a block is kept small enough that, mispredicted as badly as the "
     "PU's recent blocks were (the mean over the last 8, or over the run's last 8 on any PU "
     "when worse), it leaves the others idle at most this fraction of the predicted makespan, "
     "and that, late as badly as the run's worst block, it ends at most this fraction of the "
     "predicted makespan after the common finish (0: no guard)."},
    {"best_block", 1, 0, 1,
     "1: once a PU's blocks of some size measured more than 10 % dearer per item than "
     "smaller ones (quadratic, cubic or x ln x terms: a best size y*, the argmin of time / "
     "size), its blocks are capped near y*, and the split counts its share as done in such "
     "blocks (not in passes sized by item costs, nor in a first pass over items said to "
     "vary: there a dearer size met dearer items); 0: off."},
    {"best_block_slack", 0.02, 0.0, 1.0,
     "With best_block: the cap is the largest size whose time per item is at most this "
     "fraction above the best (fewer, larger blocks for a cost per item that is nearly the "
     "same)."},
    {"tail_grow", 1.5, 1.0, 1e6,
     "A block predicted to take more than half the time left to the common finish, or any "
     "block of a pass that starts from item costs an earlier pass measured or of a PU that "
     "starts from an earlier run's blocks, is at most this many times the largest block the PU "
     "has completed (grow for the others)."},
    {"block_budget", 0.02, 0.0, 1.0,
     "Where the items' costs are said to vary (the codelet's items_vary; a simulated cost_map "
     "with declared true), or a PU of a run without stored blocks was found to miss its curve "
     "beyond prior_tolerance, and no earlier pass measured them, no block is planned longer than "
     "this fraction of the predicted makespan, unless its fixed cost needs more (overhead_max): "
     "a slow PU's block that meets dear items nobody has met yet cannot run far past the others "
     "(the random spikes map over 20 map seeds, 10^5 items: 1.22 -> 1.07 x the bound, above "
     "greedy on 0 maps instead of 4; not declared, 1.22 -> 1.18). 0: off. Items neither said nor "
     "found to vary are never held."},
};

#define RING 8 /* recent samples kept per PU to restart the correction after a refit */
/* Recent mispredictions kept per PU for the guard: 8 blocks, so one odd block is remembered for
 * a while but a PU that became predictable is trusted again within a few blocks. */
#define MISS_RING 8
/* Recent mispredictions |ln(measured / predicted)|, newest over the oldest. */
typedef struct miss_ring {
  double v[MISS_RING];
  unsigned n, at;
} miss_ring;
/* An overrun shorter than this is the host's timing noise, not the items' cost: on the 2-core VM
 * of docs/benchmarks.md, `perf sched` showed 2-4 ms scheduling delays, and the mandelbrot app's
 * runs had blocks of 0.1-0.5 ms that took 10-23x their prediction, 2-8 ms late. Counted as a
 * worst miss (note_worst_miss), they held every block of the run to a twentieth of the time left:
 * 1.8x the blocks, the first runs 2 % slower. */
#define TIMING_NOISE_S 0.01
#define BINS 40  /* best_block: octaves of block size, 1 to 2^40 items */
#define RISE 0.1 /* best_block: the rise per item that shows a superlinear curve (see there) */
/* How far a dearer time per item must be beyond the spread of the times per item within one
 * octave (their coefficient of variation, pooled) to count in largest_size_dear and in a
 * cap read off priors (find_best_block). */
#define DEAR_SPREAD 2.0
/* A larger octave this much dearer per item than the best, the best being the smallest size a
 * PU measured, is a wall past its best size that the sizes below may still hold (octave_cap):
 * a rise of 50 %, five times RISE's, beyond what a node link's queueing or items of other costs
 * made of affine PUs' blocks (the presets unchanged with it). */
#define WALL_RISE 1.5
/* In a pass that starts from measured item costs or from priors, a block that would take over
 * half the time left grows at most this much past the PU's largest (hlb_next): a size within the
 * timing noise of one measured (5 % more items, a cubic term 16 % dearer), so no wall the
 * largest did not show, yet enough that a share a few items over the largest is not cut into a
 * block and a lone remainder that pays the fixed cost again (the throttled pair of
 * tests/unit/sim/test_sim.c: 0.4903 s held to the largest, 0.4871 with 5 %). */
#define NEAR_END_GROW 1.05

/* Sums per octave of block size (2^k <= x < 2^(k+1)): items, seconds, blocks and squared times
 * per item. */
typedef struct octave_sums {
  double x[BINS], t[BINS], r2[BINS];
  unsigned n[BINS];
} octave_sums;

typedef struct hpu {
  hlb__plb_pu u;
  double corr;         /* measured / base-curve time, exponentially weighted */
  size_t next_fit;     /* refit when u.good reaches this */
  double ring_x[RING]; /* recent accepted samples (items, seconds) */
  double ring_t[RING];
  unsigned ring_n, ring_at;
  unsigned probes;            /* blocks granted before the first accepted sample */
  size_t priors;              /* samples learnt from an earlier run; 0 once they are forgotten */
  unsigned checked;           /* this run's blocks compared with the priors' prediction */
  double check_ratio[8];      /* measured / predicted time of each (prior_check <= 8) */
  hlb_sample check_sample[8]; /* and the blocks themselves, to relearn from */
  unsigned forgot;            /* 1 once priors were found wrong and dropped */
  unsigned finished;          /* this run's blocks the PU finished (accepted samples) */
  int uneven;                 /* without item costs, its compute missed beyond prior_tolerance */
  miss_ring miss;             /* of the PU's recent blocks (the guard) */
  double min_t;               /* the shortest accepted block time: >= the fixed cost */
  double flat_x;              /* the largest block whose time did not follow its size (note_flat) */
  /* Priors' sizes and times, kept until the PU's first grant (check_prior_fit); freed then. */
  double *prior_x, *prior_t;
  size_t prior_n, prior_cap;
  double ycap;      /* best_block: cap on the PU's blocks (a cost), 0 when none (see best_block) */
  octave_sums bins; /* best_block: this run's own blocks */
  octave_sums all;  /* every sample, an earlier pass's included (largest_size_dear) */
  octave_sums computed; /* the same in compute time alone (a cap read off priors) */
  int largest_dear;     /* largest_size_dear, kept by learn: only it changes sums and sizes */
} hpu;

typedef struct hlbp {
  const hlb_policy_ctx *ctx;
  double prm[P_COUNT];
  unsigned n;
  hpu *pu;
  hlb__plb_ws ws;
  hlb_curve *curves;      /* effective curve (base * corr) of each PU for the solve */
  unsigned char *current; /* curves[p] is PU p's base * corr, uncapped, as it is now */
  int *usable;
  double *ready, *x;
  double target;    /* predicted common finish time of the last solve (driver's clock) */
  int planned;      /* target is valid */
  unsigned since;   /* grants since the last solve */
  unsigned changed; /* estimates that moved since the last solve */
  double plan_rate; /* cost in average items per second the last solve planned for */
  double t0;        /* the first grant's time: the start of the predicted makespan */
  int started;
  miss_ring run_miss; /* of this run's recent blocks on any PU (the guard) */
  int found_uneven;   /* a PU of this pass was found uneven (note_uneven): its items vary */
  int any_priors;     /* a PU started from an earlier run's blocks (hlb_prior): found_not_said */
  double worst_late;  /* the largest measured / predicted time of an overrun seen, 0 with none
                       * (note_worst_miss) */
} hlbp;

static void check_prior_fit(hlbp *h, unsigned p);
static void forget_priors(hlbp *h, unsigned p);

static void drop_priors_kept(hpu *q) {
  free(q->prior_x);
  free(q->prior_t);
  q->prior_x = q->prior_t = NULL;
  q->prior_n = q->prior_cap = 0;
}

static void hlb_fini(void *state) {
  hlbp *h = state;
  if (!h) return;
  hlb__plb_ws_free(&h->ws);
  for (unsigned p = 0; h->pu && p < h->n; p++)
    drop_priors_kept(&h->pu[p]);
  free(h->pu);
  free(h->curves);
  free(h->current);
  free(h->usable);
  free(h->ready);
  free(h->x);
  free(h);
}

static int hlb_init(const hlb_policy_ctx *ctx, void **state) {
  unsigned n = ctx->n_pus;
  hlbp *h = calloc(1, sizeof *h);
  if (!h) return hlb__error(HLB_ENOMEM, "hlb: no memory for %u PUs", n);
  h->ctx = ctx;
  h->n = n;
  memcpy(h->prm, ctx->param, sizeof h->prm);
  h->pu = calloc(n, sizeof *h->pu);
  h->curves = calloc(n, sizeof *h->curves);
  h->current = calloc(n, sizeof *h->current);
  h->usable = calloc(n, sizeof *h->usable);
  h->ready = calloc(n, sizeof *h->ready);
  h->x = calloc(n, sizeof *h->x);
  if (!h->pu || !h->curves || !h->current || !h->usable || !h->ready || !h->x ||
      hlb__plb_ws_init(&h->ws, n) != 0) {
    hlb_fini(h);
    return hlb__error(HLB_ENOMEM, "hlb: no memory for %u PUs", n);
  }
  for (unsigned p = 0; p < n; p++) {
    h->pu[p].corr = 1.0;
    h->pu[p].next_fit = 3;
  }
  *state = h;
  return 0;
}

static double base_time(const hpu *q, double x) {
  return hlb_curve_time(&q->u.curve, x);
}

/* The correction factor over the recent samples, newest weighted most, against the current
 * base curve (used after a refit changed the base). */
static void recompute_corr(hlbp *h, hpu *q) {
  double w = 1.0, sw = 0.0, s = 0.0, keep = 1.0 - h->prm[P_SMOOTH];
  for (unsigned i = 0; i < q->ring_n; i++) {
    unsigned k = (q->ring_at + RING - 1 - i) % RING;
    double b = base_time(q, q->ring_x[k]);
    if (b > 0 && isfinite(b)) {
      s += w * q->ring_t[k] / b;
      sw += w;
    }
    w *= keep;
  }
  q->corr = sw > 0 ? s / sw : 1.0;
}

/* How far off the estimate was for a block (the base curve times the correction, as next()
 * planned it): |ln(measured / predicted)|, kept for the misprediction guard. */
static void note_miss(miss_ring *m, double predicted, double t) {
  if (!(predicted > 0) || !(t > 0) || !isfinite(predicted)) return;
  m->v[m->at] = fabs(log(t / predicted));
  m->at = (m->at + 1) % MISS_RING;
  if (m->n < MISS_RING) m->n++;
}

/* The run's worst overrun so far: the largest measured / predicted time of a block predicted by a
 * line or a fit, this run's or a stored one (a prior), late by more than timing noise. The guard
 * keeps every block able to end in time even if it overran as badly (guarded_size). */
static void note_worst_miss(hlbp *h, double predicted, double t) {
  if (!(predicted > 0) || !isfinite(predicted) || !isfinite(t) || t - predicted < TIMING_NOISE_S)
    return;
  h->worst_late = fmax(h->worst_late, t / predicted);
}

/* The mean of the ring's misses (0 with none). */
static double mean_miss(const miss_ring *m) {
  double sum = 0;
  for (unsigned i = 0; i < m->n; i++)
    sum += m->v[i];
  return m->n ? sum / m->n : 0.0;
}

/* 1 when the PU's recent blocks miss by more than prior_tolerance on average (the report's 1.5x
 * band). */
static int beyond_band(const hlbp *h, const hpu *q) {
  return mean_miss(&q->miss) > log(h->prm[P_PRIOR_TOL]);
}

/* 1 when the PU's curve is a line through two sizes apart or a fit, not the mean rate of a
 * probe or two. */
static int shaped(const hpu *q) {
  hlb_curve line;
  return q->u.fitted || hlb__plb_affine_curve(&q->u, &line);
}

/* Items that do not cost the same show as misses no curve of the block's size can explain; once
 * a PU's mean miss is beyond prior_tolerance in a run without item costs, its curve is not
 * trusted for the rest of the run (guard_floor, guarded_size). Only misses of a line or a fit
 * (a prediction from the mean rate of two probes is training), and only where its compute dominates
 * the block: a transfer that queued behind other senders on a shared link is no item's cost
 * (Boinski's Jacobi systems, 2 MB each: a 20-system block took 110 s against 49 s predicted).
 * With item costs the curve is in costs that explain them, and the flag stays off (see
 * guarded_size); so it does in a pass whose item costs are on trial: the items were measured
 * before, and on an H100 host's sub-millisecond blocks the flag read scheduling noise as uneven
 * items: k-means and spmv runs of 2 000-22 000 blocks, 4-50x the runs sized by costs. */
static void note_uneven(hlbp *h, hpu *q, const hlb_sample *s) {
  if (hlb_balancer_items_measured(h->ctx->balancer) || !(s->compute_s >= s->transfer_s)) return;
  if (beyond_band(h, q)) q->uneven = 1, h->found_uneven = 1;
}

/* 1 in a pass whose items an earlier pass measured, unless that pass's costs are on trial and
 * both they and this pass's blocks say the items cost the same (hlb_balancer_items_look_uniform).
 * best_block's cap is then set as in a first pass. Without that exception it was off in every
 * later pass over `bench_sim superlinear`'s clusters, and a quadratic PU's blocks grew to 575
 * items against its best 120 (4-PU cluster 1: the first pass 1.023 x the bound, every later one
 * 1.23). The other rules for measured items stay: growth by tail_grow in such a pass keeps a PU
 * that starts from an earlier pass's blocks (hundreds of items) out of a cubic wall that its
 * probes never met (grown by `grow`, 8046 items that took 101 s, 8-PU cluster 1, seed 8), and
 * spread_block, a first pass's probing, cost Boinski's Jacobi systems at 2048 a later pass's
 * edge (1.012 -> 1.023 x the bound). docs/benchmarks.md, "Items measured uniform". */
static int item_costs_matter(const hlbp *h) {
  const hlb_balancer *b = h->ctx->balancer;
  return hlb_balancer_items_measured(b) && !hlb_balancer_items_look_uniform(b);
}

/* 1 in a pass over items the caller says vary (hlb_balancer_items_vary) that no earlier pass
 * measured (their costs, if any, only on trial): a block may meet items dearer than any seen,
 * wherever it lies (block_budget, find_best_block, hlb_next's wait for a granule). */
static int unseen_items_vary(const hlbp *h) {
  const hlb_balancer *b = h->ctx->balancer;
  return hlb_balancer_items_vary(b) && !hlb_balancer_items_measured(b);
}

/* 1 where block_budget holds a pass whose items nobody said vary: a PU of the pass was found
 * uneven (its curve does not explain its blocks: note_uneven), in a run that starts from no
 * earlier run's blocks, over items no earlier pass measured. The first dear block a slow PU meets
 * unsaid runs unheld, but not the ones after it. The random spikes maps not declared
 * (`bench_sim spike-maps-undeclared`, 20 maps, noise seeds 1-5): 1.306 -> 1.244 x the bound at 5000
 * items, 1.222 -> 1.168 at 20000, 1.219 -> 1.181 at 10^5, above greedy on 2, 2 and 3 maps instead
 * of 5, 3 and 4; the mandelbrot preset 1.0688 -> 1.0704 (20000 items: 1.031 -> 1.038), segments
 * 1.0362 -> 1.0378; every preset whose PUs follow their curves and `bench_sim superlinear`
 * unchanged. Not in a run from priors:
 * without item costs every remembered pass is "not measured", and held it ended Boinski's Jacobi
 * at 2048 (pass 3, seed 213) 1.054 x the bound against 1.05. Nor for best_block's or the
 * granule's first-pass rules (the superlinear walls are found uneven too, and best_block is what
 * caps them). Held, a block is no smaller than the PU's flat size (flat_floor, as the guard's
 * floor for a distrusted PU: a host's delays make a GPU's blocks miss, and cut smaller each pays
 * one) and a PU's second size (spread_block) is not held (its line is what it lacks: p15 of the
 * 64-PU superlinear cluster 3 did 30 items held, 61-135 not). docs/benchmarks.md, "The budget
 * once items are found to vary". */
static int found_not_said(const hlbp *h) {
  return h->found_uneven && !h->any_priors && !hlb_balancer_items_measured(h->ctx->balancer);
}

/* The octave of block size x: 2^k <= x < 2^(k+1), the last one open-ended. */
static int octave(double x) {
  int k = (int)floor(log2(fmax(x, 1.0)));
  return k < BINS ? k : BINS - 1;
}

/* best_block (issue 13: curves where small blocks win). With quadratic, cubic or x ln x terms
 * the time per item c(y) / y has its minimum at a finite y*, and a share cut into blocks near
 * y* costs share * c(y*) / y*, less than one block of the share: the simulator's lower bound is
 * L(x) = x min c(y) / y (docs/simulator.md). The PU's fitted model is no help here: its term
 * selection keeps a line through a few noisy sizes, and its plausibility check rejects a fit
 * that bends away from the line beyond the sizes measured; nor is a parabola of its own, which
 * misplaces the optimum of an x ln x term by 100x over the ramp's range of sizes.
 *
 * So the measured blocks themselves say it: each PU sums items and seconds per octave of block
 * size (bins of [2^k, 2^(k+1))), whose time per item is sum t / sum x. The ramp (each block up
 * to `grow` times the last) measures the sizes an octave or two apart. A cap is set when a
 * larger bin measured is more than RISE (10 %, or 2 slacks) dearer per item than the best: a
 * rise seen, not extrapolated. Lower, and the noise of a shared node link or of items that do
 * not cost the same capped affine PUs by mistake, which then never measure larger blocks again
 * (boinski-apl09-12-jacobi1024 and irregular-2machines-segments got 2.5 % and 3.4 % worse). Any
 * larger bin, not only the next: near the optimum the time per item is flat, and a quadratic PU
 * measured 0.825 ms per item at 200 items, 0.827 at 800-962 and 0.915 at 3200, then was given
 * 12800 items that took 21 s, 1.66 ms each (`bench_sim superlinear`, 4 PUs, cluster 3: 1.22 x
 * the bound). The optimum is then the vertex of the parabola in ln(size) through the best bin,
 * its smaller neighbour and that dearer bin (the time per item of every such curve is convex
 * in ln size), and the cap the size where that parabola is best_block_slack above its least
 * value, kept between the best bin and the dearer one. With no smaller neighbour (the best is
 * the smallest size measured, e.g. the probe), the cap is the best bin's size: nothing below
 * it is known; but when the dearer bin is a wall (WALL_RISE), half of it, so that the sizes
 * below are measured too (octave_cap). */
static void octave_add(octave_sums *o, double x, double t) {
  int k = octave(x);
  o->x[k] += x;
  o->t[k] += t;
  o->r2[k] += (t / x) * (t / x);
  o->n[k]++;
}

static double bin_rate(const octave_sums *o, int k) {
  return o->t[k] / o->x[k];
}

static double bin_size(const octave_sums *o, int k) {
  return o->x[k] / o->n[k];
}

/* The spread of times per item within the octaves of o: their coefficients of variation,
 * pooled over octaves of two samples or more; NaN with none. */
static double within_octave_spread(const octave_sums *o) {
  double cv_sum = 0.0, dof = 0.0;
  for (int k = 0; k < BINS; k++) {
    unsigned n = o->n[k];
    if (n < 2 || !(o->x[k] > 0)) continue;
    double mean = o->t[k] / o->x[k];
    double var = fmax(o->r2[k] / n - mean * mean, 0.0) * n / (n - 1.0);
    cv_sum += (n - 1.0) * sqrt(var) / mean;
    dof += n - 1.0;
  }
  return dof > 0 ? cv_sum / dof : NAN;
}

/* best_block's cap read off the octaves of o: 0 when no larger octave is more than `rise` times
 * dearer per item than the cheapest (see above). With `search_below`, a best octave that is the
 * smallest measured, with a larger one beyond WALL_RISE of it, gives half its size: a probe of
 * 500 items that already lies past a cubic PU's best size (202) rose to 6x the time per item at
 * 2000 and capped every later block at 500, 1.4x the best time per item; halving until a smaller
 * octave is no cheaper finds the vertex as the ramp finds it from below (`bench_sim
 * superlinear`'s 4-PU cluster 1 at 10^6 items: 1.205 -> 1.031 x the bound over seeds 1-10). */
static double octave_cap(const octave_sums *o, double rise, double slack, int search_below) {
  int b = -1;
  for (int k = 0; k < BINS; k++)
    if (o->n[k] && (b < 0 || bin_rate(o, k) < bin_rate(o, b))) b = k;
  if (b < 0) return 0.0;
  double rb = bin_rate(o, b);
  int lo = -1, up = -1;
  for (int k = b - 1; k >= 0 && lo < 0; k--)
    if (o->n[k]) lo = k;
  for (int k = b + 1; k < BINS && up < 0; k++)
    if (o->n[k] && bin_rate(o, k) > rise * rb) up = k; /* the first larger bin that rose */
  if (up < 0) return 0.0;
  double cap = bin_size(o, b);
  if (lo < 0) return search_below && bin_rate(o, up) > WALL_RISE * rb ? 0.5 * cap : cap;
  /* Parabola r(v) = r_b + d1 (v - v_b) + d2 (v - v_b)^2 through the three points. */
  double vl = log(bin_size(o, lo)), vb = log(cap), vu = log(bin_size(o, up));
  double rl = bin_rate(o, lo), ru = bin_rate(o, up);
  double sl = (rl - rb) / (vl - vb), su = (ru - rb) / (vu - vb);
  double d2 = (su - sl) / (vu - vl), d1 = sl - d2 * (vl - vb);
  if (!(d2 > 0)) return cap;
  double vs = fmin(fmax(vb - d1 / (2.0 * d2), vl), vu);
  double rs = rb + d1 * (vs - vb) + d2 * (vs - vb) * (vs - vb);
  /* r(v) = (1 + slack) rs beyond the vertex: d2 w^2 + (d1 + 2 d2 (vs - vb)) w = slack rs with
   * w = v - vs, and at the vertex the slope is 0 (when it is inside). */
  double slope = d1 + 2.0 * d2 * (vs - vb), need = slack * fmax(rs, 0.0);
  double w = (-slope + sqrt(fmax(slope * slope + 4.0 * d2 * need, 0.0))) / (2.0 * d2);
  return exp(fmin(fmax(vs + w, vb), vu));
}

static void find_best_block(hlbp *h, unsigned p) {
  hpu *q = &h->pu[p];
  q->ycap = 0.0;
  double slack = h->prm[P_BEST_SLACK], g = (double)(h->ctx->granularity ? h->ctx->granularity : 1);
  /* Off in a later pass over the same items (hlb_balancer_items_measured): an item cost
   * density smears a spike over the block that measured it, and its blocks' time per cost then
   * rises with size for no superlinear reason (random spikes, pass 3: 1.055 x the bound with
   * the cap); with the density on trial (sized by count) the same, unless the items look
   * uniform (item_costs_matter). */
  if (!(h->prm[P_BEST] > 0) || item_costs_matter(h)) return;
  /* Off too in a first pass over items the caller says vary (hlb_balancer_items_vary): a larger
   * block dearer per item met dearer items, and the cap, read off one such block, holds the PU
   * below every size it would need to show otherwise. On the random spikes map (map seed 6, 5000
   * items) machine A's GPU, 5 ms of fixed cost and 3.5 ms a row, had its 32-row block meet a
   * spike slice and was capped at 3 rows for the rest of the run: 944 blocks, a third of its
   * time fixed costs (1.33 x the bound, greedy 1.29). Over 20 map seeds (`bench_sim spike-maps`):
   * 1.248 -> 1.152 x the bound at 5000 items, 1.139 -> 1.061 at 20000, 1.072 -> 1.039 at 10^5 (this
   * alone), above greedy on no map at any size (2 at 5000 before); nothing not declared changes
   * (docs/benchmarks.md, "No best_block where items are said to vary"). In a later pass the rule
   * above decides: items measured uniform show the curve again. */
  if (unseen_items_vary(h)) return;
  /* Not below the sizes measured where they may mislead: a PU that starts from priors (their
   * sizes are another run's), that forgot them or whose items were found uneven (a dearer octave
   * is then dearer items): on the spikes map's remembered passes without item costs, searching
   * below took 1.065 to 1.14 x the bound (worst 1.16 -> 1.68). */
  int search_below = q->priors == 0 && !q->forgot && !q->uneven;
  double rise = 1.0 + fmax(2.0 * slack, RISE);
  double cap = octave_cap(&q->bins, rise, slack, search_below);
  /* A PU that forgot its priors relearns from probes sent at the start of a run, the moment its
   * transfers most likely queue behind the other PUs' first blocks on a shared link: its rise must
   * show in compute time too. boinski-apl09-12-jacobi2048's K20m, its priors forgotten at the start
   * of a remembered pass, probed 20 systems in 13 s, then sent 80 that took 390 s behind the
   * others' transfers (29 s of compute), and was capped at 20 for the rest of the pass: 3544
   * blocks, idle 44 % of the run waiting on the link (`hlb sim ... --passes 3 --remember
   * --no-item-costs`, seed 213: 1.169 x the bound, 1.014 with this). Not for every PU: in first
   * runs of the Jacobi presets a slow CPU's cap read off queued transfers keeps its blocks small,
   * which ends those runs better (jacobi512 1.034 -> 1.048 x the bound without it). Forgetting
   * dropped every prior (forget_priors), so `computed` holds this run's blocks alone. */
  if (q->forgot && cap > 0 && !(octave_cap(&q->computed, rise, slack, 0) > 0)) cap = 0.0;
  /* A run that starts from an earlier run's blocks (priors) plans from their sizes and probes
   * no smaller ones, so its own blocks may never show the rise. Its cap may then come from every
   * sample, the priors' included, in compute time alone (a transfer that queued behind other
   * senders on a shared link is no curve: Boinski's Jacobi systems at 1024 and 2048 read as a rise
   * with it, 1.050 -> 1.062 and 1.011 -> 1.021 x the bound remembered), where the rise is beyond
   * the spread of times per item within octaves (as largest_size_dear; priors of items that
   * do not cost the same scatter within octaves). `bench_sim superlinear`'s clusters, three passes
   * remembering the blocks before: 1.081 -> 1.064 x the bound, without item costs (a later run
   * over another item count) 1.086 -> 1.069 (docs/benchmarks.md, "A later run starts near the best
   * size it stored"). */
  if (!(cap > 0) && q->priors) {
    double spread = within_octave_spread(&q->computed);
    if (isfinite(spread))
      cap = octave_cap(&q->computed, 1.0 + fmax(RISE, DEAR_SPREAD * spread), slack, 0);
  }
  if (cap > 0) q->ycap = fmax(cap, g);
}

/* The time per item of octave top of o over that of its cheapest smaller octave; NaN when
 * either is missing. */
static double top_over_best(const octave_sums *o, int top) {
  if (!(o->x[top] > 0)) return NAN;
  double best = INFINITY;
  for (int k = 0; k < top; k++)
    if (o->x[k] > 0) best = fmin(best, o->t[k] / o->x[k]);
  return isfinite(best) ? o->t[top] / o->x[top] / best : NAN;
}

/* 1 when the PU's blocks may not grow past its largest where blocks grow by tail_grow only (a
 * pass that starts from measured item costs, a PU that starts from priors), read off every sample
 * it has (an earlier pass's included): when the octave of its largest block is dearer per item
 * than its cheapest smaller octave by more than RISE and more than DEAR_SPREAD times the spread of
 * times per item within octaves: a superlinear term met, not noise. In the first pass best_block is
 * off (a smoothed map makes sizes look dear), and blocks still grew by tail_grow past the largest
 * each pass: a cubic PU of `bench_sim superlinear`'s 64-PU cluster 1 (best block about 190 items)
 * ran 288 in the first pass, 432 in the second (4.1 ms an item against 3.0 at 192) and started the
 * third with 648 (4.2 s in a 2.7 s run; seed 11). The spread keeps this off where blocks' times
 * scatter for other reasons: on the simulator's H100 model a host's delays, and spikes met once,
 * made the GPU's largest octave look dear, and held to it, its blocks each paid a delay (spikes
 * with host delays, 20000 rows: 1.43 -> 1.90 x the bound without the spread). docs/benchmarks.md,
 * "No growth past a size found dear".
 *
 * 0 otherwise, and while no octave holds two samples (no spread to judge by): blocks grow by
 * tail_grow, but near the end hardly past the largest (NEAR_END_GROW, hlb_next). Earlier blocks
 * still grow: a PU whose items cost the same at every size (no fixed cost) buys nothing by growing,
 * and Boinski's Jacobi nodes, held to their largest throughout, ran 465 blocks of 3-18 rows
 * (boinski-apl09-12-jacobi2048, remembered without item costs, seed 104: 1.01 -> 1.13 x the
 * bound). */
static int largest_size_dear(const hpu *q) {
  double spread = within_octave_spread(&q->all); /* NaN: no octave of two samples */
  return isfinite(spread) &&
         top_over_best(&q->all, octave(q->u.max_items)) > 1.0 + fmax(RISE, DEAR_SPREAD * spread);
}

/* A block at least twice the size of the PU's smallest that took at most this many times its
 * fastest block's time: its time follows the block's fixed cost, not its items. */
#define FLAT_TIME 1.5

static int flat_block(const hpu *q, double x, double t) {
  return t <= FLAT_TIME * q->min_t && x >= 2.0 * q->u.min_items;
}

/* The shortest block time, and flat_x: the largest block that took hardly longer than the
 * fastest, though at least twice the smallest block (no smaller block was faster by more than
 * FLAT_TIME). Below flat_x the PU's blocks cost their fixed cost (a GPU's launch and copy, a
 * busy host's scheduling delay), whatever their items, and a block cut smaller is no shorter:
 * the guard does not cut a PU below it (guard_floor). Called once the block is in the ring and
 * the PU's smallest size. A new fastest block rescales the test, and a new smallest block (or
 * one as small) is the size the test needs twice: both read the recent blocks (the ring, this
 * one included) again.
 * Without the second, a PU whose blocks came as 3, 2, 3, then 1 item (0.47 s of fixed cost, 8 ms
 * an item: `bench_sim superlinear`'s 64-PU cluster 1) never showed a flat size, its 3-item
 * blocks having been read when 2 was the smallest; the simulator's model of the H100 machine on
 * the mandelbrot map, 2048 rows, went from 5.74 to 2.92 x the bound with the rescan
 * (docs/benchmarks.md, "A smaller block later shows the flat size").
 * Anchored to the fastest block's size instead of the smallest, a 32-row GPU block that came in
 * faster than the others reset the flat size to 0 for good, the guard's one-row blocks never
 * being twice 32 rows. */
static void note_flat(hpu *q, double x, double t) {
  int fastest = !(q->min_t > 0) || t < q->min_t;
  if (fastest) q->min_t = t;
  if (!fastest && x > q->u.min_items) {
    if (flat_block(q, x, t)) q->flat_x = fmax(q->flat_x, x);
    return;
  }
  q->flat_x = 0.0;
  for (unsigned i = 0; i < q->ring_n; i++)
    if (flat_block(q, q->ring_x[i], q->ring_t[i])) q->flat_x = fmax(q->flat_x, q->ring_x[i]);
}

/* prior: s is a stored sample of an earlier run (hlb_prior), not a block of this run.
 * warm_up: s is the PU's first block of a run that started from priors (hlb_done): only its
 * size is learnt, not its time (the balancer's model holds it as a sample all the same). */
static void learn(hlbp *h, unsigned p, const hlb_sample *s, int prior, int warm_up) {
  hpu *q = &h->pu[p];
  h->current[p] = 0; /* its curve, correction or cap may move: plan() scales it again */
  double x = hlb__plb_sample_x(s), t = hlb__plb_sample_s(s);
  if (warm_up) { /* its time is no block's cost: only its size counts (the grow cap) */
    if (x > q->u.max_items) q->u.max_items = x;
    q->largest_dear = largest_size_dear(q);
    return;
  }
  double before = q->u.good ? base_time(q, x) : 0.0;
  /* The first line is a guess. A prior predicted before the PU had a line (two sizes apart)
   * is the earlier run's training, not a miss this run should expect: the 4x-throttled matmul's
   * third stored block, predicted at the mean rate of two probes of 5 and 6 rows, missed by 2.6x,
   * and that one miss held every block of its later runs to a third of its share
   * (bench_throttle --sessions). */
  int line_or_fit = q->u.good >= 2 && shaped(q);
  if (q->u.good >= 2 && (!prior || line_or_fit)) {
    note_miss(&q->miss, before * q->corr, t);
    if (line_or_fit) note_worst_miss(h, before * q->corr, t);
    if (!prior) {
      note_miss(&h->run_miss, before * q->corr, t);
      if (line_or_fit) note_uneven(h, q, s);
    }
  }
  int first = q->u.good == 0;
  hlb__plb_observe(&q->u, s);
  /* Not a prior: an earlier run's blocks (any policy's, over any items) against this run's
   * compare other items, and on work whose items differ that reads as a curve (mandelbrot on
   * PoCL after greedy's runs: greedy's 13-row blocks of the costly rows against this run's
   * 7-row probes of the cheap top rows capped every block at 7 rows, 113 blocks, 1.9x the
   * time). The rise must show in this run's own blocks. */
  if (x > 0 && t > 0) {
    if (!prior) octave_add(&q->bins, x, t);
    octave_add(&q->all, x, t);
    if (s->compute_s > 0) octave_add(&q->computed, x, s->compute_s);
  }
  q->largest_dear = largest_size_dear(q);
  if (!q->u.fitted) hlb__plb_affine_curve(&q->u, &q->u.curve); /* the line, not the mean rate */
  q->ring_x[q->ring_at] = x;
  q->ring_t[q->ring_at] = t;
  q->ring_at = (q->ring_at + 1) % RING;
  if (q->ring_n < RING) q->ring_n++;
  note_flat(q, x, t);
  double old = q->corr;
  if (q->u.good >= q->next_fit) {
    hlb__plb_refit(h->ctx, p, &q->u, (double)h->ctx->n_items);
    q->next_fit = (size_t)ceil((double)q->u.good * h->prm[P_REFIT]) + 1;
    recompute_corr(h, q);
  } else if (!q->u.fitted) {
    /* The line moved with this sample: weigh the recent samples against the new line, not
     * this one against the old line, or the sample would count twice (once in the line, once
     * in the correction) and one fast block would make a long last block look short. */
    recompute_corr(h, q);
  } else if (!first && before > 0 && isfinite(before)) {
    double a = h->prm[P_SMOOTH];
    q->corr = (1.0 - a) * q->corr + a * t / before;
  }
  double cap = q->ycap;
  find_best_block(h, p);
  if (fabs(q->ycap - cap) > 0.1 * cap) h->changed++;
  /* A fresh estimate, or one that moved by more than 10 %, makes the plan stale. */
  if (first || fabs(q->corr / old - 1.0) > 0.1) h->changed++;
}

static double median_rate(const hlbp *h) {
  double *r = h->ws.x; /* scratch: the solve below overwrites it anyway */
  unsigned m = 0;
  for (unsigned p = 0; p < h->n; p++)
    if (h->pu[p].u.rate > 0) r[m++] = h->pu[p].u.rate / h->pu[p].corr;
  if (m == 0) return 0.0;
  for (unsigned i = 1; i < m; i++) /* small n in practice; insertion sort is enough */
    for (unsigned j = i; j > 0 && r[j - 1] > r[j]; j--) {
      double t = r[j];
      r[j] = r[j - 1];
      r[j - 1] = t;
    }
  return r[m / 2];
}

/* best_block: the time per item of a capped block on the PU's effective curve c; 0 when the
 * PU has no cap. */
static double capped_per_item(const hpu *q, const hlb_curve *c) {
  if (!(q->ycap > 0)) return 0.0;
  double t = hlb_curve_time(c, q->ycap);
  return t > 0 && isfinite(t) ? t / q->ycap : 0.0;
}

/* The typical rate a PU not measured yet is assumed to have: the median, or over 256 PUs the
 * mean (enough at scale, and O(n)). */
static double typical_rate(hlbp *h) {
  if (h->n <= 256) return median_rate(h);
  double s = 0.0;
  unsigned m = 0;
  for (unsigned p = 0; p < h->n; p++)
    if (h->pu[p].u.rate > 0) {
      s += h->pu[p].u.rate;
      m++;
    }
  return m ? s / m : 0.0;
}

/* 1 when the equal-finish-time solve takes the curve. It reads every curve on all of (0, W],
 * below the smallest block too, and refuses one with a negative ln u term (a time that grows
 * without bound as x -> 0+); one refused curve made it fall back to a proportional split of the
 * pool (hlb__plb_solve), every PU's ready time and curve shape ignored. Such fits pass
 * fit_sane, which looks at the sizes measured: in `hlb sim` 29-158 solves of a run of
 * `bench_sim superlinear`'s 8-64 PU clusters fell back so, 5911 over 20 first passes of
 * boinski-apl09-12-jacobi1024 (docs/benchmarks.md, "Curves the solve refused"). */
static int solve_takes(const hlb_curve *c) {
  return !(c->coef[HLB_TERM_LOG] < 0);
}

/* Effective curves and ready times of all PUs, then the equal-finish-time split of the pool.
 * A PU whose curves[] entry is already its base curve times its correction, uncapped
 * (current[p]: nothing was learnt since), keeps it: with 10^4 PUs, reading every PU's record
 * to scale its curve again was a third of each plan, though between two plans (every n/16
 * grants) only one PU in 16 or so learnt anything. The typical rate is computed only when a PU
 * has not been measured. */
static void plan(hlbp *h, double now) {
  double med = NAN;
  for (unsigned p = 0; p < h->n; p++) {
    h->usable[p] = 1;
    if (h->current[p]) {
      h->ready[p] = hlb__plb_ready_in(h->ctx, p, &h->curves[p], now);
      continue;
    }
    hpu *q = &h->pu[p];
    if (q->u.rate > 0) {
      hlb__plb_curve_scaled(&h->curves[p], &q->u.curve, q->corr);
      h->current[p] = !(q->ycap > 0);
      /* A share of at least a capped block is done in capped blocks: its time is the share
       * times the time per item of one (the tail's shares, below a block, keep the curve). */
      double m = capped_per_item(q, &h->curves[p]);
      if (m > 0 && !(h->planned && h->x[p] < q->ycap)) {
        hlb__plb_linear_curve(&h->curves[p], 1 / m);
      } else if (!solve_takes(&h->curves[p])) { /* its line in the solve, the fit for its blocks */
        hlb_curve line;
        if (!hlb__plb_affine_curve(&q->u, &line)) hlb__plb_linear_curve(&line, q->u.rate);
        hlb__plb_curve_scaled(&h->curves[p], &line, q->corr);
      }
    } else {
      /* Not measured yet: no faster than its probe allows so far, and no faster than the
       * typical PU. */
      if (isnan(med)) med = typical_rate(h);
      double r = med;
      hlb_block blk;
      if (hlb_balancer_oldest_in_flight(h->ctx->balancer, p, &blk) && now > blk.granted_s) {
        double bound = (double)blk.count / (now - blk.granted_s);
        r = r > 0 && r < bound ? r : bound;
      }
      h->usable[p] = r > 0;
      hlb__plb_linear_curve(&h->curves[p], r);
    }
    h->ready[p] = h->usable[p] ? hlb__plb_ready_in(h->ctx, p, &h->curves[p], now) : 0.0;
  }
  double left = hlb_balancer_remaining_cost(h->ctx->balancer);
  double ms = 0.0;
  unsigned m = hlb__plb_solve(h->ctx, &h->ws, h->curves, h->usable, h->ready, left, h->x, &ms);
  h->planned = m > 0;
  h->target = now + ms;
  h->plan_rate = ms > 0 ? left / ms : 0.0;
  h->since = 0;
  h->changed = 0;
}

/* Solve the split again when it is due: first, every alive/16 grants (a changed estimate counts
 * 4), at each grant in the tail of a run of at most 64 PUs, and when the run is behind the
 * planned finish. Behind it, a run of many PUs solves again only every alive/64 grants: a solve
 * reads every PU, and with 10^4 PUs and one-item blocks every grant came after the planned
 * finish, so every grant solved (240 µs of rank 0's CPU each, bench_grants --policy hlb).
 * Between those solves the finish moves at the rate the last solve planned for, so that shares
 * stay what the PUs can do by then instead of collapsing to a granule. Below 128 PUs every
 * late grant still solves (alive/64 is 1 or 0). */
static void plan_if_due(hlbp *h, double now, unsigned alive) {
  unsigned every = alive / 16 ? alive / 16 : 1;
  size_t left = hlb_balancer_remaining(h->ctx->balancer);
  /* Near the end every decision matters: plan each time. */
  if (!h->planned || h->since + 4 * h->changed >= every ||
      (alive <= 64 && (double)left < 0.1 * (double)h->ctx->n_items)) {
    plan(h, now);
    return;
  }
  if (h->target > now) return;
  unsigned every_late = alive / 64 ? alive / 64 : 1;
  if (h->since >= every_late || !(h->plan_rate > 0)) {
    plan(h, now);
    return;
  }
  h->target = now + hlb_balancer_remaining_cost(h->ctx->balancer) / h->plan_rate;
}

/* The curve's fixed cost per block: its time at one granule less that granule's share of the
 * cost per item, the slope being the secant up to the largest block measured (exact for a
 * line a + b x; for a concave curve the secant is flatter, so the estimate errs high). The
 * time of one granule is not the fixed cost: with none, it is the cost per item, and
 * overhead_max of it asked for blocks of 1 / overhead_max granules, so every PU's last block
 * was 20-40 granules and the pool ran dry while some PUs still had most of theirs to do
 * (64 Jacobi ranks, 78 rows each: the first PU idled 5 s of 33). Without a measured size
 * beyond two granules the slope is unknown: the whole time counts. */
static double fixed_cost(const hlb_curve *c, double g, double x_ref) {
  double tg = hlb_curve_time(c, g);
  if (!(x_ref > 2.0 * g)) return tg;
  double slope = (hlb_curve_time(c, x_ref) - tg) / (x_ref - g);
  double f = tg - g * slope;
  return f > 0 ? (f < tg ? f : tg) : 0.0;
}

/* 1 when the PUs with blocks in flight, each taking one granule after another once its blocks
 * are done, would do all `left` items before PU `pu` finishes one granule (`own_g` seconds
 * from now): the earliest-completion rule, one granule at a time. The continuous split
 * cannot decide this: with fewer granules left than PUs every share is under a granule,
 * and waiting on that alone left the last granules to one slow PU, one after another, while
 * the fast ones waited (64 Jacobi ranks: 3 s of 35). Scans at most every PU, only in the
 * tail and with an early exit. */
static int busy_absorb(const hlbp *h, unsigned pu, double now, double g, double own_g,
                       double left) {
  double need = ceil(left / g - 1e-9), got = 0.0;
  for (unsigned q = 0; q < h->n && got < need; q++) {
    if (q == pu || !h->usable[q] || hlb_balancer_in_flight(h->ctx->balancer, q) == 0) continue;
    double tq = hlb_curve_time(&h->curves[q], g);
    double slack = own_g - hlb__plb_ready_in(h->ctx, q, &h->curves[q], now);
    if (tq > 0 && slack >= tq) got += floor(slack / tq);
  }
  return got >= need;
}

/* 1 when the PU's curve does not explain its times: its recent blocks miss by more than
 * prior_tolerance (the report's 1.5x band), or did earlier in a run without item costs
 * (note_uneven). Blocks of the dear rows, predicted well by a line whose fixed cost is those
 * rows' cost, bring the mean miss back under the band; the curve is no better for that (below).
 * Or its priors were forgotten (forget_priors): they mispredicted its first blocks, and its
 * curve since is read off a few blocks whose misses are against that same curve. */
static int distrusted(const hlbp *h, const hpu *q) {
  return q->uneven || q->forgot || beyond_band(h, q);
}

/* The flat size, doubled where the PU's curve agrees that a block of twice that size costs at
 * most twice its fixed cost: time(2 f) = a + 2 b f <= 2 a, so the items from f to 2 f cost at most
 * half a fixed cost inside the block, and a whole one as a block of their own. The flat blocks
 * show the size f, the curve what lies just beyond it. The simulator's model of the H100 machine
 * (docs/benchmarks.md, "Twice the flat size; a last block cut back to the sizes run"): its
 * host-delayed GPU, guarded to the flat size, crept up one flat size at a time (2048 rows with host
 * delays: 12.5 x the bound, 8.3 x doubled); every preset within 0.01 %. Not where the curve
 * disagrees: on the random spikes map machine A's CPU, its line through the origin, read a flat
 * size of 40 rows off a small block that met a spike, and doubled it met another (seed 105: 1.06
 * -> 1.14 x the bound). */
static double flat_floor(const hpu *q, double g) {
  double f = q->flat_x;
  if (f > 0 &&
      hlb_curve_time(&q->u.curve, 2.0 * f) <= 2.0 * fixed_cost(&q->u.curve, g, q->u.max_items))
    return 2.0 * f;
  return f;
}

/* The latest a block may end: the common finish plus tail_idle of the predicted makespan (the
 * guard's slack; the waits below use it too). */
static double latest_end(const hlbp *h) {
  return h->target + h->prm[P_TAIL] * (h->target - h->t0);
}

/* The dearest time per item among the PU's recent blocks (fixed cost included). */
static double worst_per_item(const hpu *q) {
  double w = 0;
  for (unsigned i = 0; i < q->ring_n; i++)
    if (q->ring_x[i] > 0) w = fmax(w, q->ring_t[i] / q->ring_x[i]);
  return w;
}

/* 1 where a distrusted PU's flat size f (note_flat) may be items that cost differently, not a
 * fixed cost, and a block of that size could end past the finish: the caller says the items vary
 * (unseen_items_vary), and f items at the dearest time per item of the PU's recent blocks
 * (worst_per_item) would end more than tail_idle of the predicted makespan after the common
 * finish. Counted in items, a flat reading cannot tell a fixed cost from a dear item: machine B's
 * CPU on the random spikes map (1 ms of fixed cost, 0.17 s an average row) read a flat size of
 * 28 rows off a 1-row block that met a spike (2.5 s) and blocks of 28 cheap rows (2.1-2.3 s), and
 * that floor held its guarded blocks at 28 rows to the end. Its last met a spike slice, took
 * 69 s, and the run ended 44 s after the others (map seed 1, 10^5 items, noise seed 1: 1.22 x the
 * bound, 1.015 without the floor there). Not where the items were only found to vary: the
 * simulator's H100 GPU on the mandelbrot map (0.15 ms launches, rows of a microsecond, not
 * declared) has its launch in its dearest time per item, so its flat block reads as ending past
 * the finish, and without the floor it took one-row blocks: 1.7, 19 and 54 x the bound in three
 * tests of tests/unit/sim/test_driver_core.c that expect under 1.6, 4 and 9 (docs/benchmarks.md,
 * "A flat size that may be dear items"). */
static int flat_may_be_dear_items(const hlbp *h, const hpu *q, double f, double now) {
  if (!(f > 0) || !h->planned || !unseen_items_vary(h)) return 0;
  return now + f * worst_per_item(q) > latest_end(h);
}

/* The smallest block the guard may cut to. A guarded block still amortises the fixed cost (10
 * ms blocks at 10 % jitter: 1.37 x the bound without): amort, whose fixed cost is at most the
 * shortest block ever measured. But a PU whose blocks miss by more than prior_tolerance (the
 * report's 1.5x band) has a curve that does not explain its times, and the fixed cost read off
 * it is the items' unevenness: a CPU meeting the dear region of a cost map read 2.4 s of fixed
 * cost (its real one 1 ms), which held a guard of 0 up to a 160-row block that ran 79 s past
 * everyone (1.21 x the bound; docs/benchmarks.md). There the floor is a granule, as it is for a
 * PU that forgot its priors (distrusted): machine B's CPU on the spikes map, its priors forgotten
 * 57 s into a remembered pass, had met spike items in its three 1-item blocks since (2.2 s each,
 * its real fixed cost 1 ms); that floor of 5016 items' cost held a guard of 0 up to 230 rows that
 * took 397 s (`hlb sim irregular-2machines-spikes --passes 3 --remember`, seed 234: 2.16 x the
 * bound, 1.03 with the granule). Or its flat_x, when larger: a block the PU measured at hardly
 * more than its fastest block's time, though at least twice its smallest block (note_flat),
 * says that below that size its blocks cost their fixed cost, whatever their items; cut
 * smaller, a block is no shorter and only adds one. A GPU whose 0.15 ms launch dwarfs 1 us rows,
 * guarded down to one row, took 1-row blocks for the rest of a run: 14.7 x the bound with the
 * mandelbrot map on the simulator's model of the H100 machine, 4.6 x with this floor
 * (docs/benchmarks.md, "Blocks below a PU's fixed cost"). Unless that flat size may be dear items
 * whose block would end past the finish (flat_may_be_dear_items). */
static double guard_floor(const hlbp *h, const hpu *q, double amort, double g, double now) {
  if (distrusted(h, q)) {
    double f = flat_floor(q, g);
    if (flat_may_be_dear_items(h, q, f, now)) f = 0.0;
    return fmax(g, f);
  }
  return fmax(amort, g);
}

/* 1 when cutting a PU's last block x down to `guarded` saves more time than the part cut off
 * costs as a block of its own: its fixed cost. The guard's bound (late by the usual miss, the
 * block still ends by the common finish time) shaved 0.3 % off the fast core's last block of the
 * 4x-throttled matmul, and the 2-4 rows left over then paid a block's fixed cost on their own
 * (3 ms on the fast core, 12 ms on the throttled one, for 0.3 ms of rows; bench_throttle
 * --sessions). Where the PU is distrusted (its misses beyond prior_tolerance, its priors
 * forgotten) its curve's fixed cost is not a fixed cost (guard_floor): every cut pays. Only last
 * blocks: cut short earlier, a block leaves the rest to the PU's own next one, and on the
 * simulator's mandelbrot profile (remembered passes) keeping those whole gave 1.021 -> 1.032 x the
 * bound, worst 1.06 -> 1.16. */
static int cut_pays(const hlbp *h, const hpu *q, const hlb_curve *c, double x, double guarded,
                    double fixed) {
  if (distrusted(h, q)) return 1;
  return hlb_curve_time(c, x) - hlb_curve_time(c, guarded) > fixed;
}

/* The largest block (a cost) that a misprediction as bad as the PU's recent ones could not
 * turn into more than tail_idle of the predicted makespan of idle time for the others, nor into
 * a block that ends after the common finish time. PLB-HeC and PLB-HAC assume items of equal cost;
 * on a fractal's rows or a power-law matrix's a block can take 10x its prediction, and a large
 * one then finishes long after everyone else (the mandelbrot cost map in the simulator: 1.8x
 * the bound, greedy's many small blocks 1.04x). On uniform work the misses stay at the noise
 * and the guard does not bind. +inf when there is nothing to go by. */
static double guarded_size(const hlbp *h, const hpu *q, const hlb_curve *c, double now, double left,
                           hlb__plb_memo *memo) {
  /* Alone, a PU's overrun leaves nobody idle. Without misses of its own to go by, the run's
   * count when items' costs are unknown: the mandelbrot map's slowest CPU, one miss of its own
   * (a 40-row block 7.7x its prediction), was given 640 rows of the dear middle that ran 227 s
   * past a 220 s run (1.09 x the bound, 3 seeds of 20 like it). They count too for a PU that
   * forgot its priors (forget_priors: they mispredicted its first blocks), with item costs or
   * not: it starts again without misses of its own, having just shown that its predictions
   * fail. Unguarded, machine B's CPU on the spikes map, its priors forgotten 33 s into a
   * remembered pass, was given 794 rows (its amortising block, read off its own 3 s blocks),
   * predicted at 45 s; they took 485 s (`hlb sim irregular-2machines-spikes --passes 3
   * --remember`, seed 230: 2.44 x the bound). */
  int runs_misses =
      h->run_miss.n >= 2 && (!hlb_balancer_items_measured(h->ctx->balancer) || q->forgot);
  if (!(h->prm[P_TAIL] > 0) || (q->miss.n < 2 && !runs_misses) || !h->planned ||
      hlb__plb_alive(h->ctx) < 2)
    return INFINITY;
  /* The mean miss, not the largest: one odd block (a probe, a spike) would otherwise keep
   * every block small for MISS_RING blocks; on the simulator's cost maps the mean ends nearer
   * the bound with a third of the blocks (docs/benchmarks.md). The run's recent misses on any
   * PU count too, when worse: where items differ, a region found dear on one PU is dear on all,
   * and a PU that has met only cheap items so far would size its next block for none (the
   * refined-region map: a CPU's 275-row block planned at 16 s ran 131 s into the dear rows, the
   * run 1.21 x the bound; docs/benchmarks.md). */
  double typical = mean_miss(&q->miss);
  if (h->run_miss.n >= 2) typical = fmax(typical, mean_miss(&h->run_miss));
  double over = exp(typical) - 1.0, until = h->target - now, t_max;
  /* Even misses at the level of timing noise count: without them, a run whose blocks were
   * all predicted well meets its first random spike with a block sized for none. The price is
   * a few more blocks on uniform work (10 % jitter on two PUs: 1.099 -> 1.111 x the bound,
   * tests/unit/policy/test_plb.c). */
  if (!(over > 0)) return INFINITY;
  /* Late by that much, the block must end at most tail_idle of the makespan after it was
   * predicted to (the others would wait that long if it were the last: which block is the
   * last is only known afterwards, and bounding every block measured best), and before the
   * common finish time. After the predicted finish only the first bound applies. */
  double slack = h->prm[P_TAIL] * (fmax(h->target, now) - h->t0);
  t_max = slack / over;
  if (until > 0) t_max = fmin(t_max, until / (1.0 + over));
  /* And late as badly as the worst block of the run, it must still end within tail_idle of the
   * makespan after the common finish: the "a misprediction of the size already observed".
   * The mean alone let a block that met a spike of the random spikes map (30x the other items) run
   * far past everyone: machine A's CPU, 675 rows planned at 9 s with 80 s left, took 160 s (seed
   * 19, 1.36 x the bound). Earlier in the run a block that late still ends before the others, who
   * take the rest of the pool meanwhile. */
  if (h->worst_late > 0) t_max = fmin(t_max, (fmax(until, 0.0) + slack) / h->worst_late);
  double x = hlb__plb_inverse_memo(memo, c, t_max, left);
  /* On uneven items the curve's slope comes from the cheap items met first and its fixed cost
   * is the dear ones' cost: after 1-row blocks of the mandelbrot map's dear middle (0.37 s each,
   * predicted well) the line gave 640 rows 7 s; they took 273 s. Its recent blocks' dearest time
   * per item bounds the block too. */
  if (q->uneven) {
    double w = worst_per_item(q);
    if (w > 0) x = fmin(x, t_max / w);
  }
  return x;
}

/* 1 when a PU whose guard leaves it less than a granule should wait for the busy PUs to take
 * what is left: the caller says the items vary, and one granule at the dearest time per item of
 * the PU's recent blocks (worst_per_item) would end more than tail_idle of the predicted makespan
 * after the common finish. The guard cannot cut below a granule, and near the end a slow PU's
 * one dear item outlasts the others' whole tail: machine B's CPU on the random spikes map (0.17 s
 * an average row, 2.4 s a spike row) took its last row 0.7 s before the others were done, a spike
 * that ended 1.7 s after them (map seed 1, 20000 items, noise seed 1: 1.072 x the bound; 1.033
 * waiting). A GPU's dearest row, its launch included, ends well within the slack and never waits
 * for this. Over the 20 maps at 5000 items 1.123 -> 1.105 x the bound, worst 1.217 -> 1.149; at
 * 20000 1.0415 -> 1.0408; at 10^5 unchanged (docs/benchmarks.md, "A slow PU's last dear
 * granule"). */
static int dear_granule_ends_late(const hlbp *h, const hpu *q, double now, double g) {
  if (!h->planned || !unseen_items_vary(h) || hlb__plb_busy(h->ctx) == 0) return 0;
  return now + g * worst_per_item(q) > latest_end(h);
}

/* 1 when PU pu's last block x should also take the rest of the pool (left - x): no other PU's
 * plan has a granule more than it has in flight, the rest costs pu less than a block's fixed
 * cost inside this block, and no other PU is predicted to end it sooner in a block of its own
 * (after what it has in flight). Reads every PU: only at most 64 alive. Shares are rounded down
 * to granules, so the last blocks of two PUs left one row of matmul, done afterwards alone: 4
 * ms on the fast core, 15 ms on the throttled one, for a row that costs 0.2 ms inside the
 * block before (bench_throttle --sessions). */
static int take_rest(const hlbp *h, unsigned pu, const hlb_curve *c, double now, double x,
                     double left, double g, double fixed, unsigned alive) {
  if (!h->planned || alive > 64 || !(x < left)) return 0;
  double t_left = hlb_curve_time(c, left);
  if (!(t_left - hlb_curve_time(c, x) <= fixed)) return 0;
  double rest = left - x, mine = hlb__plb_ready_in(h->ctx, pu, c, now) + t_left;
  for (unsigned q = 0; q < h->n; q++) {
    if (q == pu || !h->usable[q]) continue;
    const hlb_curve *cq = &h->curves[q];
    if (h->x[q] >= g || hlb__plb_ready_in(h->ctx, q, cq, now) + hlb_curve_time(cq, rest) < mine)
      return 0;
  }
  return 1;
}

/* A PU whose blocks show no line yet (sizes within 1.5x of each other, or a slope that noise made
 * zero or negative: `shaped`) has its mean rate for a curve, a line through the origin, which
 * cannot tell a fixed cost from a slow item: it reads a PU whose 3-item probe took 0.36 s (0.37 s
 * of fixed cost, 4.5 ms an item) as 120 ms an item, so the plan gives it a dozen items, the guard
 * cuts its blocks to 2-4 items, all of one size, and it never learns better (`bench_sim
 * superlinear`'s 64-PU cluster 3: six blocks of 2-4 items, 2.3 s busy for 18 items, the last one
 * ending 0.12 s after the others). Its next block is therefore grow times its largest, halved
 * while it would end after the common finish by that line, and not below twice the largest (the
 * least spread that makes a line); 0 when no such block fits or the PU has a line. The line
 * through the origin overstates a larger block whatever its fixed cost, so the finish is kept
 * without tail_grow's cap near the end (which that same line would set: it sees 15 items as 1.8
 * s), but within best_block's cap, and not in a pass that starts from measured item costs, whose
 * blocks grow by tail_grow only. The guard does not cut it: its misses are that line's misreads of
 * the fixed cost. docs/benchmarks.md, "A second size for a PU without a line". A PU found uneven
 * (note_uneven: items that cost differently, not a fixed cost, explain its misses) also halves it
 * while it would end after the common finish at the dearest time per item of its recent blocks
 * (worst_per_item, as the guard bounds such a PU's other blocks): unheld, machine B's CPU on a
 * random spikes map not declared (map seed 11, 10^5 items, noise seed 3), its line unshaped by
 * 40- and 80-row blocks after a 35-row block of spikes that took 89 s, was given 320 rows, 38 s;
 * the run ended 1.74 x the bound, 1.17 held (docs/benchmarks.md, "A second size held to the
 * dearest item"). */
static double spread_block(const hlbp *h, const hpu *q, const hlb_curve *c, double now) {
  if (!h->planned || shaped(q) || hlb_balancer_items_measured(h->ctx->balancer)) return 0.0;
  double x = h->prm[P_GROW] * q->u.max_items;
  if (q->ycap > 0) x = fmin(x, q->ycap);
  double worst = q->uneven ? worst_per_item(q) : 0.0;
  while (x >= 2.0 * q->u.max_items && now + fmax(hlb_curve_time(c, x), worst * x) > h->target)
    x *= 0.5;
  return x >= 2.0 * q->u.max_items ? x : 0.0;
}

/* 1 when a PU whose blocks show no line yet (`shaped`) should wait rather than take block x:
 * others are busy, and x would end after the common finish by more than tail_idle of the
 * predicted makespan even at the PU's fastest block time so far. Its mean-rate line reads a
 * fixed cost as items, so it sees a smaller block as proportionally shorter, and nothing
 * measured says so: `bench_sim superlinear`'s 64-PU cluster 3, p11 (0.73 s of fixed cost), after
 * two 3-item blocks of 0.71 and 0.78 s, took 2 items predicted at 0.5 s with 0.66 s left; they
 * took 0.78 s and the run ended 0.12 s (5 %) after the other 63. A PU with a line has its fixed
 * cost in it, and the wait for a share under one granule covers it (hlb_next). */
static int unshaped_ends_late(const hlbp *h, const hpu *q, const hlb_curve *c, double now,
                              double x) {
  if (!h->planned || shaped(q) || hlb__plb_busy(h->ctx) == 0) return 0;
  double t = fmax(hlb_curve_time(c, x), q->min_t);
  return now + t > latest_end(h);
}

/* A block's cost to the count the pool hands out from where the next grant starts. */
static size_t to_count(const hlbp *h, double x) {
  if (!hlb_balancer_has_item_cost(h->ctx->balancer)) return hlb__plb_round(h->ctx, x);
  return hlb__plb_round(h->ctx, (double)hlb_balancer_count_for_cost(h->ctx->balancer, x));
}

/* 1 when the block of `count` items asked for as cost x is one granule that costs more than x
 * (a pass sized by measured item costs rounds a block below the next item's cost up to that
 * item) and, at its known cost, would end more than tail_idle of the predicted makespan after the
 * common finish while others are busy: they come back for it. Without this, machine B's CPU on
 * the random spikes map (noiseless third pass, 5000 items) took one spike row at 9.7 s, its share
 * a third of that row's cost, and ended at 12.0 s, 0.7 s after the others. */
static int dear_item_ends_late(const hlbp *h, const hlb_curve *c, double now, double x,
                               size_t count, double g) {
  if (!h->planned || (double)count > g || !hlb_balancer_has_item_cost(h->ctx->balancer) ||
      hlb__plb_busy(h->ctx) == 0)
    return 0;
  double cost = hlb_balancer_cost_for_count(h->ctx->balancer, count);
  return cost > x && now + hlb_curve_time(c, cost) > latest_end(h);
}

/* block_budget: the largest block (a cost) whose predicted time is within the budget's share of
 * the predicted makespan, or the amortising size `amort` when that is larger; +inf when the
 * budget is off, the caller did not say that the items' costs vary (hlb_balancer_items_vary) and
 * no PU found it (found_not_said: then floored at the flat size too), nothing is planned yet, or an
 * earlier pass measured the items (their costs say where the dear ones are). The guard
 * (guarded_size) bounds a block by the misses the run has seen; before the first dear item nothing
 * has missed, and on the random spikes map machine B's CPU, 48x slower per item than A's GPU and 1
 * ms of fixed cost, took 422 rows 16.5 s into a run predicted to end near 220 s and met spikes:
 * they took 486 s (map seed 19, noise seed 1: 2.37 x the bound, greedy 1.61; docs/benchmarks.md,
 * "Random spikes, many maps"). Its cut costs such a PU almost nothing: its fixed cost is a
 * thousandth of a block. It costs PUs whose blocks queue on a shared node link a wait per block,
 * which their curves do not show (the PLB-HAC matmul presets: 0.1-0.3 %), and nothing the run sees
 * before the first dear item tells uniform items from a map whose spikes it has not met yet (map
 * 19: none in the 6120 rows done by 16.5 s). So from the first block it holds only work the caller
 * says is irregular (other work once found so: found_not_said), where it is insurance with a price:
 * on the simulated mandelbrot and segments maps, whose dear rows are no surprise after the first
 * blocks, 0-1 % at 20000 items and more, 1.5-3 % at 5000 (so neither they nor the mandelbrot app
 * say so; spmv, whose long rows fall at random, does; docs/benchmarks.md, "Said to vary"). */
static double budget_size(const hlbp *h, const hpu *q, const hlb_curve *c, hlb__plb_memo *memo,
                          double left, double amort, double g) {
  double share = h->prm[P_BUDGET];
  int said = unseen_items_vary(h);
  if (!(share > 0) || !h->planned || !(said || found_not_said(h))) return INFINITY;
  double t_max = share * (h->target - h->t0);
  double floor_x = said ? amort : fmax(amort, flat_floor(q, g));
  return fmax(floor_x, hlb__plb_inverse_memo(memo, c, t_max, left));
}

static int hlb_next(void *state, unsigned pu, double now, size_t *count) {
  hlbp *h = state;
  if (pu >= h->n) return hlb__error(HLB_EINVAL, "hlb: pu %u out of range (%u PUs)", pu, h->n);
  if (!h->started) h->started = 1, h->t0 = now;
  hpu *q = &h->pu[pu];
  if (q->prior_n) check_prior_fit(h, pu); /* the PU's first grant after its priors */
  unsigned alive = hlb__plb_alive(h->ctx);
  double per_pu = (double)h->ctx->n_items / (alive ? alive : 1);
  if (alive == 1 && (q->u.rate > 0 || q->probes > 0)) {
    /* Alone (one PU from the start, or the others retired or released): nothing to balance
     * against, so after one probe (two sizes: its model gets a line for later runs) the rest
     * in one block: no ramp and no shrinking tail, only their cost per block. The cpu PU
     * alone ran matmul in 11 blocks, 23 % slower than one block (static). */
    size_t left = hlb_balancer_remaining(h->ctx->balancer);
    *count = left > 0 ? left : 1;
    /* Where small blocks win (best_block), alone too: one block would cost more. */
    if (q->ycap > 0 && (double)*count > q->ycap) {
      size_t capped = to_count(h, q->ycap);
      *count = capped < *count ? capped : *count;
    }
    return HLB_GRANT;
  }
  if (!(q->u.rate > 0)) { /* nothing learnt yet: probe */
    q->probes++;
    *count = hlb__plb_round(h->ctx, h->prm[P_PROBE] * per_pu);
    return HLB_GRANT;
  }
  plan_if_due(h, now, alive);
  h->since++;
  hlb_curve own; /* this PU's newest estimate: it may have moved since the solve */
  hlb__plb_curve_scaled(&own, &q->u.curve, q->corr);
  const hlb_curve *c = &own;
  /* Sizes below are costs in average items (counts when every item costs the same). */
  double left = hlb_balancer_remaining_cost(h->ctx->balancer);
  /* The block's three sizes by the curve (share, amortised, guarded) are bisections on the same
   * curve and range: their common first steps are evaluated once. */
  hlb__plb_memo memo;
  memo.c = NULL;
  double share = h->planned ? hlb__plb_inverse_memo(&memo, c, h->target - now, left) : left / alive;
  /* best_block: time enough for a capped block or more means capped blocks (L^-1). */
  double m_cap = capped_per_item(q, c);
  if (h->planned && m_cap > 0 && h->target - now >= m_cap * q->ycap)
    share = fmin((h->target - now) / m_cap, left);
  double g = (double)(h->ctx->granularity ? h->ctx->granularity : 1);
  /* At the very end, a PU whose share is under a granule waits when the busy PUs would do
   * every granule left before it could finish one. Earlier, a plan that says so is more
   * likely wrong than right, so the PU works, unless its granule would end well past the
   * finish (below); and with nobody busy it always works (a wait then could last forever). */
  if (share < g && hlb__plb_busy(h->ctx) > 0) {
    double own_g = hlb_curve_time(c, g);
    if (left <= h->prm[P_FRACTION] * per_pu && busy_absorb(h, pu, now, g, own_g, left))
      return HLB_WAIT;
    /* Nor does it work when its one granule would end past the common finish by more than
     * tail_idle of the predicted makespan: the busy PUs come back for what is left. Left to
     * work, such a PU (0.52 s of fixed cost, one item) ended 0.4 s after the other 63 of
     * `bench_sim superlinear`'s 64-PU cluster 1, whose run lasts 2.5 s. The rule above waits
     * only in the last fraction of a share: with 64 PUs that was too late. */
    /* Where the items are said to vary, the granule may be as late as the run's worst block:
     * machine B's CPU on the random spikes map (map seed 1, 5000 items, noiseless) took one
     * row predicted at 0.08 s, 0.26 s before the others were done; it was a spike and ended
     * 2.2 s after them (1.29 x the bound, greedy 1.25; 1.09 waiting). */
    double late = unseen_items_vary(h) && h->worst_late > 1.0 ? h->worst_late : 1.0;
    if (h->planned && now + own_g * late > latest_end(h)) return HLB_WAIT;
  }
  /* Smallest sensible block: min_fraction of a PU's share, and long enough to amortise the
   * curve's fixed cost. */
  /* Every block pays the fixed cost, so none is below the shortest block measured: on
   * irregular items a line's intercept is noise that would ask for blocks of thousands of
   * items (mandelbrot's rows). */
  double fixed = fmin(fixed_cost(c, g, q->u.max_items), q->min_t);
  double min_x = h->prm[P_MIN] * per_pu;
  double amort = hlb__plb_inverse_memo(&memo, c, fixed / h->prm[P_OVERHEAD], left);
  if (amort > min_x) min_x = amort;
  double x = h->prm[P_FRACTION] * share;
  if (x < min_x) x = min_x;
  /* The PU's last block: its whole share, rounded down. Rounded up it would end after the
   * common finish time, which nothing can repair; the granules left over go one by one to
   * whoever is free first (busy_absorb), or into this block when that is cheaper (take_rest,
   * below). */
  int last = share <= 2.0 * min_x || x > share;
  if (last) x = fmax(g, floor(share / g + 1e-9) * g);
  double cap = h->prm[P_GROW] * q->u.max_items;
  if (q->ycap > 0 && q->ycap < cap) cap = q->ycap; /* best_block */
  /* Two kinds of block grow by tail_grow only, where a curve read off smaller blocks hides what
   * larger ones meet (a cubic term, dearer items):
   * - Near the end, one that would take more than half the time left: no later block can correct
   *   a misprediction (bench_sim superlinear, 16 PUs, cluster 1: a PU with 0.52 s of fixed cost
   *   and a cubic term, blocks of 30 and 120 items behind it, was given 350 at 3.5 s, predicted to
   *   end with the others at 8.2 s by the line through them; it took 11.7 s, and the run 2.0 x
   *   the bound).
   * - Any block of a pass that starts from item costs an earlier pass measured (kmeans
   *   iterations, a stencil's steps, `hlb sim --passes`): it plans with confidence, but the map
   *   is a smoothed estimate. Grown by 4x, the spikes map's later passes met spikes the map had
   *   smeared (B's CPU: 201 rows at the start of a remembered pass, 277 s; 1.259 x the bound over
   *   passes 3 of 20 seeds, worst 2.60), and `bench_sim superlinear`'s 8-PU cluster 1 sent a
   *   cubic PU 5027 items into its wall (268 s, 19.4 x the bound). Grown by tail_grow: 1.033 and
   *   1.53 x (docs/benchmarks.md, "Later passes grow by tail_grow"). So does any block of a PU
   *   that starts from an earlier run's blocks (priors) without item costs: its first block is
   *   grow times the largest stored, and its time is not learnt (warm_up); the next grew by 2x
   *   again, a cubic PU of `bench_sim superlinear`'s 8-PU cluster 1 whose stored blocks were
   *   109 items going to 460 and 906 (28 s in a 14 s run).
   * The second lowers the cap even for a block already within it: take_rest reads the cap. In
   * such a pass a PU grows not at all past a size found dear (largest_size_dear), and a block
   * near the end hardly past its largest size (NEAR_END_GROW) whatever growing bought before: the
   * sizes the pass started from were measured, and the next one may be a wall the smaller ones
   * did not show. The 16-PU cluster 1's cubic PU above (0.52 s of fixed cost, best size 109
   * items) measured 0.0212 s an item at 52 items and 0.0193 at 208 in the first pass (by its
   * curve 0.0196 and 0.0202: noise), started the second from them, and was given 312 items 2.8 s
   * into it, predicted at 4.8 s with 5.3 s left: they took 9.9 s, the others idle 4.9 s (seed 3:
   * 1.68 x the bound, its first pass 1.07). Held near the end only where growing had bought
   * nothing, the remembered passes of `bench_sim superlinear`'s clusters ended 1.057 x the bound
   * (10 seeds), 1.062 without item costs; held whatever it bought, 1.046 and 1.049, the presets'
   * remembered passes unchanged (docs/benchmarks.md, "A remembered pass near the end"). A block
   * within tail_cap needs no curve evaluation. */
  int seen_before = hlb_balancer_items_measured(h->ctx->balancer) || q->priors > 0;
  double tail_cap = h->prm[P_TAIL_GROW] * q->u.max_items;
  int held = seen_before && q->largest_dear; /* not past the largest at all */
  /* Near the end (over half the time left), read only where it decides the cap. */
  int decides = seen_before ? !held && x > q->u.max_items : x > tail_cap;
  int near_end = decides && h->planned && hlb_curve_time(c, fmin(x, cap)) > 0.5 * (h->target - now);
  if (held)
    tail_cap = q->u.max_items;
  else if (seen_before && near_end)
    tail_cap = NEAR_END_GROW * q->u.max_items;
  if (seen_before || near_end) cap = fmin(cap, tail_cap);
  if (x > cap) x = cap, last = 0; /* cut: what is left is the PU's own next block */
  double budget = budget_size(h, q, c, &memo, left, amort, g);
  if (x > budget) x = budget, last = 0;
  double guard = guarded_size(h, q, c, now, left, &memo);
  if (guard < g && dear_granule_ends_late(h, q, now, g)) return HLB_WAIT;
  if (x > guard) { /* never above the plan's size */
    /* The amortising floor keeps a guarded block worth its fixed cost, but a last block beyond
     * every size the PU has run is a guess: it may be cut back to the largest. A PU with 0.52 s of
     * fixed cost and a cubic term, blocks of 13, 40 and 160 items behind it, was given its last
     * 238 (amort: 568), predicted at 3.8 s with 3.8 s left; they took 5.4 s, the others idle 1.9 s
     * (`bench_sim superlinear`'s 16-PU cluster 1, seed 6: 1.30 x the bound, 1.09 cut to 190). */
    double floor_amort = last ? fmin(amort, q->u.max_items) : amort;
    double guarded = fmin(x, fmax(guard, guard_floor(h, q, floor_amort, g, now)));
    /* What is cut off is the PU's own next block, or, off its last, crumbs for whoever is free
     * first (cut_pays). */
    if (guarded < x && (!last || cut_pays(h, q, c, x, guarded, fixed))) x = guarded, last = 0;
  }
  /* What this last block would leave over goes into it when that is cheaper (take_rest), unless
   * that goes beyond the cap: the curve says the rest costs less than a block's fixed cost only
   * where it was measured. A CPU that forgot its priors, its line read off 1- and 2-row blocks
   * (flat: no slope to speak of), took the 18037 rows left of 20000 in one block: 742 ms against
   * 1.6 ms for the GPU's share (the simulator's H100 model, spikes map, remembered pass, seed 6:
   * 37.9 x the bound, 1.07 with the cap). */
  if (last && left <= cap && take_rest(h, pu, c, now, x, left, g, fixed, alive)) x = left;
  /* Within the budget too: machine B's CPU on the random spikes map (map seed 16, 65536 items),
   * its line not yet shaped after one 26-row probe, was given its spread block of 104 rows
   * 2.4 s into a run predicted at 140 s; they met a spike slice and took 266 s (1.96 x the
   * bound over noise seeds 1-5, greedy 1.57). Held, it takes budget-sized blocks (1.09-1.12). */
  double spread = spread_block(h, q, c, now);
  if (spread > x && spread <= left && (spread <= budget || !unseen_items_vary(h))) x = spread;
  if (unshaped_ends_late(h, q, c, now, x)) return HLB_WAIT;
  *count = to_count(h, x);
  if (dear_item_ends_late(h, c, now, x, *count, g)) return HLB_WAIT;
  return HLB_GRANT;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Keep a prior's size and time for check_prior_fit (without memory it is not checked). */
static void keep_prior(hpu *q, double x, double t) {
  if (q->prior_n == q->prior_cap) {
    size_t cap = q->prior_cap ? 2 * q->prior_cap : 64;
    double *nx = realloc(q->prior_x, cap * sizeof *nx);
    if (!nx) return;
    q->prior_x = nx;
    double *nt = realloc(q->prior_t, cap * sizeof *nt);
    if (!nt) return;
    q->prior_t = nt;
    q->prior_cap = cap;
  }
  q->prior_x[q->prior_n] = x;
  q->prior_t[q->prior_n++] = t;
}

static void hlb_prior(void *state, unsigned pu, const hlb_sample *s) {
  hlbp *h = state;
  if (pu >= h->n || !hlb__plb_sample_ok(s)) return;
  learn(h, pu, s, 1, 0);
  h->pu[pu].priors++;
  h->any_priors = 1;
  /* Only a run of items not measured before checks them (check_prior_fit). */
  if (!hlb_balancer_items_measured(h->ctx->balancer))
    keep_prior(&h->pu[pu], hlb__plb_sample_x(s), hlb__plb_sample_s(s));
}

/* At a PU's first grant after its priors, before anything is planned from them: do they fit
 * the curve they gave? Priors of work whose items do not cost the same, stored without the
 * item costs that would explain them (a run over another item count, a file written without
 * them), scatter far around any curve: mandelbrot's rows cost 12 us to 1 ms each, and the
 * priors' median |ln(measured / predicted)| was 0.13-3.3 in `hlb sim`, most PUs' above 0.41.
 * Planned from such a curve, a block sized on cheap rows went into the set (predicted 3.4 ms, took
 * 245 ms: `hlb run mandelbrot --runtime starpu` with stored models took 0.30-0.45 s in 2 runs of 5
 * against 0.27 s; irregular-2machines-mandelbrot, `--passes 2 --remember --no-item-costs`,
 * 2.22 x the bound at seed 4). The guard did not stop it: it reads the PU's last 8 misses,
 * and the priors' last 8 were the previous run's tail, cheap rows predicted well. So when the
 * median miss is beyond prior_tolerance (the band the first blocks are checked against,
 * hlb_done) and the run has no item costs, the priors are forgotten now and the PU trains as
 * in a first run. The median, so that an odd stored block (a warm-up) does not condemn
 * uniform work (the 4x-throttled matmul's priors: 0.09 and 0.11). With item costs the priors
 * are in items of average cost and stay: a later pass over the same items (`hlb sim
 * --passes 3 --remember` on every preset gave the same figures with and without this). */
static void check_prior_fit(hlbp *h, unsigned p) {
  hpu *q = &h->pu[p];
  size_t m = 0;
  for (size_t i = 0; i < q->prior_n; i++) {
    double predicted = base_time(q, q->prior_x[i]) * q->corr;
    if (predicted > 0 && isfinite(predicted))
      q->prior_x[m++] = fabs(log(q->prior_t[i] / predicted));
  }
  double median = 0.0;
  if (m >= 2) {
    qsort(q->prior_x, m, sizeof *q->prior_x, by_value);
    median = m % 2 ? q->prior_x[m / 2] : 0.5 * (q->prior_x[m / 2 - 1] + q->prior_x[m / 2]);
  }
  drop_priors_kept(q);
  if (median > log(h->prm[P_PRIOR_TOL])) forget_priors(h, p);
}

/* The priors mispredicted this run's first blocks: forget them, the model's samples included,
 * and relearn from this run's blocks only. */
static void forget_priors(hlbp *h, unsigned p) {
  hpu *q = &h->pu[p];
  h->current[p] = 0;
  unsigned n = q->checked;
  hlb_sample fresh[8];
  memcpy(fresh, q->check_sample, n * sizeof *fresh);
  hlb_model_clear(h->ctx->models[p]);
  drop_priors_kept(q);
  /* The priors' fastest block stays: it bounds the fixed cost from below whatever else changed
   * (a loaded machine is slower, not faster), so it only makes a flat size harder to show. The
   * blocks relearnt below come in no order of size: after the mandelbrot map's second pass
   * forgot its priors, 1968 cheap rows in 4.3 s and then 45 dear ones in 4.1 s (the fastest and
   * smallest) read as flat to 1968 rows, and that floor sent 1968 rows into the set: 164 s, the
   * pass 1.73 x the bound (test_cost_map scattered_priors_are_not_trusted, seed 7). */
  double min_t = q->min_t;
  memset(q, 0, sizeof *q);
  q->min_t = min_t;
  q->corr = 1.0;
  q->next_fit = 3;
  q->forgot = 1;
  for (unsigned i = 0; i < n; i++) {
    hlb_model_add(h->ctx->models[p], hlb__plb_sample_x(&fresh[i]), fresh[i].compute_s,
                  fresh[i].transfer_s);
    learn(h, p, &fresh[i], 0, 0);
  }
  h->planned = 0;
}

/* One of the first blocks of a PU that started from priors: compare it with what the priors
 * predicted (base curve times correction, as next() planned it), before learning from it. */
static void check_priors(hlbp *h, unsigned p, const hlb_sample *s) {
  hpu *q = &h->pu[p];
  double predicted = base_time(q, hlb__plb_sample_x(s)) * q->corr;
  q->check_ratio[q->checked] = predicted > 0 ? hlb__plb_sample_s(s) / predicted : 1.0;
  q->check_sample[q->checked++] = *s;
}

static void hlb_done(void *state, unsigned pu, const hlb_sample *s) {
  hlbp *h = state;
  if (pu >= h->n) return;
  if (!hlb__plb_sample_ok(s)) {
    h->pu[pu].u.bad++; /* the items are processed; the times teach nothing */
    return;
  }
  hpu *q = &h->pu[pu];
  /* The first block a PU finishes in a run may carry one-time work that is no block's cost: a
   * GPU library's set-up and its kernels loaded lazily (an H100's first matmul block of one row:
   * 43 ms, later 27 rows in 0.35 ms), PoCL's first launch (3-4 ms). With priors to plan from,
   * that block is neither checked against them nor let move the correction: on the H100 it made
   * the priors read as wrong, they were forgotten, and the GPU retrained from its warm-up blocks
   * in every run. A PU without priors learns from it as from its probe. */
  int warm_up = q->priors > 0 && q->finished++ == 0;
  unsigned need = (unsigned)h->prm[P_PRIOR_CHECK];
  int checking = !warm_up && q->priors > 0 && q->checked < need;
  if (checking) check_priors(h, pu, s);
  learn(h, pu, s, 0, warm_up);
  if (!checking || q->checked < need) return;
  double r[8];
  memcpy(r, q->check_ratio, need * sizeof *r);
  qsort(r, need, sizeof *r, by_value);
  double median = need % 2 ? r[need / 2] : 0.5 * (r[need / 2 - 1] + r[need / 2]);
  double tol = h->prm[P_PRIOR_TOL];
  if (median > tol || median < 1.0 / tol) forget_priors(h, pu);
}

static void hlb_failed(void *state, unsigned pu, const hlb_block *blk) {
  hlbp *h = state;
  (void)pu;
  (void)blk;
  h->planned = 0; /* the items are back in the pool: redo the split */
}

/* The time next() expects for a block: the PU's curve times its correction. The model the
 * balancer would log instead is fitted only every refit_growth samples, and not at all while the
 * curve is the line (a fit that failed its checks): the 4x-throttled PU's later runs logged 18 ms
 * for 400-row blocks that took 260 ms, and `hlb report` called them mispredicted. */
static double hlb_predict(void *state, unsigned pu, double cost) {
  const hlbp *h = state;
  if (pu >= h->n || !(h->pu[pu].u.rate > 0)) return NAN;
  return base_time(&h->pu[pu], cost) * h->pu[pu].corr;
}

static void hlb_retired(void *state, unsigned pu) {
  hlbp *h = state;
  (void)pu;
  h->planned = 0;
}

/* The PU runs `speedup` times as fast from its next block on (a cpu PU given a released
 * device's cores): every time it holds goes into the new units, so its rate, line and
 * correction carry over and it plans at once with the capacity it has, without a probe. Its
 * octaves of block size (best_block, largest_size_dear) do not: sizes found dear on the cores it
 * had, beside the device that then held the others, say little of sizes on all of them.
 * Blackscholes' first run on `--pus all` on the 2-core VM read a cap of 35000-40000 options off the
 * cpu PU's blocks beside PoCL's probes, and after PoCL's release the cpu PU, alone on both cores,
 * did the remaining 3.9 million in 140-600 blocks of that size instead of one (docs/benchmarks.md,
 * "A cpu PU given a released device's cores"). Its model was scaled by the balancer
 * (hlb_model_scale_compute). */
static void hlb_resized(void *state, unsigned pu, double speedup) {
  hlbp *h = state;
  if (pu >= h->n || !(speedup > 0) || !isfinite(speedup)) return;
  hpu *q = &h->pu[pu];
  double f = 1.0 / speedup;
  q->u.sum_s *= f;
  q->u.sxt *= f;
  q->u.st *= f;
  q->u.rate *= speedup;
  for (int k = 0; k < HLB_TERM_COUNT; k++)
    q->u.curve.coef[k] *= f;
  for (unsigned i = 0; i < q->ring_n; i++)
    q->ring_t[i] *= f;
  for (size_t i = 0; i < q->prior_n; i++)
    q->prior_t[i] *= f;
  for (unsigned i = 0; i < q->checked; i++)
    q->check_sample[i].compute_s *= f;
  q->min_t *= f;
  memset(&q->bins, 0, sizeof q->bins);
  memset(&q->all, 0, sizeof q->all);
  memset(&q->computed, 0, sizeof q->computed);
  q->ycap = 0.0;
  q->largest_dear = largest_size_dear(q);
  h->current[pu] = 0;
  h->planned = 0; /* every share changes with this PU's speed */
}

const hlb_policy_ops hlb__policy_hlb = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .prior = hlb_prior,
    .name = "hlb",
    .description = "hlb's default: fitted curves, equal-finish-time split of the remaining "
                   "items with ready times, shrinking blocks, drift correction, no sync",
    .params = hlb_params,
    .n_params = P_COUNT,
    .init = hlb_init,
    .next = hlb_next,
    .done = hlb_done,
    .failed = hlb_failed,
    .retired = hlb_retired,
    .fini = hlb_fini,
    .flags = HLB_POLICY_USES_ITEM_COST,
    .predict = hlb_predict,
    .resized = hlb_resized,
};
