/* proportional: one block per PU, sized by the PU's speed_hint (the weight-factor division
 * of PLB-HeC II, "divide the tasks according to a weight factor representing the processing
 * speed"; unknown speeds count as 1). Items that come back go to the PUs that ask, split by
 * the same weights (policy/common.h). */
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

static int prop_init(const hlb_policy_ctx *ctx, void **state) {
  hlb__split *s = malloc(sizeof *s);
  double *w = malloc(ctx->n_pus * sizeof *w);
  if (!s || !w) {
    free(s);
    free(w);
    return hlb__error(HLB_ENOMEM, "proportional: cannot allocate state for %u PUs", ctx->n_pus);
  }
  for (unsigned p = 0; p < ctx->n_pus; p++)
    w[p] = ctx->pus[p].speed_hint; /* the balancer made unknown (0) speeds 1 */
  int rc = hlb__split_init(s, ctx, w);
  free(w);
  if (rc) {
    free(s);
    return rc;
  }
  *state = s;
  return 0;
}

static int prop_next(void *state, unsigned pu, double now, size_t *count) {
  (void)now;
  return hlb__split_next(state, pu, count);
}

static void prop_done(void *state, unsigned pu, const hlb_sample *smp) {
  (void)state, (void)pu, (void)smp;
}

static void prop_retired(void *state, unsigned pu) {
  hlb__split_retired(state, pu);
}

static void prop_fini(void *state) {
  hlb__split_fini(state);
  free(state);
}

const hlb_policy_ops hlb__policy_proportional = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "proportional",
    .description = "one block per PU sized by its speed_hint (unknown = 1)",
    .init = prop_init,
    .next = prop_next,
    .done = prop_done,
    .retired = prop_retired,
    .fini = prop_fini,
};
