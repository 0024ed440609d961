/* libhlb_starpu's internals shared by run.c (the driver) and workers.c (selection, wrapper
 * codelet, handles). Only this directory includes StarPU's headers. */
#ifndef HLB_STARPU_INTERNAL_H
#define HLB_STARPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "hlb/balancer.h"
#include "hlb/starpu.h"

/* The codelet the tasks run: the user's, with its first cpu and OpenCL functions replaced by
 * wrappers that time the kernel and apply the emulated throttle. `cl` comes first so a task's
 * cl pointer is the wrapper. */
typedef struct hlb__sp_wrap {
  struct starpu_codelet cl;
  starpu_cpu_func_t cpu;
  starpu_opencl_func_t opencl;
  double throttle[STARPU_NMAXWORKERS];
} hlb__sp_wrap;

/* A handle cut into blocks: where its items are in main memory while the run holds it. */
typedef struct hlb__sp_split {
  starpu_data_handle_t h;
  enum starpu_data_access_mode mode;
  int matrix;      /* 0: vector (items are elements); 1: matrix (items are rows) */
  char *ptr;       /* first item, in main memory (valid while acquired) */
  size_t stride;   /* bytes from one item to the next */
  size_t elemsize; /* bytes of one element */
  uint32_t nx, ld; /* matrix: elements per row and the leading dimension */
  size_t items;
} hlb__sp_split;

/* One block in flight: the task's handles, and what the task measured. The task's callback
 * fills the times, settles it when its worker computes in main memory (run.c) and hands it
 * to the driver thread, which unregisters and frees it. */
typedef struct hlb__sp_block {
  hlb_block blk;
  unsigned pu;
  starpu_data_handle_t h[STARPU_NMAXBUFS];
  unsigned n_h;
  struct starpu_task *task;
  double compute_s, acquire_s, throttle_s, start_s;
  int workerid; /* where it ran (from the task's profiling) */
  void *owner;  /* the run */
  int failed;   /* the kernel's HLB_E* code (hlb_starpu_run_codelet); 0 when it succeeded */
  int settled;  /* its sample went to the balancer (hlb places); it waits to be unregistered */
  char failure[256];
  struct hlb__sp_block *next;
} hlb__sp_block;

/* Worker selection and naming (workers.c). */
int hlb__sp_select_workers(const struct starpu_codelet *cl, const hlb_starpu_options *o, int *ids,
                           unsigned *n);
int hlb__sp_wrap_init(hlb__sp_wrap *w, const struct starpu_codelet *cl,
                      const hlb_starpu_options *o);
/* Hold the handle for the run and find its items in main memory. */
int hlb__sp_split_open(hlb__sp_split *s, starpu_data_handle_t h, enum starpu_data_access_mode m,
                       unsigned index);
void hlb__sp_split_close(hlb__sp_split *s);
/* A handle over items [begin, begin + count) of s. */
void hlb__sp_split_block(const hlb__sp_split *s, size_t begin, size_t count,
                         starpu_data_handle_t *out);
/* The block of the task now running on this worker, or NULL (wrapper and current_block). */
hlb__sp_block *hlb__sp_current(void);
void hlb__sp_task_done(void *arg); /* the tasks' callback */

/* hlb_starpu_memory (memory.c): the priors of the run's workers (pointers into the memory),
 * the item costs learnt over n_items (or NULL; *trusted: they predicted the run that learnt
 * them, else they go on trial), and after a run its samples and item costs
 * (forgot[p]: 1 when PU p's priors were forgotten, its old samples dropped). */
void hlb__sp_memory_priors(const hlb_starpu_memory *m, const int *ids, unsigned n_pus,
                           const hlb_sample **prior, size_t *n_prior);
const double *hlb__sp_memory_item_cost(const hlb_starpu_memory *m, size_t n_items, unsigned *n,
                                       int *trusted);
int hlb__sp_memory_keep(hlb_starpu_memory *m, const hlb_balancer *b, const int *ids, unsigned n_pus,
                        size_t n_items, int *forgot);
/* 1 when a run of these workers starts from samples read from a model file
 * (hlb_starpu_memory_load), and the file's path ("" when none was read or written). */
int hlb__sp_memory_from_file(const hlb_starpu_memory *m, const int *ids, unsigned n_pus);
const char *hlb__sp_memory_file(const hlb_starpu_memory *m);

#endif
