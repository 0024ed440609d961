/* Fitting a hlb_model: every allowed subset of the 8 basis terms is solved from the weighted
 * sufficient statistics (PLB-HeC III.B, PLB-HAC 3.1: least squares over {1, u, u^2, u^3,
 * e^u, ln u, u e^u, u ln u}), scored by AICc or leave-one-out error, and the best subset whose
 * curve is positive and non-decreasing on the range to be predicted wins. The transfer line
 * G(x) = a x + b (a, b >= 0) is fitted the same way from the transfer times. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "model/model_internal.h"

/* The residual of a subset is y'Wy - b'X'Wy, a difference that cannot resolve a
 * residual below a few ulps of y'Wy; clamping there makes exact fits tie, so the criterion's
 * penalty (fewest terms) decides among them instead of rounding noise. */
#define HLB__RSS_FLOOR_REL 1e-12
/* Grid tolerances of the monotonicity test: a relative dip smaller than rounding is not a
 * decrease. */
#define HLB__MONO_DIP_REL 1e-12
#define HLB__MONO_SLOPE_REL 1e-9
/* A leave-one-out leverage this close to 1 means a sample is fitted only by itself: its
 * prediction error is undefined and the subset is not scored. */
#define HLB__LOO_LEVERAGE_MAX (1.0 - 1e-9)

/* The scaled k x k normal matrix (unit diagonal: the Jacobi scaling keeps columns as different
 * as u^3 at u = 1e-9 and e^u comparable) and right-hand side. Returns 1 for a zero column. */
static int scaled_system(const hlb__lsq *s, const int *idx, int k, double *a, double *c,
                         double *d) {
  for (int i = 0; i < k; i++) {
    d[i] = sqrt(s->xtx[idx[i]][idx[i]]);
    if (!(d[i] > 0.0) || !isfinite(d[i])) return 1;
  }
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++)
      a[i + j * k] = s->xtx[idx[i]][idx[j]] / (d[i] * d[j]);
    c[i] = s->xty[idx[i]] / d[i];
  }
  return 0;
}

/* Inverse of the unscaled submatrix from the Cholesky factor in r (destroyed). */
static int leverage_inverse(double *r, const double *d, int k, double *ainv) {
  lapack_int info = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'U', k, r, k);
  if (info != 0)
    return info < 0
               ? hlb__error(HLB_ENUMERIC, "model fit: dpotri argument %d is illegal", (int)-info)
               : 1;
  for (int i = 0; i < k; i++)
    for (int j = 0; j < k; j++) {
      double v = i <= j ? r[i + j * k] : r[j + i * k];
      ainv[i * k + j] = v / (d[i] * d[j]);
    }
  return 0;
}

/* Cholesky factor R (A = R'R) of the k x k column-major matrix in a, in its upper triangle,
 * in place; 1 when A is not positive definite. LAPACK's column-by-column order (dpotf2).
 * Written out because k <= 8: through OpenBLAS, dpotrf and dpotrs cost more in dispatch and
 * buffer allocation than in arithmetic, and a fit solves up to 255 subsets (with 10^4 PUs
 * the policy hlb spent 70 % of its time there, docs/mpi-executor.md). */
static int cholesky_small(double *a, int k) {
  for (int j = 0; j < k; j++) {
    double ajj = a[j + j * k];
    for (int i = 0; i < j; i++)
      ajj -= a[i + j * k] * a[i + j * k];
    if (!(ajj > 0.0)) return 1;
    ajj = sqrt(ajj);
    a[j + j * k] = ajj;
    double inv = 1.0 / ajj;
    for (int c = j + 1; c < k; c++) {
      double v = a[j + c * k];
      for (int i = 0; i < j; i++)
        v -= a[i + j * k] * a[i + c * k];
      a[j + c * k] = v * inv;
    }
  }
  return 0;
}

/* Solve R'R b = b in place with the factor of cholesky_small (dpotrs: R' forward, R back). */
static void cholesky_solve_small(const double *r, int k, double *b) {
  for (int i = 0; i < k; i++) {
    double v = b[i];
    for (int j = 0; j < i; j++)
      v -= r[j + i * k] * b[j];
    b[i] = v / r[i + i * k];
  }
  for (int i = k - 1; i >= 0; i--) {
    double v = b[i];
    for (int j = i + 1; j < k; j++)
      v -= r[i + j * k] * b[j];
    b[i] = v / r[i + i * k];
  }
}

int hlb__lsq_solve(const hlb__lsq *s, unsigned mask, double tol, double coef[HLB__NT], double *rss,
                   double *ainv) {
  int idx[HLB__NT], k = 0;
  for (int t = 0; t < HLB__NT; t++)
    if (mask & (1u << t)) idx[k++] = t;
  double a[HLB__NT * HLB__NT], c[HLB__NT], d[HLB__NT];
  if (k == 0 || scaled_system(s, idx, k, a, c, d)) return 1;
  if (cholesky_small(a, k)) return 1;
  /* With a unit diagonal, R_jj^2 is the share of column j not explained by the columns
   * before it: a tiny pivot means a redundant column and coefficients that cancel. */
  for (int i = 0; i < k; i++)
    if (a[i + i * k] * a[i + i * k] < tol) return 1;
  double b[HLB__NT];
  memcpy(b, c, sizeof(double) * (size_t)k);
  cholesky_solve_small(a, k, b);
  /* RSS = y'Wy - b'X'Wy at the least-squares solution; rounding of this difference is what
   * HLB__RSS_FLOOR_REL absorbs. */
  double explained = 0.0;
  for (int i = 0; i < k; i++)
    explained += b[i] * c[i];
  *rss = s->yty - explained;
  memset(coef, 0, sizeof(double) * HLB__NT);
  for (int i = 0; i < k; i++)
    coef[idx[i]] = b[i] / d[i];
  return ainv ? leverage_inverse(a, d, k, ainv) : 0;
}

/* Compute part only: the transfer line is added after the search and is non-decreasing. */
static double compute_slope(const hlb_curve *c, double x) {
  return hlb_curve_slope(c, x) - c->transfer_per_item;
}

/* The points of a monotonicity grid: n from x_lo to x_max, geometric or even, the last
 * exactly x_max. */
static double grid_x(double x_lo, double x_max, unsigned n, int geometric, unsigned i) {
  double f = n > 1 ? (double)i / (double)(n - 1) : 1.0;
  double x = geometric ? x_lo * pow(x_max / x_lo, f) : x_lo + (x_max - x_lo) * f;
  return i == n - 1 ? x_max : x;
}

/* The curve at x is positive, finite, not below prev (rounding aside), not falling. */
static int grid_point_ok(const hlb_curve *c, double x, double *prev) {
  double y = hlb_curve_compute(c, x);
  if (!(y > 0.0) || !isfinite(y)) return 0;
  if (y < *prev - HLB__MONO_DIP_REL * fabs(*prev)) return 0;
  if (compute_slope(c, x) * x < -HLB__MONO_SLOPE_REL * y) return 0;
  *prev = y;
  return 1;
}

static int grid_ok(const hlb_curve *c, double x_lo, double x_max, unsigned n, int geometric) {
  double prev = -INFINITY;
  for (unsigned i = 0; i < n; i++)
    if (!grid_point_ok(c, grid_x(x_lo, x_max, n, geometric, i), &prev)) return 0;
  return 1;
}

int hlb__curve_monotone(const hlb_curve *c, double x_lo, double x_max, unsigned grid_points) {
  if (x_lo >= x_max) return grid_ok(c, x_max, x_max, 1, 0);
  return grid_ok(c, x_lo, x_max, grid_points, 1) && grid_ok(c, x_lo, x_max, grid_points, 0);
}

/* hlb__curve_monotone for many curves on one range, from points computed once: each grid
 * point's x, u = x / scale, e^u and ln u, so that checking a candidate costs no pow, exp or log
 * (they were half of a monotonicity check). The curve and its slope are evaluated with the very
 * expressions of hlb_curve_compute and hlb_curve_slope on those values, so every check gives the
 * same answer as hlb__curve_monotone's. Every model of one balancer fits on the same range and
 * scale ((1, n_items], scale n_items), so the last grid is kept per thread and reused: with
 * 10^4 PUs the points were computed again in every fit (docs/mpi-executor.md). Up to
 * MONO_GRID_MAX points each; beyond, computed per curve. */
#define MONO_GRID_MAX 256
/* One grid's points, a column per quantity: the curve and its slope are computed for all
 * points in loops without branches, then checked in order. */
typedef struct mono_run {
  double x[MONO_GRID_MAX], u[MONO_GRID_MAX], e[MONO_GRID_MAX], l[MONO_GRID_MAX];
} mono_run;
typedef struct mono_grid {
  double x_lo, x_max, scale;
  unsigned n;
  int kept;  /* the points below are filled */
  int valid; /* the key above is set */
  mono_run geo, lin;
} mono_grid;

static _Thread_local mono_grid mono_last;

static void mono_pt_set(mono_run *r, unsigned i, double x, double scale) {
  r->x[i] = x;
  r->u[i] = x / scale;
  r->e[i] = exp(r->u[i]);
  r->l[i] = log(r->u[i]);
}

static const mono_grid *mono_grid_get(double x_lo, double x_max, unsigned n, double scale) {
  mono_grid *g = &mono_last;
  if (g->valid && g->x_lo == x_lo && g->x_max == x_max && g->n == n && g->scale == scale) return g;
  g->x_lo = x_lo;
  g->x_max = x_max;
  g->scale = scale;
  g->n = n;
  g->kept = x_lo < x_max && n <= MONO_GRID_MAX;
  g->valid = 1;
  for (unsigned i = 0; g->kept && i < n; i++) {
    mono_pt_set(&g->geo, i, grid_x(x_lo, x_max, n, 1, i), scale);
    mono_pt_set(&g->lin, i, grid_x(x_lo, x_max, n, 0, i), scale);
  }
  return g;
}

/* grid_ok on kept points: hlb_curve_compute and compute_slope written out on each point's u,
 * e^u and ln u (c->scale is the grid's), then grid_point_ok's tests in order. */
static int mono_run_ok(const hlb_curve *c, const mono_run *r, unsigned n) {
  const double *k = c->coef;
  double y[MONO_GRID_MAX], d[MONO_GRID_MAX];
  for (unsigned i = 0; i < n; i++) {
    double u = r->u[i];
    y[i] = k[HLB_TERM_CONST] + u * (k[HLB_TERM_U] + u * (k[HLB_TERM_U2] + u * k[HLB_TERM_U3]));
    d[i] = k[HLB_TERM_U] + u * (2.0 * k[HLB_TERM_U2] + 3.0 * u * k[HLB_TERM_U3]);
  }
  if (k[HLB_TERM_EXP] != 0.0 || k[HLB_TERM_UEXP] != 0.0)
    for (unsigned i = 0; i < n; i++) {
      y[i] += r->e[i] * (k[HLB_TERM_EXP] + r->u[i] * k[HLB_TERM_UEXP]);
      d[i] += r->e[i] * (k[HLB_TERM_EXP] + k[HLB_TERM_UEXP] * (1.0 + r->u[i]));
    }
  if (k[HLB_TERM_LOG] != 0.0 || k[HLB_TERM_ULOG] != 0.0)
    for (unsigned i = 0; i < n; i++) {
      y[i] += r->l[i] * (k[HLB_TERM_LOG] + r->u[i] * k[HLB_TERM_ULOG]);
      d[i] += k[HLB_TERM_LOG] / r->u[i] + k[HLB_TERM_ULOG] * (r->l[i] + 1.0);
    }
  double prev = -INFINITY;
  for (unsigned i = 0; i < n; i++) {
    if (!(y[i] > 0.0) || !isfinite(y[i])) return 0;
    if (y[i] < prev - HLB__MONO_DIP_REL * fabs(prev)) return 0;
    double slope = (d[i] / c->scale + c->transfer_per_item) - c->transfer_per_item;
    if (slope * r->x[i] < -HLB__MONO_SLOPE_REL * y[i]) return 0;
    prev = y[i];
  }
  return 1;
}

static int mono_grid_ok(const mono_grid *g, const hlb_curve *c) {
  if (!g->kept) return hlb__curve_monotone(c, g->x_lo, g->x_max, g->n);
  return mono_run_ok(c, &g->geo, g->n) && mono_run_ok(c, &g->lin, g->n);
}

/* ---- Subset search ------------------------------------------------------------------- */

typedef struct cand {
  unsigned mask;
  int k;
  /* The coefficients; with AICc those of the scaled system, b_t = coef_t sqrt(X'WX_tt), divided
   * out only for the candidates tried (cand_coef): the division was a sixth of the search. */
  double coef[HLB__NT];
  double rss;
  double score; /* NaN: criterion undefined for this subset */
} cand;

/* Corrected Akaike criterion (Hurvich & Tsai) on the weighted residual, with the sum of
 * forgetting factors as sample count and the noise variance counted as a parameter;
 * undefined when n <= k + 1. */
static double aicc(double n, int terms, double rss) {
  double k = terms + 1.0;
  if (n - k - 1.0 <= 0.0) return NAN;
  return n * log(rss / n) + 2.0 * k + 2.0 * k * (k + 1.0) / (n - k - 1.0);
}

/* Weighted mean squared leave-one-out error over the window, by the hat-matrix identity
 * e_(i) = e_i / (1 - h_ii), h_ii = w_i phi_i' (X'WX)^-1 phi_i. */
static double loo_score(const hlb_model *m, const cand *c, const double *ainv) {
  int idx[HLB__NT], k = 0;
  for (int t = 0; t < HLB__NT; t++)
    if (c->mask & (1u << t)) idx[k++] = t;
  if (m->win_len < (size_t)k + 1) return NAN;
  double press = 0.0, wsum = 0.0, w = 1.0;
  size_t cap = m->opt.loo_window;
  for (size_t age = 0; age < m->win_len; age++, w *= m->opt.forgetting) {
    size_t at = (m->win_head + m->win_len - 1 - age) % cap;
    double phi[HLB__NT], p[HLB__NT];
    hlb__basis(m->win_x[at] / m->scale, m->exp_ok, phi);
    double pred = 0.0, h = 0.0;
    for (int i = 0; i < k; i++) {
      p[i] = phi[idx[i]];
      pred += c->coef[idx[i]] * p[i];
    }
    for (int i = 0; i < k; i++)
      for (int j = 0; j < k; j++)
        h += p[i] * ainv[i * k + j] * p[j];
    double wi = w * m->win_w[at];
    h *= wi;
    if (h > HLB__LOO_LEVERAGE_MAX) return NAN;
    double e = (m->win_y[at] - pred) / (1.0 - h);
    press += wi * e * e;
    wsum += wi;
  }
  return press / wsum;
}

static unsigned usable_terms(const hlb_model *m) {
  unsigned all = (1u << HLB__NT) - 1u;
  unsigned mask = m->opt.allowed_terms ? m->opt.allowed_terms : all;
  if (!m->exp_ok) mask &= ~((1u << HLB_TERM_EXP) | (1u << HLB_TERM_UEXP));
  return mask;
}

/* The subset search as a walk over prefixes: a subset in term order extends the one without
 * its last term, and the Cholesky factor of the extension is the prefix's factor plus one
 * column (column j of cholesky_small reads columns <= j only), so each subset adds a column,
 * O(k^2), instead of factoring anew, O(k^3), with the very same operations: every fit is the
 * same to the bit as hlb__lsq_solve's. A subset whose prefix fails (zero column, not positive
 * definite, tiny pivot) fails the same way, so its extensions are not tried. */
typedef struct subset_walk {
  const hlb_model *m;
  unsigned usable;
  int max_k, loo, n;
  double floor;
  int idx[HLB__NT];
  double d[HLB__NT], c[HLB__NT];
  double r[HLB__NT * HLB__NT]; /* column j of the factor at r[j * HLB__NT]; upper triangle */
  double z[HLB__NT];           /* R' z = c, the forward solve of the current prefix */
  double dt[HLB__NT];          /* sqrt(X'WX_tt): the scaling of term t's column */
  cand *out;
} subset_walk;

static int walk_from(subset_walk *w, int k, unsigned mask, int t0) {
  const hlb__lsq *s = &w->m->f;
  for (int t = t0; t < HLB__NT; t++) {
    if (!(w->usable & (1u << t))) continue;
    /* Column k = term t: scaled as scaled_system does, factored as cholesky_small does. */
    double dk = w->dt[t];
    if (!(dk > 0.0) || !isfinite(dk)) continue;
    w->idx[k] = t;
    w->d[k] = dk;
    double *col = &w->r[k * HLB__NT];
    for (int i = 0; i <= k; i++)
      col[i] = s->xtx[w->idx[i]][t] / (w->d[i] * w->d[k]);
    w->c[k] = s->xty[t] / dk;
    for (int j = 0; j < k; j++) {
      double v = col[j];
      for (int i = 0; i < j; i++)
        v -= w->r[i + j * HLB__NT] * col[i];
      col[j] = v * (1.0 / w->r[j + j * HLB__NT]);
    }
    double akk = col[k];
    for (int i = 0; i < k; i++)
      akk -= col[i] * col[i];
    if (!(akk > 0.0)) continue;
    col[k] = sqrt(akk);
    if (col[k] * col[k] < w->m->opt.collinear_tol) continue;
    int kk = k + 1;
    unsigned sub = mask | (1u << t);
    /* The solve and residual of hlb__lsq_solve. Its forward half, R' z = c, is the prefix's
     * (the same rows and right-hand side) plus one row: only z[k] is new. */
    double v = w->c[k];
    for (int j = 0; j < k; j++)
      v -= col[j] * w->z[j];
    w->z[k] = v / col[k];
    double b[HLB__NT];
    memcpy(b, w->z, sizeof(double) * (size_t)kk);
    for (int i = kk - 1; i >= 0; i--) {
      double v = b[i];
      for (int j = i + 1; j < kk; j++)
        v -= w->r[i + j * HLB__NT] * b[j];
      b[i] = v / w->r[i + i * HLB__NT];
    }
    double explained = 0.0;
    for (int i = 0; i < kk; i++)
      explained += b[i] * w->c[i];
    cand *cd = &w->out[w->n];
    cd->rss = s->yty - explained;
    memset(cd->coef, 0, sizeof cd->coef);
    for (int i = 0; i < kk; i++)
      cd->coef[w->idx[i]] = w->loo ? b[i] / w->d[i] : b[i];
    cd->mask = sub;
    cd->k = kk;
    if (cd->rss < w->floor) cd->rss = w->floor;
    int keep = 1;
    if (w->loo) {
      double f[HLB__NT * HLB__NT], ainv[HLB__NT * HLB__NT];
      for (int j = 0; j < kk; j++)
        for (int i = 0; i <= j; i++)
          f[i + j * kk] = w->r[i + j * HLB__NT];
      int rc = leverage_inverse(f, w->d, kk, ainv);
      if (rc < 0) return rc;
      keep = rc == 0; /* as solve_all skipped it; its extensions are still tried */
      if (keep) cd->score = loo_score(w->m, cd, ainv);
    } else {
      cd->score = NAN; /* AICc: scored in choose, only where it can matter */
    }
    w->n += keep;
    if (kk < w->max_k) {
      int rc = walk_from(w, kk, sub, t + 1);
      if (rc < 0) return rc;
    }
  }
  return 0;
}

/* Solve and score every usable subset of at most max_k terms; returns the count or < 0. */
static int solve_all(const hlb_model *m, int max_k, cand *out) {
  subset_walk w = {.m = m,
                   .usable = usable_terms(m),
                   .max_k = max_k,
                   .loo = m->opt.criterion == HLB_SELECT_LOOCV,
                   .floor = HLB__RSS_FLOOR_REL * m->f.yty,
                   .out = out};
  if (max_k < 1) return 0;
  for (int t = 0; t < HLB__NT; t++)
    w.dt[t] = sqrt(m->f.xtx[t][t]);
  int rc = walk_from(&w, 0, 0u, 0);
  return rc < 0 ? rc : w.n;
}

/* Scored subsets first, best score first (fewer terms on a tie); then the subsets the
 * criterion could not score, fewest terms and smallest residual first. */
static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = *(const cand *const *)pa, *b = *(const cand *const *)pb;
  int sa = !isnan(a->score), sb = !isnan(b->score);
  if (sa != sb) return sb - sa;
  if (sa && a->score != b->score) return a->score < b->score ? -1 : 1;
  if (a->k != b->k) return a->k - b->k;
  if (a->rss != b->rss) return a->rss < b->rss ? -1 : 1;
  return a->mask < b->mask ? -1 : a->mask > b->mask;
}

/* G(x) = a x + b with a, b >= 0: the unconstrained line when it is feasible, else the better
 * of the two one-term fits (each is positive because the times are). */
static int fit_transfer(const hlb_model *m, hlb_curve *c) {
  c->transfer_per_item = 0.0;
  c->transfer_fixed = 0.0;
  if (m->g_samples == 0) return 0;
  const unsigned masks[3] = {(1u << HLB_TERM_CONST) | (1u << HLB_TERM_U), 1u << HLB_TERM_U,
                             1u << HLB_TERM_CONST};
  double best_rss = INFINITY;
  for (int i = 0; i < 3; i++) {
    double coef[HLB__NT], rss;
    int rc = hlb__lsq_solve(&m->g, masks[i], m->opt.collinear_tol, coef, &rss, NULL);
    if (rc < 0) return rc;
    if (rc > 0 || coef[HLB_TERM_CONST] < 0.0 || coef[HLB_TERM_U] < 0.0 || !(rss < best_rss))
      continue;
    best_rss = i == 0 ? -INFINITY : rss; /* a feasible full line is the least-squares answer */
    c->transfer_per_item = coef[HLB_TERM_U] / m->scale;
    c->transfer_fixed = coef[HLB_TERM_CONST];
  }
  return 0;
}

static double r_squared(const hlb_model *m, double rss) {
  double tss = m->f.yty - m->f.xty[HLB_TERM_CONST] * m->f.xty[HLB_TERM_CONST] / m->f.sw;
  if (!(tss > HLB__RSS_FLOOR_REL * m->f.yty))
    return rss <= HLB__RSS_FLOOR_REL * m->f.yty ? 1.0 : 0.0;
  double r2 = 1.0 - rss / tss;
  return r2 < 1.0 ? r2 : 1.0;
}

/* Fewest terms first, then best score: the order inside the parsimony band. */
static int cand_cmp_small(const void *pa, const void *pb) {
  const cand *a = *(const cand *const *)pa, *b = *(const cand *const *)pb;
  if (a->k != b->k) return a->k - b->k;
  return cand_cmp(pa, pb);
}

/* A candidate's coefficients, unscaled as hlb__lsq_solve's are. */
static void cand_coef(const hlb_model *m, const cand *c, double coef[HLB__NT]) {
  if (m->opt.criterion == HLB_SELECT_LOOCV) {
    memcpy(coef, c->coef, sizeof(double) * HLB__NT);
    return;
  }
  for (int t = 0; t < HLB__NT; t++)
    coef[t] = c->mask & (1u << t) ? c->coef[t] / sqrt(m->f.xtx[t][t]) : 0.0;
}

/* The first candidate of ord[0..n) whose curve is positive and non-decreasing on the grid
 * becomes the fit (transfer line added); 1 when none is. */
static int take_first_monotone(hlb_model *m, cand *const *ord, int n, const mono_grid *grid) {
  for (int i = 0; i < n; i++) {
    const cand *best = ord[i];
    hlb_curve c = {.scale = m->scale};
    cand_coef(m, best, c.coef);
    if (!mono_grid_ok(grid, &c)) continue;
    int rc = fit_transfer(m, &c);
    if (rc) return rc;
    m->curve = c;
    m->terms = best->mask;
    m->r2 = r_squared(m, best->rss);
    m->score = best->score;
    m->score_n = m->f.sn;
    m->fitted = 1;
    return 0;
  }
  return 1;
}

/* The order the candidates are tried in: the AICc parsimony band (within aicc_delta of the
 * best score) fewest terms first, then everything else by cand_cmp, so a simpler curve is
 * preferred whenever the data do not argue for more. The monotone test takes the first that
 * passes, usually one in the band, so with AICc the rest is scored and sorted only when
 * the whole band fails: a fit used to sort all 255 subsets and take a log for each (a quarter
 * of a fit). The band is found without scoring every subset: AICc is n ln(rss / n) + pen(k),
 * increasing in rss for a given k, so the best score is the best of the smallest rss of each k,
 * and a subset can only be in the band when its rss is at most n exp((best + delta - pen(k)) /
 * n); that bound, widened by 1e-6 (far more than the rounding of either side), picks the
 * subsets whose score is computed and compared exactly. The order is the same as sorting
 * every candidate by score (tests/unit/model/test_model.c, fit_equals_full_search). The
 * basis is PLB-HeC's (section III.B: least squares over those functions, an R^2 of 0.7 that the
 * policies apply); choosing the subset by AICc and this band is hlb's own (docs/models.md). */
static int choose(hlb_model *m, cand *cands, int n, double x_max, int partial) {
  cand *ord[1u << HLB__NT];
  double x_lo = fmin(fmin(1.0, m->x_min), x_max);
  const mono_grid *grid = mono_grid_get(x_lo, x_max, m->opt.grid_points, m->scale);
  int n_band = 0, n_rest = 0, rc;
  if (m->opt.criterion == HLB_SELECT_AICC) {
    double sn = m->f.sn, min_rss[HLB__NT + 1], best = INFINITY;
    for (int k = 0; k <= HLB__NT; k++)
      min_rss[k] = INFINITY;
    for (int i = 0; i < n; i++)
      if (cands[i].rss < min_rss[cands[i].k]) min_rss[cands[i].k] = cands[i].rss;
    for (int k = 1; k <= HLB__NT; k++) {
      double sc = min_rss[k] < INFINITY ? aicc(sn, k, min_rss[k]) : NAN;
      if (sc < best) best = sc;
    }
    if (best < INFINITY) {
      double limit = best + m->opt.aicc_delta, thr[HLB__NT + 1];
      for (int k = 1; k <= HLB__NT; k++) {
        double pen = aicc(sn, k, sn); /* ln(sn / sn) = 0: the penalty alone */
        thr[k] = isnan(pen) ? -INFINITY : sn * exp((limit - pen) / sn) * (1.0 + 1e-6);
      }
      /* The least score exactly, whatever the rounding of ln: it is among those scored. */
      for (int i = 0; i < n; i++) {
        cand *c = &cands[i];
        c->score = c->rss <= thr[c->k] ? aicc(sn, c->k, c->rss) : NAN;
        if (c->score < best) best = c->score;
      }
      limit = best + m->opt.aicc_delta;
      for (int i = 0; i < n; i++) {
        if (cands[i].score <= limit)
          ord[n_band++] = &cands[i];
        else
          ord[n - 1 - n_rest++] = &cands[i]; /* scored below if the band fails */
      }
      qsort(ord, (size_t)n_band, sizeof *ord, cand_cmp_small);
      if ((rc = take_first_monotone(m, ord, n_band, grid)) <= 0) return rc;
    } else {
      for (int i = 0; i < n; i++)
        ord[n_rest++] = &cands[i];
    }
    for (int i = n_band; i < n; i++)
      ord[i]->score = aicc(sn, ord[i]->k, ord[i]->rss);
  } else {
    for (int i = 0; i < n; i++)
      ord[i] = &cands[i];
  }
  qsort(ord + n_band, (size_t)(n - n_band), sizeof *ord, cand_cmp);
  if ((rc = take_first_monotone(m, ord + n_band, n - n_band, grid)) <= 0 || partial) return rc;
  return hlb__error(HLB_ENUMERIC,
                    "model fit: no subset of the allowed terms (mask 0x%x) gives a positive, "
                    "non-decreasing curve on (0, %g]",
                    usable_terms(m), x_max);
}

int hlb_model_fit(hlb_model *m, double x_max) {
  if (!m) return hlb__error(HLB_EINVAL, "hlb_model_fit: model is NULL");
  if (!(x_max > 0.0) || !isfinite(x_max))
    return hlb__error(HLB_EINVAL, "hlb_model_fit: x_max must be finite and > 0, got %g", x_max);
  if (m->n_distinct < 2)
    return hlb__error(HLB_ESTATE,
                      "model fit: %u distinct block size(s) in %zu accepted sample(s); a fit "
                      "needs at least 2 distinct sizes",
                      m->n_distinct, m->accepted);
  /* k terms need k + 1 distinct sizes, or the fit interpolates and cannot be judged. */
  int max_k = (int)m->n_distinct - 1;
  if (max_k > HLB__NT) max_k = HLB__NT;
  cand cands[1u << HLB__NT];
  /* AICc is defined for up to k_scored terms only (n > k + 2), and every subset it scores is
   * tried before any it cannot score, those fewest terms first: so the subsets of at most
   * max(k_scored, 1) terms are searched first, and the others only when none of them is
   * monotone. Young models are fitted often and have few samples: a PU's fit after 6 blocks
   * searched 218 subsets, of which AICc scores 92. */
  if (m->opt.criterion == HLB_SELECT_AICC) {
    int first_k = max_k;
    while (first_k > 1 && isnan(aicc(m->f.sn, first_k, m->f.sn)))
      first_k--;
    if (first_k < max_k) {
      int n = solve_all(m, first_k, cands);
      if (n < 0) return n;
      int rc = choose(m, cands, n, x_max, 1);
      if (rc <= 0) return rc;
    }
  }
  int n = solve_all(m, max_k, cands);
  if (n < 0) return n;
  return choose(m, cands, n, x_max, 0);
}
