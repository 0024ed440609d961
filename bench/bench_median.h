/* The median the benchmarks report (header-only: each bench is one program of its own). */
#ifndef HLB_BENCH_MEDIAN_H
#define HLB_BENCH_MEDIAN_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* qsort order of doubles. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of the finite values among v[0..n) (v is reordered); NAN when there is none, so a
 * figure that could not be computed (a run without a fitted line) is left out, not counted. */
static inline double bench_median(double *v, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) v[m++] = v[i];
  if (m == 0) return NAN;
  qsort(v, m, sizeof *v, bench_cmp_double);
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

#endif
