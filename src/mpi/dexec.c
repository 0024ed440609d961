/* hlb_mpi_run(): the distributed executor (include/hlb/mpi.h, docs/mpi-executor.md).
 *
 * Rank 0 holds the balancer and the data. Its calling thread is the service thread
 * (dexec_serve.c): it answers the other ranks' requests and sends each grant with the block's
 * packed input. Every PU, on any rank, is driven by the driver core (src/exec/driver.h): rank
 * 0's own PUs over the local transport here, which calls the balancer directly under x->mu
 * (the mutex that also guards the service thread's balancer calls) and needs no transfer; the
 * other ranks' PUs over the remote transport (dexec_remote.c). This file also holds rank 0's
 * bookkeeping of every PU's blocks, which both paths share, and the run itself. Files by job:
 * dexec_internal.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "exec/backend.h"
#include "hlb/mpi.h"
#include "mpi/dexec_internal.h"

double hlb__dx_rel_now(const dx *x) {
  return hlb__now() - x->t0;
}

/* ---- Rank 0: the balancer and its bookkeeping (x->mu held) --------------------------- */

/* The balancer holds the current share's items from 0 (x->base: 0 in the flat mode); every
 * block leaving it is moved to the run's item numbers and moved back on its way in. */
int hlb__dx_bal_next(dx *x, unsigned g, hlb_block *blk) {
  if (!x->b) return x->more ? HLB_WAIT : HLB_DONE; /* no share yet */
  int rc = hlb_balancer_next(x->b, (unsigned)x->gbpu[g], hlb__dx_rel_now(x), blk);
  if (rc == HLB_GRANT) {
    blk->begin += x->base;
    blk->id |= x->gen << DX_GEN_SHIFT;
  }
  /* A share source may still deliver: wait for its next share (a done wakes the waiters). */
  if (rc == HLB_DONE && x->more && !x->st[g].retired) rc = HLB_WAIT;
  return rc;
}

/* The balancer that granted blk (the current share's, or the one still finishing its blocks),
 * with blk moved back to its numbers. */
static hlb_balancer *bal_of(dx *x, hlb_block *blk) {
  uint64_t gen = blk->id >> DX_GEN_SHIFT;
  blk->id &= ((uint64_t)1 << DX_GEN_SHIFT) - 1;
  if (x->b_old && gen == x->gen_old) {
    blk->begin -= x->base_old;
    return x->b_old;
  }
  blk->begin -= x->base;
  return x->b;
}

int hlb__dx_bal_fail(dx *x, unsigned g, const hlb_block *blk) {
  hlb_block b = *blk;
  hlb_balancer *bal = bal_of(x, &b);
  return hlb_balancer_fail(bal, (unsigned)x->gbpu[g], &b, hlb__dx_rel_now(x));
}

void hlb__dx_set_error_locked(dx *x, int code, const char *text) {
  if (x->error) return;
  x->error = code;
  snprintf(x->error_text, sizeof x->error_text, "%s", text);
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

static void account_done_locked(dx *x, unsigned g, const hlb_sample *s, double throttle_s) {
  hlb__pu_stats_add_block(&x->st[g], s, throttle_s);
  if (s->end_s > x->last_end) x->last_end = s->end_s;
}

void hlb__dx_done_locked(dx *x, unsigned g, hlb_sample *s, double throttle_s) {
  s->end_s = hlb__dx_rel_now(x);
  /* A rejected sample (HLB_ESAMPLE) still counts the block as processed. */
  hlb_sample mine = *s;
  int rc = hlb_balancer_done(bal_of(x, &mine.block), (unsigned)x->gbpu[g], &mine);
  if (rc && rc != HLB_ESAMPLE) hlb__dx_set_error_locked(x, rc, hlb_last_error());
  account_done_locked(x, g, s, throttle_s);
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

void hlb__dx_fail_locked(dx *x, unsigned g, const hlb_block *blk, const char *text) {
  hlb__pu_stats_add_failure(&x->st[g], text, 0);
  snprintf(x->fail_text, sizeof x->fail_text, "%s", text);
  int rc = hlb__dx_bal_fail(x, g, blk);
  if (rc) hlb__dx_set_error_locked(x, rc, hlb_last_error());
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

/* PU g is given up: `text` is the failure that made it so, kept in its stats. */
void hlb__dx_retire_locked(dx *x, unsigned g, const char *text) {
  hlb__pu_stats_retire(&x->st[g], text);
  int rc = hlb_balancer_retire(x->b, (unsigned)x->gbpu[g]);
  if (!rc && x->b_old) rc = hlb_balancer_retire(x->b_old, (unsigned)x->gbpu[g]);
  if (rc) hlb__dx_set_error_locked(x, rc, hlb_last_error());
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

/* ---- Rank 0's own PUs: the driver core's local transport -------------------------------- */

/* Ask for the next block; 1 = got one, 0 = stop. Called and returns with mu held. */
static int local_next_locked(dx_pu *d, hlb_block *blk) {
  dx *x = d->x;
  for (;;) {
    if (x->error) return 0;
    int rc = hlb__dx_bal_next(x, d->g, blk);
    if (rc == HLB_GRANT) return 1;
    if (rc == HLB_DONE) return 0;
    if (rc != HLB_WAIT) {
      hlb__dx_set_error_locked(x, rc < 0 ? rc : HLB_ESTATE, hlb_last_error());
      return 0;
    }
    /* The balancer itself refuses WAIT with no block in flight, so someone will wake us. */
    pthread_cond_wait(&x->cv, &x->mu);
  }
}

static int local_next(hlb__driver *core, hlb_block *blk) {
  dx_pu *d = core->ctx;
  pthread_mutex_lock(&d->x->mu);
  int got = local_next_locked(d, blk);
  pthread_mutex_unlock(&d->x->mu);
  return got;
}

/* On rank 0 the data are in the caller's arrays: in place, or through pack/unpack staging
 * (x->io: the caller's codelet, or the node's current share in the hierarchical mode). */
static int local_input(hlb__driver *core, const hlb_block *blk, const void **in, void **out,
                       double *earlier_s) {
  dx_pu *d = core->ctx;
  *earlier_s = 0;
  return hlb__driver_host_input(core, d->x->io, blk, in, out);
}

static int local_output(hlb__driver *core, const hlb_block *blk, void *out) {
  dx_pu *d = core->ctx;
  (void)out; /* written in place, or into the staging buffer unpack reads */
  hlb__driver_host_output(core, d->x->io, blk);
  return 0;
}

static int local_done(hlb__driver *core, hlb_sample *s, double throttle_s) {
  dx_pu *d = core->ctx;
  pthread_mutex_lock(&d->x->mu);
  hlb__dx_done_locked(d->x, d->g, s, throttle_s);
  pthread_mutex_unlock(&d->x->mu);
  return 0;
}

static int local_fail(hlb__driver *core, const hlb_block *blk, int retire) {
  dx_pu *d = core->ctx;
  char text[DX_TEXT];
  snprintf(text, sizeof text, "%s", hlb_last_error());
  pthread_mutex_lock(&d->x->mu);
  hlb__dx_fail_locked(d->x, d->g, blk, text);
  if (retire) hlb__dx_retire_locked(d->x, d->g, text);
  pthread_mutex_unlock(&d->x->mu);
  return retire;
}

static void local_leave(hlb__driver *core) {
  dx_pu *d = core->ctx;
  pthread_mutex_lock(&d->x->mu);
  d->x->drivers_alive--;
  d->x->changed = 1;
  pthread_mutex_unlock(&d->x->mu);
}

static const hlb__transport local_transport = {.next = local_next,
                                               .input = local_input,
                                               .output = local_output,
                                               .done = local_done,
                                               .fail = local_fail,
                                               .leave = local_leave};

/* ---- The run ------------------------------------------------------------------------------ */

/* Local PU d's driver: on rank 0 over the local transport, elsewhere over the remote one. */
static void init_driver(dx *x, dx_pu *d) {
  d->core = (hlb__driver){.t = x->rank == 0 ? &local_transport : &hlb__dx_remote_transport,
                          .ctx = d,
                          .pu = d->g,
                          .ops = d->ops,
                          .dev = d->dev,
                          .call = HLB__KERNEL_RUN,
                          .cl = &x->cl,
                          .shared = d->shared,
                          .throttle = d->pu.throttle,
                          .max_failures = x->opt.max_failures,
                          .inject_pu = x->opt.inject_pu,
                          .inject_from = x->opt.inject_from,
                          .inject_count = x->opt.inject_count,
                          .sg = &d->sg};
  snprintf(d->core.label, sizeof d->core.label, "rank %d pu '%s' (global %u)",
           hlb__dx_world_rank(x, x->rank), d->pu.name, d->g);
}

static void *drive(void *arg) {
  hlb__driver_loop(arg);
  return NULL;
}

void hlb__dx_run(dx *x) {
  pthread_t *th = calloc(x->n_local ? x->n_local : 1, sizeof *th);
  int *started = calloc(x->n_local ? x->n_local : 1, sizeof *started);
  if (!th || !started) {
    fprintf(stderr, "hlb_mpi_run: rank %d: out of memory for %u driver threads\n", x->rank,
            x->n_local);
    MPI_Abort(x->comm, 1);
  }
  x->t0 = hlb__now();
  for (unsigned l = 0; l < x->n_local; l++) {
    dx_pu *d = &x->loc[l];
    if (!d->usable) continue;
    init_driver(x, d);
    pthread_mutex_lock(&x->mu);
    x->drivers_alive++;
    pthread_mutex_unlock(&x->mu);
    started[l] = pthread_create(&th[l], NULL, drive, &d->core) == 0;
    if (!started[l]) {
      /* A PU whose thread cannot start is lost for the run, like a dead device. */
      fprintf(stderr, "hlb_mpi_run: rank %d: cannot start the driver of pu %u\n", x->rank, d->g);
      MPI_Abort(x->comm, 1);
    }
  }
  if (x->rank == 0)
    hlb__dx_serve_loop(x);
  else
    hlb__dx_comm_loop(x);
  for (unsigned l = 0; l < x->n_local; l++)
    if (started[l]) pthread_join(th[l], NULL);
  free(th);
  free(started);
}

int hlb__dx_finish(dx *x) {
  if (x->error) return hlb__error(x->error, "%s", x->error_text);
  if (!hlb_balancer_finished(x->b))
    return hlb__error(HLB_EDEVICE,
                      "hlb_mpi_run: stopped with %zu items left: every PU was retired (last "
                      "failure: %s)",
                      hlb_balancer_remaining(x->b), x->fail_text);
  return hlb_balancer_check_exactly_once(x->b);
}

int hlb_mpi_run(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                hlb_mpi_run_stats *stats) {
  if (stats) hlb_mpi_run_stats_clear(stats);
  dx *x = NULL;
  int rc = hlb__dx_start(comm, local_pus, n_local, cl, n_items, opt, 1, &x);
  if (rc == 0) {
    hlb__dx_run(x);
    hlb__dx_models_end(x);
    if (x->rank == 0) {
      rc = hlb__dx_finish(x);
      if (stats) {
        int fill_rc = hlb__dx_fill_stats(x, stats);
        rc = rc ? rc : fill_rc;
      }
    }
    rc = hlb__dx_share_result(x, rc);
  }
  hlb__dx_end(x);
  return rc;
}
