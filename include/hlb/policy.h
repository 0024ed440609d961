/* Policies: the part of the balancer that decides block sizes (docs/architecture.md, "Policies").
 *
 * A policy is a table of functions registered by name in src/policy/registry.c. The balancer
 * owns the pool and the models; it feeds each finished block to the PU's model, then calls
 * the policy's done(). next() only chooses a size: the balancer clamps it to the PU's
 * min/max block, the granularity and the items left, and carves the range.
 *
 * Thread safety: the balancer serialises every call into a policy. The registry functions
 * read a constant table and are safe from any thread.
 */
#ifndef HLB_POLICY_H
#define HLB_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/balancer.h"
#include "hlb/export.h"

HLB_BEGIN_DECLS

#define HLB_POLICY_ABI_VERSION 1u

typedef struct hlb_model hlb_model;

/* A tunable constant of a policy. Every paper constant is one of these, with the paper's
 * value as default and the paper's section in `doc`. */
typedef struct hlb_param_def {
  const char *name;
  double dflt;
  double lo, hi; /* accepted range, inclusive */
  const char *doc;
} hlb_param_def;

/* What a policy sees. Valid from init() to fini(). */
typedef struct hlb_policy_ctx {
  unsigned n_pus;
  const hlb_pu_desc *pus; /* defaults applied: speed_hint 0 -> 1, min_block (0 = one granule) up
                             and max_block down to the granularity (0 stays "no limit") */
  size_t n_items;
  size_t granularity;
  hlb_model *const *models;     /* one per PU, owned by the balancer, fed before done() */
  const double *param;          /* values of the policy's params, in the order of its table */
  const hlb_balancer *balancer; /* for the queries below */
} hlb_policy_ctx;

typedef struct hlb_policy_ops {
  uint32_t abi_version; /* HLB_POLICY_ABI_VERSION */
  uint32_t struct_size; /* sizeof(hlb_policy_ops) */
  const char *name;
  const char *description; /* one line, shown by `hlb policies` */
  const hlb_param_def *params;
  unsigned n_params;
  int (*init)(const hlb_policy_ctx *ctx, void **state);
  /* Size of the next block for `pu` at `now`: return HLB_GRANT with *count > 0, or HLB_WAIT
   * (e.g. a synchronising rebalance), or a negative HLB_E*. Called only while items remain. */
  int (*next)(void *state, unsigned pu, double now, size_t *count);
  /* Every finished block, after the PU's model was fed. It is called also when the model
   * rejected the times (NaN, negative...): the block still counts as processed, so check
   * hlb_sample_valid() before using s->compute_s or s->transfer_s. */
  void (*done)(void *state, unsigned pu, const hlb_sample *s);
  /* Optional (may be NULL): a block was lost; a PU was retired. */
  void (*failed)(void *state, unsigned pu, const hlb_block *blk);
  void (*retired)(void *state, unsigned pu);
  void (*fini)(void *state);
  /* Optional (may be NULL): options for the per-PU models (e.g. forgetting), from the
   * policy's parameter values; called once before the models are created. Without it the
   * models use hlb_model_options_default(). */
  void (*model_options)(const double *param, hlb_model_options *opt);
  /* Optional (may be NULL): a sample that a previous run measured on this PU
   * (hlb_balancer_config.prior), after the PU's model was fed with it; all of them come
   * after init() and before the first next(). A policy without it starts from nothing, and
   * the balancer then does not feed the models either. A policy that takes priors checks them
   * against the run's first blocks and forgets them (hlb_model_clear) when they mispredict. */
  void (*prior)(void *state, unsigned pu, const hlb_sample *s);
  /* HLB_POLICY_* flags below (0: none). */
  uint32_t flags;
  /* Optional (may be NULL): the seconds the policy expects a block of `cost` to take on `pu`
   * (a count when there are no item costs), as it sized the block; NaN when it has no estimate.
   * It goes into the decision log (hlb_decision.predicted_s). Without it the log takes the
   * PU's model as the policy last fitted it, which is stale for a policy that plans from
   * something else between fits (hlb's straight line, its correction factor). */
  double (*predict)(void *state, unsigned pu, double cost);
  /* Optional (may be NULL): PU `pu` runs `speedup` times as fast from its next block on
   * (hlb_balancer_resize: a cpu PU given a released device's cores). The PU's model and the
   * samples of its blocks still in flight are already in its new units when this is called;
   * what the policy holds of it (rates, curves, sizes found best) is in the old ones. */
  void (*resized)(void *state, unsigned pu, double speedup);
} hlb_policy_ops;

/* The policy sizes blocks by their cost (hlb_balancer_range_cost and friends) when the
 * balancer has an item cost density, and so takes its models fed with costs. */
#define HLB_POLICY_USES_ITEM_COST 1u

/* Registry. */
HLB_EXTERN unsigned hlb_policy_count(void);
HLB_EXTERN const hlb_policy_ops *hlb_policy_at(unsigned i);
HLB_EXTERN const hlb_policy_ops *hlb_policy_find(const char *name);
/* The name used when neither the API nor $HLB_POLICY names one: hlb's own policy. */
#define HLB_POLICY_DEFAULT "hlb"

/* Queries a policy may make on its balancer. */
/* Blocks of `pu` in flight (granted, not yet done or failed). */
HLB_EXTERN unsigned hlb_balancer_in_flight(const hlb_balancer *b, unsigned pu);
/* The oldest block of `pu` in flight; 0 if none. */
HLB_EXTERN int hlb_balancer_oldest_in_flight(const hlb_balancer *b, unsigned pu, hlb_block *out);
/* 1 while `pu` has not been retired. */
HLB_EXTERN int hlb_balancer_pu_alive(const hlb_balancer *b, unsigned pu);
/* PUs not retired. O(1), like every query here. */
HLB_EXTERN unsigned hlb_balancer_alive(const hlb_balancer *b);
/* PUs with at least one block in flight, and blocks in flight over all PUs. */
HLB_EXTERN unsigned hlb_balancer_busy(const hlb_balancer *b);
HLB_EXTERN size_t hlb_balancer_in_flight_total(const hlb_balancer *b);

/* Item costs, in average items (docs/policies.md, "Items that do not cost the same"): without
 * an item cost density, or for a policy without HLB_POLICY_USES_ITEM_COST, a cost is a count.
 * The cost of items [begin, begin + count): */
HLB_EXTERN double hlb_balancer_range_cost(const hlb_balancer *b, size_t begin, size_t count);
/* 1 when costs are not counts: the balancer has an item cost density and the policy uses it. */
HLB_EXTERN int hlb_balancer_has_item_cost(const hlb_balancer *b);
/* 1 when an earlier pass over these items measured them: its item costs size this pass's
 * blocks (hlb_balancer_has_item_cost), or are on trial (hlb_balancer_config.item_cost_on_trial:
 * blocks sized by count, the costs scored) for items the caller did not say vary. The items are
 * then not seen for the first time: a miss is noise or a slow PU, not an unforeseen dear region,
 * and a policy's guards for work seen once need not bind. Costs on trial over items said to vary
 * (items_vary) place none of the dear ones, and such a pass counts as unmeasured. */
HLB_EXTERN int hlb_balancer_items_measured(const hlb_balancer *b);
/* 1 when the caller said the items' costs vary (hlb_balancer_config.items_vary). */
HLB_EXTERN int hlb_balancer_items_vary(const hlb_balancer *b);
/* 1 when this pass's item costs are on trial, vary little over the items (their coefficient of
 * variation under 0.3), and this pass's finished blocks do not say otherwise: each PU's line of
 * time against count misses them by little more than noise, or too few are scored to tell. An
 * earlier pass measured the items and found nothing in their costs to tell apart; a policy may
 * size such a pass as it would a first pass over uniform items. */
HLB_EXTERN int hlb_balancer_items_look_uniform(const hlb_balancer *b);
/* The cost of every item still in the pool. O(ranges given back by failures). */
HLB_EXTERN double hlb_balancer_remaining_cost(const hlb_balancer *b);
/* How many items the next grant would hold for a block of this cost (at least 1, at most what
 * the range the next grant comes from holds). */
HLB_EXTERN size_t hlb_balancer_count_for_cost(const hlb_balancer *b, double cost);
/* The cost of the first `count` items the next grant would hold (count itself without item
 * costs; at most what the range the next grant comes from holds): what a block of that count
 * would really cost, where a block asked for by cost is rounded up to one dear item. */
HLB_EXTERN double hlb_balancer_cost_for_count(const hlb_balancer *b, size_t count);

/* 1 when the sample's times are usable (finite, compute > 0, transfer >= 0, count > 0): the
 * same test the models apply, so a policy can skip what the model rejected. */
HLB_EXTERN int hlb_sample_valid(const hlb_sample *s);

HLB_END_DECLS

#endif
