/* Rank 0's service (dexec_internal.h): its calling thread answers the other ranks' requests
 * (next block, block done with its output, block failed, bye), sends each grant with the
 * block's packed input, retries the requests the balancer made wait, and watches that every
 * rank with PUs still working is alive. Rank 0's own PUs call the balancer directly (dexec.c)
 * under x->mu, which also guards the balancer calls made here. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "mpi/dexec_internal.h"

/* ---- Rank 0: serving the other ranks ------------------------------------------------------ */

static unsigned rank_of(const dx *x, unsigned g) {
  return (unsigned)x->grank[g];
}

static void send_stop(dx *x, unsigned g) {
  out_msg *m = hlb__dx_new_msg(0, (int)rank_of(x, g));
  m->h.rep.status = REP_STOP;
  m->h.rep.g = (int32_t)g;
  hlb__dx_send(x, m);
}

static void send_grant(dx *x, unsigned g, const hlb_block *blk) {
  const hlb_codelet *cl = x->io;
  out_msg *m = hlb__dx_new_msg(0, (int)rank_of(x, g));
  m->h.rep.status = REP_GRANT;
  m->h.rep.g = (int32_t)g;
  m->h.rep.blk = *blk;
  m->len = cl->in_bytes_per_item * blk->count;
  double t = hlb__now();
  if (m->len && cl->pack) {
    m->data = malloc(m->len);
    if (!m->data) {
      fprintf(stderr, "hlb_mpi_run: rank 0: out of memory for %zu bytes of block input\n", m->len);
      MPI_Abort(x->comm, 1);
    }
    m->owns_data = 1;
    cl->pack(cl->user, blk->begin, blk->count, m->data);
  } else if (m->len) {
    /* Sent straight from the caller's array; it stays untouched during the run. */
    m->data = (char *)cl->in + blk->begin * cl->in_bytes_per_item;
  }
  m->h.rep.pack_s = hlb__now() - t;
  m->h.rep.bytes = m->len;
  x->bytes_to += m->len;
  x->grants++;
  hlb__dx_send(x, m);
}

/* Answer a NEXT of remote PU g: a grant, a stop, or (WAIT) keep it pending. */
static void serve_next(dx *x, unsigned g) {
  remote_pu *r = &x->rem[g];
  hlb_block blk;
  pthread_mutex_lock(&x->mu);
  int rc = HLB_DONE;
  if (!x->error && !r->retired) {
    rc = hlb__dx_bal_next(x, g, &blk);
    if (rc != HLB_GRANT && rc != HLB_WAIT && rc != HLB_DONE) {
      hlb__dx_set_error_locked(x, rc < 0 ? rc : HLB_ESTATE, hlb_last_error());
      rc = HLB_DONE;
    }
  }
  if (rc == HLB_GRANT &&
      (r->n_flying >= DX_MAX_FLYING || x->cl.in_bytes_per_item * blk.count > (size_t)INT_MAX ||
       x->cl.out_bytes_per_item * blk.count > (size_t)INT_MAX)) {
    /* A driver asks one block ahead, never more; and one MPI message holds < 2 GiB. */
    hlb__error(HLB_ESTATE,
               "rank 0: pu %u: block [%zu, +%zu) cannot be sent (%u in flight, at "
               "most %d; at most %d bytes a message; set a smaller policy max_block)",
               g, blk.begin, blk.count, r->n_flying, DX_MAX_FLYING, INT_MAX);
    hlb__dx_bal_fail(x, g, &blk);
    hlb__dx_set_error_locked(x, HLB_ESTATE, hlb_last_error());
    rc = HLB_DONE;
  }
  r->pending = rc == HLB_WAIT;
  if (rc == HLB_GRANT) r->flying[r->n_flying++] = blk;
  pthread_mutex_unlock(&x->mu);
  if (rc == HLB_WAIT && !r->queued) {
    r->queued = 1; /* at most once in the list, so n_pend <= n_global */
    x->pend[x->n_pend++] = g;
  }
  if (rc == HLB_GRANT)
    send_grant(x, g, &blk);
  else if (rc == HLB_DONE)
    send_stop(x, g);
}

/* Block `id` of remote PU g as rank 0 granted it; with `take`, out of the record. 0 when it
 * is not in flight there (a late answer about a block already taken back). */
static int find_flying_locked(dx *x, unsigned g, uint64_t id, int take, hlb_block *out) {
  remote_pu *r = &x->rem[g];
  for (unsigned i = 0; i < r->n_flying; i++)
    if (r->flying[i].id == id) {
      *out = r->flying[i];
      if (take) r->flying[i] = r->flying[--r->n_flying];
      return 1;
    }
  return 0;
}

static void serve_done(dx *x, unsigned g, const req_msg *q, int src) {
  const hlb_codelet *cl = x->io;
  hlb_block blk = {0};
  pthread_mutex_lock(&x->mu);
  int known = find_flying_locked(x, g, q->id, 0, &blk);
  pthread_mutex_unlock(&x->mu);
  /* The sender sends the output whenever it has some; receive it even for an unknown block. */
  size_t len = q->out_bytes;
  double t = hlb__now();
  if (len) {
    int in_place = known && !cl->unpack && len == cl->out_bytes_per_item * blk.count;
    /* In place when there is no unpack: the block is this PU's alone until done(). */
    void *dst = in_place ? (char *)cl->out + blk.begin * cl->out_bytes_per_item : malloc(len);
    if (!dst) {
      fprintf(stderr, "hlb_mpi_run: rank 0: out of memory for %zu bytes of output\n", len);
      MPI_Abort(x->comm, 1);
    }
    hlb__dx_recv_data(x, dst, len, src, TAG_OUT, "a block's output");
    if (known && cl->unpack) cl->unpack(cl->user, blk.begin, blk.count, dst);
    if (!in_place) free(dst);
    x->bytes_from += len;
  }
  double recv_s = hlb__now() - t;
  pthread_mutex_lock(&x->mu);
  if (known && find_flying_locked(x, g, q->id, 1, &blk)) {
    hlb_sample s = {.block = blk, .compute_s = q->compute_s, .transfer_s = q->transfer_s + recv_s};
    hlb__dx_done_locked(x, g, &s, q->throttle_s);
    x->remote_blocks++;
  }
  pthread_mutex_unlock(&x->mu);
}

static void serve_fail(dx *x, unsigned g, const req_msg *q) {
  remote_pu *r = &x->rem[g];
  hlb_block blk;
  pthread_mutex_lock(&x->mu);
  if (find_flying_locked(x, g, q->id, 1, &blk)) hlb__dx_fail_locked(x, g, &blk, q->text);
  if (q->retire && !r->retired) {
    /* The block requested ahead goes back too: the PU will not run it. */
    while (r->n_flying > 0) {
      blk = r->flying[--r->n_flying];
      int rc = hlb__dx_bal_fail(x, g, &blk);
      if (rc) hlb__dx_set_error_locked(x, rc, hlb_last_error());
    }
    hlb__dx_retire_locked(x, g, q->text);
    r->retired = 1;
  }
  int stop = q->retire && r->pending;
  if (stop) r->pending = 0;
  pthread_mutex_unlock(&x->mu);
  if (stop) send_stop(x, g);
}

/* Receive one request if one is there; 1 when one was handled. Output data that comes with
 * a DONE is received here too, right after its header (same sender, in order). */
static int serve_one(dx *x) {
  int flag = 0;
  MPI_Status st;
  mpi_check(x, MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, x->comm, &flag, &st), "MPI_Iprobe", -1);
  if (!flag) return 0;
  req_msg q;
  mpi_check(
      x, MPI_Recv(&q, (int)sizeof q, MPI_BYTE, st.MPI_SOURCE, TAG_REQ, x->comm, MPI_STATUS_IGNORE),
      "MPI_Recv of a request", st.MPI_SOURCE);
  q.text[DX_TEXT - 1] = '\0';
  x->heard[st.MPI_SOURCE] = hlb__now();
  if (q.type == MSG_ALIVE) return 1;
  unsigned g = (unsigned)q.g;
  if (g >= x->n_global || x->grank[g] != st.MPI_SOURCE || st.MPI_SOURCE == 0) {
    fprintf(stderr, "hlb_mpi_run: rank 0: rank %d sent a request for pu %d it does not own\n",
            st.MPI_SOURCE, q.g);
    MPI_Abort(x->comm, 1);
  }
  if (q.type == MSG_NEXT)
    serve_next(x, g);
  else if (q.type == MSG_DONE)
    serve_done(x, g, &q, st.MPI_SOURCE);
  else if (q.type == MSG_FAIL)
    serve_fail(x, g, &q);
  else {
    x->byes++;
    x->byes_of[st.MPI_SOURCE]++;
  }
  return 1;
}

/* After a done/fail anywhere: pending NEXTs may be answerable now. */
static void retry_pending(dx *x) {
  pthread_mutex_lock(&x->mu);
  int changed = x->changed;
  x->changed = 0;
  pthread_mutex_unlock(&x->mu);
  if (!changed || !x->n_pend) return;
  /* No item left to grant but blocks in flight: the balancer answers WAIT to every PU still
   * working (hlb_balancer_next), so a pass would only list them again. At the end of a run
   * with 10^4 PUs nearly all of them wait, and a pass after every loop turn's dones was 23 %
   * of rank 0's CPU (docs/mpi-executor.md). The change that ends the wait, a failure
   * (items back), the last done (finished), an error or the next share, sets `changed` again. */
  pthread_mutex_lock(&x->mu);
  int all_wait =
      x->b && !x->error && hlb_balancer_remaining(x->b) == 0 && !hlb_balancer_finished(x->b);
  pthread_mutex_unlock(&x->mu);
  if (all_wait) return;
  /* Those still waiting after this pass list themselves again (serve_next). */
  unsigned n = x->n_pend;
  memcpy(x->pend_scratch, x->pend, n * sizeof *x->pend);
  x->n_pend = 0;
  for (unsigned k = 0; k < n; k++) {
    unsigned g = x->pend_scratch[k];
    x->rem[g].queued = 0;
    pthread_mutex_lock(&x->mu);
    int p = x->rem[g].pending; /* 0 when a retirement answered it meanwhile */
    pthread_mutex_unlock(&x->mu);
    if (p) serve_next(x, g);
  }
}

/* Rank 0: the per-rank tables of the liveness check; every rank counts as heard now. */
static void watch_start(dx *x) {
  x->heard = calloc((size_t)x->size, sizeof *x->heard);
  x->byes_of = calloc((size_t)x->size, sizeof *x->byes_of);
  x->pus_of = calloc((size_t)x->size, sizeof *x->pus_of);
  x->pend = calloc(x->n_global, sizeof *x->pend);
  x->pend_scratch = calloc(x->n_global, sizeof *x->pend_scratch);
  if (!x->heard || !x->byes_of || !x->pus_of || !x->pend || !x->pend_scratch) {
    fprintf(stderr, "hlb_mpi_run: rank 0: out of memory for the liveness of %d ranks\n", x->size);
    MPI_Abort(x->comm, 1);
  }
  double now = hlb__now();
  for (int r = 0; r < x->size; r++)
    x->heard[r] = now;
  for (unsigned g = 0; g < x->n_global; g++)
    if (x->grank[g] != 0 && x->gbpu[g] >= 0) x->pus_of[x->grank[g]]++;
}

static void watch_stop(dx *x) {
  free(x->heard);
  free(x->byes_of);
  free(x->pus_of);
  free(x->pend);
  free(x->pend_scratch);
  x->pend = x->pend_scratch = NULL;
  x->heard = NULL;
  x->byes_of = x->pus_of = NULL;
}

/* Rank 0: a rank whose PUs still work but that sent nothing, not even a heartbeat, for
 * timeout_s is stopped, hung or cut off. Its blocks cannot be taken back safely (it may
 * still send their output), and with Open MPI the job cannot shrink: end it, naming the rank,
 * rather than wait for ever. */
static void check_silent(dx *x) {
  double now = hlb__now();
  /* A look every heartbeat is enough for a bound of about four; every loop turn made the
   * grant path O(ranks). */
  if (now - x->last_check < fmin(x->timeout_s / DX_BEATS, DX_BEAT_MAX_S)) return;
  x->last_check = now;
  for (int r = 1; r < x->size; r++) {
    double silent = now - x->heard[r];
    if (x->byes_of[r] >= x->pus_of[r] || silent <= x->timeout_s) continue;
    fprintf(stderr,
            "hlb_mpi_run: rank %d: rank %d sent nothing for %.1f s (HLB_MPI_TIMEOUT=%g s) while "
            "%u of its PUs were working: it is stopped, hung or unreachable; aborting the job\n",
            hlb__dx_world_rank(x, 0), hlb__dx_world_rank(x, r), silent, x->timeout_s,
            x->pus_of[r] - x->byes_of[r]);
    fflush(stderr);
    MPI_Abort(x->comm, 1);
  }
}

/* CPU seconds of the calling thread: one system call (the vDSO does not serve this clock),
 * read once per loop turn. */
static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rank 0: every beat, a REP_ALIVE to each rank whose PUs still work, so that those ranks can
 * tell a stopped rank 0 from one that has nothing to grant them yet. */
static void beat_ranks(dx *x) {
  double now = hlb__now(), beat = fmin(x->timeout_s / DX_BEATS, DX_BEAT_MAX_S);
  if (now - x->last_beat < beat) return;
  x->last_beat = now;
  for (int r = 1; r < x->size; r++) {
    if (x->byes_of[r] >= x->pus_of[r]) continue;
    out_msg *m = hlb__dx_new_msg(0, r);
    m->h.rep.status = REP_ALIVE;
    m->h.rep.g = -1;
    hlb__dx_send(x, m);
  }
}

void hlb__dx_serve_loop(dx *x) {
  watch_start(x);
  x->last_beat = hlb__now();
  double cpu = thread_cpu_s();
  for (;;) {
    check_silent(x);
    beat_ranks(x);
    int act = 0;
    while (serve_one(x))
      act = 1;
    act |= hlb__dx_progress_sends(x);
    if (x->hook) act |= x->hook(x);
    retry_pending(x);
    pthread_mutex_lock(&x->mu);
    int over = x->drivers_alive == 0 && x->byes == x->n_remote && (!x->hook || x->hook_over);
    pthread_mutex_unlock(&x->mu);
    if (over && !hlb__dx_sends_left(x)) break;
    if (!act) hlb__sleep_s(DX_IDLE_S);
    /* A turn's CPU, its sleep's entry and exit included, is busy or idle by what it found. */
    double c = thread_cpu_s();
    x->serve_cpu_s += c - cpu;
    if (!act) x->serve_idle_cpu_s += c - cpu;
    cpu = c;
  }
  x->serve_cpu_s += thread_cpu_s() - cpu;
  watch_stop(x);
}
