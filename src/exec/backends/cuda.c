/* The cuda backend: one NVIDIA GPU per PU through the CUDA runtime's C API. It holds no
 * device code (the codelets' kernels are compiled by nvcc with the application), so it is
 * plain C built by the C compiler and linked with cudart. Each PU gets its own
 * stream; the codelet's cuda launcher enqueues on it and the backend synchronises, so the
 * core's timer sees the whole kernel. Copies are synchronous cudaMemcpy on that stream.
 * With no GPU (or no driver) devices() returns 0 and nothing is opened. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "exec/backend.h"

typedef struct cuda_dev {
  int id;
  cudaStream_t stream;
  void *shared[HLB_EXEC_MAX_SHARED];
  char name[32];
} cuda_dev;

static int fail(const cuda_dev *d, const char *what, cudaError_t e) {
  return hlb__error(HLB_EDEVICE, "pu '%s': %s: %s", d->name, what, cudaGetErrorString(e));
}

static unsigned cu_devices(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n > 0 ? (unsigned)n : 0u;
}

static int cu_open(hlb_exec_pu *pu, void **out) {
  unsigned n = cu_devices();
  if (pu->device >= n)
    return hlb__error(HLB_ENOTFOUND, "pu '%s': no CUDA device %u (this machine has %u)", pu->name,
                      pu->device, n);
  cuda_dev *d = calloc(1, sizeof *d);
  if (!d) return hlb__error(HLB_ENOMEM, "pu '%s': out of memory", pu->name);
  d->id = (int)pu->device;
  snprintf(d->name, sizeof d->name, "%s", pu->name);
  cudaError_t e = cudaSetDevice(d->id);
  if (e == cudaSuccess) e = cudaStreamCreate(&d->stream);
  if (e != cudaSuccess) {
    int rc = fail(d, "cannot open the device", e);
    free(d);
    return rc;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, d->id) == cudaSuccess)
    snprintf(pu->device_name, sizeof pu->device_name, "%.95s", prop.name);
  *out = d;
  return 0;
}

static void cu_unprepare(void *dev) {
  cuda_dev *d = (cuda_dev *)dev;
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++) {
    cudaFree(d->shared[i]);
    d->shared[i] = NULL;
  }
}

static void cu_close(void *dev) {
  cuda_dev *d = (cuda_dev *)dev;
  cudaSetDevice(d->id);
  cu_unprepare(d);
  cudaStreamDestroy(d->stream);
  free(d);
}

static int cu_prepare(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED]) {
  cuda_dev *d = (cuda_dev *)dev;
  /* The runtime's current device is per thread: every call from the driver thread sets it. */
  cudaSetDevice(d->id);
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++) {
    shared[i] = NULL;
    if (i >= cl->n_shared || cl->shared[i].bytes == 0) continue;
    cudaError_t e = cudaMalloc(&d->shared[i], cl->shared[i].bytes);
    if (e == cudaSuccess)
      e = cudaMemcpy(d->shared[i], cl->shared[i].host, cl->shared[i].bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      cu_unprepare(d);
      return fail(d, "copying a shared buffer", e);
    }
    shared[i] = d->shared[i];
  }
  return 0;
}

static int cu_alloc(void *dev, size_t bytes, void **buf) {
  cuda_dev *d = (cuda_dev *)dev;
  *buf = NULL;
  if (bytes == 0) return 0;
  cudaSetDevice(d->id);
  cudaError_t e = cudaMalloc(buf, bytes);
  return e == cudaSuccess ? 0 : fail(d, "cudaMalloc", e);
}

static void cu_release(void *dev, void *buf) {
  cuda_dev *d = (cuda_dev *)dev;
  cudaSetDevice(d->id);
  cudaFree(buf);
}

static int cu_to_device(void *dev, void *dst, const void *src, size_t bytes) {
  cuda_dev *d = (cuda_dev *)dev;
  if (bytes == 0) return 0;
  /* The session copies shared buffers from the caller's thread, not the driver's. */
  cudaSetDevice(d->id);
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, d->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  return e == cudaSuccess ? 0 : fail(d, "copy to the device", e);
}

static int cu_to_host(void *dev, void *dst, const void *src, size_t bytes) {
  cuda_dev *d = (cuda_dev *)dev;
  if (bytes == 0) return 0;
  /* The session copies shared buffers from the caller's thread, not the driver's. */
  cudaSetDevice(d->id);
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, d->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  return e == cudaSuccess ? 0 : fail(d, "copy to the host", e);
}

static int cu_run(void *dev, const hlb_codelet *cl, hlb_exec_call *call) {
  cuda_dev *d = (cuda_dev *)dev;
  cudaSetDevice(d->id);
  call->queue = d->stream;
  call->device = (unsigned)d->id;
  int rc = cl->cuda(call);
  if (rc != 0) return rc;
  cudaError_t e = cudaStreamSynchronize(d->stream);
  if (e == cudaSuccess) e = cudaGetLastError();
  return e == cudaSuccess ? 0 : fail(d, "kernel", e);
}

/* Nothing is built for CUDA: the launcher and its kernel were compiled by nvcc with the
 * application. */
static int cu_launch(void *dev, void *kernel, const hlb_codelet *cl, hlb_exec_call *call) {
  (void)kernel;
  return cu_run(dev, cl, call);
}

static int cu_has_kernel(const hlb_codelet *cl) {
  return cl->cuda != NULL;
}

const hlb__backend_ops hlb__backend_cuda = {
    .kind = HLB_BACKEND_CUDA,
    .host_memory = 0,
    .devices = cu_devices,
    .open = cu_open,
    .close = cu_close,
    .launch = cu_launch,
    .prepare = cu_prepare,
    .unprepare = cu_unprepare,
    .alloc = cu_alloc,
    .release = cu_release,
    .to_device = cu_to_device,
    .to_host = cu_to_host,
    .run = cu_run,
    .has_kernel = cu_has_kernel,
};
