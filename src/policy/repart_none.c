/* `none`: never repartition. The baseline of every SPMD comparison (FLEX-MPI's T_par, FLEX-MPI 4).
 */
#include <stdlib.h>

#include "policy/repart_common.h"

static int none_init(const hlb_repart_ctx *ctx, void **state) {
  (void)ctx;
  *state = NULL;
  return 0;
}

static int none_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  (void)state;
  (void)iv;
  (void)counts;
  (void)new_counts;
  d->rebalance = 0;
  return 0;
}

static void none_fini(void *state) {
  (void)state;
}

const hlb_repart_ops hlb__repart_none = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "none",
    .description = "never repartition (equal split, the papers' baseline)",
    .init = none_init,
    .decide = none_decide,
    .fini = none_fini,
};
