/* Redistribution moves every row exactly once: dense rows and CSR rows are sent through many
 * random old -> new layouts; each row's content encodes its global index, so a row lost,
 * duplicated or misplaced is caught, and global checksums must not change. Run under mpirun
 * with 2-4 ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/redistribute.h"

#define ROW_DOUBLES 3

#include "mpi/check.h"

static double cell(size_t row, int k) {
  return (double)row * 10.0 + k;
}

/* Random layout of `rows` over `size` ranks (the same on every rank: same seed). */
static void random_layout(unsigned *seed, size_t rows, int size, size_t *counts, size_t *displs) {
  size_t left = rows, at = 0;
  for (int r = 0; r < size; r++) {
    size_t c = r + 1 == size ? left : (size_t)(rand_r(seed) % (left + 1));
    counts[r] = c;
    displs[r] = at;
    at += c;
    left -= c;
  }
}

/* Row i of the test CSR matrix: (i % 4) + 1 entries, columns i, i+1, ..., values col + 0.5. */
static int64_t row_len(size_t i) {
  return (int64_t)(i % 4) + 1;
}

static hlb_csr make_csr(size_t first, size_t count) {
  hlb_csr m;
  m.row_ptr = malloc((count + 1) * sizeof *m.row_ptr);
  m.row_ptr[0] = 0;
  for (size_t r = 0; r < count; r++)
    m.row_ptr[r + 1] = m.row_ptr[r] + row_len(first + r);
  size_t nnz = (size_t)m.row_ptr[count];
  m.col = malloc((nnz + 1) * sizeof *m.col);
  m.val = malloc((nnz + 1) * sizeof *m.val);
  for (size_t r = 0; r < count; r++)
    for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; k++) {
      m.col[k] = (int64_t)(first + r) + (k - m.row_ptr[r]);
      m.val[k] = (double)m.col[k] + 0.5;
    }
  return m;
}

static void check_csr(const hlb_csr *m, size_t first, size_t count, int rank) {
  CHECK(m->row_ptr[0] == 0, "rank %d: csr row_ptr[0] = %lld", rank, (long long)m->row_ptr[0]);
  for (size_t r = 0; r < count; r++) {
    size_t i = first + r;
    CHECK(m->row_ptr[r + 1] - m->row_ptr[r] == row_len(i), "rank %d: row %zu has %lld entries",
          rank, i, (long long)(m->row_ptr[r + 1] - m->row_ptr[r]));
    for (int64_t k = m->row_ptr[r]; k < m->row_ptr[r + 1]; k++) {
      int64_t want = (int64_t)i + (k - m->row_ptr[r]);
      CHECK(m->col[k] == want && m->val[k] == (double)want + 0.5,
            "rank %d: row %zu entry %lld: col %lld val %g", rank, i, (long long)k,
            (long long)m->col[k], m->val[k]);
    }
  }
}

static double checksum_dense(const double *a, size_t count) {
  double s = 0.0, g = 0.0;
  for (size_t i = 0; i < count * ROW_DOUBLES; i++)
    s += a[i];
  MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return g;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t rows = 257;
  size_t *oc = calloc((size_t)size, sizeof *oc), *od = calloc((size_t)size, sizeof *od);
  size_t *nc = calloc((size_t)size, sizeof *nc), *nd = calloc((size_t)size, sizeof *nd);
  unsigned seed = 12345;
  random_layout(&seed, rows, size, oc, od);
  double *a = malloc((oc[rank] + 1) * ROW_DOUBLES * sizeof *a);
  for (size_t r = 0; r < oc[rank]; r++)
    for (int k = 0; k < ROW_DOUBLES; k++)
      a[r * ROW_DOUBLES + k] = cell(od[rank] + r, k);
  hlb_csr m = make_csr(od[rank], oc[rank]);
  double sum0 = checksum_dense(a, oc[rank]);
  for (int round = 0; round < 50; round++) {
    random_layout(&seed, rows, size, nc, nd);
    hlb__layout l = {oc, od, nc, nd, rank, size};
    CHECK(hlb__redistribute_dense(MPI_COMM_WORLD, &l, (void **)&a, ROW_DOUBLES * sizeof *a) == 0,
          "dense: %s", hlb_last_error());
    CHECK(hlb__redistribute_csr(MPI_COMM_WORLD, &l, &m) == 0, "csr: %s", hlb_last_error());
    for (size_t r = 0; r < nc[rank]; r++)
      for (int k = 0; k < ROW_DOUBLES; k++)
        CHECK(a[r * ROW_DOUBLES + k] == cell(nd[rank] + r, k), "round %d rank %d row %zu: %g",
              round, rank, nd[rank] + r, a[r * ROW_DOUBLES + k]);
    check_csr(&m, nd[rank], nc[rank], rank);
    CHECK(checksum_dense(a, nc[rank]) == sum0, "round %d: checksum changed", round);
    memcpy(oc, nc, (size_t)size * sizeof *oc);
    memcpy(od, nd, (size_t)size * sizeof *od);
  }
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("redistribute: %d ranks, 50 random layouts, %s\n", size, all ? "FAILED" : "ok");
  free(a);
  free(m.row_ptr);
  free(m.col);
  free(m.val);
  free(oc);
  free(od);
  free(nc);
  free(nd);
  MPI_Finalize();
  return all ? 1 : 0;
}
