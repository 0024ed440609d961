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

constexpr unsigned THREADS = 256; /* threads per thread block of every kernel here */

unsigned blocks(size_t n) {
  return (unsigned)((n + THREADS - 1) / THREADS);
}

int launch_blackscholes(const hlb_exec_call *c) {
  k_blackscholes<<<blocks(c->count), THREADS, 0, static_cast<cudaStream_t>(c->queue)>>>(
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
  k_kmeans<<<blocks(c->count), THREADS, 0, static_cast<cudaStream_t>(c->queue)>>>(
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
  k_mandelbrot<<<blocks(total), THREADS, 0, st>>>(static_cast<uint32_t *>(c->out), prm, c->begin,
                                                  c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

/* spmv's rows follow a power law (spmv.c): most hold a few nonzeros, a few hold up to 5 % of
 * the columns. One thread per row alone made a block as slow as its longest row, done by one
 * thread: on an H100 a block of 30372 rows took 12.8 ms (2400 rows/ms) where the whole matrix
 * of 8 million rows takes 25 ms, and with every local PU the GPU did a sixth of the rows in as
 * long as the cpu PU took for the rest (docs/benchmarks.md, "spmv's long rows on the GPU"). So
 * rows up to SPMV_LONG_ROW nonzeros take a thread each (k_spmv_short: a warp waits at most that
 * many steps for its longest row) and longer rows a whole thread block each (k_spmv_long), its
 * threads striding over the row's nonzeros and reducing the sums. Both keep a fixed sum order,
 * so a row's value does not change from run to run. */
constexpr uint64_t SPMV_LONG_ROW = 64; /* nonzeros: about 5x the mean row (spmv.c) */

__global__ void k_spmv_short(double *y, const uint64_t *rowp, const uint32_t *col,
                             const double *val, const double *x, size_t begin, size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= count) return;
  size_t row = begin + i;
  uint64_t k0 = rowp[row], k1 = rowp[row + 1];
  if (k1 - k0 > SPMV_LONG_ROW) return; /* k_spmv_long's */
  double s = 0.0;
  for (uint64_t k = k0; k < k1; k++)
    s += val[k] * x[col[k]];
  y[i] = s;
}

/* Each thread block walks chunks of THREADS rows: its threads find the chunk's long rows
 * (one row each), then do them one after another, all threads on each. */
__global__ void k_spmv_long(double *y, const uint64_t *rowp, const uint32_t *col, const double *val,
                            const double *x, size_t begin, size_t count) {
  __shared__ size_t long_rows[THREADS];
  __shared__ unsigned n_long;
  __shared__ double warp_sum[THREADS / 32];
  for (size_t base = blockIdx.x * (size_t)THREADS; base < count;
       base += (size_t)gridDim.x * THREADS) {
    __syncthreads(); /* every thread has read n_long of the last chunk */
    if (threadIdx.x == 0) n_long = 0;
    __syncthreads();
    size_t i = base + threadIdx.x;
    if (i < count && rowp[begin + i + 1] - rowp[begin + i] > SPMV_LONG_ROW)
      long_rows[atomicAdd(&n_long, 1u)] = i;
    __syncthreads();
    unsigned n = n_long;
    for (unsigned r = 0; r < n; r++) {
      size_t row = begin + long_rows[r];
      double s = 0.0;
      for (uint64_t k = rowp[row] + threadIdx.x; k < rowp[row + 1]; k += THREADS)
        s += val[k] * x[col[k]];
      for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
      if ((threadIdx.x & 31u) == 0) warp_sum[threadIdx.x / 32] = s;
      __syncthreads();
      if (threadIdx.x == 0) {
        double t = 0.0;
        for (unsigned w = 0; w < THREADS / 32; w++)
          t += warp_sum[w];
        y[long_rows[r]] = t;
      }
      __syncthreads(); /* warp_sum is free for the next row */
    }
  }
}

int launch_spmv(const hlb_exec_call *c) {
  cudaStream_t st = static_cast<cudaStream_t>(c->queue);
  double *y = static_cast<double *>(c->out);
  const uint64_t *rowp = static_cast<const uint64_t *>(c->shared[0]);
  const uint32_t *col = static_cast<const uint32_t *>(c->shared[1]);
  const double *val = static_cast<const double *>(c->shared[2]);
  const double *x = static_cast<const double *>(c->shared[3]);
  k_spmv_short<<<blocks(c->count), THREADS, 0, st>>>(y, rowp, col, val, x, c->begin, c->count);
  /* Enough thread blocks to fill the GPU several times over; each walks its chunks. */
  unsigned chunks = blocks(c->count), grid = chunks < 4096 ? chunks : 4096;
  k_spmv_long<<<grid, THREADS, 0, st>>>(y, rowp, col, val, x, c->begin, c->count);
  return cudaGetLastError() == cudaSuccess ? 0 : HLB_EDEVICE;
}

} // namespace

extern "C" {
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kernel_matmul =
    launch_matmul;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kernel_blackscholes =
    launch_blackscholes;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kernel_kmeans =
    launch_kmeans;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kernel_mandelbrot =
    launch_mandelbrot;
__attribute__((visibility("default"))) extern const hlb__cuda_launcher hlb__cuda_kernel_spmv = launch_spmv;
}
