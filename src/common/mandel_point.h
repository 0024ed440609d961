/* Escape-time count of one Mandelbrot pixel, shared by the C kernel (apps/mandelbrot.c), the
 * CUDA kernel (apps/kernels.cu) and the simulator's mandelbrot cost map (src/partition/cost_map.c)
 * so they cannot drift apart. (The OpenCL kernel is a source
 * string, MANDEL_BODY in mandelbrot.c, with the same arithmetic.) */
#ifndef HLB_COMMON_MANDEL_POINT_H
#define HLB_COMMON_MANDEL_POINT_H

#include <stddef.h>

#ifdef __CUDACC__
#define HLB_HOST_DEVICE __host__ __device__
#else
#define HLB_HOST_DEVICE
#endif

/* Iterations before pixel (x, row) of an n x n image of [-2, 1] x [-1.5, 1.5] escapes,
 * at most iters. */
static inline HLB_HOST_DEVICE unsigned hlb__mandel_point(size_t n, unsigned iters, size_t row,
                                                         size_t x) {
  double cy = -1.5 + 3.0 * (double)row / (double)n;
  double cx = -2.0 + 3.0 * (double)x / (double)n, zx = 0.0, zy = 0.0;
  unsigned it = 0;
  while (it < iters && zx * zx + zy * zy <= 4.0) {
    double t = zx * zx - zy * zy + cx;
    zy = 2.0 * zx * zy + cy;
    zx = t;
    it++;
  }
  return it;
}

#endif
