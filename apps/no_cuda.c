/* The CUDA launchers of a build without CUDA: none, so the codelets have no cuda kernel. */
#include <stddef.h>

#include "apps.h"
#include "common/error_internal.h"

const hlb__cuda_launcher hlb__cuda_matmul = NULL, hlb__cuda_blackscholes = NULL,
                         hlb__cuda_kmeans = NULL, hlb__cuda_mandelbrot = NULL,
                         hlb__cuda_spmv = NULL;

int hlb__apps_cuda_load(void) {
  return hlb__error(HLB_EUNSUPPORTED, "apps: this build has no CUDA");
}
