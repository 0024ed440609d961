/* Per-type weights by least squares (Issakhov et al. eq. 3-4): the paper's example to its printed
 * digits, minimum-norm behaviour on rank-deficient A, the non-negative solution against a
 * brute-force enumeration of active sets, and the helpers that build A and cell weights. */
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

static double residual2(const double *A, unsigned nd, unsigned nt, const double *l,
                        const double *c) {
  double r2 = 0;
  for (unsigned i = 0; i < nd; i++) {
    double r = -l[i];
    for (unsigned t = 0; t < nt; t++)
      r += A[i * nt + t] * c[t];
    r2 += r * r;
  }
  return r2;
}

/* Issakhov et al. eq. 4: c = [0.0420, 0.1097], c_1 / c_0 = 2.61, from the loads as printed. */
static void paper_example(void **state) {
  (void)state;
  double A[8] = {10, 7, 13, 4, 12, 2, 5, 8};
  double l[4] = {1.2, 0.9, 0.8, 1.1};
  double c[2];
  unsigned rank = 0;
  assert_int_equal(hlb_weights_estimate(A, 4, 2, l, NULL, c, &rank), 0);
  assert_int_equal(rank, 2);
  assert_close(c[0], 0.0420, 0.00005);
  assert_close(c[1], 0.1097, 0.00005);
  assert_close(c[1] / c[0], 2.61, 0.005);
  /* And it is the least-squares solution: the normal equations hold. */
  for (unsigned t = 0; t < 2; t++) {
    double g = 0;
    for (unsigned i = 0; i < 4; i++)
      g += A[i * 2 + t] * (A[i * 2] * c[0] + A[i * 2 + 1] * c[1] - l[i]);
    assert_close(g, 0.0, 1e-12);
  }
  /* The input is not modified (DGELSD works on a copy). */
  assert_true(A[0] == 10 && A[7] == 8 && l[3] == 1.1);
}

/* Two types that always appear together cannot be told apart: minimum norm splits evenly. */
static void rank_deficient_gives_minimum_norm(void **state) {
  (void)state;
  double A[6] = {1, 1, 2, 2, 3, 3};
  double l[3] = {2, 4, 6};
  double c[2];
  unsigned rank = 9;
  assert_int_equal(hlb_weights_estimate(A, 3, 2, l, NULL, c, &rank), 0);
  assert_int_equal(rank, 1);
  assert_close(c[0], 1.0, 1e-12);
  assert_close(c[1], 1.0, 1e-12);
  /* Fewer domains than types: also minimum norm. */
  double B[3] = {1, 2, 2};
  double lb[1] = {9};
  double cb[3];
  assert_int_equal(hlb_weights_estimate(B, 1, 3, lb, NULL, cb, &rank), 0);
  assert_int_equal(rank, 1);
  assert_close(cb[0], 1.0, 1e-12);
  assert_close(cb[1], 2.0, 1e-12);
  assert_close(cb[2], 2.0, 1e-12);
}

/* Unconstrained LS is [7/3, -2/3]; the non-negative optimum is [2, 0]. */
static void negative_weight_is_clamped_by_nnls(void **state) {
  (void)state;
  double A[6] = {1, 0, 0, 1, 1, 1};
  double l[3] = {3, 0, 1};
  double c[2];
  assert_int_equal(hlb_weights_estimate(A, 3, 2, l, NULL, c, NULL), 0);
  assert_close(c[0], 2.0, 1e-12);
  assert_true(c[1] == 0.0);
  hlb_weights_options raw = {.allow_negative = 1};
  assert_int_equal(hlb_weights_estimate(A, 3, 2, l, &raw, c, NULL), 0);
  assert_close(c[0], 7.0 / 3.0, 1e-12);
  assert_close(c[1], -2.0 / 3.0, 1e-12);
}

/* Solve the normal equations of the columns in mask by Gaussian elimination (random real A
 * has full column rank). Returns 0 when singular. */
static int solve_subset(const double *A, unsigned nd, unsigned nt, const double *l, unsigned mask,
                        double *x) {
  double M[6][7];
  unsigned idx[6], k = 0;
  for (unsigned t = 0; t < nt; t++)
    if (mask & (1u << t)) idx[k++] = t;
  for (unsigned a = 0; a < k; a++) {
    for (unsigned b = 0; b < k; b++) {
      M[a][b] = 0;
      for (unsigned i = 0; i < nd; i++)
        M[a][b] += A[i * nt + idx[a]] * A[i * nt + idx[b]];
    }
    M[a][k] = 0;
    for (unsigned i = 0; i < nd; i++)
      M[a][k] += A[i * nt + idx[a]] * l[i];
  }
  for (unsigned c = 0; c < k; c++) {
    unsigned piv = c;
    for (unsigned r = c + 1; r < k; r++)
      if (fabs(M[r][c]) > fabs(M[piv][c])) piv = r;
    if (fabs(M[piv][c]) < 1e-12) return 0;
    for (unsigned j = 0; j <= k; j++) {
      double tmp = M[c][j];
      M[c][j] = M[piv][j];
      M[piv][j] = tmp;
    }
    for (unsigned r = 0; r < k; r++)
      if (r != c) {
        double f = M[r][c] / M[c][c];
        for (unsigned j = c; j <= k; j++)
          M[r][j] -= f * M[c][j];
      }
  }
  memset(x, 0, nt * sizeof *x);
  for (unsigned a = 0; a < k; a++)
    x[idx[a]] = M[a][k] / M[a][a];
  return 1;
}

static void nnls_matches_brute_force(void **state) {
  (void)state;
  hlb__rng r;
  hlb__rng_seed(&r, 2024);
  double A[10 * 5], l[10], c[5], x[5];
  int clamped = 0;
  for (int it = 0; it < 400; it++) {
    unsigned nt = 1 + (unsigned)hlb__rng_below(&r, 5);
    unsigned nd = nt + (unsigned)hlb__rng_below(&r, 10 - nt + 1);
    for (unsigned i = 0; i < nd * nt; i++)
      A[i] = 10.0 * hlb__rng_uniform(&r);
    for (unsigned i = 0; i < nd; i++)
      l[i] = 2.0 * hlb__rng_uniform(&r);
    assert_int_equal(hlb_weights_estimate(A, nd, nt, l, NULL, c, NULL), 0);
    double best = residual2(A, nd, nt, l, (double[5]){0});
    for (unsigned mask = 1; mask < (1u << nt); mask++) {
      if (!solve_subset(A, nd, nt, l, mask, x)) continue;
      int ok = 1;
      for (unsigned t = 0; t < nt; t++)
        ok &= x[t] >= 0;
      double r2 = residual2(A, nd, nt, l, x);
      if (ok && r2 < best) best = r2;
    }
    for (unsigned t = 0; t < nt; t++) {
      assert_true(c[t] >= 0);
      clamped += c[t] == 0;
    }
    double got = residual2(A, nd, nt, l, c);
    if (!(fabs(got - best) <= 1e-9 * (1 + best)))
      fail_msg("instance %d (%u x %u): residual %.17g, best non-negative %.17g", it, nd, nt, got,
               best);
  }
  assert_true(clamped > 50); /* the instances do exercise the non-negative path */
}

static void rejects_bad_input(void **state) {
  (void)state;
  double A[4] = {1, 2, 3, 4}, l[2] = {1, 1}, c[2];
  assert_int_equal(hlb_weights_estimate(A, 0, 2, l, NULL, c, NULL), HLB_EINVAL);
  assert_int_equal(hlb_weights_estimate(A, 2, 0, l, NULL, c, NULL), HLB_EINVAL);
  double An[4] = {1, 2, NAN, 4};
  assert_int_equal(hlb_weights_estimate(An, 2, 2, l, NULL, c, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "A[1][0]"));
  double Aneg[4] = {1, -2, 3, 4};
  assert_int_equal(hlb_weights_estimate(Aneg, 2, 2, l, NULL, c, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "A[0][1]"));
  double ln[2] = {1, INFINITY};
  assert_int_equal(hlb_weights_estimate(A, 2, 2, ln, NULL, c, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "load[1]"));
  double Z[4] = {0};
  assert_int_equal(hlb_weights_estimate(Z, 2, 2, l, NULL, c, NULL), HLB_ENUMERIC);
  assert_non_null(strstr(hlb_last_error(), "rank 0"));
}

static void counts_and_cells(void **state) {
  (void)state;
  unsigned type[7] = {0, 1, 1, 0, 2, 2, 2};
  size_t off[4] = {0, 3, 3, 7};
  double A[9];
  assert_int_equal(hlb_weights_counts(type, 7, 3, off, 3, A), 0);
  double want[9] = {1, 2, 0, 0, 0, 0, 1, 0, 3};
  assert_memory_equal(A, want, sizeof want);
  double c[3] = {0.5, 1.0, 2.0}, w[7];
  assert_int_equal(hlb_weights_cells(type, 7, c, 3, w), 0);
  double wwant[7] = {0.5, 1, 1, 0.5, 2, 2, 2};
  assert_memory_equal(w, wwant, sizeof wwant);
  unsigned bad[2] = {0, 3};
  size_t off2[2] = {0, 2};
  assert_int_equal(hlb_weights_counts(bad, 2, 3, off2, 1, A), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "type[1]"));
  double cneg[3] = {1, -1, 1};
  assert_int_equal(hlb_weights_cells(type, 7, cneg, 3, w), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "c[1]"));
  /* Round trip: loads generated from known weights are recovered from the counts. */
  double truth[3] = {0.2, 0.7, 1.1}, l[3];
  size_t off3[4] = {0, 2, 5, 7};
  unsigned type3[7] = {0, 1, 2, 0, 1, 1, 2};
  double A3[9], est[3];
  assert_int_equal(hlb_weights_counts(type3, 7, 3, off3, 3, A3), 0);
  for (unsigned i = 0; i < 3; i++)
    l[i] = A3[i * 3] * truth[0] + A3[i * 3 + 1] * truth[1] + A3[i * 3 + 2] * truth[2];
  assert_int_equal(hlb_weights_estimate(A3, 3, 3, l, NULL, est, NULL), 0);
  for (unsigned t = 0; t < 3; t++)
    assert_close(est[t], truth[t], 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(paper_example),
      cmocka_unit_test(rank_deficient_gives_minimum_norm),
      cmocka_unit_test(negative_weight_is_clamped_by_nnls),
      cmocka_unit_test(nnls_matches_brute_force),
      cmocka_unit_test(rejects_bad_input),
      cmocka_unit_test(counts_and_cells),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
