/* Jacobi iteration on a dense, diagonally dominant system, rows split over MPI ranks and
 * rebalanced by hlb's SPMD interface (FLEX-MPI's first benchmark, FLEX-MPI section 4).
 *
 *   mpirun -np 2 ./hlb_jacobi --rows 2000 --iters 1000 [--policy flex] [--interval 100]
 *
 * Each rank owns a contiguous block of rows of A and b (registered with hlb, so they move
 * when the split changes) and a full copy of x, gathered every iteration. A row's update
 * depends only on x, so the result is bit-for-bit the same for any number of ranks and any
 * split: the printed checksum proves redistribution lost or duplicated nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "spmd_common.h"

static const char usage[] =
    "usage: hlb_jacobi [--rows N] [--iters K] [--policy P] [--params S] [--interval I]\n"
    "                  [--counts C0,C1,...]  (rows per rank to start from; default even)\n"
    "                  [--inject-rank R --inject-from I --inject-to J --inject-frac F]\n";

/* A deterministic pseudo-random entry in [0, 1) for row i, column j. */
static double entry(size_t i, size_t j) {
  uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ (uint64_t)j * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return (double)(h >> 11) * 0x1.0p-53;
}

static double true_x(size_t j) {
  return 1.0 + (double)(j % 7) / 10.0;
}

/* Rows [first, first + count) of A (n columns) and b = A * true_x. */
static void generate(size_t n, size_t first, size_t count, double *a, double *b) {
  for (size_t r = 0; r < count; r++) {
    size_t i = first + r;
    double *row = a + r * n, sum = 0.0;
    for (size_t j = 0; j < n; j++) {
      row[j] = (i == j) ? (double)n : entry(i, j);
      sum += row[j] * true_x(j);
    }
    b[r] = sum;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  spmd_args args;
  int rc = spmd_parse_args(argc, argv, &args, usage);
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  size_t n = args.rows;
  hlb_spmd *s = NULL;
  if (spmd_create(&args, "jacobi", n, &s)) {
    MPI_Finalize();
    return 2;
  }
  size_t first, count;
  hlb_spmd_range(s, &first, &count);
  double *a = malloc(count * n * sizeof *a), *b = malloc(count * sizeof *b);
  double *x = calloc(n, sizeof *x), *x_local = NULL;
  int *counts = malloc((size_t)size * sizeof *counts),
      *displs = malloc((size_t)size * sizeof *displs);
  generate(n, first, count, a, b);
  hlb_spmd_register_dense(s, (void **)&a, n * sizeof *a);
  hlb_spmd_register_dense(s, (void **)&b, sizeof *b);

  spmd_start_clock();
  double t0 = MPI_Wtime();
  for (unsigned it = 0; it < args.iterations; it++) {
    hlb_spmd_range(s, &first, &count);
    spmd_layout_ints(s, size, counts, displs);
    x_local = realloc(x_local, (count ? count : 1) * sizeof *x_local);
    hlb_spmd_begin(s);
    double c0 = MPI_Wtime();
    for (size_t r = 0; r < count; r++) {
      const double *row = a + r * n;
      size_t i = first + r;
      double sum = b[r];
      for (size_t j = 0; j < n; j++)
        sum -= (j == i) ? 0.0 : row[j] * x[j];
      x_local[r] = sum / row[i];
    }
    spmd_inject_load(&args, rank, it, MPI_Wtime() - c0);
    MPI_Allgatherv(x_local, (int)count, MPI_DOUBLE, x, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    spmd_end_iteration(s, "jacobi", 2.0 * (double)n * (double)count, it);
  }
  double elapsed = MPI_Wtime() - t0;
  double err = 0.0;
  for (size_t j = 0; j < n; j++)
    err = fmax(err, fabs(x[j] - true_x(j)));
  spmd_report("jacobi", &args, s, elapsed, err, spmd_hash(x, n * sizeof *x), rank);
  hlb_spmd_destroy(s);
  free(a);
  free(b);
  free(x);
  free(x_local);
  free(counts);
  free(displs);
  MPI_Finalize();
  return err < 1e-6 ? 0 : 1;
}
