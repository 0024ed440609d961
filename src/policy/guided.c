/* guided: OpenMP's schedule(guided). Each request gets a chunk proportional to the items
 * not yet assigned divided by the number of PUs, ceil(remaining / (k P)), never below
 * min_chunk. The OpenMP specification (schedule clause, kind guided) uses k = 1 and a
 * default chunk_size of 1. */
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

enum { P_K, P_MIN, P_COUNT };

static const hlb_param_def guided_params[P_COUNT] = {
    [P_K] = {"k", 1, 1, 1e6, "divisor: chunk = remaining / (k * alive PUs) (OpenMP guided: 1)"},
    [P_MIN] = {"min_chunk", 1, 1, 1e15, "smallest chunk in items (OpenMP default chunk_size: 1)"},
};

typedef struct guided_state {
  const hlb_policy_ctx *ctx;
} guided_state;

static int guided_init(const hlb_policy_ctx *ctx, void **state) {
  guided_state *s = malloc(sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "guided: out of memory");
  s->ctx = ctx;
  *state = s;
  return 0;
}

static int guided_next(void *state, unsigned pu, double now, size_t *count) {
  (void)pu, (void)now;
  const hlb_policy_ctx *c = ((guided_state *)state)->ctx;
  unsigned alive = hlb_balancer_alive(c->balancer);
  double per = c->param[P_K] * (alive ? alive : 1);
  size_t chunk = hlb__share(hlb_balancer_remaining(c->balancer), 1.0, per);
  size_t lo = (size_t)c->param[P_MIN];
  *count = chunk < lo ? lo : chunk;
  return HLB_GRANT;
}

static void guided_done(void *state, unsigned pu, const hlb_sample *s) {
  (void)state, (void)pu, (void)s;
}

static void guided_fini(void *state) {
  free(state);
}

const hlb_policy_ops hlb__policy_guided = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "guided",
    .description = "OpenMP guided: chunks of remaining/(k*P), shrinking to min_chunk",
    .params = guided_params,
    .n_params = P_COUNT,
    .init = guided_init,
    .next = guided_next,
    .done = guided_done,
    .fini = guided_fini,
};
