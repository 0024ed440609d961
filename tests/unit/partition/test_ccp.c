/* Exact chains-on-chains partitioning: the solver's bottleneck must equal a brute-force
 * enumeration of every split on thousands of small random instances (zero weights, one rank,
 * more ranks than cells, heterogeneous speeds), and bad input must be named. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "hlb/ccp.h"
#include "hlb/error.h"

#define MAXM 12
#define MAXP 5

static double cost(const double *prefix, const double *speed, unsigned p, size_t b, size_t e) {
  return (prefix[e] - prefix[b]) / (speed ? speed[p] : 1.0);
}

/* Best bottleneck over every split of cells [b, m) between ranks p..P-1. */
static double brute(const double *prefix, size_t m, const double *speed, unsigned P, unsigned p,
                    size_t b) {
  if (p == P - 1) return cost(prefix, speed, p, b, m);
  double best = INFINITY;
  for (size_t e = b; e <= m; e++) {
    double here = cost(prefix, speed, p, b, e);
    double rest = brute(prefix, m, speed, P, p + 1, e);
    double v = here > rest ? here : rest;
    if (v < best) best = v;
  }
  return best;
}

static double split_cost(const double *prefix, const double *speed, unsigned P, const size_t *off) {
  double worst = 0.0;
  for (unsigned p = 0; p < P; p++) {
    double c = cost(prefix, speed, p, off[p], off[p + 1]);
    if (c > worst) worst = c;
  }
  return worst;
}

static void random_instance(hlb__rng *r, int integer, size_t *m, unsigned *P, double *w,
                            double *speed, int *use_speed) {
  *m = 1 + (size_t)hlb__rng_below(r, MAXM);
  *P = 1 + (unsigned)hlb__rng_below(r, MAXP);
  for (size_t k = 0; k < *m; k++) {
    /* A third of the cells weigh nothing: empty-looking stretches must not confuse it. */
    if (hlb__rng_below(r, 3) == 0)
      w[k] = 0.0;
    else
      w[k] = integer ? (double)(1 + hlb__rng_below(r, 9)) : hlb__rng_uniform(r) * 10.0;
  }
  *use_speed = hlb__rng_below(r, 4) != 0;
  for (unsigned p = 0; p < *P; p++)
    speed[p] = integer ? (double)(1 + hlb__rng_below(r, 4)) : 0.25 + hlb__rng_uniform(r) * 3.0;
}

static void check_against_brute(int integer, unsigned long seed, int rounds) {
  hlb__rng r;
  hlb__rng_seed(&r, seed);
  double w[MAXM], prefix[MAXM + 1], speed[MAXP];
  size_t off[MAXP + 1];
  for (int it = 0; it < rounds; it++) {
    size_t m;
    unsigned P;
    int use_speed;
    random_instance(&r, integer, &m, &P, w, speed, &use_speed);
    const double *sp = use_speed ? speed : NULL;
    assert_int_equal(hlb_ccp_prefix(w, m, prefix), 0);
    double got = -1.0;
    assert_int_equal(hlb_ccp_solve(w, m, sp, P, off, &got), 0);
    double want = brute(prefix, m, sp, P, 0, 0);
    if (got != want)
      fail_msg("instance %d: m %zu P %u: bottleneck %.17g, brute force %.17g", it, m, P, got, want);
    assert_int_equal(hlb_ccp_check_offsets(off, P, m), 0);
    /* The returned split really has the returned bottleneck. */
    assert_true(split_cost(prefix, sp, P, off) == got);
    /* Same answer from precomputed prefix sums (the allocation-free path). */
    size_t off2[MAXP + 1];
    double got2;
    assert_int_equal(hlb_ccp_solve_prefix(prefix, m, sp, P, off2, &got2), 0);
    assert_true(got2 == got);
    assert_memory_equal(off, off2, (P + 1) * sizeof *off);
    if (integer) {
      /* Integer weights: prefix differences are exact, so cell-by-cell evaluation agrees. */
      double ev;
      assert_int_equal(hlb_ccp_evaluate(w, m, sp, P, off, &ev), 0);
      assert_true(ev == got);
    }
  }
}

static void matches_brute_force_integer(void **state) {
  (void)state;
  check_against_brute(1, 1234, 3000);
}

static void matches_brute_force_real(void **state) {
  (void)state;
  check_against_brute(0, 98765, 3000);
}

static void one_rank_takes_everything(void **state) {
  (void)state;
  double w[] = {1, 2, 3, 4};
  double s = 2.0;
  size_t off[2];
  double b;
  assert_int_equal(hlb_ccp_solve(w, 4, &s, 1, off, &b), 0);
  assert_int_equal(off[0], 0);
  assert_int_equal(off[1], 4);
  assert_true(b == 5.0);
}

static void all_zero_weights(void **state) {
  (void)state;
  double w[5] = {0};
  size_t off[4];
  double b = -1;
  assert_int_equal(hlb_ccp_solve(w, 5, NULL, 3, off, &b), 0);
  assert_true(b == 0.0);
  assert_int_equal(hlb_ccp_check_offsets(off, 3, 5), 0);
}

static void more_ranks_than_cells(void **state) {
  (void)state;
  double w[] = {5, 1, 5};
  size_t off[7];
  double b;
  assert_int_equal(hlb_ccp_solve(w, 3, NULL, 6, off, &b), 0);
  assert_true(b == 5.0);
  assert_int_equal(hlb_ccp_check_offsets(off, 6, 3), 0);
}

static void known_heterogeneous_split(void **state) {
  (void)state;
  /* Ten unit cells, a rank of speed 4 between two of speed 1. The candidates below 2 are
   * 5/3-ish bounds no split reaches: at 7/4 the ranks hold 1 + 7 + 1 = 9 cells. At 2 the
   * greedy split is 2 + 8 + 0. */
  double w[10];
  for (int k = 0; k < 10; k++)
    w[k] = 1.0;
  double s[] = {1.0, 4.0, 1.0};
  size_t off[4];
  double b;
  assert_int_equal(hlb_ccp_solve(w, 10, s, 3, off, &b), 0);
  assert_true(b == 2.0);
  assert_int_equal(off[1], 2);
  assert_int_equal(off[2], 10); /* the fast rank takes as much as it can: 8 / 4 = 2 */
}

static void rejects_bad_input(void **state) {
  (void)state;
  double w[] = {1, 2, 3};
  double s[] = {1, 1};
  size_t off[3];
  double b;
  assert_int_equal(hlb_ccp_solve(w, 0, s, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "m must be > 0"));
  assert_int_equal(hlb_ccp_solve(w, 3, s, 0, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "P must be > 0"));
  double bad_w[] = {1, NAN, 3};
  assert_int_equal(hlb_ccp_solve(bad_w, 3, s, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "w[1]"));
  double neg_w[] = {1, 2, -3};
  assert_int_equal(hlb_ccp_solve(neg_w, 3, s, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "w[2]"));
  assert_non_null(strstr(hlb_last_error(), "-3"));
  double bad_s[] = {1, 0};
  assert_int_equal(hlb_ccp_solve(w, 3, bad_s, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "speed[1]"));
  double inf_s[] = {INFINITY, 1};
  assert_int_equal(hlb_ccp_solve(w, 3, inf_s, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "speed[0]"));
  double huge[] = {1e308, 1e308};
  assert_int_equal(hlb_ccp_solve(huge, 2, NULL, 1, off, &b), HLB_ERANGE);
  double bad_prefix[] = {0, 2, 1, 3};
  assert_int_equal(hlb_ccp_solve_prefix(bad_prefix, 3, NULL, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "prefix[2]"));
  double shifted_prefix[] = {1, 2, 3, 4};
  assert_int_equal(hlb_ccp_solve_prefix(shifted_prefix, 3, NULL, 2, off, &b), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "prefix[0]"));
}

static void offsets_are_checked(void **state) {
  (void)state;
  size_t good[] = {0, 2, 2, 5};
  assert_int_equal(hlb_ccp_check_offsets(good, 3, 5), 0);
  size_t start[] = {1, 2, 2, 5};
  assert_int_equal(hlb_ccp_check_offsets(start, 3, 5), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "offsets[0]"));
  size_t down[] = {0, 3, 2, 5};
  assert_int_equal(hlb_ccp_check_offsets(down, 3, 5), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "offsets[2]"));
  size_t end[] = {0, 2, 2, 4};
  assert_int_equal(hlb_ccp_check_offsets(end, 3, 5), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "offsets[3]"));
  size_t past[] = {0, 7, 5};
  assert_int_equal(hlb_ccp_check_offsets(past, 2, 5), HLB_EINVAL);
  double w[] = {1, 1, 1, 1, 1};
  double b;
  assert_int_equal(hlb_ccp_evaluate(w, 5, NULL, 3, good, &b), 0);
  assert_true(b == 3.0);
  assert_int_equal(hlb_ccp_evaluate(w, 5, NULL, 3, down, &b), HLB_EINVAL);
}

static void counts_and_offsets_convert(void **state) {
  (void)state;
  size_t counts[4] = {3, 0, 5, 2}, off[5], back[4];
  assert_int_equal(hlb_ccp_offsets_from_counts(counts, 4, 10, off), 0);
  size_t want[5] = {0, 3, 3, 8, 10};
  assert_memory_equal(off, want, sizeof want);
  assert_int_equal(hlb_ccp_counts_from_offsets(off, 4, 10, back), 0);
  assert_memory_equal(back, counts, sizeof counts);
  assert_int_equal(hlb_ccp_offsets_from_counts(counts, 4, 11, off), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "add up to 10"));
  size_t huge[2] = {(size_t)-1, 2};
  assert_int_equal(hlb_ccp_offsets_from_counts(huge, 2, 1, off), HLB_EINVAL);
  assert_int_equal(hlb_ccp_offsets_from_counts(counts, 0, 10, off), HLB_EINVAL);
  size_t bad[3] = {0, 4, 3};
  assert_int_equal(hlb_ccp_counts_from_offsets(bad, 2, 3, back), HLB_EINVAL);
}

/* A larger instance: the optimum is no worse than any other split we can think of, and no
 * better than the continuous lower bound total / sum(speed) or the heaviest cell on the
 * fastest rank. */
static void large_instance_bounds(void **state) {
  (void)state;
  enum { M = 20000, P = 37 };
  double *w = malloc(M * sizeof *w);
  double speed[P];
  size_t off[P + 1], even[P + 1];
  assert_non_null(w);
  hlb__rng r;
  hlb__rng_seed(&r, 7);
  double total = 0, heaviest = 0, ssum = 0, smax = 0;
  for (size_t k = 0; k < M; k++) {
    w[k] = hlb__rng_uniform(&r) < 0.1 ? 50.0 * hlb__rng_uniform(&r) : hlb__rng_uniform(&r);
    total += w[k];
    if (w[k] > heaviest) heaviest = w[k];
  }
  for (unsigned p = 0; p < P; p++) {
    speed[p] = 0.5 + 2.0 * hlb__rng_uniform(&r);
    ssum += speed[p];
    if (speed[p] > smax) smax = speed[p];
  }
  double b, be;
  assert_int_equal(hlb_ccp_solve(w, M, speed, P, off, &b), 0);
  assert_int_equal(hlb_ccp_check_offsets(off, P, M), 0);
  for (unsigned p = 0; p <= P; p++)
    even[p] = (size_t)M * p / P;
  assert_int_equal(hlb_ccp_evaluate(w, M, speed, P, even, &be), 0);
  assert_true(b <= be);
  assert_true(b >= total / ssum * (1 - 1e-12));
  assert_true(b >= heaviest / smax * (1 - 1e-12));
  /* Near the continuous bound: one cell's worth of slack per rank at most. */
  assert_true(b <= total / ssum + heaviest / 0.5);
  free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matches_brute_force_integer), cmocka_unit_test(matches_brute_force_real),
      cmocka_unit_test(one_rank_takes_everything),   cmocka_unit_test(all_zero_weights),
      cmocka_unit_test(more_ranks_than_cells),       cmocka_unit_test(known_heterogeneous_split),
      cmocka_unit_test(rejects_bad_input),           cmocka_unit_test(offsets_are_checked),
      cmocka_unit_test(counts_and_offsets_convert),  cmocka_unit_test(large_instance_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
