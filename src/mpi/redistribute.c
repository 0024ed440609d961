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

/* Exchange rows of `row_bytes` bytes from `src` into a new buffer of new_counts[rank] rows. */
static int exchange(MPI_Comm comm, const hlb__layout *l, const plan *p, const void *src,
                    size_t row_bytes, void **dst_out) {
  size_t n_new = l->new_counts[l->rank];
  void *dst = malloc(n_new ? n_new * row_bytes : 1);
  if (!dst) return hlb__error(HLB_ENOMEM, "redistribute: out of memory for %zu rows", n_new);
  int rc = alltoallv_rows(comm, p, src, dst, row_bytes);
  if (rc) {
    free(dst);
    return rc;
  }
  *dst_out = dst;
  return 0;
}

/* Dense rows move in place: the rows a rank keeps (one contiguous block, since every rank owns
 * one range) never travel. Only the rows that change owner go through MPI_Alltoallv, into a
 * buffer as large as what arrives; the kept block is then shifted to its new offset and the
 * arrivals copied around it. Moving a few hundred of 2000 rows of 32 KB used to copy all of
 * them through a fresh buffer. */
int hlb__redistribute_dense(MPI_Comm comm, const hlb__layout *l, void **data, size_t row_bytes) {
  plan p;
  int rc = plan_rows(l, &p);
  if (rc) return rc;
  int me = l->rank;
  size_t n_old = l->old_counts[me], n_new = l->new_counts[me], kept_first, kept;
  hlb__overlap(l, me, me, &kept_first, &kept);
  size_t old_off = kept ? kept_first - l->old_displs[me] : 0;
  size_t new_off = kept ? kept_first - l->new_displs[me] : 0;
  /* Arrivals land in `incoming` in row order without the kept block's gap. */
  p.scount[me] = p.rcount[me] = p.sdispl[me] = p.rdispl[me] = 0;
  for (int q = 0; q < l->size; q++)
    if (kept && p.rcount[q] && (size_t)p.rdispl[q] >= new_off) p.rdispl[q] -= (int)kept;
  size_t n_in = n_new - kept;
  char *incoming = malloc(n_in ? n_in * row_bytes : 1);
  char *buf = *data;
  if (incoming && n_new > n_old) { /* grow first: a failure here moves nothing */
    char *grown = realloc(buf, n_new * row_bytes);
    if (grown)
      *data = buf = grown;
    else {
      free(incoming);
      incoming = NULL;
    }
  }
  if (!incoming) {
    plan_free(&p);
    return hlb__error(HLB_ENOMEM, "redistribute: out of memory for %zu rows", n_new);
  }
  rc = alltoallv_rows(comm, &p, buf, incoming, row_bytes);
  plan_free(&p);
  if (!rc) {
    if (kept && old_off != new_off)
      memmove(buf + new_off * row_bytes, buf + old_off * row_bytes, kept * row_bytes);
    memcpy(buf, incoming, new_off * row_bytes);
    memcpy(buf + (new_off + kept) * row_bytes, incoming + new_off * row_bytes,
           (n_new - new_off - kept) * row_bytes);
    if (n_new < n_old) { /* shrink last; keeping the larger block is harmless if it fails */
      char *shrunk = realloc(buf, (n_new ? n_new : 1) * row_bytes);
      if (shrunk) *data = shrunk;
    }
  }
  free(incoming);
  return rc;
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

int hlb__redistribute_csr(MPI_Comm comm, const hlb__layout *l, hlb_csr *m) {
  size_t n_old = l->old_counts[l->rank], n_new = l->new_counts[l->rank];
  int64_t *old_len = malloc((n_old ? n_old : 1) * sizeof *old_len);
  if (!old_len) return hlb__error(HLB_ENOMEM, "redistribute: out of memory for %zu rows", n_old);
  for (size_t i = 0; i < n_old; i++)
    old_len[i] = m->row_ptr[i + 1] - m->row_ptr[i];
  plan rows = {0};
  int rc = plan_rows(l, &rows);
  void *new_len_v = NULL;
  if (!rc) rc = exchange(comm, l, &rows, old_len, sizeof(int64_t), &new_len_v);
  int64_t *new_len = new_len_v;
  plan nz = {0};
  if (!rc) rc = plan_nonzeros(l, &rows, old_len, new_len, &nz);
  size_t nnz_new = 0;
  for (size_t i = 0; !rc && i < n_new; i++)
    nnz_new += (size_t)new_len[i];
  int64_t *row_ptr = rc ? NULL : malloc((n_new + 1) * sizeof *row_ptr);
  int64_t *col = rc ? NULL : malloc((nnz_new ? nnz_new : 1) * sizeof *col);
  double *val = rc ? NULL : malloc((nnz_new ? nnz_new : 1) * sizeof *val);
  if (!rc && (!row_ptr || !col || !val))
    rc = hlb__error(HLB_ENOMEM, "redistribute: out of memory for %zu nonzeros", nnz_new);
  if (!rc) rc = exchange_typed(comm, &nz, m->col, col, MPI_INT64_T);
  if (!rc) rc = exchange_typed(comm, &nz, m->val, val, MPI_DOUBLE);
  if (!rc) {
    row_ptr[0] = 0;
    for (size_t i = 0; i < n_new; i++)
      row_ptr[i + 1] = row_ptr[i] + new_len[i];
    free(m->row_ptr);
    free(m->col);
    free(m->val);
    m->row_ptr = row_ptr;
    m->col = col;
    m->val = val;
    row_ptr = NULL;
    col = NULL;
    val = NULL;
  }
  free(row_ptr);
  free(col);
  free(val);
  plan_free(&nz);
  plan_free(&rows);
  free(new_len);
  free(old_len);
  return rc;
}
