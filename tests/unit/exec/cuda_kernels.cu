/* test_exec_cuda's device code: the affine kernel of test_exec_opencl (out[i] = in[i] * s0[0]
 * + begin + i, in doubles) and a launcher whose launch the runtime refuses, built by nvcc into
 * a small shared library as apps/kernels.cu is (this directory's executables are C). */
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <thread>

extern "C" {
#include "hlb/error.h"
#include "hlb/exec.h"
}

namespace {

__global__ void k_affine(const double *in, double *out, const double *s0, size_t begin,
                         size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < count) out[i] = in[i] * s0[0] + (double)(begin + i);
}

unsigned grid(size_t n) {
  return (unsigned)((n + 255) / 256);
}

} // namespace

extern "C" __attribute__((visibility("default"))) int hlb_test_cuda_affine(const hlb_exec_call *c) {
  k_affine<<<grid(c->count), 256, 0, static_cast<cudaStream_t>(c->queue)>>>(
      static_cast<const double *>(c->in), static_cast<double *>(c->out),
      static_cast<const double *>(c->shared[0]), c->begin, c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

/* 4096 threads per block is over every CUDA device's limit (1024): the launch fails with
 * cudaErrorInvalidConfiguration, and the launcher says only that it failed. */
extern "C" __attribute__((visibility("default"))) int
hlb_test_cuda_bad_launch(const hlb_exec_call *c) {
  k_affine<<<1, 4096, 0, static_cast<cudaStream_t>(c->queue)>>>(
      static_cast<const double *>(c->in), static_cast<double *>(c->out),
      static_cast<const double *>(c->shared[0]), c->begin, c->count);
  return 0;
}

/* The affine kernel whose first call in the process first spends 150 ms as a library's
 * one-time set-up does (cuBLAS's handle and lazily loaded kernels: 43 and 61 ms in an H100's
 * first two matmul blocks). */
extern "C" __attribute__((visibility("default"))) int
hlb_test_cuda_warm_up_once(const hlb_exec_call *c) {
  static std::atomic<int> warmed{0};
  if (!warmed.exchange(1)) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  return hlb_test_cuda_affine(c);
}
