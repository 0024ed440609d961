/* The distributed executor's state, shared by its files and with the hierarchical mode
 * (src/mpi/hier.c), which runs one executor per node with its node leader in rank 0's place and
 * feeds that leader's balancer share after share (docs/mpi-executor.md, "Hierarchical mode").
 * Internal to libhlb_mpi. The executor's files, one job each:
 *   dexec.c         the run: rank 0's balancer bookkeeping, rank 0's own PUs (the driver core's
 *                   local transport, src/exec/driver.h), the verdict, hlb_mpi_run
 *   dexec_wire.c    the wire: messages, their sends in flight, MPI errors
 *   dexec_serve.c   rank 0's service: requests of the other ranks' PUs, grants with their
 *                   input, outputs, the liveness watch
 *   dexec_remote.c  ranks > 0: the driver core's remote transport and the communication loop
 *   dexec_setup.c   set-up and tear-down: parameters, PU layout, devices, shared buffers,
 *                   kernels, reports, the balancer, stats
 * One numbering (src/exec/driver.h): a PU's index is its global index g (ranks in order, each
 * rank's PUs in its order), in messages, stats, injection and traces; on rank 0, gbpu[g] and
 * gof_b[] map it to the balancer's index and back, the balancer knowing only usable PUs. */
#ifndef HLB_MPI_DEXEC_INTERNAL_H
#define HLB_MPI_DEXEC_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/backend.h"
#include "exec/driver.h"
#include "hlb/balancer.h"
#include "hlb/mpi.h"

/* Tags on hlb's duplicate communicator: requests and their output data go to rank 0,
 * replies and their input data come back. Messages with one tag between two ranks arrive in
 * order (MPI's non-overtaking rule), so a header is always followed by its own data. */
enum { TAG_REQ = 0x4c01, TAG_OUT = 0x4c02, TAG_REPLY = 0x4c03, TAG_IN = 0x4c04 };
enum { MSG_NEXT = 1, MSG_DONE, MSG_FAIL, MSG_BYE, MSG_ALIVE };
enum { REP_GRANT = 1, REP_STOP, REP_ALIVE };

/* Messages to one destination handed to MPI and not yet found complete (see dx.fly). One the
 * transport takes at once is found complete as it is posted and does not count, so this
 * bounds the sends stuck behind a full queue or waiting for a large message's receiver. */
#define DX_SEND_WINDOW 8
/* Blocks one remote PU can hold at once: the one computing and the one requested ahead. */
#define DX_MAX_FLYING 2
/* Sleep of an idle communication loop. Short against a block's time, long enough to leave
 * the cores to the kernels. */
#define DX_IDLE_S 50e-6
#define DX_TEXT 200
/* Heartbeats per HLB_MPI_TIMEOUT: a rank is declared silent after missing about four. */
#define DX_BEATS 4
/* ... but at least one per second, so a stop shows within a second of the timeout. */
#define DX_BEAT_MAX_S 1.0
/* Block ids below 2^40 per share; the bits above hold the share's generation. */
#define DX_GEN_SHIFT 40

typedef struct req_msg {
  int32_t type, g, retire, pad;
  uint64_t id, out_bytes; /* out_bytes: the block output that follows a DONE */
  double compute_s, transfer_s, throttle_s;
  char text[DX_TEXT]; /* a failure's error text */
} req_msg;

typedef struct reply_msg {
  int32_t status, g;
  hlb_block blk;
  double pack_s; /* rank 0's packing time, part of the block's transfer */
  uint64_t bytes;
} reply_msg;

/* A message waiting for, or in, its MPI_Isend. */
typedef struct out_msg {
  struct out_msg *next;
  union {
    req_msg req;
    reply_msg rep;
  } h;
  int dest, tag_h, tag_d, is_req, owns_data;
  void *data;
  size_t len;
} out_msg;

struct dx;

typedef struct dx_pu {
  struct dx *x;
  unsigned g; /* the PU's global index (one numbering, above) */
  hlb_exec_pu pu;
  const hlb__backend_ops *ops;
  void *dev;
  int opened, prepared, usable;
  double setup_s;
  char why[DX_TEXT]; /* why it is not usable */
  const void *shared[HLB_EXEC_MAX_SHARED];
  hlb__driver core; /* the driver core's state; core.ctx points back here */
  hlb__stage sg;
  /* Remote driver (ranks > 0): the block in hand's input (as it came with the grant, with the
   * seconds it took to arrive: rank 0's packing and the receive) and output (sent with DONE);
   * `ahead`: a NEXT is out, asked one block ahead. The driver thread only. */
  void *in_data, *out_data;
  double in_s;
  int ahead;
  /* Mailbox of a remote driver; guarded by x->mu. Its own condition variable: with many PUs
   * on a rank, one shared by all would wake every driver for every reply. */
  pthread_cond_t mail;
  int has_reply;
  reply_msg reply;
  void *reply_data;
  double reply_mpi_s;
} dx_pu;

/* Rank 0's view of one global PU on another rank; guarded by x->mu. */
typedef struct remote_pu {
  int pending; /* a NEXT waits for an answer (the balancer said WAIT) */
  int queued;  /* listed in x->pend (calling thread only) */
  int retired;
  hlb_block flying[DX_MAX_FLYING];
  unsigned n_flying;
} remote_pu;

typedef struct dx {
  MPI_Comm comm;
  int rank, size;
  hlb_codelet cl; /* this rank's kernels; rank 0's sizes and (on rank 0) data */
  /* Rank 0: where blocks' data come from and go to (in/pack, out/unpack, with their user
   * pointer): &cl, or a node leader's current share (src/mpi/hier.c). */
  const hlb_codelet *io;
  size_t n_items;
  hlb_exec_options opt;
  unsigned n_local;
  dx_pu *loc;
  int *counts, *offsets; /* PUs per rank and the global index of each rank's first */
  unsigned n_global;
  void *shared_copy[HLB_EXEC_MAX_SHARED]; /* the broadcast shared buffers (ranks > 0) */
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* broadcast after every done/fail/retire and every mailbox delivery */
  out_msg *q_head, *q_tail; /* drivers' outgoing messages; mu */
  /* Messages in MPI_Isend that did not complete at once; the calling thread only. Kept dense,
   * two requests each (header, data), so that one MPI_Testsome per loop turn completes them:
   * one pass of MPI's progress engine, where a test per message made one pass per message in
   * flight. At most DX_SEND_WINDOW of them per destination: Open MPI keeps every send its
   * transport cannot take yet (a peer slow to drain its shared-memory queue) in one list and
   * retries the whole list in every pass of its progress engine (each MPI_Iprobe, MPI_Recv,
   * MPI_Testsome); with 10^4 PUs behind 8 ranks that list held ~2500 grants on average and
   * was half of rank 0's CPU (bench/mpi/bench_grants.c, docs/mpi-executor.md). The rest wait
   * in their destination's queue, in order, and go out as the window frees. */
  out_msg **fly;
  MPI_Request *fly_rq;
  int *fly_idx;
  size_t n_fly, cap_fly;
  /* Per destination rank (x->size of each; allocated at the first send): its messages in
   * x->fly, its queue waiting for room, and whether it is listed in dst_touch (a list of the
   * destinations whose sends completed in this pass, to refill from their queues). */
  unsigned *dst_busy;
  out_msg **dst_head, **dst_tail;
  unsigned char *dst_marked;
  int *dst_touch;
  size_t n_queued;
  unsigned drivers_alive; /* mu */
  /* Rank 0 only: one entry per global PU (n_global, allocated by layout; no fixed limit). */
  hlb_exec_pu *gpu;
  int *grank, *gusable, *gbpu;
  double *gsetup;
  unsigned *gof_b, nb, n_remote;
  hlb_balancer *b; /* mu */
  remote_pu *rem;  /* mu */
  /* Remote PUs whose NEXT waits (the balancer said WAIT), so that a done retries those only
   * rather than scanning every PU; calling thread only. */
  unsigned *pend, *pend_scratch, n_pend;
  double last_check;                    /* check_silent's last look; calling thread only */
  hlb_exec_pu_stats *st;                /* mu */
  unsigned byes;                        /* calling thread only */
  int changed;                          /* a done/fail since the last retry; mu */
  double t0, last_end;                  /* last_end: mu */
  int error;                            /* first fatal error of the run; mu */
  char error_text[512], fail_text[512]; /* mu */
  double setup_s;
  size_t bytes_to, bytes_from, remote_blocks; /* calling thread only */
  size_t grants;                              /* rank 0's calling thread only */
  double serve_cpu_s, serve_idle_cpu_s;       /* rank 0's calling thread only */
  /* Liveness (HLB_MPI_TIMEOUT, rank 0's value on every rank); calling thread only. Ranks > 0
   * send MSG_ALIVE every beat while their drivers work; rank 0 ends the job when a rank with
   * PUs still working is silent for timeout_s (docs/reliability.md, "MPI faults"). Rank 0
   * sends REP_ALIVE to every rank with PUs working each beat, and a rank > 0 whose drivers
   * heard nothing from rank 0 for timeout_s ends the job naming rank 0. */
  double timeout_s, last_beat;
  double heard0;              /* ranks > 0: when rank 0's last message arrived */
  double *heard;              /* rank 0: when each rank's last message arrived */
  unsigned *byes_of, *pus_of; /* rank 0: BYEs from each rank, and its PUs that will say BYE */
  /* A share source (the hierarchical mode's node leader; all zero in the flat mode). The
   * balancer x->b holds the current share, items [base, base + its n_items) of the run: its
   * blocks are moved by base on their way out and back, so kernels, pack and unpack see the
   * run's item numbers. While `more` is set (mu), a balancer that says DONE means "wait for the
   * next share", not "stop". `hook` is called by rank 0's service loop every turn (1 when it
   * did something); the loop ends only once `hook_over` is set as well. */
  size_t base;
  int more;
  /* A share's blocks carry its generation in their id's top bits (DX_GEN_SHIFT), so that the
   * previous share's balancer (b_old, items from base_old) can finish its last blocks while the
   * current one grants: a node does not idle at the end of every share. */
  uint64_t gen, gen_old;
  hlb_balancer *b_old;
  size_t base_old;
  const int *wrank; /* world rank of each rank of comm, for messages; NULL: comm's own */
  int (*hook)(struct dx *x);
  void *hook_arg;
  int hook_over;
  /* Models kept across runs (dexec_models.c); rank 0 only but the mode, model_dir of every
   * rank's options. Per global PU: its stored samples (HLB__MODEL_KEEP slots each); per
   * balancer PU: a pointer into them and their count, the balancer's priors. `kept`: per
   * global PU, the newest finished blocks of the run's balancers so far, to be stored. */
  hlb_sample *prior;
  const hlb_sample **prior_of_b;
  size_t *n_prior_of_b;
  struct dx_pu_samples *kept;
  int models_from;       /* hlb_models_from */
  char model_file[1024]; /* rank 0's file */
  char model_error[512]; /* why rank 0 could not read or store them */
} dx;

/* Setup, collective over comm: arguments checked and agreed, PUs laid out, devices opened,
 * shared buffers broadcast from comm's rank 0, kernels prepared, the stored models read
 * (hlb__dx_models_begin), and on rank 0 the PUs indexed for a balancer and, with make_balancer,
 * the balancer over [0, n_items) created from them. Every rank
 * returns the same code; on success *out is the executor (free with hlb__dx_end, also on
 * error when *out is set). */
int hlb__dx_start(MPI_Comm comm, const hlb_exec_pu *pus, unsigned n_local, const hlb_codelet *cl,
                  size_t n_items, const hlb_exec_options *opt, int make_balancer, dx **out);
/* Rank 0: a balancer over n_items items for the usable PUs (as make_balancer does), with priors
 * (per balancer PU index, may be NULL). */
int hlb__dx_new_balancer(dx *x, size_t n_items, const hlb_sample *const *prior,
                         const size_t *n_prior, hlb_balancer **out);
/* Collective: drive every local PU and serve (rank 0) or communicate (other ranks) until the
 * run ends. */
void hlb__dx_run(dx *x);
/* Rank 0: the run's verdict (its error, items left, or the pool's exactly-once proof). */
int hlb__dx_finish(dx *x);
/* Rank 0: the stats of the run, as hlb_mpi_run returns them. */
int hlb__dx_fill_stats(dx *x, hlb_mpi_run_stats *s);
/* Collective: every rank returns rank 0's verdict, with its text. */
int hlb__dx_share_result(dx *x, int rc);
/* Everything the executor holds (the balancer x->b included); x may be NULL. */
void hlb__dx_end(dx *x);
/* An MPI call failed: print the rank, the operation and the peer, and abort the job. */
void hlb__dx_mpi_check(const dx *x, int mrc, const char *what, int peer);
#define mpi_check hlb__dx_mpi_check
/* Receive a block's data from peer (its header has arrived) within the timeout; a peer silent
 * that long in the middle of it is named and the job aborted (liveness.h, hlb__recv_within). */
void hlb__dx_recv_data(const dx *x, void *buf, size_t len, int peer, int tag, const char *what);

/* Seconds since the run started (x->t0). */
double hlb__dx_rel_now(const dx *x);
/* Rank r of x->comm as the job knows it: the world rank in the hierarchical mode. */
int hlb__dx_world_rank(const dx *x, int r);

/* dexec_setup.c, collective: n_local records of `each` bytes from every rank to rank 0's `all`
 * (n_global records, in global PU order), and back from rank 0's `all` to each rank's `mine`. */
void hlb__dx_gather_pus(dx *x, const void *mine, size_t each, void *all);
void hlb__dx_scatter_pus(dx *x, const void *all, size_t each, void *mine);

/* dexec_models.c, collective over x->comm (docs/models.md, "MPI runs"): before the run (in
 * hlb__dx_start), every rank's stored samples of its PUs to rank 0 (x->prior_of_b for the
 * balancer, x->models_from); after it, the run's finished blocks of each rank's PUs into its
 * host's model file: those of every balancer given to hlb__dx_models_keep, and of x->b_old and
 * x->b. Per rank 0's mode. */
void hlb__dx_models_begin(dx *x);
void hlb__dx_models_end(dx *x);
/* Rank 0: the finished blocks of balancer b (NULL: none), which is about to go, kept for
 * hlb__dx_models_end (the newest HLB__MODEL_KEEP per PU of all the balancers kept so far). The
 * hierarchical mode's leaders call it for each share's balancer; nothing when not storing. */
void hlb__dx_models_keep(dx *x, const hlb_balancer *b);

/* dexec_wire.c: a message to `dest` (is_req: a request to rank 0, else a reply from it); aborts
 * the job when out of memory, since a lost message would hang a peer. */
out_msg *hlb__dx_new_msg(int is_req, int dest);
/* Start sending m (the calling thread only); it is freed, with its data when it owns them,
 * once sent. */
void hlb__dx_send(dx *x, out_msg *m);
/* Complete the sends that can be completed, and start those queued that now fit their
 * destination's window; 1 when one finished. */
int hlb__dx_progress_sends(dx *x);
/* Messages not yet sent: in flight or queued (the loops end only once it is 0). */
size_t hlb__dx_sends_left(const dx *x);
/* Free the sends' tables and any message still queued (never handed to MPI). */
void hlb__dx_sends_free(dx *x);

/* dexec.c, rank 0, x->mu held: the balancer calls of global PU g, moved to and from the
 * current share's numbers (hier.c), and the run's bookkeeping of its blocks: stats, error,
 * waking the waiting. */
int hlb__dx_bal_next(dx *x, unsigned g, hlb_block *blk);
int hlb__dx_bal_fail(dx *x, unsigned g, const hlb_block *blk);
void hlb__dx_set_error_locked(dx *x, int code, const char *text);
void hlb__dx_done_locked(dx *x, unsigned g, hlb_sample *s, double throttle_s);
void hlb__dx_fail_locked(dx *x, unsigned g, const hlb_block *blk, const char *text);
void hlb__dx_retire_locked(dx *x, unsigned g, const char *text);

/* dexec_serve.c: rank 0's service loop, until every PU said BYE and every send is done. */
void hlb__dx_serve_loop(dx *x);
/* dexec_remote.c: the transport of a PU on a rank > 0, and that rank's communication loop. */
extern const hlb__transport hlb__dx_remote_transport;
void hlb__dx_comm_loop(dx *x);

#endif
