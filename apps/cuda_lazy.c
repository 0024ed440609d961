/* The apps' CUDA launchers, loaded the first time a CUDA PU runs one. Their library
 * (libhlb_apps_cuda, kernels.cu) links cuBLAS, whose initialisation every program that linked the
 * apps paid at its start: libcublasLt's alone took 54 ms on the 2-core VM of docs/benchmarks.md,
 * `hlb version` 82 ms in all (9.6 ms built without CUDA), and `hlb run` paid it twice, since it
 * executes itself again for OpenMP's wait policy (tools/hlb/main.c). Loaded here on demand, only
 * runs that drive a GPU pay it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "apps.h"
#include "common/error_internal.h"

/* The library's names for the launchers (kernels.cu). */
enum { MATMUL, BLACKSCHOLES, KMEANS, MANDELBROT, SPMV, N_LAUNCHERS };
static const char *const launcher_names[N_LAUNCHERS] = {
    "hlb__cuda_kernel_matmul", "hlb__cuda_kernel_blackscholes", "hlb__cuda_kernel_kmeans",
    "hlb__cuda_kernel_mandelbrot", "hlb__cuda_kernel_spmv"};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static hlb__cuda_launcher launchers[N_LAUNCHERS];
static char load_error[512]; /* why loading failed; empty when every launcher was found */

/* By name first: the installed hlb command's RUNPATH ($ORIGIN/../lib, HlbInstall.cmake),
 * LD_LIBRARY_PATH and the system's paths; then where this build tree made it. */
static void *open_library(void) {
  void *lib = dlopen(HLB_APPS_CUDA_FILE, RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen(HLB_APPS_CUDA_BUILD_PATH, RTLD_NOW | RTLD_LOCAL);
  return lib;
}

static void load(void) {
  void *lib = open_library();
  if (!lib) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : "dlopen failed");
    return;
  }
  for (unsigned k = 0; k < N_LAUNCHERS; k++) {
    const hlb__cuda_launcher *p = dlsym(lib, launcher_names[k]);
    if (!p || !*p) {
      snprintf(load_error, sizeof load_error, "%s has no %s", HLB_APPS_CUDA_FILE,
               launcher_names[k]);
      return;
    }
    launchers[k] = *p;
  }
  load_error[0] = '\0';
}

int hlb__apps_cuda_load(void) {
  (void)pthread_once(&load_once, load);
  if (load_error[0])
    return hlb__error(HLB_EDEVICE, "apps: the CUDA kernels could not be loaded: %s", load_error);
  return 0;
}

static int launch(unsigned k, const hlb_exec_call *c) {
  int rc = hlb__apps_cuda_load();
  return rc ? rc : launchers[k](c);
}

/* One entry per app: the launcher the codelet holds, which loads the library on first use. */
#define LAZY_LAUNCHER(app, k)                                                                      \
  static int lazy_##app(const hlb_exec_call *c) {                                                  \
    return launch(k, c);                                                                           \
  }
LAZY_LAUNCHER(matmul, MATMUL)
LAZY_LAUNCHER(blackscholes, BLACKSCHOLES)
LAZY_LAUNCHER(kmeans, KMEANS)
LAZY_LAUNCHER(mandelbrot, MANDELBROT)
LAZY_LAUNCHER(spmv, SPMV)

const hlb__cuda_launcher hlb__cuda_matmul = lazy_matmul, hlb__cuda_blackscholes = lazy_blackscholes,
                         hlb__cuda_kmeans = lazy_kmeans, hlb__cuda_mandelbrot = lazy_mandelbrot,
                         hlb__cuda_spmv = lazy_spmv;
