/* Models kept across runs in the MPI executor (docs/models.md, "MPI runs"): every host keeps
 * the samples of its own PUs in its own model file, as a threaded run does, and the balancer of
 * the executor's rank 0 starts from all of them.
 *
 * Before the run each rank reads its host's file (the model directory of its own options or
 * environment; a directory shared by the hosts holds one subdirectory per host) and sends its
 * PUs' stored samples to rank 0, which gives them to the balancer as priors. After the run
 * rank 0 sends each rank the blocks its PUs finished (from the decision logs of the run's
 * balancers), and each rank adds them to its file: the files' lock and merge make ranks of one
 * host writing at once lose nothing. The mode (on, read, write, off) is rank 0's.
 *
 * All of it is collective over the executor's communicator and its rank 0: the whole job in the
 * flat mode; in the hierarchical mode (src/mpi/hier.c) a node's ranks and their leader, whose
 * balancers (one per share) each give their finished blocks to hlb__dx_models_keep before they
 * go. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/model_store.h"
#include "mpi/dexec_internal.h"

/* One PU's samples on the wire: a fixed record, so that the gather and scatter of every PU's
 * samples are one collective each. */
typedef struct dx_pu_samples {
  uint64_t n;
  double x[HLB__MODEL_KEEP], compute_s[HLB__MODEL_KEEP], transfer_s[HLB__MODEL_KEEP];
} pu_samples;

static void *alloc_or_abort(const dx *x, size_t n, size_t each) {
  void *p = calloc(n ? n : 1, each);
  if (!p) {
    fprintf(stderr, "hlb_mpi_run: rank %d: out of memory for the models of %zu PUs\n", x->rank, n);
    MPI_Abort(x->comm, 1);
  }
  return p;
}

/* The codelet's file name and this rank's model directory; 0 when the rank has none (it then
 * neither reads nor writes, and rank 0 notes why in its stats). */
static int where(dx *x, char *dir, size_t dir_cap, char *key, size_t key_cap) {
  hlb__model_codelet_key(&x->cl, key, key_cap);
  if (hlb__model_dir(x->opt.model_dir, dir, dir_cap) == 0) return 1;
  if (x->rank == 0) snprintf(x->model_error, sizeof x->model_error, "%s", hlb_last_error());
  hlb_clear_error();
  return 0;
}

void hlb__dx_models_begin(dx *x) {
  pu_samples *mine = alloc_or_abort(x, x->n_local, sizeof *mine);
  char dir[1024], key[256];
  if ((x->opt.models & HLB_MODELS_READ) && where(x, dir, sizeof dir, key, sizeof key)) {
    hlb__model_set set = {0};
    if (x->rank == 0) hlb__model_path(dir, key, x->model_file, sizeof x->model_file);
    if (hlb__model_read(dir, key, &set) != 0) hlb_clear_error(); /* out of memory: none */
    for (unsigned l = 0; l < x->n_local; l++) {
      char pu_key[320];
      hlb__model_pu_key(&x->loc[l].pu, x->loc[l].pu.cores, pu_key, sizeof pu_key);
      const hlb__stored_pu *p = hlb__model_find(&set, pu_key);
      size_t n = p ? (p->n < HLB__MODEL_KEEP ? p->n : HLB__MODEL_KEEP) : 0;
      mine[l].n = n;
      for (size_t k = 0; k < n; k++) {
        mine[l].x[k] = (double)p->s[k].block.count;
        mine[l].compute_s[k] = p->s[k].compute_s;
        mine[l].transfer_s[k] = p->s[k].transfer_s;
      }
    }
    hlb__model_set_free(&set);
  }
  pu_samples *all = x->rank == 0 ? alloc_or_abort(x, x->n_global, sizeof *all) : NULL;
  hlb__dx_gather_pus(x, mine, sizeof *mine, all);
  free(mine);
  if (x->rank != 0) return;
  x->prior = alloc_or_abort(x, (size_t)x->n_global * HLB__MODEL_KEEP, sizeof *x->prior);
  x->prior_of_b = alloc_or_abort(x, x->n_global, sizeof *x->prior_of_b);
  x->n_prior_of_b = alloc_or_abort(x, x->n_global, sizeof *x->n_prior_of_b);
  size_t found = 0;
  for (unsigned g = 0; g < x->n_global; g++) {
    hlb_sample *s = &x->prior[(size_t)g * HLB__MODEL_KEEP];
    for (uint64_t k = 0; k < all[g].n; k++)
      s[k] = (hlb_sample){.block = {.count = (size_t)all[g].x[k], .pu = g},
                          .compute_s = all[g].compute_s[k],
                          .transfer_s = all[g].transfer_s[k]};
    found += all[g].n;
  }
  for (unsigned b = 0; b < x->nb; b++) { /* the balancer's numbering (index_pus) */
    x->prior_of_b[b] = &x->prior[(size_t)x->gof_b[b] * HLB__MODEL_KEEP];
    x->n_prior_of_b[b] = all[x->gof_b[b]].n;
  }
  x->models_from = found ? HLB_MODELS_STORED : HLB_MODELS_TRAINED; /* none read: none found */
  free(all);
}

/* A finished block of b's log that a model file can take, as that sample (in items of average
 * cost, as every kept sample: hlb_balancer_log_sample). */
static int keepable(const dx *x, const hlb_balancer *b, const hlb_decision *e, hlb_sample *s) {
  return e->pu < x->nb && hlb_balancer_log_sample(b, e, s);
}

void hlb__dx_models_keep(dx *x, const hlb_balancer *b) {
  if (x->rank != 0 || !(x->opt.models & HLB_MODELS_WRITE)) return;
  if (!x->kept) x->kept = alloc_or_abort(x, x->n_global, sizeof *x->kept);
  const hlb_decision *log = NULL;
  size_t n_log = b ? hlb_balancer_log(b, &log) : 0;
  if (!n_log) return;
  /* Per balancer PU, how many of its blocks in this log come before its newest
   * HLB__MODEL_KEEP (left out), and room for those at the end of its samples. */
  size_t *skip = alloc_or_abort(x, x->nb, sizeof *skip);
  hlb_sample s;
  for (size_t k = 0; k < n_log; k++)
    if (keepable(x, b, &log[k], &s)) skip[log[k].pu]++;
  for (unsigned p = 0; p < x->nb; p++) {
    size_t take = skip[p] < HLB__MODEL_KEEP ? skip[p] : HLB__MODEL_KEEP;
    skip[p] -= take;
    pu_samples *q = &x->kept[x->gof_b[p]];
    if (q->n + take > HLB__MODEL_KEEP) { /* the oldest make room */
      size_t drop = q->n + take - HLB__MODEL_KEEP, left = q->n - drop;
      memmove(q->x, q->x + drop, left * sizeof *q->x);
      memmove(q->compute_s, q->compute_s + drop, left * sizeof *q->compute_s);
      memmove(q->transfer_s, q->transfer_s + drop, left * sizeof *q->transfer_s);
      q->n = left;
    }
  }
  for (size_t k = 0; k < n_log; k++) { /* oldest first */
    const hlb_decision *e = &log[k];
    if (!keepable(x, b, e, &s)) continue;
    if (skip[e->pu]) {
      skip[e->pu]--;
      continue;
    }
    pu_samples *q = &x->kept[x->gof_b[e->pu]];
    q->x[q->n] = (double)s.block.count;
    q->compute_s[q->n] = s.compute_s;
    q->transfer_s[q->n] = s.transfer_s;
    q->n++;
  }
  free(skip);
}

/* This rank's PUs' samples of the run into its host's file. */
static int write_mine(dx *x, const pu_samples *mine, const char *dir, const char *key) {
  hlb__model_set set = {0};
  int rc = 0;
  for (unsigned l = 0; l < x->n_local && rc == 0; l++) {
    const pu_samples *p = &mine[l];
    hlb_sample s[HLB__MODEL_KEEP];
    for (uint64_t k = 0; k < p->n; k++) /* oldest first */
      s[k] = (hlb_sample){.block = {.count = (size_t)p->x[k]},
                          .compute_s = p->compute_s[k],
                          .transfer_s = p->transfer_s[k]};
    char pu_key[320];
    hlb__model_pu_key(&x->loc[l].pu, x->loc[l].pu.cores, pu_key, sizeof pu_key);
    if (p->n) rc = hlb__model_append(&set, pu_key, s, p->n);
  }
  if (rc == 0 && set.n_pu) rc = hlb__model_write(dir, key, x->cl.name, &set);
  hlb__model_set_free(&set);
  return rc;
}

void hlb__dx_models_end(dx *x) {
  if (!(x->opt.models & HLB_MODELS_WRITE)) return;
  /* The balancers still held: a share finishing its last blocks (hier.c), then the last one;
   * the earlier ones gave theirs before they went. */
  hlb__dx_models_keep(x, x->b_old);
  hlb__dx_models_keep(x, x->b);
  if (x->rank == 0 && !x->kept) x->kept = alloc_or_abort(x, x->n_global, sizeof *x->kept);
  pu_samples *mine = alloc_or_abort(x, x->n_local, sizeof *mine);
  hlb__dx_scatter_pus(x, x->kept, sizeof *mine, mine);
  char dir[1024], key[256];
  int have_dir = where(x, dir, sizeof dir, key, sizeof key);
  if (have_dir && write_mine(x, mine, dir, key) != 0) {
    /* Rank 0's failure goes into its stats; another rank's is said on its stderr. */
    if (x->rank == 0)
      snprintf(x->model_error, sizeof x->model_error, "%s", hlb_last_error());
    else
      fprintf(stderr, "hlb_mpi_run: rank %d: storing the models failed: %s\n", x->rank,
              hlb_last_error());
    hlb_clear_error();
  }
  if (x->rank == 0 && have_dir && !x->model_file[0])
    hlb__model_path(dir, key, x->model_file, sizeof x->model_file);
  free(mine);
}
