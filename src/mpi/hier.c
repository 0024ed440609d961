/* hlb_mpi_run_hier(): the hierarchical mode of the distributed executor (include/hlb/mpi.h,
 * docs/mpi-executor.md, "Hierarchical mode").
 *
 * The two-level model of Boiński & Czarnul (The Computer Journal, section 3): a manager hands
 * each node its share over the network, and each node splits its share over its PUs. Here
 * world rank 0 is the manager; every node is a group of ranks with one leader (its lowest
 * rank), and the leader runs the flat executor of src/mpi/dexec.c on the node's communicator,
 * with its balancer fed share after share (dx.base, dx.more, dx.hook). So rank 0 answers one
 * request per share and node, not one per block and PU, and the per-block traffic stays
 * inside the nodes.
 *
 * The manager's part and every leader's part run in the hook of their service loop (the
 * calling thread: MPI_THREAD_FUNNELED is enough), on a communicator of the leaders only.
 * Rank 0 is the leader of node 0 as well and sends its own node's shares to itself.
 *
 * Shares (decided by the manager, one node's request at a time):
 *   1. probe: each node first gets probe_fraction of the items, split by PU counts, so that
 *      eq. 3's per-item time of each node can be measured (Boiński & Czarnul, section 4.3,
 *      profile the PUs before solving); a node that finishes its probe before the others
 *      gets another probe-sized share;
 *   2. plan: once every node has finished a share, plan_fraction of the items left are split
 *      by the exact solver of eq. 3 (src/partition/plan_exact.c) over the nodes, each node a
 *      link (from hlb profile-links' file, or free) and one aggregate PU of the measured time
 *      per item; each node gets its planned share at its next request;
 *   3. chunks: the rest goes in shrinking chunks, remaining x w_i / (2 sum w) for a node of
 *      throughput w_i (items per second of its returned shares, as the manager saw them, links
 *      included), at least the node's probe size, so a slow node does not hold the end.
 * A leader asks for its next share as soon as its current one has no item left to grant, so
 * the next share's input crosses the network while the node finishes the current one.
 *
 * Exactly-once: each leader proves every share it returns with its balancer's pool
 * (hlb_balancer_check_exactly_once), and the manager proves the returned shares tile
 * [0, n_items) without gap or overlap. A node whose PUs all fail gives its shares back
 * undone; the manager deals them to the other nodes. */
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
#include "hlb/cluster.h"
#include "hlb/plan.h"
#include "mpi/dexec_internal.h"
#include "mpi/liveness.h"

/* Tags on the leaders' communicator. */
enum { HT_UP = 0x4d01, HT_UP_DATA, HT_DOWN, HT_DOWN_DATA };
/* Leader -> manager. */
enum { UP_ASK = 1, UP_RESULT, UP_FAILED, UP_BYE, UP_ALIVE };
/* Manager -> leader. */
enum { DOWN_SHARE = 1, DOWN_NONE, DOWN_ALIVE };

#define HX_PRIORS 16 /* samples per PU carried from one share's balancer to the next */
#define HX_TEXT 200

typedef struct up_msg {
  int32_t type, pad;
  uint64_t id, begin, count, out_bytes;
  double busy_s; /* the node's time on the share, from its start to its last block's end */
  char text[HX_TEXT];
} up_msg;

typedef struct down_msg {
  int32_t type, pad;
  uint64_t id, begin, count, in_bytes;
} down_msg;

/* A message of ours in MPI_Isend (header and data), with what it owns. */
typedef struct hx_send {
  MPI_Request rq[2];
  void *head, *data;
} hx_send;

typedef struct hx_sends {
  hx_send *v;
  size_t n, cap;
} hx_sends;

/* ---- Manager state (world rank 0) ---------------------------------------------------------- */

typedef struct range {
  size_t begin, count;
} range;

enum { SH_OUT = 0, SH_DONE, SH_BACK };
typedef struct share {
  size_t begin, count;
  int node, state;
} share;

typedef struct mnode {
  int leader;     /* world rank */
  unsigned n_pus; /* usable or not: what the probe is split by */
  size_t probe;   /* items of its probe shares */
  size_t done;    /* items of its returned shares */
  size_t busy_items;
  double busy_s;  /* the node's own time on those shares */
  double first_t; /* manager's clock: first share sent, and last result received */
  double last_t, heard;
  unsigned shares;
  size_t planned;
  int plan_given, asked, failed, left;
} mnode;

typedef struct mgr {
  size_t n_items, in_b, out_b, gran;
  const hlb_codelet *cl; /* the caller's: data */
  range *free_r;
  size_t n_free, cap_free, remaining;
  size_t reserved; /* planned items of nodes that have not yet asked for their planned share */
  share *sh;
  size_t n_sh, cap_sh;
  mnode *node;
  int n_nodes, planned, over;
  double plan_fraction, probe_fraction, plan_T, last_beat;
  hlb_cluster *links;
  char fail_text[HX_TEXT];
} mgr;

/* ---- Leader state --------------------------------------------------------------------------- */

typedef struct lshare {
  int valid;
  uint64_t id;
  size_t begin, count;
  void *in, *out;
  double t0;
} lshare;

typedef struct hx {
  MPI_Comm world, lcomm, ncomm;
  int wrank, wsize, lrank, n_nodes, leader;
  double timeout_s;
  dx *x;
  hlb_codelet io; /* the leader's data: its shares (user = this struct) */
  /* Installed shares: the current one (x->b grants from it) and the previous one while its
   * last blocks finish (x->b_old); indices into slot, -1 for none. The slots' fields change
   * under slot_mu, which pack and unpack take to find a block's share. `next` is the share
   * received and not yet installed. */
  lshare slot[2], next;
  int cur, old;
  pthread_mutex_t slot_mu;
  double last_result; /* when the last share was returned (busy time without overlaps) */
  int asked, none, failed, bye_sent;
  double last_beat, heard;
  hx_sends sends;
  /* priors carried between the shares' balancers: per balancer PU, a ring of samples (at
   * first the newest of its stored ones) */
  hlb_sample *prior;
  size_t *n_prior;
  const hlb_sample **prior_ptr;
  /* per balancer PU, the stored samples the node's first share started from (its stats'
   * prior_samples); `installed`: that share was installed */
  size_t *first_primed;
  int installed;
  double solver_s;
  mgr *m; /* world rank 0 only */
} hx;

static void hx_check(const hx *h, int mrc, const char *what, int peer) {
  if (mrc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mrc, s, &len);
  fprintf(stderr,
          "hlb_mpi_run_hier: rank %d: %s (peer: leader of node %d) failed: %s; aborting the job\n",
          h->wrank, what, peer, s);
  fflush(stderr);
  MPI_Abort(h->world, 1);
  abort();
}

/* Receive a share's data from peer of lcomm (its header has arrived) within the timeout: a
 * peer stopped in the middle of a large message would hang PMPI_Recv out of reach of the
 * silence checks. `who` names the peer in the message. */
static void hx_recv_data(const hx *h, void *buf, size_t len, int peer, int tag, const char *who,
                         const char *what) {
  int rc = hlb__recv_within(buf, (int)len, MPI_BYTE, peer, tag, h->lcomm, h->timeout_s);
  if (rc != HLB_RECV_TIMED_OUT) {
    hx_check(h, rc, what, peer);
    return;
  }
  char me[48];
  snprintf(me, sizeof me, "hlb_mpi_run_hier: rank %d", h->wrank);
  hlb__abort_silent_sender(me, who, h->timeout_s, len, what, h->world);
}

static void *hx_alloc(const hx *h, size_t n, size_t size, const char *what) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "hlb_mpi_run_hier: rank %d: out of memory for %zu %s\n", h->wrank, n, what);
    MPI_Abort(h->world, 1);
    abort();
  }
  return p;
}

/* Send a header (copied) and optional data (owned when own_data) to leader-comm rank `to`. */
static void hx_send_msg(hx *h, int to, int tag, const void *head, size_t head_b, void *data,
                        size_t len, int own_data) {
  hx_sends *s = &h->sends;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    hx_send *v = realloc(s->v, cap * sizeof *v);
    if (!v) {
      fprintf(stderr, "hlb_mpi_run_hier: rank %d: out of memory for %zu sends\n", h->wrank, cap);
      MPI_Abort(h->world, 1);
    }
    s->v = v;
    s->cap = cap;
  }
  hx_send *m = &s->v[s->n++];
  m->head = hx_alloc(h, 1, head_b, "header bytes");
  memcpy(m->head, head, head_b);
  m->data = own_data ? data : NULL;
  m->rq[0] = m->rq[1] = MPI_REQUEST_NULL;
  hx_check(h, MPI_Isend(m->head, (int)head_b, MPI_BYTE, to, tag, h->lcomm, &m->rq[0]), "MPI_Isend",
           to);
  if (len)
    hx_check(h, MPI_Isend(data, (int)len, MPI_BYTE, to, tag + 1, h->lcomm, &m->rq[1]),
             "MPI_Isend of share data", to);
}

static int hx_progress(hx *h) {
  hx_sends *s = &h->sends;
  int act = 0;
  for (size_t i = 0; i < s->n;) {
    int flag = 0;
    hx_check(h, MPI_Testall(2, s->v[i].rq, &flag, MPI_STATUSES_IGNORE), "MPI_Testall", -1);
    if (!flag) {
      i++;
      continue;
    }
    free(s->v[i].head);
    free(s->v[i].data);
    s->v[i] = s->v[--s->n];
    act = 1;
  }
  return act;
}

static double beat_s(const hx *h) {
  return fmin(h->timeout_s / 4, 1.0);
}

/* ---- The manager ------------------------------------------------------------------------- */

static void m_free_add(hx *h, size_t begin, size_t count) {
  mgr *m = h->m;
  if (m->n_free == m->cap_free) {
    m->cap_free = m->cap_free ? 2 * m->cap_free : 8;
    range *r = realloc(m->free_r, m->cap_free * sizeof *r);
    if (!r) {
      fprintf(stderr, "hlb_mpi_run_hier: rank 0: out of memory for free ranges\n");
      MPI_Abort(h->world, 1);
    }
    m->free_r = r;
  }
  m->free_r[m->n_free++] = (range){begin, count};
  m->remaining += count;
}

/* Carve up to `want` items (rounded to the granularity unless it is the rest of a range) from
 * the first free range. */
static range m_carve(mgr *m, size_t want) {
  range *f = &m->free_r[0];
  size_t c = want < f->count ? want : f->count;
  if (c < f->count && m->gran > 1) c = (c + m->gran - 1) / m->gran * m->gran;
  if (c > f->count || c == 0) c = f->count;
  range r = {f->begin, c};
  f->begin += c;
  f->count -= c;
  m->remaining -= c;
  if (f->count == 0) {
    memmove(&m->free_r[0], &m->free_r[1], (m->n_free - 1) * sizeof *m->free_r);
    m->n_free--;
  }
  return r;
}

/* The plan (eq. 3) over the live nodes for `items` items: each node its link from the
 * profile-links file (node "rank<leader>") or free, one aggregate PU of its measured time per
 * item. 0, or an error naming what failed. */
static int m_plan(hx *h, size_t items) {
  mgr *m = h->m;
  size_t cap = 4096 + (size_t)m->n_nodes * 512, at = 0;
  char *js = hx_alloc(h, cap, 1, "bytes of plan cluster");
  at += (size_t)snprintf(js + at, cap - at,
                         "{\"comment\": \"hlb_mpi_run_hier's plan\", \"item\": {\"in_bytes\": "
                         "%zu, \"out_bytes\": %zu}, \"nodes\": [",
                         m->in_b, m->out_b);
  int *idx = hx_alloc(h, (size_t)m->n_nodes, sizeof *idx, "node indices");
  int n = 0;
  for (int i = 0; i < m->n_nodes; i++) {
    mnode *nd = &m->node[i];
    if (nd->failed || nd->left || !(nd->busy_s > 0) || !nd->busy_items) continue;
    char link[160] = "";
    char name[32];
    snprintf(name, sizeof name, "rank%d", nd->leader);
    int li = m->links && nd->leader != 0 ? hlb_cluster_find_node(m->links, name) : -1;
    if (li >= 0 && isfinite(m->links->nodes[li].link.bandwidth_Bps))
      snprintf(link, sizeof link, "\"link\": {\"latency_s\": %.9g, \"bandwidth_Bps\": %.9g}, ",
               m->links->nodes[li].link.latency_s, m->links->nodes[li].link.bandwidth_Bps);
    at += (size_t)snprintf(js + at, cap - at,
                           "%s{\"name\": \"node%d\", %s\"pus\": [{\"name\": \"node%d-pus\", "
                           "\"kind\": \"node\", \"time\": {\"linear\": %.9g}}]}",
                           n ? ", " : "", i, link, i, nd->busy_s / (double)nd->busy_items);
    idx[n++] = i;
  }
  snprintf(js + at, cap - at, "]}");
  int rc = 0;
  if (n == 0) {
    free(js);
    free(idx);
    return 0;
  }
  hlb_cluster *c = NULL;
  hlb_plan_result r = {0};
  rc = hlb_cluster_parse("hlb_mpi_run_hier's plan", js, &c);
  if (!rc) rc = hlb_plan_solve(c, items, NULL, &r);
  if (!rc) {
    for (int k = 0; k < n; k++)
      m->node[idx[k]].planned = r.node_items[k];
    m->plan_T = r.makespan_s;
  }
  hlb_plan_result_free(&r);
  hlb_cluster_free(c);
  free(js);
  free(idx);
  return rc;
}

static size_t m_chunk(hx *h, int i) {
  mgr *m = h->m;
  mnode *nd = &m->node[i];
  if (!nd->shares) return nd->probe;
  if (!m->planned) {
    int all = 1;
    for (int k = 0; k < m->n_nodes; k++)
      if (!m->node[k].failed && !m->node[k].left && !m->node[k].busy_items) all = 0;
    if (!all) return nd->probe; /* the others still probe: another probe, not idle */
    size_t items = (size_t)floor(m->plan_fraction * (double)m->remaining);
    if (items && m_plan(h, items)) {
      fprintf(stderr, "hlb_mpi_run_hier: rank 0: the two-level plan of %zu items failed: %s\n",
              items, hlb_last_error());
      MPI_Abort(h->world, 1);
    }
    m->planned = 1;
    for (int k = 0; k < m->n_nodes; k++)
      m->reserved += m->node[k].planned;
  }
  if (!nd->plan_given) {
    nd->plan_given = 1;
    m->reserved -= nd->planned;
    if (nd->planned) return nd->planned;
  }
  /* Chunks come out of what the plan did not place, so a fast node's chunks do not take the
   * planned share of a node that has not asked for it yet. */
  size_t left = m->remaining > m->reserved ? m->remaining - m->reserved : 0;
  double sum = 0, w_i = 0;
  for (int k = 0; k < m->n_nodes; k++) {
    mnode *o = &m->node[k];
    if (o->failed || o->left || !o->done || !(o->last_t > o->first_t)) continue;
    double w = (double)o->done / (o->last_t - o->first_t);
    sum += w;
    if (k == i) w_i = w;
  }
  size_t c = sum > 0 && w_i > 0 ? (size_t)ceil((double)left * w_i / (2 * sum)) : nd->probe;
  return c > nd->probe ? c : nd->probe;
}

static void m_send_share(hx *h, int i, size_t want) {
  mgr *m = h->m;
  const hlb_codelet *cl = m->cl;
  range r = m_carve(m, want);
  if (m->n_sh == m->cap_sh) {
    m->cap_sh = m->cap_sh ? 2 * m->cap_sh : 32;
    share *v = realloc(m->sh, m->cap_sh * sizeof *v);
    if (!v) {
      fprintf(stderr, "hlb_mpi_run_hier: rank 0: out of memory for %zu shares\n", m->cap_sh);
      MPI_Abort(h->world, 1);
    }
    m->sh = v;
  }
  uint64_t id = m->n_sh;
  m->sh[m->n_sh++] = (share){r.begin, r.count, i, SH_OUT};
  size_t len = m->in_b * r.count;
  if (len > (size_t)INT_MAX) {
    fprintf(stderr,
            "hlb_mpi_run_hier: rank 0: share [%zu, +%zu) for node %d has %zu bytes of input, "
            "more than one MPI message holds (%d)\n",
            r.begin, r.count, i, len, INT_MAX);
    MPI_Abort(h->world, 1);
  }
  void *data = NULL;
  int own = 0;
  if (len && cl->pack) {
    data = hx_alloc(h, len, 1, "bytes of share input");
    cl->pack(cl->user, r.begin, r.count, data);
    own = 1;
  } else if (len) {
    data = (char *)cl->in + r.begin * m->in_b; /* the caller's array stays untouched */
  }
  down_msg d = {.type = DOWN_SHARE, .id = id, .begin = r.begin, .count = r.count, .in_bytes = len};
  hx_send_msg(h, i, HT_DOWN, &d, sizeof d, data, len, own);
  mnode *nd = &m->node[i];
  if (!nd->shares) nd->first_t = hlb__now();
  nd->shares++;
  nd->asked = 0;
}

static int m_others_out(const mgr *m, int i) {
  for (size_t k = 0; k < m->n_sh; k++)
    if (m->sh[k].state == SH_OUT && m->sh[k].node != i) return 1;
  return 0;
}

static void m_receive(hx *h, int src, const up_msg *u) {
  mgr *m = h->m;
  mnode *nd = &m->node[src];
  nd->heard = hlb__now();
  if (u->type == UP_ALIVE) return;
  if (u->type == UP_ASK) {
    nd->asked = 1;
    return;
  }
  if (u->type == UP_BYE) {
    if (m->planned && !nd->plan_given) { /* it left (failed) before its planned share */
      nd->plan_given = 1;
      m->reserved -= nd->planned;
    }
    nd->left = 1;
    return;
  }
  share *s = u->id < m->n_sh ? &m->sh[u->id] : NULL;
  if (!s || s->node != src || s->state != SH_OUT || s->begin != u->begin || s->count != u->count) {
    fprintf(stderr,
            "hlb_mpi_run_hier: rank 0: node %d returned share %llu [%llu, +%llu), which it "
            "does not hold\n",
            src, (unsigned long long)u->id, (unsigned long long)u->begin,
            (unsigned long long)u->count);
    MPI_Abort(h->world, 1);
  }
  if (u->type == UP_FAILED) {
    s->state = SH_BACK;
    if (!nd->failed && m->planned && !nd->plan_given) {
      nd->plan_given = 1;
      m->reserved -= nd->planned;
    }
    nd->failed = 1;
    snprintf(m->fail_text, sizeof m->fail_text, "%s", u->text);
    m_free_add(h, s->begin, s->count);
    return;
  }
  const hlb_codelet *cl = m->cl;
  size_t len = m->out_b * s->count;
  if (u->out_bytes != len) {
    fprintf(stderr,
            "hlb_mpi_run_hier: rank 0: node %d sent %llu bytes of output for %zu items "
            "(expected %zu)\n",
            src, (unsigned long long)u->out_bytes, s->count, len);
    MPI_Abort(h->world, 1);
  }
  if (len) {
    void *dst = cl->unpack ? hx_alloc(h, len, 1, "bytes of share output")
                           : (char *)cl->out + s->begin * m->out_b;
    char who[64];
    snprintf(who, sizeof who, "the leader of node %d (rank %d)", src, nd->leader);
    hx_recv_data(h, dst, len, src, HT_UP_DATA, who, "a share's output");
    if (cl->unpack) {
      cl->unpack(cl->user, s->begin, s->count, dst);
      free(dst);
    }
  }
  s->state = SH_DONE;
  nd->done += s->count;
  nd->busy_items += s->count;
  nd->busy_s += u->busy_s;
  nd->last_t = hlb__now();
}

static int m_turn(hx *h) {
  mgr *m = h->m;
  int act = 0;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    hx_check(h, MPI_Iprobe(MPI_ANY_SOURCE, HT_UP, h->lcomm, &flag, &st), "MPI_Iprobe", -1);
    if (!flag) break;
    up_msg u;
    hx_check(
        h, MPI_Recv(&u, (int)sizeof u, MPI_BYTE, st.MPI_SOURCE, HT_UP, h->lcomm, MPI_STATUS_IGNORE),
        "MPI_Recv of a leader's message", st.MPI_SOURCE);
    u.text[HX_TEXT - 1] = '\0';
    m_receive(h, st.MPI_SOURCE, &u);
    act = 1;
  }
  for (int i = 0; i < m->n_nodes; i++) {
    mnode *nd = &m->node[i];
    if (!nd->asked) continue;
    if (!nd->failed && m->remaining > 0) {
      m_send_share(h, i, m_chunk(h, i));
      act = 1;
    } else if (nd->failed || !m_others_out(m, i)) {
      /* Nothing left, and no other node holds a share that could still come back undone. */
      down_msg d = {.type = DOWN_NONE};
      hx_send_msg(h, i, HT_DOWN, &d, sizeof d, NULL, 0, 0);
      nd->asked = 0;
      act = 1;
    }
  }
  double now = hlb__now();
  int left = 0;
  for (int i = 0; i < m->n_nodes; i++) {
    mnode *nd = &m->node[i];
    left += nd->left;
    /* Node 0 is rank 0's own: its leader part runs in this very loop. */
    if (i > 0 && !nd->left && now - nd->heard > h->timeout_s) {
      fprintf(stderr,
              "hlb_mpi_run_hier: rank 0: the leader of node %d (rank %d) sent nothing for %.1f s "
              "(HLB_MPI_TIMEOUT=%g s) while it held work: it is stopped, hung or unreachable; "
              "aborting the job\n",
              i, nd->leader, now - nd->heard, h->timeout_s);
      fflush(stderr);
      MPI_Abort(h->world, 1);
    }
  }
  if (now - m->last_beat >= beat_s(h)) {
    m->last_beat = now;
    for (int i = 1; i < m->n_nodes; i++)
      if (!m->node[i].left) {
        down_msg d = {.type = DOWN_ALIVE};
        hx_send_msg(h, i, HT_DOWN, &d, sizeof d, NULL, 0, 0);
      }
  }
  m->over = left == m->n_nodes;
  return act;
}

/* Rank 0 at the end: every item in exactly one returned share. */
static int by_begin(const void *a, const void *b) {
  const share *p = a, *q = b;
  return (p->begin > q->begin) - (p->begin < q->begin);
}

static int m_verdict(hx *h) {
  mgr *m = h->m;
  if (m->remaining)
    return hlb__error(HLB_EDEVICE,
                      "hlb_mpi_run_hier: stopped with %zu items left: every node failed (last "
                      "failure: %s)",
                      m->remaining, m->fail_text);
  share *done = hx_alloc(h, m->n_sh, sizeof *done, "shares");
  size_t n = 0;
  for (size_t k = 0; k < m->n_sh; k++)
    if (m->sh[k].state == SH_DONE)
      done[n++] = m->sh[k];
    else if (m->sh[k].state == SH_OUT) {
      free(done);
      return hlb__error(HLB_EVERIFY,
                        "hlb_mpi_run_hier: share [%zu, +%zu) of node %d never came back",
                        m->sh[k].begin, m->sh[k].count, m->sh[k].node);
    }
  qsort(done, n, sizeof *done, by_begin);
  size_t at = 0;
  int rc = 0;
  for (size_t k = 0; k < n && !rc; k++) {
    if (done[k].begin != at)
      rc = hlb__error(
          HLB_EVERIFY, "hlb_mpi_run_hier: items [%zu, %zu) were %s (shares returned by the nodes)",
          done[k].begin < at ? done[k].begin : at, done[k].begin < at ? at : done[k].begin,
          done[k].begin < at ? "processed twice" : "never processed");
    at = done[k].begin + done[k].count;
  }
  if (!rc && at != m->n_items)
    rc = hlb__error(HLB_EVERIFY, "hlb_mpi_run_hier: items [%zu, %zu) were never processed", at,
                    m->n_items);
  free(done);
  return rc;
}

/* ---- A node leader ---------------------------------------------------------------------- */

/* The installed share holding item `begin` (a block in flight is in one). */
static const lshare *share_of(hx *h, size_t begin) {
  const lshare *found = NULL;
  pthread_mutex_lock(&h->slot_mu);
  for (int k = 0; k < 2; k++)
    if (h->slot[k].valid && begin >= h->slot[k].begin &&
        begin - h->slot[k].begin < h->slot[k].count)
      found = &h->slot[k];
  pthread_mutex_unlock(&h->slot_mu);
  if (!found) {
    fprintf(stderr, "hlb_mpi_run_hier: rank %d: item %zu is in no share of this node\n", h->wrank,
            begin);
    MPI_Abort(h->world, 1);
  }
  return found;
}

static void lead_pack(void *user, size_t begin, size_t count, void *dst) {
  hx *h = user;
  const lshare *s = share_of(h, begin);
  memcpy(dst, (const char *)s->in + (begin - s->begin) * h->io.in_bytes_per_item,
         count * h->io.in_bytes_per_item);
}

static void lead_unpack(void *user, size_t begin, size_t count, const void *src) {
  hx *h = user;
  const lshare *s = share_of(h, begin);
  memcpy((char *)s->out + (begin - s->begin) * h->io.out_bytes_per_item, src,
         count * h->io.out_bytes_per_item);
}

static void up(hx *h, int type, const lshare *s, void *data, size_t len, double busy_s,
               const char *text) {
  up_msg u = {.type = type, .busy_s = busy_s, .out_bytes = len};
  if (s) {
    u.id = s->id;
    u.begin = s->begin;
    u.count = s->count;
  }
  if (text) snprintf(u.text, sizeof u.text, "%s", text);
  hx_send_msg(h, 0, HT_UP, &u, sizeof u, data, len, data != NULL);
}

/* The last HX_PRIORS finished blocks of each PU in the share's decision log: the next share's
 * balancer starts from them, so the node's models live across shares. */
static void keep_priors(hx *h, const hlb_balancer *b) {
  dx *x = h->x;
  const hlb_decision *log = NULL;
  size_t n = hlb_balancer_log(b, &log);
  /* Each PU's newest samples, oldest first. */
  for (unsigned p = 0; p < x->nb; p++) {
    hlb_sample fresh[HX_PRIORS];
    size_t nf = 0;
    for (size_t k = n; k-- > 0 && nf < HX_PRIORS;) {
      if (log[k].pu == p && hlb_balancer_log_sample(b, &log[k], &fresh[nf])) nf++;
    }
    if (!nf) continue;
    hlb_sample *dst = &h->prior[(size_t)p * HX_PRIORS];
    for (size_t k = 0; k < nf; k++)
      dst[k] = fresh[nf - 1 - k];
    h->n_prior[p] = nf;
  }
}

/* The stored samples' newest HX_PRIORS of each PU as the carried priors, so that a PU that
 * finishes no block in the first share still starts the next from them. */
static void seed_priors(hx *h) {
  dx *x = h->x;
  for (unsigned p = 0; x->prior_of_b && p < x->nb; p++) {
    size_t n = x->n_prior_of_b[p], from = n > HX_PRIORS ? n - HX_PRIORS : 0;
    for (size_t k = from; k < n; k++)
      h->prior[(size_t)p * HX_PRIORS + k - from] = x->prior_of_b[p][k];
    h->n_prior[p] = n - from;
  }
}

/* Make `next` the current share: a new balancer over its items, primed with the current
 * one's samples (the node's first share: with every stored sample of its PUs, as the flat
 * mode's balancer); the current one, if its blocks are still in flight, becomes the old one. */
static void install(hx *h) {
  dx *x = h->x;
  hlb_balancer *b = NULL;
  if (x->b) keep_priors(h, x->b);
  for (unsigned p = 0; p < x->nb; p++)
    h->prior_ptr[p] = &h->prior[(size_t)p * HX_PRIORS];
  int first = !h->installed && x->prior_of_b;
  int rc = first ? hlb__dx_new_balancer(x, h->next.count, x->prior_of_b, x->n_prior_of_b, &b)
                 : hlb__dx_new_balancer(x, h->next.count, h->prior_ptr, h->n_prior, &b);
  for (unsigned p = 0; !rc && first && p < x->nb; p++)
    h->first_primed[p] = hlb_balancer_primed(b, p);
  if (!rc) h->installed = 1;
  pthread_mutex_lock(&x->mu);
  for (unsigned p = 0; !rc && p < x->nb; p++)
    if (x->st[x->gof_b[p]].retired) rc = hlb_balancer_retire(b, p);
  if (rc) {
    /* The next turn sees the error and gives the share back (l_turn, dead). */
    if (!x->error) {
      x->error = rc;
      snprintf(x->error_text, sizeof x->error_text, "%s", hlb_last_error());
    }
    hlb_balancer_destroy(b);
    pthread_mutex_unlock(&x->mu);
    return;
  }
  if (x->b) h->solver_s += hlb_balancer_solver_seconds(x->b);
  if (h->cur >= 0) {
    x->b_old = x->b;
    x->base_old = x->base;
    x->gen_old = x->gen;
    h->old = h->cur;
  } else {
    hlb__dx_models_keep(x, x->b); /* its blocks, for the model file */
    hlb_balancer_destroy(x->b);
  }
  int k = h->old == 0 ? 1 : 0;
  pthread_mutex_lock(&h->slot_mu);
  h->slot[k] = h->next;
  h->slot[k].t0 = hlb__now();
  pthread_mutex_unlock(&h->slot_mu);
  h->cur = k;
  h->next = (lshare){0};
  x->b = b;
  x->base = h->slot[k].begin;
  x->gen = h->slot[k].id + 1; /* a share's id is unique in the run */
  x->changed = 1;
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

/* Share k's balancer b is finished: prove it, send its output to rank 0, free the slot. */
static int return_share(hx *h, int k, hlb_balancer *b) {
  dx *x = h->x;
  int rc = hlb_balancer_check_exactly_once(b);
  if (rc) {
    pthread_mutex_lock(&x->mu);
    if (!x->error) {
      x->error = rc;
      snprintf(x->error_text, sizeof x->error_text, "%s", hlb_last_error());
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
  }
  /* The node's time on this share alone: shares overlap at their ends. */
  double now = hlb__now(), from = fmax(h->slot[k].t0, h->last_result);
  h->last_result = now;
  lshare s = h->slot[k];
  up(h, UP_RESULT, &s, s.out, h->io.out_bytes_per_item * s.count, now > from ? now - from : 1e-9,
     NULL); /* the send owns s.out */
  pthread_mutex_lock(&h->slot_mu);
  h->slot[k] = (lshare){0};
  pthread_mutex_unlock(&h->slot_mu);
  free(s.in);
  return 0;
}

static void receive_down(hx *h) {
  for (;;) {
    int flag = 0;
    hx_check(h, MPI_Iprobe(0, HT_DOWN, h->lcomm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe", 0);
    if (!flag) return;
    down_msg d;
    hx_check(h, MPI_Recv(&d, (int)sizeof d, MPI_BYTE, 0, HT_DOWN, h->lcomm, MPI_STATUS_IGNORE),
             "MPI_Recv of the manager's message", 0);
    h->heard = hlb__now();
    if (d.type == DOWN_ALIVE) continue;
    h->asked = 0;
    if (d.type == DOWN_NONE) {
      h->none = 1;
      continue;
    }
    lshare s = {.valid = 1, .id = d.id, .begin = d.begin, .count = d.count};
    s.in = hx_alloc(h, d.in_bytes, 1, "bytes of share input");
    s.out = hx_alloc(h, h->io.out_bytes_per_item * d.count, 1, "bytes of share output");
    if (d.in_bytes) hx_recv_data(h, s.in, d.in_bytes, 0, HT_DOWN_DATA, "rank 0", "a share's input");
    if (h->failed) {
      up(h, UP_FAILED, &s, NULL, 0, 0, "the node's PUs had all failed");
      free(s.in);
      free(s.out);
    } else {
      h->next = s;
    }
  }
}

static int l_turn(hx *h) {
  dx *x = h->x;
  int act = 0;
  receive_down(h);
  pthread_mutex_lock(&x->mu);
  int cur_fin = h->cur >= 0 && hlb_balancer_finished(x->b);
  int old_fin = h->old >= 0 && hlb_balancer_finished(x->b_old);
  unsigned retired = 0;
  for (unsigned p = 0; p < x->nb; p++)
    retired += x->st[x->gof_b[p]].retired != 0;
  int dead = retired == x->nb || x->error;
  pthread_mutex_unlock(&x->mu);
  if (old_fin) {
    if (return_share(h, h->old, x->b_old))
      dead = 1;
    else {
      pthread_mutex_lock(&x->mu);
      h->solver_s += hlb_balancer_solver_seconds(x->b_old);
      hlb__dx_models_keep(x, x->b_old);
      hlb_balancer_destroy(x->b_old);
      x->b_old = NULL;
      pthread_mutex_unlock(&x->mu);
      h->old = -1;
    }
    act = 1;
  }
  if (cur_fin && !dead) {
    /* x->b stays (finished) until the next install replaces it. */
    if (return_share(h, h->cur, x->b))
      dead = 1;
    else
      h->cur = -1;
    act = 1;
  }
  if (dead && !h->failed) {
    /* Every PU of the node failed (or the node's run failed): its shares go back undone. */
    h->failed = 1;
    char why[HX_TEXT];
    int k = snprintf(why, sizeof why, "node %d: ", h->lrank);
    snprintf(why + k, sizeof why - (size_t)k, "%.180s", x->error ? x->error_text : x->fail_text);
    for (int i = 0; i < 2; i++)
      if (h->slot[i].valid) {
        up(h, UP_FAILED, &h->slot[i], NULL, 0, 0, why);
        /* Blocks may still be in flight on ranks that have not yet stopped: keep the buffers
         * to the end of the run. */
      }
    if (h->next.valid) {
      up(h, UP_FAILED, &h->next, NULL, 0, 0, why);
      free(h->next.in);
      free(h->next.out);
      h->next = (lshare){0};
    }
    h->cur = h->old = -1;
    act = 1;
  }
  int granted = h->cur < 0;
  if (!granted) {
    pthread_mutex_lock(&x->mu);
    granted = hlb_balancer_remaining(x->b) == 0;
    pthread_mutex_unlock(&x->mu);
  }
  if (h->next.valid && !h->failed && (h->cur < 0 || (granted && h->old < 0))) {
    install(h);
    act = 1;
    granted = 0;
  }
  if (!h->asked && !h->none && !h->failed && !h->next.valid && granted) {
    up(h, UP_ASK, NULL, NULL, 0, 0, NULL);
    h->asked = 1;
    act = 1;
  }
  double now = hlb__now();
  if (!h->bye_sent && h->lrank != 0 && now - h->last_beat >= beat_s(h)) {
    h->last_beat = now;
    up(h, UP_ALIVE, NULL, NULL, 0, 0, NULL);
  }
  if (!h->bye_sent && h->lrank != 0 && now - h->heard > h->timeout_s) {
    fprintf(stderr,
            "hlb_mpi_run_hier: rank %d (leader of node %d): rank 0 sent nothing for %.1f s "
            "(HLB_MPI_TIMEOUT=%g s) while this node waited for work: it is stopped, hung or "
            "unreachable; aborting the job\n",
            h->wrank, h->lrank, now - h->heard, h->timeout_s);
    fflush(stderr);
    MPI_Abort(h->world, 1);
  }
  if ((h->none || h->failed) && !h->asked && h->cur < 0 && h->old < 0 && !h->next.valid) {
    pthread_mutex_lock(&x->mu);
    if (x->more) {
      x->more = 0; /* the balancer's DONE now means stop */
      x->changed = 1;
      pthread_cond_broadcast(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    if (!h->bye_sent) {
      up(h, UP_BYE, NULL, NULL, 0, 0, NULL);
      h->bye_sent = 1;
      act = 1;
    }
  }
  return act;
}

static int hook(dx *x) {
  hx *h = x->hook_arg;
  int act = hx_progress(h);
  if (h->m && !h->m->over) act |= m_turn(h);
  act |= l_turn(h);
  act |= hx_progress(h);
  x->hook_over = h->bye_sent && h->sends.n == 0 && (!h->m || h->m->over);
  return act;
}

/* ---- Setup -------------------------------------------------------------------------------- */

void hlb_mpi_hier_options_default(hlb_mpi_hier_options *o) {
  *o = (hlb_mpi_hier_options){.probe_fraction = 0.02, .plan_fraction = 0.7};
}

/* Rank 0's sizes and options, for every leader. */
typedef struct hx_params {
  uint64_t n_items, in_b, out_b, granularity, min_block, shared_bytes[HLB_EXEC_MAX_SHARED];
  uint32_t n_shared, max_failures, inject_from, inject_count;
  int32_t inject_pu, has_policy, has_params, models; /* models: rank 0's hlb_models_mode */
  double timeout_s, probe_fraction, plan_fraction;
  char policy[64], params[448];
} hx_params;

/* Every rank learns rank 0's verdict of `what`, or the first failing rank's text. */
static int world_agree(hx *h, int rc, const char *what) {
  int in[2] = {rc, h->wrank}, out[2];
  hx_check(h, MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, h->world), "MPI_Allreduce", -1);
  if (out[0] >= 0) return 0;
  char text[512] = "";
  if (h->wrank == out[1]) snprintf(text, sizeof text, "%s", hlb_last_error());
  hx_check(h, MPI_Bcast(text, (int)sizeof text, MPI_CHAR, out[1], h->world), "MPI_Bcast", -1);
  if (h->wrank == out[1]) return rc;
  return hlb__error(out[0], "hlb_mpi_run_hier: rank %d failed %s: %s", out[1], what, text);
}

static int split_nodes(hx *h, const hlb_mpi_hier_options *o) {
  double env = 0;
  int node_size = o->node_size, rc = 0;
  if (h->wrank == 0 && node_size == 0) {
    rc = hlb__option_env_number("mpi-node-size", &env);
    if (!rc && (env < 0 || env != floor(env)))
      rc = hlb__error(HLB_EINVAL,
                      "HLB_MPI_NODE_SIZE: expected a whole number of ranks >= 0, got %g", env);
    node_size = (int)env;
  }
  if (h->wrank == 0 && node_size < 0)
    rc = hlb__error(HLB_EINVAL, "hlb_mpi_run_hier: node_size %d: must be >= 0", node_size);
  if ((rc = world_agree(h, rc, "to read the node size"))) return rc;
  hx_check(h, MPI_Bcast(&node_size, 1, MPI_INT, 0, h->world), "MPI_Bcast of the node size", -1);
  int mrc = node_size > 0 ? MPI_Comm_split(h->world, h->wrank / node_size, h->wrank, &h->ncomm)
                          : MPI_Comm_split_type(h->world, MPI_COMM_TYPE_SHARED, h->wrank,
                                                MPI_INFO_NULL, &h->ncomm);
  hx_check(h, mrc, "splitting the ranks into nodes", -1);
  MPI_Comm_set_errhandler(h->ncomm, MPI_ERRORS_RETURN);
  int nrank = 0;
  MPI_Comm_rank(h->ncomm, &nrank);
  h->leader = nrank == 0;
  hx_check(h, MPI_Comm_split(h->world, h->leader ? 0 : MPI_UNDEFINED, h->wrank, &h->lcomm),
           "MPI_Comm_split of the leaders", -1);
  if (h->leader) {
    MPI_Comm_set_errhandler(h->lcomm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(h->lcomm, &h->lrank);
    MPI_Comm_size(h->lcomm, &h->n_nodes);
  }
  return 0;
}

static void share_params(hx *h, const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                         const hlb_mpi_hier_options *ho, hx_params *p) {
  memset(p, 0, sizeof *p);
  if (h->wrank == 0) {
    p->n_items = n_items;
    p->in_b = cl->in_bytes_per_item;
    p->out_b = cl->out_bytes_per_item;
    p->granularity = opt->granularity;
    p->min_block = opt->min_block;
    p->n_shared = cl->n_shared;
    for (unsigned i = 0; i < cl->n_shared; i++)
      p->shared_bytes[i] = cl->shared[i].bytes;
    p->max_failures = opt->max_failures;
    p->inject_from = opt->inject_from;
    p->inject_count = opt->inject_count;
    p->inject_pu = opt->inject_pu;
    p->models = opt->models;
    p->has_policy = opt->policy != NULL;
    p->has_params = opt->params != NULL;
    if (opt->policy) snprintf(p->policy, sizeof p->policy, "%s", opt->policy);
    if (opt->params) snprintf(p->params, sizeof p->params, "%s", opt->params);
    p->timeout_s = h->timeout_s;
    p->probe_fraction = ho->probe_fraction;
    p->plan_fraction = ho->plan_fraction;
  }
  if (h->leader)
    hx_check(h, MPI_Bcast(p, (int)sizeof *p, MPI_BYTE, 0, h->lcomm), "MPI_Bcast of parameters", 0);
}

static int check_args(hx *h, const hlb_codelet *cl, const hlb_exec_options *opt,
                      const hlb_mpi_hier_options *ho) {
  if (!cl)
    return hlb__error(HLB_EINVAL, "hlb_mpi_run_hier: rank %d: a codelet is required", h->wrank);
  if (h->wrank != 0) return 0;
  if ((opt->policy && strlen(opt->policy) >= 64) || (opt->params && strlen(opt->params) >= 448))
    return hlb__error(HLB_EINVAL,
                      "hlb_mpi_run_hier: policy name (%zu characters, at most 63) or params (%zu, "
                      "at most 447) too long",
                      opt->policy ? strlen(opt->policy) : 0, opt->params ? strlen(opt->params) : 0);
  if (!(ho->probe_fraction > 0 && ho->probe_fraction <= 1))
    return hlb__error(HLB_EINVAL, "hlb_mpi_run_hier: probe_fraction %g: must be in (0, 1]",
                      ho->probe_fraction);
  if (!(ho->plan_fraction >= 0 && ho->plan_fraction <= 1))
    return hlb__error(HLB_EINVAL, "hlb_mpi_run_hier: plan_fraction %g: must be in [0, 1]",
                      ho->plan_fraction);
  int rc = hlb__option_env_number("mpi-timeout", &h->timeout_s);
  return rc;
}

/* The manager's tables: nodes, their leaders and PU counts; the plan's links. */
static int m_start(hx *h, const hlb_codelet *cl, const hx_params *p, const unsigned *node_pus,
                   const int *leaders, const char *links) {
  mgr *m = h->m = hx_alloc(h, 1, sizeof *m, "manager");
  m->n_items = p->n_items;
  m->in_b = p->in_b;
  m->out_b = p->out_b;
  m->gran = p->granularity ? p->granularity : 1;
  m->cl = cl;
  m->n_nodes = h->n_nodes;
  m->plan_fraction = p->plan_fraction;
  m->probe_fraction = p->probe_fraction;
  m->node = hx_alloc(h, (size_t)m->n_nodes, sizeof *m->node, "nodes");
  unsigned total = 0;
  for (int i = 0; i < m->n_nodes; i++)
    total += node_pus[i];
  double now = hlb__now();
  for (int i = 0; i < m->n_nodes; i++) {
    mnode *nd = &m->node[i];
    nd->leader = leaders[i];
    nd->n_pus = node_pus[i];
    nd->heard = now;
    /* A node whose ranks offer no PU takes no part (its leader runs no executor). */
    nd->failed = nd->left = node_pus[i] == 0;
    double pr = ceil((double)p->n_items * p->probe_fraction * (double)node_pus[i] /
                     (double)(total ? total : 1));
    nd->probe = (size_t)fmax(pr, 1);
    if (m->gran > 1) nd->probe = (nd->probe + m->gran - 1) / m->gran * m->gran;
  }
  m_free_add(h, 0, p->n_items);
  if (!links) return 0;
  int rc = hlb_cluster_load(links, &m->links);
  if (rc) {
    char why[512];
    snprintf(why, sizeof why, "%s", hlb_last_error());
    return hlb__error(rc, "hlb_mpi_run_hier: links file (HLB_MPI_LINKS / --links): %s", why);
  }
  return 0;
}

static void m_end(mgr *m) {
  if (!m) return;
  free(m->free_r);
  free(m->sh);
  free(m->node);
  hlb_cluster_free(m->links);
  free(m);
}

/* Rank 0: the world's stats from every leader's node stats. */
typedef struct pu_rec {
  int32_t wrank, local;
  hlb_exec_pu pu;
  hlb_exec_pu_stats st;
} pu_rec;

typedef struct node_rec {
  double setup_s, solver_s;
  uint64_t bytes_to, bytes_from, remote_blocks, grants;
  int32_t models_from, pad; /* hlb_models_from of the node's stored models */
  char policy[32];
  char model_file[1024], model_error[512]; /* the leader's file; why it could not use it */
} node_rec;

static int gather_stats(hx *h, const int *noffs_wrank, unsigned n_node_pus,
                        const hlb_mpi_run_stats *ns, hlb_mpi_run_stats *out, const int *woffs) {
  /* Each leader sends its node's PU records and totals to rank 0. */
  pu_rec *mine = hx_alloc(h, n_node_pus, sizeof *mine, "PU records");
  for (unsigned g = 0; g < n_node_pus && ns->exec.per_pu; g++) {
    mine[g].wrank = noffs_wrank[ns->rank[g]];
    mine[g].local = (int32_t)ns->local[g];
    mine[g].pu = ns->exec.pu[g];
    mine[g].st = ns->exec.per_pu[g];
  }
  node_rec nr = {.setup_s = ns->setup_s,
                 .solver_s = h->solver_s + ns->exec.solver_s,
                 .bytes_to = ns->bytes_to_ranks,
                 .bytes_from = ns->bytes_from_ranks,
                 .remote_blocks = ns->remote_blocks,
                 .grants = ns->grants,
                 .models_from = ns->exec.models_from};
  snprintf(nr.policy, sizeof nr.policy, "%s", ns->exec.policy);
  snprintf(nr.model_file, sizeof nr.model_file, "%s", ns->exec.model_file);
  snprintf(nr.model_error, sizeof nr.model_error, "%s", ns->exec.model_error);
  int cnt = (int)(n_node_pus * sizeof(pu_rec));
  int *cnts = NULL, *dsp = NULL;
  pu_rec *all = NULL;
  node_rec *nrs = NULL;
  unsigned total = 0;
  if (h->lrank == 0) {
    cnts = hx_alloc(h, (size_t)h->n_nodes, sizeof *cnts, "counts");
    dsp = hx_alloc(h, (size_t)h->n_nodes, sizeof *dsp, "displacements");
    nrs = hx_alloc(h, (size_t)h->n_nodes, sizeof *nrs, "node records");
  }
  hx_check(h, MPI_Gather(&cnt, 1, MPI_INT, cnts, 1, MPI_INT, 0, h->lcomm), "MPI_Gather", 0);
  if (h->lrank == 0) {
    int at = 0;
    for (int i = 0; i < h->n_nodes; i++) {
      dsp[i] = at;
      at += cnts[i];
    }
    total = (unsigned)(at / (int)sizeof(pu_rec));
    all = hx_alloc(h, total, sizeof *all, "PU records");
  }
  hx_check(h, MPI_Gatherv(mine, cnt, MPI_BYTE, all, cnts, dsp, MPI_BYTE, 0, h->lcomm),
           "MPI_Gatherv of the PU stats", 0);
  hx_check(h, MPI_Gather(&nr, (int)sizeof nr, MPI_BYTE, nrs, (int)sizeof nr, MPI_BYTE, 0, h->lcomm),
           "MPI_Gather of the node stats", 0);
  free(mine);
  int rc = 0;
  if (h->lrank == 0) {
    hlb_exec_stats *e = &out->exec;
    e->pu = calloc(total ? total : 1, sizeof *e->pu);
    e->per_pu = calloc(total ? total : 1, sizeof *e->per_pu);
    out->rank = calloc(total ? total : 1, sizeof *out->rank);
    out->local = calloc(total ? total : 1, sizeof *out->local);
    if (!e->pu || !e->per_pu || !out->rank || !out->local)
      rc = hlb__error(HLB_ENOMEM, "hlb_mpi_run_hier: out of memory for the stats of %u PUs", total);
    for (unsigned k = 0; !rc && k < total; k++) {
      unsigned g = (unsigned)woffs[all[k].wrank] + (unsigned)all[k].local;
      if (g >= total) continue;
      e->pu[g] = all[k].pu;
      e->per_pu[g] = all[k].st;
      out->rank[g] = all[k].wrank;
      out->local[g] = (unsigned)all[k].local;
    }
    e->n_pus = total;
    for (int i = h->n_nodes; i-- > 0;) /* the first node that ran one (empty nodes did not) */
      if (nrs[i].policy[0]) snprintf(e->policy, sizeof e->policy, "%s", nrs[i].policy);
    /* Stored when some node started from stored samples; the first node's file (rank 0's,
     * unless its node has no PU) and the first node's error. */
    e->models_from = HLB_MODELS_TRAINED;
    for (int i = h->n_nodes; i-- > 0;) {
      if (nrs[i].models_from == HLB_MODELS_STORED) e->models_from = HLB_MODELS_STORED;
      if (nrs[i].model_file[0])
        snprintf(e->model_file, sizeof e->model_file, "%s", nrs[i].model_file);
      if (nrs[i].model_error[0])
        snprintf(e->model_error, sizeof e->model_error, "node %d: %.480s", i, nrs[i].model_error);
    }
    for (int i = 0; i < h->n_nodes; i++) {
      if (nrs[i].setup_s > out->setup_s) out->setup_s = nrs[i].setup_s;
      e->solver_s += nrs[i].solver_s;
      out->bytes_to_ranks += nrs[i].bytes_to;
      out->bytes_from_ranks += nrs[i].bytes_from;
      out->remote_blocks += nrs[i].remote_blocks;
      out->grants += nrs[i].grants;
    }
  }
  free(cnts);
  free(dsp);
  free(all);
  free(nrs);
  return rc;
}

int hlb_mpi_run_hier(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                     const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt_in,
                     const hlb_mpi_hier_options *hopt, hlb_mpi_run_stats *stats) {
  if (stats) hlb_mpi_run_stats_clear(stats);
  hx *h = calloc(1, sizeof *h);
  if (!h) return hlb__error(HLB_ENOMEM, "hlb_mpi_run_hier: out of memory");
  pthread_mutex_init(&h->slot_mu, NULL);
  hlb_exec_options opt;
  if (opt_in)
    opt = *opt_in;
  else
    hlb_exec_options_default(&opt);
  hlb_mpi_hier_options ho;
  if (hopt)
    ho = *hopt;
  else
    hlb_mpi_hier_options_default(&ho);
  const char *links = ho.links ? ho.links : hlb__option_env("mpi-links");
  if (links && !*links) links = NULL;
  MPI_Comm_dup(comm, &h->world);
  MPI_Comm_set_errhandler(h->world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(h->world, &h->wrank);
  MPI_Comm_size(h->world, &h->wsize);
  h->lcomm = h->ncomm = MPI_COMM_NULL;
  int rc = world_agree(h, check_args(h, cl, &opt, &ho), "its argument checks");
  if (!rc) rc = split_nodes(h, &ho);
  hx_params p;
  void *shared[HLB_EXEC_MAX_SHARED] = {0};
  hlb_codelet cl2 = {0};
  int *woffs = NULL, *nwrank = NULL, *ncount = NULL, *leaders = NULL;
  unsigned *node_pus = NULL;
  int nsize = 1;
  if (!rc) {
    share_params(h, cl, n_items, &opt, &ho, &p);
    /* World PU offsets, and the world rank of each of this node's ranks. */
    woffs = hx_alloc(h, (size_t)h->wsize, sizeof *woffs, "ranks");
    int n = (int)n_local;
    hx_check(h, MPI_Allgather(&n, 1, MPI_INT, woffs, 1, MPI_INT, h->world), "MPI_Allgather", -1);
    for (int r = 0, at = 0; r < h->wsize; r++) {
      int c = woffs[r];
      woffs[r] = at;
      at += c;
    }
    MPI_Comm_size(h->ncomm, &nsize);
    nwrank = hx_alloc(h, (size_t)nsize, sizeof *nwrank, "node ranks");
    ncount = hx_alloc(h, (size_t)nsize, sizeof *ncount, "node ranks");
    hx_check(h, MPI_Allgather(&h->wrank, 1, MPI_INT, nwrank, 1, MPI_INT, h->ncomm), "MPI_Allgather",
             -1);
    hx_check(h, MPI_Allgather(&n, 1, MPI_INT, ncount, 1, MPI_INT, h->ncomm), "MPI_Allgather", -1);
    if (h->leader) {
      h->timeout_s = p.timeout_s;
      h->io = *cl;
      /* Shared buffers: rank 0's, to every leader (dexec broadcasts them inside each node). */
      for (unsigned i = 0; i < p.n_shared; i++) {
        size_t b = p.shared_bytes[i];
        if (h->lrank != 0) shared[i] = hx_alloc(h, b, 1, "bytes of a shared buffer");
        void *buf = h->lrank == 0 ? (void *)cl->shared[i].host : shared[i];
        for (size_t at = 0, piece = (size_t)1 << 30; at < b; at += piece)
          hx_check(h,
                   MPI_Bcast((char *)buf + at, (int)(b - at < piece ? b - at : piece), MPI_BYTE, 0,
                             h->lcomm),
                   "MPI_Bcast of a shared buffer", 0);
        h->io.shared[i].host = buf;
        h->io.shared[i].bytes = b;
      }
      h->io.n_shared = p.n_shared;
      h->io.in_bytes_per_item = p.in_b;
      h->io.out_bytes_per_item = p.out_b;
      cl2 = h->io; /* the kernels: this rank's; data: the share (set below) */
      cl2.in = cl2.out = NULL;
      cl2.pack = lead_pack;
      cl2.unpack = lead_unpack;
      h->io = cl2;
      h->io.user = h;
      opt.granularity = p.granularity;
      opt.min_block = p.min_block;
      opt.max_failures = p.max_failures;
      opt.inject_from = p.inject_from;
      opt.inject_count = p.inject_count;
      opt.policy = p.has_policy ? p.policy : NULL;
      opt.params = p.has_params ? p.params : NULL;
      opt.keep_log = 1;      /* the priors of the next share and the stored models: from the log */
      opt.models = p.models; /* the leader gives it to its node (hlb__dx_start) */
      /* The injected PU's index in this node's numbering, or none. */
      opt.inject_pu = -1;
      for (int r = 0, at = 0; r < nsize; r++) {
        int w = nwrank[r];
        if (p.inject_pu >= woffs[w] && p.inject_pu < woffs[w] + ncount[r])
          opt.inject_pu = at + (p.inject_pu - woffs[w]);
        at += ncount[r];
      }
      node_pus = hx_alloc(h, (size_t)h->n_nodes, sizeof *node_pus, "nodes");
      leaders = hx_alloc(h, (size_t)h->n_nodes, sizeof *leaders, "nodes");
      unsigned mine = 0;
      for (int r = 0; r < nsize; r++)
        mine += (unsigned)ncount[r];
      hx_check(h, MPI_Gather(&mine, 1, MPI_UNSIGNED, node_pus, 1, MPI_UNSIGNED, 0, h->lcomm),
               "MPI_Gather", 0);
      hx_check(h, MPI_Gather(&h->wrank, 1, MPI_INT, leaders, 1, MPI_INT, 0, h->lcomm), "MPI_Gather",
               0);
    }
    int mrc = 0;
    if (h->wrank == 0) mrc = m_start(h, cl, &p, node_pus, leaders, links);
    rc = world_agree(h, mrc, "to start the manager");
  }
  dx *x = NULL;
  int empty = 1; /* no rank of this node offers a PU: it runs no executor */
  for (int r = 0; !rc && r < nsize; r++)
    if (ncount[r] > 0) empty = 0;
  if (!rc) {
    size_t ni = h->leader ? (size_t)p.n_items : n_items;
    if (!empty)
      rc = hlb__dx_start(h->ncomm, local_pus, n_local, h->leader ? &cl2 : cl, ni, &opt, 0, &x);
    rc = world_agree(h, rc, "to set up its node");
  }
  int verdict = rc;
  if (!rc) {
    h->x = x;
    h->cur = h->old = -1;
    if (x) x->wrank = nwrank;
    if (h->leader && x) {
      x->io = &h->io;
      x->more = 1;
      x->hook = hook;
      x->hook_arg = h;
      h->prior = hx_alloc(h, (size_t)x->nb * HX_PRIORS, sizeof *h->prior, "prior samples");
      h->n_prior = hx_alloc(h, x->nb, sizeof *h->n_prior, "prior counts");
      h->prior_ptr = hx_alloc(h, x->nb, sizeof *h->prior_ptr, "prior lists");
      h->first_primed = hx_alloc(h, x->nb, sizeof *h->first_primed, "prior counts");
      seed_priors(h);
      h->heard = h->last_beat = hlb__now();
      if (h->m) h->m->last_beat = h->heard;
    }
    double t0 = hlb__now();
    if (x) {
      hlb__dx_run(x);
    } else if (h->m) {
      /* Rank 0's node has no PU: rank 0 only deals the shares. */
      h->m->last_beat = hlb__now();
      while (!h->m->over) {
        int act = hx_progress(h) | m_turn(h);
        if (!act) nanosleep(&(struct timespec){0, 50000}, NULL);
      }
      while (h->sends.n)
        if (!hx_progress(h)) nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    double makespan = hlb__now() - t0;
    /* Collective over the node: each rank stores its PUs' blocks of every share. */
    if (x) hlb__dx_models_end(x);
    int lrc = 0;
    if (h->leader && x && x->error) lrc = hlb__error(x->error, "%s", x->error_text);
    if (h->wrank == 0 && !lrc) lrc = m_verdict(h);
    /* A node whose PUs all failed is not an error when the others did its shares. */
    verdict = world_agree(h, lrc, "the run");
    hlb_mpi_run_stats ns = {0}, ws = {0};
    int frc = 0;
    if (h->leader) {
      /* Collective over the leaders: every leader takes part, whatever its own stats. */
      if (x) frc = hlb__dx_fill_stats(x, &ns);
      /* prior_samples: the stored samples the node started from, not the last share's
       * carried ones. */
      for (unsigned g = 0; x && !frc && h->first_primed && g < x->n_global; g++)
        ns.exec.per_pu[g].prior_samples = x->gbpu[g] >= 0 ? h->first_primed[x->gbpu[g]] : 0;
      int grc = gather_stats(h, nwrank, x && !frc ? x->n_global : 0, &ns, &ws, woffs);
      frc = frc ? frc : grc;
      hlb_mpi_run_stats_clear(&ns);
    }
    /* Node of each rank: its leader's index among the leaders. */
    int my_node = h->leader ? h->lrank : -1;
    hx_check(h, MPI_Bcast(&my_node, 1, MPI_INT, 0, h->ncomm), "MPI_Bcast", 0);
    int *rank_node =
        h->wrank == 0 ? hx_alloc(h, (size_t)h->wsize, sizeof *rank_node, "ranks") : NULL;
    hx_check(h, MPI_Gather(&my_node, 1, MPI_INT, rank_node, 1, MPI_INT, 0, h->world),
             "MPI_Gather of the nodes", 0);
    if (h->wrank == 0 && !frc) {
      mgr *m = h->m;
      ws.exec.n_items = p.n_items;
      ws.exec.makespan_s = makespan;
      ws.n_ranks = h->wsize;
      ws.serve_cpu_s = x ? x->serve_cpu_s : 0;
      ws.serve_idle_cpu_s = x ? x->serve_idle_cpu_s : 0;
      ws.n_nodes = (unsigned)m->n_nodes;
      ws.rank_node = rank_node;
      rank_node = NULL;
      ws.node_leader = calloc((size_t)m->n_nodes, sizeof *ws.node_leader);
      ws.node_failed = calloc((size_t)m->n_nodes, sizeof *ws.node_failed);
      ws.node_items = calloc((size_t)m->n_nodes, sizeof *ws.node_items);
      ws.node_planned = calloc((size_t)m->n_nodes, sizeof *ws.node_planned);
      ws.node_shares = calloc((size_t)m->n_nodes, sizeof *ws.node_shares);
      ws.plan_makespan_s = m->plan_T;
      if (!ws.node_leader || !ws.node_failed || !ws.node_items || !ws.node_planned ||
          !ws.node_shares)
        frc = hlb__error(HLB_ENOMEM, "hlb_mpi_run_hier: out of memory for the node stats");
      for (int i = 0; !frc && i < m->n_nodes; i++) {
        ws.node_leader[i] = m->node[i].leader;
        ws.node_failed[i] = m->node[i].failed;
        ws.node_items[i] = m->node[i].done;
        ws.node_planned[i] = m->node[i].planned;
        ws.node_shares[i] = m->node[i].shares;
      }
    }
    free(rank_node);
    if (stats && !frc)
      *stats = ws;
    else
      hlb_mpi_run_stats_clear(&ws);
    frc = world_agree(h, frc, "to gather the stats");
    if (!verdict) verdict = frc;
  }
  if (x) {
    /* The leaders' share buffers (left only after a failure). */
    for (int k = 0; k < 2; k++) {
      free(h->slot[k].in);
      free(h->slot[k].out);
    }
    free(h->next.in);
    free(h->next.out);
  }
  hlb__dx_end(x);
  if (h->sends.n) {
    /* Only after a failure; the run is over, nothing waits for these. */
    for (size_t i = 0; i < h->sends.n; i++) {
      MPI_Waitall(2, h->sends.v[i].rq, MPI_STATUSES_IGNORE);
      free(h->sends.v[i].head);
      free(h->sends.v[i].data);
    }
  }
  free(h->sends.v);
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    free(shared[i]);
  free(h->prior);
  free(h->n_prior);
  free(h->prior_ptr);
  free(h->first_primed);
  m_end(h->m);
  free(woffs);
  free(nwrank);
  free(ncount);
  free(leaders);
  free(node_pus);
  if (h->lcomm != MPI_COMM_NULL) MPI_Comm_free(&h->lcomm);
  if (h->ncomm != MPI_COMM_NULL) MPI_Comm_free(&h->ncomm);
  MPI_Comm_free(&h->world);
  pthread_mutex_destroy(&h->slot_mu);
  free(h);
  return verdict;
}
