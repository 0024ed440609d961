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

static void free_csr(hlb_csr *m) {
  free(m->row_ptr);
  free(m->col);
  free(m->val);
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

static void fill_dense(double *a, size_t first, size_t count, int row_doubles) {
  for (size_t r = 0; r < count; r++)
    for (int k = 0; k < row_doubles; k++)
      a[r * row_doubles + k] = cell(first + r, k);
}

static void check_dense(const double *a, size_t first, size_t count, int row_doubles,
                        const char *what) {
  for (size_t r = 0; r < count; r++)
    for (int k = 0; k < row_doubles; k++)
      CHECK(a[r * row_doubles + k] == cell(first + r, k), "%s: row %zu holds %g", what, first + r,
            a[r * row_doubles + k]);
}

/* A rank that cannot allocate its share makes the redistribution of all arrays fail on every
 * rank, naming that rank, with every array still holding its old rows; once memory is back,
 * the same redistribution succeeds. Buffers above `fail_above` bytes fail on the last rank,
 * which receives almost every row: with wide rows in the second dense array that array fails
 * (the first must not have moved either); with one-double rows only the CSR matrix's nonzeros
 * fail, after its row lengths were exchanged. */
static void test_out_of_memory(int rank, int size, size_t rows, int first_doubles,
                               int second_doubles, size_t fail_above) {
  int victim = size - 1;
  size_t *oc = calloc((size_t)size, sizeof *oc), *od = calloc((size_t)size, sizeof *od);
  size_t *nc = calloc((size_t)size, sizeof *nc), *nd = calloc((size_t)size, sizeof *nd);
  for (int r = 0; r < size; r++) { /* even, then all but one row per rank to the victim */
    oc[r] = rows / (size_t)size + ((size_t)r < rows % (size_t)size);
    od[r] = r ? od[r - 1] + oc[r - 1] : 0;
    nc[r] = r == victim ? rows - (size_t)(size - 1) : 1;
    nd[r] = (size_t)r;
  }
  double *first = malloc(oc[rank] * first_doubles * sizeof *first);
  double *second = malloc(oc[rank] * second_doubles * sizeof *second);
  fill_dense(first, od[rank], oc[rank], first_doubles);
  fill_dense(second, od[rank], oc[rank], second_doubles);
  hlb_csr m = make_csr(od[rank], oc[rank]);
  hlb_csr *csr[1] = {&m};
  hlb__dense_array dense[2] = {{(void **)&first, first_doubles * sizeof(double)},
                               {(void **)&second, second_doubles * sizeof(double)}};
  hlb__layout l = {oc, od, nc, nd, rank, size};
  if (rank == victim) hlb__redistribute_fail_above = fail_above;
  int rc = hlb__redistribute(MPI_COMM_WORLD, &l, dense, 2, csr, 1);
  char want[64];
  snprintf(want, sizeof want, rank == victim ? "out of memory" : "rank %d could not prepare",
           victim);
  CHECK(rc == HLB_ENOMEM, "out of memory: returned %d, not HLB_ENOMEM", rc);
  CHECK(strstr(hlb_last_error(), want), "out of memory: message \"%s\" lacks \"%s\"",
        hlb_last_error(), want);
  check_dense(first, od[rank], oc[rank], first_doubles, "after the failed move, first array");
  check_dense(second, od[rank], oc[rank], second_doubles, "after the failed move, second array");
  check_csr(&m, od[rank], oc[rank], rank);
  hlb__redistribute_fail_above = 0;
  rc = hlb__redistribute(MPI_COMM_WORLD, &l, dense, 2, csr, 1);
  CHECK(rc == 0, "retry after out of memory: %s", hlb_last_error());
  check_dense(first, nd[rank], nc[rank], first_doubles, "after the retry, first array");
  check_dense(second, nd[rank], nc[rank], second_doubles, "after the retry, second array");
  check_csr(&m, nd[rank], nc[rank], rank);
  free(first);
  free(second);
  free_csr(&m);
  free(oc);
  free(od);
  free(nc);
  free(nd);
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
  fill_dense(a, od[rank], oc[rank], ROW_DOUBLES);
  hlb_csr m = make_csr(od[rank], oc[rank]);
  double sum0 = checksum_dense(a, oc[rank]);
  for (int round = 0; round < 50; round++) {
    random_layout(&seed, rows, size, nc, nd);
    hlb__layout l = {oc, od, nc, nd, rank, size};
    hlb__dense_array dense = {(void **)&a, ROW_DOUBLES * sizeof *a};
    hlb_csr *csr = &m;
    CHECK(hlb__redistribute(MPI_COMM_WORLD, &l, &dense, 1, &csr, 1) == 0, "round %d: %s", round,
          hlb_last_error());
    char what[32];
    snprintf(what, sizeof what, "round %d rank %d", round, rank);
    check_dense(a, nd[rank], nc[rank], ROW_DOUBLES, what);
    check_csr(&m, nd[rank], nc[rank], rank);
    CHECK(checksum_dense(a, nc[rank]) == sum0, "round %d: checksum changed", round);
    memcpy(oc, nc, (size_t)size * sizeof *oc);
    memcpy(od, nd, (size_t)size * sizeof *od);
  }
  test_out_of_memory(rank, size, rows, ROW_DOUBLES, 100, 32 * rows); /* the wide array fails */
  test_out_of_memory(rank, size, rows, 1, 1, 12 * rows); /* only the CSR nonzeros fail */
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("redistribute: %d ranks, 50 random layouts and two out of memory, %s\n", size,
           all ? "FAILED" : "ok");
  free(a);
  free_csr(&m);
  free(oc);
  free(od);
  free(nc);
  free(nd);
  MPI_Finalize();
  return all ? 1 : 0;
}
