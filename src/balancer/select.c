/* Block policy selection: the API argument, then $HLB_POLICY, then HLB_POLICY_DEFAULT, through
 * the lookup both policy registries share (src/policy/lookup.c). */
#include "balancer/balancer_internal.h"
#include "policy/lookup.h"

int hlb__policy_resolve(const char *name, const hlb_policy_ops **out) {
  unsigned i = 0;
  int rc = hlb__registry_lookup(&hlb__block_policies, name, &i);
  if (rc == 0) *out = hlb_policy_at(i);
  return rc;
}
