/* Internal state of the executor, shared by exec.c (runs) and pus.c (creation). */
#ifndef HLB_EXEC_INTERNAL_H
#define HLB_EXEC_INTERNAL_H

#include "exec/backend.h"
#include "exec/driver.h"
#include "exec/model_store.h"
#include "exec/pu_thread.h"
#include "hlb/exec.h"

/* What earlier runs of an executor measured, per codelet (exec/models.c). */
typedef struct hlb__exec_memo {
  char key[128];
  /* The samples, and the item cost density the last run of this codelet learnt (docs/executor.md,
   * "Items that do not cost the same"), for the next run over as many items. */
  hlb__model_set set;
} hlb__exec_memo;

/* A codelet prepared on one PU and kept by the executor, the session, until it is destroyed
 * (exec/session.c): the built kernel and the device copies of the shared buffers. Found by the
 * codelet's name; the kernel is used again only for the same OpenCL source text and kernel
 * name (copies kept here), and built anew, replacing this one, when either changed. */
typedef struct hlb__kept {
  char *name;          /* the codelet's name, "" for an unnamed one */
  char *source, *kern; /* what the kernel was built from (NULL: none, or not built) */
  void *kernel;        /* the backend's handle (ops->build), NULL when none */
  int built;           /* 1 once built (for a backend with no build: nothing to build) */
  void *shared[HLB_EXEC_MAX_SHARED]; /* device copies, when the PU's memory is not the host's */
  size_t shared_cap[HLB_EXEC_MAX_SHARED];
} hlb__kept;

struct hlb_executor {
  unsigned n;
  /* Each array has n entries, allocated by hlb_executor_create: no fixed limit on PUs. */
  hlb_exec_pu *pu;
  const hlb__backend_ops **ops;
  void **dev;
  /* Items per second of busy time each PU reached in the previous run (0 = not known):
   * the next run's speed hints, so knowledge carries over between iterations. */
  double *rate;
  /* PUs released because they did not pay for the host core they hold (exec.c,
   * release_if_weak_locked), with the reason; later runs leave them out, and the cpu PU keeps
   * the cores it was given back. */
  int *released;
  char (*release_reason)[160];
  unsigned *cores_given; /* cpu PU: cores it got back from released PUs */
  /* Run-relative times at which the PU's cores changed first and last in the current run (a
   * device released mid-run gave them); NAN when they did not. Its blocks granted before the
   * first are stored with its cores at the start, those granted after the last with its cores
   * at the end (models.c). */
  double (*cores_changed_s)[2];
  /* A device computing on the host's cores that this executor's last run found faster per
   * core than the automatic cpu PU (exec.c, judge_takeover): the reason, stored with its
   * models so that later runs give it the cpu PU's cores; "" otherwise. */
  char (*takes_cores)[160];
  /* A device given the cpu PU's cores to try it alone (exec.c, explore_device): the cores it
   * had before, so that a later run of this executor can give them back when its run alone was
   * the slower (hand_back_tried); 0 otherwise. A trial cut short (exec.c, cut_trial_locked)
   * leaves it set on the released device, still open on every core, until the next run opens
   * it again on these. */
  unsigned *on_trial;
  /* A device that hand_back_tried released before a run (its trial alone lost, or was cut
   * short) and opened again on the cores it had: 1 until that run stores its release with the
   * models (models.c, store_hand_backs). It takes no part in the run, so the run's own samples
   * would not carry it, and a new process found no release stored under the key of its cores,
   * opened it beside the cpu PU and released it again (k-means' second runs: 0.108 s against
   * 0.078, one of 8 fresh directories, 2026-11-29). */
  int *release_unstored;
  /* A device whose run alone hand_back_tried found slower than the cpu PU's, and gave the cores
   * back from (1): this executor does not give them to it again (give_cores_stored); a new
   * process decides on the stored runs alone. The cpu PU's first blocks on the cores the
   * device gave back run right after it had them, and on this 2-core VM k-means' such blocks of
   * 10^5 points took 7.7-9.0 ms, not 0.65: read alone, they gave PoCL (1.35 ms for as many)
   * the cores again in the next pass and in every pass after (2026-11-29). (A trial cut short
   * is not one: the cpu PU's blocks on every core after the cut are its run alone there.) */
  int *handed_back;
  hlb__exec_memo *memo; /* per codelet: the samples of this executor's runs */
  unsigned n_memo;
  /* The session's prepared codelets: per PU, n_kept[i] entries in kept[i]; and its staging
   * (driver.h), kept from run to run: a run's first blocks allocate nothing. */
  hlb__kept **kept;
  unsigned *n_kept;
  hlb__stage *stage;
  /* Each PU's driver thread, started by its first run and kept until the executor is
   * destroyed (pu_thread.h). */
  hlb__pu_thread *thread;
};

/* exec/session.c. Prepare codelet cl on PU i for a run: the kept kernel when its source is
 * the same, else a new build (replacing the kept one of that name); the shared buffers copied
 * into the kept device buffers (every run: their contents may have changed). Fills shared[]
 * with the pointers the kernel gets, *kernel with the backend's handle, and st's setup parts
 * (setup_s, build_s, upload_s, kernel_builds). HLB_E* naming the PU and the problem. */
int hlb__session_prepare(hlb_executor *ex, unsigned i, const hlb_codelet *cl,
                         const void *shared[HLB_EXEC_MAX_SHARED], void **kernel,
                         hlb_exec_pu_stats *st);
/* Kernels the session holds over all PUs. */
unsigned hlb__session_kernels(const hlb_executor *ex);
/* Release every kept kernel, shared copy and staging buffer (hlb_executor_destroy). */
void hlb__session_free(hlb_executor *ex);
/* Open PU i's device again on `cores` cores (a CPU-type OpenCL device: a sub-device of that
 * many compute units, the whole device at its count or more), dropping what the session kept
 * for it (kernels, shared copies, staging: they belong to the old device). On failure the PU
 * is opened as before and HLB_E* names it. */
int hlb__session_reopen(hlb_executor *ex, unsigned i, unsigned cores);

#endif
