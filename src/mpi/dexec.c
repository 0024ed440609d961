/* hlb_mpi_run(): the distributed executor (include/hlb/mpi.h, docs/mpi-executor.md).
 *
 * Rank 0 holds the balancer and the data. Its calling thread is the service thread: it answers
 * the other ranks' requests (next block, block done, block failed, bye) and sends each grant
 * with the block's packed input. Rank 0's own PUs call the balancer directly under x->mu, the
 * mutex that also guards the service thread's balancer calls. On every other rank the calling
 * thread is the communication thread: the PU driver threads queue their messages to it and
 * get their replies in a per-PU mailbox. Only the calling thread ever calls MPI, so
 * MPI_THREAD_FUNNELED suffices.
 *
 * A remote driver keeps one request ahead: it asks for block k+1 before it computes block k,
 * so the next block's input crosses the network while the PU computes (PLB-HAC/PLB-HeC: the
 * executor overlaps transfers with computing). Rank 0's own PUs need no transfer and ask
 * when they are ready, as the threaded executor does. */
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
#include "common/options_internal.h"
#include "exec/backend.h"
#include "hlb/mpi.h"
#include "mpi/dexec_internal.h"

static double rel_now(const dx *x) {
  return hlb__now() - x->t0;
}

static void sleep_s(double s) {
  if (!(s > 0)) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* An MPI call failed: a peer is gone or the library is broken. With Open MPI (no ULFM) the
 * job cannot recover, and returning would leave the other ranks waiting for this one, so
 * say which rank saw what and take the job down. */
/* Rank r of x->comm as the job knows it: the world rank in the hierarchical mode. */
static int wr(const dx *x, int r) {
  return x->wrank && r >= 0 && r < x->size ? x->wrank[r] : r;
}

void hlb__dx_mpi_check(const dx *x, int mrc, const char *what, int peer) {
  if (mrc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mrc, s, &len);
  fprintf(stderr, "hlb_mpi_run: rank %d: %s (peer rank %d) failed: %s; aborting the job\n",
          wr(x, x->rank), what, wr(x, peer), s);
  fflush(stderr);
  MPI_Abort(x->comm, 1);
  abort(); /* MPI_Abort does not return; never go on with a broken communicator */
}
#define mpi_check hlb__dx_mpi_check

/* ---- Moving blocks through one PU ---------------------------------------------------- */

static int grow_dev(dx_pu *d, void **buf, size_t *cap, size_t need) {
  return hlb__staging_grow_device(d->ops, d->dev, buf, cap, need);
}

static int injected(const dx_pu *d) {
  const hlb_exec_options *o = &d->x->opt;
  if (o->inject_pu != (int)d->g || o->inject_from == 0 || d->started < o->inject_from) return 0;
  return o->inject_count == 0 || d->started < o->inject_from + o->inject_count;
}

/* Run block blk: its input is at `in` (host), its output goes to `out` (host). Fills the
 * sample's compute and transfer (device staging) times and the emulated throttle. */
static int run_block(dx_pu *d, const hlb_block *blk, const void *in, void *out, hlb_sample *s,
                     double *throttle_s) {
  dx *x = d->x;
  size_t in_b = x->cl.in_bytes_per_item * blk->count;
  size_t out_b = x->cl.out_bytes_per_item * blk->count;
  hlb_exec_call call = {.begin = blk->begin, .count = blk->count, .user = x->cl.user};
  memcpy((void *)call.shared, d->shared, sizeof call.shared);
  d->started++;
  double t_a = hlb__now();
  int rc = 0;
  if (d->ops->host_memory) {
    call.in = in_b ? in : NULL;
    call.out = out_b ? out : NULL;
  } else if (!(rc = grow_dev(d, &d->dev_in, &d->dev_in_cap, in_b)) &&
             !(rc = grow_dev(d, &d->dev_out, &d->dev_out_cap, out_b))) {
    call.in = in_b ? d->dev_in : NULL;
    call.out = out_b ? d->dev_out : NULL;
    if (in_b) rc = d->ops->to_device(d->dev, d->dev_in, in, in_b);
  }
  double t_b = hlb__now();
  if (rc == 0 && injected(d))
    rc = hlb__error(HLB_EDEVICE,
                    "rank %d pu '%s' (global %u): injected failure of its block %u (items "
                    "[%zu, +%zu))",
                    wr(x, x->rank), d->pu.name, d->g, d->started, blk->begin, blk->count);
  if (rc == 0) rc = d->ops->run(d->dev, &x->cl, &call);
  double t_c = hlb__now();
  if (rc == 0 && out_b && !d->ops->host_memory)
    rc = d->ops->to_host(d->dev, out, d->dev_out, out_b);
  double t_d = hlb__now();
  double compute = t_c - t_b;
  *throttle_s = 0;
  if (rc == 0 && d->pu.throttle > 1) {
    /* Emulated slowdown, as in the threaded executor: sleep, so no core is stolen. */
    *throttle_s = compute * (d->pu.throttle - 1);
    sleep_s(*throttle_s);
    compute *= d->pu.throttle;
  }
  s->block = *blk;
  s->compute_s = compute;
  s->transfer_s = (t_b - t_a) + (t_d - t_c);
  return rc;
}

/* ---- Rank 0: the balancer and its bookkeeping (x->mu held) --------------------------- */

/* The balancer holds the current share's items from 0 (x->base: 0 in the flat mode); every
 * block leaving it is moved to the run's item numbers and moved back on its way in. */
static int bal_next(dx *x, unsigned g, hlb_block *blk) {
  if (!x->b) return x->more ? HLB_WAIT : HLB_DONE; /* no share yet */
  int rc = hlb_balancer_next(x->b, (unsigned)x->gbpu[g], rel_now(x), blk);
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

static int bal_fail(dx *x, unsigned g, const hlb_block *blk) {
  hlb_block b = *blk;
  hlb_balancer *bal = bal_of(x, &b);
  return hlb_balancer_fail(bal, (unsigned)x->gbpu[g], &b, rel_now(x));
}

static void set_error_locked(dx *x, int code, const char *text) {
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

static void done_locked(dx *x, unsigned g, hlb_sample *s, double throttle_s) {
  s->end_s = rel_now(x);
  /* A rejected sample (HLB_ESAMPLE) still counts the block as processed. */
  hlb_sample mine = *s;
  int rc = hlb_balancer_done(bal_of(x, &mine.block), (unsigned)x->gbpu[g], &mine);
  if (rc && rc != HLB_ESAMPLE) set_error_locked(x, rc, hlb_last_error());
  account_done_locked(x, g, s, throttle_s);
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

static void fail_locked(dx *x, unsigned g, const hlb_block *blk, const char *text) {
  x->st[g].failed_blocks++;
  snprintf(x->fail_text, sizeof x->fail_text, "%s", text);
  int rc = bal_fail(x, g, blk);
  if (rc) set_error_locked(x, rc, hlb_last_error());
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

static void retire_locked(dx *x, unsigned g) {
  int rc = hlb_balancer_retire(x->b, (unsigned)x->gbpu[g]);
  if (!rc && x->b_old) rc = hlb_balancer_retire(x->b_old, (unsigned)x->gbpu[g]);
  if (rc) set_error_locked(x, rc, hlb_last_error());
  x->st[g].retired = 1;
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
}

/* ---- Rank 0's own PUs ------------------------------------------------------------------ */

/* Ask for the next block; 1 = got one, 0 = stop. Called and returns with mu held. */
static int local_next_locked(dx_pu *d, hlb_block *blk) {
  dx *x = d->x;
  for (;;) {
    if (x->error) return 0;
    int rc = bal_next(x, d->g, blk);
    if (rc == HLB_GRANT) return 1;
    if (rc == HLB_DONE) return 0;
    if (rc != HLB_WAIT) {
      set_error_locked(x, rc < 0 ? rc : HLB_ESTATE, hlb_last_error());
      return 0;
    }
    /* The balancer itself refuses WAIT with no block in flight, so someone will wake us. */
    pthread_cond_wait(&x->cv, &x->mu);
  }
}

/* The block's input and output on rank 0: in place, or through pack/unpack staging. */
static int local_block(dx_pu *d, const hlb_block *blk, hlb_sample *s, double *throttle_s) {
  const hlb_codelet *cl = d->x->io;
  size_t out_b = cl->out_bytes_per_item * blk->count;
  double t0 = hlb__now();
  const void *in = NULL;
  void *out = NULL;
  int rc = hlb__block_host_io(cl, blk, &d->host_in, &d->host_in_cap, &d->host_out, &d->host_out_cap,
                              &in, &out);
  if (rc) return rc;
  double pack_s = hlb__now() - t0;
  rc = run_block(d, blk, in, out, s, throttle_s);
  double t1 = hlb__now();
  if (rc == 0 && out_b && cl->unpack) cl->unpack(cl->user, blk->begin, blk->count, d->host_out);
  s->transfer_s += pack_s + (hlb__now() - t1);
  return rc;
}

static void *local_drive(void *arg) {
  dx_pu *d = arg;
  dx *x = d->x;
  unsigned limit = x->opt.max_failures ? x->opt.max_failures : HLB_EXEC_MAX_FAILURES;
  hlb_block blk;
  pthread_mutex_lock(&x->mu);
  while (local_next_locked(d, &blk)) {
    pthread_mutex_unlock(&x->mu);
    hlb_sample s;
    double throttle_s = 0;
    int rc = local_block(d, &blk, &s, &throttle_s);
    pthread_mutex_lock(&x->mu);
    if (rc == 0) {
      d->fail_streak = 0;
      done_locked(x, d->g, &s, throttle_s);
      continue;
    }
    fail_locked(x, d->g, &blk, hlb_last_error());
    if (++d->fail_streak >= limit) {
      retire_locked(x, d->g);
      break;
    }
  }
  x->drivers_alive--;
  x->changed = 1;
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* ---- Sending (the calling thread) -------------------------------------------------------- */

static void grow_fly(dx *x) {
  size_t cap = x->cap_fly ? 2 * x->cap_fly : 64;
  if (2 * cap > (size_t)INT_MAX) {
    fprintf(stderr, "hlb_mpi_run: rank %d: %zu messages in flight, more than MPI can test\n",
            x->rank, x->n_fly);
    MPI_Abort(x->comm, 1);
  }
  /* MPI_Request handles are values: moving them to a larger array keeps them valid. */
  out_msg **fly = realloc(x->fly, cap * sizeof *fly);
  if (fly) x->fly = fly;
  MPI_Request *rq = realloc(x->fly_rq, 2 * cap * sizeof *rq);
  if (rq) x->fly_rq = rq;
  int *idx = realloc(x->fly_idx, 2 * cap * sizeof *idx);
  if (idx) x->fly_idx = idx;
  if (!fly || !rq || !idx) {
    fprintf(stderr, "hlb_mpi_run: rank %d: out of memory for %zu messages in flight\n", x->rank,
            cap);
    MPI_Abort(x->comm, 1); /* a lost message would hang a peer */
  }
  x->cap_fly = cap;
}

static void start_send(dx *x, out_msg *m) {
  const void *h = m->is_req ? (const void *)&m->h.req : (const void *)&m->h.rep;
  int hb = m->is_req ? (int)sizeof m->h.req : (int)sizeof m->h.rep;
  if (x->n_fly == x->cap_fly) grow_fly(x);
  MPI_Request *rq = &x->fly_rq[2 * x->n_fly];
  rq[0] = rq[1] = MPI_REQUEST_NULL;
  mpi_check(x, MPI_Isend(h, hb, MPI_BYTE, m->dest, m->tag_h, x->comm, &rq[0]), "MPI_Isend",
            m->dest);
  if (m->len)
    mpi_check(x, MPI_Isend(m->data, (int)m->len, MPI_BYTE, m->dest, m->tag_d, x->comm, &rq[1]),
              "MPI_Isend of block data", m->dest);
  x->fly[x->n_fly++] = m;
}

static int by_slot_desc(const void *a, const void *b) {
  int p = *(const int *)a, q = *(const int *)b;
  return (p < q) - (p > q);
}

/* Complete what can be completed; 1 when something finished. */
static int progress_sends(dx *x) {
  if (!x->n_fly) return 0;
  int n_done = 0;
  mpi_check(x,
            MPI_Testsome((int)(2 * x->n_fly), x->fly_rq, &n_done, x->fly_idx, MPI_STATUSES_IGNORE),
            "MPI_Testsome of sends", -1);
  if (n_done == MPI_UNDEFINED || n_done <= 0) return 0;
  /* Request index -> message slot; a slot whose two requests are both done leaves. Highest
   * slot first, each moving the last message into its place: a slot above it that also left is
   * gone already, so the message moved in is one still in flight. */
  int *idx = x->fly_idx;
  for (int k = 0; k < n_done; k++)
    idx[k] /= 2;
  qsort(idx, (size_t)n_done, sizeof *idx, by_slot_desc);
  for (int k = 0; k < n_done; k++) {
    size_t i = (size_t)idx[k];
    if (k > 0 && idx[k - 1] == idx[k]) continue; /* header and data done in the same call */
    if (x->fly_rq[2 * i] != MPI_REQUEST_NULL || x->fly_rq[2 * i + 1] != MPI_REQUEST_NULL) continue;
    out_msg *m = x->fly[i];
    if (m->owns_data) free(m->data);
    free(m);
    size_t last = --x->n_fly;
    x->fly[i] = x->fly[last];
    x->fly_rq[2 * i] = x->fly_rq[2 * last];
    x->fly_rq[2 * i + 1] = x->fly_rq[2 * last + 1];
  }
  return 1;
}

static out_msg *new_msg(int is_req, int dest) {
  out_msg *m = calloc(1, sizeof *m);
  if (!m) {
    fprintf(stderr, "hlb_mpi_run: out of memory for a message\n");
    abort(); /* a lost message would hang a peer; nothing sensible remains */
  }
  m->is_req = is_req;
  m->dest = dest;
  m->tag_h = is_req ? TAG_REQ : TAG_REPLY;
  m->tag_d = is_req ? TAG_OUT : TAG_IN;
  return m;
}

/* ---- Rank 0: serving the other ranks ------------------------------------------------------ */

static unsigned rank_of(const dx *x, unsigned g) {
  return (unsigned)x->grank[g];
}

static void send_stop(dx *x, unsigned g) {
  out_msg *m = new_msg(0, (int)rank_of(x, g));
  m->h.rep.status = REP_STOP;
  m->h.rep.g = (int32_t)g;
  start_send(x, m);
}

static void send_grant(dx *x, unsigned g, const hlb_block *blk) {
  const hlb_codelet *cl = x->io;
  out_msg *m = new_msg(0, (int)rank_of(x, g));
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
  start_send(x, m);
}

/* Answer a NEXT of remote PU g: a grant, a stop, or (WAIT) keep it pending. */
static void serve_next(dx *x, unsigned g) {
  remote_pu *r = &x->rem[g];
  hlb_block blk;
  pthread_mutex_lock(&x->mu);
  int rc = HLB_DONE;
  if (!x->error && !r->retired) {
    rc = bal_next(x, g, &blk);
    if (rc != HLB_GRANT && rc != HLB_WAIT && rc != HLB_DONE) {
      set_error_locked(x, rc < 0 ? rc : HLB_ESTATE, hlb_last_error());
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
    bal_fail(x, g, &blk);
    set_error_locked(x, HLB_ESTATE, hlb_last_error());
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
    mpi_check(x, MPI_Recv(dst, (int)len, MPI_BYTE, src, TAG_OUT, x->comm, MPI_STATUS_IGNORE),
              "MPI_Recv of block output", src);
    if (known && cl->unpack) cl->unpack(cl->user, blk.begin, blk.count, dst);
    if (!in_place) free(dst);
    x->bytes_from += len;
  }
  double recv_s = hlb__now() - t;
  pthread_mutex_lock(&x->mu);
  if (known && find_flying_locked(x, g, q->id, 1, &blk)) {
    hlb_sample s = {.block = blk, .compute_s = q->compute_s, .transfer_s = q->transfer_s + recv_s};
    done_locked(x, g, &s, q->throttle_s);
    x->remote_blocks++;
  }
  pthread_mutex_unlock(&x->mu);
}

static void serve_fail(dx *x, unsigned g, const req_msg *q) {
  remote_pu *r = &x->rem[g];
  hlb_block blk;
  pthread_mutex_lock(&x->mu);
  if (find_flying_locked(x, g, q->id, 1, &blk)) fail_locked(x, g, &blk, q->text);
  if (q->retire && !r->retired) {
    /* The block requested ahead goes back too: the PU will not run it. */
    while (r->n_flying > 0) {
      blk = r->flying[--r->n_flying];
      bal_fail(x, g, &blk);
    }
    retire_locked(x, g);
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
            wr(x, 0), wr(x, r), silent, x->timeout_s, x->pus_of[r] - x->byes_of[r]);
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
    out_msg *m = new_msg(0, r);
    m->h.rep.status = REP_ALIVE;
    m->h.rep.g = -1;
    start_send(x, m);
  }
}

static void serve_loop(dx *x) {
  watch_start(x);
  x->last_beat = hlb__now();
  double cpu = thread_cpu_s();
  for (;;) {
    check_silent(x);
    beat_ranks(x);
    int act = 0;
    while (serve_one(x))
      act = 1;
    act |= progress_sends(x);
    if (x->hook) act |= x->hook(x);
    retry_pending(x);
    pthread_mutex_lock(&x->mu);
    int over = x->drivers_alive == 0 && x->byes == x->n_remote && (!x->hook || x->hook_over);
    pthread_mutex_unlock(&x->mu);
    if (over && !x->n_fly) break;
    if (!act) sleep_s(DX_IDLE_S);
    /* A turn's CPU, its sleep's entry and exit included, is busy or idle by what it found. */
    double c = thread_cpu_s();
    x->serve_cpu_s += c - cpu;
    if (!act) x->serve_idle_cpu_s += c - cpu;
    cpu = c;
  }
  x->serve_cpu_s += thread_cpu_s() - cpu;
  watch_stop(x);
}

/* ---- Ranks > 0: drivers and the communication thread --------------------------------- */

static void post(dx *x, out_msg *m) {
  pthread_mutex_lock(&x->mu);
  if (x->q_tail)
    x->q_tail->next = m;
  else
    x->q_head = m;
  x->q_tail = m;
  pthread_mutex_unlock(&x->mu);
}

static void post_req(dx_pu *d, int type, uint64_t id, void *data, size_t len) {
  out_msg *m = new_msg(1, 0);
  m->h.req.type = type;
  m->h.req.g = (int32_t)d->g;
  m->h.req.id = id;
  m->data = data;
  m->len = len;
  m->owns_data = data != NULL;
  post(d->x, m);
}

/* Wait for the reply to this PU's outstanding request. */
static void wait_reply(dx_pu *d, reply_msg *rep, void **data, double *mpi_s) {
  dx *x = d->x;
  pthread_mutex_lock(&x->mu);
  while (!d->has_reply)
    pthread_cond_wait(&d->mail, &x->mu);
  d->has_reply = 0;
  *rep = d->reply;
  *data = d->reply_data;
  *mpi_s = d->reply_mpi_s;
  d->reply_data = NULL;
  pthread_mutex_unlock(&x->mu);
}

/* Run a granted block; queue DONE with its output or FAIL. Returns 1 when the PU retires. */
static int remote_block(dx_pu *d, const reply_msg *rep, const void *in, double in_mpi_s,
                        unsigned limit) {
  dx *x = d->x;
  size_t out_b = x->cl.out_bytes_per_item * rep->blk.count;
  void *out = out_b ? malloc(out_b) : NULL;
  hlb_sample s;
  double throttle_s = 0;
  int rc = out_b && !out ? hlb__error(HLB_ENOMEM, "rank %d: no memory for %zu bytes of output",
                                      x->rank, out_b)
                         : run_block(d, &rep->blk, in, out, &s, &throttle_s);
  if (rc == 0) {
    d->fail_streak = 0;
    out_msg *m = new_msg(1, 0);
    m->h.req = (req_msg){.type = MSG_DONE,
                         .g = (int32_t)d->g,
                         .id = rep->blk.id,
                         .compute_s = s.compute_s,
                         .transfer_s = s.transfer_s + in_mpi_s,
                         .throttle_s = throttle_s,
                         .out_bytes = out_b};
    m->data = out;
    m->len = out_b;
    m->owns_data = 1;
    post(x, m);
    return 0;
  }
  free(out);
  out_msg *m = new_msg(1, 0);
  int retire = ++d->fail_streak >= limit;
  m->h.req = (req_msg){.type = MSG_FAIL, .g = (int32_t)d->g, .id = rep->blk.id, .retire = retire};
  snprintf(m->h.req.text, sizeof m->h.req.text, "%s", hlb_last_error());
  post(x, m);
  return retire;
}

static void *remote_drive(void *arg) {
  dx_pu *d = arg;
  dx *x = d->x;
  unsigned limit = x->opt.max_failures ? x->opt.max_failures : HLB_EXEC_MAX_FAILURES;
  reply_msg rep;
  void *data;
  double mpi_s;
  post_req(d, MSG_NEXT, 0, NULL, 0);
  wait_reply(d, &rep, &data, &mpi_s);
  while (rep.status == REP_GRANT) {
    post_req(d, MSG_NEXT, 0, NULL, 0); /* one block ahead: its input travels meanwhile */
    int retire = remote_block(d, &rep, data, mpi_s + rep.pack_s, limit);
    free(data);
    /* After a retirement the one reply still due is dropped: rank 0 took its block back. */
    wait_reply(d, &rep, &data, &mpi_s);
    if (retire) {
      free(data);
      break;
    }
  }
  post_req(d, MSG_BYE, 0, NULL, 0);
  pthread_mutex_lock(&x->mu);
  x->drivers_alive--;
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* Receive one reply from rank 0 and put it in its PU's mailbox; 1 when there was one. */
static int receive_reply(dx *x) {
  int flag = 0;
  mpi_check(x, MPI_Iprobe(0, TAG_REPLY, x->comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe", 0);
  if (!flag) return 0;
  reply_msg rep;
  mpi_check(x, MPI_Recv(&rep, (int)sizeof rep, MPI_BYTE, 0, TAG_REPLY, x->comm, MPI_STATUS_IGNORE),
            "MPI_Recv of a reply", 0);
  x->heard0 = hlb__now();
  if (rep.status == REP_ALIVE) return 1;
  unsigned l = (unsigned)rep.g - (unsigned)x->offsets[x->rank];
  if (l >= x->n_local) {
    fprintf(stderr, "hlb_mpi_run: rank %d: reply for pu %d, not one of this rank's\n", x->rank,
            rep.g);
    MPI_Abort(x->comm, 1);
  }
  void *data = NULL;
  double t = hlb__now();
  if (rep.bytes) {
    data = malloc(rep.bytes);
    if (!data) {
      fprintf(stderr, "hlb_mpi_run: rank %d: out of memory for %llu bytes of input\n", x->rank,
              (unsigned long long)rep.bytes);
      MPI_Abort(x->comm, 1);
    }
    mpi_check(x, MPI_Recv(data, (int)rep.bytes, MPI_BYTE, 0, TAG_IN, x->comm, MPI_STATUS_IGNORE),
              "MPI_Recv of block input", 0);
  }
  dx_pu *d = &x->loc[l];
  pthread_mutex_lock(&x->mu);
  d->reply = rep;
  d->reply_data = data;
  d->reply_mpi_s = hlb__now() - t;
  d->has_reply = 1;
  pthread_cond_signal(&d->mail);
  pthread_mutex_unlock(&x->mu);
  return 1;
}

/* Ranks > 0: tell rank 0 this process is alive, also while its PUs compute a long block. Only
 * while drivers work, and before the queue taken with that count is sent, so no heartbeat
 * follows this rank's last BYE (rank 0 stops listening after it). */
static void heartbeat(dx *x, int working) {
  double now = hlb__now(), beat = fmin(x->timeout_s / DX_BEATS, DX_BEAT_MAX_S);
  if (!working || now - x->last_beat < beat) return;
  x->last_beat = now;
  out_msg *m = new_msg(1, 0);
  m->h.req.type = MSG_ALIVE;
  start_send(x, m);
}

/* Ranks > 0: rank 0 beats every timeout_s / DX_BEATS while this rank's PUs work (beat_ranks);
 * a rank 0 silent for timeout_s is stopped, hung or cut off, and the drivers would wait for
 * their replies for ever. */
static void check_rank0(dx *x, int working) {
  double silent = hlb__now() - x->heard0;
  if (!working || silent <= x->timeout_s) return;
  fprintf(stderr,
          "hlb_mpi_run: rank %d: rank %d sent nothing for %.1f s (HLB_MPI_TIMEOUT=%g s) while "
          "this rank's PUs were working: it is stopped, hung or unreachable; aborting the job\n",
          wr(x, x->rank), wr(x, 0), silent, x->timeout_s);
  fflush(stderr);
  MPI_Abort(x->comm, 1);
}

static void comm_loop(dx *x) {
  x->last_beat = x->heard0 = hlb__now();
  for (;;) {
    pthread_mutex_lock(&x->mu);
    out_msg *q = x->q_head;
    x->q_head = x->q_tail = NULL;
    int working = x->drivers_alive > 0;
    int over = !working && !q;
    pthread_mutex_unlock(&x->mu);
    heartbeat(x, working);
    check_rank0(x, working);
    int act = q != NULL;
    while (q) {
      out_msg *next = q->next;
      start_send(x, q);
      q = next;
    }
    act |= progress_sends(x);
    while (receive_reply(x))
      act = 1;
    if (over && !x->n_fly) return;
    if (!act) sleep_s(DX_IDLE_S);
  }
}

/* ---- Setup: agreeing, describing PUs, sharing buffers ------------------------------------ */

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
  int32_t inject_pu, pad;
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

/* Gather n_mine records of `each` bytes from every rank to rank 0, in global PU order. */
static void gather_pus(dx *x, const void *mine, size_t each, void *all) {
  int *cnt = NULL, *dsp = NULL;
  if (x->rank == 0) {
    cnt = calloc((size_t)x->size, sizeof *cnt);
    dsp = calloc((size_t)x->size, sizeof *dsp);
    if (!cnt || !dsp) {
      fprintf(stderr, "hlb_mpi_run: rank 0: out of memory\n");
      MPI_Abort(x->comm, 1);
    }
    for (int r = 0; r < x->size; r++) {
      cnt[r] = x->counts[r] * (int)each;
      dsp[r] = x->offsets[r] * (int)each;
    }
  }
  mpi_check(
      x, MPI_Gatherv(mine, (int)(x->n_local * each), MPI_BYTE, all, cnt, dsp, MPI_BYTE, 0, x->comm),
      "MPI_Gatherv", 0);
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
    *d = (dx_pu){.x = x, .l = l, .g = (unsigned)x->offsets[x->rank] + l, .bpu = -1, .pu = pus[l]};
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
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': %s", wr(x, x->rank), d->pu.name,
               hlb_last_error());
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
      snprintf(d->why, sizeof d->why, "rank %d pu '%s': %s", wr(x, x->rank), d->pu.name,
               hlb_last_error());
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
  gather_pus(x, mine, sizeof *mine, all);
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
                             .n_prior = n_prior};
  int rc = hlb_balancer_create(&cfg, out);
  free(desc);
  return rc;
}

/* ---- The run ------------------------------------------------------------------------------ */

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
    if (x->rank == 0) d->bpu = x->gbpu[d->g];
    pthread_mutex_lock(&x->mu);
    x->drivers_alive++;
    pthread_mutex_unlock(&x->mu);
    started[l] = pthread_create(&th[l], NULL, x->rank == 0 ? local_drive : remote_drive, d) == 0;
    if (!started[l]) {
      /* A PU whose thread cannot start is lost for the run, like a dead device. */
      fprintf(stderr, "hlb_mpi_run: rank %d: cannot start the driver of pu %u\n", x->rank, d->g);
      MPI_Abort(x->comm, 1);
    }
  }
  if (x->rank == 0)
    serve_loop(x);
  else
    comm_loop(x);
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
      d->ops->release(d->dev, d->dev_in);
      d->ops->release(d->dev, d->dev_out);
    }
    if (d->prepared) d->ops->unprepare(d->dev);
    if (d->opened) d->ops->close(d->dev);
    free(d->host_in);
    free(d->host_out);
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
  if (x->rank == 0 && !rc && make_balancer)
    rc = hlb__dx_new_balancer(x, x->n_items, NULL, NULL, &x->b);
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
  free(x->fly);
  free(x->fly_rq);
  free(x->fly_idx);
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  MPI_Comm_free(&x->comm);
  free(x);
}

int hlb_mpi_run(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                hlb_mpi_run_stats *stats) {
  if (stats) hlb_mpi_run_stats_clear(stats);
  dx *x = NULL;
  int rc = hlb__dx_start(comm, local_pus, n_local, cl, n_items, opt, 1, &x);
  if (rc == 0) {
    hlb__dx_run(x);
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
