/* The driver core: the one loop that drives a PU, whether the PU is in this process (the
 * threaded executor, src/exec/exec.c, and rank 0's own PUs in the MPI executor,
 * src/mpi/dexec.c) or on another MPI rank (src/mpi/dexec_remote.c). Internal to hlb.
 *
 * Per block the loop asks for it, has the transport stage its input on the host, moves it to
 * the device, runs the kernel (failing it on purpose where the options inject a failure),
 * brings the output back, has the transport take the output, stretches the compute time by
 * the PU's emulated throttle, and reports the block done or failed. A PU that fails
 * max_failures blocks in a row is retired. What a transport does is only what differs: where
 * a block comes from and where its data are (the balancer under the run's lock and the
 * caller's arrays, or a grant from rank 0 with its input bytes), and whom it tells.
 *
 * One numbering: d->pu is the PU's index among all PUs of the run, the one index the stats
 * (hlb_exec_stats.per_pu), fault injection (hlb_exec_options.inject_pu), traces and the
 * MPI messages use (the executor's PU index; in the MPI executor the global index: ranks in
 * order, each rank's PUs in the order it gave them). The balancer numbers only the PUs that
 * take part in a run (hlb_balancer_config lists exactly those, so that a policy plans for
 * them alone), so a transport that calls the balancer keeps that PU's balancer index beside
 * it; it is the one map left, from the PU index to the balancer's and back.
 */
#ifndef HLB_EXEC_DRIVER_H
#define HLB_EXEC_DRIVER_H

#include <stddef.h>

#include "exec/backend.h"
#include "hlb/balancer.h"
#include "hlb/exec.h"

/* A PU's staging buffers, kept from block to block (and, by the executor, from run to run),
 * grown as blocks grow. */
typedef struct hlb__stage {
  void *dev_in, *dev_out, *host_in, *host_out;
  size_t dev_in_cap, dev_out_cap, host_in_cap, host_out_cap;
} hlb__stage;

typedef struct hlb__driver hlb__driver;

/* How one PU's blocks come and go. Called from the PU's driver thread only. */
typedef struct hlb__transport {
  /* The PU's next block: 1 with *blk filled, 0 when the PU stops (every item is done, the
   * run failed, the PU was retired or released). */
  int (*next)(hlb__driver *d, hlb_block *blk);
  /* Where the block's input is on the host (*in; NULL without input bytes) and where its
   * output is to be written on the host (*out; NULL without output bytes). *earlier_s: time
   * the input spent reaching this process before this call, counted as the block's transfer.
   * 0 or HLB_E*. */
  int (*input)(hlb__driver *d, const hlb_block *blk, const void **in, void **out,
               double *earlier_s);
  /* Optional: called once the kernel succeeded, before its output is written: 0 when the
   * block is no longer this PU's (taken back while it ran), so the output must be dropped;
   * the loop then stops and the transport's leave() cleans up. */
  int (*commit)(hlb__driver *d);
  /* Optional: the output is on the host at `out` (input()'s); deliver it (unpack). HLB_E*. */
  int (*output)(hlb__driver *d, const hlb_block *blk, void *out);
  /* The block is done; s->block, compute_s and transfer_s are filled, throttle_s is the
   * emulated part of compute_s. 1 when the PU must stop now. */
  int (*done)(hlb__driver *d, hlb_sample *s, double throttle_s);
  /* The block failed (its error is hlb_last_error()); retire: that was the PU's
   * max_failures-th failure in a row, the PU is given up. 1 when the PU must stop now
   * (always when retire). */
  int (*fail)(hlb__driver *d, const hlb_block *blk, int retire);
  /* The loop is over: release what the PU still holds and say it left. */
  void (*leave)(hlb__driver *d);
} hlb__transport;

/* How the kernel is started: the executor's session keeps a built kernel per PU
 * (backend launch()); the MPI executor prepares one codelet per device (backend run()). */
typedef enum { HLB__KERNEL_LAUNCH, HLB__KERNEL_RUN } hlb__kernel_call;

struct hlb__driver {
  const hlb__transport *t;
  void *ctx;      /* the transport's state for this PU */
  unsigned pu;    /* the PU's index in the run (see "One numbering" above) */
  char label[96]; /* the PU in error messages: "pu 'cpu'", "rank 1 pu 'cpu' (global 1)" */
  const hlb__backend_ops *ops;
  void *dev;
  hlb__kernel_call call;
  void *kernel;              /* HLB__KERNEL_LAUNCH: the session's kernel (may be NULL) */
  const hlb_codelet *cl;     /* the kernels, the item sizes and the user pointer */
  const void *const *shared; /* HLB_EXEC_MAX_SHARED pointers, as the kernel sees them */
  double throttle;           /* emulated slowdown (hlb_exec_pu.throttle) */
  unsigned max_failures;     /* failures in a row before retiring; 0: the default */
  int inject_pu;             /* fault injection (hlb_exec_options), in d->pu's numbering */
  unsigned inject_from, inject_count;
  hlb__stage *sg;
  unsigned started, fail_streak; /* blocks started (for injection), failures in a row */
};

/* Drive the PU until its transport says stop, it is retired, or a hook says stop; then
 * transport->leave(). */
void hlb__driver_loop(hlb__driver *d);

/* The block's input and output on the host for a transport whose data are in codelet `io`
 * (in/pack, out/unpack): the local side of both executors. */
int hlb__driver_host_input(hlb__driver *d, const hlb_codelet *io, const hlb_block *blk,
                           const void **in, void **out);
/* ... and the output delivered: unpacked from the staging buffer when io has unpack(). */
void hlb__driver_host_output(hlb__driver *d, const hlb_codelet *io, const hlb_block *blk);

/* Stats of a PU (both executors): a failed block, with its error text; `retire`: the PU is
 * given up, and the text kept as its failure (hlb__pu_stats_retire). */
void hlb__pu_stats_add_failure(hlb_exec_pu_stats *st, const char *text, int retire);
void hlb__pu_stats_retire(hlb_exec_pu_stats *st, const char *text);

/* Sleep s seconds (nothing for s <= 0), resumed after signals. */
void hlb__sleep_s(double s);

#endif
