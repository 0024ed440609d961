/* One lookup for both policy registries (block policies, repartition policies): the same
 * precedence (the caller's name, then the option's environment variable, then the default),
 * the same `help`, and the same ABI check. */
#ifndef HLB_POLICY_LOOKUP_H
#define HLB_POLICY_LOOKUP_H

#include <stdint.h>

typedef struct hlb__registry {
  const char *kind;     /* "policy", "repartition policy": used in messages */
  const char *kinds;    /* its plural */
  const char *option;   /* the options-table row whose environment variable names one */
  const char *fallback; /* the default name */
  unsigned (*count)(void);
  /* Entry i's name, description and ABI version. */
  void (*entry)(unsigned i, const char **name, const char **description, uint32_t *abi);
} hlb__registry;

extern const hlb__registry hlb__block_policies, hlb__repart_policies;

/* Entry index of `name` (NULL or "" falls back as above). "help" lists the entries on stderr
 * and fails with HLB_ENOTFOUND, as does an unknown name (the message lists the known ones and
 * says where the name came from); an entry built for another ABI fails with HLB_EINVAL. */
int hlb__registry_lookup(const hlb__registry *r, const char *name, unsigned *index);

#endif
