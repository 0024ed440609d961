/* libhlb_starpu: hlb's policies sizing and placing blocks on StarPU's workers (docs/starpu.md).
 *
 * StarPU (1.3) runs the tasks, moves the data and measures each task; hlb decides how many
 * items each task gets and which worker runs it. One call runs a StarPU codelet over a
 * registered vector (items are its elements) or matrix (items are its rows, the y axis) to
 * completion:
 *
 *   hlb_starpu_options o;
 *   hlb_starpu_options_default(&o);              // policy "hlb", every worker that can run cl
 *   hlb_starpu_stats st = {0};
 *   int rc = hlb_starpu_run(&cl, handle, &o, &st);  // 0, or a negative HLB_E*
 *   hlb_starpu_stats_clear(&st);
 *
 * Each time a worker is idle the balancer (include/hlb/balancer.h) grants it its next block;
 * the block becomes a handle of exactly that many items over the parent's memory, and the
 * task is pinned to that worker. The task's time as StarPU's profiling measured it feeds the
 * worker's model. At the end the balancer proves every item was processed exactly once.
 * With `scheduler_places` set, blocks are instead cut equal and StarPU's own scheduler
 * (the one starpu_init chose: dmda, eager, ws...) places them: the comparison.
 *
 * The caller owns StarPU: starpu_init() before, starpu_shutdown() after. A run enables task
 * profiling (starpu_profiling_status_set) for its duration and restores the previous state.
 * The parent handles are acquired by the run (R for read-only buffers, RW otherwise) and
 * released, up to date in main memory, when it returns; they must be registered on
 * STARPU_MAIN_RAM and not partitioned.
 *
 * Kernels: the first cpu and the first OpenCL implementation of the codelet are used (CUDA
 * workers take no blocks: the StarPU this was built against has none to test with). An
 * OpenCL function must have finished its work when it returns (clFinish), the StarPU
 * default without STARPU_OPENCL_ASYNC.
 *
 * Thread safety: one run at a time per process (a run drives StarPU's workers and owns
 * profiling); call from an application thread, never from a StarPU task or callback.
 */
#ifndef HLB_STARPU_H
#define HLB_STARPU_H

#include <starpu.h>

#include "hlb/exec.h"
#include "hlb/export.h"

HLB_BEGIN_DECLS

/* What runs of one workload learnt, for the next run of it (as hlb's executor keeps it
 * between runs of a codelet): each worker's measured blocks, given to the balancer as priors
 * (policies that take them, hlb, start from them instead of probing; a worker whose priors
 * its first blocks contradict forgets them), and the item cost density of the last run, used
 * by the next run over as many items (policy hlb sizes blocks by their cost). Keyed by StarPU
 * worker id: give one memory to the runs of one workload (codelet and items), within one
 * starpu_init. Used by one run at a time. */
typedef struct hlb_starpu_memory hlb_starpu_memory;
/* HLB_ENOMEM or 0. */
HLB_EXTERN int hlb_starpu_memory_create(hlb_starpu_memory **out);
HLB_EXTERN void hlb_starpu_memory_destroy(hlb_starpu_memory *m);

typedef struct hlb_starpu_options {
  const char *policy; /* NULL: $HLB_POLICY, then "hlb" (any name `hlb policies` lists) */
  const char *params; /* the policy's "name=value,..."; NULL: defaults */
  size_t granularity; /* blocks are multiples of this (except the last); 0 = 1 */
  size_t min_block;   /* smallest block for each worker; 0 = granularity */
  int keep_log;       /* keep the balancer's decision log in stats.exec.log */
  /* StarPU workers that take blocks (ids of starpu_worker_get_id); n_workers 0: every worker
   * that has a cpu or OpenCL implementation of the codelet. */
  int workers[STARPU_NMAXWORKERS];
  unsigned n_workers;
  /* Emulated slowdown for demonstrations on one machine: a worker with throttle[id] > 1
   * sleeps (throttle - 1) x its kernel's time after each kernel, so it looks that many times
   * slower to every scheduler (hlb's and StarPU's). 0 or 1: none. */
  double throttle[STARPU_NMAXWORKERS];
  /* 0: hlb sizes and places the blocks. 1: `equal_blocks` equal blocks, placed by StarPU's
   * scheduler (for comparison); 0 equal_blocks means HLB_STARPU_BLOCKS_PER_WORKER per worker. */
  int scheduler_places;
  size_t equal_blocks;
  /* Given to every task as its cl_arg (not copied, not freed). */
  void *cl_arg;
  /* Start from what earlier runs learnt and add this run's (hlb places only); NULL: the run
   * starts from nothing and keeps nothing. Not owned. */
  hlb_starpu_memory *memory;
  /* 1: when the run's last block ends, its callback pauses StarPU's workers (starpu_pause)
   * and the calling thread resumes them (starpu_resume) as soon as it wakes to finish the run.
   * StarPU 1.3's workers poll for tasks in a tight loop; with as many workers as cores the
   * woken caller otherwise waits for a core, up to the kernel's time slice (docs/starpu.md,
   * "The run's end"). Between the pause and the resume no StarPU task starts, so do not call
   * starpu_pause or starpu_resume from another thread during a run. 0: the workers keep
   * polling, as StarPU leaves them (the comparison runs StarPU's schedulers that way). */
  int pause_at_end;
  /* Nonzero: the items' costs vary (as hlb_codelet.items_vary, include/hlb/exec.h, which sets
   * it for hlb_starpu_run_codelet and hlb_starpu_passes_open). */
  int items_vary;
} hlb_starpu_options;

/* Default equal blocks per worker when StarPU's scheduler places them: enough for a dynamic
 * scheduler to even out a worker 4x slower than the others, few enough that a block's fixed
 * cost stays small. */
#define HLB_STARPU_BLOCKS_PER_WORKER 8u

/* Policy from the environment, every capable worker, no throttle, hlb places, log kept,
 * workers paused at the run's end. */
HLB_EXTERN void hlb_starpu_options_default(hlb_starpu_options *o);

/* Models kept across processes, in hlb's model files (docs/models.md: one file per host and
 * codelet under the model directory `dir`; NULL: $HLB_MODEL_DIR, $XDG_CACHE_HOME/hlb or
 * ~/.cache/hlb), as StarPU keeps its performance models per machine. Each worker has its own
 * entry, "starpu cpu:0|CPU 0|cores=1" (plus "|throttle=F" for a worker o->throttle slows;
 * o may be NULL), beside the executor's PUs for the same codelet.
 *
 * load: add the samples stored for codelet `cl` to m, older than those m holds, so the next
 * run through m starts from them (its stats say models_from HLB_MODELS_STORED). A missing file
 * adds nothing; a file that cannot be trusted (corrupt, another version, another host) is
 * ignored with one warning on stderr naming it; the file's item costs too (how the cost of an
 * item varies along the index), unless a run through m learnt newer ones. save: add the samples
 * runs added to m since it was created, loaded or saved (a worker whose run found its stored
 * samples wrong replaces its entry), and the item costs the last run learnt, merged under the
 * directory's lock. Both return 0, HLB_EINVAL (no model
 * directory: no HOME), HLB_ENOMEM, or (save) HLB_EIO naming the path it could not write. Call
 * them after starpu_init and between runs. */
HLB_EXTERN int hlb_starpu_memory_load(hlb_starpu_memory *m, const hlb_codelet *cl,
                                      const hlb_starpu_options *o, const char *dir);
HLB_EXTERN int hlb_starpu_memory_save(hlb_starpu_memory *m, const hlb_codelet *cl,
                                      const hlb_starpu_options *o, const char *dir);

typedef struct hlb_starpu_stats {
  /* One PU per worker that took part, named "cpu:K" or "opencl:K" (K counts the workers of
   * that kind, in StarPU's worker order), with the same per-PU figures, models and log as
   * hlb's executor gives (include/hlb/exec.h). compute_s excludes the emulated throttle,
   * busy_s includes it. */
  hlb_exec_stats exec;
  int *workerid;      /* exec.n_pus entries: each PU's StarPU worker id (owned) */
  char placement[32]; /* "hlb" or the name of StarPU's scheduler that placed the blocks */
  size_t blocks;      /* tasks run */
  double adapter_s;   /* time spent per run outside kernels and the policy, on the calling
                         thread and in the tasks' callbacks: registering block handles,
                         submitting, writing blocks back; divide by blocks for the cost
                         per block */
  /* Blocks settled on their worker's own thread (hlb places, a worker computing in main
   * memory): the task's callback gave the balancer the sample and submitted the worker's next
   * block, without a round trip through the calling thread. */
  size_t blocks_granted_by_workers;
} hlb_starpu_stats;

/* Free what the stats own and zero them. Accepts zeroed stats. */
HLB_EXTERN void hlb_starpu_stats_clear(hlb_starpu_stats *s);

/* The PU name of StarPU worker `id` as the stats use it ("cpu:1", "opencl:0"); "" for an id
 * out of range or a worker of another kind. */
HLB_EXTERN const char *hlb_starpu_worker_name(int id, char *buf, size_t cap);

/* Run `cl` over every item of `data` (a vector or a matrix registered on STARPU_MAIN_RAM).
 * cl->nbuffers must be 1; cl->modes[0] is the access mode. Returns 0 when every item was
 * processed exactly once; HLB_EINVAL (what and which value in hlb_last_error()) for a bad
 * handle, codelet or option, HLB_ENOTFOUND for an unknown policy, HLB_EDEVICE when no worker
 * can run the codelet or a task could not be submitted. `stats` may be NULL. */
HLB_EXTERN int hlb_starpu_run(struct starpu_codelet *cl, starpu_data_handle_t data,
                              const hlb_starpu_options *opt, hlb_starpu_stats *stats);

/* The general form: each of the n_split handles (vectors or matrices of the same number of
 * items) is cut into the same blocks; the n_whole handles are given whole to every task. A
 * task's buffers are the split blocks in order, then the whole handles; cl->nbuffers must be
 * n_split + n_whole (at most STARPU_NMAXBUFS), with the modes in cl->modes. */
HLB_EXTERN int hlb_starpu_run_handles(struct starpu_codelet *cl, const starpu_data_handle_t *split,
                                      unsigned n_split, const starpu_data_handle_t *whole,
                                      unsigned n_whole, const hlb_starpu_options *opt,
                                      hlb_starpu_stats *stats);

/* From inside a kernel run by one of the calls above: the index of the block's first item
 * in the parent handle, and its item count (the kernel's buffers hold only the block).
 * Returns 0, or HLB_ESTATE when the current task is not one of a run's. */
HLB_EXTERN int hlb_starpu_current_block(size_t *begin, size_t *count);

/* Run an executor codelet (include/hlb/exec.h: its cpu kernel and OpenCL source) over
 * n_items on StarPU's workers: its in and out arrays become split vectors, its shared
 * buffers whole ones, and each task calls the kernel with the block's hlb_exec_call. This
 * is how `hlb run --runtime starpu` runs the apps. HLB_EUNSUPPORTED for a codelet that packs
 * its input or unpacks its output (pack/unpack). */
HLB_EXTERN int hlb_starpu_run_codelet(const hlb_codelet *cl, size_t n_items,
                                      const hlb_starpu_options *opt, hlb_starpu_stats *stats);

/* A StarPU scheduling policy for tasks of any codelet: each task goes to the worker with the
 * earliest predicted finish, predicted by hlb's models fitted per worker (not per architecture
 * as StarPU's history models are) from the times its tasks took there; until every worker
 * able to run a codelet has measured one of its tasks, that codelet's tasks are taken by idle
 * workers (eager); an idle worker with nothing queued steals the last task of the worker that
 * will finish last. Select it with `conf.sched_policy = hlb_starpu_sched_policy();` before
 * starpu_init (policy_name "hlb"). A task's size is the bytes it writes. The models live for
 * the process, across starpu_init, so a later run starts placed; hlb_starpu_sched_forget()
 * drops them (call it while no task runs). docs/starpu.md has its measurements. */
HLB_EXTERN struct starpu_sched_policy *hlb_starpu_sched_policy(void);
HLB_EXTERN void hlb_starpu_sched_forget(void);

/* Several balanced passes of one executor codelet over the same items, with the host's step
 * between them (iterative apps: k-means, power iteration). Open registers the codelet's in,
 * out and shared buffers with StarPU once and builds its OpenCL program once; each pass is
 * one hlb_starpu_run_codelet over them, and the passes share a memory (opt->memory, else one
 * of the object's own), so a later pass starts from the models and item costs the earlier
 * ones learnt. Between passes the host may change the buffers in main memory: it names the
 * shared buffers it changed in `changed` (bit i: cl->shared[i]), whose copies on devices
 * StarPU then drops; the others stay on the devices. The in array must not change, the out
 * array is written by every pass. opt is copied at open (NULL: defaults). */
typedef struct hlb_starpu_passes hlb_starpu_passes;
HLB_EXTERN int hlb_starpu_passes_open(const hlb_codelet *cl, size_t n_items,
                                      const hlb_starpu_options *opt, hlb_starpu_passes **out);
/* One pass; 0 when every item was processed exactly once. */
HLB_EXTERN int hlb_starpu_passes_run(hlb_starpu_passes *p, unsigned changed,
                                     hlb_starpu_stats *stats);
/* Unregister the buffers (main memory holds the last pass's output). Accepts NULL. */
HLB_EXTERN void hlb_starpu_passes_close(hlb_starpu_passes *p);

HLB_END_DECLS

#endif
