/* Per-type computational weights from measured loads (Issakhov et al. section 1, eq. 3-4): the
 * least-squares solution of A c ~= l with LAPACK DGELSD (minimum norm, SVD-based, so types
 * that cannot be told apart share their weight instead of blowing up). A negative weight is
 * not a cost, so unless the caller allows it the solution is projected properly: the
 * non-negative least-squares optimum by the Lawson-Hanson active-set method, each subproblem
 * again solved with DGELSD.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"

/* Scratch for the subproblems, allocated once per call. */
typedef struct ls_work {
  const double *A, *l;
  unsigned nd, nt;
  double rcond;
  double *a;      /* nd x k copy of the chosen columns (DGELSD overwrites it) */
  double *b;      /* max(nd, nt) right-hand side, overwritten with the solution */
  double *s;      /* min(nd, nt) singular values */
  unsigned *cols; /* nt indices of the chosen columns */
} ls_work;

/* Least squares on the columns with use[t] != 0 (all when use is NULL); z gets the solution on
 * those columns and 0 elsewhere. */
static int solve_columns(ls_work *ws, const unsigned char *use, double *z, unsigned *rank) {
  unsigned k = 0, *cols = ws->cols;
  for (unsigned t = 0; t < ws->nt; t++)
    if (!use || use[t]) cols[k++] = t;
  memset(z, 0, ws->nt * sizeof *z);
  if (rank) *rank = 0;
  if (k == 0) return 0;
  for (unsigned i = 0; i < ws->nd; i++)
    for (unsigned c = 0; c < k; c++)
      ws->a[(size_t)i * k + c] = ws->A[(size_t)i * ws->nt + cols[c]];
  size_t nb = ws->nd > k ? ws->nd : k;
  memset(ws->b, 0, nb * sizeof *ws->b);
  memcpy(ws->b, ws->l, ws->nd * sizeof *ws->b);
  lapack_int r = 0;
  lapack_int info = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, (lapack_int)ws->nd, (lapack_int)k, 1, ws->a,
                                   (lapack_int)k, ws->b, 1, ws->s, ws->rcond, &r);
  if (info != 0)
    return hlb__error(HLB_ENUMERIC, "weights: LAPACKE_dgelsd failed with info %d on %u x %u",
                      (int)info, ws->nd, k);
  for (unsigned c = 0; c < k; c++)
    z[cols[c]] = ws->b[c];
  if (rank) *rank = (unsigned)r;
  return 0;
}

/* g = A^T (l - A x): the negative gradient of the squared residual / 2. */
static void gradient(const ls_work *ws, const double *x, double *g) {
  memset(g, 0, ws->nt * sizeof *g);
  for (unsigned i = 0; i < ws->nd; i++) {
    const double *row = ws->A + (size_t)i * ws->nt;
    double r = ws->l[i];
    for (unsigned t = 0; t < ws->nt; t++)
      r -= row[t] * x[t];
    for (unsigned t = 0; t < ws->nt; t++)
      g[t] += row[t] * r;
  }
}

/* Column norms times the norm of l, scaled by a few ulps: a gradient entry below this is
 * rounding noise, not a reason to free a variable. */
static void gradient_tolerance(const ls_work *ws, double *tol) {
  double ln = 0.0;
  for (unsigned i = 0; i < ws->nd; i++)
    ln += ws->l[i] * ws->l[i];
  for (unsigned t = 0; t < ws->nt; t++) {
    double cn = 0.0;
    for (unsigned i = 0; i < ws->nd; i++)
      cn += ws->A[(size_t)i * ws->nt + t] * ws->A[(size_t)i * ws->nt + t];
    tol[t] = 64.0 * DBL_EPSILON * (double)(ws->nd + ws->nt) * sqrt(cn * ln);
  }
}

/* Lawson & Hanson, "Solving Least Squares Problems" (1974), algorithm NNLS, with the usual
 * guard that a column whose own coefficient comes out <= 0 right after it was freed is left
 * out until x changes (it cannot lower the residual; retrying it would loop). */
static int nnls(ls_work *ws, double *x, double *z, double *g, double *tol, unsigned char *use,
                unsigned char *blocked) {
  unsigned nt = ws->nt;
  memset(x, 0, nt * sizeof *x);
  memset(use, 0, nt);
  memset(blocked, 0, nt);
  gradient_tolerance(ws, tol);
  for (unsigned outer = 0; outer < 3 * nt + 3; outer++) {
    gradient(ws, x, g);
    unsigned pick = nt;
    for (unsigned t = 0; t < nt; t++)
      if (!use[t] && !blocked[t] && g[t] > tol[t] && (pick == nt || g[t] > g[pick])) pick = t;
    if (pick == nt) return 0; /* KKT: no free variable would lower the residual */
    use[pick] = 1;
    for (unsigned inner = 0;; inner++) {
      int rc = solve_columns(ws, use, z, NULL);
      if (rc) return rc;
      int all_pos = 1;
      for (unsigned t = 0; t < nt; t++)
        if (use[t] && !(z[t] > 0)) all_pos = 0;
      if (all_pos) {
        memcpy(x, z, nt * sizeof *x);
        memset(blocked, 0, nt);
        break;
      }
      if (inner == 0 && !(z[pick] > 0)) {
        use[pick] = 0;
        blocked[pick] = 1;
        break;
      }
      /* Step from x towards z until the first passive coefficient hits 0, and drop it. */
      double alpha = 1.0;
      unsigned hit = nt;
      for (unsigned t = 0; t < nt; t++)
        if (use[t] && !(z[t] > 0)) {
          double a = x[t] / (x[t] - z[t]);
          if (hit == nt || a < alpha) {
            alpha = a;
            hit = t;
          }
        }
      for (unsigned t = 0; t < nt; t++) {
        x[t] += alpha * (z[t] - x[t]);
        if (use[t] && (t == hit || !(x[t] > 0))) {
          use[t] = 0;
          x[t] = 0.0;
        }
      }
      memset(blocked, 0, nt);
      if (inner > nt) return hlb__error(HLB_ENUMERIC, "weights: NNLS inner loop did not settle");
    }
  }
  return hlb__error(HLB_ENUMERIC, "weights: NNLS did not converge in %u steps", 3 * nt + 3);
}

static int check_inputs(const double *A, unsigned nd, unsigned nt, const double *load,
                        const double *c_out) {
  if (nd == 0 || nt == 0)
    return hlb__error(HLB_EINVAL, "weights: need >= 1 domain and >= 1 type, got %u x %u", nd, nt);
  if (!A || !load || !c_out)
    return hlb__error(HLB_EINVAL, "weights: A, loads and output must not be NULL");
  if (nd > INT_MAX / nt || (size_t)nd * nt > (size_t)INT_MAX)
    return hlb__error(HLB_EINVAL, "weights: %u x %u is too large for LAPACK", nd, nt);
  for (unsigned i = 0; i < nd; i++) {
    for (unsigned t = 0; t < nt; t++) {
      double v = A[(size_t)i * nt + t];
      if (!isfinite(v) || v < 0)
        return hlb__error(HLB_EINVAL, "weights: A[%u][%u] must be a finite count >= 0, got %g", i,
                          t, v);
    }
    if (!isfinite(load[i]) || load[i] < 0)
      return hlb__error(HLB_EINVAL, "weights: load[%u] must be finite and >= 0, got %g", i,
                        load[i]);
  }
  return 0;
}

int hlb_weights_estimate(const double *A, unsigned n_domains, unsigned n_types, const double *load,
                         const hlb_weights_options *opt, double *c_out, unsigned *rank_out) {
  int rc = check_inputs(A, n_domains, n_types, load, c_out);
  if (rc) return rc;
  unsigned nd = n_domains, nt = n_types;
  size_t nb = nd > nt ? nd : nt, ns = nd < nt ? nd : nt;
  /* a, b, s for DGELSD; x, z, g, tol for NNLS; column indices; two byte masks. */
  size_t n_doubles = (size_t)nd * nt + nb + ns + 4 * (size_t)nt;
  double *mem = malloc(n_doubles * sizeof *mem);
  unsigned *cols = malloc(nt * sizeof *cols);
  unsigned char *use = malloc(2 * (size_t)nt);
  if (!mem || !cols || !use) {
    free(mem);
    free(cols);
    free(use);
    return hlb__error(HLB_ENOMEM, "weights: cannot allocate workspace for %u x %u", nd, nt);
  }
  ls_work ws = {.A = A,
                .l = load,
                .nd = nd,
                .nt = nt,
                .rcond = (opt && opt->rcond > 0) ? opt->rcond : HLB_WEIGHTS_RCOND,
                .a = mem,
                .cols = cols};
  ws.b = ws.a + (size_t)nd * nt;
  ws.s = ws.b + nb;
  double *x = ws.s + ns, *z = x + nt, *g = z + nt, *tol = g + nt;
  unsigned char *blocked = use + nt;

  unsigned rank = 0;
  rc = solve_columns(&ws, NULL, x, &rank);
  if (rc == 0 && rank == 0)
    rc = hlb__error(HLB_ENUMERIC, "weights: A (%u x %u) has rank 0: no domain holds any object", nd,
                    nt);
  int negative = 0;
  for (unsigned t = 0; rc == 0 && t < nt; t++)
    negative |= x[t] < 0;
  if (rc == 0 && negative && !(opt && opt->allow_negative))
    rc = nnls(&ws, x, z, g, tol, use, blocked);
  if (rc == 0) {
    memcpy(c_out, x, nt * sizeof *c_out);
    if (rank_out) *rank_out = rank;
  }
  free(mem);
  free(cols);
  free(use);
  return rc;
}

static int check_types(const unsigned *type, size_t m, unsigned n_types) {
  if (m == 0) return hlb__error(HLB_EINVAL, "weights: number of cells m must be > 0");
  if (n_types == 0) return hlb__error(HLB_EINVAL, "weights: number of types must be > 0");
  if (!type) return hlb__error(HLB_EINVAL, "weights: cell types must not be NULL");
  for (size_t k = 0; k < m; k++)
    if (type[k] >= n_types)
      return hlb__error(HLB_EINVAL, "weights: type[%zu] = %u, must be < %u types", k, type[k],
                        n_types);
  return 0;
}

int hlb_weights_counts(const unsigned *type, size_t m, unsigned n_types, const size_t *offsets,
                       unsigned N, double *A_out) {
  int rc = check_types(type, m, n_types);
  if (rc == 0) rc = hlb_ccp_check_offsets(offsets, N, m);
  if (rc) return rc;
  if (!A_out) return hlb__error(HLB_EINVAL, "weights: A_out must not be NULL");
  memset(A_out, 0, (size_t)N * n_types * sizeof *A_out);
  for (unsigned i = 0; i < N; i++)
    for (size_t k = offsets[i]; k < offsets[i + 1]; k++)
      A_out[(size_t)i * n_types + type[k]] += 1.0;
  return 0;
}

int hlb_weights_cells(const unsigned *type, size_t m, const double *c, unsigned n_types,
                      double *w_out) {
  int rc = check_types(type, m, n_types);
  if (rc) return rc;
  if (!c || !w_out) return hlb__error(HLB_EINVAL, "weights: c and w_out must not be NULL");
  for (unsigned t = 0; t < n_types; t++)
    if (!isfinite(c[t]) || c[t] < 0)
      return hlb__error(HLB_EINVAL, "weights: c[%u] must be finite and >= 0, got %g", t, c[t]);
  for (size_t k = 0; k < m; k++)
    w_out[k] = c[type[k]];
  return 0;
}
