/* The balancer: a work pool, one performance model per PU, and a policy (docs/architecture.md).
 *
 * Drivers (simulator, threaded executor, MPI layer) call three functions:
 *   hlb_balancer_next()  a PU is ready: get its next block, or wait, or stop;
 *   hlb_balancer_done()  a block finished: its measured times become a model sample;
 *   hlb_balancer_fail()  a block was lost: its items go back to the pool.
 * The balancer knows nothing about threads, devices or simulated time; `now` is whatever
 * clock the driver uses, in seconds.
 *
 * Thread safety: a hlb_balancer is NOT locked. A driver with several threads serialises
 * its calls (the executor holds one mutex around them).
 */
#ifndef HLB_BALANCER_H
#define HLB_BALANCER_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/export.h"
#include "hlb/model.h"

HLB_BEGIN_DECLS

/* Results of hlb_balancer_next() (positive, so they never collide with HLB_E* codes). */
enum {
  HLB_GRANT = 1, /* *out holds a block for this PU */
  HLB_WAIT = 2,  /* nothing for this PU now; ask again after the next done/fail */
  HLB_DONE = 3   /* every item is processed, or this PU is retired: the PU can stop */
};

/* A contiguous range of items [begin, begin + count) handed to one PU. */
typedef struct hlb_block {
  uint64_t id; /* unique per balancer, in grant order */
  size_t begin;
  size_t count;
  unsigned pu;
  double granted_s; /* the driver's `now` when granted */
} hlb_block;

/* What a driver measured for a finished block. Times in seconds; compute and transfer are
 * measured separately so they feed F and G. NaN, infinite, negative or zero compute time
 * is a bad measurement: the block still counts as processed, the sample is not fitted. */
typedef struct hlb_sample {
  hlb_block block;
  double compute_s;
  double transfer_s;
  double end_s; /* the driver's `now` at completion */
  /* Filled by the balancer before the policy's done() (drivers leave it 0): the block's cost
   * in average items, what the PU's model was fed. The count unless the policy works with an
   * item cost density (hlb_balancer_config.item_cost). */
  double cost;
} hlb_sample;

/* What the driver knows about a PU before any run. */
typedef struct hlb_pu_desc {
  const char *name;  /* shown in logs and reports */
  const char *kind;  /* "cpu", "gpu", "opencl", ... */
  double speed_hint; /* relative speed for the `proportional` policy; 0 = unknown (1) */
  size_t min_block;  /* smallest block worth sending (except the pool's tail); 0 = granularity */
  size_t max_block;  /* largest block the PU can hold; 0 = no limit */
  /* Largest first block of the PU, whatever the policy asks (0 = no limit; rounded down to the
   * granularity, at least one granule). For a PU whose first block costs more than its own
   * time: the executor gives a device that holds a core of the cpu PU a first block of one
   * granule when nothing is known of it, since that block holds the core until it ends. */
  size_t first_block;
} hlb_pu_desc;

typedef struct hlb_balancer_config {
  size_t n_items;     /* items to process; > 0 */
  size_t granularity; /* blocks are multiples of this, except the last; 0 means 1 */
  unsigned n_pus;     /* > 0 */
  const hlb_pu_desc *pus;
  const char *policy; /* NULL: $HLB_POLICY, then HLB_POLICY_DEFAULT (policy.h) */
  const char *params; /* "name=value,name=value"; NULL: $HLB_POLICY_PARAMS, else defaults */
  int keep_log;       /* keep the decision log (hlb_balancer_log) */
  /* What earlier runs measured: prior[p] holds n_prior[p] samples of PU p (block.count,
   * compute_s and transfer_s are read; NULL or 0: none). When the policy takes priors
   * (hlb_policy_ops.prior) each is fed to the PU's model and the policy before the first
   * grant, so the run starts from what was learnt instead of probing; otherwise they are
   * ignored. Invalid samples are skipped. NULL: no priors. */
  const hlb_sample *const *prior;
  const size_t *n_prior;
  /* What an earlier pass over the same items measured of their cost (hlb_balancer_item_cost):
   * the relative cost of n_item_cost equal slices of the items, any positive scale. A policy
   * that works with costs (HLB_POLICY_USES_ITEM_COST: hlb) then sizes blocks by their cost
   * and its PUs' models are fed costs instead of counts (docs/policies.md, "Items that do not
   * cost the same"). NULL or 0: every item costs the same. Copied at create. */
  const double *item_cost;
  unsigned n_item_cost;
  /* Nonzero: item_cost has not yet shown that it predicts a pass better than counts (the last
   * pass's hlb_balancer_item_cost_trusted was 0, or nothing was said). The balancer sizes by
   * count and scores item_cost against this pass's blocks instead of using it. Needs
   * learn_item_cost (without it the costs are used, as with 0). */
  int item_cost_on_trial;
  /* Keep what hlb_balancer_item_cost needs (begin, count, PU and time of every finished
   * block: 32 bytes a block). */
  int learn_item_cost;
  /* Nonzero: the caller says the items' costs differ in ways their count does not show
   * (hlb_codelet.items_vary; a simulated cluster's cost_map.declared). Where no earlier pass
   * measured them (hlb_balancer_items_measured), a block may meet items dearer than any seen, and a
   * policy may keep blocks short for it (the hlb policy's block_budget) and read a dearer size
   * as dearer items rather than a curve (its best_block is off there). */
  int items_vary;
} hlb_balancer_config;

typedef struct hlb_balancer hlb_balancer;

/* The relative cost of m equal slices of the items (mean 1), learnt from this run's finished
 * blocks (docs/policies.md, "Items that do not cost the same"): pass it as item_cost to the
 * next pass over the same items. Needs learn_item_cost; HLB_EINVAL without it or without a
 * finished block with usable times. */
HLB_EXTERN int hlb_balancer_item_cost(const hlb_balancer *b, double *out, unsigned m);
/* Whether the item costs this pass was given (used, or item_cost_on_trial) predicted its
 * finished blocks better than their counts did, out of sample since they came from an earlier
 * pass: costs on trial by a clear margin (a misfit under 0.7 of the counts'), costs given
 * whole (trusted by the pass before) or over items the caller says vary (items_vary) by any
 * (under the counts'). 1 when the next pass should size by hlb_balancer_item_cost's costs, 0
 * when it should take them with item_cost_on_trial. 0 when no costs were given, or too few
 * blocks finished to tell (each PU's first block and PUs of under 4 blocks are not scored). A map
 * learnt from the noise of work whose items all cost the same fits its own pass, not the next: on
 * an H100 such maps sent the cpu PU 570 matmul rows predicted at 3.3 ms that took 656 ms. */
HLB_EXTERN int hlb_balancer_item_cost_trusted(const hlb_balancer *b);
/* 1 when the samples hlb_balancer_log_sample keeps are in other units than those the caller
 * kept before this pass (with learn_item_cost): costs on trial that predicted the pass (counts
 * then, costs from now on), or trusted costs that no longer predict (the reverse). Samples
 * stored before are then in the old units: the caller drops them, so that no run fits one
 * curve to two units. 0 otherwise. */
HLB_EXTERN int hlb_balancer_samples_rescaled(const hlb_balancer *b);
/* 1 when this pass was given its item costs on trial (item_cost_on_trial with
 * learn_item_cost): blocks sized by count, the costs scored. */
HLB_EXTERN int hlb_balancer_item_cost_on_trial(const hlb_balancer *b);
/* The finest a balancer resolves item costs: the m to ask hlb_balancer_item_cost for. */
#define HLB_ITEM_COST_SLICES 1024u
/* The coefficient of variation of m item costs (a map as hlb_balancer_item_cost gives it): 0 for
 * none (m 0) or a flat one. */
HLB_EXTERN double hlb_item_cost_spread(const double *cost, unsigned m);
/* A map that spreads by less says its items cost alike (hlb_item_cost_spread): costs on trial
 * then read as items of one cost (hlb_balancer_items_look_uniform), and the executor judges a
 * released device's trial as it goes (include/hlb/exec.h, HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO).
 * Maps learnt from items of one cost spread by 0.009-0.17 on the simulator's presets and
 * 0.05-0.14 on `bench_sim superlinear`'s clusters (noise 0.05 and each PU's quadratic, cubic or
 * x ln x term read through a line), those of the mandelbrot, segments and spikes maps by 1.0-1.8
 * and the H100 model's by 0.63-1.03 (its host delays alone 0.63). In real runs on a 2-core VM
 * (2026-12-08): k-means' and spmv's by 0.000, blackscholes' by 0.08, matmul's by 0.68 (the noise
 * of first blocks) and mandelbrot's by 1.08. */
#define HLB_ITEM_COST_FLAT 0.3

/* Create a balancer. HLB_ENOTFOUND for an unknown policy name, HLB_EINVAL for bad sizes or
 * parameters; hlb_last_error() says which. */
HLB_EXTERN int hlb_balancer_create(const hlb_balancer_config *cfg, hlb_balancer **out);
HLB_EXTERN void hlb_balancer_destroy(hlb_balancer *b);

/* PU `pu` is ready for work at time `now`. Returns HLB_GRANT (block in *out), HLB_WAIT or
 * HLB_DONE, or a negative HLB_E* code. While no item is left to grant
 * (hlb_balancer_remaining() is 0) and some are in flight, every PU not retired gets HLB_WAIT:
 * only a failure, which returns items, or the last done can change that. */
HLB_EXTERN int hlb_balancer_next(hlb_balancer *b, unsigned pu, double now, hlb_block *out);

/* Block s->block finished on PU `pu`. Returns 0; HLB_ESAMPLE when the block is recorded as
 * processed but its times were rejected; HLB_ESTATE for a block that is not in flight. */
HLB_EXTERN int hlb_balancer_done(hlb_balancer *b, unsigned pu, const hlb_sample *s);

/* Block `blk` was lost on PU `pu` at time `now`: its items return to the pool to be granted
 * again. HLB_ESTATE for a block that is not in flight. */
HLB_EXTERN int hlb_balancer_fail(hlb_balancer *b, unsigned pu, const hlb_block *blk, double now);

/* PU `pu` will never take work again (device failed, rank died). Its blocks in flight must
 * be reported with hlb_balancer_fail() first. If every PU is retired with items left, the
 * run cannot finish: hlb_balancer_next() returns HLB_ESTATE. */
HLB_EXTERN int hlb_balancer_retire(hlb_balancer *b, unsigned pu);

/* PU `pu` runs `speedup` (finite, > 0) times as fast from its next block on: a cpu PU that
 * was given the cores of a device released mid-run (cores after / cores before). Its model's
 * compute times so far, and those of its blocks in flight when they finish (they ran on what
 * it had), are divided by `speedup` before the model and the policy see them; the decision log
 * keeps them as measured. The policy is told (hlb_policy_ops.resized). A retired PU, or a
 * speed-up of 1, changes nothing. HLB_EINVAL for a bad PU or speed-up. */
HLB_EXTERN int hlb_balancer_resize(hlb_balancer *b, unsigned pu, double speedup);

/* From its next grant on, PU `pu` gets blocks of at most `max_block` items (0: no limit),
 * rounded down to the granularity and raised to its min_block: the executor bounds what a
 * device it is trying alone holds before it is judged, growing the cap as its blocks finish
 * (exec.c, "A trial cut short"). Blocks in flight are not touched; what a capped grant leaves
 * goes to whoever asks, as with a max_block given at creation. HLB_EINVAL for a bad PU. */
HLB_EXTERN int hlb_balancer_cap(hlb_balancer *b, unsigned pu, size_t max_block);

/* From its next grant on, PU `pu` gets blocks of at least `min_block` items (0: one granule),
 * rounded up to the granularity, except the pool's tail; a max_block below it is raised to it.
 * The executor makes a device it is trying alone grow its blocks (exec.c, "A trial cut short"):
 * a policy that reads its first blocks, launches more than items, as a curve where small blocks
 * win would hold it to them. HLB_EINVAL for a bad PU. */
HLB_EXTERN int hlb_balancer_floor(hlb_balancer *b, unsigned pu, size_t min_block);

/* Items never granted or granted and returned by a failure. */
HLB_EXTERN size_t hlb_balancer_remaining(const hlb_balancer *b);
/* 1 when every item is processed. */
HLB_EXTERN int hlb_balancer_finished(const hlb_balancer *b);

/* Prove every item was processed exactly once: 0, or HLB_EVERIFY with the first range that
 * was missed or processed twice in hlb_last_error(). */
HLB_EXTERN int hlb_balancer_check_exactly_once(const hlb_balancer *b);

/* The policy's name, as resolved. */
HLB_EXTERN const char *hlb_balancer_policy(const hlb_balancer *b);

/* PU `pu`'s model (fitted from the samples so far); never NULL for a valid pu. */
HLB_EXTERN const struct hlb_model *hlb_balancer_model(const hlb_balancer *b, unsigned pu);

/* One entry of the decision log: a grant and, once known, its outcome. */
typedef enum hlb_outcome {
  HLB_OUTCOME_PENDING = 0,
  HLB_OUTCOME_DONE,
  HLB_OUTCOME_FAILED
} hlb_outcome;
typedef struct hlb_decision {
  double time_s; /* `now` at the grant */
  unsigned pu;
  size_t begin, count;
  double predicted_s;           /* model's F+G for the block at grant time; NaN without a model */
  double measured_s;            /* compute + transfer when done; NaN otherwise */
  double compute_s, transfer_s; /* as measured; NaN otherwise */
  double end_s;                 /* `now` when done or failed; NaN while pending */
  double solver_s;              /* wall time the policy spent deciding this block */
  hlb_outcome outcome;
} hlb_decision;

/* The decision log (empty unless cfg.keep_log). Valid until the next call on b. */
HLB_EXTERN size_t hlb_balancer_log(const hlb_balancer *b, const hlb_decision **entries);

/* Log entry d (hlb_balancer_log of b) as a sample to keep for later runs (priors, model
 * files): 1 when d is a finished block with valid times, with *out its PU, begin and times
 * and as its count the block's cost in items of average cost, at least 1, under the item costs
 * the next pass sizes its blocks by. Without learn_item_cost: the costs this run sized by
 * (hlb_balancer_range_cost), else the count. With it: when the costs the run was given
 * predicted it (hlb_balancer_item_cost_trusted), the costs it sized by or, when it sized by
 * count, those it learnt (hlb_balancer_item_cost, the costs the caller stores beside the
 * samples); else (costs that go on trial, or none given) the count itself; when that differs
 * from the pass's own units, hlb_balancer_samples_rescaled says so. A first run of mandelbrot under
 * StarPU stored its samples in rows beside the row costs it learnt; the next run, sizing by those
 * costs, read a 42-row block of cheap rows as 42 average rows and fitted a constant: a 685-row
 * block predicted at 0.6 ms took 55 ms, and 4 second runs in 18 ended 17-71 % imbalanced. So kept
 * samples measure one thing whether their run sized blocks by cost or not: a pass of a power-law
 * spmv whose blocks the item costs sized held 20x more of the cheap rows than of the dear ones for
 * the same time, and counted as rows those blocks made a later run's first pass fit noise (twice
 * the blocks under StarPU). Else 0. */
HLB_EXTERN int hlb_balancer_log_sample(const hlb_balancer *b, const hlb_decision *d,
                                       hlb_sample *out);

/* Prior samples of PU `pu` that the balancer fed to its model and policy at create time (0
 * when there were none or the policy takes no priors). */
HLB_EXTERN size_t hlb_balancer_primed(const hlb_balancer *b, unsigned pu);

/* Total wall time spent inside the policy, seconds. */
HLB_EXTERN double hlb_balancer_solver_seconds(const hlb_balancer *b);

/* Finished blocks whose times the models rejected (hlb_balancer_done returned HLB_ESAMPLE). */
HLB_EXTERN size_t hlb_balancer_rejected(const hlb_balancer *b);
/* Blocks granted so far, and items processed so far (each counted once). */
HLB_EXTERN uint64_t hlb_balancer_blocks(const hlb_balancer *b);
HLB_EXTERN size_t hlb_balancer_processed(const hlb_balancer *b);

HLB_END_DECLS

#endif
