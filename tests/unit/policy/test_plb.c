/* plb-hec, plb-hac and hlb driven through the real balancer by a deterministic event-driven
 * driver (driver.c): PUs with known linear curves, so every expected block size follows from
 * the papers' rules by hand. Every run is also checked for exactly-once processing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "driver.h"
#include "hlb/error.h"
#include "policy/plb_common.h"

/* Grants of one PU, in order. */
static size_t grants_of(const trun *r, unsigned pu, const tev **out, size_t max) {
  size_t k = 0;
  for (size_t i = 0; i < r->n_ev && k < max; i++)
    if (r->ev[i].kind == 0 && r->ev[i].pu == pu) out[k++] = &r->ev[i];
  return k;
}

static void run_ok(const char *policy, const char *params, const tpu *pus, unsigned n, size_t items,
                   trun *r) {
  int rc = tdrive(policy, params, pus, n, items, 1, r);
  if (rc) fail_msg("%s: %s: %s", policy, hlb_err_name(rc), hlb_last_error());
  assert_true(r->exactly_once);
}

/* Four PUs, speeds 8, 4, 2, 1 (PU 0 fastest), no fixed cost. */
static void speeds_8421(tpu *p, double per_item_fast) {
  memset(p, 0, 4 * sizeof *p);
  for (unsigned i = 0; i < 4; i++)
    p[i].per_item_s = per_item_fast * (double)(1u << i);
}

/* PLB-HeC III.B: round r gives PU k x_init * 2^r * t_f / t_k, and rounds are synchronous. */
static void hec_training_follows_multipliers(void **state) {
  (void)state;
  tpu pus[4];
  speeds_8421(pus, 1.25e-5);
  trun r;
  run_ok("plb-hec", NULL, pus, 4, 600000, &r);
  const size_t x_init = 300; /* initial_fraction 0.002 * 600000 / 4 */
  double round_end[4] = {0};
  for (unsigned p = 0; p < 4; p++) {
    const tev *g[8] = {0};
    assert_true(grants_of(&r, p, g, 8) >= 5);
    double ratio = 1.0 / (double)(1u << p); /* t_f / t_k */
    for (unsigned k = 0; k < 4; k++) {
      double want = k == 0 ? (double)x_init : (double)x_init * (double)(1u << k) * ratio;
      assert_int_equal(g[k]->count, (size_t)llround(want));
      double end = g[k]->t + tpu_time(&pus[p], (double)g[k]->count, g[k]->t);
      round_end[k] = end > round_end[k] ? end : round_end[k];
    }
  }
  /* Round k + 1 starts for every PU only after the last block of round k is back. */
  for (unsigned p = 0; p < 4; p++) {
    const tev *g[8] = {0};
    grants_of(&r, p, g, 8);
    for (unsigned k = 0; k + 1 < 4; k++)
      assert_true(g[k + 1]->t >= round_end[k] - 1e-12);
    /* Then the equal-time split of one step (5 % of 600000) by speed 8:4:2:1. */
    double want = 30000.0 * 8.0 / 15.0 / (double)(1u << p);
    assert_true(fabs((double)g[4]->count - want) <= 0.01 * want + 1);
  }
  free(r.ev);
}

/* Time the execution phase starts: the fifth grant of PU 0. */
static double exec_start(const trun *r) {
  const tev *g[8] = {0};
  assert_true(grants_of(r, 0, g, 8) >= 5);
  return g[4]->t;
}

static size_t waits_after(const trun *r, double t) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_ev; i++)
    n += r->ev[i].kind == 1 && r->ev[i].t > t;
  return n;
}

/* Block of `pu` granted first at or after t. */
static size_t block_after(const trun *r, unsigned pu, double t, unsigned skip) {
  for (size_t i = 0; i < r->n_ev; i++)
    if (r->ev[i].kind == 0 && r->ev[i].pu == pu && r->ev[i].t >= t && skip-- == 0)
      return r->ev[i].count;
  return 0;
}

/* PLB-HeC III.D: a PU slowed 2x makes block times differ by > 10 %: the others wait for a
 * synchronising rebalance, after which the slowed PU gets smaller blocks. */
static void hec_rebalances_on_spread(void **state) {
  (void)state;
  tpu pus[4];
  speeds_8421(pus, 1.25e-5);
  pus[0].change_at = 2.0;
  pus[0].factor = 2.0;
  trun r;
  run_ok("plb-hec", NULL, pus, 4, 600000, &r);
  assert_true(exec_start(&r) < 2.0);
  /* No rebalance while the split is right. */
  for (size_t i = 0; i < r.n_ev; i++)
    if (r.ev[i].kind == 1 && r.ev[i].t > exec_start(&r)) assert_true(r.ev[i].t > 2.0);
  assert_true(waits_after(&r, 2.0) > 0);
  double first_wait = INFINITY;
  for (size_t i = 0; i < r.n_ev && first_wait == INFINITY; i++)
    if (r.ev[i].kind == 1 && r.ev[i].t > 2.0) first_wait = r.ev[i].t;
  /* After the synchronisation the slowed PU gets less and PU 1 more. The refit uses every
   * sample (III.D), old ones included, so the first correction is partial. */
  size_t before = block_after(&r, 0, 1.5, 0), after = block_after(&r, 0, first_wait, 0);
  size_t b1 = block_after(&r, 1, 1.5, 0), a1 = block_after(&r, 1, first_wait, 0);
  assert_true(after > 0 && a1 > 0);
  assert_true((double)after <= 0.95 * (double)before);
  assert_true((double)a1 >= 1.05 * (double)b1);
  free(r.ev);

  /* A 5 % slowdown stays under the 10 % threshold: no rebalance. */
  pus[0].factor = 1.05;
  run_ok("plb-hec", NULL, pus, 4, 600000, &r);
  assert_int_equal(waits_after(&r, exec_start(&r)), 0);
  free(r.ev);
}

/* PLB-HAC 3.3: a PU that finishes >= 400 ms early gets a gap-filling block of the gap's size;
 * without surprises, blocks keep their size until 70 % of the data, then shrink by 0.9. */
static void hac_gap_filling_and_decay(void **state) {
  (void)state;
  tpu pus[4];
  speeds_8421(pus, 1.25e-4); /* execution blocks of about 2 s */
  trun r;
  run_ok("plb-hac", NULL, pus, 4, 600000, &r);
  const tev *g[4096] = {0};
  size_t n0 = grants_of(&r, 0, g, 4096);
  /* The 70 % point in grant order. */
  double cum = 0, t70 = INFINITY;
  for (size_t i = 0; i < r.n_ev; i++)
    if (r.ev[i].kind == 0 && (cum += (double)r.ev[i].count) >= 0.7 * 600000 && t70 == INFINITY)
      t70 = r.ev[i].t;
  size_t regular = g[2]->count, decayed = 0;
  for (size_t k = 3; k < n0; k++) {
    if (g[k]->t <= t70) {
      assert_true(fabs((double)g[k]->count - (double)regular) <= 0.01 * (double)regular + 1);
    } else if (k + 1 < n0) { /* the last block is clipped by the pool */
      double ratio = (double)g[k]->count / (double)g[k - 1]->count;
      if (g[k - 1]->t > t70 || ratio < 0.99) {
        assert_true(ratio > 0.85 && ratio < 0.95);
        decayed++;
      }
    }
  }
  assert_true(decayed >= 3);
  free(r.ev);

  /* PU 1 becomes twice as fast at t = 15 s: its next block ends ~1 s early. */
  pus[1].change_at = 15.0;
  pus[1].factor = 0.5;
  run_ok("plb-hac", NULL, pus, 4, 600000, &r);
  size_t n1 = grants_of(&r, 1, g, 4096);
  int gap_seen = 0;
  for (size_t k = 3; k < n1 && !gap_seen; k++) {
    double ratio = (double)g[k]->count / (double)g[k - 1]->count;
    if (g[k]->t < 15.0) {
      assert_true(ratio > 0.99 && ratio < 1.01); /* no gap block before the change */
    } else if (ratio > 0.3 && ratio < 0.7) {
      gap_seen = 1; /* about half a block: the ~1 s gap of a ~2 s block */
    }
  }
  assert_true(gap_seen);
  free(r.ev);
}

static double items_after(const trun *r, unsigned pu, double t) {
  double s = 0;
  for (size_t i = 0; i < r->n_ev; i++)
    if (r->ev[i].kind == 0 && r->ev[i].pu == pu && r->ev[i].t >= t) s += (double)r->ev[i].count;
  return s;
}

/* Two "GPUs" and two "CPUs" 8x slower; GPU A (PU 0) is slowed 2x a third of the way through
 * (PLB-HAC 5.4, Fig. 6). */
static void fig6_pus(tpu *p) {
  memset(p, 0, 4 * sizeof *p);
  p[0].per_item_s = p[1].per_item_s = 1e-4;
  p[2].per_item_s = p[3].per_item_s = 8e-4;
  p[0].change_at = 20.0;
  p[0].factor = 2.0;
}

static void hac_adapts_to_slowdown(void **state) {
  (void)state;
  tpu pus[4];
  fig6_pus(pus);
  trun r;
  run_ok("plb-hac", NULL, pus, 4, 1000000, &r);
  size_t a0 = block_after(&r, 0, 15.0, 0), b0 = block_after(&r, 1, 15.0, 0);
  size_t a4 = block_after(&r, 0, 20.0, 4), b4 = block_after(&r, 1, 20.0, 4);
  assert_true(a0 > 0 && b0 > 0 && a4 > 0 && b4 > 0);
  assert_true((double)a4 <= 0.85 * (double)a0); /* A's blocks shrink within a few blocks */
  assert_true((double)b4 >= 1.05 * (double)b0); /* and B takes up the slack */
  free(r.ev);
}

static void hlb_adapts_to_slowdown(void **state) {
  (void)state;
  tpu pus[4];
  fig6_pus(pus);
  trun r;
  run_ok("hlb", NULL, pus, 4, 1000000, &r);
  /* Before the change A and B are twins; after it, A does about half of B's work. */
  double a = items_after(&r, 0, 20.0), b = items_after(&r, 1, 20.0);
  assert_true(b > 0);
  assert_true(a / b < 0.7);
  free(r.ev);
}

/* Eight PUs with speeds spread 30x, small fixed costs, 5 % jitter. */
static void hetero8(tpu *p) {
  static const double speed[8] = {30, 20, 12, 6, 4, 2, 1.5, 1};
  memset(p, 0, 8 * sizeof *p);
  for (unsigned i = 0; i < 8; i++) {
    p[i].per_item_s = 3e-5 / speed[i];
    p[i].fixed_s = 1e-3 * (1 + i % 4);
    p[i].noise = 0.05;
  }
}

static void hlb_near_lower_bound(void **state) {
  (void)state;
  tpu pus[8];
  hetero8(pus);
  const size_t n = 4000000;
  double lb = tbound(pus, 8, n);
  static const char *const names[] = {"hlb", "greedy", "plb-hec", "plb-hac"};
  double ms[4];
  for (unsigned i = 0; i < 4; i++) {
    trun r;
    run_ok(names[i], NULL, pus, 8, n, &r);
    ms[i] = r.makespan;
    print_message("  %-8s makespan %.4f s = %.4f x bound, %zu blocks\n", names[i], ms[i],
                  ms[i] / lb, r.blocks);
    free(r.ev);
  }
  assert_true(ms[0] <= 1.05 * lb);
  assert_true(ms[0] <= ms[1]);
}

/* NaN measurements and lost blocks: every policy still finishes, each item once. */
static void survives_bad_samples_and_failures(void **state) {
  (void)state;
  static const char *const names[] = {"hlb", "plb-hec", "plb-hac"};
  tpu pus[8];
  hetero8(pus);
  pus[1].nan_every = 3;
  pus[2].fail_every = 4;
  pus[3].nan_every = 1; /* never a usable measurement */
  for (unsigned i = 0; i < 3; i++) {
    trun r;
    run_ok(names[i], NULL, pus, 8, 500000, &r);
    assert_true(r.makespan > 0);
    free(r.ev);
  }
}

/* Fewer items than PUs, a granularity that does not divide the items, one PU. */
static void tiny_and_odd_runs_finish(void **state) {
  (void)state;
  static const char *const names[] = {"hlb", "plb-hec", "plb-hac"};
  static const size_t items[] = {1, 5, 97, 100003};
  static const size_t gran[] = {1, 1, 7, 64};
  tpu pus[8];
  hetero8(pus);
  for (unsigned i = 0; i < 3; i++)
    for (unsigned k = 0; k < 4; k++)
      for (unsigned n = 1; n <= 8; n += 7) {
        trun r;
        int rc = tdrive(names[i], NULL, pus, n, items[k], gran[k], &r);
        if (rc)
          fail_msg("%s, %zu items, granularity %zu, %u PUs: %s", names[i], items[k], gran[k], n,
                   hlb_last_error());
        assert_true(r.exactly_once);
        for (size_t e = 0; e < r.n_ev; e++) /* blocks are whole granules, except the pool's tail */
          if (r.ev[e].kind == 0 && r.ev[e].count % gran[k] != 0)
            assert_true(r.ev[e].count < gran[k] || items[k] % gran[k] != 0);
        free(r.ev);
      }
}

static void scales_to_1000_pus(void **state) {
  (void)state;
  enum { N = 1000 };
  tpu *pus = calloc(N, sizeof *pus);
  for (unsigned i = 0; i < N; i++) {
    pus[i].per_item_s = 1e-4 / (1.0 + (i * 7919 % 30));
    pus[i].fixed_s = 1e-4;
  }
  trun r;
  run_ok("hlb", NULL, pus, N, 20000000, &r);
  double lb = tbound(pus, N, 20000000);
  print_message("  hlb 1000 PUs: %.4f x bound, %zu blocks, %.3f s in the policy\n", r.makespan / lb,
                r.blocks, r.solver_s);
  assert_true(r.makespan <= 1.05 * lb);
  free(r.ev);
  free(pus);
}

/* Items granted to one PU. */
static size_t items_of(const trun *r, unsigned pu) {
  size_t k = 0;
  for (size_t i = 0; i < r->n_ev; i++)
    if (r->ev[i].kind == 0 && r->ev[i].pu == pu) k += r->ev[i].count;
  return k;
}

/* bench/exec/bench_throttle's case in the driver: matmul rows on two PUs, the second 4x
 * slower (fixed cost per block included: each block streams the whole second matrix), 10 %
 * jitter. Ideal share of the slow PU: 20 % minus its fixed cost. hlb used to give it 11.9 %
 * and run 1.305 x the bound at the larger fixed cost (1.116 x at the smaller): the mean rate
 * of a PU's small first blocks hid their fixed cost in the cost per item, so the slow PU
 * looked slower than it is and kept getting small blocks. Now 1.099 x and 1.213 x; the rest
 * is the 4x-per-block ramp paying the fixed cost once per step (a faster ramp gated on a
 * clear line cost up to 2 % on the simulator's presets, whose curves are not lines). */
static void hlb_slow_pu_with_fixed_cost(void **state) {
  (void)state;
  static const double fixed[2] = {3e-3, 1e-2}, limit[2] = {1.11, 1.25};
  for (unsigned k = 0; k < 2; k++) {
    tpu pus[2];
    memset(pus, 0, sizeof pus);
    pus[0] = (tpu){.fixed_s = fixed[k], .per_item_s = 2.2e-4, .noise = 0.1};
    pus[1] = (tpu){.fixed_s = 4 * fixed[k], .per_item_s = 4 * 2.2e-4, .noise = 0.1};
    const size_t n = 2048;
    double lb = tbound(pus, 2, n);
    trun h, g;
    run_ok("hlb", NULL, pus, 2, n, &h);
    run_ok("greedy", NULL, pus, 2, n, &g);
    double slow = (double)items_of(&h, 1) / (double)n;
    print_message("  fixed %g s: hlb %.3f x bound (slow PU %.1f %%, %zu blocks), greedy %.3f x\n",
                  fixed[k], h.makespan / lb, 100 * slow, h.blocks, g.makespan / lb);
    assert_true(h.makespan <= limit[k] * lb);
    assert_true(h.makespan < g.makespan);
    free(h.ev);
    free(g.ev);
  }
}

/* presets/flexmpi-htc5-64-jacobi.json in the driver: 64 ranks of four classes (0.32-0.64 s per
 * row, no fixed cost), 1 % jitter, 78 or 781 rows per rank. Greedy with 1- and 5-row chunks
 * ends within one row of the bound. hlb took one granule's time for the fixed cost, so with
 * none it kept every block (the last ones included) at 1 / overhead_max = 20 rows or more:
 * the pool ran dry while some ranks still had up to 40 rows to do, and hlb ended 1.7 %
 * behind greedy at 5000 rows (1.0248 x bound vs 1.0076). Now the tail shrinks to single rows
 * that go to whoever would finish them first: 1.0060 and 1.0008 x bound, greedy 1.0076 and
 * 1.0027. (Shrinking alone, with the old rule "wait while your share is under half a row",
 * left the last rows to one slow rank while 63 waited: 1.29 x.) */
static void hlb_no_fixed_cost_tail(void **state) {
  (void)state;
  static const double per_row[4] = {0.383845, 0.319871, 0.644, 0.410529};
  static const size_t items[2] = {5000, 50000};
  tpu pus[64];
  memset(pus, 0, sizeof pus);
  for (unsigned p = 0; p < 64; p++)
    pus[p] = (tpu){.per_item_s = per_row[p / 16], .noise = 0.01};
  for (unsigned k = 0; k < 2; k++) {
    double lb = tbound(pus, 64, items[k]);
    trun h, g;
    run_ok("hlb", NULL, pus, 64, items[k], &h);
    run_ok("greedy", NULL, pus, 64, items[k], &g);
    print_message("  %zu rows: hlb %.4f x bound (%zu blocks), greedy %.4f x bound\n", items[k],
                  h.makespan / lb, h.blocks, g.makespan / lb);
    assert_true(h.makespan <= 1.005 * g.makespan);
    assert_true(h.makespan <= 1.01 * lb);
    free(h.ev);
    free(g.ev);
  }
}

/* The min/max tree behind plb-hec's spread check: same answers as a scan, PUs leaving. */
static void minmax_tree_matches_scan(void **state) {
  (void)state;
  enum { N = 37 };
  hlb__plb_minmax m;
  double v[N];
  int in[N] = {0};
  assert_int_equal(hlb__plb_minmax_init(&m, N), 0);
  double lo, hi;
  hlb__plb_minmax_range(&m, &lo, &hi);
  assert_true(lo > hi); /* empty */
  unsigned long z = 12345;
  for (unsigned step = 0; step < 2000; step++) {
    z = z * 6364136223846793005ul + 1442695040888963407ul;
    unsigned p = (unsigned)(z >> 33) % N;
    if ((z >> 20) % 5 == 0) {
      hlb__plb_minmax_remove(&m, p);
      in[p] = 0;
    } else {
      v[p] = (double)((z >> 40) % 1000) / 7.0 - 50.0;
      hlb__plb_minmax_set(&m, p, v[p]);
      in[p] = 1;
    }
    double elo = INFINITY, ehi = -INFINITY;
    for (unsigned q = 0; q < N; q++)
      if (in[q]) {
        elo = fmin(elo, v[q]);
        ehi = fmax(ehi, v[q]);
      }
    hlb__plb_minmax_range(&m, &lo, &hi);
    assert_true(lo == elo && hi == ehi);
  }
  hlb__plb_minmax_clear(&m);
  hlb__plb_minmax_range(&m, &lo, &hi);
  assert_true(lo > hi);
  hlb__plb_minmax_free(&m);
}

/* Bisections sharing their first steps through a memo (hlb's three sizes per block) give
 * exactly what each gives alone: on curves with ln and e^u terms, times spread over the whole
 * range, the range changed now and then (the memo starts afresh), and two curves in turns. */
static void inverse_memo_matches_plain(void **state) {
  (void)state;
  unsigned long z = 777;
  unsigned reused = 0;
  for (unsigned set = 0; set < 300; set++) {
    hlb_curve c[2];
    for (int j = 0; j < 2; j++) {
      z = z * 6364136223846793005ul + 1442695040888963407ul;
      double a = 1e-3 * (double)((z >> 40) % 100 + 1);
      memset(&c[j], 0, sizeof c[j]);
      c[j].scale = 1e4 * (double)((z >> 20) % 9 + 1);
      c[j].coef[HLB_TERM_CONST] = a;
      c[j].coef[HLB_TERM_U] = 10.0 * a * (double)((z >> 30) % 7 + 1);
      if (set % 3 == 1) c[j].coef[HLB_TERM_ULOG] = 0.5 * a;
      if (set % 3 == 2) c[j].coef[HLB_TERM_EXP] = 0.1 * a;
      c[j].transfer_per_item = set % 2 ? 1e-7 : 0.0;
    }
    hlb__plb_memo memo;
    memo.c = NULL;
    double x_max = 1e3 * (double)(set % 50 + 1);
    for (unsigned k = 0; k < 12; k++) {
      z = z * 6364136223846793005ul + 1442695040888963407ul;
      if (k == 6) x_max *= 1.5;
      const hlb_curve *cv = &c[(k / 4) % 2];
      double t = hlb_curve_time(cv, x_max) * (double)((z >> 33) % 1200) / 1000.0;
      unsigned before = memo.n;
      double got = hlb__plb_inverse_memo(&memo, cv, t, x_max);
      double want = hlb__plb_inverse(cv, t, x_max);
      if (got != want)
        fail_msg("set %u, call %u: %.17g with the memo, %.17g without", set, k, got, want);
      reused += memo.c == cv && before > 0 && memo.n > 0;
    }
  }
  assert_true(reused > 1000);
}

static void bad_parameters_are_named(void **state) {
  (void)state;
  tpu pus[4];
  speeds_8421(pus, 1e-5);
  trun r;
  assert_int_equal(tdrive("plb-hac", "gap_threshold_s=-1", pus, 4, 1000, 1, &r), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "gap_threshold_s"));
  assert_int_equal(tdrive("plb-hec", "r2_min=1.5", pus, 4, 1000, 1, &r), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "r2_min"));
  assert_int_equal(tdrive("hlb", "fraction=0", pus, 4, 1000, 1, &r), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "fraction"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hec_training_follows_multipliers),
      cmocka_unit_test(hec_rebalances_on_spread),
      cmocka_unit_test(hac_gap_filling_and_decay),
      cmocka_unit_test(hac_adapts_to_slowdown),
      cmocka_unit_test(hlb_adapts_to_slowdown),
      cmocka_unit_test(hlb_near_lower_bound),
      cmocka_unit_test(survives_bad_samples_and_failures),
      cmocka_unit_test(tiny_and_odd_runs_finish),
      cmocka_unit_test(scales_to_1000_pus),
      cmocka_unit_test(hlb_slow_pu_with_fixed_cost),
      cmocka_unit_test(hlb_no_fixed_cost_tail),
      cmocka_unit_test(minmax_tree_matches_scan),
      cmocka_unit_test(inverse_memo_matches_plain),
      cmocka_unit_test(bad_parameters_are_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
