/* The applications: workloads with real kernels (cpu, OpenCL, CUDA) and a result check,
 * run by `hlb run`, the tests and the benchmarks through the executor (include/hlb/exec.h).
 * PLB-HeC and PLB-HAC, "Applications": matrix multiplication (rows of C = A B), Black-Scholes
 * (a range of options), k-means (each iteration one balanced pass over the points); plus
 * Mandelbrot rows, whose per-row cost is irregular.
 *
 * Thread safety: an hlb_app is used by one thread at a time; the registry is read-only.
 */
#ifndef HLB_APPS_H
#define HLB_APPS_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/exec.h"

/* OpenCL C: `i`, the item of the block that work-item `g` (< count) computes, spread over the
 * block so that any contiguous range of work-items holds items from all over it. A CPU-type
 * OpenCL device (PoCL) gives each of its threads a contiguous range of a launch's work-groups
 * (on two threads, halves of a launch of up to 128 groups), and where the cost of items
 * follows their index, as a fractal's rows through the set do, one thread gets the dear part
 * of an asymmetric block: PoCL ran mandelbrot's image at 4096 in two such blocks, [0, 2048) and
 * the rest, in 1.78 s, and in 1.24 s with the rows spread (docs/benchmarks.md,
 * "PoCL's threads: small blocks, asymmetric blocks"). The block is cut into HLB_APP_SPREAD_LANES
 * segments (the first count % lanes of them one item longer) and work-item g = k * lanes + l takes
 * the k-th item of segment l: a bijection of [0, count) for two integer divisions. Not for items
 * whose neighbours share memory: spmv's rows spread took 0.33 s against 0.24 (cache lines and
 * prefetching lost), and its rows' cost varies less along the index. */
#define HLB_APP_SPREAD_LANES "64"
#define HLB_APP_SPREAD_ITEM                                                                        \
  "  ulong lanes_ = count < " HLB_APP_SPREAD_LANES " ? count : " HLB_APP_SPREAD_LANES ";\n"        \
  "  ulong q_ = count / lanes_, r_ = count % lanes_, l_ = g % lanes_;\n"                           \
  "  ulong i = l_ * q_ + min(l_, r_) + g / lanes_;\n"

typedef struct hlb_app_info {
  const char *name;
  const char *description;
  const char *size_meaning; /* what --size counts */
  size_t default_size;      /* about a second on one core */
  size_t test_size;         /* well under a second: for the tests */
  size_t max_size;
  size_t min_size; /* smallest valid size; 0 means 2 */
} hlb_app_info;

unsigned hlb_app_count(void);
const hlb_app_info *hlb_app_info_at(unsigned i);
const hlb_app_info *hlb_app_find(const char *name);

typedef struct hlb_app hlb_app;

/* Make the app's input (deterministic for a seed). HLB_ENOTFOUND for an unknown name,
 * HLB_EINVAL for a size out of range. */
int hlb_app_create(const char *name, size_t size, uint64_t seed, hlb_app **out);
void hlb_app_destroy(hlb_app *a);
const hlb_app_info *hlb_app_info_of(const hlb_app *a);
/* Items one balanced pass has. */
size_t hlb_app_items(const hlb_app *a);

/* Run the app on the executor: one pass, or several for an iterative app (k-means), whose
 * stats are summed into one (passes laid end to end in time). Clears the previous output
 * first, so every run is checked afresh. */
int hlb_app_run(hlb_app *a, hlb_executor *ex, const hlb_exec_options *opt, hlb_exec_stats *st);

/* One balanced pass of `cl` over n_items, on whatever runs the blocks (hlb's executor, StarPU's
 * workers): what an app calls once per pass. `changed` has bit i set when the host changed
 * cl->shared[i] since the previous pass (a runtime that keeps shared buffers on its devices
 * between passes must send those again); every bit is set on a run's first pass. st may be
 * NULL. Returns 0 or a negative HLB_E*. */
typedef int (*hlb_app_pass_fn)(void *ctx, const hlb_codelet *cl, size_t n_items, unsigned changed,
                               hlb_exec_stats *st);
#define HLB_APP_ALL_SHARED (~0u)

/* Run the app with `pass` running its balanced passes: one for a single-pass app, several
 * with the host's step between them for an iterative one; the stats are summed as
 * hlb_app_run's. Clears the previous output first. */
int hlb_app_run_passes(hlb_app *a, hlb_app_pass_fn pass, void *ctx, hlb_exec_stats *st);

/* Check the output against a serial reference: 0, or HLB_EVERIFY with where it differs. */
int hlb_app_verify(hlb_app *a);

/* The app's codelet for one pass (for a single-pass benchmark); NULL for iterative apps (run
 * them with hlb_app_run_passes). */
const hlb_codelet *hlb_app_codelet(hlb_app *a);

/* ---- for the app files ---- */
typedef struct hlb__app_ops {
  hlb_app_info info;
  int (*create)(size_t size, uint64_t seed, void **state);
  void (*destroy)(void *state);
  size_t (*items)(const void *state);
  void (*clear)(void *state);
  /* NULL for single-pass apps: the core runs codelet once. Iterative apps run each pass
   * through `pass` (hlb_app_run_passes). */
  int (*run)(void *state, hlb_app_pass_fn pass, void *ctx, hlb_exec_stats *st);
  const hlb_codelet *(*codelet)(void *state);
  int (*verify)(void *state);
} hlb__app_ops;

/* Append pass `p` to the running total `t` (t empty: copy), shifting p's times by t's
 * makespan. Takes ownership of p's log. */
int hlb__app_stats_append(hlb_exec_stats *t, hlb_exec_stats *p);

/* Deterministic uniform doubles in [0, 1) for the inputs (splitmix64). */
double hlb__app_uniform(uint64_t *state);

/* The apps' CUDA launchers; NULL when the build has no CUDA. They load kernels.cu's library
 * (libhlb_apps_cuda, whose launchers are hlb__cuda_kernel_<app>) when first called (cuda_lazy.c):
 * cuBLAS's initialisation is paid by runs that use a GPU only. */
typedef int (*hlb__cuda_launcher)(const hlb_exec_call *c);
extern const hlb__cuda_launcher hlb__cuda_matmul, hlb__cuda_blackscholes, hlb__cuda_kmeans,
    hlb__cuda_mandelbrot, hlb__cuda_spmv;

/* Loads the CUDA kernels' library now: 0, or HLB_EDEVICE naming what failed (a build with
 * CUDA), or HLB_EUNSUPPORTED (without). */
int hlb__apps_cuda_load(void);

#endif
