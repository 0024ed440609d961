/* The balancer's state, shared by the files of src/balancer and visible to its unit tests.
 *
 * Thread safety: none (see include/hlb/balancer.h); the driver serialises calls.
 */
#ifndef HLB_BALANCER_INTERNAL_H
#define HLB_BALANCER_INTERNAL_H

#include "balancer/density.h"
#include "balancer/flight.h"
#include "balancer/pool.h"
#include "hlb/policy.h"

/* Per-PU state of the balancer. */
typedef struct hlb__pu_state {
  hlb__flight_list flying; /* blocks in flight, oldest first */
  int alive;
  size_t granted; /* blocks granted so far (hlb_pu_desc.first_block) */
} hlb__pu_state;

struct hlb_balancer {
  const hlb_policy_ops *ops;
  void *state; /* the policy's */
  hlb_policy_ctx ctx;
  double *param;    /* ctx.param, in the order of ops->params */
  hlb_pu_desc *pus; /* copy of cfg.pus with defaults applied; names copied below */
  char *names;      /* storage of the copied name and kind strings */
  hlb_model **models;
  size_t *primed; /* per PU: prior samples fed at create */
  hlb__pu_state *pu;
  unsigned n_pus, alive;
  size_t n_items, granularity;
  hlb__pool pool;
  hlb__flights flights;
  uint64_t next_id;
  size_t in_flight; /* over all PUs */
  unsigned busy;    /* PUs with a block in flight */
  size_t rejected;
  double solver_s;
  int keep_log;
  hlb_decision *log;
  size_t n_log, cap_log;
  /* Item costs (density.h): used when the policy works with costs and a density was given. */
  hlb__density density;
  int use_cost;
  int learn_cost;        /* keep finished blocks for hlb_balancer_item_cost */
  int items_vary;        /* the caller said the items' costs vary (config.items_vary) */
  hlb__density_obs *obs; /* finished blocks with usable times, when learn_cost */
  size_t n_obs, cap_obs;
  /* hlb_balancer_log_sample in a run that learnt item costs without sizing by them: what it
   * learnt, from the first n_learnt observations (recomputed when more came). */
  hlb__density learnt;
  size_t n_learnt;
  /* Costs an earlier pass learnt that have not yet predicted a pass (item_cost_on_trial), or
   * given to a policy that does not size by costs: whole, to be scored against this pass's
   * blocks; empty otherwise. */
  hlb__density trial;
  double trial_spread; /* hlb__density_spread of trial */
  /* hlb_balancer_item_cost_trusted from the first n_judged observations. */
  int trusted;
  size_t n_judged;
  /* count_misfit: the counts' misfit to the first n_count_judged
   * observations, n_count_scored of them scored. */
  double count_misfit;
  size_t n_count_judged, n_count_scored;
  /* The costs given: none, on trial (blocks sized by count), trusted (blocks sized by them):
   * the units of the samples the caller kept before this pass. */
  enum { GIVEN_NONE, GIVEN_ON_TRIAL, GIVEN_WHOLE } given;
};

/* Resolve a policy name: `name`, else $HLB_POLICY, else HLB_POLICY_DEFAULT. "help" prints
 * the registered policies on stderr and returns HLB_ENOTFOUND. */
int hlb__policy_resolve(const char *name, const hlb_policy_ops **out);

/* For tests of the exactly-once proof: record a completed range as if a block had been
 * processed, bypassing the in-flight bookkeeping. */
int hlb__balancer_record_completed(hlb_balancer *b, size_t begin, size_t count);

#endif
