/* Registry of the repartition policies (include/hlb/repartition.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/repartition.h"
#include "policy/lookup.h"
#include "policy/params.h"

#define HLB_REPART_ENTRY(sym) extern const hlb_repart_ops sym;
#include "policy/repartitions.def"
#undef HLB_REPART_ENTRY

static const hlb_repart_ops *const registry[] = {
#define HLB_REPART_ENTRY(sym) &sym,
#include "policy/repartitions.def"
#undef HLB_REPART_ENTRY
};

unsigned hlb_repart_count(void) {
  return (unsigned)(sizeof registry / sizeof registry[0]);
}

const hlb_repart_ops *hlb_repart_at(unsigned i) {
  return i < hlb_repart_count() ? registry[i] : NULL;
}

const hlb_repart_ops *hlb_repart_find(const char *name) {
  for (unsigned i = 0; name && i < hlb_repart_count(); i++)
    if (!strcmp(registry[i]->name, name)) return registry[i];
  return NULL;
}

static void entry(unsigned i, const char **name, const char **description, uint32_t *abi) {
  *name = registry[i]->name;
  *description = registry[i]->description;
  *abi = registry[i]->abi_version;
}

const hlb__registry hlb__repart_policies = {"repartition policy", "repartition policies",
                                            "repart-policy",      HLB_REPART_DEFAULT,
                                            hlb_repart_count,     entry};

int hlb_repart_params(const hlb_repart_ops *ops, const char *text, double *values) {
  return hlb__params_parse(ops->name, ops->params, ops->n_params, text, values);
}

typedef struct share_rest {
  double frac;
  unsigned index;
} share_rest;

static int by_remainder_desc(const void *a, const void *b) {
  const share_rest *x = a, *y = b;
  if (x->frac != y->frac) return x->frac < y->frac ? 1 : -1;
  return x->index < y->index ? -1 : (x->index > y->index); /* stable: deterministic on ties */
}

int hlb_split_proportional(const double *share, unsigned n, size_t total, size_t *counts) {
  double sum = 0.0;
  for (unsigned i = 0; i < n; i++) {
    if (!(share[i] >= 0.0) || !isfinite(share[i]))
      return hlb__error(HLB_EINVAL, "split: share[%u] must be finite and >= 0, got %g", i,
                        share[i]);
    sum += share[i];
  }
  if (n == 0 || !(sum > 0.0))
    return hlb__error(HLB_EINVAL, "split: need at least one positive share among %u", n);
  share_rest *rem = malloc(n * sizeof *rem);
  if (!rem) return hlb__error(HLB_ENOMEM, "split: out of memory for %u shares", n);
  size_t given = 0;
  for (unsigned i = 0; i < n; i++) {
    double exact = (double)total * share[i] / sum;
    counts[i] = (size_t)floor(exact);
    given += counts[i];
    rem[i] = (share_rest){exact - floor(exact), i};
  }
  /* Rounding of the exact shares can overshoot by one in rare cases: take it back from the
   * largest counts. */
  for (unsigned i = 0; given > total; i = (i + 1) % n)
    if (counts[i] > 0) {
      counts[i]--;
      given--;
    }
  qsort(rem, n, sizeof *rem, by_remainder_desc);
  for (unsigned k = 0; given < total; k = (k + 1) % n, given++)
    counts[rem[k].index]++;
  free(rem);
  return 0;
}
