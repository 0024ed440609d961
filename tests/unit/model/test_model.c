/* hlb_model: recovery of known curves from noisy samples, the selection criterion, the
 * monotone guarantee, the inverse, rejection counting, forgetting and extreme scales. Data
 * come from a fixed-seed generator so every run sees the same samples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "hlb/error.h"
#include "hlb/model.h"
#include "model/model_internal.h"

typedef double (*truth_fn)(double x);

/* Add n samples at sizes spread over [x_lo, x_hi] (linear spacing, cycled over `sizes`
 * distinct values) with multiplicative Gaussian noise of relative size `noise`. */
static void feed(hlb_model *m, truth_fn f, double x_lo, double x_hi, int sizes, int n, double noise,
                 uint64_t seed) {
  hlb__rng r;
  hlb__rng_seed(&r, seed);
  for (int i = 0; i < n; i++) {
    double x = x_lo + (x_hi - x_lo) * (double)(i % sizes) / (double)(sizes - 1);
    double y = f(x) * (1.0 + noise * hlb__rng_normal(&r));
    assert_int_equal(hlb_model_add(m, x, y, 0.0), 0);
  }
}

static hlb_model *make(double scale, hlb_select crit, double forgetting) {
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.criterion = crit;
  o.forgetting = forgetting;
  hlb_model *m = NULL;
  assert_int_equal(hlb_model_create(scale, &o, &m), 0);
  return m;
}

/* Predictions within rel of the truth at 20 points of [x_lo, x_hi]. Least squares bounds
 * the absolute error, so near x_lo, where times are 100x smaller, 0.2 % of the largest time
 * is allowed on top. */
static void assert_close(const hlb_model *m, truth_fn f, double x_lo, double x_hi, double rel) {
  for (int i = 0; i <= 20; i++) {
    double x = x_lo + (x_hi - x_lo) * i / 20.0;
    double p = hlb_model_predict(m, x), t = f(x);
    if (!(fabs(p - t) <= rel * t + 2e-3 * f(x_hi)))
      fail_msg("x=%g: predicted %g, true %g (terms 0x%x)", x, p, t, hlb_model_terms(m));
  }
}

static double lin(double x) {
  return 0.05 + 2e-3 * x;
}
static double quad(double x) {
  return 1e-3 * x + 4e-6 * x * x;
}
static double nlogn(double x) {
  return 1e-4 * x * log(x);
}
static double expish(double x) {
  return 0.2 * (x / 500.0) * exp(x / 500.0);
}

static void recover(truth_fn f, double scale, double x_lo, double x_hi, hlb_select crit) {
  hlb_model *m = make(scale, crit, 1.0);
  feed(m, f, x_lo, x_hi, 25, 100, 0.01, 42);
  assert_int_equal(hlb_model_fit(m, x_hi), 0);
  assert_true(hlb_model_r2(m) > 0.99);
  assert_close(m, f, x_lo, x_hi, 0.02);
  hlb_model_destroy(m);
}

static void recovers_linear(void **s) {
  (void)s;
  recover(lin, 1000, 10, 1000, HLB_SELECT_AICC);
}
static void recovers_quadratic(void **s) {
  (void)s;
  recover(quad, 1000, 10, 1000, HLB_SELECT_AICC);
}
static void recovers_nlogn(void **s) {
  (void)s;
  recover(nlogn, 1000, 10, 1000, HLB_SELECT_AICC);
}
static void recovers_exponential(void **s) {
  (void)s;
  recover(expish, 500, 10, 1000, HLB_SELECT_AICC);
}
static void recovers_with_loocv(void **s) {
  (void)s;
  recover(quad, 1000, 10, 1000, HLB_SELECT_LOOCV);
  recover(nlogn, 1000, 10, 1000, HLB_SELECT_LOOCV);
}

static int popcount(unsigned v) {
  int n = 0;
  for (; v; v &= v - 1)
    n++;
  return n;
}

/* A 2-term truth: AICc keeps the model small although 8 terms always fit the noise better. */
static void aicc_does_not_overfit(void **s) {
  (void)s;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
    feed(m, lin, 10, 1000, 30, 90, 0.03, seed);
    assert_int_equal(hlb_model_fit(m, 1000), 0);
    unsigned t = hlb_model_terms(m);
    if (popcount(t) > 3)
      fail_msg("seed %lu: AICc chose %d terms (0x%x) for a 2-term curve", (unsigned long)seed,
               popcount(t), t);
    assert_true(isfinite(hlb_model_score(m)));
    hlb_model_destroy(m);
  }
}

/* Few distinct sizes bound the number of terms (k terms need k + 1 sizes). */
static void few_sizes_limit_terms(void **s) {
  (void)s;
  hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
  feed(m, quad, 100, 1000, 3, 30, 0.0, 1);
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  assert_true(popcount(hlb_model_terms(m)) <= 2);
  hlb_model_destroy(m);
}

static void one_size_is_estate(void **s) {
  (void)s;
  hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
  assert_int_equal(hlb_model_fit(m, 1000), HLB_ESTATE);
  for (int i = 0; i < 5; i++)
    assert_int_equal(hlb_model_add(m, 500, 1.0 + i * 0.01, 0.0), 0);
  assert_int_equal(hlb_model_fit(m, 1000), HLB_ESTATE);
  assert_non_null(strstr(hlb_last_error(), "distinct"));
  assert_false(hlb_model_fitted(m));
  assert_true(isnan(hlb_model_predict(m, 10)));
  hlb_curve c;
  assert_int_equal(hlb_model_curve(m, &c), HLB_ESTATE);
  hlb_model_destroy(m);
}

/* The fitted time is positive and never decreases on (0, x_max], checked much finer than the
 * model's own grid. */
static void assert_monotone(const hlb_model *m, double x_max) {
  double prev = 0.0;
  for (int i = 0; i <= 20000; i++) {
    double x = 1.0 + (x_max - 1.0) * i / 20000.0;
    double y = hlb_model_predict(m, x);
    if (!(y > 0.0) || y < prev * (1.0 - 1e-9))
      fail_msg("x=%g: time %g after %g (terms 0x%x)", x, y, prev, hlb_model_terms(m));
    prev = y;
  }
}

static double flat(double x) {
  return 1.0 + 0 * x;
}
static double dip(double x) {
  double u = x / 1000.0;
  return 1.0 - 1.5 * u + 1.2 * u * u;
}
static double log_only(double x) {
  return 0.6 + 0.1 * log(x / 1000.0);
}

static void monotone_on_adversarial_data(void **s) {
  (void)s;
  const truth_fn fs[] = {flat, dip, log_only};
  for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++)
    for (uint64_t seed = 1; seed <= 4; seed++)
      for (int crit = 0; crit < 2; crit++) {
        hlb_model *m = make(1000, (hlb_select)crit, 1.0);
        feed(m, fs[f], 10, 1000, 20, 60, 0.05, seed);
        /* Asked to predict twice beyond the data: extrapolation must not turn down either. */
        assert_int_equal(hlb_model_fit(m, 2000), 0);
        assert_monotone(m, 2000);
        hlb_model_destroy(m);
      }
}

static void inverse_is_largest_block_within_time(void **s) {
  (void)s;
  hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
  feed(m, quad, 10, 1000, 25, 100, 0.01, 7);
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  for (double t = 0.01; t < 5.0; t *= 1.7) {
    double x = hlb_model_inverse(m, t, 1000);
    assert_true(x >= 0.0 && x <= 1000.0);
    assert_true(hlb_model_predict(m, x) <= t);
    if (x < 1000.0)
      assert_true(hlb_model_predict(m, x + 1.0) > t);
    else
      assert_true(hlb_model_predict(m, 1000.0) <= t);
  }
  assert_true(hlb_model_inverse(m, 0.0, 1000) == 0.0);
  assert_true(hlb_model_inverse(m, 1e9, 1000) == 1000.0);
  hlb_model_destroy(m);
}

static void rejects_and_counts_bad_samples(void **s) {
  (void)s;
  hlb_model *m = make(100, HLB_SELECT_AICC, 1.0);
  assert_int_equal(hlb_model_add(m, 10, NAN, 0), HLB_ESAMPLE);
  assert_int_equal(hlb_model_add(m, 10, 1.0, NAN), HLB_ESAMPLE);
  assert_int_equal(hlb_model_add(m, 10, INFINITY, 0), HLB_ESAMPLE);
  assert_int_equal(hlb_model_add(m, 10, -1.5, 0), HLB_ESAMPLE);
  assert_non_null(strstr(hlb_last_error(), "-1.5"));
  assert_non_null(strstr(hlb_last_error(), "compute"));
  assert_int_equal(hlb_model_add(m, 10, 0.0, 0), HLB_ESAMPLE);
  assert_int_equal(hlb_model_add(m, 10, 1.0, -0.25), HLB_ESAMPLE);
  assert_non_null(strstr(hlb_last_error(), "transfer"));
  assert_non_null(strstr(hlb_last_error(), "-0.25"));
  assert_int_equal(hlb_model_add(m, 0, 1.0, 0), HLB_ESAMPLE);
  assert_int_equal(hlb_model_add(m, -3, 1.0, 0), HLB_ESAMPLE);
  assert_non_null(strstr(hlb_last_error(), "items"));
  assert_int_equal(hlb_model_add(m, NAN, 1.0, 0), HLB_ESAMPLE);
  assert_int_equal(hlb_model_rejected(m, HLB_REJECT_NAN), 2);
  assert_int_equal(hlb_model_rejected(m, HLB_REJECT_INF), 1);
  assert_int_equal(hlb_model_rejected(m, HLB_REJECT_NONPOSITIVE), 3);
  assert_int_equal(hlb_model_rejected(m, HLB_REJECT_ZERO_ITEMS), 3);
  assert_int_equal(hlb_model_samples(m), 0);
  /* Rejected samples leave nothing behind: the next fit still lacks data. */
  assert_int_equal(hlb_model_fit(m, 100), HLB_ESTATE);
  assert_string_equal(hlb_reject_name(HLB_REJECT_ZERO_ITEMS), "zero_items");
  hlb_model_destroy(m);
}

static void bad_arguments(void **s) {
  (void)s;
  hlb_model *m = NULL;
  assert_int_equal(hlb_model_create(0.0, NULL, &m), HLB_EINVAL);
  assert_int_equal(hlb_model_create(NAN, NULL, &m), HLB_EINVAL);
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.forgetting = 1.5;
  assert_int_equal(hlb_model_create(1.0, &o, &m), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "1.5"));
  hlb_model_options_default(&o);
  o.allowed_terms = 1u << 9;
  assert_int_equal(hlb_model_create(1.0, &o, &m), HLB_EINVAL);
  assert_null(m);
  m = make(10, HLB_SELECT_AICC, 1.0);
  assert_int_equal(hlb_model_fit(m, -1.0), HLB_EINVAL);
  hlb_model_destroy(m);
}

/* After a 2x slowdown, a forgetting model follows within 6 samples; a plain one lags. */
static void forgetting_follows_slowdown(void **s) {
  (void)s;
  hlb_model *fast = make(1000, HLB_SELECT_AICC, 0.7);
  hlb_model *plain = make(1000, HLB_SELECT_AICC, 1.0);
  hlb_model *both[2] = {fast, plain};
  for (int k = 0; k < 2; k++)
    feed(both[k], lin, 100, 1000, 10, 50, 0.01, 3);
  /* Refit after every block, as the balancer does. */
  const double sizes[6] = {300, 700, 500, 900, 200, 600};
  for (int k = 0; k < 2; k++)
    assert_int_equal(hlb_model_fit(both[k], 1000), 0);
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++) {
      assert_int_equal(hlb_model_add(both[k], sizes[i], 2.0 * lin(sizes[i]), 0.0), 0);
      assert_int_equal(hlb_model_fit(both[k], 1000), 0);
    }
  double truth = 2.0 * lin(800);
  double ef = fabs(hlb_model_predict(fast, 800) - truth) / truth;
  double ep = fabs(hlb_model_predict(plain, 800) - truth) / truth;
  if (!(ef < 0.10 && ep > 0.30)) fail_msg("relative error with forgetting %g, without %g", ef, ep);
  hlb_model_destroy(fast);
  hlb_model_destroy(plain);
}

static double big(double x) {
  return 1e-5 + 2e-9 * x + 1e-19 * x * x;
}

/* Sizes from 1 to 1e9 with scale 1e9: the fit stays finite and accurate at both ends. */
static void sane_at_scale_1e9(void **s) {
  (void)s;
  hlb_model *m = make(1e9, HLB_SELECT_AICC, 1.0);
  for (int i = 0; i <= 90; i++) {
    double x = pow(10.0, i / 10.0);
    assert_int_equal(hlb_model_add(m, x, big(x), 0.0), 0);
  }
  assert_int_equal(hlb_model_fit(m, 1e9), 0);
  hlb_curve c;
  assert_int_equal(hlb_model_curve(m, &c), 0);
  for (int t = 0; t < HLB_TERM_COUNT; t++)
    assert_true(isfinite(c.coef[t]));
  for (double x = 1; x <= 1e9; x *= 10) {
    double p = hlb_model_predict(m, x);
    if (!(fabs(p - big(x)) <= 1e-3 * big(x)))
      fail_msg("x=%g: predicted %.9g, true %.9g (terms 0x%x)", x, p, big(x), hlb_model_terms(m));
  }
  double x = hlb_model_inverse(m, big(5e8), 1e9);
  assert_true(fabs(x - 5e8) < 1e-3 * 5e8);
  hlb_model_destroy(m);
}

/* G(x) = a x + b from transfer times; a or b never negative. */
static void transfer_line(void **s) {
  (void)s;
  hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
  for (int i = 1; i <= 20; i++) {
    double x = 50.0 * i;
    assert_int_equal(hlb_model_add(m, x, lin(x), 1e-3 + 2e-6 * x), 0);
  }
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  hlb_curve c;
  assert_int_equal(hlb_model_curve(m, &c), 0);
  assert_true(fabs(c.transfer_per_item - 2e-6) < 1e-9);
  assert_true(fabs(c.transfer_fixed - 1e-3) < 1e-6);
  assert_true(fabs(hlb_model_predict(m, 400) - (lin(400) + 1e-3 + 8e-4)) < 1e-6);
  hlb_model_destroy(m);

  /* Transfer times whose line has a negative intercept: a line through 0 instead. */
  m = make(1000, HLB_SELECT_AICC, 1.0);
  for (int i = 1; i <= 20; i++) {
    double x = 50.0 * i;
    assert_int_equal(hlb_model_add(m, x, lin(x), -5e-5 + 2e-6 * x), 0);
  }
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  assert_int_equal(hlb_model_curve(m, &c), 0);
  assert_true(c.transfer_per_item > 0.0 && c.transfer_fixed == 0.0);
  hlb_model_destroy(m);

  /* No transfer measured: G = 0. */
  m = make(1000, HLB_SELECT_AICC, 1.0);
  feed(m, lin, 10, 1000, 10, 20, 0.0, 1);
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  assert_int_equal(hlb_model_curve(m, &c), 0);
  assert_true(c.transfer_per_item == 0.0 && c.transfer_fixed == 0.0);
  hlb_model_destroy(m);
}

/* Restricting the basis is honoured. */
static void allowed_terms_are_honoured(void **s) {
  (void)s;
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.allowed_terms = (1u << HLB_TERM_U) | (1u << HLB_TERM_U2);
  hlb_model *m = NULL;
  assert_int_equal(hlb_model_create(1000, &o, &m), 0);
  feed(m, nlogn, 10, 1000, 20, 40, 0.01, 5);
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  assert_int_equal(hlb_model_terms(m) & ~o.allowed_terms, 0);
  hlb_model_destroy(m);
}

/* Blocks far beyond the scale (u up to 200) would overflow e^u: the exponential terms drop out
 * and the fit still works. */
static void huge_u_drops_exponential_terms(void **s) {
  (void)s;
  hlb_model *m = make(10, HLB_SELECT_AICC, 1.0);
  feed(m, quad, 10, 2000, 30, 60, 0.01, 9);
  assert_int_equal(hlb_model_fit(m, 2000), 0);
  unsigned ex = (1u << HLB_TERM_EXP) | (1u << HLB_TERM_UEXP);
  assert_int_equal(hlb_model_terms(m) & ex, 0);
  assert_close(m, quad, 10, 2000, 0.02);
  hlb_model_destroy(m);
}

/* Leave-one-out on a ring buffer smaller than the sample count still selects a good fit. */
static void loocv_window_wraps(void **s) {
  (void)s;
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.criterion = HLB_SELECT_LOOCV;
  o.loo_window = 16;
  hlb_model *m = NULL;
  assert_int_equal(hlb_model_create(1000, &o, &m), 0);
  feed(m, quad, 10, 1000, 25, 100, 0.01, 11);
  assert_int_equal(hlb_model_fit(m, 1000), 0);
  assert_true(isfinite(hlb_model_score(m)) && hlb_model_score(m) > 0.0);
  assert_close(m, quad, 10, 1000, 0.02);
  hlb_model_destroy(m);
}

/* ---- The fit against a plain reference --------------------------------------------------
 * hlb_model_fit scores only the subsets that can be in AICc's parsimony band and sorts the
 * others only when every subset of the band fails the monotone test, and it checks candidates
 * on grid points it keeps between fits. The reference below does what the search is defined
 * to do (docs/models.md), the plain way: every usable subset solved with hlb__lsq_solve and
 * scored, all of them sorted, the band put first fewest terms first, each candidate checked
 * with hlb__curve_monotone. Both must choose the same subset with the same coefficients. */
typedef struct ref_cand {
  unsigned mask;
  int k;
  double coef[HLB_TERM_COUNT];
  double rss, score;
} ref_cand;

static int ref_cmp(const void *pa, const void *pb) {
  const ref_cand *a = pa, *b = pb;
  int sa = !isnan(a->score), sb = !isnan(b->score);
  if (sa != sb) return sb - sa;
  if (sa && a->score != b->score) return a->score < b->score ? -1 : 1;
  if (a->k != b->k) return a->k - b->k;
  if (a->rss != b->rss) return a->rss < b->rss ? -1 : 1;
  return a->mask < b->mask ? -1 : a->mask > b->mask;
}

static int ref_cmp_small(const void *pa, const void *pb) {
  const ref_cand *a = pa, *b = pb;
  if (a->k != b->k) return a->k - b->k;
  return ref_cmp(pa, pb);
}

/* The chosen candidate's index in the full order (-1: none is monotone); *in_band says whether
 * it came from the parsimony band. */
static int ref_fit(const hlb_model *m, double x_max, ref_cand *out, int *in_band) {
  static ref_cand c[256];
  unsigned usable = m->opt.allowed_terms ? m->opt.allowed_terms : 0xffu;
  if (!m->exp_ok) usable &= ~((1u << HLB_TERM_EXP) | (1u << HLB_TERM_UEXP));
  int max_k = (int)m->n_distinct - 1 < HLB__NT ? (int)m->n_distinct - 1 : HLB__NT, n = 0;
  for (unsigned mask = 1; mask < 256; mask++) {
    int k = popcount(mask);
    if ((mask & ~usable) || k > max_k) continue;
    double coef[HLB__NT], rss;
    if (hlb__lsq_solve(&m->f, mask, m->opt.collinear_tol, coef, &rss, NULL) != 0) continue;
    if (rss < 1e-12 * m->f.yty) rss = 1e-12 * m->f.yty;
    double sn = m->f.sn, kk = k + 1.0;
    c[n] = (ref_cand){.mask = mask, .k = k, .rss = rss};
    c[n].score = sn - kk - 1.0 <= 0.0
                     ? NAN
                     : sn * log(rss / sn) + 2.0 * kk + 2.0 * kk * (kk + 1.0) / (sn - kk - 1.0);
    memcpy(c[n].coef, coef, sizeof coef);
    n++;
  }
  qsort(c, (size_t)n, sizeof *c, ref_cmp);
  int band = 0;
  if (n > 0 && !isnan(c[0].score)) {
    band = 1;
    while (band < n && !isnan(c[band].score) && c[band].score <= c[0].score + m->opt.aicc_delta)
      band++;
    qsort(c, (size_t)band, sizeof *c, ref_cmp_small);
  }
  double x_lo = fmin(fmin(1.0, m->x_min), x_max);
  for (int i = 0; i < n; i++) {
    hlb_curve cv = {.scale = m->scale};
    memcpy(cv.coef, c[i].coef, sizeof cv.coef);
    if (!hlb__curve_monotone(&cv, x_lo, x_max, m->opt.grid_points)) continue;
    *out = c[i];
    *in_band = i < band;
    return i;
  }
  return -1;
}

static double shape(int kind, double x, double scale) {
  double u = x / scale;
  switch (kind) {
  case 0:
    return 2e-3 + 1e-5 * x;
  case 1:
    return 1e-3 + 2e-4 * x + 3e-10 * x * x * x;
  case 2:
    return 1e-4 * x * log(x + 1.0) + 1e-3;
  case 3:
    return 5e-3 + 1e-2 * u * u;
  default:
    return 1e-3 * exp(3.0 * u) + 1e-4 * x;
  }
}

static void fit_equals_full_search(void **s) {
  (void)s;
  hlb__rng r;
  hlb__rng_seed(&r, 2024);
  int outside = 0, fits = 0;
  for (int set = 0; set < 400; set++) {
    hlb_model_options o;
    hlb_model_options_default(&o);
    if (set % 7 == 3) o.forgetting = 0.9;
    if (set % 13 == 7) o.aicc_delta = 0.0;
    if (set % 17 == 2) o.allowed_terms = 0x2f;
    /* Scales and ranges change from fit to fit: the kept grid must follow them. */
    double scale = set % 3 == 0 ? 1000.0 : 1e6, span = set % 2 ? 50.0 : 5000.0;
    double noise = (double)(set % 4) * 0.1;
    /* A twin of another scale fitted on the same range right after: a grid kept for the
     * first would be wrong for it. */
    hlb_model *pair[2] = {NULL, NULL};
    assert_int_equal(hlb_model_create(scale, &o, &pair[0]), 0);
    assert_int_equal(hlb_model_create(3.0 * scale, &o, &pair[1]), 0);
    int n = 3 + (int)(40 * hlb__rng_uniform(&r));
    double xmax = 0.0;
    for (int i = 0; i < n; i++) {
      double x = floor(1.0 + span * hlb__rng_uniform(&r));
      double y = shape(set % 5, x, scale) * fabs(1.0 + noise * hlb__rng_normal(&r)) + 1e-9;
      xmax = fmax(xmax, x);
      double fit_to = set % 4 == 1 ? 4.0 * xmax : scale;
      for (int w = 0; w < 2; w++) {
        hlb_model *m = pair[w];
        assert_int_equal(hlb_model_add(m, x, y, 0.0), 0);
        if (i < 2) continue;
        ref_cand want;
        int in_band = 0, at = ref_fit(m, fit_to, &want, &in_band);
        int rc = hlb_model_fit(m, fit_to);
        if (at < 0) {
          assert_int_equal(rc, HLB_ENUMERIC);
          continue;
        }
        if (rc != 0)
          fail_msg("set %d, sample %d: fit failed (%d), the reference chose 0x%x", set, i, rc,
                   want.mask);
        fits++;
        outside += !in_band;
        if (hlb_model_terms(m) != want.mask)
          fail_msg("set %d, sample %d: terms 0x%x, the reference chose 0x%x (at %d)", set, i,
                   hlb_model_terms(m), want.mask, at);
        hlb_curve c;
        assert_int_equal(hlb_model_curve(m, &c), 0);
        for (int t = 0; t < HLB_TERM_COUNT; t++)
          if (!(fabs(c.coef[t] - want.coef[t]) <= 1e-12 * fabs(want.coef[t])))
            fail_msg("set %d, sample %d: term %d is %.17g, the reference's %.17g", set, i, t,
                     c.coef[t], want.coef[t]);
        if (!isnan(want.score) || !isnan(hlb_model_score(m)))
          assert_true(hlb_model_score(m) == want.score);
      }
    }
    hlb_model_destroy(pair[0]);
    hlb_model_destroy(pair[1]);
  }
  /* The data must reach both ways out: fits from the band, and fits past a band that failed. */
  assert_true(fits > 1000);
  assert_true(outside > 20);
  assert_true(outside < fits / 2);
}

/* Every subset AICc can score (4 samples: one term) fails the monotone test, one it cannot
 * score passes: the search goes on past the scored ones. ln u (a + b u) with b = -1, a = 0.295
 * rises on u in [0.3, 0.6]; ln u alone falls there, and u ln u alone falls beyond 1/e. */
static void search_goes_past_scored_subsets(void **s) {
  (void)s;
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.allowed_terms = (1u << HLB_TERM_LOG) | (1u << HLB_TERM_ULOG);
  hlb_model *m = NULL;
  double scale = 1.0 / 0.3;
  assert_int_equal(hlb_model_create(scale, &o, &m), 0);
  for (int i = 0; i < 4; i++) {
    double x = 1.0 + i / 3.0, u = x / scale;
    assert_int_equal(hlb_model_add(m, x, log(u) * (0.295 - u), 0.0), 0);
  }
  ref_cand want;
  int in_band = 0;
  assert_true(ref_fit(m, 2.0, &want, &in_band) >= 0);
  assert_int_equal(hlb_model_fit(m, 2.0), 0);
  assert_int_equal(hlb_model_terms(m), want.mask);
  assert_int_equal(hlb_model_terms(m), o.allowed_terms);
  assert_true(isnan(hlb_model_score(m)));
  hlb_model_destroy(m);
}

/* The quadratic's times, halved. */
static double quad_times_half(double x) {
  return 0.5 * quad(x);
}

static hlb_model *make_weighted(hlb_select crit, hlb_weighting w) {
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.criterion = crit;
  o.weighting = w;
  hlb_model *m = NULL;
  assert_int_equal(hlb_model_create(1000, &o, &m), 0);
  return m;
}

/* hlb_model_scale_compute: a model whose samples are scaled fits as one fed the scaled samples
 * (its sums follow without the samples, weights included), and a fitted model predicts `factor`
 * times as long at once, under either weighting and criterion; its score is what a refit gives. */
static void scaled_samples_fit_as_samples_fed_scaled(void **state) {
  (void)state;
  hlb_select crits[2] = {HLB_SELECT_AICC, HLB_SELECT_LOOCV};
  hlb_weighting weights[2] = {HLB_WEIGHT_RELATIVE, HLB_WEIGHT_UNIFORM};
  for (int c = 0; c < 2; c++)
    for (int w = 0; w < 2; w++) {
      hlb_model *scaled = make_weighted(crits[c], weights[w]);
      hlb_model *fed = make_weighted(crits[c], weights[w]);
      feed(scaled, quad, 10, 1000, 12, 48, 0.03, 7);
      assert_int_equal(hlb_model_scale_compute(scaled, 0.5), 0);
      /* Later samples in the new units weigh against the scaled ones as in `fed`. */
      feed(scaled, quad_times_half, 400, 1000, 5, 24, 0.3, 8);
      feed(fed, quad_times_half, 10, 1000, 12, 48, 0.03, 7); /* the same draws, halved */
      feed(fed, quad_times_half, 400, 1000, 5, 24, 0.3, 8);
      assert_int_equal(hlb_model_fit(scaled, 1000), 0);
      assert_int_equal(hlb_model_fit(fed, 1000), 0);
      assert_int_equal(hlb_model_terms(scaled), hlb_model_terms(fed));
      for (double x = 10; x <= 1000; x *= 1.5)
        assert_true(fabs(hlb_model_predict(scaled, x) / hlb_model_predict(fed, x) - 1) < 1e-9);
      /* Fitted: scaled in place, it predicts twice as long, and its R^2 and score are those of
       * a refit over the same samples. */
      double before = hlb_model_predict(fed, 500), r2 = hlb_model_r2(fed);
      assert_int_equal(hlb_model_scale_compute(fed, 2.0), 0);
      assert_true(fabs(hlb_model_predict(fed, 500) / before - 2.0) < 1e-12);
      assert_true(fabs(hlb_model_r2(fed) - r2) < 1e-12);
      double score = hlb_model_score(fed);
      assert_int_equal(hlb_model_fit(fed, 1000), 0);
      if (!(fabs(hlb_model_score(fed) - score) <= 1e-7 * fmax(1.0, fabs(score))))
        fail_msg("criterion %d, weighting %d: score %.12g scaled, %.12g refitted", c, w, score,
                 hlb_model_score(fed));
      assert_true(fabs(hlb_model_predict(fed, 500) / before - 2.0) < 1e-9);
      hlb_model_destroy(scaled);
      hlb_model_destroy(fed);
    }
  hlb_model *m = make(1000, HLB_SELECT_AICC, 1.0);
  double bad[] = {0.0, -1.0, NAN, INFINITY};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(hlb_model_scale_compute(m, bad[i]), HLB_EINVAL);
    assert_non_null(strstr(hlb_last_error(), "is not a finite positive number"));
  }
  assert_int_equal(hlb_model_scale_compute(NULL, 2.0), HLB_EINVAL);
  hlb_model_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(recovers_linear),
      cmocka_unit_test(recovers_quadratic),
      cmocka_unit_test(recovers_nlogn),
      cmocka_unit_test(recovers_exponential),
      cmocka_unit_test(recovers_with_loocv),
      cmocka_unit_test(aicc_does_not_overfit),
      cmocka_unit_test(few_sizes_limit_terms),
      cmocka_unit_test(one_size_is_estate),
      cmocka_unit_test(monotone_on_adversarial_data),
      cmocka_unit_test(inverse_is_largest_block_within_time),
      cmocka_unit_test(rejects_and_counts_bad_samples),
      cmocka_unit_test(bad_arguments),
      cmocka_unit_test(forgetting_follows_slowdown),
      cmocka_unit_test(sane_at_scale_1e9),
      cmocka_unit_test(transfer_line),
      cmocka_unit_test(allowed_terms_are_honoured),
      cmocka_unit_test(huge_u_drops_exponential_terms),
      cmocka_unit_test(loocv_window_wraps),
      cmocka_unit_test(fit_equals_full_search),
      cmocka_unit_test(search_goes_past_scored_subsets),
      cmocka_unit_test(scaled_samples_fit_as_samples_fed_scaled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
