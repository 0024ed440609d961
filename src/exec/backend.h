/* The backend vtable of the executor. Each backend lives in its own file under backends/
 * and defines one `const hlb__backend_ops hlb__backend_<name>`; CMake compiles the backends
 * it found and generates backends.inc listing them, so the core never includes a device
 * header and has no #ifdef per backend.
 *
 * Thread safety: a device handle is used by its PU's driver thread only; devices() and
 * device_name() may be called from any thread.
 */
#ifndef HLB_EXEC_BACKEND_H
#define HLB_EXEC_BACKEND_H

#include <stddef.h>

#include "hlb/exec.h"

typedef struct hlb__backend_ops {
  hlb_backend kind;
  /* 1 when the device's memory is the host's (cpu): blocks are read and written in place,
   * with no staging copy. */
  int host_memory;
  /* Devices present (0 when the driver or runtime is missing). */
  unsigned (*devices)(void);
  /* Open device `pu->device`; write its name into pu->device_name. HLB_EDEVICE on failure. */
  int (*open)(hlb_exec_pu *pu, void **dev);
  void (*close)(void *dev);
  /* The session's calls (the threaded executor keeps what they make; docs/executor.md, "A
   * session"):
   * build(): build the codelet's kernel for the device into *kernel, a handle the caller keeps
   * across runs and gives back to launch() and unbuild(). `shared` are the shared buffers as
   * the kernel will see them (on the device), for a warm-up launch. NULL for a backend with
   * nothing to build (cpu, cuda: the kernels are linked in); launch() then gets NULL. */
  int (*build)(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED],
               void **kernel);
  void (*unbuild)(void *dev, void *kernel);
  /* Run the built kernel (NULL where the backend has no build) on one block and wait for it.
   * Fills call->queue/threads/device. The shared buffers are the caller's (alloc, to_device). */
  int (*launch)(void *dev, void *kernel, const hlb_codelet *cl, hlb_exec_call *call);
  /* Optional: copy a shared buffer's `bytes` from `host` to the device into *buf (kept by the
   * caller from run to run, *cap bytes, released with release()), replacing or reusing it. NULL:
   * the caller grows *buf with alloc() and copies with to_device(). */
  int (*upload)(void *dev, void **buf, size_t *cap, const void *host, size_t bytes);
  /* One codelet at a time (the MPI executor, link profiling): prepare() builds the codelet's
   * kernel (kept in the device until another source or close(); the text, not its address,
   * is compared) and copies its shared buffers to the device (the pointers to pass as
   * call->shared go into shared[]); unprepare() frees the shared buffers; run() launches the
   * kernel of the last prepare(). */
  int (*prepare)(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED]);
  void (*unprepare)(void *dev);
  int (*run)(void *dev, const hlb_codelet *cl, hlb_exec_call *call);
  /* Device memory for a block; a zero size gives NULL and succeeds. */
  int (*alloc)(void *dev, size_t bytes, void **buf);
  void (*release)(void *dev, void *buf);
  int (*to_device)(void *dev, void *dst, const void *src, size_t bytes);
  int (*to_host)(void *dev, void *dst, const void *src, size_t bytes);
  /* 1 when the codelet has a kernel for this backend. */
  int (*has_kernel)(const hlb_codelet *cl);
  /* Optional (cpu): change the cores a device runs its blocks on, from another thread while
   * it runs; the next block uses them. */
  void (*set_cores)(void *dev, unsigned cores);
} hlb__backend_ops;

/* The backend of a kind in this build, or NULL. */
const hlb__backend_ops *hlb__backend_get(hlb_backend kind);

/* Staging buffers of a PU's driver (threaded executor and MPI executor alike): make *buf at
 * least `need` bytes, keeping it when it is already large enough. Host memory with realloc;
 * device memory is released and allocated anew (its old contents are not needed). */
int hlb__staging_grow_host(void **buf, size_t *cap, size_t need);
int hlb__staging_grow_device(const hlb__backend_ops *ops, void *dev, void **buf, size_t *cap,
                             size_t need);

/* Where block `blk`'s input and output are on the host (both executors): the input packed
 * into *host_in when the codelet has pack(), else read in place from cl->in; the output into
 * *host_out when it has unpack() (the caller unpacks after the run), else in place in cl->out.
 * NULL for a side with no bytes. The staging buffers grow as needed. */
int hlb__block_host_io(const hlb_codelet *cl, const hlb_block *blk, void **host_in,
                       size_t *host_in_cap, void **host_out, size_t *host_out_cap, const void **in,
                       void **out);

/* Add a finished block's sample to a PU's stats (both executors); throttle_s is the emulated
 * part of s->compute_s. */
void hlb__pu_stats_add_block(hlb_exec_pu_stats *st, const hlb_sample *s, double throttle_s);

/* Validate a codelet and an item count (both executors): n_items > 0, shared buffers within
 * HLB_EXEC_MAX_SHARED, every per-item input and output has somewhere to come from and go to.
 * HLB_EINVAL naming the codelet and the problem. */
int hlb__codelet_check(const hlb_codelet *cl, size_t n_items);

/* Cores of this machine (hwloc when available, else sysconf). */
unsigned hlb__cpu_cores(void);

#endif
