/* greedy: StarPU's default dispatch, the papers' reference (PLB-HeC I and IV: "dividing the input
 * set in pieces and assigning each piece of input to any idle processing unit, without any
 * priority assignment"; PLB-HAC 4). Every request gets the same chunk. PLB-HeC V.A used the same
 * initial block size for every algorithm, so the default chunk is that block size. */
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

enum { P_CHUNK, P_FRACTION, P_COUNT };

static const hlb_param_def greedy_params[P_COUNT] = {
    [P_CHUNK] = {"chunk", 0, 0, 1e15,
                 "items per block; 0 = the initial block size x_init shared by all algorithms "
                 "(PLB-HeC, section V.A)"},
    [P_FRACTION] = {"initial_fraction", HLB__INITIAL_FRACTION, 1e-9, 1,
                    "with chunk=0: fraction of the data the initial phase covers, x_init = "
                    "fraction * n / (15 P) (PLB-HeC, section V.A: about 10 %)"},
};

typedef struct greedy_state {
  size_t chunk;
} greedy_state;

static int greedy_init(const hlb_policy_ctx *ctx, void **state) {
  greedy_state *s = malloc(sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "greedy: out of memory");
  double chunk = ctx->param[P_CHUNK];
  s->chunk = chunk >= 1 ? (size_t)chunk : hlb__initial_block(ctx, ctx->param[P_FRACTION]);
  *state = s;
  return 0;
}

static int greedy_next(void *state, unsigned pu, double now, size_t *count) {
  (void)pu, (void)now;
  *count = ((greedy_state *)state)->chunk;
  return HLB_GRANT;
}

static void greedy_done(void *state, unsigned pu, const hlb_sample *s) {
  (void)state, (void)pu, (void)s;
}

static void greedy_fini(void *state) {
  free(state);
}

const hlb_policy_ops hlb__policy_greedy = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "greedy",
    .description = "fixed chunks to the first idle PU (StarPU's default; PLB-HeC IV)",
    .params = greedy_params,
    .n_params = P_COUNT,
    .init = greedy_init,
    .next = greedy_next,
    .done = greedy_done,
    .fini = greedy_fini,
};
