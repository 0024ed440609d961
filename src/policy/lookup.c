/* hlb__registry_lookup: see lookup.h. */
#include <stdio.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/options_internal.h"
#include "hlb/policy.h"
#include "policy/lookup.h"

static void print_entries(const hlb__registry *r, const char *env, FILE *to) {
  fprintf(to, "%s (select with %s=name; default %s):\n", r->kinds, env, r->fallback);
  for (unsigned i = 0; i < r->count(); i++) {
    const char *name, *description;
    uint32_t abi;
    r->entry(i, &name, &description, &abi);
    fprintf(to, "  %-14s %s\n", name, description);
  }
}

static void list_names(const hlb__registry *r, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < r->count() && used < n; i++) {
    const char *name, *description;
    uint32_t abi;
    r->entry(i, &name, &description, &abi);
    used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", name);
  }
}

int hlb__registry_lookup(const hlb__registry *r, const char *name, unsigned *index) {
  const hlb_option_def *opt = hlb_option_find(r->option);
  char from[64] = "the caller";
  if (!name || !*name) {
    name = hlb_option_env(opt);
    snprintf(from, sizeof from, "$%s", opt && opt->env ? opt->env : "?");
  }
  if (!name) {
    name = r->fallback;
    snprintf(from, sizeof from, "the default");
  }
  if (!strcmp(name, "help")) {
    print_entries(r, opt && opt->env ? opt->env : "?", stderr);
    return hlb__error(HLB_ENOTFOUND, "%s 'help' (from %s): listed them on stderr", r->kind, from);
  }
  for (unsigned i = 0; i < r->count(); i++) {
    const char *entry_name, *description;
    uint32_t abi;
    r->entry(i, &entry_name, &description, &abi);
    if (strcmp(entry_name, name)) continue;
    if (abi != HLB_POLICY_ABI_VERSION)
      return hlb__error(HLB_EINVAL, "%s '%s': built for ABI %u, this library speaks %u", r->kind,
                        name, (unsigned)abi, (unsigned)HLB_POLICY_ABI_VERSION);
    *index = i;
    return 0;
  }
  char names[1024];
  list_names(r, names, sizeof names);
  return hlb__error(HLB_ENOTFOUND, "unknown %s '%s' (from %s); known: %s", r->kind, name, from,
                    names);
}
