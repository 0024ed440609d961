#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "mpi/redistribute.h"

void hlb__overlap(const hlb__layout *l, int from, int to, size_t *first, size_t *n) {
  size_t a0 = l->old_displs[from], a1 = a0 + l->old_counts[from];
  size_t b0 = l->new_displs[to], b1 = b0 + l->new_counts[to];
  size_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  *first = lo;
  *n = hi > lo ? hi - lo : 0;
}

typedef struct plan {
  int *scount, *sdispl, *rcount, *rdispl;
} plan;

static void plan_free(plan *p) {
  free(p->scount);
  free(p->sdispl);
  free(p->rcount);
  free(p->rdispl);
  *p = (plan){0};
}

static int plan_alloc(plan *p, int size) {
  p->scount = calloc((size_t)size, sizeof(int));
  p->sdispl = calloc((size_t)size, sizeof(int));
  p->rcount = calloc((size_t)size, sizeof(int));
  p->rdispl = calloc((size_t)size, sizeof(int));
  if (!p->scount || !p->sdispl || !p->rcount || !p->rdispl) {
    plan_free(p);
    return hlb__error(HLB_ENOMEM, "redistribute: out of memory for %d ranks", size);
  }
  return 0;
}

static int fits_int(size_t v, const char *what) {
  if (v > (size_t)INT_MAX)
    return hlb__error(HLB_ERANGE, "redistribute: %s %zu exceeds MPI's int counts", what, v);
  return 0;
}

/* Row counts and displacements (in rows, relative to each rank's own buffers). */
static int plan_rows(const hlb__layout *l, plan *p) {
  int rc = plan_alloc(p, l->size);
  for (int q = 0; !rc && q < l->size; q++) {
    size_t first, n;
    hlb__overlap(l, l->rank, q, &first, &n);
    size_t off = n ? first - l->old_displs[l->rank] : 0;
    if ((rc = fits_int(n, "row count")) || (rc = fits_int(off, "row offset"))) break;
    p->scount[q] = (int)n;
    p->sdispl[q] = (int)off;
    hlb__overlap(l, q, l->rank, &first, &n);
    off = n ? first - l->new_displs[l->rank] : 0;
    if ((rc = fits_int(n, "row count")) || (rc = fits_int(off, "row offset"))) break;
    p->rcount[q] = (int)n;
    p->rdispl[q] = (int)off;
  }
  if (rc) plan_free(p);
  return rc;
}

static int mpi_check(int mpirc, const char *what) {
  if (mpirc == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mpirc, text, &len);
  return hlb__error(HLB_EMPI, "redistribute: %s failed: %s", what, text);
}

/* MPI_Alltoallv of rows of `row_bytes` bytes, counts and displacements in rows. */
static int alltoallv_rows(MPI_Comm comm, const plan *p, const void *src, void *dst,
                          size_t row_bytes) {
  MPI_Datatype row;
  int rc = fits_int(row_bytes, "row size");
  if (!rc)
    rc = mpi_check(MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row), "MPI_Type_contiguous");
  if (rc) return rc;
  MPI_Type_commit(&row);
  rc =
      mpi_check(MPI_Alltoallv(src, p->scount, p->sdispl, row, dst, p->rcount, p->rdispl, row, comm),
                "MPI_Alltoallv");
  MPI_Type_free(&row);
  return rc;
}

/* Fault injection for tests: a buffer larger than this many bytes fails to allocate (0: off). */
size_t hlb__redistribute_fail_above = 0;

static int injected_failure(size_t bytes) {
  return hlb__redistribute_fail_above && bytes > hlb__redistribute_fail_above;
}

static void *alloc_bytes(size_t bytes) {
  return injected_failure(bytes) ? NULL : malloc(bytes ? bytes : 1);
}

static void *grow_bytes(void *p, size_t bytes) {
  return injected_failure(bytes) ? NULL : realloc(p, bytes ? bytes : 1);
}

/* Collective: every rank learns whether any rank's preparation failed. A rank that failed keeps
 * its own error; the others fail naming it, so no rank is left waiting in a collective the
 * others never reach and every array stays in the old layout. */
static int agree(MPI_Comm comm, const hlb__layout *l, int rc) {
  int mine[2] = {rc ? l->rank + 1 : 0, -rc}, any[2] = {0, 0};
  MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, comm);
  if (rc || !any[0]) return rc;
  return hlb__error(-any[1], "redistribute: rank %d could not prepare the move (%s); no rows moved",
                    any[0] - 1, hlb_strerror(-any[1]));
}

/* A dense array's move, prepared (every buffer allocated) before any row travels. Only the
 * rows that change owner go through MPI_Alltoallv, into a buffer as large as what arrives; the
 * rows a rank keeps (one contiguous block, since every rank owns one range) are shifted to
 * their new offset and the arrivals copied around them. */
typedef struct dense_move {
  plan p;
  void **data;
  size_t row_bytes, n_old, n_new, kept, old_off, new_off;
  char *incoming;
} dense_move;

static int dense_prepare(const hlb__layout *l, void **data, size_t row_bytes, dense_move *mv) {
  *mv = (dense_move){.data = data, .row_bytes = row_bytes};
  int rc = plan_rows(l, &mv->p);
  if (rc) return rc;
  int me = l->rank;
  size_t kept_first;
  mv->n_old = l->old_counts[me];
  mv->n_new = l->new_counts[me];
  hlb__overlap(l, me, me, &kept_first, &mv->kept);
  mv->old_off = mv->kept ? kept_first - l->old_displs[me] : 0;
  mv->new_off = mv->kept ? kept_first - l->new_displs[me] : 0;
  /* Arrivals land in `incoming` in row order without the kept block's gap. */
  plan *p = &mv->p;
  p->scount[me] = p->rcount[me] = p->sdispl[me] = p->rdispl[me] = 0;
  for (int q = 0; q < l->size; q++)
    if (mv->kept && p->rcount[q] && (size_t)p->rdispl[q] >= mv->new_off)
      p->rdispl[q] -= (int)mv->kept;
  mv->incoming = alloc_bytes((mv->n_new - mv->kept) * row_bytes);
  if (mv->incoming && mv->n_new > mv->n_old) { /* a larger block holding the old rows is harmless */
    char *grown = grow_bytes(*data, mv->n_new * row_bytes);
    if (grown) {
      *data = grown;
    } else {
      free(mv->incoming);
      mv->incoming = NULL;
    }
  }
  if (!mv->incoming)
    return hlb__error(HLB_ENOMEM, "redistribute: rank %d out of memory for %zu rows of %zu bytes",
                      me, mv->n_new, row_bytes);
  return 0;
}

static int dense_commit(MPI_Comm comm, dense_move *mv) {
  char *buf = *mv->data;
  size_t rb = mv->row_bytes;
  int rc = alltoallv_rows(comm, &mv->p, buf, mv->incoming, rb);
  if (rc) return rc;
  if (mv->kept && mv->old_off != mv->new_off)
    memmove(buf + mv->new_off * rb, buf + mv->old_off * rb, mv->kept * rb);
  memcpy(buf, mv->incoming, mv->new_off * rb);
  memcpy(buf + (mv->new_off + mv->kept) * rb, mv->incoming + mv->new_off * rb,
         (mv->n_new - mv->new_off - mv->kept) * rb);
  if (mv->n_new < mv->n_old) { /* shrink last; keeping the larger block is harmless if it fails */
    char *shrunk = realloc(buf, (mv->n_new ? mv->n_new : 1) * rb);
    if (shrunk) *mv->data = shrunk;
  }
  return 0;
}

static void dense_release(dense_move *mv) {
  plan_free(&mv->p);
  free(mv->incoming);
  mv->incoming = NULL;
}

/* Counts in nonzeros for the values/columns exchange, from per-row lengths old and new. */
static int plan_nonzeros(const hlb__layout *l, const plan *rows, const int64_t *old_len,
                         const int64_t *new_len, plan *nz) {
  int rc = plan_alloc(nz, l->size);
  size_t soff = 0, roff = 0;
  for (int q = 0; !rc && q < l->size; q++) {
    size_t s = 0, r = 0;
    for (int i = 0; i < rows->scount[q]; i++)
      s += (size_t)old_len[rows->sdispl[q] + i];
    for (int i = 0; i < rows->rcount[q]; i++)
      r += (size_t)new_len[rows->rdispl[q] + i];
    if ((rc = fits_int(s, "nonzero count")) || (rc = fits_int(r, "nonzero count")) ||
        (rc = fits_int(soff + s, "nonzero offset")) || (rc = fits_int(roff + r, "nonzero offset")))
      break;
    nz->scount[q] = (int)s;
    nz->rcount[q] = (int)r;
    nz->sdispl[q] = (int)soff;
    nz->rdispl[q] = (int)roff;
    soff += s;
    roff += r;
  }
  if (rc) plan_free(nz);
  return rc;
}

static int exchange_typed(MPI_Comm comm, const plan *p, const void *src, void *dst,
                          MPI_Datatype t) {
  return mpi_check(MPI_Alltoallv(src, p->scount, p->sdispl, t, dst, p->rcount, p->rdispl, t, comm),
                   "MPI_Alltoallv");
}

/* A CSR matrix's move. Preparing it exchanges the row lengths (the new owner needs them to size
 * its arrays; the matrix is not touched) and allocates the new arrays. */
typedef struct csr_move {
  hlb_csr *m;
  plan rows, nz;
  size_t n_new;
  int64_t *old_len, *new_len, *row_ptr, *col;
  double *val;
} csr_move;

static int csr_prepare_lengths(const hlb__layout *l, hlb_csr *m, csr_move *mv) {
  *mv = (csr_move){.m = m, .n_new = l->new_counts[l->rank]};
  size_t n_old = l->old_counts[l->rank];
  int rc = plan_rows(l, &mv->rows);
  if (rc) return rc;
  mv->old_len = alloc_bytes(n_old * sizeof *mv->old_len);
  mv->new_len = alloc_bytes(mv->n_new * sizeof *mv->new_len);
  if (!mv->old_len || !mv->new_len)
    return hlb__error(HLB_ENOMEM, "redistribute: rank %d out of memory for %zu CSR rows", l->rank,
                      n_old > mv->n_new ? n_old : mv->n_new);
  for (size_t i = 0; i < n_old; i++)
    mv->old_len[i] = m->row_ptr[i + 1] - m->row_ptr[i];
  return 0;
}

/* Collective (only once every rank's lengths are prepared): lengths travel, then the new
 * arrays are allocated. */
static int csr_prepare_arrays(MPI_Comm comm, const hlb__layout *l, csr_move *mv) {
  int rc = alltoallv_rows(comm, &mv->rows, mv->old_len, mv->new_len, sizeof(int64_t));
  if (!rc) rc = plan_nonzeros(l, &mv->rows, mv->old_len, mv->new_len, &mv->nz);
  if (rc) return rc;
  size_t nnz_new = 0;
  for (size_t i = 0; i < mv->n_new; i++)
    nnz_new += (size_t)mv->new_len[i];
  mv->row_ptr = alloc_bytes((mv->n_new + 1) * sizeof *mv->row_ptr);
  mv->col = alloc_bytes(nnz_new * sizeof *mv->col);
  mv->val = alloc_bytes(nnz_new * sizeof *mv->val);
  if (!mv->row_ptr || !mv->col || !mv->val)
    return hlb__error(HLB_ENOMEM, "redistribute: rank %d out of memory for %zu nonzeros", l->rank,
                      nnz_new);
  return 0;
}

static int csr_commit(MPI_Comm comm, csr_move *mv) {
  hlb_csr *m = mv->m;
  int rc = exchange_typed(comm, &mv->nz, m->col, mv->col, MPI_INT64_T);
  if (!rc) rc = exchange_typed(comm, &mv->nz, m->val, mv->val, MPI_DOUBLE);
  if (rc) return rc;
  mv->row_ptr[0] = 0;
  for (size_t i = 0; i < mv->n_new; i++)
    mv->row_ptr[i + 1] = mv->row_ptr[i] + mv->new_len[i];
  int64_t *old_ptr = m->row_ptr, *old_col = m->col;
  double *old_val = m->val;
  m->row_ptr = mv->row_ptr;
  m->col = mv->col;
  m->val = mv->val;
  mv->row_ptr = old_ptr; /* released with the move */
  mv->col = old_col;
  mv->val = old_val;
  return 0;
}

static void csr_release(csr_move *mv) {
  plan_free(&mv->rows);
  plan_free(&mv->nz);
  free(mv->old_len);
  free(mv->new_len);
  free(mv->row_ptr);
  free(mv->col);
  free(mv->val);
  *mv = (csr_move){0};
}

/* Every array is prepared on every rank before any row travels, and the ranks agree on it:
 * a rank that runs out of memory makes the whole redistribution fail on every rank with the
 * arrays untouched, instead of leaving the others in MPI_Alltoallv or the arrays half moved.
 * The collectives run in the same order on every rank whatever fails. */
int hlb__redistribute(MPI_Comm comm, const hlb__layout *l, const hlb__dense_array *dense,
                      unsigned n_dense, hlb_csr *const *csr, unsigned n_csr) {
  dense_move *dm = calloc(n_dense ? n_dense : 1, sizeof *dm);
  csr_move *cm = calloc(n_csr ? n_csr : 1, sizeof *cm);
  int rc = dm && cm ? 0
                    : hlb__error(HLB_ENOMEM, "redistribute: out of memory for %u arrays",
                                 n_dense + n_csr);
  for (unsigned i = 0; !rc && i < n_dense; i++)
    rc = dense_prepare(l, dense[i].data, dense[i].row_bytes, &dm[i]);
  for (unsigned i = 0; i < n_csr; i++) {
    if (!rc) rc = csr_prepare_lengths(l, csr[i], &cm[i]);
    rc = agree(comm, l, rc);
    if (!rc) rc = csr_prepare_arrays(comm, l, &cm[i]);
  }
  rc = agree(comm, l, rc);
  for (unsigned i = 0; !rc && i < n_dense; i++)
    rc = dense_commit(comm, &dm[i]);
  for (unsigned i = 0; !rc && i < n_csr; i++)
    rc = csr_commit(comm, &cm[i]);
  for (unsigned i = 0; dm && i < n_dense; i++)
    dense_release(&dm[i]);
  for (unsigned i = 0; cm && i < n_csr; i++)
    csr_release(&cm[i]);
  free(dm);
  free(cm);
  return rc;
}
