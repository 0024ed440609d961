/* The discrete-event cluster simulator: drives a balancer over a modelled cluster
 * (docs/architecture.md, "drivers"; docs/simulator.md).
 *
 * Each PU of a loaded hlb_cluster processes one block at a time: the block's input crosses
 * the node link (shared by the node's PUs, FIFO) and the PU link, the PU computes for its
 * true curve's time times a lognormal noise factor and any slowdown in force, and the output
 * returns the same way. Compute and transfer times are reported to the balancer separately.
 * Cluster events slow PUs down or kill them (the block in flight is lost and redone).
 * Simulated time is deterministic for a seed: the same inputs give the same result, bit for
 * bit, except the solver's wall-clock time.
 *
 * Thread safety: hlb_sim_run() keeps all its state in the call; several runs may proceed in
 * parallel on one shared (read-only) hlb_cluster. A hlb_sim_result is owned by one thread.
 */
#ifndef HLB_SIM_H
#define HLB_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/cluster.h"
#include "hlb/export.h"

HLB_BEGIN_DECLS

/* What to simulate. Zero-initialise and set n_items; the rest has defaults. */
typedef struct hlb_sim_options {
  size_t n_items;     /* items to process; > 0 */
  size_t granularity; /* blocks are multiples of this (the balancer's); 0 means 1 */
  const char *policy; /* policy name; NULL: $HLB_POLICY, then the default */
  const char *params; /* policy parameters "k=v,..."; NULL for defaults */
  uint64_t seed;      /* noise stream; the same seed gives the same run */
  int keep_trace;     /* record every block's slices for hlb_sim_write_trace() */
  int no_noise;       /* 1: ignore the cluster's noise_sigma and host_jitter_s (true times) */
  int no_events;      /* 1: ignore the cluster's slowdown and fail events */
  /* Passes over the same items (0 or 1: one). Each pass after the first starts from the item
   * cost density the previous one learnt (hlb_balancer_item_cost), as an iterative code's
   * next iteration would; pass k uses the noise seed + k. The result is the last pass's. */
  unsigned passes;
  /* 1: keep every driver-core PU (docs/cluster-format.md, "Driver cores") even when it does
   * fewer items per second than the cores it holds would do in their cpu PU. By default such a
   * PU is released as the executor releases one (hlb_exec_options.keep_weak_devices): judged
   * once the cpu PU finished HLB_SIM_RELEASE_BLOCKS blocks, its cores go back to the cpu PU. */
  int keep_weak_devices;
  /* With passes > 1: 1 = each pass also starts from the samples of the passes before it (the
   * newest HLB_SIM_REMEMBERED per PU, given to the balancer as priors), as the executor's
   * session and stored models give a later run; 0 = every pass trains its models anew. */
  int remember;
  /* With passes > 1: 1 = each pass starts without the item cost density the passes before it
   * learnt (every item taken to cost the same), so that with `remember` a pass starts from
   * priors alone, as a later run does whose stored item costs do not apply (another item
   * count, docs/models.md). */
  int no_item_costs;
} hlb_sim_options;

/* Samples per PU a pass remembers for the next (hlb_sim_options.remember): the executor's
 * stored models keep as many (HLB__MODEL_KEEP). */
#define HLB_SIM_REMEMBERED 64u

/* Blocks the cpu PU (and the device, judged on finished blocks) must have finished before a
 * driver-core PU is judged: the executor's HLB_EXEC_RELEASE_BLOCKS. */
#define HLB_SIM_RELEASE_BLOCKS 2u
/* A device whose first block alone shows it this many times slower than the cores it holds is
 * released after that block (the executor's HLB_EXEC_RELEASE_CLEAR_FACTOR). */
#define HLB_SIM_RELEASE_CLEAR_FACTOR 4.0
/* ... when that block took at least this long. The simulator judges every driver-core PU as
 * the executor judges a device computing on the cores (HLB_EXEC_FIRST_BLOCK_MAX_S): on its
 * items over its busy time. */
#define HLB_SIM_RELEASE_CLEAR_MIN_S 0.01

/* A driver-core PU the simulator released, with both figures of the decision. */
typedef struct hlb_sim_release {
  unsigned pu;             /* the released PU */
  unsigned host;           /* the cpu PU that got its cores back */
  unsigned cores;          /* how many */
  double at_s;             /* simulated time of the decision */
  double pu_items_per_s;   /* the PU's items per busy second (at most this, when in_flight) */
  double core_items_per_s; /* what its cores did in the cpu PU: per-core rate x cores */
  int in_flight;           /* 1: judged while its block ran; that block went back to the pool */
  char reason[192];        /* "released at 1.5 s: 120 items/s against 400 items/s for ..." */
} hlb_sim_release;

/* One phase of one block, recorded when keep_trace is set. */
typedef enum hlb_sim_phase {
  HLB_SIM_PHASE_IN = 0,  /* input transfer (node link, then PU link) */
  HLB_SIM_PHASE_COMPUTE, /* compute */
  HLB_SIM_PHASE_OUT      /* output transfer (PU link, then node link) */
} hlb_sim_phase;

typedef struct hlb_sim_slice {
  unsigned pu;
  hlb_sim_phase phase;
  int lost;            /* 1: the block was lost to a failure during or after this slice */
  size_t begin, count; /* the block's items */
  double start_s, end_s;
} hlb_sim_slice;

/* What a run produced. Arrays have n_pus (or n_kinds) entries. */
typedef struct hlb_sim_result {
  char policy[64];      /* the policy's name as resolved */
  double makespan_s;    /* time the last block's output arrived */
  double lower_bound_s; /* hlb_sim_lower_bound() of the same cluster and items */
  double ratio;         /* makespan / lower bound */
  size_t blocks;        /* blocks completed */
  size_t blocks_lost;   /* blocks lost to failures or dropped by a released PU (and redone) */
  uint64_t events;      /* simulation events processed */
  double solver_s;      /* wall-clock time inside the policy (not deterministic) */
  int exactly_once;     /* 1: hlb_balancer_check_exactly_once() passed */
  unsigned n_pus;
  size_t *items_per_pu;    /* items of the completed blocks */
  double *busy_s;          /* time each PU spent computing or moving its own data */
  double *alive_s;         /* time each PU was alive within the makespan */
  unsigned n_kinds;        /* distinct PU kinds, in order of first appearance */
  const char **kind_names; /* point into the cluster: valid while it lives */
  double *idle_pct;        /* per kind: 100 * (1 - sum busy / sum alive) */
  size_t n_slices;         /* trace slices (keep_trace only) */
  hlb_sim_slice *slices;
  unsigned n_released;       /* driver-core PUs released during the run, in order */
  hlb_sim_release *released; /* NULL when the cluster has no driver cores */
} hlb_sim_result;

/* Simulate one run of opt->policy on cluster c. On success *out holds the result (free with
 * hlb_sim_result_free). Errors: HLB_EINVAL for bad options, HLB_ENOTFOUND for an unknown
 * policy, HLB_ESTATE when every PU failed with items left; hlb_last_error() says which. */
HLB_EXTERN int hlb_sim_run(const hlb_cluster *c, const hlb_sim_options *opt, hlb_sim_result **out);

HLB_EXTERN void hlb_sim_result_free(hlb_sim_result *r);

/* The reference makespan: the equal-finish-time split of n_items (hlb_eft_solve), one block
 * per PU, each PU's curve being its true compute time plus the uncontended transfer of its
 * block in and out over its node link and its PU link (latencies counted once). No noise, no
 * events, no link sharing, no policy overhead. It is a true lower bound of every run without
 * noise and events when compute curves are subadditive (no quadratic, cubic or x log x term);
 * docs/simulator.md explains. */
HLB_EXTERN int hlb_sim_lower_bound(const hlb_cluster *c, size_t n_items, double *out);

/* The true time curve (compute + uncontended transfers) of PU p, as used by the bound. */
HLB_EXTERN void hlb_sim_pu_curve(const hlb_cluster *c, unsigned p, hlb_curve *out);

/* Write the slices of one or more runs as Chrome trace JSON (Perfetto, chrome://tracing):
 * one process per run and node ("<label> / <node>"), one track per PU, slices "in",
 * "compute", "out" with the block's items in args. labels[i] names runs[i]; each run needs
 * keep_trace. HLB_EIO when the file cannot be written. */
HLB_EXTERN int hlb_sim_write_trace(const char *path, const hlb_cluster *c,
                                   const hlb_sim_result *const *runs, const char *const *labels,
                                   unsigned n_runs);

HLB_END_DECLS

#endif
