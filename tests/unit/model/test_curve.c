/* hlb_curve: evaluation, slope against a finite difference, and the polynomial form. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/model.h"

static hlb_curve every_term(void) {
  hlb_curve c = {.scale = 250.0, .transfer_per_item = 1e-4, .transfer_fixed = 2e-3};
  for (int t = 0; t < HLB_TERM_COUNT; t++)
    c.coef[t] = 0.1 * (t + 1);
  return c;
}

static void time_is_compute_plus_transfer(void **s) {
  (void)s;
  hlb_curve c = every_term();
  double x = 100.0, u = x / c.scale;
  double f = 0.1 + 0.2 * u + 0.3 * u * u + 0.4 * u * u * u + 0.5 * exp(u) + 0.6 * log(u) +
             0.7 * u * exp(u) + 0.8 * u * log(u);
  assert_true(fabs(hlb_curve_compute(&c, x) - f) < 1e-12);
  assert_true(fabs(hlb_curve_transfer(&c, x) - (1e-2 + 2e-3)) < 1e-15);
  assert_true(fabs(hlb_curve_time(&c, x) - (f + 1.2e-2)) < 1e-12);
  assert_true(hlb_curve_time(&c, 0.0) == 0.0);
  assert_true(hlb_curve_transfer(&c, -1.0) == 0.0);
}

static void slope_matches_finite_difference(void **s) {
  (void)s;
  hlb_curve c = every_term();
  for (double x = 5.0; x < 1000.0; x *= 1.9) {
    double h = 1e-5 * x;
    double fd = (hlb_curve_time(&c, x + h) - hlb_curve_time(&c, x - h)) / (2 * h);
    assert_true(fabs(hlb_curve_slope(&c, x) - fd) < 1e-6 * fmax(1.0, fabs(fd)));
  }
}

static void poly_form(void **s) {
  (void)s;
  hlb_curve c;
  hlb_curve_from_poly(&c, 1.0, 2.0, 3.0, 4.0, 5.0);
  double x = 3.0;
  assert_true(fabs(hlb_curve_time(&c, x) - (1 + 6 + 27 + 108 + 15 * log(3.0))) < 1e-12);
  assert_string_equal(hlb_term_name(HLB_TERM_ULOG), "ulog");
  assert_string_equal(hlb_term_name((hlb_term)99), "?");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(time_is_compute_plus_transfer),
      cmocka_unit_test(slope_matches_finite_difference),
      cmocka_unit_test(poly_form),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
