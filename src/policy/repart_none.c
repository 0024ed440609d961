/* `none`: never repartition. The baseline of every SPMD comparison (FLEX-MPI's T_par, FLEX-MPI 4).
 * It still checks and counts the measurements like every policy, so a run under `none` reports
 * the same rejected intervals as a run under another policy. */
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

extern const hlb_repart_ops hlb__repart_none;

static int none_init(const hlb_repart_ctx *ctx, void **state) {
  hlb__repart_base *b = calloc(1, sizeof *b);
  if (!b) return hlb__error(HLB_ENOMEM, "none repartition: out of memory");
  int rc = hlb__repart_base_init(b, &hlb__repart_none, ctx, 0);
  if (rc) {
    free(b);
    return rc;
  }
  *state = b;
  return 0;
}

static int none_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  return hlb__repart_admit(state, iv, counts, new_counts, d); /* keeps counts, rebalance 0 */
}

static void none_fini(void *state) {
  if (state) hlb__repart_base_fini(state);
  free(state);
}

const hlb_repart_ops hlb__repart_none = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "none",
    .description = "never repartition (equal split, the papers' baseline)",
    .init = none_init,
    .decide = none_decide,
    .fini = none_fini,
    .stats = hlb__repart_base_stats,
};
