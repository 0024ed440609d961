/* CUDA kernels and launchers of the apps (built only when CMake finds CUDA). A launcher
 * enqueues on the PU's stream (c->queue); the executor synchronises and times it. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "apps.h"
#include "hlb/error.h"
#include "common/mandel_point.h"
}

namespace {

int launch_matmul(const hlb_exec_call *c) {
  /* One cuBLAS handle per driver thread, i.e. per GPU (PLB-HeC used CUBLAS too). */
  static thread_local cublasHandle_t h = nullptr;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return HLB_EDEVICE;
  const double *params = nullptr;
  double n_d = 0;
  params = static_cast<const double *>(c->shared[1]);
  if (cudaMemcpyAsync(&n_d, params, sizeof n_d, cudaMemcpyDeviceToHost,
                      static_cast<cudaStream_t>(c->queue)) != cudaSuccess ||
      cudaStreamSynchronize(static_cast<cudaStream_t>(c->queue)) != cudaSuccess)
    return HLB_EDEVICE;
  int n = (int)n_d, rows = (int)c->count;
  const double one = 1.0, zero = 0.0;
  cublasSetStream(h, static_cast<cudaStream_t>(c->queue));
  /* Row-major C = A B is column-major C^T = B^T A^T. */
  cublasStatus_t s = cublasDgemm(
      h, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, n, &one, static_cast<const double *>(c->shared[0]), n,
      static_cast<const double *>(c->in), n, &zero, static_cast<double *>(c->out), n);
  return s == CUBLAS_STATUS_SUCCESS ? 0 : HLB_EDEVICE;
}

__global__ void k_blackscholes(const double *in, double *out, size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= count) return;
  const double *x = in + 5 * i;
  double *y = out + 2 * i;
  double s = x[0], k = x[1], t = x[2], r = x[3], v = x[4];
  double sq = v * sqrt(t);
  double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / sq, d2 = d1 - sq;
  double df = k * exp(-r * t);
  double n1 = 0.5 * erfc(-d1 * 0.70710678118654752440),
         n2 = 0.5 * erfc(-d2 * 0.70710678118654752440);
  y[0] = s * n1 - df * n2;
  y[1] = df * (1.0 - n2) - s * (1.0 - n1);
}

unsigned blocks(size_t n) {
  return (unsigned)((n + 255) / 256);
}

int launch_blackscholes(const hlb_exec_call *c) {
  k_blackscholes<<<blocks(c->count), 256, 0, static_cast<cudaStream_t>(c->queue)>>>(
      static_cast<const double *>(c->in), static_cast<double *>(c->out), c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

__global__ void k_kmeans(const double *pts, int32_t *lab, const double *cent, const double *prm,
                         size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= count) return;
  int k = (int)prm[0], d = (int)prm[1];
  const double *p = pts + i * d;
  int best = 0;
  double bd = INFINITY;
  for (int j = 0; j < k; j++) {
    double s = 0;
    for (int q = 0; q < d; q++) {
      double t = p[q] - cent[j * d + q];
      s += t * t;
    }
    if (s < bd) {
      bd = s;
      best = j;
    }
  }
  lab[i] = best;
}

int launch_kmeans(const hlb_exec_call *c) {
  k_kmeans<<<blocks(c->count), 256, 0, static_cast<cudaStream_t>(c->queue)>>>(
      static_cast<const double *>(c->in), static_cast<int32_t *>(c->out),
      static_cast<const double *>(c->shared[0]), static_cast<const double *>(c->shared[1]),
      c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

/* One thread per pixel of the block's rows. */
__global__ void k_mandelbrot(uint32_t *out, const double *prm, size_t begin, size_t count) {
  size_t n = (size_t)prm[0];
  unsigned iters = (unsigned)prm[1];
  size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (g >= count * n) return;
  out[g] = hlb__mandel_point(n, iters, begin + g / n, g % n);
}

int launch_mandelbrot(const hlb_exec_call *c) {
  /* The image side is in the codelet's user data on the host side of the call. */
  const double *prm = static_cast<const double *>(c->shared[0]);
  double host_prm[2];
  cudaStream_t st = static_cast<cudaStream_t>(c->queue);
  if (cudaMemcpyAsync(host_prm, prm, sizeof host_prm, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
      cudaStreamSynchronize(st) != cudaSuccess)
    return HLB_EDEVICE;
  size_t total = c->count * (size_t)host_prm[0];
  k_mandelbrot<<<blocks(total), 256, 0, st>>>(static_cast<uint32_t *>(c->out), prm, c->begin,
                                              c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

/* One thread per row of the block (spmv.c's row loop). */
__global__ void k_spmv(double *y, const uint64_t *rowp, const uint32_t *col, const double *val,
                       const double *x, size_t begin, size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= count) return;
  size_t row = begin + i;
  double s = 0.0;
  for (uint64_t k = rowp[row]; k < rowp[row + 1]; k++)
    s += val[k] * x[col[k]];
  y[i] = s;
}
int launch_spmv(const hlb_exec_call *c) {
  k_spmv<<<blocks(c->count), 256, 0, static_cast<cudaStream_t>(c->queue)>>>(
      static_cast<double *>(c->out), static_cast<const uint64_t *>(c->shared[0]),
      static_cast<const uint32_t *>(c->shared[1]), static_cast<const double *>(c->shared[2]),
      static_cast<const double *>(c->shared[3]), c->begin, c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

} // namespace

extern "C" {
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_matmul =
    launch_matmul;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_blackscholes =
    launch_blackscholes;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kmeans =
    launch_kmeans;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_mandelbrot =
    launch_mandelbrot;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_spmv = launch_spmv;
}
