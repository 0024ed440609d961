/* acosta: Acosta, Blanco and Almeida's relative-power balancer, as PLB-HeC II describes it.
 *
 * Work goes in iterations. Every PU records the time it spent on its last block; when the
 * difference between those times is larger than a user threshold, each PU's relative power
 * RP_p = load_p / time_p is computed, SRP = sum of RP, and the next load of p is
 * RP_p / SRP of the iteration's total. Iterations are synchronised ("synchronizations are
 * made at each iteration to determine if there is need to rebalance") until the loads reach
 * an equilibrium, which is approached asymptotically (PLB-HeC, section V.B.c); once balanced the
 * PUs run asynchronously with their loads, and an imbalance seen again restarts the synchronised
 * iterations. The first iteration gives every PU the initial block size used for all
 * algorithms (PLB-HeC, section V.A), so an iteration's total is P * x_init.
 */
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

enum { P_THRESHOLD, P_FRACTION, P_COUNT };

static const hlb_param_def acosta_params[P_COUNT] = {
    [P_THRESHOLD] = {"threshold", 0.10, 0, 10,
                     "rebalance when (max - min) / max of the last block times exceeds this; "
                     "PLB-HeC II says 'defined by user', 0.10 as for PLB-HeC in PLB-HeC V.A"},
    [P_FRACTION] =
        {"initial_fraction", HLB__INITIAL_FRACTION, 1e-9, 1,
         "first iteration's load x_init = fraction * n / (15 P) per PU (PLB-HeC, section V.A)"},
};

typedef struct acosta_state {
  const hlb_policy_ctx *ctx;
  double threshold;
  double *load;   /* next block size of each PU, items */
  double *last_t; /* seconds of each PU's last valid block; NaN before one */
  double *last_x; /* items of that block */
  hlb__rounds rounds;
  int sync;         /* 1 while iterations are synchronised */
  unsigned checked; /* finished blocks since the last imbalance check (async mode) */
} acosta_state;

static void acosta_fini(void *state) {
  acosta_state *s = state;
  free(s->load);
  free(s->last_t);
  free(s->last_x);
  hlb__rounds_fini(&s->rounds);
  free(s);
}

static int acosta_init(const hlb_policy_ctx *ctx, void **state) {
  acosta_state *s = calloc(1, sizeof *s);
  unsigned n = ctx->n_pus;
  if (!s || !(s->load = malloc(n * sizeof(double))) || !(s->last_t = malloc(n * sizeof(double))) ||
      !(s->last_x = malloc(n * sizeof(double))) || hlb__rounds_init(&s->rounds, n)) {
    if (s) acosta_fini(s);
    return hlb__error(HLB_ENOMEM, "acosta: cannot allocate state for %u PUs", n);
  }
  s->ctx = ctx;
  s->threshold = ctx->param[P_THRESHOLD];
  double x0 = (double)hlb__initial_block(ctx, ctx->param[P_FRACTION]);
  for (unsigned p = 0; p < n; p++) {
    s->load[p] = x0;
    s->last_t[p] = s->last_x[p] = NAN;
  }
  s->sync = 1;
  *state = s;
  return 0;
}

/* (max - min) / max of the last block times of the live PUs that have one. */
static double imbalance(const acosta_state *s) {
  double lo = INFINITY, hi = 0;
  for (unsigned p = 0; p < s->ctx->n_pus; p++) {
    if (!hlb_balancer_pu_alive(s->ctx->balancer, p) || isnan(s->last_t[p])) continue;
    lo = s->last_t[p] < lo ? s->last_t[p] : lo;
    hi = s->last_t[p] > hi ? s->last_t[p] : hi;
  }
  return hi > 0 ? (hi - lo) / hi : 0;
}

/* New loads RP_p / SRP of the iteration's total, over the PUs whose power is known; the
 * others keep their load. */
static void rebalance(acosta_state *s) {
  double total = 0, srp = 0;
  for (unsigned p = 0; p < s->ctx->n_pus; p++) {
    if (!hlb_balancer_pu_alive(s->ctx->balancer, p) || isnan(s->last_t[p])) continue;
    total += s->load[p];
    srp += s->last_x[p] / s->last_t[p];
  }
  if (!(srp > 0)) return;
  for (unsigned p = 0; p < s->ctx->n_pus; p++)
    if (hlb_balancer_pu_alive(s->ctx->balancer, p) && !isnan(s->last_t[p]))
      s->load[p] = total * (s->last_x[p] / s->last_t[p]) / srp;
}

/* End of a synchronised iteration: rebalance, or go asynchronous when balanced. */
static void close_iteration(acosta_state *s) {
  if (imbalance(s) > s->threshold)
    rebalance(s);
  else
    s->sync = 0;
  s->rounds.round++;
}

static int acosta_next(void *state, unsigned pu, double now, size_t *count) {
  (void)now;
  acosta_state *s = state;
  if (s->sync && hlb__rounds_served(&s->rounds, pu)) {
    if (s->rounds.outstanding) return HLB_WAIT;
    close_iteration(s);
  }
  hlb__rounds_grant(&s->rounds, pu);
  *count = s->load[pu] < 1 ? 1 : (size_t)llround(s->load[pu]);
  return HLB_GRANT;
}

static void acosta_back(acosta_state *s) {
  if (hlb__rounds_back(&s->rounds) && s->sync) close_iteration(s);
}

static void acosta_done(void *state, unsigned pu, const hlb_sample *smp) {
  acosta_state *s = state;
  double t = hlb__sample_seconds(smp);
  if (!isnan(t)) {
    s->last_t[pu] = t;
    s->last_x[pu] = (double)smp->block.count;
  }
  /* Asynchronous mode checks the balance once per P finished blocks, keeping done() O(1)
   * amortised; an imbalance brings back the synchronised iterations. */
  if (!s->sync && ++s->checked >= hlb_balancer_alive(s->ctx->balancer)) {
    s->checked = 0;
    if (imbalance(s) > s->threshold) {
      s->sync = 1;
      s->rounds.round++; /* every PU's current block belongs to the iteration now closing */
      for (unsigned p = 0; p < s->ctx->n_pus; p++)
        s->rounds.round_of[p] = s->rounds.round;
    }
  }
  acosta_back(s);
}

static void acosta_failed(void *state, unsigned pu, const hlb_block *blk) {
  (void)pu, (void)blk;
  acosta_back(state);
}

const hlb_policy_ops hlb__policy_acosta = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "acosta",
    .description = "Acosta et al.: relative power of the last blocks, synchronised "
                   "iterations until balanced (PLB-HeC, section II)",
    .params = acosta_params,
    .n_params = P_COUNT,
    .init = acosta_init,
    .next = acosta_next,
    .done = acosta_done,
    .failed = acosta_failed,
    .fini = acosta_fini,
};
