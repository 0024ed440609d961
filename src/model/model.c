/* hlb_model: sample intake (validation, weighted sufficient statistics, forgetting) and the
 * accessors of a fit. The subset search itself is in fit.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "model/model_internal.h"

const char *hlb_reject_name(hlb_reject_reason r) {
  static const char *const names[HLB_REJECT_COUNT] = {"nan", "inf", "nonpositive", "zero_items"};
  return (unsigned)r < HLB_REJECT_COUNT ? names[r] : "?";
}

void hlb_model_options_default(hlb_model_options *o) {
  memset(o, 0, sizeof *o);
  o->allowed_terms = 0;
  o->criterion = HLB_SELECT_AICC;
  o->forgetting = 1.0;
  o->loo_window = 256;
  o->grid_points = 128;
  o->collinear_tol = 1e-10;
  o->aicc_delta = 4.0;
  o->weighting = HLB_WEIGHT_RELATIVE;
}

static int check_options(const hlb_model_options *o) {
  if (o->allowed_terms & ~((1u << HLB__NT) - 1u))
    return hlb__error(HLB_EINVAL, "model options: allowed_terms 0x%x has bits beyond the %d terms",
                      o->allowed_terms, HLB__NT);
  if (o->criterion != HLB_SELECT_AICC && o->criterion != HLB_SELECT_LOOCV)
    return hlb__error(HLB_EINVAL, "model options: unknown criterion %d", (int)o->criterion);
  if (!(o->forgetting > 0.0 && o->forgetting <= 1.0))
    return hlb__error(HLB_EINVAL, "model options: forgetting must be in (0, 1], got %g",
                      o->forgetting);
  if (o->criterion == HLB_SELECT_LOOCV && o->loo_window < 2)
    return hlb__error(HLB_EINVAL, "model options: loo_window must be >= 2, got %zu", o->loo_window);
  if (o->grid_points < 2)
    return hlb__error(HLB_EINVAL, "model options: grid_points must be >= 2, got %u",
                      o->grid_points);
  if (!(o->collinear_tol > 0.0 && o->collinear_tol < 1.0))
    return hlb__error(HLB_EINVAL, "model options: collinear_tol must be in (0, 1), got %g",
                      o->collinear_tol);
  if (o->weighting != HLB_WEIGHT_RELATIVE && o->weighting != HLB_WEIGHT_UNIFORM)
    return hlb__error(HLB_EINVAL, "model options: unknown weighting %d", (int)o->weighting);
  if (!(o->aicc_delta >= 0.0) || !isfinite(o->aicc_delta))
    return hlb__error(HLB_EINVAL, "model options: aicc_delta must be finite and >= 0, got %g",
                      o->aicc_delta);
  return 0;
}

int hlb_model_create(double scale, const hlb_model_options *opt, hlb_model **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_model_create: out is NULL");
  *out = NULL;
  if (!(scale > 0.0) || !isfinite(scale))
    return hlb__error(HLB_EINVAL, "hlb_model_create: scale must be finite and > 0, got %g", scale);
  hlb_model_options o;
  if (opt)
    o = *opt;
  else
    hlb_model_options_default(&o);
  int rc = check_options(&o);
  if (rc) return rc;
  hlb_model *m = calloc(1, sizeof *m);
  if (!m) return hlb__error(HLB_ENOMEM, "hlb_model_create: out of memory");
  m->scale = scale;
  m->opt = o;
  m->exp_ok = 1;
  m->x_min = INFINITY;
  m->r2 = NAN;
  m->score = NAN;
  if (o.criterion == HLB_SELECT_LOOCV) {
    m->win_x = malloc(o.loo_window * sizeof *m->win_x);
    m->win_y = malloc(o.loo_window * sizeof *m->win_y);
    m->win_w = malloc(o.loo_window * sizeof *m->win_w);
    if (!m->win_x || !m->win_y || !m->win_w) {
      hlb_model_destroy(m);
      return hlb__error(HLB_ENOMEM, "hlb_model_create: no memory for a %zu-sample window",
                        o.loo_window);
    }
  }
  *out = m;
  return 0;
}

void hlb_model_destroy(hlb_model *m) {
  if (!m) return;
  free(m->win_x);
  free(m->win_y);
  free(m->win_w);
  free(m);
}

void hlb_model_clear(hlb_model *m) {
  if (!m) return;
  double scale = m->scale;
  hlb_model_options opt = m->opt;
  double *wx = m->win_x, *wy = m->win_y, *ww = m->win_w;
  unsigned clears = m->clears + 1;
  memset(m, 0, sizeof *m);
  m->clears = clears;
  m->scale = scale;
  m->opt = opt;
  m->win_x = wx;
  m->win_y = wy;
  m->win_w = ww;
  m->exp_ok = 1;
  m->x_min = INFINITY;
  m->r2 = NAN;
  m->score = NAN;
}

unsigned hlb_model_clears(const hlb_model *m) {
  return m ? m->clears : 0;
}

void hlb__basis(double u, int exp_ok, double phi[HLB__NT]) {
  double e = exp_ok ? exp(u) : 0.0;
  double l = log(u);
  phi[HLB_TERM_CONST] = 1.0;
  phi[HLB_TERM_U] = u;
  phi[HLB_TERM_U2] = u * u;
  phi[HLB_TERM_U3] = u * u * u;
  phi[HLB_TERM_EXP] = e;
  phi[HLB_TERM_LOG] = l;
  phi[HLB_TERM_UEXP] = u * e;
  phi[HLB_TERM_ULOG] = u * l;
}

/* Count and describe a rejected sample. */
static int reject(hlb_model *m, hlb_reject_reason r, const char *what, double v, double items) {
  m->rejected[r]++;
  return hlb__error(HLB_ESAMPLE, "model sample rejected (%s): %s, got %g (items %g)",
                    hlb_reject_name(r), what, v, items);
}

static int validate(hlb_model *m, double items, double c, double t) {
  if (isnan(items) || items <= 0.0)
    return reject(m, HLB_REJECT_ZERO_ITEMS, "items must be > 0", items, items);
  if (isinf(items)) return reject(m, HLB_REJECT_INF, "items must be finite", items, items);
  if (isnan(c)) return reject(m, HLB_REJECT_NAN, "compute time is NaN", c, items);
  if (isnan(t)) return reject(m, HLB_REJECT_NAN, "transfer time is NaN", t, items);
  if (isinf(c)) return reject(m, HLB_REJECT_INF, "compute time must be finite", c, items);
  if (isinf(t)) return reject(m, HLB_REJECT_INF, "transfer time must be finite", t, items);
  if (c <= 0.0) return reject(m, HLB_REJECT_NONPOSITIVE, "compute time must be > 0 s", c, items);
  if (t < 0.0) return reject(m, HLB_REJECT_NONPOSITIVE, "transfer time must be >= 0 s", t, items);
  return 0;
}

/* Forgetting: every older sample's weight is multiplied by lambda, which on sufficient
 * statistics is a scaling of every sum. */
static void lsq_decay(hlb__lsq *s, double lambda) {
  for (int i = 0; i < HLB__NT; i++) {
    for (int j = 0; j < HLB__NT; j++)
      s->xtx[i][j] *= lambda;
    s->xty[i] *= lambda;
  }
  s->yty *= lambda;
  s->sw *= lambda;
  s->sn *= lambda;
}

static void lsq_add(hlb__lsq *s, const double *phi, int k, double y, double w) {
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++)
      s->xtx[i][j] += w * phi[i] * phi[j];
    s->xty[i] += w * phi[i] * y;
  }
  s->yty += w * y * y;
  s->sw += w;
  s->sn += 1.0;
}

/* Relative weights are 1 / t^2 with t the time the last fit predicts for this size when it
 * is within a factor 4 of the observation (one step of iteratively reweighted least
 * squares), else the observation itself. Using the prediction keeps a PU that slowed down
 * from having its new, longer samples weighted less than the old ones at the same size, and
 * removes the bias of weighting by a noisy value. */
#define HLB__WEIGHT_TRUST 4.0

double hlb__weight(const hlb_model *m, double x, double y, int transfer) {
  if (m->opt.weighting == HLB_WEIGHT_UNIFORM) return 1.0;
  double ref = y;
  if (m->fitted) {
    double p = transfer ? hlb_curve_transfer(&m->curve, x) : hlb_curve_compute(&m->curve, x);
    if (p >= y / HLB__WEIGHT_TRUST && p <= y * HLB__WEIGHT_TRUST) ref = p;
  }
  return 1.0 / (ref * ref);
}

static void note_size(hlb_model *m, double items) {
  if (items < m->x_min) m->x_min = items;
  if (m->n_distinct >= HLB__DISTINCT_CAP) return;
  for (unsigned i = 0; i < m->n_distinct; i++)
    if (m->distinct[i] == items) return;
  m->distinct[m->n_distinct++] = items;
}

static void window_push(hlb_model *m, double x, double y, double w) {
  size_t cap = m->opt.loo_window, at = m->win_head;
  if (m->win_len < cap)
    at = (m->win_head + m->win_len++) % cap;
  else
    m->win_head = (m->win_head + 1) % cap;
  m->win_x[at] = x;
  m->win_y[at] = y;
  m->win_w[at] = w;
}

int hlb_model_add(hlb_model *m, double items, double compute_s, double transfer_s) {
  if (!m) return hlb__error(HLB_EINVAL, "hlb_model_add: model is NULL");
  int rc = validate(m, items, compute_s, transfer_s);
  if (rc) return rc;
  double u = items / m->scale;
  if (u > HLB__EXP_U_MAX) m->exp_ok = 0;
  double lambda = m->opt.forgetting;
  if (lambda < 1.0) {
    lsq_decay(&m->f, lambda);
    lsq_decay(&m->g, lambda);
  }
  double phi[HLB__NT];
  hlb__basis(u, m->exp_ok, phi);
  double w = hlb__weight(m, items, compute_s, 0);
  lsq_add(&m->f, phi, HLB__NT, compute_s, w);
  if (transfer_s > 0.0) {
    double gphi[2] = {1.0, u};
    lsq_add(&m->g, gphi, 2, transfer_s, hlb__weight(m, items, transfer_s, 1));
    m->g_samples++;
  }
  note_size(m, items);
  if (m->win_x) window_push(m, items, compute_s, w);
  m->accepted++;
  return 0;
}

/* Scaling every y by f scales a relative weight 1 / y^2 by 1 / f^2 (a uniform one stays), so
 * the sums of a model whose samples had been f times longer follow without the samples; the
 * least-squares solution of each subset is then f times the old one, and R^2 is unchanged. */
int hlb_model_scale_compute(hlb_model *m, double factor) {
  if (!m) return hlb__error(HLB_EINVAL, "hlb_model_scale_compute: model is NULL");
  if (!(factor > 0) || !isfinite(factor))
    return hlb__error(HLB_EINVAL,
                      "hlb_model_scale_compute: factor %g is not a finite positive number", factor);
  int uniform = m->opt.weighting == HLB_WEIGHT_UNIFORM;
  double k = uniform ? 1.0 : 1.0 / (factor * factor); /* the weights' factor */
  for (int i = 0; i < HLB__NT; i++) {
    for (int j = 0; j < HLB__NT; j++)
      m->f.xtx[i][j] *= k;
    m->f.xty[i] *= k * factor;
  }
  m->f.yty *= k * factor * factor;
  m->f.sw *= k;
  for (size_t i = 0; m->win_x && i < m->win_len; i++) {
    size_t at = (m->win_head + i) % m->opt.loo_window;
    m->win_y[at] *= factor;
    m->win_w[at] *= k;
  }
  if (m->fitted) {
    for (int t = 0; t < HLB__NT; t++)
      m->curve.coef[t] *= factor;
    /* The leave-one-out score is a weighted mean of squared errors, f^2 times as large under
     * either weighting; AICc's n ln(rss / n) moves by n ln f^2 where the weighted residuals
     * scale (uniform weights) and not where they do not (relative ones). */
    if (!isnan(m->score)) {
      if (m->opt.criterion == HLB_SELECT_LOOCV)
        m->score *= factor * factor;
      else if (uniform)
        m->score += m->score_n * log(factor * factor);
    }
  }
  return 0;
}

int hlb_model_fitted(const hlb_model *m) {
  return m && m->fitted;
}

size_t hlb_model_samples(const hlb_model *m) {
  return m ? m->accepted : 0;
}

size_t hlb_model_rejected(const hlb_model *m, hlb_reject_reason r) {
  return m && (unsigned)r < HLB_REJECT_COUNT ? m->rejected[r] : 0;
}

double hlb_model_r2(const hlb_model *m) {
  return m && m->fitted ? m->r2 : NAN;
}

double hlb_model_scale(const hlb_model *m) {
  return m ? m->scale : NAN;
}

double hlb_model_score(const hlb_model *m) {
  return m && m->fitted ? m->score : NAN;
}

unsigned hlb_model_terms(const hlb_model *m) {
  return m && m->fitted ? m->terms : 0u;
}

int hlb_model_curve(const hlb_model *m, hlb_curve *out) {
  if (!m || !out) return hlb__error(HLB_EINVAL, "hlb_model_curve: NULL argument");
  if (!m->fitted)
    return hlb__error(HLB_ESTATE, "hlb_model_curve: the model has not been fitted yet "
                                  "(call hlb_model_fit after adding samples)");
  *out = m->curve;
  return 0;
}

double hlb_model_predict(const hlb_model *m, double x) {
  if (!m || !m->fitted) return NAN;
  return hlb_curve_time(&m->curve, x);
}

/* Bisection on the non-decreasing fitted curve: it keeps time(lo) <= t < time(hi), so the
 * answer never overshoots t, and 200 halvings reach the spacing of doubles. */
double hlb_model_inverse(const hlb_model *m, double t, double x_max) {
  if (!m || !m->fitted || isnan(t) || isnan(x_max)) return NAN;
  if (!(x_max > 0.0) || !(t >= 0.0)) return 0.0;
  const hlb_curve *c = &m->curve;
  if (hlb_curve_time(c, x_max) <= t) return x_max;
  double lo = 0.0, hi = x_max;
  for (int i = 0; i < 200; i++) {
    double mid = lo + 0.5 * (hi - lo);
    if (mid <= lo || mid >= hi) break;
    if (hlb_curve_time(c, mid) <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}
