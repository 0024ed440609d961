/* hlb_starpu_memory (include/hlb/starpu.h): what runs of one workload learnt, for the next.
 * Each worker's newest finished blocks become the balancer's priors, as hlb's executor keeps
 * a codelet's samples between its runs (src/exec/models.c); the item cost density of the last
 * run is given to the next run over as many items. */
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/policy.h"
#include "internal.h"

/* Newest samples kept per worker: enough for a fit over every size a run used, few enough
 * that the priors follow a machine that changes. */
#define MEMORY_KEEP 256u

struct hlb_starpu_memory {
  hlb_sample *s[STARPU_NMAXWORKERS];
  size_t n[STARPU_NMAXWORKERS];
  double item_cost[HLB_ITEM_COST_SLICES];
  size_t item_cost_items; /* 0: none learnt */
};

int hlb_starpu_memory_create(hlb_starpu_memory **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_starpu_memory_create: out must not be NULL");
  *out = calloc(1, sizeof **out);
  return *out ? 0 : hlb__error(HLB_ENOMEM, "hlb_starpu_memory_create: out of memory");
}

void hlb_starpu_memory_destroy(hlb_starpu_memory *m) {
  if (!m) return;
  for (unsigned i = 0; i < STARPU_NMAXWORKERS; i++)
    free(m->s[i]);
  free(m);
}

void hlb__sp_memory_priors(const hlb_starpu_memory *m, const int *ids, unsigned n_pus,
                           const hlb_sample **prior, size_t *n_prior) {
  for (unsigned p = 0; p < n_pus; p++) {
    prior[p] = m->s[ids[p]];
    n_prior[p] = m->n[ids[p]];
  }
}

const double *hlb__sp_memory_item_cost(const hlb_starpu_memory *m, size_t n_items) {
  return m->item_cost_items == n_items ? m->item_cost : NULL;
}

/* Append the newest samples of one worker, keeping MEMORY_KEEP; `replace` drops the old. */
static int append(hlb_starpu_memory *m, int id, const hlb_sample *s, size_t n, int replace) {
  size_t old = replace ? 0 : m->n[id], total = old + n;
  size_t keep = total < MEMORY_KEEP ? total : MEMORY_KEEP;
  hlb_sample *all = malloc((total ? total : 1) * sizeof *all);
  if (!all) return hlb__error(HLB_ENOMEM, "hlb_starpu_memory: out of memory");
  if (old) memcpy(all, m->s[id], old * sizeof *all);
  if (n) memcpy(all + old, s, n * sizeof *all);
  memmove(all, all + (total - keep), keep * sizeof *all);
  free(m->s[id]);
  m->s[id] = all;
  m->n[id] = keep;
  return 0;
}

int hlb__sp_memory_keep(hlb_starpu_memory *m, const hlb_balancer *b, const int *ids, unsigned n_pus,
                        size_t n_items, int *forgot) {
  const hlb_decision *log = NULL;
  size_t n_log = hlb_balancer_log(b, &log);
  hlb_sample *s = malloc((n_log ? n_log : 1) * sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "hlb_starpu_memory: out of memory");
  int rc = 0;
  for (unsigned p = 0; p < n_pus && !rc; p++) {
    size_t n = 0;
    for (size_t k = 0; k < n_log; k++) {
      const hlb_decision *d = &log[k];
      if (d->pu != p || d->outcome != HLB_OUTCOME_DONE) continue;
      hlb_sample x = {.block = {.begin = d->begin, .count = d->count, .pu = p},
                      .compute_s = d->compute_s,
                      .transfer_s = d->transfer_s};
      if (hlb_sample_valid(&x)) s[n++] = x;
    }
    /* The policy forgot the priors (its first blocks contradicted them): so does the memory. */
    size_t primed = hlb_balancer_primed(b, p);
    forgot[p] = primed > 0 && hlb_model_samples(hlb_balancer_model(b, p)) < primed;
    rc = append(m, ids[p], s, n, forgot[p]);
  }
  free(s);
  /* A run without a usable block leaves nothing to learn of the items' costs. */
  if (!rc) {
    if (hlb_balancer_item_cost(b, m->item_cost, HLB_ITEM_COST_SLICES) == 0) {
      m->item_cost_items = n_items;
    } else {
      m->item_cost_items = 0;
      hlb_clear_error();
    }
  }
  return rc;
}
