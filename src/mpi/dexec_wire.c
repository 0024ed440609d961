/* The MPI executor's wire (dexec_internal.h): the messages between rank 0 and the other ranks'
 * PUs, their sends in flight, and what happens when MPI fails. Only a rank's calling thread
 * sends (MPI_THREAD_FUNNELED suffices); drivers queue their messages to it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/dexec_internal.h"
#include "mpi/liveness.h"

int hlb__dx_world_rank(const dx *x, int r) {
  return x->wrank && r >= 0 && r < x->size ? x->wrank[r] : r;
}

/* An MPI call failed: a peer is gone or the library is broken. With Open MPI (no ULFM) the
 * job cannot recover, and returning would leave the other ranks waiting for this one, so
 * say which rank saw what and take the job down. */
void hlb__dx_mpi_check(const dx *x, int mrc, const char *what, int peer) {
  if (mrc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mrc, s, &len);
  fprintf(stderr, "hlb_mpi_run: rank %d: %s (peer rank %d) failed: %s; aborting the job\n",
          hlb__dx_world_rank(x, x->rank), what, hlb__dx_world_rank(x, peer), s);
  fflush(stderr);
  MPI_Abort(x->comm, 1);
  abort(); /* MPI_Abort does not return; never go on with a broken communicator */
}

void hlb__dx_recv_data(const dx *x, void *buf, size_t len, int peer, int tag, const char *what) {
  int rc = hlb__recv_within(buf, (int)len, MPI_BYTE, peer, tag, x->comm, x->timeout_s);
  if (rc != HLB_RECV_TIMED_OUT) {
    hlb__dx_mpi_check(x, rc, what, peer);
    return;
  }
  char me[48], who[32];
  snprintf(me, sizeof me, "hlb_mpi_run: rank %d", hlb__dx_world_rank(x, x->rank));
  snprintf(who, sizeof who, "rank %d", hlb__dx_world_rank(x, peer));
  hlb__abort_silent_sender(me, who, x->timeout_s, len, what, x->comm);
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

static void free_msg(out_msg *m) {
  if (m->owns_data) free(m->data);
  free(m);
}

static void dst_tables(dx *x) {
  size_t n = (size_t)x->size;
  x->dst_busy = calloc(n, sizeof *x->dst_busy);
  x->dst_head = calloc(n, sizeof *x->dst_head);
  x->dst_tail = calloc(n, sizeof *x->dst_tail);
  x->dst_marked = calloc(n, sizeof *x->dst_marked);
  x->dst_touch = calloc(n, sizeof *x->dst_touch);
  if (!x->dst_busy || !x->dst_head || !x->dst_tail || !x->dst_marked || !x->dst_touch) {
    fprintf(stderr, "hlb_mpi_run: rank %d: out of memory for the sends to %d ranks\n", x->rank,
            x->size);
    MPI_Abort(x->comm, 1);
  }
}

/* Hand m to MPI: header and data, two sends to one destination in this order; m stays in
 * flight and counts against its destination's window until a test finds it complete. With
 * `test`, tested at once: a send the transport took at once is complete now (Open MPI's eager
 * path returns a completed request, which a test takes without a pass of the progress engine)
 * and m is freed here. Not when refilling a window from its queue: that destination was slow
 * to drain, its send is likely still stuck, and the test of an incomplete send is a pass of
 * the progress engine (with a sched_yield in it when Open MPI runs oversubscribed). */
static void post(dx *x, out_msg *m, int test) {
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
  int done = 0;
  if (test)
    mpi_check(x, MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE), "MPI_Testall of a send", m->dest);
  if (done) {
    free_msg(m);
    return;
  }
  x->dst_busy[m->dest]++;
  x->fly[x->n_fly++] = m;
}

void hlb__dx_send(dx *x, out_msg *m) {
  if (!x->dst_busy) dst_tables(x);
  int d = m->dest;
  if (x->dst_busy[d] < DX_SEND_WINDOW && !x->dst_head[d]) {
    post(x, m, 1);
    return;
  }
  /* Behind the window: queued in order, after the messages to d already queued. */
  m->next = NULL;
  if (x->dst_tail[d])
    x->dst_tail[d]->next = m;
  else
    x->dst_head[d] = m;
  x->dst_tail[d] = m;
  x->n_queued++;
}

static int by_slot_desc(const void *a, const void *b) {
  int p = *(const int *)a, q = *(const int *)b;
  return (p < q) - (p > q);
}

/* Complete what can be completed, then refill the windows that freed; 1 when something
 * finished. */
int hlb__dx_progress_sends(dx *x) {
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
  size_t n_touch = 0;
  for (int k = 0; k < n_done; k++) {
    size_t i = (size_t)idx[k];
    if (k > 0 && idx[k - 1] == idx[k]) continue; /* header and data done in the same call */
    if (x->fly_rq[2 * i] != MPI_REQUEST_NULL || x->fly_rq[2 * i + 1] != MPI_REQUEST_NULL) continue;
    out_msg *m = x->fly[i];
    int d = m->dest;
    x->dst_busy[d]--;
    if (x->dst_head[d] && !x->dst_marked[d]) {
      x->dst_marked[d] = 1;
      x->dst_touch[n_touch++] = d;
    }
    free_msg(m);
    size_t last = --x->n_fly;
    x->fly[i] = x->fly[last];
    x->fly_rq[2 * i] = x->fly_rq[2 * last];
    x->fly_rq[2 * i + 1] = x->fly_rq[2 * last + 1];
  }
  /* Only now (the slots above are settled): post() appends to x->fly. */
  for (size_t k = 0; k < n_touch; k++) {
    int d = x->dst_touch[k];
    x->dst_marked[d] = 0;
    while (x->dst_head[d] && x->dst_busy[d] < DX_SEND_WINDOW) {
      out_msg *m = x->dst_head[d];
      x->dst_head[d] = m->next;
      if (!x->dst_head[d]) x->dst_tail[d] = NULL;
      x->n_queued--;
      post(x, m, 0);
    }
  }
  return 1;
}

size_t hlb__dx_sends_left(const dx *x) {
  return x->n_fly + x->n_queued;
}

void hlb__dx_sends_free(dx *x) {
  for (int d = 0; x->dst_head && d < x->size; d++)
    while (x->dst_head[d]) {
      out_msg *m = x->dst_head[d];
      x->dst_head[d] = m->next;
      free_msg(m);
    }
  free(x->fly);
  free(x->fly_rq);
  free(x->fly_idx);
  free(x->dst_busy);
  free(x->dst_head);
  free(x->dst_tail);
  free(x->dst_marked);
  free(x->dst_touch);
  x->fly = NULL;
  x->fly_rq = NULL;
  x->fly_idx = NULL;
  x->dst_busy = NULL;
  x->dst_head = x->dst_tail = NULL;
  x->dst_marked = NULL;
  x->dst_touch = NULL;
  x->n_fly = x->cap_fly = x->n_queued = 0;
}

out_msg *hlb__dx_new_msg(int is_req, int dest) {
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
