/* Continuous equal-finish-time solver: closed forms, optimality on random mixed curves (no
 * feasible move lowers the makespan, and an independent brute-force bisection agrees), ready
 * times, flat curves (jumps of S(T)), warm starts, and bad input named in the error. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "hlb/error.h"
#include "hlb/partition.h"

#define MAXN 64

static double fin(const hlb_curve *c, const double *r, unsigned p, double x) {
  return (r ? r[p] : 0.0) + hlb_curve_time(&c[p], x);
}

static double makespan(const hlb_curve *c, const double *r, unsigned n, const double *x) {
  double m = -INFINITY;
  for (unsigned p = 0; p < n; p++)
    if (x[p] > 0) m = fmax(m, fin(c, r, p, x[p]));
  return m;
}

/* Brute force, independent of the solver: bisection on T (120 steps) with each x_p(T) by
 * bisection (80 steps). Returns the smallest T found with sum x_p(T) >= W. */
static double brute(const hlb_curve *c, const double *r, unsigned n, double W) {
  double lo = -1e3, hi = INFINITY;
  for (unsigned p = 0; p < n; p++)
    hi = fmin(hi, fin(c, r, p, W));
  for (int it = 0; it < 120; it++) {
    double t = 0.5 * (lo + hi), s = 0.0;
    for (unsigned p = 0; p < n; p++) {
      double a = 0.0, b = W;
      if (fin(c, r, p, W) <= t) {
        s += W;
        continue;
      }
      for (int k = 0; k < 80; k++) {
        double m = 0.5 * (a + b);
        if (fin(c, r, p, m) <= t)
          a = m;
        else
          b = m;
      }
      s += a;
    }
    if (s >= W)
      hi = t;
    else
      lo = t;
  }
  return hi;
}

/* Random non-decreasing curve: GPU-like (fast, fixed overhead) or CPU-like (up to 30x slower),
 * sometimes with quadratic, cubic, x ln x, e^u or ln u terms. */
static void random_curve(hlb__rng *g, double W, hlb_curve *c) {
  double speed = 1.0 + 29.0 * hlb__rng_uniform(g); /* seconds per W items */
  double lin = speed / W;
  hlb_curve_from_poly(c, 0.0, lin, 0.0, 0.0, 0.0);
  double kind = hlb__rng_uniform(g);
  if (kind < 0.3)
    c->coef[HLB_TERM_CONST] = 0.05 * hlb__rng_uniform(g);
  else if (kind < 0.45)
    c->coef[HLB_TERM_U2] = lin / W * hlb__rng_uniform(g);
  else if (kind < 0.6)
    c->coef[HLB_TERM_U3] = lin / (W * W) * hlb__rng_uniform(g);
  else if (kind < 0.75)
    c->coef[HLB_TERM_ULOG] = lin / 40.0 * hlb__rng_uniform(g);
  else if (kind < 0.85) {
    c->scale = W;
    c->coef[HLB_TERM_U] = 0.0;
    c->coef[HLB_TERM_UEXP] = speed * 0.5;
    c->coef[HLB_TERM_U] = speed * 0.5;
  } else if (kind < 0.92) {
    c->scale = W;
    c->coef[HLB_TERM_U] = speed;
    c->coef[HLB_TERM_LOG] = 0.01 * hlb__rng_uniform(g);
  } else {
    c->transfer_fixed = 0.01 * hlb__rng_uniform(g);
    c->transfer_per_item = lin * 0.2;
  }
}

/* The optimality certificate: sizes feasible; every PU either finishes at the makespan or is
 * idle with r_p + E_p(0+) >= makespan, or holds all W. Then moving any amount off a PU at
 * the makespan onto another raises the other to at least the makespan: no move helps. */
static void check_optimal(const hlb_curve *c, const double *r, unsigned n, double W,
                          const double *x, double m) {
  double s = 0.0;
  for (unsigned p = 0; p < n; p++) {
    assert_true(x[p] >= 0.0);
    s += x[p];
  }
  assert_true(fabs(s - W) <= 1e-12 * W);
  double mm = makespan(c, r, n, x);
  assert_true(fabs(mm - m) <= 1e-14 * fabs(m) + 1e-300);
  for (unsigned p = 0; p < n; p++) {
    if (x[p] > 0) {
      assert_true(fin(c, r, p, x[p]) <= m);
      /* Active and not full: a PU that finishes early could take more. */
      double slack = m - fin(c, r, p, x[p]);
      assert_true(slack <= 1e-9 * fabs(m) || x[p] >= W * (1 - 1e-12));
    } else {
      /* Idle: even a tiny block would end no earlier than the makespan. */
      assert_true(fin(c, r, p, W * 1e-12) >= m * (1 - 1e-9));
    }
  }
}

static void test_affine_closed_form(void **state) {
  (void)state;
  hlb_curve c[3];
  double s[3] = {1.0, 3.0, 6.0}, x[3], m;
  for (int p = 0; p < 3; p++)
    hlb_curve_from_poly(&c[p], 0.0, 1.0 / s[p], 0.0, 0.0, 0.0);
  assert_int_equal(hlb_eft_solve(c, NULL, 3, 1000.0, x, &m), 0);
  for (int p = 0; p < 3; p++)
    assert_true(fabs(x[p] - 1000.0 * s[p] / 10.0) <= 1e-9);
  assert_true(fabs(m - 100.0) <= 1e-11);
}

static void test_random_against_brute(void **state) {
  (void)state;
  hlb__rng g;
  hlb__rng_seed(&g, 42);
  hlb_curve c[MAXN];
  double r[MAXN], x[MAXN], m;
  for (int inst = 0; inst < 300; inst++) {
    unsigned n = 1 + (unsigned)hlb__rng_below(&g, inst < 250 ? 8 : MAXN);
    double W = pow(10.0, 1 + 6 * hlb__rng_uniform(&g));
    int with_ready = inst % 3 == 0;
    for (unsigned p = 0; p < n; p++) {
      random_curve(&g, W, &c[p]);
      r[p] = with_ready ? 5.0 * hlb__rng_uniform(&g) : 0.0;
    }
    int rc = hlb_eft_solve(c, with_ready ? r : NULL, n, W, x, &m);
    if (rc) fail_msg("instance %d: %s", inst, hlb_last_error());
    check_optimal(c, with_ready ? r : NULL, n, W, x, m);
    double b = brute(c, with_ready ? r : NULL, n, W);
    if (!(m <= b * (1 + 1e-9) + 1e-12))
      fail_msg("instance %d: solver %.17g > brute %.17g", inst, m, b);
  }
}

static void test_ready_excludes_late_pu(void **state) {
  (void)state;
  hlb_curve c[2];
  double r[2] = {0.0, 50.0}, x[2], m;
  hlb_curve_from_poly(&c[0], 0.0, 0.1, 0.0, 0.0, 0.0);
  hlb_curve_from_poly(&c[1], 0.0, 0.001, 0.0, 0.0, 0.0);
  /* PU 0 alone finishes 100 items at 10 s; PU 1 is free only at 50 s. */
  assert_int_equal(hlb_eft_solve(c, r, 2, 100.0, x, &m), 0);
  assert_true(x[1] == 0.0);
  assert_true(fabs(x[0] - 100.0) < 1e-9 && fabs(m - 10.0) < 1e-12);
}

static void test_flat_curve_jump(void **state) {
  (void)state;
  hlb_curve c[2];
  double x[2], m;
  /* PU 0 takes 5 s whatever the size; PU 1 takes 1 s per item. The optimum is 5 s with PU 1
   * taking up to 5 items; S(T) jumps at T = 5, which Newton cannot follow. */
  hlb_curve_from_poly(&c[0], 5.0, 0.0, 0.0, 0.0, 0.0);
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  assert_int_equal(hlb_eft_solve(c, NULL, 2, 10.0, x, &m), 0);
  assert_true(fabs(m - 5.0) <= 1e-12);
  assert_true(fabs(x[0] + x[1] - 10.0) <= 1e-12);
}

static void test_zero_items_and_single_pu(void **state) {
  (void)state;
  hlb_curve c[1];
  double x[1], m = -1;
  hlb_curve_from_poly(&c[0], 1.0, 2.0, 0.0, 0.0, 0.0);
  assert_int_equal(hlb_eft_solve(c, NULL, 1, 0.0, x, &m), 0);
  assert_true(x[0] == 0.0 && m == 0.0);
  assert_int_equal(hlb_eft_solve(c, NULL, 1, 3.0, x, &m), 0);
  assert_true(x[0] == 3.0 && fabs(m - 7.0) < 1e-12);
}

static void test_warm_start(void **state) {
  (void)state;
  hlb__rng g;
  hlb__rng_seed(&g, 7);
  enum { N = 32 };
  hlb_curve c[N];
  double x[N], xc[N], m, mc;
  double W = 1e6;
  for (unsigned p = 0; p < N; p++)
    random_curve(&g, W, &c[p]);
  hlb_eft_workspace *ws = NULL;
  assert_int_equal(hlb_eft_workspace_create(N, &ws), 0);
  assert_int_equal(hlb_eft_solve_ws(ws, c, NULL, W, x, &m), 0);
  unsigned long cold_evals, warm_evals;
  hlb_eft_workspace_stats(ws, NULL, &cold_evals);
  unsigned long warm_total = 0;
  for (int step = 0; step < 20; step++) {
    /* One new sample changes one curve by a few percent. */
    unsigned p = (unsigned)hlb__rng_below(&g, N);
    c[p].coef[HLB_TERM_U] *= 0.95 + 0.1 * hlb__rng_uniform(&g);
    assert_int_equal(hlb_eft_solve_ws(ws, c, NULL, W, x, &m), 0);
    hlb_eft_workspace_stats(ws, NULL, &warm_evals);
    warm_total += warm_evals;
    assert_int_equal(hlb_eft_solve(c, NULL, N, W, xc, &mc), 0);
    check_optimal(c, NULL, N, W, x, m);
    assert_true(fabs(m - mc) <= 1e-12 * mc);
  }
  /* Deterministic work counts, not times: a warm re-solve does less work than a cold one. */
  assert_true(warm_total < 20 * cold_evals);
  hlb_eft_workspace_destroy(ws);
}

static void test_workspace_api(void **state) {
  (void)state;
  hlb_eft_workspace *ws = (hlb_eft_workspace *)1;
  assert_int_equal(hlb_eft_workspace_create(0, &ws), HLB_EINVAL);
  assert_null(ws);
  assert_int_equal(hlb_eft_workspace_create(2, &ws), 0);
  hlb_curve c[2];
  double x[2], m, r[2] = {0.0, 1.0};
  hlb_curve_from_poly(&c[0], 0.0, 1.0, 0.01, 0.0, 0.0);
  hlb_curve_from_poly(&c[1], 0.5, 2.0, 0.0, 0.0, 0.0);
  assert_int_equal(hlb_eft_solve_ws(ws, c, r, 10.0, x, &m), 0);
  unsigned long cold, again;
  hlb_eft_workspace_stats(ws, NULL, &cold);
  /* After a reset the same problem costs exactly what the first cold solve cost. */
  hlb_eft_workspace_reset(ws);
  assert_int_equal(hlb_eft_solve_ws(ws, c, r, 10.0, x, &m), 0);
  hlb_eft_workspace_stats(ws, NULL, &again);
  assert_true(again == cold);
  check_optimal(c, r, 2, 10.0, x, m);
  assert_int_equal(hlb_eft_solve_ws(NULL, c, r, 10.0, x, &m), HLB_EINVAL);
  hlb_eft_workspace_destroy(ws);
  hlb_eft_workspace_destroy(NULL);
}

static void expect_einval(const hlb_curve *c, const double *r, unsigned n, double W,
                          const char *needle) {
  double x[4], m;
  int rc = hlb_eft_solve(c, r, n, W, x, &m);
  assert_int_equal(rc, HLB_EINVAL);
  if (!strstr(hlb_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", hlb_last_error(), needle);
}

static void test_bad_input(void **state) {
  (void)state;
  hlb_curve c[2];
  double r[2] = {0.0, NAN};
  hlb_curve_from_poly(&c[0], 0.0, 1.0, 0.0, 0.0, 0.0);
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  expect_einval(c, NULL, 0, 10.0, "n must be > 0");
  expect_einval(c, NULL, 2, -1.0, "items");
  expect_einval(c, NULL, 2, INFINITY, "items");
  expect_einval(c, r, 2, 10.0, "pu 1: ready");
  c[1].coef[HLB_TERM_U2] = NAN;
  expect_einval(c, NULL, 2, 10.0, "pu 1: coefficient of u2");
  hlb_curve_from_poly(&c[1], 0.0, -1.0, 0.0, 0.0, 0.0);
  expect_einval(c, NULL, 2, 10.0, "pu 1:");
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  c[1].coef[HLB_TERM_LOG] = -1.0;
  expect_einval(c, NULL, 2, 10.0, "pu 1: curve decreases near x = 0");
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  c[1].scale = 0.0;
  expect_einval(c, NULL, 2, 10.0, "pu 1: curve scale");
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  c[1].coef[HLB_TERM_EXP] = 1.0;
  c[1].coef[HLB_TERM_U3] = 1e300; /* time overflows to inf at W */
  expect_einval(c, NULL, 2, 1e10, "pu 1: time at x = 1e+10 is not finite");
}

/* A curve with an x ln x term dips below its time at 0+ just above 0 (1 + x + 0.5 x ln x is below
 * 1 up to x = e^-3): no share is decided there, since any time worth a share is above the dip,
 * so the solve takes the curve. It refused it when its search stepped into the dip, and the
 * hlb policy then planned a proportional split, ready times ignored (`bench_sim superlinear`'s
 * 64-PU cluster 3, two remembered passes without noise: the planned finish jumped from 2.07 to
 * 2.62 s for one solve, a PU with 0.73 s of fixed cost took a block then, and the run ended
 * 0.55 s after the others). */
static void test_dip_below_the_time_at_0(void **state) {
  (void)state;
  hlb_curve c[2];
  hlb_curve_from_poly(&c[0], 1.0, 1.0, 0.0, 0.0, 0.5);
  hlb_curve_from_poly(&c[1], 0.0, 1.0, 0.0, 0.0, 0.0);
  const double items[] = {1.001, 1.01, 1.05, 1.2, 2.0, 10.0};
  for (unsigned k = 0; k < sizeof items / sizeof items[0]; k++) {
    double x[2], t = 0.0;
    if (hlb_eft_solve(c, NULL, 2, items[k], x, &t) != 0)
      fail_msg("%g items: %s", items[k], hlb_last_error());
    assert_true(fabs(x[0] + x[1] - items[k]) <= 1e-9 * items[k]);
    double t0 = x[0] > 0 ? hlb_curve_time(&c[0], x[0]) : 0.0;
    /* Never later than the linear PU alone; at or above the curve's lowest time. */
    assert_true(t <= items[k] * (1 + 1e-9) && t >= 0.975);
    assert_true(fmax(t0, x[1]) <= t * (1 + 1e-6));
    /* Past the dip both end together. */
    if (x[0] > 0.2) assert_true(fabs(t0 - t) <= 1e-6 * t && fabs(x[1] - t) <= 1e-6 * t);
  }
}

static void test_check_curve(void **state) {
  (void)state;
  hlb_curve c;
  /* 10 + x - 0.5 x^2 + 0.02 x^3 has slope 1 - x + 0.06 x^2 < 0 on about (1.07, 15.6): the
   * sampled check and the vertex (x = 8.3) find it, naming the PU and an x inside. */
  hlb_curve_from_poly(&c, 10.0, 1.0, -0.5, 0.02, 0.0);
  assert_int_equal(hlb_eft_check_curve(&c, 3, 1.0, 100.0), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "pu 3: curve decreases at x = "));
  hlb_curve_from_poly(&c, 10.0, 1.0, 0.5, 0.02, 1e-3);
  assert_int_equal(hlb_eft_check_curve(&c, 3, 1.0, 100.0), 0);
  assert_int_equal(hlb_eft_check_curve(&c, 3, 0.0, 100.0), HLB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_affine_closed_form),
      cmocka_unit_test(test_dip_below_the_time_at_0),
      cmocka_unit_test(test_random_against_brute),
      cmocka_unit_test(test_ready_excludes_late_pu),
      cmocka_unit_test(test_flat_curve_jump),
      cmocka_unit_test(test_zero_items_and_single_pu),
      cmocka_unit_test(test_warm_start),
      cmocka_unit_test(test_workspace_api),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_check_curve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
