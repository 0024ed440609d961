/* The MPI executor's wire (dexec_internal.h): the messages between rank 0 and the other ranks'
 * PUs, their sends in flight, and what happens when MPI fails. Only a rank's calling thread
 * sends (MPI_THREAD_FUNNELED suffices); drivers queue their messages to it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/dexec_internal.h"

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

void hlb__dx_send(dx *x, out_msg *m) {
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
