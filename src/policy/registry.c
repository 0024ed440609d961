/* The policy registry: a table built from policies.def, so adding a policy is adding its
 * file and one line there. The table is constant, so every function here is thread-safe. */
#include <string.h>

#include "hlb/policy.h"
#include "policy/lookup.h"

#define HLB_POLICY_ENTRY(sym) extern const hlb_policy_ops sym;
#include "policy/policies.def"
#undef HLB_POLICY_ENTRY

static const hlb_policy_ops *const registry[] = {
#define HLB_POLICY_ENTRY(sym) &sym,
#include "policy/policies.def"
#undef HLB_POLICY_ENTRY
};

unsigned hlb_policy_count(void) {
  return (unsigned)(sizeof registry / sizeof registry[0]);
}

const hlb_policy_ops *hlb_policy_at(unsigned i) {
  return i < hlb_policy_count() ? registry[i] : NULL;
}

const hlb_policy_ops *hlb_policy_find(const char *name) {
  if (!name) return NULL;
  for (unsigned i = 0; i < hlb_policy_count(); i++)
    if (!strcmp(registry[i]->name, name)) return registry[i];
  return NULL;
}

static void entry(unsigned i, const char **name, const char **description, uint32_t *abi) {
  *name = registry[i]->name;
  *description = registry[i]->description;
  *abi = registry[i]->abi_version;
}

const hlb__registry hlb__block_policies = {"policy",           "policies",       "policy",
                                           HLB_POLICY_DEFAULT, hlb_policy_count, entry};
