/* static: the equal split. Each PU's first block is n/P items; this is the homogeneous
 * division the papers start from (PLB-HeC, section I: "tasks of the same size"). Items that come
 * back (failures, a PU's max_block) go to the PUs that ask, split equally (policy/common.h). */
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

static int static_init(const hlb_policy_ctx *ctx, void **state) {
  hlb__split *s = malloc(sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "static: out of memory");
  int rc = hlb__split_init(s, ctx, NULL);
  if (rc) {
    free(s);
    return rc;
  }
  *state = s;
  return 0;
}

static int static_next(void *state, unsigned pu, double now, size_t *count) {
  (void)now;
  return hlb__split_next(state, pu, count);
}

static void static_done(void *state, unsigned pu, const hlb_sample *smp) {
  (void)state, (void)pu, (void)smp;
}

static void static_retired(void *state, unsigned pu) {
  hlb__split_retired(state, pu);
}

static void static_fini(void *state) {
  hlb__split_fini(state);
  free(state);
}

const hlb_policy_ops hlb__policy_static = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "static",
    .description = "equal split: one block of n/P items per PU",
    .init = static_init,
    .next = static_next,
    .done = static_done,
    .retired = static_retired,
    .fini = static_fini,
};
