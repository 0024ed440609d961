/* Models kept across runs in the MPI executor (docs/models.md, "MPI runs"): every host keeps
 * the samples of its own PUs in its own model file, as a threaded run does, and rank 0's
 * balancer starts from all of them.
 *
 * Before the run each rank reads its host's file (the model directory of its own options or
 * environment; a directory shared by the hosts holds one subdirectory per host) and sends its
 * PUs' stored samples to rank 0, which gives them to the balancer as priors. After the run
 * rank 0 sends each rank the blocks its PUs finished (from the decision log), and each rank
 * adds them to its file: the files' lock and merge make ranks of one host writing at once
 * lose nothing. The mode (on, read, write, off) is rank 0's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/model_store.h"
#include "mpi/dexec_internal.h"

/* One PU's samples on the wire: a fixed record, so that the gather and scatter of every PU's
 * samples are one collective each. */
typedef struct pu_samples {
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

/* Rank 0: the newest HLB__MODEL_KEEP finished blocks of every global PU, from the log. */
static void run_samples(dx *x, pu_samples *all) {
  const hlb_decision *log = NULL;
  size_t n_log = x->b ? hlb_balancer_log(x->b, &log) : 0;
  for (size_t k = n_log; k-- > 0;) { /* newest first, so the oldest are the ones left out */
    const hlb_decision *e = &log[k];
    if (e->outcome != HLB_OUTCOME_DONE || e->pu >= x->nb) continue;
    pu_samples *p = &all[x->gof_b[e->pu]];
    hlb_sample s = {
        .block = {.count = e->count}, .compute_s = e->compute_s, .transfer_s = e->transfer_s};
    if (p->n == HLB__MODEL_KEEP || !hlb_sample_valid(&s)) continue;
    p->x[p->n] = (double)e->count;
    p->compute_s[p->n] = e->compute_s;
    p->transfer_s[p->n] = e->transfer_s;
    p->n++;
  }
}

/* This rank's PUs' samples of the run into its host's file. */
static int write_mine(dx *x, const pu_samples *mine, const char *dir, const char *key) {
  hlb__model_set set = {0};
  int rc = 0;
  for (unsigned l = 0; l < x->n_local && rc == 0; l++) {
    const pu_samples *p = &mine[l];
    hlb_sample s[HLB__MODEL_KEEP];
    for (uint64_t k = 0; k < p->n; k++) /* newest first on the wire: oldest first here */
      s[k] = (hlb_sample){.block = {.count = (size_t)p->x[p->n - 1 - k]},
                          .compute_s = p->compute_s[p->n - 1 - k],
                          .transfer_s = p->transfer_s[p->n - 1 - k]};
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
  pu_samples *all = x->rank == 0 ? alloc_or_abort(x, x->n_global, sizeof *all) : NULL;
  pu_samples *mine = alloc_or_abort(x, x->n_local, sizeof *mine);
  if (x->rank == 0) run_samples(x, all);
  hlb__dx_scatter_pus(x, all, sizeof *mine, mine);
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
  free(all);
  free(mine);
}
