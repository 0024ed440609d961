/* hlb_starpu_memory (include/hlb/starpu.h): what runs of one workload learnt, for the next.
 * Each worker's newest finished blocks become the balancer's priors, as hlb's executor keeps
 * a codelet's samples between its runs (src/exec/models.c); the item cost density of the last
 * run is given to the next run over as many items, and kept in the model file with the samples
 * (docs/models.md, "Item costs"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/model_store.h"
#include "hlb/policy.h"
#include "internal.h"

/* Newest samples kept per worker: enough for a fit over every size a run used, few enough
 * that the priors follow a machine that changes. */
#define MEMORY_KEEP 256u

struct hlb_starpu_memory {
  hlb_sample *s[STARPU_NMAXWORKERS];
  size_t n[STARPU_NMAXWORKERS];
  /* Of each worker's samples, how many came from the model file (the oldest ones) and how
   * many runs added since it was read or saved (the newest ones), and whether a run forgot
   * the old ones (then the file's entry is replaced, not added to). */
  size_t stored[STARPU_NMAXWORKERS], fresh[STARPU_NMAXWORKERS];
  int replace[STARPU_NMAXWORKERS];
  char file[1024]; /* the model file read, "" when none */
  double item_cost[HLB_ITEM_COST_SLICES];
  unsigned n_item_cost;   /* 0: none known */
  size_t item_cost_items; /* of how many items */
  int item_cost_fresh;    /* learnt by a run since the file was read or saved */
  int item_cost_trusted;  /* they predicted a run (else on trial: hlb_balancer_item_cost_trusted) */
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

const double *hlb__sp_memory_item_cost(const hlb_starpu_memory *m, size_t n_items, unsigned *n,
                                       int *trusted) {
  int match = m->n_item_cost && m->item_cost_items == n_items;
  *n = match ? m->n_item_cost : 0;
  *trusted = match && m->item_cost_trusted;
  return match ? m->item_cost : NULL;
}

/* Append the newest samples of one worker, keeping MEMORY_KEEP; `replace` drops the old. */
static int append(hlb_starpu_memory *m, int id, const hlb_sample *s, size_t n, int replace) {
  size_t old = replace ? 0 : m->n[id], total = old + n;
  size_t keep = total < MEMORY_KEEP ? total : MEMORY_KEEP, dropped = total - keep;
  if (replace) m->stored[id] = m->fresh[id] = 0;
  m->stored[id] = m->stored[id] > dropped ? m->stored[id] - dropped : 0;
  m->fresh[id] = m->fresh[id] + n < keep ? m->fresh[id] + n : keep;
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
      if (d->pu == p && hlb_balancer_log_sample(b, d, &s[n])) n++; /* in average items */
    }
    /* The policy forgot the priors (its first blocks contradicted them): so does the memory. */
    size_t primed = hlb_balancer_primed(b, p);
    forgot[p] = primed > 0 && hlb_model_clears(hlb_balancer_model(b, p)) > 0;
    /* Samples in other units than the kept ones (item costs newly trusted, or found wanting)
     * replace them too, as forgotten priors do. */
    int replace = forgot[p] || hlb_balancer_samples_rescaled(b);
    if (replace) m->replace[ids[p]] = 1;
    rc = append(m, ids[p], s, n, replace);
  }
  free(s);
  /* A run without a usable block leaves nothing to learn of the items' costs: the last ones
   * stay. */
  if (!rc) {
    double cost[HLB_ITEM_COST_SLICES];
    if (hlb_balancer_item_cost(b, cost, HLB_ITEM_COST_SLICES) == 0) {
      memcpy(m->item_cost, cost, sizeof cost);
      m->n_item_cost = HLB_ITEM_COST_SLICES;
      m->item_cost_items = n_items;
      m->item_cost_fresh = 1;
      m->item_cost_trusted = hlb_balancer_item_cost_trusted(b);
    } else {
      hlb_clear_error();
    }
  }
  return rc;
}

int hlb__sp_memory_from_file(const hlb_starpu_memory *m, const int *ids, unsigned n_pus) {
  for (unsigned p = 0; p < n_pus; p++)
    if (m->stored[ids[p]]) return 1;
  return 0;
}

const char *hlb__sp_memory_file(const hlb_starpu_memory *m) {
  return m->file;
}

/* ---- models kept across processes (the executor's model files, docs/models.md) ---------- */

/* A worker's key in the model file: "starpu cpu:0|CPU 0|cores=1[|throttle=F]". The worker's
 * name and StarPU's description of it, since StarPU numbers and binds its workers the same way
 * from run to run; "starpu " keeps the entries apart from the executor's PUs in the same file
 * (the codelet and its data sizes make the file). The throttle is the emulated one: a worker
 * slowed 4x is another PU. */
static void worker_key(int id, const hlb_starpu_options *o, char *out, size_t cap) {
  hlb_exec_pu pu = {.cores = 1};
  char name[32];
  snprintf(pu.name, sizeof pu.name, "starpu %s", hlb_starpu_worker_name(id, name, sizeof name));
  starpu_worker_get_name(id, pu.device_name, sizeof pu.device_name);
  pu.throttle = o && o->throttle[id] > 1 ? o->throttle[id] : 0.0;
  hlb__model_pu_key(&pu, 1, out, cap);
}

static int is_balanced_worker(int id) {
  char name[32];
  return hlb_starpu_worker_name(id, name, sizeof name)[0] != 0;
}

/* The arguments checked, the model directory (path, 1024 bytes) and the codelet's file key
 * (key, 160 bytes). */
static int model_file(const hlb_starpu_memory *m, const hlb_codelet *cl, const char *dir,
                      const char *fn, char *path, char *key) {
  if (!m || !cl) return hlb__error(HLB_EINVAL, "%s: memory and codelet must not be NULL", fn);
  int rc = hlb__model_dir(dir, path, 1024);
  if (!rc) hlb__model_codelet_key(cl, key, 160);
  return rc;
}

int hlb_starpu_memory_load(hlb_starpu_memory *m, const hlb_codelet *cl, const hlb_starpu_options *o,
                           const char *dir) {
  char path[1024], key[160], wkey[320];
  int rc = model_file(m, cl, dir, "hlb_starpu_memory_load", path, key);
  if (rc) return rc;
  hlb__model_set set = {0};
  if ((rc = hlb__model_read(path, key, &set))) return rc;
  unsigned workers = starpu_worker_get_count();
  for (unsigned id = 0; id < workers && id < STARPU_NMAXWORKERS && !rc; id++) {
    if (!is_balanced_worker((int)id)) continue;
    worker_key((int)id, o, wkey, sizeof wkey);
    const hlb__stored_pu *e = hlb__model_find(&set, wkey);
    if (!e || !e->n) continue;
    /* The file's samples are older than any this memory holds: they go first. */
    size_t had = m->n[id];
    hlb_sample *mine = had ? malloc(had * sizeof *mine) : NULL;
    if (had && !mine) {
      rc = hlb__error(HLB_ENOMEM, "hlb_starpu_memory_load: out of memory");
      break;
    }
    if (had) memcpy(mine, m->s[id], had * sizeof *mine);
    size_t fresh = m->fresh[id];
    rc = append(m, (int)id, e->s, e->n, 1);
    if (!rc) rc = append(m, (int)id, mine, had, 0);
    free(mine);
    m->fresh[id] = fresh < m->n[id] ? fresh : m->n[id];
    m->stored[id] = m->n[id] - m->fresh[id];
  }
  /* The file's item costs, unless a run of this memory learnt newer ones. */
  if (!rc && set.n_item_cost && !m->item_cost_fresh) {
    memcpy(m->item_cost, set.item_cost, set.n_item_cost * sizeof *m->item_cost);
    m->n_item_cost = set.n_item_cost;
    m->item_cost_items = set.item_cost_items;
    m->item_cost_trusted = set.item_cost_trusted;
  }
  hlb__model_set_free(&set);
  if (!rc) hlb__model_path(path, key, m->file, sizeof m->file);
  return rc;
}

int hlb_starpu_memory_save(hlb_starpu_memory *m, const hlb_codelet *cl, const hlb_starpu_options *o,
                           const char *dir) {
  char path[1024], key[160], wkey[320];
  int rc = model_file(m, cl, dir, "hlb_starpu_memory_save", path, key);
  if (rc) return rc;
  hlb__model_set add = {0};
  for (unsigned id = 0; id < STARPU_NMAXWORKERS && !rc; id++) {
    if (!m->fresh[id] && !m->replace[id]) continue;
    worker_key((int)id, o, wkey, sizeof wkey);
    rc = hlb__model_append(&add, wkey, m->s[id] + (m->n[id] - m->fresh[id]), m->fresh[id]);
    if (!rc) ((hlb__stored_pu *)hlb__model_find(&add, wkey))->replace = m->replace[id];
  }
  if (!rc && m->item_cost_fresh) {
    rc = hlb__model_set_item_cost(&add, m->item_cost, m->n_item_cost, m->item_cost_items,
                                  m->item_cost_trusted);
    add.item_cost_learnt = rc == 0;
  }
  if (!rc && (add.n_pu || add.item_cost_learnt)) rc = hlb__model_write(path, key, cl->name, &add);
  hlb__model_set_free(&add);
  if (rc) return rc;
  /* Saved: they are the file's now, and a later save adds only what runs add after this. */
  for (unsigned id = 0; id < STARPU_NMAXWORKERS; id++) {
    m->stored[id] = m->n[id];
    m->fresh[id] = 0;
    m->replace[id] = 0;
  }
  m->item_cost_fresh = 0;
  if (!m->file[0]) hlb__model_path(path, key, m->file, sizeof m->file);
  return 0;
}
