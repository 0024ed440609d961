/* Conjugate gradient on a sparse SPD matrix in CSR, rows split over MPI ranks and rebalanced
 * by hlb's SPMD interface (FLEX-MPI's second benchmark, FLEX-MPI section 4).
 *
 *   mpirun -np 2 ./hlb_cg --mtx matrix.mtx --iters 500        (a Matrix Market file)
 *   mpirun -np 2 ./hlb_cg --rows 100 --iters 500              (a generated 100x100 grid)
 *
 * The generated matrix is the 5-point Laplacian of a grid plus long-range couplings on every
 * fifth row, so rows differ in cost; nonzeros per row are given to hlb as row weights. The
 * right-hand side is A * 1, so the solution is known and checked. When the residual falls
 * below 1e-10 the solve restarts from x = 0, so a long run keeps doing the same work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mmio.h"
#include "spmd_common.h"

static const char usage[] =
    "usage: hlb_cg (--mtx FILE | --rows GRID_SIDE) [--iters K] [--policy P] [--params S]\n"
    "              [--interval I] [--inject-rank R --inject-from I --inject-to J --inject-frac "
    "F]\n"
    "              [--counts C0,C1,...]  (rows per rank to start from; default even)\n";

typedef struct entry {
  int64_t col;
  double val;
} entry;

static int by_col(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return x->col < y->col ? -1 : (x->col > y->col);
}

/* Row i of the generated matrix (n = side^2) into e (at most 8 entries); returns the count. */
static int generated_row(size_t side, size_t i, entry *e) {
  size_t n = side * side, shift = n / 3, gx = i % side, gy = i / side;
  int k = 0;
  double diag = 4.0;
  if (gx > 0) e[k++] = (entry){(int64_t)(i - 1), -1.0};
  if (gx + 1 < side) e[k++] = (entry){(int64_t)(i + 1), -1.0};
  if (gy > 0) e[k++] = (entry){(int64_t)(i - side), -1.0};
  if (gy + 1 < side) e[k++] = (entry){(int64_t)(i + side), -1.0};
  size_t up = (i + shift) % n, down = (i + n - shift) % n;
  if (shift && i % 5 == 0 && up != i) {
    e[k++] = (entry){(int64_t)up, -0.5};
    diag += 0.5;
  }
  if (shift && down % 5 == 0 && down != i) {
    e[k++] = (entry){(int64_t)down, -0.5};
    diag += 0.5;
  }
  e[k++] = (entry){(int64_t)i, diag};
  qsort(e, (size_t)k, sizeof *e, by_col);
  return k;
}

static int generate(size_t side, size_t first, size_t count, hlb_csr *m) {
  m->row_ptr = malloc((count + 1) * sizeof *m->row_ptr);
  m->col = malloc((count * 8 + 1) * sizeof *m->col);
  m->val = malloc((count * 8 + 1) * sizeof *m->val);
  if (!m->row_ptr || !m->col || !m->val) return -1;
  m->row_ptr[0] = 0;
  for (size_t r = 0; r < count; r++) {
    entry e[8];
    int k = generated_row(side, first + r, e);
    for (int q = 0; q < k; q++) {
      m->col[m->row_ptr[r] + q] = e[q].col;
      m->val[m->row_ptr[r] + q] = e[q].val;
    }
    m->row_ptr[r + 1] = m->row_ptr[r] + k;
  }
  return 0;
}

static double dot(const double *a, const double *b, size_t n) {
  double local = 0.0, global = 0.0;
  for (size_t i = 0; i < n; i++)
    local += a[i] * b[i];
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global;
}

static void spmv(const hlb_csr *m, size_t count, const double *x_full, double *y) {
  for (size_t r = 0; r < count; r++) {
    double s = 0.0;
    for (int64_t k = m->row_ptr[r]; k < m->row_ptr[r + 1]; k++)
      s += m->val[k] * x_full[m->col[k]];
    y[r] = s;
  }
}

/* max |x - 1| over all ranks (the exact solution is all ones). */
static double max_error(const double *x, size_t count) {
  double local = 0.0, global = 0.0;
  for (size_t r = 0; r < count; r++)
    local = fmax(local, fabs(x[r] - 1.0));
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return global;
}

typedef struct vectors {
  double *b, *x, *r, *p;
} vectors;

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  spmd_args args;
  int rc = spmd_parse_args(argc, argv, &args, usage);
  size_t n = 0, cols = 0, entries = 0;
  if (!rc && args.mtx)
    rc = mm_read_size(args.mtx, &n, &cols, &entries) ? 2 : 0;
  else if (!rc)
    n = args.rows * args.rows;
  if (!rc && args.mtx && n != cols) {
    fprintf(stderr, "%s: matrix must be square, got %zux%zu\n", args.mtx, n, cols);
    rc = 2;
  }
  hlb_spmd *s = NULL;
  if (!rc && spmd_create(&args, "cg", n, &s)) rc = 2;
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  size_t first, count;
  hlb_spmd_range(s, &first, &count);
  hlb_csr m = {0};
  if ((args.mtx ? mm_read_rows(args.mtx, first, count, &m) : generate(args.rows, first, count, &m)))
    MPI_Abort(MPI_COMM_WORLD, 2);
  double *w = malloc((count + 1) * sizeof *w);
  for (size_t r = 0; r < count; r++)
    w[r] = (double)(m.row_ptr[r + 1] - m.row_ptr[r]);
  hlb_spmd_set_row_weights(s, w);
  free(w);

  /* b = A * 1, computed once from the local rows. */
  double *ones = malloc(n * sizeof *ones), *p_full = calloc(n, sizeof *p_full);
  for (size_t j = 0; j < n; j++)
    ones[j] = 1.0;
  vectors v;
  v.b = malloc((count + 1) * sizeof(double));
  v.x = calloc(count + 1, sizeof(double));
  v.r = malloc((count + 1) * sizeof(double));
  v.p = malloc((count + 1) * sizeof(double));
  spmv(&m, count, ones, v.b);
  for (size_t r = 0; r < count; r++)
    v.r[r] = v.p[r] = v.b[r];
  hlb_spmd_register_csr(s, &m);
  double **vec[4] = {&v.b, &v.x, &v.r, &v.p};
  for (int k = 0; k < 4; k++)
    hlb_spmd_register_dense(s, (void **)vec[k], sizeof(double));
  int *counts = malloc((size_t)size * sizeof *counts),
      *displs = malloc((size_t)size * sizeof *displs);
  double *q = malloc((count + 1) * sizeof *q);
  double rr = dot(v.r, v.r, count), bb = rr;
  unsigned restarts = 0;
  double converged_err = INFINITY;

  spmd_start_clock();
  double t0 = MPI_Wtime();
  for (unsigned it = 0; it < args.iterations; it++) {
    hlb_spmd_range(s, &first, &count);
    spmd_layout_ints(s, size, counts, displs);
    q = realloc(q, (count + 1) * sizeof *q);
    hlb_spmd_begin(s);
    double c0 = MPI_Wtime();
    MPI_Allgatherv(v.p, (int)count, MPI_DOUBLE, p_full, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    spmv(&m, count, p_full, q);
    spmd_inject_load(&args, rank, it, MPI_Wtime() - c0);
    double alpha = rr / dot(v.p, q, count);
    for (size_t r = 0; r < count; r++) {
      v.x[r] += alpha * v.p[r];
      v.r[r] -= alpha * q[r];
    }
    double rr_new = dot(v.r, v.r, count);
    if (rr_new < 1e-20 * bb) { /* converged: restart so long runs keep the same work */
      restarts++;
      converged_err = max_error(v.x, count);
      for (size_t r = 0; r < count; r++) {
        v.x[r] = 0.0;
        v.r[r] = v.p[r] = v.b[r];
      }
      rr_new = bb;
    } else {
      for (size_t r = 0; r < count; r++)
        v.p[r] = v.r[r] + (rr_new / rr) * v.p[r];
    }
    rr = rr_new;
    spmd_end_iteration(s, "cg", 0.0, it);
  }
  double elapsed = MPI_Wtime() - t0;
  /* Error against the known solution x = 1: at the last convergence, or now. */
  hlb_spmd_range(s, &first, &count);
  double err = restarts > 0 ? converged_err : max_error(v.x, count);
  spmd_report("cg", &args, s, elapsed, err, 0, rank);
  hlb_spmd_destroy(s);
  free(m.row_ptr);
  free(m.col);
  free(m.val);
  free(v.b);
  free(v.x);
  free(v.r);
  free(v.p);
  free(q);
  free(ones);
  free(p_full);
  free(counts);
  free(displs);
  MPI_Finalize();
  return err < 1e-6 ? 0 : 1;
}
