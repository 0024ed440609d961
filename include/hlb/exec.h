/* The threaded executor: runs a user's kernel over n items on this machine's PUs (CPU core
 * groups, OpenCL devices, CUDA GPUs), with block sizes chosen by a balancer (docs/architecture.md).
 *
 * Usage: describe the PUs (hlb_exec_discover() or hlb_exec_parse_pus()), create an executor
 * (opens the devices once), describe the work as a codelet (one kernel per backend plus
 * how to find a block's input and output), call hlb_executor_run() for n items, read the
 * stats.
 *
 * The executor is the session (docs/executor.md, "A session"): it lives across runs and keeps,
 * until hlb_executor_destroy(), each PU's built kernel per codelet (built on the codelet's
 * first run, and again only when its opencl_source text or opencl_kernel changed), the device
 * copies of the shared buffers (their contents copied again every run) and the staging
 * buffers, and per codelet the models, item costs and released devices its runs learnt. Run
 * every pass of an iterative code on one executor. One driver thread per PU asks the balancer for
 * blocks, moves the block's data, runs the kernel, and feeds the measured compute and transfer
 * times back as a sample. A kernel that fails gets its block taken back; a PU that fails repeatedly
 * is retired and the run still completes on the others.
 *
 * Thread safety: an hlb_executor is used by one thread at a time (hlb_executor_run() blocks
 * until the run is over). Inside a run, kernels of different PUs run concurrently on
 * disjoint item ranges; the balancer is called under the executor's one mutex. The other
 * functions here are safe from any thread.
 */
#ifndef HLB_EXEC_H
#define HLB_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/balancer.h"
#include "hlb/export.h"
#include "hlb/model.h"

HLB_BEGIN_DECLS

/* An array of this many hlb_exec_pu holds every PU that a PU list or the discovery of one
 * machine gives (cpu plus each OpenCL and CUDA device): the `cap` to pass to
 * hlb_exec_discover() and hlb_exec_parse_pus(). Executors and MPI runs take any number of
 * PUs; nothing else is sized by it. */
#define HLB_EXEC_MAX_LOCAL_PUS 64
/* Most shared buffers one codelet has. */
#define HLB_EXEC_MAX_SHARED 4

/* The kinds of backend. A build has cpu always, opencl and cuda when CMake found them. */
typedef enum hlb_backend {
  HLB_BACKEND_CPU = 0, /* a group of cores; kernels use OpenMP over them */
  HLB_BACKEND_OPENCL,  /* any OpenCL device (GPU, or a CPU device such as PoCL's) */
  HLB_BACKEND_CUDA,    /* an NVIDIA GPU through the CUDA runtime */
  HLB_BACKEND_COUNT
} hlb_backend;

/* "cpu", "opencl", "cuda"; "?" for a value out of range. */
HLB_EXTERN const char *hlb_backend_name(hlb_backend b);
/* 1 when this build contains the backend, 0 otherwise. */
HLB_EXTERN int hlb_backend_built(hlb_backend b);
/* Devices the backend sees now (cpu: 1). 0 when not built or no device/driver. */
HLB_EXTERN unsigned hlb_backend_devices(hlb_backend b);

/* One processing unit the executor drives. */
typedef struct hlb_exec_pu {
  char name[32]; /* "cpu", "opencl:0", "cuda:1" */
  hlb_backend backend;
  unsigned device;      /* device index within its backend (0 for cpu) */
  unsigned cores;       /* cpu: cores in the group (0 = every core not kept for a device) */
  double throttle;      /* emulated slowdown: each block is stretched to throttle x its
                           measured time (sleeping); 1 or 0 = none. For demos on one machine. */
  char device_name[96]; /* filled by hlb_executor_create(): what the device calls itself */
} hlb_exec_pu;

/* Cores kept free to drive each GPU or OpenCL device (Boiński & Czarnul, sec. 4.3 "device fission":
 * a core that also feeds a device slows both). The default of hlb_exec_discover(). */
#define HLB_EXEC_CORES_PER_DEVICE 1u

/* Every PU of this machine: one cpu PU of all cores minus HLB_EXEC_CORES_PER_DEVICE per
 * device (at least one core), then each OpenCL device (a CPU-type one narrowed to the cores
 * the cpu PU leaves), then each CUDA device. Up to `cap` entries in pus; *n gets the count. */
HLB_EXTERN int hlb_exec_discover(hlb_exec_pu *pus, unsigned cap, unsigned *n);

/* PUs from a list such as "cpu,opencl:0,cuda:0", "cpu:2" (two cores) or "all".
 * HLB_EINVAL naming the bad entry; HLB_ENOTFOUND for a device this machine lacks;
 * HLB_EUNSUPPORTED for a backend not in this build. */
HLB_EXTERN int hlb_exec_parse_pus(const char *spec, hlb_exec_pu *pus, unsigned cap, unsigned *n);

/* What a kernel gets for one block. Pointers are in the PU's memory: host memory for cpu,
 * cl_mem handles for opencl (cast the void * to cl_mem), device pointers for cuda. */
typedef struct hlb_exec_call {
  size_t begin, count;                     /* the block: items [begin, begin + count) */
  const void *in;                          /* the block's input, in_bytes_per_item * count */
  void *out;                               /* the block's output, out_bytes_per_item * count */
  const void *shared[HLB_EXEC_MAX_SHARED]; /* the codelet's shared inputs, on the PU */
  void *user;                              /* hlb_codelet.user */
  /* cpu: cores of this PU, for OpenMP num_threads. The executor's judge of a device beside
   * the cpu PU assumes the kernel parallelises over the block's items (a block of fewer items
   * than threads keeps that many cores busy). The kernel runs on the PU's driver thread, the
   * same in every run of the executor, so an OpenMP team is made once. */
  unsigned threads;
  void *queue;     /* opencl: cl_command_queue; cuda: cudaStream_t */
  unsigned device; /* device index within the backend */
} hlb_exec_call;

/* A host buffer every block reads (a matrix, the centroids): copied to each device once
 * per run, as it is when the run starts, and that copy is timed as the PU's upload_s. */
typedef struct hlb_exec_buffer {
  const void *host;
  size_t bytes;
} hlb_exec_buffer;

/* The work: one kernel per backend and where a block's data lives.
 *
 * Input of a block: pack(user, begin, count, dst) fills in_bytes_per_item * count bytes;
 * without pack, the block's input is read from `in` + begin * in_bytes_per_item. Output is
 * the mirror: unpack() or the array `out`. hlb moves the packed bytes to the device and
 * back and times that as transfer; the kernel's time is the compute time. */
typedef struct hlb_codelet {
  const char *name;
  void *user;
  size_t in_bytes_per_item;  /* 0: the blocks have no input of their own */
  size_t out_bytes_per_item; /* 0: no output (e.g. only a reduction in shared state) */
  void (*pack)(void *user, size_t begin, size_t count, void *dst);
  void (*unpack)(void *user, size_t begin, size_t count, const void *src);
  const void *in;
  void *out;
  hlb_exec_buffer shared[HLB_EXEC_MAX_SHARED];
  unsigned n_shared;

  /* cpu kernel; returns 0, or a negative HLB_E* when the block failed. NULL: no cpu. */
  int (*cpu)(const hlb_exec_call *c);
  /* OpenCL C source and kernel name. The kernel's arguments are always
   *   (global const uchar *in, global uchar *out, ulong begin, ulong count,
   *    global const uchar *s0, global const uchar *s1, global const uchar *s2,
   *    global const uchar *s3)
   * (unused pointers are NULL), launched over count * opencl_work_per_item work items
   * (0 means 1) rounded up to whole work groups of a fixed size (64, or 1 for a block too
   * small to give each compute unit of a CPU-type device two groups of 64): a work item whose
   * get_global_id(0) is past count * opencl_work_per_item must return. At setup the kernel
   * is launched once with count = 0 in each of those sizes (a warm-up that takes lazy
   * compilation out of the timed blocks). NULL source: no OpenCL. */
  const char *opencl_source;
  const char *opencl_kernel;
  size_t opencl_work_per_item;
  /* cuda launcher, compiled by nvcc in the caller's .cu file; queue is the cudaStream_t to
   * launch on; the executor synchronises it. NULL: no CUDA. */
  int (*cuda)(const hlb_exec_call *c);
  /* Nonzero: some items cost far more than the others, at places nothing before them shows
   * (the long rows of a power-law sparse matrix, particles that cluster at random). Until a
   * pass has measured them (a stored run's item costs, an earlier pass of the same run), the
   * default policy keeps every block under a small share of the predicted run (its
   * block_budget), so that a slow PU's block landing on dear items nobody has met cannot hold
   * the other PUs idle at the end; each extra block costs its fixed cost; nor does it take a
   * larger block's dearer time per item for a curve where small blocks win (the spmv app says so:
   * its long rows fall at random). 0 (the mandelbrot app: its dear rows are one region, which
   * the first blocks find and the guard follows): blocks are sized by the PUs' curves and the
   * misses the run has seen, and held to the budget once a PU's blocks miss its curve beyond
   * the policy's prior_tolerance in a run that starts from no stored blocks (items found to
   * vary). */
  int items_vary;
} hlb_codelet;

/* Failures a PU tolerates in a row before it is retired (its block goes back to the pool
 * each time). Three: one transient error is retried, a dead device is not retried forever. */
#define HLB_EXEC_MAX_FAILURES 3u

/* Where a run stands, for a progress display (hlb_exec_options.progress). */
typedef struct hlb_exec_progress {
  size_t items_done, n_items; /* items of finished blocks, of the run */
  size_t blocks;              /* finished blocks */
  double elapsed_s;           /* since the run started */
  double remaining_s;         /* items left over the PUs' summed rate at their last block size,
                                 from their fitted models (measured rates before a fit); NAN
                                 while nothing is known */
} hlb_exec_progress;

typedef struct hlb_exec_options {
  const char *policy;    /* NULL: $HLB_POLICY, then the default */
  const char *params;    /* policy parameters "name=value,..."; NULL for defaults */
  size_t granularity;    /* blocks are multiples of this; 0 = 1 */
  size_t min_block;      /* per-PU smallest block; 0 = granularity */
  unsigned max_failures; /* consecutive failed blocks before a PU is retired; 0 = default */
  int keep_log;          /* keep the decision log in the stats (needed for traces) */
  /* Fault injection for tests and demos: PU index inject_pu (-1 = none) fails its
   * inject_from-th block (1-based) and the inject_count - 1 after it (0 = every one from
   * then on, so the PU ends retired). */
  int inject_pu;
  unsigned inject_from;
  unsigned inject_count;
  /* Optional: called after every finished block, from that PU's driver thread with the run's
   * lock held (calls never overlap); keep it short and do not call the executor from it. */
  void (*progress)(void *user, const hlb_exec_progress *p);
  void *progress_user;
  /* 1: keep every device even when it does fewer items per second than the host core it
   * holds would do in the cpu PU (by default such a device is released after
   * HLB_EXEC_RELEASE_BLOCKS blocks and its core given to the cpu PU; see docs/executor.md),
   * and apply no such decision an earlier run stored: no device left out, no device given the
   * cpu PU's cores (HLB_EXEC_TAKE_CORES_FACTOR). */
  int keep_weak_devices;
  /* 1: run on the PUs as this executor's previous run left them (its releases stand), and apply
   * no decision stored before this run (a device left out, given the cpu PU's cores, or tried
   * alone on them); what this run judges still counts. `hlb run --compare` sets it for its
   * greedy and static runs, so that they run on the PUs the chosen policy's run ended with. */
  int same_pus;
  /* Models kept across runs (docs/models.md): which of reading the stored samples before the
   * run and storing this run's after it to do (hlb_models_mode). The samples live per host,
   * codelet and PU under model_dir (NULL: $HLB_MODEL_DIR, $XDG_CACHE_HOME/hlb or
   * ~/.cache/hlb). Storing needs keep_log. Default: $HLB_MODELS, else HLB_MODELS_OFF. Runs of
   * one executor start from the previous run of the same codelet whatever the mode. */
  int models;
  const char *model_dir;
} hlb_exec_options;

/* hlb_exec_options.models: bits. */
typedef enum hlb_models_mode {
  HLB_MODELS_OFF = 0,
  HLB_MODELS_READ = 1,  /* start from the stored samples (a policy that takes priors: hlb) */
  HLB_MODELS_WRITE = 2, /* add this run's samples to the stored ones */
  HLB_MODELS_ON = 3
} hlb_models_mode;

/* "off", "read", "write" or "on" into *mode; HLB_EINVAL naming the text otherwise. */
HLB_EXTERN int hlb_models_mode_parse(const char *text, int *mode);
HLB_EXTERN const char *hlb_models_mode_name(int mode);

/* Blocks a device and the cpu PU each finish before the device's rate is compared with the
 * rate of the core it holds: the first blocks are small training blocks whose fixed costs
 * make both look slow, and two of each is the least that shows a rate. */
#define HLB_EXEC_RELEASE_BLOCKS 2u

/* A device whose first block alone shows it this many times slower than the cores it holds
 * is released after that block, without a second one: a one-time warm-up in the first block
 * (a library handle, a lazy compilation the set-up launch did not catch) costs at most a few
 * times one small training block, not 4x its whole time, while a second block of a device that
 * slow keeps its core busy long after it would have been released (a kernel cannot be
 * stopped: measured, PoCL's matmul at n = 2048 was 170x slower than a core and its abandoned
 * second block kept the core busy for most of the run). */
#define HLB_EXEC_RELEASE_CLEAR_FACTOR 4.0
/* A device computing on the host's cores (a CPU-type OpenCL device narrowed to the cores the
 * automatic cpu PU leaves) that a whole run shows doing at least this many times the cpu PU's
 * items per second per core is given the cpu PU's cores in later runs, and the cpu PU is left
 * out (the decision is stored with the models): one PU of all the cores beats two of a few
 * each when one's kernel is faster per core (PoCL's mandelbrot and spmv kernels did 1.1x and
 * 1.3x the cpu kernels' rows per core here, and `--pus opencl:0` was the fastest set). 1.05:
 * a margin over the spread of two runs' rates on the same cores, so a device only as fast
 * does not flip the configuration from run to run. */
#define HLB_EXEC_TAKE_CORES_FACTOR 1.05
/* A device whose run alone on every core was not HLB_EXEC_TAKE_CORES_FACTOR times faster than
 * the cpu PU's, and that gave the cores back, takes them again only when the stored runs alone
 * show it this many times faster: the two figures move between processes as samples are added
 * (k-means: PoCL alone 9.34e7 items/s against the cpu PU's 9.3e7, handed back; the next process
 * read the stored runs the other way and tried PoCL again, 0.153 s against 0.083; the cpu
 * PU's rate alone that k-means' first runs compared with read 5.2e7-7.4e7 items/s in 6 fresh
 * directories, 2026-11-29). A device faster by more (PoCL's spmv, 1.15-1.3x the cpu PU) is
 * given the cores again; one within 10 % stays where the last decision left it. Not after a
 * hand-back against a bound of the cpu PU's rate ("at most": no run of it alone on every core
 * yet): nothing measured was compared, and HLB_EXEC_TAKE_CORES_FACTOR decides. */
#define HLB_EXEC_RETAKE_FACTOR 1.1
/* A device computing on the host's cores that a run released (it did fewer items per second
 * than the cores it held would in the cpu PU) is run alone on every core once, in the next run
 * whose samples are kept (the stored runs alone then decide, as for HLB_EXEC_TAKE_CORES_FACTOR):
 * a device narrowed to one compute unit beside the cpu PU is no measure of it whole. Measured
 * here (bench/apps/bench_all_only.sh): PoCL on one compute unit beside the cpu PU read
 * 0.07-0.61x a core on spmv, or was released on one block caught in a stall, and whole it beat
 * the cpu PU on both cores (1.15-1.3x); on blackscholes it read 0.25-0.3x and whole did 0.23x
 * the cpu PU. No figure of the release tells the two apart, so every release is tried, and a
 * trial is judged as it goes (but for HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO): the cpu PU waits
 * while the device runs alone in blocks that grow at most HLB_EXEC_TRIAL_GROW times the largest
 * it finished, and once its blocks kept it busy HLB_EXEC_CORE_DEVICE_JUDGE_S (or its first took
 * HLB_EXEC_FIRST_BLOCK_MAX_S and was HLB_EXEC_RELEASE_CLEAR_FACTOR times too slow), a device doing
 * less than 1 / HLB_EXEC_TRIAL_CUT_FACTOR of the cpu PU's stored rate alone on those cores is
 * released and the cpu PU takes every core for the rest of the run; one doing more runs the rest
 * alone. 2: a device at half the cpu PU's rate in its first blocks (its per-block costs left out)
 * is not going to beat it by HLB_EXEC_TAKE_CORES_FACTOR over the run; PoCL's blackscholes (0.23x)
 * and matmul (0.02x) are cut, its spmv and mandelbrot (1.0-1.2x) run on. */
#define HLB_EXEC_TRIAL_CUT_FACTOR 2.0
#define HLB_EXEC_TRIAL_GROW 4u
/* And at least this many times: a policy beside the parked cpu PU may plan the device in blocks
 * that never grow. PoCL's spmv trials (3 of 5 in 12 fresh directories, 2026-11-29) stayed at 1 or 8
 * rows a block for their 10 ms, launches all (0.04-0.14 ms each, 7e3 rows/s against the cpu
 * PU's 2e7), and were cut, though PoCL alone beats the cpu PU there (1.15-1.3x): the `hlb`
 * policy read the launches' noise (5 rows in 0.04 ms, 8 in 0.14) as a curve where small
 * blocks win (best_block) and held the device to them. */
#define HLB_EXEC_TRIAL_MIN_GROW 2u
/* A device whose release read at least this fraction of a core (kernel against kernel) over
 * items an earlier run found to vary in cost (the map it learnt spreads by HLB_ITEM_COST_FLAT
 * or more, include/hlb/balancer.h), and one a mixed run found faster per core (a stored
 * takeover), is tried for a whole run, the cpu PU left out. A judged trial compares the items
 * per second of the device's first blocks with the cpu PU's stored rate, which came from other
 * items; where items cost alike that is fair, where they do not it is not (PoCL's mandelbrot
 * trial on the cheap rows [0, 256) of 2048 read 4.1e4 rows/s against 1.5e5 from the cpu PU's
 * stored blocks, though alone on both cores the cpu PU does 7.6e3 and PoCL 6.8e3), and the
 * stored samples keep no item positions to weigh them by. Over items alike every release is
 * judged: PoCL's k-means releases read 0.8x a core or more in about 1 first run of 10, and its
 * whole trials, with nothing to cut them, took 0.30-0.54 s against 0.11 (docs/executor.md).
 * Releases read 0.86-0.95x on mandelbrot, 0.3-0.6x on spmv and k-means (0.49x, 0.8x or more in 1
 * of 10), 0.002-0.62x on blackscholes, 0.02-0.04x on matmul. */
#define HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO 0.8
/* The most a block of a device that holds only a driver thread (a GPU) is taken to cost besides
 * its items (seconds): a kernel launch and a synchronisation, well under a millisecond for
 * OpenCL and CUDA. Items over busy time only bound such a device's rate from below, since a
 * short block may be mostly that cost, and its first blocks may carry one-time work of any
 * length (an H100's first two matmul blocks: cuBLAS's handle and lazily loaded kernels, 43 and
 * 61 ms, then 0.35 ms for 27 rows), so it is judged on its best block less this (a bound from
 * above) and only after HLB_EXEC_RELEASE_BLOCKS blocks. A device computing on this machine's
 * cores (PoCL) is judged on what it did, and on its first block alone only when that block
 * took HLB_EXEC_FIRST_BLOCK_MAX_S or more (docs/executor.md). */
#define HLB_EXEC_LAUNCH_MAX_S 0.001
#define HLB_EXEC_FIRST_BLOCK_MAX_S 0.01
/* A device computing on the host's cores whose first block is still running after this long
 * (seconds), and shows it HLB_EXEC_RELEASE_CLEAR_FACTOR times slower than the cores it holds
 * even if it ended now, is released in flight: its items go back to the pool, and its cores to
 * the cpu PU's next block. Ten times HLB_EXEC_FIRST_BLOCK_MAX_S, past any warm-up seen on this
 * machine's PoCL (first blocks of 0.05-24 ms on the five apps from a fresh home; a one-time 70-94
 * ms at k-means' first block of 65536 points). `make demo`'s matmul (n = 6144), whose first PoCL
 * block of one row took 0.33 s, kept that core from the cpu PU until 0.96 s: the run took 1.07x
 * the cpu PU alone. */
#define HLB_EXEC_FIRST_BLOCK_IN_FLIGHT_S 0.1
/* A device computing on the host's cores is compared with them (released or kept) only once
 * its blocks have kept it busy this long (seconds; a block in flight counts as far as it
 * went), besides a first block that alone took HLB_EXEC_FIRST_BLOCK_MAX_S: each block costs a
 * launch and copies (PoCL: 0.05-0.1 ms), which in one-row training blocks made PoCL look 4.5x
 * slower than a core on mandelbrot while its kernel does 1.1x a core's rows in blocks of
 * milliseconds. The policy sizes its next blocks from its own measured rate, at most `grow`
 * times its largest, so a slow device costs the run about this long before it is judged. */
#define HLB_EXEC_CORE_DEVICE_JUDGE_S 0.01
/* A device computing on the host's cores is released on its kernel's speed (kernel against
 * kernel, hlb__judge_core_ratio) only when that is more than HLB_EXEC_RELEASE_MIN_FACTOR times
 * slower per core than the cpu PU's, and, when less than HLB_EXEC_MARGINAL_FACTOR times slower,
 * only once its blocks have kept it busy HLB_EXEC_MARGINAL_JUDGE_S (seconds). Its first blocks
 * are small and meet the items next to the cpu PU's first ones, and where items differ
 * (mandelbrot's rows near the set) a block and its neighbours differ too: after 10 ms PoCL's
 * mandelbrot kernel read 1.06-1.24x a core's time per row in first runs where, over the whole
 * run, it read 0.85-0.90x, and its release cost those runs 5-12 %; at the end of a run the
 * comparison read 1.00-1.02 and released it with nothing left to gain. 1.05 is the margin the
 * other way too (HLB_EXEC_TAKE_CORES_FACTOR). A device 1.5x slower costs the run at most a third
 * of its core meanwhile; a hopeless one is released as before. */
#define HLB_EXEC_RELEASE_MIN_FACTOR 1.05
#define HLB_EXEC_MARGINAL_FACTOR 1.5
#define HLB_EXEC_MARGINAL_JUDGE_S 0.04

/* A device on the host's cores that a run too short to judge it in (its blocks kept it busy
 * less than HLB_EXEC_CORE_DEVICE_JUDGE_S) shows doing fewer items per busy second than the
 * cores it held did in the cpu PU, by more than this factor, is released for the runs after
 * (exec.c, judge_short_run). */
#define HLB_EXEC_SHORT_RUN_RELEASE_FACTOR 1.05

/* Defaults: policy from the environment, granularity 1, HLB_EXEC_MAX_FAILURES, log kept,
 * no injection. */
HLB_EXTERN void hlb_exec_options_default(hlb_exec_options *o);

typedef struct hlb_exec_pu_stats {
  size_t items, blocks; /* processed successfully */
  size_t failed_blocks; /* blocks whose kernel (or injection) failed */
  int retired;          /* 1 if the PU was retired after repeated failures */
  double busy_s;        /* time in blocks: transfers + compute + emulated throttle */
  /* setup_s: this run's set-up on the PU, outside the run's clock: build_s (building its
   * kernel; 0 when the executor kept it from an earlier run) plus upload_s (copying the shared
   * buffers to it; 0 for a cpu PU, which reads them in place). */
  double compute_s, transfer_s, throttle_s, setup_s;
  double build_s, upload_s;
  /* Kernels built on this PU for this run: 1 for the first run of a codelet (or after its
   * OpenCL source or kernel name changed), 0 when the executor's kept kernel served or the
   * backend builds nothing (cpu, cuda: their kernels are compiled with the program). */
  unsigned kernel_builds;
  double finish_s;      /* end of the PU's last block, seconds from the run's start */
  int fitted;           /* 1 when the balancer's model of this PU was fitted */
  hlb_curve model;      /* the fitted F + G when fitted */
  unsigned model_terms; /* mask of hlb_term of the fit */
  double model_r2;      /* R² of the fit (when fitted) */
  /* 1 when the PU was released for not paying for the host core it holds (an OpenCL CPU
   * device's compute units, a GPU's driver thread): it did fewer items per second than that
   * core did in the cpu PU, which got the core back. The reason gives both figures; it is
   * also set, beginning "kept: ", for a device that passed its trial (docs/executor.md). */
  int released;
  char release_reason[160];
  unsigned cores_given; /* cpu PU: cores it got back from released PUs */
  /* Why the PU did no work or stopped: its kernel could not be built or loaded (the
   * compiler's message), or its last failed block's error when it was retired; "" otherwise. */
  char failure[256];
  /* Samples of earlier runs the PU started from (0: it trained from its own blocks), and 1
   * when they mispredicted its first blocks and were forgotten. */
  size_t prior_samples;
  int priors_forgotten;
} hlb_exec_pu_stats;

/* Where a run's models started from (hlb_exec_stats.models_from). */
typedef enum hlb_models_from {
  HLB_MODELS_TRAINED = 0,  /* nothing known: the PUs probed and trained */
  HLB_MODELS_PREVIOUS_RUN, /* the previous run of the same codelet on this executor */
  HLB_MODELS_STORED        /* the stored samples (hlb_exec_options.models has READ) */
} hlb_models_from;

typedef struct hlb_exec_stats {
  char policy[32];
  size_t n_items;
  unsigned n_pus;
  hlb_exec_pu *pu;           /* n_pus entries (owned; hlb_exec_stats_clear frees them) */
  hlb_exec_pu_stats *per_pu; /* n_pus entries (owned) */
  double makespan_s;         /* wall time from the first grant to the last block's end */
  double solver_s;           /* time spent inside the policy */
  size_t n_log;              /* entries in log */
  hlb_decision *log;         /* the decision log (owned; hlb_exec_stats_clear frees it) */
  int models_from;           /* hlb_models_from */
  char model_file[1024];     /* the stored models' file read or written; "" when none */
  char model_error[512];     /* why storing this run's samples failed; "" when it did not */
  /* 1 when the run started from the item costs the previous run of the same codelet over as
   * many items learnt (a later pass: blocks sized by their cost, docs/executor.md, "Items that
   * do not cost the same"); 0 when every item was taken to cost the same. */
  int item_costs_known;
  /* 1 when the run was given item costs that had not yet predicted a run (learnt by the run
   * before, or found wanting since): blocks were sized by count and the costs scored against
   * this run's blocks. item_costs_trusted: 1 when the costs this run was given (used or on
   * trial) predicted its blocks better than their counts did, so the next run sizes by the
   * costs this one learnt; 0 sends them on trial (docs/executor.md). */
  int item_costs_on_trial;
  int item_costs_trusted;
  /* What the run cost beyond its blocks, in seconds of wall time: setup_s from the call to the
   * start of its clock (models, the PUs' set-up, the balancer), wrapup_s from the last block's
   * end to the return (driver threads joined, stats, models kept, item costs learnt). */
  double setup_s, wrapup_s;
  /* Kernels the executor keeps after this run, over all its PUs (docs/executor.md, "A
   * session"). */
  unsigned kept_kernels;
} hlb_exec_stats;

/* Free what a stats struct owns and zero it. Accepts a zeroed struct. */
HLB_EXTERN void hlb_exec_stats_clear(hlb_exec_stats *s);
/* Busy time as % of the makespan for PU i (0 when the makespan is 0). */
HLB_EXTERN double hlb_exec_busy_pct(const hlb_exec_stats *s, unsigned i);

typedef struct hlb_executor hlb_executor;

/* Open the PUs' devices. Copies pus; fills their device_name. HLB_EDEVICE when a device
 * does not open, HLB_EINVAL for a bad description. */
HLB_EXTERN int hlb_executor_create(const hlb_exec_pu *pus, unsigned n, hlb_executor **out);
/* Release the kept kernels and buffers, then close the devices. Accepts NULL. */
HLB_EXTERN void hlb_executor_destroy(hlb_executor *ex);
/* The PUs as opened. */
HLB_EXTERN unsigned hlb_executor_pu_count(const hlb_executor *ex);
HLB_EXTERN const hlb_exec_pu *hlb_executor_pu(const hlb_executor *ex, unsigned i);

/* Run the codelet over items [0, n_items). Blocks until every item is processed exactly
 * once (0), or the run cannot finish (every PU retired: HLB_EDEVICE; a policy error: its
 * code). A PU whose backend has no kernel in the codelet takes no work. Each run starts the
 * models from the samples of the previous runs of the same codelet on this executor (and,
 * with opt->models, from the stored files), so iterative codes improve from one pass to the
 * next. `stats` may be NULL; when given
 * it is cleared and filled (call hlb_exec_stats_clear() after). */
HLB_EXTERN int hlb_executor_run(hlb_executor *ex, const hlb_codelet *cl, size_t n_items,
                                const hlb_exec_options *opt, hlb_exec_stats *stats);

/* Write the run as Chrome trace JSON (chrome://tracing, Perfetto): one row per PU, one
 * slice per block with its transfer and compute parts. Needs the decision log. */
HLB_EXTERN int hlb_exec_write_trace(const hlb_exec_stats *s, const char *path);

HLB_END_DECLS

#endif
