/* Policy selection: API argument, then $HLB_POLICY, then HLB_POLICY_DEFAULT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer/balancer_internal.h"
#include "common/error_internal.h"

static void print_policies(FILE *to) {
  fprintf(to, "hlb policies (select with HLB_POLICY=name; default %s):\n", HLB_POLICY_DEFAULT);
  for (unsigned i = 0; i < hlb_policy_count(); i++) {
    const hlb_policy_ops *p = hlb_policy_at(i);
    fprintf(to, "  %-14s %s\n", p->name, p->description);
  }
}

static void list_policies(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < hlb_policy_count() && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", hlb_policy_at(i)->name);
}

int hlb__policy_resolve(const char *name, const hlb_policy_ops **out) {
  const char *from = "the API";
  if (!name || !*name) {
    name = getenv("HLB_POLICY");
    from = "$HLB_POLICY";
  }
  if (!name || !*name) {
    name = HLB_POLICY_DEFAULT;
    from = "the default";
  }
  if (!strcmp(name, "help")) {
    print_policies(stderr);
    return hlb__error(HLB_ENOTFOUND, "policy 'help' (from %s): listed the policies on stderr",
                      from);
  }
  *out = hlb_policy_find(name);
  if (!*out) {
    char names[1024];
    list_policies(names, sizeof names);
    return hlb__error(HLB_ENOTFOUND, "unknown policy '%s' (from %s); registered: %s", name, from,
                      names);
  }
  return 0;
}
