/* Imbalance metrics I%, I_t, I_T and the measured-load helpers (Issakhov et al. section 1, eq. 1-2,
 * the 25 % truncated mean). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "hlb/ccp.h"
#include "hlb/error.h"

#define assert_close(a, b, tol)                                                                    \
  do {                                                                                             \
    double a_ = (a), b_ = (b);                                                                     \
    if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);             \
  } while (0)

static void imbalance_values(void **state) {
  (void)state;
  hlb_imbalance im;
  double even[4] = {3, 3, 3, 3};
  assert_int_equal(hlb_imbalance_compute(even, 4, &im), 0);
  assert_true(im.percent == 0.0 && im.time == 0.0 && im.total == 0.0);
  /* One process did all the work: 100 % (Issakhov et al.: "I% = 100 % ... only one process"). */
  double one[4] = {4, 0, 0, 0};
  assert_int_equal(hlb_imbalance_compute(one, 4, &im), 0);
  assert_close(im.percent, 100.0, 1e-12);
  assert_close(im.t_max, 4.0, 0);
  assert_close(im.t_avg, 1.0, 0);
  assert_close(im.time, 3.0, 1e-15);   /* I_t = t_max - t_avg */
  assert_close(im.total, 12.0, 1e-15); /* I_T = N * I_t */
  double two[2] = {2, 1};
  assert_int_equal(hlb_imbalance_compute(two, 2, &im), 0);
  assert_close(im.percent, (2 - 1.5) / 2 * 2 / 1 * 100, 1e-12);
  double five[5] = {1.0, 1.2, 0.8, 1.1, 0.9};
  assert_int_equal(hlb_imbalance_compute(five, 5, &im), 0);
  assert_close(im.percent, (1.2 - 1.0) / 1.2 * 5.0 / 4.0 * 100, 1e-12);
  /* N = 1 and all-zero times: 0 by definition. */
  double single[1] = {7};
  assert_int_equal(hlb_imbalance_compute(single, 1, &im), 0);
  assert_true(im.percent == 0.0 && im.time == 0.0);
  double zero[3] = {0, 0, 0};
  assert_int_equal(hlb_imbalance_compute(zero, 3, &im), 0);
  assert_true(im.percent == 0.0);
  /* Equal times whose mean rounds above them still read 0. */
  double same[3] = {0.1, 0.1, 0.1};
  assert_int_equal(hlb_imbalance_compute(same, 3, &im), 0);
  assert_true(im.percent == 0.0 && im.time == 0.0);
}

static void imbalance_rejects_bad_times(void **state) {
  (void)state;
  hlb_imbalance im;
  double t[3] = {1, 2, NAN};
  assert_int_equal(hlb_imbalance_compute(t, 3, &im), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "t[2]"));
  assert_non_null(strstr(hlb_last_error(), "nan"));
  double n[3] = {1, -0.5, 2};
  assert_int_equal(hlb_imbalance_compute(n, 3, &im), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "t[1]"));
  assert_non_null(strstr(hlb_last_error(), "-0.5"));
  double inf[2] = {INFINITY, 1};
  assert_int_equal(hlb_imbalance_compute(inf, 2, &im), HLB_EINVAL);
  assert_int_equal(hlb_imbalance_compute(t, 0, &im), HLB_EINVAL);
}

static void truncated_mean_values(void **state) {
  (void)state;
  double m;
  double four[4] = {4, 1, 3, 2};
  assert_int_equal(hlb_truncated_mean(four, 4, HLB_TRUNCATED_MEAN_TRIM, NULL, &m), 0);
  assert_close(m, 2.5, 0); /* mean of the middle two */
  /* Eight steps, two disturbed ones: both outliers (and the smallest two) are dropped. */
  double eight[8] = {10, 1, 2, 3, 100, 2, 3, 2};
  double work[8];
  assert_int_equal(hlb_truncated_mean(eight, 8, 0.25, work, &m), 0);
  assert_close(m, 2.5, 0);      /* sorted 1 2 [2 2 3 3] 10 100 */
  assert_true(eight[4] == 100); /* input untouched */
  assert_int_equal(hlb_truncated_mean(eight, 8, 0.0, NULL, &m), 0);
  assert_close(m, 123.0 / 8.0, 1e-12);
  double three[3] = {1, 2, 9}; /* floor(0.75) = 0: nothing cut */
  assert_int_equal(hlb_truncated_mean(three, 3, 0.25, NULL, &m), 0);
  assert_close(m, 4.0, 1e-15);
  double one[1] = {5};
  assert_int_equal(hlb_truncated_mean(one, 1, 0.25, NULL, &m), 0);
  assert_close(m, 5.0, 0);
}

/* Whatever the cut values are, they cannot move the result: replacing the largest
 * floor(n/4) timings by anything larger leaves it unchanged. */
static void truncated_mean_ignores_outliers(void **state) {
  (void)state;
  hlb__rng r;
  hlb__rng_seed(&r, 5);
  double x[40], y[40];
  for (int it = 0; it < 200; it++) {
    size_t n = 4 + hlb__rng_below(&r, 37);
    double hi = 0;
    for (size_t i = 0; i < n; i++) {
      x[i] = hlb__rng_uniform(&r);
      hi = x[i] > hi ? x[i] : hi;
    }
    double a, b;
    assert_int_equal(hlb_truncated_mean(x, n, 0.25, NULL, &a), 0);
    /* Push the largest cut values far up. */
    memcpy(y, x, n * sizeof *x);
    size_t cut = n / 4;
    for (size_t c = 0; c < cut; c++) {
      size_t big = 0;
      for (size_t i = 1; i < n; i++)
        if (y[i] > y[big] && y[i] <= hi) big = i;
      y[big] = 1e6 + (double)c;
    }
    assert_int_equal(hlb_truncated_mean(y, n, 0.25, NULL, &b), 0);
    assert_close(a, b, 1e-12);
  }
}

static void truncated_mean_rejects_bad_input(void **state) {
  (void)state;
  double m, x[3] = {1, -2, 3};
  assert_int_equal(hlb_truncated_mean(x, 3, 0.25, NULL, &m), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "[1]"));
  double ok[2] = {1, 2};
  assert_int_equal(hlb_truncated_mean(ok, 0, 0.25, NULL, &m), HLB_EINVAL);
  assert_int_equal(hlb_truncated_mean(ok, 2, 0.5, NULL, &m), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "trim"));
  assert_int_equal(hlb_truncated_mean(ok, 2, NAN, NULL, &m), HLB_EINVAL);
}

static void loads_are_normalised(void **state) {
  (void)state;
  double r[3] = {2, 4, 6}, l[3];
  assert_int_equal(hlb_ccp_loads(r, 3, l), 0);
  assert_close(l[0], 0.5, 0);
  assert_close(l[1], 1.0, 0);
  assert_close(l[2], 1.5, 0);
  assert_int_equal(hlb_ccp_loads(r, 3, r), 0); /* in place */
  assert_close(r[2], 1.5, 0);
  double z[2] = {0, 0};
  assert_int_equal(hlb_ccp_loads(z, 2, l), HLB_EINVAL);
  double bad[2] = {1, NAN};
  assert_int_equal(hlb_ccp_loads(bad, 2, l), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "[1]"));
  assert_int_equal(hlb_ccp_loads(r, 0, l), HLB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(imbalance_values),
      cmocka_unit_test(imbalance_rejects_bad_times),
      cmocka_unit_test(truncated_mean_values),
      cmocka_unit_test(truncated_mean_ignores_outliers),
      cmocka_unit_test(truncated_mean_rejects_bad_input),
      cmocka_unit_test(loads_are_normalised),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
