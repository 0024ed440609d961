/* Set-up and tear-down of the MPI executor (dexec_internal.h), collective over its
 * communicator: arguments checked and agreed, rank 0's parameters broadcast, PUs laid out in
 * one global numbering, devices opened, shared buffers broadcast, kernels prepared, every PU's
 * report gathered on rank 0 and the balancer made there; after the run, rank 0's stats, the
 * verdict shared with every rank, and everything released. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "common/options_internal.h"
#include "exec/backend.h"
#include "hlb/model.h"
#include "mpi/dexec_internal.h"

/* Every rank learns whether every rank is fine, and the first failing rank's message. */
static int agree(dx *x, int rc, const char *what) {
  int in[2] = {rc, x->rank}, out[2];
  mpi_check(x, MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, x->comm), "MPI_Allreduce", -1);
  if (out[0] >= 0) return 0;
  char text[512] = "";
  if (x->rank == out[1]) snprintf(text, sizeof text, "%s", hlb_last_error());
  mpi_check(x, MPI_Bcast(text, (int)sizeof text, MPI_CHAR, out[1], x->comm), "MPI_Bcast", out[1]);
  if (x->rank == out[1]) return rc;
  return hlb__error(out[0], "hlb_mpi_run: rank %d failed %s: %s", out[1], what, text);
}

static int check_local(dx *x, const hlb_exec_pu *pus, unsigned n, const hlb_codelet *cl,
                       size_t n_items) {
  int level = MPI_THREAD_SINGLE, is_main = 0;
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&is_main);
  if (level < MPI_THREAD_FUNNELED || (!is_main && level < MPI_THREAD_SERIALIZED))
    return hlb__error(HLB_EUNSUPPORTED,
                      "hlb_mpi_run: rank %d: MPI thread level %d is too low; initialise MPI "
                      "with MPI_Init_thread(MPI_THREAD_FUNNELED or more) and call from that thread",
                      x->rank, level);
  if (!cl || (n && !pus))
    return hlb__error(HLB_EINVAL, "hlb_mpi_run: rank %d: a codelet and %u PUs are required",
                      x->rank, n);
  if (x->rank != 0) return 0;
  return hlb__codelet_check(cl, n_items);
}

/* Rank 0's sizes and options, for every rank. */
typedef struct dx_params {
  uint64_t n_items, in_b, out_b, granularity, min_block, shared_bytes[HLB_EXEC_MAX_SHARED];
  uint32_t n_shared, max_failures, inject_from, inject_count;
  int32_t inject_pu, models; /* models: rank 0's hlb_models_mode */
  double timeout_s;
} dx_params;

static void share_params(dx *x) {
  dx_params p = {0};
  if (x->rank == 0) {
    p = (dx_params){.n_items = x->n_items,
                    .in_b = x->cl.in_bytes_per_item,
                    .out_b = x->cl.out_bytes_per_item,
                    .granularity = x->opt.granularity,
                    .min_block = x->opt.min_block,
                    .n_shared = x->cl.n_shared,
                    .max_failures = x->opt.max_failures,
                    .inject_from = x->opt.inject_from,
                    .inject_count = x->opt.inject_count,
                    .inject_pu = x->opt.inject_pu,
                    .models = x->opt.models,
                    .timeout_s = x->timeout_s};
    for (unsigned i = 0; i < x->cl.n_shared; i++)
      p.shared_bytes[i] = x->cl.shared[i].bytes;
  }
  mpi_check(x, MPI_Bcast(&p, (int)sizeof p, MPI_BYTE, 0, x->comm), "MPI_Bcast of parameters", 0);
  x->n_items = p.n_items;
  x->cl.in_bytes_per_item = p.in_b;
  x->cl.out_bytes_per_item = p.out_b;
  x->opt.granularity = p.granularity;
  x->opt.min_block = p.min_block;
  x->opt.max_failures = p.max_failures;
  x->opt.inject_pu = p.inject_pu;
  x->opt.inject_from = p.inject_from;
  x->opt.inject_count = p.inject_count;
  x->opt.models = p.models;
  x->timeout_s = p.timeout_s;
  x->cl.n_shared = p.n_shared;
  for (unsigned i = 0; i < p.n_shared; i++)
    x->cl.shared[i].bytes = p.shared_bytes[i];
}

/* Broadcast the shared buffers from rank 0 (in pieces MPI's int counts can hold). */
static int share_buffers(dx *x) {
  double t = hlb__now();
  int rc = 0;
  for (unsigned i = 0; x->rank != 0 && i < x->cl.n_shared && !rc; i++) {
    size_t n = x->cl.shared[i].bytes;
    x->shared_copy[i] = malloc(n ? n : 1);
    x->cl.shared[i].host = x->shared_copy[i];
    if (!x->shared_copy[i])
      rc = hlb__error(HLB_ENOMEM, "rank %d: no memory for shared buffer %u (%zu bytes)", x->rank, i,
                      n);
  }
  if ((rc = agree(x, rc, "to allocate the shared buffers"))) return rc;
  const size_t piece = (size_t)1 << 30;
  for (unsigned i = 0; i < x->cl.n_shared; i++)
    for (size_t at = 0, n = x->cl.shared[i].bytes; at < n; at += piece)
      mpi_check(x,
                MPI_Bcast((char *)x->cl.shared[i].host + at, (int)(n - at < piece ? n - at : piece),
                          MPI_BYTE, 0, x->comm),
                "MPI_Bcast of a shared buffer", 0);
  double mine = hlb__now() - t;
  mpi_check(x, MPI_Reduce(&mine, &x->setup_s, 1, MPI_DOUBLE, MPI_MAX, 0, x->comm), "MPI_Reduce", 0);
  for (unsigned l = 0; l < x->n_local; l++)
    x->loc[l].setup_s = mine;
  return 0;
}

/* Per rank, its PUs' records in bytes and where they start (rank 0 only; NULL elsewhere). */
static void rank_spans(dx *x, size_t each, int **cnt, int **dsp) {
  *cnt = *dsp = NULL;
  if (x->rank != 0) return;
  *cnt = calloc((size_t)x->size, sizeof **cnt);
  *dsp = calloc((size_t)x->size, sizeof **dsp);
  if (!*cnt || !*dsp) {
    fprintf(stderr, "hlb_mpi_run: rank 0: out of memory\n");
    MPI_Abort(x->comm, 1);
  }
  for (int r = 0; r < x->size; r++) {
    (*cnt)[r] = x->counts[r] * (int)each;
    (*dsp)[r] = x->offsets[r] * (int)each;
  }
}

void hlb__dx_gather_pus(dx *x, const void *mine, size_t each, void *all) {
  int *cnt, *dsp;
  rank_spans(x, each, &cnt, &dsp);
  mpi_check(
      x, MPI_Gatherv(mine, (int)(x->n_local * each), MPI_BYTE, all, cnt, dsp, MPI_BYTE, 0, x->comm),
      "MPI_Gatherv", 0);
  free(cnt);
  free(dsp);
}

void hlb__dx_scatter_pus(dx *x, const void *all, size_t each, void *mine) {
  int *cnt, *dsp;
  rank_spans(x, each, &cnt, &dsp);
  mpi_check(
      x,
      MPI_Scatterv(all, cnt, dsp, MPI_BYTE, mine, (int)(x->n_local * each), MPI_BYTE, 0, x->comm),
      "MPI_Scatterv", 0);
  free(cnt);
  free(dsp);
}

static int layout(dx *x, const hlb_exec_pu *pus) {
  x->counts = calloc((size_t)x->size, sizeof *x->counts);
  x->offsets = calloc((size_t)x->size, sizeof *x->offsets);
  x->loc = calloc(x->n_local ? x->n_local : 1, sizeof *x->loc);
  int rc = x->counts && x->offsets && x->loc
               ? 0
               : hlb__error(HLB_ENOMEM, "hlb_mpi_run: rank %d: out of memory", x->rank);
  if ((rc = agree(x, rc, "to allocate its PU table"))) return rc;
  int n = (int)x->n_local;
  mpi_check(x, MPI_Allgather(&n, 1, MPI_INT, x->counts, 1, MPI_INT, x->comm), "MPI_Allgather", -1);
  unsigned total = 0;
  for (int r = 0; r < x->size; r++) {
    x->offsets[r] = (int)total;
    total += (unsigned)x->counts[r];
  }
  if (total == 0)
    return hlb__error(HLB_EINVAL, "hlb_mpi_run: the ranks offer no PU at all; need at least 1");
  x->n_global = total;
  if (x->rank == 0) {
    x->gpu = calloc(total, sizeof *x->gpu);
    x->grank = calloc(total, sizeof *x->grank);
    x->gusable = calloc(total, sizeof *x->gusable);
    x->gbpu = calloc(total, sizeof *x->gbpu);
    x->gsetup = calloc(total, sizeof *x->gsetup);
    x->gof_b = calloc(total, sizeof *x->gof_b);
    x->rem = calloc(total, sizeof *x->rem);
    x->st = calloc(total, sizeof *x->st);
    rc = x->gpu && x->grank && x->gusable && x->gbpu && x->gsetup && x->gof_b && x->rem && x->st
             ? 0
             : hlb__error(HLB_ENOMEM, "hlb_mpi_run: rank 0: out of memory for %u PUs", total);
  }
  if ((rc = agree(x, rc, "to allocate the table of every PU"))) return rc;
  for (unsigned l = 0; l < x->n_local; l++) {
    dx_pu *d = &x->loc[l];
    *d = (dx_pu){.x = x, .g = (unsigned)x->offsets[x->rank] + l, .pu = pus[l]};
    pthread_cond_init(&d->mail, NULL);
  }
  return 0;
}

/* Open each local device. A PU that does not open takes no part, as one whose prepare
 * fails; the run goes on with the others. */
static void open_local(dx *x) {
  for (unsigned l = 0; l < x->n_local; l++) {
    dx_pu *d = &x->loc[l];
    d->ops = hlb__backend_get(d->pu.backend);
    if (!d->ops) {
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': backend %s is not in this build", x->rank,
               d->pu.name, hlb_backend_name(d->pu.backend));
      continue;
    }
    if (d->ops->open(&d->pu, &d->dev) != 0) {
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': %s", hlb__dx_world_rank(x, x->rank),
               d->pu.name, hlb_last_error());
      continue;
    }
    d->opened = 1;
  }
}

static void prepare_local(dx *x) {
  for (unsigned l = 0; l < x->n_local; l++) {
    dx_pu *d = &x->loc[l];
    if (!d->opened) continue;
    if (!d->ops->has_kernel(&x->cl)) {
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': the codelet has no %s kernel", x->rank,
               d->pu.name, hlb_backend_name(d->pu.backend));
      continue;
    }
    double t = hlb__now();
    if (d->ops->prepare(d->dev, &x->cl, d->shared) != 0) {
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': %s", hlb__dx_world_rank(x, x->rank),
               d->pu.name, hlb_last_error());
      continue;
    }
    d->setup_s += hlb__now() - t;
    d->prepared = d->usable = 1;
  }
}

typedef struct pu_report {
  hlb_exec_pu pu;
  int32_t usable, pad;
  double setup_s;
  char why[DX_TEXT];
} pu_report;

/* Rank 0 learns every PU: description, whether it can run the codelet, its setup time. */
static void gather_reports(dx *x) {
  pu_report *mine = calloc(x->n_local ? x->n_local : 1, sizeof *mine);
  pu_report *all = x->rank == 0 ? calloc(x->n_global, sizeof *all) : NULL;
  if (!mine || (x->rank == 0 && !all)) {
    fprintf(stderr, "hlb_mpi_run: rank %d: out of memory\n", x->rank);
    MPI_Abort(x->comm, 1);
  }
  for (unsigned l = 0; l < x->n_local; l++) {
    mine[l].pu = x->loc[l].pu;
    mine[l].usable = x->loc[l].usable;
    mine[l].setup_s = x->loc[l].setup_s;
    memcpy(mine[l].why, x->loc[l].why, DX_TEXT);
  }
  hlb__dx_gather_pus(x, mine, sizeof *mine, all);
  if (x->rank == 0) {
    for (int r = 0; r < x->size; r++)
      for (int k = 0; k < x->counts[r]; k++)
        x->grank[x->offsets[r] + k] = r;
    for (unsigned g = 0; g < x->n_global; g++) {
      x->gpu[g] = all[g].pu;
      x->gusable[g] = all[g].usable;
      x->gsetup[g] = all[g].setup_s;
      if (!all[g].usable && !x->fail_text[0])
        snprintf(x->fail_text, sizeof x->fail_text, "%s", all[g].why);
    }
  }
  free(mine);
  free(all);
}

/* Rank 0: one balancer PU per usable global PU. */
static int index_pus(dx *x) {
  x->nb = 0;
  for (unsigned g = 0; g < x->n_global; g++) {
    x->gbpu[g] = -1;
    if (!x->gusable[g]) {
      x->st[g].retired = 1;
      continue;
    }
    x->gbpu[g] = (int)x->nb;
    x->gof_b[x->nb++] = g;
    if (x->grank[g] != 0) x->n_remote++;
  }
  if (x->nb == 0)
    return hlb__error(HLB_EDEVICE, "hlb_mpi_run: no PU on any rank could load codelet '%s': %s",
                      x->cl.name ? x->cl.name : "(unnamed)", x->fail_text);
  return 0;
}

int hlb__dx_new_balancer(dx *x, size_t n_items, const hlb_sample *const *prior,
                         const size_t *n_prior, hlb_balancer **out) {
  hlb_pu_desc *desc = calloc(x->nb ? x->nb : 1, sizeof *desc);
  if (!desc) return hlb__error(HLB_ENOMEM, "hlb_mpi_run: out of memory for %u PUs", x->nb);
  for (unsigned k = 0; k < x->nb; k++) {
    const hlb_exec_pu *p = &x->gpu[x->gof_b[k]];
    desc[k] = (hlb_pu_desc){
        .name = p->name, .kind = hlb_backend_name(p->backend), .min_block = x->opt.min_block};
  }
  hlb_balancer_config cfg = {.n_items = n_items,
                             .granularity = x->opt.granularity,
                             .n_pus = x->nb,
                             .pus = desc,
                             .policy = x->opt.policy,
                             .params = x->opt.params,
                             .keep_log = x->opt.keep_log,
                             .prior = prior,
                             .n_prior = n_prior,
                             .items_vary = x->cl.items_vary};
  int rc = hlb_balancer_create(&cfg, out);
  free(desc);
  return rc;
}

/* ---- After the run: stats, verdict, tear-down --------------------------------------------- */

int hlb__dx_fill_stats(dx *x, hlb_mpi_run_stats *s) {
  hlb_exec_stats *e = &s->exec;
  unsigned n = x->n_global;
  e->pu = calloc(n, sizeof *e->pu);
  e->per_pu = calloc(n, sizeof *e->per_pu);
  s->rank = calloc(n, sizeof *s->rank);
  s->local = calloc(n, sizeof *s->local);
  if (!e->pu || !e->per_pu || !s->rank || !s->local) {
    hlb_mpi_run_stats_clear(s);
    return hlb__error(HLB_ENOMEM, "hlb_mpi_run: out of memory for the stats of %u PUs", n);
  }
  /* A node leader of the hierarchical mode that got no share has no balancer. */
  snprintf(e->policy, sizeof e->policy, "%s", x->b ? hlb_balancer_policy(x->b) : "");
  e->n_items = x->n_items;
  e->n_pus = x->n_global;
  s->n_ranks = x->size;
  for (unsigned g = 0; g < x->n_global; g++) {
    e->pu[g] = x->gpu[g];
    e->per_pu[g] = x->st[g];
    e->per_pu[g].setup_s = x->gsetup[g];
    s->rank[g] = x->grank[g];
    s->local[g] = g - (unsigned)x->offsets[x->grank[g]];
    const hlb_model *m =
        x->b && x->gbpu[g] >= 0 ? hlb_balancer_model(x->b, (unsigned)x->gbpu[g]) : NULL;
    hlb_exec_pu_stats *st = &e->per_pu[g];
    if (m && hlb_model_fitted(m) && hlb_model_curve(m, &st->model) == 0) {
      st->fitted = 1;
      st->model_terms = hlb_model_terms(m);
      st->model_r2 = hlb_model_r2(m);
    }
  }
  e->makespan_s = x->last_end;
  e->solver_s = x->b ? hlb_balancer_solver_seconds(x->b) : 0;
  e->models_from = x->models_from;
  snprintf(e->model_file, sizeof e->model_file, "%s", x->model_file);
  snprintf(e->model_error, sizeof e->model_error, "%s", x->model_error);
  for (unsigned g = 0; g < x->n_global && x->b; g++)
    if (x->gbpu[g] >= 0)
      e->per_pu[g].prior_samples = hlb_balancer_primed(x->b, (unsigned)x->gbpu[g]);
  s->setup_s = x->setup_s;
  s->bytes_to_ranks = x->bytes_to;
  s->bytes_from_ranks = x->bytes_from;
  s->remote_blocks = x->remote_blocks;
  s->grants = x->grants;
  s->serve_cpu_s = x->serve_cpu_s;
  s->serve_idle_cpu_s = x->serve_idle_cpu_s;
  const hlb_decision *log = NULL;
  size_t n_log = x->b ? hlb_balancer_log(x->b, &log) : 0;
  if (n_log && log && (e->log = malloc(n_log * sizeof *log))) {
    memcpy(e->log, log, n_log * sizeof *log);
    for (size_t k = 0; k < n_log; k++)
      e->log[k].pu = x->gof_b[e->log[k].pu];
    e->n_log = n_log;
  }
  return 0;
}

/* Every rank returns rank 0's verdict, with its text. */
int hlb__dx_share_result(dx *x, int rc) {
  struct {
    int32_t rc, pad;
    char text[512];
  } v = {0};
  v.rc = rc;
  if (rc) snprintf(v.text, sizeof v.text, "%s", hlb_last_error());
  mpi_check(x, MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, 0, x->comm), "MPI_Bcast of the result", 0);
  if (x->rank != 0 && v.rc) return hlb__error(v.rc, "%s", v.text);
  return v.rc;
}

static void release_local(dx *x) {
  for (unsigned l = 0; x->loc && l < x->n_local; l++) {
    dx_pu *d = &x->loc[l];
    if (d->opened) {
      d->ops->release(d->dev, d->sg.dev_in);
      d->ops->release(d->dev, d->sg.dev_out);
    }
    if (d->prepared) d->ops->unprepare(d->dev);
    if (d->opened) d->ops->close(d->dev);
    free(d->sg.host_in);
    free(d->sg.host_out);
    free(d->in_data);
    free(d->out_data);
    free(d->reply_data);
    if (d->x) pthread_cond_destroy(&d->mail); /* set up by layout() with d->x */
  }
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    free(x->shared_copy[i]);
  free(x->loc);
  free(x->counts);
  free(x->offsets);
  free(x->gpu);
  free(x->grank);
  free(x->gusable);
  free(x->gbpu);
  free(x->gsetup);
  free(x->gof_b);
  free(x->rem);
  free(x->st);
}

void hlb_mpi_run_stats_clear(hlb_mpi_run_stats *s) {
  if (!s) return;
  hlb_exec_stats_clear(&s->exec);
  free(s->rank);
  free(s->local);
  free(s->rank_node);
  free(s->node_leader);
  free(s->node_failed);
  free(s->node_items);
  free(s->node_planned);
  free(s->node_shares);
  memset(s, 0, sizeof *s);
}

/* Setup after the layout: devices, shared buffers, kernels, the balancer on rank 0. */
static int setup(dx *x, int make_balancer) {
  share_params(x);
  open_local(x);
  int rc = share_buffers(x);
  if (rc) return rc;
  prepare_local(x);
  gather_reports(x);
  if (x->rank == 0) rc = index_pus(x);
  /* Without a balancer of its own (the hierarchical mode's node), a node with no usable PU
   * is a failed node, not a failed run (src/mpi/hier.c). */
  if (rc == HLB_EDEVICE && !make_balancer) rc = 0;
  /* Collective: every rank, whatever rc. Without make_balancer (a node of the hierarchical
   * mode) the priors wait in x->prior_of_b for its leader's first share. */
  hlb__dx_models_begin(x);
  if (x->rank == 0 && !rc && make_balancer)
    rc = hlb__dx_new_balancer(x, x->n_items, x->prior_of_b, x->n_prior_of_b, &x->b);
  return hlb__dx_share_result(x, rc);
}

int hlb__dx_start(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                  const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                  int make_balancer, dx **out) {
  *out = NULL;
  dx *x = calloc(1, sizeof *x);
  if (!x) return hlb__error(HLB_ENOMEM, "hlb_mpi_run: out of memory");
  int rc = MPI_Comm_dup(comm, &x->comm);
  if (rc != MPI_SUCCESS) {
    free(x);
    return hlb__error(HLB_EMPI, "hlb_mpi_run: MPI_Comm_dup failed (%d)", rc);
  }
  /* Errors come back to hlb, which names the rank before taking the job down. */
  MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(x->comm, &x->rank);
  MPI_Comm_size(x->comm, &x->size);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);
  *out = x;
  if (cl) x->cl = *cl;
  x->io = &x->cl;
  x->n_items = n_items;
  x->n_local = n_local;
  if (opt)
    x->opt = *opt;
  else
    hlb_exec_options_default(&x->opt);
  rc = check_local(x, local_pus, n_local, cl, n_items);
  /* Rank 0's HLB_MPI_TIMEOUT holds for all (share_params): one bound for the whole job. */
  if (rc == 0 && x->rank == 0) rc = hlb__option_env_number("mpi-timeout", &x->timeout_s);
  rc = agree(x, rc, "its argument checks");
  if (rc == 0) rc = layout(x, local_pus);
  if (rc == 0) rc = setup(x, make_balancer);
  return rc;
}

void hlb__dx_end(dx *x) {
  if (!x) return;
  hlb_balancer_destroy(x->b);
  hlb_balancer_destroy(x->b_old);
  release_local(x);
  hlb__dx_sends_free(x);
  free(x->prior);
  free(x->prior_of_b);
  free(x->n_prior_of_b);
  free(x->kept);
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  MPI_Comm_free(&x->comm);
  free(x);
}
