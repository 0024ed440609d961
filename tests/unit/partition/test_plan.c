/* Two-level assignment: the exact solver against brute force (tiny instances, any curve) and
 * against GLPK's MILP (>= 200 random instances), every reported makespan against an
 * independent evaluation of eq. 3, caps, idle nodes, infeasible caps and bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/error.h"
#include "hlb/plan.h"

/* ---- a tiny deterministic generator (independent of the library's) -------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double urange(double lo, double hi) {
  return lo + (hi - lo) * urand();
}
static unsigned irange(unsigned lo, unsigned hi) {
  return lo + (unsigned)(urand() * (hi - lo + 1));
}

/* ---- random cluster files ---------------------------------------------------------------- */

typedef struct gen_opts {
  unsigned min_nodes, max_nodes, max_pus;
  size_t items;
  int caps;      /* 1: random per-node and per-PU caps */
  int nonlinear; /* 1: some PUs get quadratic / xlogx terms */
} gen_opts;

static int append(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < cap - *len);
  *len += (size_t)n;
  return n;
}

static hlb_cluster *random_cluster(const gen_opts *g) {
  static char buf[1 << 20];
  size_t len = 0, cap = sizeof buf;
  append(buf, cap, &len, "{\"item\": {\"in_bytes\": %.17g, \"out_bytes\": %.17g}, \"nodes\": [",
         urand() < 0.2 ? 0.0 : urange(0, 1e7), urange(0, 1e5));
  unsigned nn = irange(g->min_nodes, g->max_nodes), pu_no = 0;
  for (unsigned i = 0; i < nn; i++) {
    append(buf, cap, &len,
           "%s{\"name\": \"n%u\", \"link\": {\"latency_s\": %.17g, \"bandwidth_Bps\": %.17g}, "
           "\"partition_s\": %.17g, \"merge_s\": %.17g",
           i ? ", " : "", i, urange(1e-5, 1e-2), urange(1e7, 1e9),
           urand() < 0.5 ? 0.0 : urange(0, 0.5), urand() < 0.5 ? 0.0 : urange(0, 0.5));
    if (g->caps && urand() < 0.6)
      append(buf, cap, &len, ", \"max_items\": %u", irange(1, (unsigned)g->items));
    append(buf, cap, &len, ", \"pus\": [");
    unsigned np = irange(1, g->max_pus);
    for (unsigned j = 0; j < np; j++, pu_no++) {
      append(buf, cap, &len, "%s{\"name\": \"p%u\", \"kind\": \"k\"", j ? ", " : "", pu_no);
      if (urand() < 0.7)
        append(buf, cap, &len, ", \"link\": {\"latency_s\": %.17g, \"bandwidth_Bps\": %.17g}",
               urange(0, 1e-3), urange(1e8, 1e10));
      append(buf, cap, &len, ", \"time\": {\"const\": %.17g, \"linear\": %.17g",
             urand() < 0.3 ? 0.0 : urange(0, 2), urange(0.01, 1));
      if (g->nonlinear && urand() < 0.5)
        append(buf, cap, &len, ", \"quadratic\": %.17g, \"xlogx\": %.17g", urange(0, 0.05),
               urand() < 0.5 ? 0.0 : urange(0, 0.2));
      append(buf, cap, &len, "}");
      if (g->caps && urand() < 0.5)
        append(buf, cap, &len, ", \"max_items\": %u", irange(1, (unsigned)g->items));
      append(buf, cap, &len, "}");
    }
    append(buf, cap, &len, "]}");
  }
  append(buf, cap, &len, "]}");
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("random.json", buf, &c) != 0)
    fail_msg("generated cluster refused: %s", hlb_last_error());
  return c;
}

/* ---- eq. 3 written out independently of the library --------------------------------------- */

static double msg(const hlb_link *l, double bytes) {
  return l->latency_s + (isinf(l->bandwidth_Bps) ? 0.0 : bytes / l->bandwidth_Bps);
}

static double eq3_makespan(const hlb_cluster *c, const size_t *d) {
  double T = 0, in = c->item_in_bytes, out = c->item_out_bytes;
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    double D = 0, pu_max = 0;
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      if (!d[j]) continue;
      const hlb_cluster_pu *p = &c->pus[j];
      double x = (double)d[j], *k = (double *)p->poly;
      double f = msg(&p->link, x * in) + k[0] + k[1] * x + k[2] * x * x + k[3] * x * x * x +
                 k[4] * x * log(x) + msg(&p->link, x * out);
      pu_max = fmax(pu_max, f);
      D += x;
    }
    if (D > 0)
      T = fmax(T, msg(&n->link, D * in) + n->partition_s + pu_max + n->merge_s +
                      msg(&n->link, D * out));
  }
  return T;
}

static void check_result(const hlb_cluster *c, size_t items, const hlb_plan_result *r) {
  size_t sum = 0;
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    size_t D = 0;
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      assert_true(r->pu_items[j] <= c->pus[j].max_items);
      D += r->pu_items[j];
    }
    assert_int_equal(D, r->node_items[i]);
    assert_true(D <= n->max_items);
    sum += D;
  }
  assert_int_equal(sum, items);
  double indep = eq3_makespan(c, r->pu_items);
  if (fabs(indep - r->makespan_s) > 1e-9 * fmax(indep, 1e-300))
    fail_msg("%s: reported makespan %.17g, eq. 3 gives %.17g", r->solver, r->makespan_s, indep);
}

static int solve(const hlb_cluster *c, size_t items, hlb_plan_solver s, hlb_plan_result *r) {
  hlb_plan_options o;
  hlb_plan_options_default(&o);
  o.solver = s;
  o.time_limit_s = 60;
  return hlb_plan_solve(c, items, &o, r);
}

/* ---- brute force over every split, for tiny instances --------------------------------------- */

static void brute(const hlb_cluster *c, size_t *d, unsigned j, size_t left, double *best) {
  if (j + 1 == c->n_pus) {
    d[j] = left;
    if (left > c->pus[j].max_items) return;
    size_t D = 0; /* node caps */
    for (unsigned i = 0; i < c->n_nodes; i++) {
      D = 0;
      for (unsigned q = c->nodes[i].first_pu; q < c->nodes[i].first_pu + c->nodes[i].n_pus; q++)
        D += d[q];
      if (D > c->nodes[i].max_items) return;
    }
    double T;
    assert_int_equal(hlb_plan_makespan(c, d, &T), 0);
    *best = fmin(*best, T);
    return;
  }
  for (size_t x = 0; x <= left && x <= c->pus[j].max_items; x++) {
    d[j] = x;
    brute(c, d, j + 1, left - x, best);
  }
}

static void exact_matches_brute_force(void **state) {
  (void)state;
  rng_state = 12345;
  size_t d[8];
  for (int k = 0; k < 150; k++) {
    gen_opts g = {1, 3, 2, irange(1, 9), k % 2, k % 3 != 0};
    hlb_cluster *c = random_cluster(&g);
    if (c->n_pus > 6) {
      hlb_cluster_free(c);
      continue;
    }
    double best = INFINITY;
    brute(c, d, 0, g.items, &best);
    hlb_plan_result r;
    int rc = solve(c, g.items, HLB_PLAN_EXACT, &r);
    if (isinf(best)) {
      assert_int_equal(rc, HLB_EINFEASIBLE);
    } else {
      assert_int_equal(rc, 0);
      assert_true(r.optimal);
      check_result(c, g.items, &r);
      /* The same evaluation on both sides: the optimum must match to the last bit. */
      if (r.makespan_s != best)
        fail_msg("instance %d: exact %.17g, brute force %.17g", k, r.makespan_s, best);
      hlb_plan_result_free(&r);
    }
    hlb_cluster_free(c);
  }
}

static void exact_agrees_with_glpk(void **state) {
  (void)state;
  rng_state = 777;
  int solved = 0, infeasible = 0, idle_nodes = 0;
  for (int k = 0; k < 240; k++) {
    gen_opts g = {2, 4, 4, irange(1, 200), k % 2, 0};
    hlb_cluster *c = random_cluster(&g);
    hlb_plan_result re, rg;
    int rce = solve(c, g.items, HLB_PLAN_EXACT, &re);
    int rcg = solve(c, g.items, HLB_PLAN_GLPK, &rg);
    assert_int_equal(rce, rcg);
    if (rce == HLB_EINFEASIBLE) {
      infeasible++;
      hlb_cluster_free(c);
      continue;
    }
    assert_int_equal(rce, 0);
    assert_string_equal(re.solver, "exact");
    assert_string_equal(rg.solver, "glpk");
    assert_true(re.optimal && rg.optimal);
    check_result(c, g.items, &re);
    check_result(c, g.items, &rg);
    if (fabs(re.makespan_s - rg.makespan_s) > 1e-9 * re.makespan_s)
      fail_msg("instance %d (%zu items): exact %.17g, glpk %.17g", k, g.items, re.makespan_s,
               rg.makespan_s);
    for (unsigned i = 0; i < c->n_nodes; i++)
      idle_nodes += re.node_items[i] == 0;
    solved++;
    hlb_plan_result_free(&re);
    hlb_plan_result_free(&rg);
    hlb_cluster_free(c);
  }
  /* The instances must exercise both outcomes and assignments that leave nodes idle. */
  assert_true(solved >= 200);
  assert_true(infeasible > 0);
  assert_true(idle_nodes > 0);
  print_message("exact vs glpk: %d solved, %d infeasible, %d idle nodes\n", solved, infeasible,
                idle_nodes);
}

static const char *const two_nodes =
    "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"nodes\": ["
    "{\"name\": \"near\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1}, \"max_items\": 6,"
    " \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}, \"max_items\": 4},"
    "          {\"name\": \"b\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]},"
    "{\"name\": \"far\", \"link\": {\"latency_s\": 50, \"bandwidth_Bps\": 1},"
    " \"pus\": [{\"name\": \"c\", \"kind\": \"gpu\", \"time\": {\"const\": 1, \"linear\": "
    "0.5}}]}]}";

/* Hand-checked: 10 items. "far" costs 100 s of latency plus 1 + 0.5 d, so it is worth using
 * only when near's 6-item cap forces it; near's best split of 6 is 3 + 3 (3 s). With 6 items
 * T = 3 and far stays idle; with 10 items far takes 4: 100 + 1 + 2 = 103. */
static void hand_checked_instance(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  assert_int_equal(hlb_cluster_parse("two.json", two_nodes, &c), 0);
  for (int s = 0; s < 2; s++) {
    hlb_plan_result r;
    assert_int_equal(solve(c, 6, (hlb_plan_solver)s, &r), 0);
    assert_true(r.makespan_s == 3.0);
    assert_int_equal(r.node_items[1], 0);
    assert_int_equal(r.pu_items[0], 3);
    hlb_plan_result_free(&r);
    assert_int_equal(solve(c, 10, (hlb_plan_solver)s, &r), 0);
    assert_true(r.makespan_s == 103.0);
    assert_int_equal(r.node_items[0], 6);
    assert_int_equal(r.pu_items[2], 4);
    hlb_plan_result_free(&r);
    /* near holds 6, far has no cap: any count is feasible. 0 items: nothing to do. */
    assert_int_equal(solve(c, 0, (hlb_plan_solver)s, &r), 0);
    assert_true(r.makespan_s == 0 && r.optimal);
    hlb_plan_result_free(&r);
  }
  hlb_cluster_free(c);
}

static void infeasible_caps_are_reported(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  const char *capped =
      "{\"item\": {\"in_bytes\": 1, \"out_bytes\": 1}, \"nodes\": ["
      "{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, \"max_items\": 5,"
      " \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]},"
      "{\"name\": \"n1\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9},"
      " \"pus\": [{\"name\": \"b\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}, \"max_items\": "
      "3},"
      "          {\"name\": \"c\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}, \"max_items\": "
      "4}]}]}";
  assert_int_equal(hlb_cluster_parse("capped.json", capped, &c), 0);
  for (int s = 0; s < 2; s++) {
    hlb_plan_result r;
    assert_int_equal(solve(c, 13, (hlb_plan_solver)s, &r), HLB_EINFEASIBLE);
    assert_string_equal(hlb_last_error(),
                        "plan: 13 items asked, but the per-node and per-PU max_items caps hold at "
                        "most 12");
    assert_null(r.pu_items);
    assert_int_equal(solve(c, 12, (hlb_plan_solver)s, &r), 0);
    assert_int_equal(r.node_items[0], 5);
    assert_int_equal(r.pu_items[1], 3);
    assert_int_equal(r.pu_items[2], 4);
    hlb_plan_result_free(&r);
  }
  hlb_cluster_free(c);
}

static void glpk_refuses_nonlinear_curves(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  const char *quad =
      "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"nodes\": ["
      "{\"name\": \"n\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1},"
      " \"pus\": [{\"name\": \"q\", \"kind\": \"cpu\", \"time\": {\"quadratic\": 1}},"
      "           {\"name\": \"l\", \"kind\": \"cpu\", \"time\": {\"linear\": 4}}]}]}";
  assert_int_equal(hlb_cluster_parse("quad.json", quad, &c), 0);
  hlb_plan_result r;
  assert_int_equal(solve(c, 10, HLB_PLAN_GLPK, &r), HLB_EUNSUPPORTED);
  assert_non_null(strstr(hlb_last_error(), "PU 'q' has a non-linear time curve"));
  /* Exact: q takes x with x^2 vs 4 (10 - x): x = 5 gives 25 vs 20, x = 4 gives 16 vs 24;
   * so T = min(25, 24) = 24 at x = 4. */
  assert_int_equal(solve(c, 10, HLB_PLAN_EXACT, &r), 0);
  assert_true(r.makespan_s == 24.0);
  assert_int_equal(r.pu_items[0], 4);
  hlb_plan_result_free(&r);
  hlb_cluster_free(c);
}

static void large_instance_is_exact_and_consistent(void **state) {
  (void)state;
  rng_state = 4242;
  gen_opts g = {40, 40, 25, 1000000, 0, 0};
  hlb_cluster *c = random_cluster(&g);
  hlb_plan_result r;
  assert_int_equal(solve(c, g.items, HLB_PLAN_EXACT, &r), 0);
  check_result(c, g.items, &r);
  /* Optimality spot check: moving one item from the slowest-finishing PU to any other PU
   * never lowers the makespan. */
  for (unsigned from = 0; from < c->n_pus; from++) {
    if (!r.pu_items[from]) continue;
    for (unsigned to = 0; to < c->n_pus; to += 7) {
      if (to == from) continue;
      r.pu_items[from]--;
      r.pu_items[to]++;
      double T;
      assert_int_equal(hlb_plan_makespan(c, r.pu_items, &T), 0);
      assert_true(T >= r.makespan_s);
      r.pu_items[from]++;
      r.pu_items[to]--;
    }
  }
  hlb_plan_result_free(&r);
  hlb_cluster_free(c);
}

/* Latencies near DBL_MAX pass the file's checks but overflow once doubled: both solvers say
 * so instead of reporting an infinite makespan (or letting GLPK abort). */
static void overflowing_times_are_refused(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  const char *huge =
      "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"nodes\": ["
      "{\"name\": \"n\", \"link\": {\"latency_s\": 1e308, \"bandwidth_Bps\": 1},"
      " \"pus\": [{\"name\": \"p\", \"kind\": \"cpu\", \"time\": {\"linear\": 2}}]}]}";
  assert_int_equal(hlb_cluster_parse("huge.json", huge, &c), 0);
  hlb_plan_result r;
  assert_int_equal(solve(c, 3, HLB_PLAN_EXACT, &r), HLB_ERANGE);
  assert_non_null(strstr(hlb_last_error(), "overflows"));
  assert_int_equal(solve(c, 3, HLB_PLAN_GLPK, &r), HLB_ERANGE);
  assert_non_null(strstr(hlb_last_error(), "node 'n'"));
  hlb_cluster_free(c);
}

static void bad_arguments(void **state) {
  (void)state;
  hlb_plan_solver s;
  assert_int_equal(hlb_plan_solver_parse("glpk", &s), 0);
  assert_int_equal(s, HLB_PLAN_GLPK);
  assert_int_equal(hlb_plan_solver_parse("exact", &s), 0);
  assert_int_equal(s, HLB_PLAN_EXACT);
  assert_int_equal(hlb_plan_solver_parse("lp_solve", &s), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "'lp_solve'"));
  assert_string_equal(hlb_plan_solver_name(HLB_PLAN_GLPK), "glpk");
  hlb_plan_result r;
  assert_int_equal(hlb_plan_solve(NULL, 1, NULL, &r), HLB_EINVAL);
  assert_int_equal(hlb_plan_solve(NULL, 1, NULL, NULL), HLB_EINVAL);
  double T;
  assert_int_equal(hlb_plan_makespan(NULL, NULL, &T), HLB_EINVAL);
  hlb_plan_result_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hand_checked_instance),
      cmocka_unit_test(infeasible_caps_are_reported),
      cmocka_unit_test(glpk_refuses_nonlinear_curves),
      cmocka_unit_test(exact_matches_brute_force),
      cmocka_unit_test(exact_agrees_with_glpk),
      cmocka_unit_test(large_instance_is_exact_and_consistent),
      cmocka_unit_test(overflowing_times_are_refused),
      cmocka_unit_test(bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
