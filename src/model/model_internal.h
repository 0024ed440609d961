/* Internal state of a hlb_model, shared by model.c (samples, accessors) and fit.c (the
 * subset search). Not thread-safe: one owner at a time, like the public type. */
#ifndef HLB_MODEL_INTERNAL_H
#define HLB_MODEL_INTERNAL_H

#include <stddef.h>

#include "hlb/model.h"

#define HLB__NT HLB_TERM_COUNT
/* Distinct sizes are only needed up to "enough for every term" (8 terms need 9 sizes), so a
 * fixed list keeps hlb_model_add O(1). */
#define HLB__DISTINCT_CAP (HLB__NT + 1)
/* e^u overflows a double beyond u ~ 709; once a sample lies past this bound the exponential
 * terms are dropped from the search (their sums would be inf or dominated by one sample). */
#define HLB__EXP_U_MAX 50.0

/* Weighted sufficient statistics of a least-squares problem over k <= HLB__NT columns:
 * X^T W X, X^T W y, y^T W y and the weight sum. W is the forgetting factor of each sample
 * times its weighting (1 / y^2 for relative errors). Every subset's fit and residual come from
 * these without revisiting samples. */
typedef struct hlb__lsq {
  double xtx[HLB__NT][HLB__NT];
  double xty[HLB__NT];
  double yty;
  double sw; /* sum of weights */
  double sn; /* sum of forgetting factors alone: the effective sample count */
} hlb__lsq;

struct hlb_model {
  double scale;
  hlb_model_options opt;
  hlb__lsq f;       /* compute time over the 8 basis terms */
  hlb__lsq g;       /* transfer time over [1, u], only samples with transfer_s > 0 */
  size_t g_samples; /* samples with a measured transfer time */
  size_t accepted;
  size_t rejected[HLB_REJECT_COUNT];
  double distinct[HLB__DISTINCT_CAP];
  unsigned n_distinct;
  double x_min;    /* smallest accepted block, lower end of the monotonicity grid */
  int exp_ok;      /* 0 once a sample had u > HLB__EXP_U_MAX */
  unsigned clears; /* hlb_model_clear calls (kept over them) */
  /* Leave-one-out ring buffer (HLB_SELECT_LOOCV only): sizes and compute times, newest at
   * (win_head + win_len - 1) % loo_window. */
  double *win_x, *win_y, *win_w; /* win_w: weight without forgetting */
  size_t win_head, win_len;
  /* Result of the last successful fit. */
  int fitted;
  hlb_curve curve;
  unsigned terms;
  double r2;
  double score;
  double score_n; /* the effective sample count the score was computed over (f.sn then) */
};

/* Least-squares weight of a compute (or transfer) time y for a block of x items under the
 * model's weighting, fixed when the sample is added. */
double hlb__weight(const hlb_model *m, double x, double y, int transfer);

/* Basis values at u > 0; exp terms are 0 when !exp_ok. */
void hlb__basis(double u, int exp_ok, double phi[HLB__NT]);

/* Weighted least squares restricted to the columns in `mask` of s (k = popcount(mask)
 * columns). On success fills coef (all HLB__NT entries, 0 outside mask) and *rss, and
 * returns 0. Returns 1 when the columns are collinear (scaled Cholesky pivot below tol),
 * and a negative HLB_E* code when LAPACK fails. When ainv is not NULL it receives the
 * inverse of the k x k submatrix of X^T W X (row i/j in mask order), for leverages. */
int hlb__lsq_solve(const hlb__lsq *s, unsigned mask, double tol, double coef[HLB__NT], double *rss,
                   double *ainv);

/* 1 when the compute part of c is positive and non-decreasing on [x_lo, x_max]. */
int hlb__curve_monotone(const hlb_curve *c, double x_lo, double x_max, unsigned grid_points);

#endif
