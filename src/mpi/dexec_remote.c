/* Ranks > 0 of the MPI executor (dexec_internal.h): each PU's driver thread runs the driver
 * core (src/exec/driver.h) over the remote transport below, which gets blocks and their input
 * from rank 0 and sends back their output; the calling thread is the communication thread.
 * Drivers queue their messages to it and get their replies in a per-PU mailbox; only it calls
 * MPI. It also beats (MSG_ALIVE) while the PUs work, and ends the job if rank 0 falls silent. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "mpi/dexec_internal.h"

/* ---- Messages to rank 0 and its replies -------------------------------------------------- */

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
  out_msg *m = hlb__dx_new_msg(1, 0);
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

/* ---- The remote transport: the driver core's hooks for a PU of this rank ---------------- */

/* The next block comes from rank 0 with its input. A driver keeps one request ahead: it asks
 * for block k+1 before it computes block k, so the next block's input crosses the network
 * while the PU computes (PLB-HAC/PLB-HeC: the executor overlaps transfers with computing). */
static int remote_next(hlb__driver *core, hlb_block *blk) {
  dx_pu *d = core->ctx;
  free(d->in_data); /* the previous block's input */
  d->in_data = NULL;
  if (!d->ahead) post_req(d, MSG_NEXT, 0, NULL, 0);
  d->ahead = 0;
  reply_msg rep;
  wait_reply(d, &rep, &d->in_data, &d->in_s);
  if (rep.status != REP_GRANT) return 0;
  post_req(d, MSG_NEXT, 0, NULL, 0);
  d->ahead = 1;
  d->in_s += rep.pack_s;
  *blk = rep.blk;
  return 1;
}

/* The input as it came; the output into a buffer of its own, which DONE sends. */
static int remote_input(hlb__driver *core, const hlb_block *blk, const void **in, void **out,
                        double *earlier_s) {
  dx_pu *d = core->ctx;
  size_t out_b = d->x->cl.out_bytes_per_item * blk->count;
  *in = d->in_data;
  *earlier_s = d->in_s;
  d->out_data = out_b ? malloc(out_b) : NULL;
  *out = d->out_data;
  if (out_b && !d->out_data)
    return hlb__error(HLB_ENOMEM, "rank %d: no memory for %zu bytes of output", d->x->rank, out_b);
  return 0;
}

static int remote_done(hlb__driver *core, hlb_sample *s, double throttle_s) {
  dx_pu *d = core->ctx;
  size_t out_b = d->x->cl.out_bytes_per_item * s->block.count;
  out_msg *m = hlb__dx_new_msg(1, 0);
  m->h.req = (req_msg){.type = MSG_DONE,
                       .g = (int32_t)d->g,
                       .id = s->block.id,
                       .compute_s = s->compute_s,
                       .transfer_s = s->transfer_s,
                       .throttle_s = throttle_s,
                       .out_bytes = out_b};
  m->data = d->out_data;
  m->len = out_b;
  m->owns_data = 1;
  d->out_data = NULL;
  post(d->x, m);
  return 0;
}

/* FAIL goes to rank 0 with the error; on retirement rank 0 takes back the block asked ahead
 * too, and the one reply still due (its grant or a stop) is dropped. */
static int remote_fail(hlb__driver *core, const hlb_block *blk, int retire) {
  dx_pu *d = core->ctx;
  free(d->out_data);
  d->out_data = NULL;
  out_msg *m = hlb__dx_new_msg(1, 0);
  m->h.req = (req_msg){.type = MSG_FAIL, .g = (int32_t)d->g, .id = blk->id, .retire = retire};
  snprintf(m->h.req.text, sizeof m->h.req.text, "%s", hlb_last_error());
  post(d->x, m);
  if (retire) {
    reply_msg rep;
    void *data = NULL;
    double mpi_s;
    wait_reply(d, &rep, &data, &mpi_s);
    free(data);
    d->ahead = 0;
  }
  return retire;
}

static void remote_leave(hlb__driver *core) {
  dx_pu *d = core->ctx;
  dx *x = d->x;
  free(d->in_data);
  d->in_data = NULL;
  post_req(d, MSG_BYE, 0, NULL, 0);
  pthread_mutex_lock(&x->mu);
  x->drivers_alive--;
  pthread_mutex_unlock(&x->mu);
}

const hlb__transport hlb__dx_remote_transport = {.next = remote_next,
                                                 .input = remote_input,
                                                 .done = remote_done,
                                                 .fail = remote_fail,
                                                 .leave = remote_leave};

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
    hlb__dx_recv_data(x, data, rep.bytes, 0, TAG_IN, "a block's input");
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
  out_msg *m = hlb__dx_new_msg(1, 0);
  m->h.req.type = MSG_ALIVE;
  hlb__dx_send(x, m);
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
          hlb__dx_world_rank(x, x->rank), hlb__dx_world_rank(x, 0), silent, x->timeout_s);
  fflush(stderr);
  MPI_Abort(x->comm, 1);
}

void hlb__dx_comm_loop(dx *x) {
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
      hlb__dx_send(x, q);
      q = next;
    }
    act |= hlb__dx_progress_sends(x);
    while (receive_reply(x))
      act = 1;
    if (over && !hlb__dx_sends_left(x)) return;
    if (!act) hlb__sleep_s(DX_IDLE_S);
  }
}
