/* libhlb_mpi: hlb across MPI ranks. This header includes mpi.h; the core library never does.
 *
 * SPMD interface (FLEX-MPI, FLEX-MPI section 3): an iterative code whose rows are split
 * into one contiguous range per rank registers its row arrays, brackets each iteration's
 * computation with hlb_spmd_begin()/hlb_spmd_end(), and at the end of each sampling interval
 * the ranks measure, decide (include/hlb/repartition.h) and move rows to their new owners.
 *
 *   hlb_spmd *s; hlb_spmd_create(MPI_COMM_WORLD, n_rows, NULL, &s);
 *   hlb_spmd_range(s, &first, &count);           // allocate count rows, fill them
 *   hlb_spmd_register_dense(s, (void **)&A, n * sizeof(double));
 *   for (it = 0; it < iters; it++) {
 *     hlb_spmd_begin(s);  ...compute rows, exchange...  hlb_spmd_end(s, 0.0, &changed);
 *     if (changed) hlb_spmd_range(s, &first, &count); // A now holds the new rows
 *   }
 *   hlb_spmd_destroy(s);
 *
 * Thread safety: one hlb_spmd per communicator, used by one thread of each rank. Every call
 * marked "collective" must be made by all ranks of the communicator in the same order.
 */
#ifndef HLB_MPI_H
#define HLB_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/export.h"
#include "hlb/repartition.h"

HLB_BEGIN_DECLS

typedef struct hlb_spmd_options {
  const char *policy; /* repartition policy; NULL: $HLB_REPART_POLICY, then "hlb" */
  const char *params; /* "name=value,..." for the policy; NULL for defaults */
  unsigned interval;  /* iterations per sampling interval (FLEX-MPI, section 4: 100); 0 = 100 */
  int use_papi;       /* count FLOPs with PAPI when the machine allows it (default 1) */
  size_t min_rows;    /* no rank is given fewer rows than this (default 1) */
  /* Rows per rank to start from, one entry per rank of the communicator, summing to the row
   * count and the same on every rank: e.g. the split a previous run ended with, so that a
   * restarted job need not rebalance again. NULL (default): the even split. */
  const size_t *initial_counts;
  /* Rank 0 writes every sampling interval's measurements, decisions and redistributions to
   * this file at hlb_spmd_destroy (`hlb report FILE` draws them; docs/report.md). NULL: none.
   * Checked at hlb_spmd_create: a path that cannot be written fails there. */
  const char *trace;
} hlb_spmd_options;

/* Defaults: $HLB_REPART_POLICY or "hlb", interval 100, PAPI on, min_rows 1, even start,
 * trace $HLB_SPMD_TRACE or none. */
HLB_EXTERN void hlb_spmd_options_default(hlb_spmd_options *o);

typedef struct hlb_spmd hlb_spmd;

/* Collective. Split `rows` rows evenly over the ranks of `comm` (the papers' T_par split), or
 * as opt->initial_counts says. Fails with HLB_EINVAL, on every rank, when the ranks disagree
 * about initial_counts, when it does not sum to `rows` or gives a rank fewer than min_rows. */
HLB_EXTERN int hlb_spmd_create(MPI_Comm comm, size_t rows, const hlb_spmd_options *opt,
                               hlb_spmd **out);
/* Collective. Frees the monitor and the policy; registered arrays stay the caller's. */
HLB_EXTERN void hlb_spmd_destroy(hlb_spmd *s);

/* This rank's rows: [*first, *first + *count). */
HLB_EXTERN void hlb_spmd_range(const hlb_spmd *s, size_t *first, size_t *count);
/* Every rank's count and displacement (arrays of the communicator's size; may be NULL). */
HLB_EXTERN void hlb_spmd_layout(const hlb_spmd *s, const size_t **counts, const size_t **displs);

/* Register a dense array of this rank's rows, row_bytes bytes each, allocated with malloc:
 * on redistribution the rows move to their new owners and the buffer is resized with
 * realloc, so *data may change (rows kept by this rank are not copied through MPI). Up to 32
 * arrays. */
HLB_EXTERN int hlb_spmd_register_dense(hlb_spmd *s, void **data, size_t row_bytes);

/* A CSR matrix of this rank's rows: row_ptr has count + 1 entries starting at 0; col holds
 * global column indices. All three arrays are malloc'd and replaced on redistribution. */
typedef struct hlb_csr {
  int64_t *row_ptr;
  int64_t *col;
  double *val;
} hlb_csr;
HLB_EXTERN int hlb_spmd_register_csr(hlb_spmd *s, hlb_csr *m);

/* Collective. Per-row cost weights of this rank's rows (e.g. nonzeros per row): policies that
 * use weights split by them, and they move with the rows. Copied. */
HLB_EXTERN int hlb_spmd_set_row_weights(hlb_spmd *s, const double *local_weights);

/* Open the measurement window of one iteration's computation (MPI time inside the window is
 * counted as communication through PMPI). */
HLB_EXTERN int hlb_spmd_begin(hlb_spmd *s);

/* Collective. Close the window. `work` is this iteration's FLOP count if the application
 * counts it (0: PAPI's count when available, else rows x weight). At the end of a sampling
 * interval the policy decides and rows may move: *changed (may be NULL) is then 1 and
 * hlb_spmd_range() gives the new range; registered pointers are already updated. */
HLB_EXTERN int hlb_spmd_end(hlb_spmd *s, double work, int *changed);

/* What happened so far. */
typedef struct hlb_spmd_stats {
  unsigned iterations;
  unsigned intervals;
  unsigned redistributions;
  double redistribute_s;     /* total time spent moving rows (slowest rank) */
  size_t rows_moved;         /* rows that changed owner, summed over redistributions */
  int papi;                  /* 1 when FLOPs came from PAPI */
  unsigned shared_intervals; /* intervals in which some rank lost >= 5 % of its wall time to
                                other processes (FLEX-MPI's TH1 test, whatever the policy) */
  hlb_repart_decision last;  /* the last interval's decision */
  /* Intervals in which this rank's policy decided differently from rank 0's; every rank
   * acts on rank 0's decision (the ranks' floating point may differ in the last bit). */
  unsigned decision_mismatches;
  /* This rank's policy: intervals decided, and intervals rejected for unusable measurements
   * (the split stands for those; include/hlb/repartition.h). */
  hlb_repart_stats policy;
} hlb_spmd_stats;
HLB_EXTERN void hlb_spmd_stats_get(const hlb_spmd *s, hlb_spmd_stats *out);

/* Iteration (0-based, counted by hlb_spmd_end) after which the k-th redistribution happened,
 * or -1. For benchmarks: how soon a rebalance follows a change of load. */
HLB_EXTERN long hlb_spmd_redistribution_iteration(const hlb_spmd *s, unsigned k);

/* ---- Distributed executor and link profiling (issue 5) -------------------------------
 *
 * hlb_mpi_run() is hlb_executor_run() across the ranks of a communicator: every rank offers
 * its local PUs, rank 0 runs the one balancer over all of them (global PU index = the PUs of
 * rank 0, then those of rank 1, ...), and a block's packed input and output travel between
 * rank 0 and the PU's rank by non-blocking MPI. docs/mpi-executor.md has the protocol.
 *
 * Thread safety: hlb_mpi_run() and hlb_mpi_profile_links() are collective and must be called
 * by the thread that initialised MPI (MPI_THREAD_FUNNELED or more is required: only that
 * thread makes MPI calls; the PU driver threads talk to it through a queue). An MPI error
 * prints one line naming the rank and calls MPI_Abort, so no rank waits forever on a lost
 * peer. */

/* What a distributed run did. Filled on rank 0 (zeroed on the other ranks). `exec` has the
 * same per-PU fields as hlb_executor_run() fills, indexed by global PU, so code that prints
 * an hlb_exec_stats prints this too; transfer_s of a remote PU includes the MPI time of its
 * blocks' data. */
typedef struct hlb_mpi_run_stats {
  hlb_exec_stats exec;
  int n_ranks;
  int *rank;       /* exec.n_pus entries (owned): the rank each global PU lives on */
  unsigned *local; /* exec.n_pus entries (owned): its index among that rank's local PUs */
  double setup_s;  /* broadcast of the shared buffers (slowest rank) */
  size_t bytes_to_ranks, bytes_from_ranks; /* block data rank 0 sent out and got back */
  size_t remote_blocks;                    /* blocks processed on ranks other than 0 */
  /* Rank 0's service thread (the calling thread), which answers every other rank: the grants
   * it sent and its own CPU time (CLOCK_THREAD_CPUTIME_ID) in the service loop, split into
   * loop turns that handled a message and turns that found nothing (polling, sleeping). CPU
   * time, not wall time, so that a machine running more ranks than cores, where rank 0 waits
   * for a core, still shows what one grant costs it (bench/mpi/bench_grants.c). */
  size_t grants;
  double serve_cpu_s, serve_idle_cpu_s;
  /* Hierarchical mode only (hlb_mpi_run_hier; 0 and NULL otherwise), owned, n_nodes entries
   * each but rank_node (n_ranks): the node of every rank, each node's leader rank, the items
   * it processed, the shares it was given, the items the two-level plan gave it (0 when no
   * plan was made), and 1 when every PU of the node failed (its shares went to the others). */
  unsigned n_nodes;
  int *rank_node, *node_leader, *node_failed;
  size_t *node_items, *node_planned;
  unsigned *node_shares;
  double plan_makespan_s; /* the plan's T (Boiński & Czarnul eq. 3) for the items it placed */
} hlb_mpi_run_stats;

/* Free what the stats own (the decision log) and zero them. Accepts a zeroed struct. */
HLB_EXTERN void hlb_mpi_run_stats_clear(hlb_mpi_run_stats *s);

/* Collective. Process items [0, n_items) of `cl` on the local PUs of every rank of `comm`.
 * Every rank passes its own local PUs (n_local may be 0) and the same codelet description
 * (its kernels are this rank's functions); only rank 0's `in`/`pack`, `out`/`unpack` and
 * shared buffers are used: rank 0 owns the data, broadcasts the shared buffers at the start
 * (timed as setup) and sends each block's input with its grant. n_items and opt (policy,
 * granularity, failures, fault injection with inject_pu a GLOBAL PU index) are rank 0's.
 * Every rank returns the same code: 0 when every item was processed exactly once (checked on
 * rank 0), else the first error, whose text hlb_last_error() gives on every rank. `stats`
 * may be NULL; call hlb_mpi_run_stats_clear() after. */
HLB_EXTERN int hlb_mpi_run(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                           const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                           hlb_mpi_run_stats *stats);

/* Hierarchical mode (issue 14; docs/mpi-executor.md, "Hierarchical mode"): the ranks are
 * grouped into nodes, world rank 0 gives each node a share of the items at a time (first
 * from the two-level plan of Boiński & Czarnul, The Computer Journal, section 3, eq. 3,
 * then in shrinking chunks as nodes finish), and one leader rank per node (its lowest rank)
 * runs a balancer over its node's PUs. */
typedef struct hlb_mpi_hier_options {
  /* Ranks per node (consecutive world ranks). 0: $HLB_MPI_NODE_SIZE, and when that is unset
   * or 0, the ranks that share memory (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). */
  int node_size;
  /* Cluster file written by `hlb profile-links` on the same job: the plan takes the link of
   * node "rank<leader>" for each node. NULL: $HLB_MPI_LINKS, else every link is free. */
  const char *links;
  /* Each node's first share, before anything is measured: this fraction of the items, split
   * over the nodes by their PU counts (default 0.02). */
  double probe_fraction;
  /* Of the items left once every node has finished a share, the fraction placed by the plan
   * (default 0.7); the rest goes in chunks as nodes finish. */
  double plan_fraction;
} hlb_mpi_hier_options;

/* Defaults as documented in the struct. */
HLB_EXTERN void hlb_mpi_hier_options_default(hlb_mpi_hier_options *o);

/* Collective; as hlb_mpi_run (same arguments, same result on every rank, stats on rank 0),
 * in the hierarchical mode. hopt may be NULL (defaults) and is rank 0's. Rank 0 proves that
 * the shares it accepted cover every item exactly once, each leader proves it for every share
 * it returned (its balancer's pool). inject_pu is a global PU index as in hlb_mpi_run. In the
 * stats, per_pu[].finish_s counts from its node leader's start, and there is no decision
 * log. */
HLB_EXTERN int hlb_mpi_run_hier(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                                const hlb_codelet *cl, size_t n_items, const hlb_exec_options *opt,
                                const hlb_mpi_hier_options *hopt, hlb_mpi_run_stats *stats);

/* Link and PU profiling for a cluster file (docs/cluster-format.md). */
typedef struct hlb_mpi_profile_options {
  size_t max_bytes;    /* largest ping-pong / host-to-device message; default 4 MiB */
  unsigned n_sizes;    /* message sizes besides the empty one, halving from max_bytes (>= 2);
                          default 5 */
  unsigned reps;       /* round trips per size; the fastest is kept (default 5) */
  size_t kernel_items; /* largest block of the built-in kernel timed for `time` (default 2^18) */
  double item_in_bytes, item_out_bytes; /* the file's "item" member; default 4 and 4, the
                                           built-in kernel's float in and out */
} hlb_mpi_profile_options;

/* Defaults as documented in the struct. */
HLB_EXTERN void hlb_mpi_profile_options_default(hlb_mpi_profile_options *o);

/* Collective. Measure and write a cluster file to `path` (on rank 0): one node per rank,
 * whose link is rank 0 <-> rank ping-pong (rank 0's own: a memory copy), fitted per Boiński &
 * Czarnul eq. 4 by least squares; one PU per local PU of each rank, whose link is the backend's
 * host-to-device copy (absent for host-memory PUs) and whose `time` is the measured const +
 * linear curve of the built-in kernel (Boiński & Czarnul eq. 3's per-packet time). Every rank
 * returns the same code. */
HLB_EXTERN int hlb_mpi_profile_links(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                                     const hlb_mpi_profile_options *opt, const char *path);

HLB_END_DECLS

#endif
