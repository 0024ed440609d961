/* The simulator: event queue order, node-link sharing, slowdown and fail events, exactly-once
 * with failures, determinism, noise calibration, the lower bound and the trace. Times are
 * simulated, so every expected value below is exact arithmetic on the cluster's numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "common/error_internal.h"
#include "common/rng.h"
#include "hlb/cluster.h"
#include "hlb/partition.h"
#include "hlb/policy.h"
#include "hlb/sim.h"
#include "sim/evq.h"

/* |a - b| <= eps, printing both values when not. */
#define assert_near(a, b, eps)                                                                     \
  do {                                                                                             \
    double a_ = (a), b_ = (b);                                                                     \
    if (!(fabs(a_ - b_) <= (eps))) fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);             \
  } while (0)

static hlb_cluster *parse(const char *json) {
  hlb_cluster *c = NULL;
  int rc = hlb_cluster_parse("test.json", json, &c);
  if (rc) fail_msg("cluster: %s", hlb_last_error());
  return c;
}

static hlb_sim_result *run(const hlb_cluster *c, size_t n, const char *policy, const char *params,
                           uint64_t seed, int trace) {
  hlb_sim_options o = {
      .n_items = n, .policy = policy, .params = params, .seed = seed, .keep_trace = trace};
  hlb_sim_result *r = NULL;
  int rc = hlb_sim_run(c, &o, &r);
  if (rc) fail_msg("sim: %s", hlb_last_error());
  return r;
}

/* ---- event queue ------------------------------------------------------------------------ */

static void queue_pops_by_time_then_push_order(void **state) {
  (void)state;
  hlb__evq q;
  assert_int_equal(hlb__evq_init(&q, 1000), 0);
  hlb__rng rng;
  hlb__rng_seed(&rng, 7);
  /* Few distinct times, so most events tie and the sequence must break the ties. */
  for (unsigned i = 0; i < 1000; i++)
    assert_int_equal(hlb__evq_push(&q, (double)hlb__rng_below(&rng, 10), i, 0, 0), 0);
  assert_int_equal(hlb__evq_push(&q, 0, 0, 0, 0), HLB_ERANGE);
  hlb__event prev = {-1, 0, 0, 0, 0}, e;
  unsigned n = 0;
  while (hlb__evq_pop(&q, &e)) {
    assert_true(e.t > prev.t || (e.t == prev.t && e.seq > prev.seq));
    assert_int_equal(e.pu, e.seq); /* seq is the push order */
    prev = e;
    n++;
  }
  assert_int_equal(n, 1000);
  assert_null(hlb__evq_top(&q));
  hlb__evq_fini(&q);
}

/* ---- links -------------------------------------------------------------------------------- */

/* One node whose link moves one item's input in 1 s; two PUs computing 1 s per item. */
static const char two_pus_one_link[] =
    "{\"item\": {\"in_bytes\": 1000, \"out_bytes\": 0},"
    " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1000},"
    "   \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}},"
    "             {\"name\": \"b\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]}]}";

static void second_sender_waits_for_the_node_link(void **state) {
  (void)state;
  hlb_cluster *c = parse(two_pus_one_link);
  hlb_sim_result *r = run(c, 2, "static", NULL, 1, 1);
  /* a: in [0,1], compute [1,2]; b's input waits for a's: in [1,2], compute [2,3]. */
  assert_true(r->exactly_once);
  assert_int_equal(r->blocks, 2);
  assert_near(r->makespan_s, 3.0, 1e-12);
  /* Bound: 2 s per item (1 transfer + 1 compute), one item each, no sharing. */
  assert_near(r->lower_bound_s, 2.0, 1e-9);
  assert_near(r->ratio, 1.5, 1e-9);
  int seen_b_in = 0;
  for (size_t i = 0; i < r->n_slices; i++) {
    const hlb_sim_slice *s = &r->slices[i];
    if (s->pu == 1 && s->phase == HLB_SIM_PHASE_IN) {
      assert_near(s->start_s, 1.0, 1e-12);
      assert_near(s->end_s, 2.0, 1e-12);
      seen_b_in = 1;
    }
  }
  assert_true(seen_b_in);
  /* b was idle 1 s of 3; a 1 s of 3 too (after it finished): 33.3 % for kind cpu. */
  assert_int_equal(r->n_kinds, 1);
  assert_near(r->idle_pct[0], 100.0 / 3.0, 1e-9);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

static void pus_of_different_nodes_do_not_share(void **state) {
  (void)state;
  hlb_cluster *c = parse(
      "{\"item\": {\"in_bytes\": 1000, \"out_bytes\": 1000},"
      " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0.5, \"bandwidth_Bps\": 1000},"
      "   \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]},"
      "  {\"name\": \"n1\", \"link\": {\"latency_s\": 0.5, \"bandwidth_Bps\": 1000},"
      "   \"pus\": [{\"name\": \"b\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]}]}");
  hlb_sim_result *r = run(c, 2, "static", NULL, 1, 0);
  /* Each: in 0.5 + 1, compute 1, out 1 + 0.5 = 4 s, in parallel; equal to the bound. */
  assert_near(r->makespan_s, 4.0, 1e-12);
  assert_near(r->lower_bound_s, 4.0, 1e-9);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* ---- events ------------------------------------------------------------------------------- */

static hlb_cluster *one_pu_with_events(const char *events) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0},"
           " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1},"
           "   \"pus\": [{\"name\": \"a\", \"kind\": \"gpu\", \"time\": {\"linear\": 1}}]}],"
           " \"events\": [%s]}",
           events);
  return parse(json);
}

static void slowdown_stretches_the_block_in_flight(void **state) {
  (void)state;
  hlb_cluster *c = one_pu_with_events("{\"at_s\": 4, \"pu\": \"a\", \"slowdown\": 2}");
  hlb_sim_result *r = run(c, 10, "static", NULL, 1, 0);
  /* 4 s at full speed, the remaining 6 s of work at half speed: 4 + 12. */
  assert_near(r->makespan_s, 16.0, 1e-12);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

static void slowdown_of_one_ends_it(void **state) {
  (void)state;
  hlb_cluster *c = one_pu_with_events("{\"at_s\": 4, \"pu\": \"a\", \"slowdown\": 2},"
                                      "{\"at_s\": 10, \"pu\": \"a\", \"slowdown\": 1}");
  hlb_sim_result *r = run(c, 10, "static", NULL, 1, 0);
  /* [0,4] 4 units, [4,10] 3 units at half speed, then 3 units at full speed. */
  assert_near(r->makespan_s, 13.0, 1e-12);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

static const char two_pus_b_fails[] =
    "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0},"
    " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1},"
    "   \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}},"
    "             {\"name\": \"b\", \"kind\": \"gpu\", \"time\": {\"linear\": 1}}]}],"
    " \"events\": [{\"at_s\": 1, \"pu\": \"b\", \"fail\": true}]}";

static void failed_block_is_redone_exactly_once(void **state) {
  (void)state;
  hlb_cluster *c = parse(two_pus_b_fails);
  const char *policies[] = {"static", "greedy"};
  for (unsigned i = 0; i < 2; i++) {
    hlb_sim_result *r = run(c, 10, policies[i], NULL, 1, 1);
    assert_true(r->exactly_once);
    assert_int_equal(r->blocks_lost, 1);
    assert_int_equal(r->items_per_pu[1], 0);
    assert_int_equal(r->items_per_pu[0], 10);
    /* a never idles (b dies before a's first block ends), no per-block cost: 10 s. */
    assert_near(r->makespan_s, 10.0, 1e-9);
    int lost = 0;
    for (size_t k = 0; k < r->n_slices; k++)
      if (r->slices[k].lost) {
        assert_int_equal(r->slices[k].pu, 1);
        assert_true(r->slices[k].end_s <= 1.0);
        lost = 1;
      }
    assert_true(lost);
    /* b is counted alive only until it died: busy 1 s of 1 s (kind gpu, index 1). */
    assert_near(r->alive_s[1], 1.0, 1e-12);
    assert_near(r->idle_pct[1], 0.0, 1e-9);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

static void all_pus_failing_is_an_error(void **state) {
  (void)state;
  hlb_cluster *c = one_pu_with_events("{\"at_s\": 3, \"pu\": \"a\", \"fail\": true}");
  hlb_sim_options o = {.n_items = 10, .policy = "static"};
  hlb_sim_result *r = NULL;
  assert_int_equal(hlb_sim_run(c, &o, &r), HLB_ESTATE);
  assert_null(r);
  assert_true(strlen(hlb_last_error()) > 0);
  /* Ignoring the events, the same run completes. */
  o.no_events = 1;
  assert_int_equal(hlb_sim_run(c, &o, &r), 0);
  assert_near(r->makespan_s, 10.0, 1e-12);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* Three PUs of one node share a link that moves a 10-item block in 1 s each way; each computes
 * a block in 1 s. With greedy chunks of 10: a's input [0,1], compute [1,2], output [2,3];
 * b's input [1,2], compute [2,3], output [3,4]; c's input [2,3], compute [3,4], output [4,5].
 * a dies in its input, b in its compute, c in its output; d, on its own node, survives. */
static const char lost_in_every_phase[] =
    "{\"item\": {\"in_bytes\": 100, \"out_bytes\": 100},"
    " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1000},"
    "   \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 0.1}},"
    "             {\"name\": \"b\", \"kind\": \"cpu\", \"time\": {\"linear\": 0.1}},"
    "             {\"name\": \"c\", \"kind\": \"cpu\", \"time\": {\"linear\": 0.1}}]},"
    "  {\"name\": \"n1\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e15},"
    "   \"pus\": [{\"name\": \"d\", \"kind\": \"gpu\", \"time\": {\"linear\": 0.1}}]}],"
    " \"events\": [{\"at_s\": 0.5, \"pu\": \"a\", \"fail\": true},"
    "            {\"at_s\": 2.5, \"pu\": \"b\", \"fail\": true},"
    "            {\"at_s\": 4.5, \"pu\": \"c\", \"fail\": true}]}";

static void blocks_lost_in_each_phase(void **state) {
  (void)state;
  hlb_cluster *c = parse(lost_in_every_phase);
  hlb_sim_result *r = run(c, 200, "greedy", "chunk=10", 1, 1);
  assert_true(r->exactly_once);
  assert_int_equal(r->blocks_lost, 3);
  assert_int_equal(r->items_per_pu[0] + r->items_per_pu[1] + r->items_per_pu[2], 0);
  assert_int_equal(r->items_per_pu[3], 200);
  int lost_phase[3] = {-1, -1, -1};
  for (size_t i = 0; i < r->n_slices; i++)
    if (r->slices[i].lost && r->slices[i].pu < 3)
      if ((int)r->slices[i].phase > lost_phase[r->slices[i].pu])
        lost_phase[r->slices[i].pu] = (int)r->slices[i].phase;
  assert_int_equal(lost_phase[0], HLB_SIM_PHASE_IN);
  assert_int_equal(lost_phase[1], HLB_SIM_PHASE_COMPUTE);
  assert_int_equal(lost_phase[2], HLB_SIM_PHASE_OUT);
  /* d alone: 20 blocks of 1 s, no transfer cost. */
  assert_near(r->makespan_s, 20.0, 1e-9);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* Every registered policy survives the same failures and processes each item exactly once. */
static void every_policy_survives_failures(void **state) {
  (void)state;
  hlb_cluster *c = parse(lost_in_every_phase);
  for (unsigned i = 0; i < hlb_policy_count(); i++) {
    const char *name = hlb_policy_at(i)->name;
    hlb_sim_options o = {.n_items = 5000, .policy = name, .seed = 3};
    hlb_sim_result *r = NULL;
    int rc = hlb_sim_run(c, &o, &r);
    if (rc) fail_msg("policy %s: %s", name, hlb_last_error());
    if (!r->exactly_once) fail_msg("policy %s: not exactly once", name);
    assert_int_equal(
        r->items_per_pu[0] + r->items_per_pu[1] + r->items_per_pu[2] + r->items_per_pu[3], 5000);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

/* ---- determinism and noise ------------------------------------------------------------- */

static const char noisy4[] =
    "{\"item\": {\"in_bytes\": 100, \"out_bytes\": 10}, \"noise_sigma\": 0.3,"
    " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 1e-4, \"bandwidth_Bps\": 1e8},"
    "   \"pus\": [{\"name\": \"c0\", \"kind\": \"cpu\", \"time\": {\"const\": 1e-3, \"linear\": "
    "1e-4}},"
    "             {\"name\": \"g0\", \"kind\": \"gpu\", \"time\": {\"const\": 5e-3, \"linear\": "
    "1e-5},"
    "              \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}}]},"
    "  {\"name\": \"n1\", \"link\": {\"latency_s\": 1e-4, \"bandwidth_Bps\": 1e8},"
    "   \"pus\": [{\"name\": \"c1\", \"kind\": \"cpu\", \"time\": {\"const\": 1e-3, \"linear\": "
    "2e-4}},"
    "             {\"name\": \"g1\", \"kind\": \"gpu\", \"time\": {\"const\": 5e-3, \"linear\": "
    "3e-5},"
    "              \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}}]}]}";

static void same_seed_same_run(void **state) {
  (void)state;
  hlb_cluster *c = parse(noisy4);
  hlb_sim_result *a = run(c, 100000, "greedy", NULL, 42, 1);
  hlb_sim_result *b = run(c, 100000, "greedy", NULL, 42, 1);
  hlb_sim_result *d = run(c, 100000, "greedy", NULL, 43, 0);
  assert_true(a->exactly_once);
  assert_memory_equal(&a->makespan_s, &b->makespan_s, sizeof(double));
  assert_int_equal(a->n_slices, b->n_slices);
  assert_memory_equal(a->slices, b->slices, a->n_slices * sizeof *a->slices);
  assert_memory_equal(a->items_per_pu, b->items_per_pu, c->n_pus * sizeof(size_t));
  assert_true(a->makespan_s != d->makespan_s); /* the seed matters */
  hlb_sim_result_free(a);
  hlb_sim_result_free(b);
  hlb_sim_result_free(d);
  hlb_cluster_free(c);
}

static void noise_has_mean_one(void **state) {
  (void)state;
  /* One PU, 1 s per item, 20000 one-item blocks: the makespan is the sum of 20000 lognormal
   * factors of mean 1; its relative standard deviation is sqrt(e^0.25 - 1) / sqrt(20000),
   * about 0.4 %, so 2 % is five sigma. */
  hlb_cluster *c =
      parse("{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"noise_sigma\": 0.5,"
            " \"nodes\": [{\"name\": \"n0\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1},"
            "   \"pus\": [{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]}]}");
  hlb_sim_options o = {.n_items = 20000, .policy = "static", .granularity = 1, .seed = 9};
  hlb_sim_result *r = NULL;
  /* greedy with a chunk of one item: 20000 blocks. */
  o.policy = "greedy";
  o.params = "chunk=1";
  int rc = hlb_sim_run(c, &o, &r);
  assert_int_equal(rc, 0);
  assert_int_equal(r->blocks, 20000);
  assert_true(fabs(r->makespan_s / 20000.0 - 1.0) < 0.02);
  hlb_sim_result_free(r);
  o.no_noise = 1;
  assert_int_equal(hlb_sim_run(c, &o, &r), 0);
  assert_near(r->makespan_s, 20000.0, 1e-6);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* ---- options, trace ---------------------------------------------------------------------- */

static void bad_options_are_named(void **state) {
  (void)state;
  hlb_cluster *c = parse(two_pus_one_link);
  hlb_sim_options o = {.n_items = 0};
  hlb_sim_result *r = NULL;
  assert_int_equal(hlb_sim_run(c, &o, &r), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "n_items"));
  o.n_items = 10;
  o.policy = "no-such-policy";
  assert_int_equal(hlb_sim_run(c, &o, &r), HLB_ENOTFOUND);
  assert_null(r);
  hlb_cluster_free(c);
}

/* A cluster of `n` PUs on two nodes with random curves, some superlinear (quadratic, cubic,
 * x ln x), from a small LCG so the test does not depend on libc's rand. */
static hlb_cluster *random_cluster_scaled(uint32_t *seed, unsigned n, double sup_scale) {
  char json[8192];
  size_t at = (size_t)snprintf(json, sizeof json,
                               "{\"item\": {\"in_bytes\": 64, \"out_bytes\": 8}, \"nodes\": [");
  for (unsigned node = 0; node < 2; node++) {
    at += (size_t)snprintf(
        json + at, sizeof json - at,
        "%s{\"name\": \"n%u\", \"link\": {\"latency_s\": 1e-4, \"bandwidth_Bps\": 1e9}, "
        "\"pus\": [",
        node ? ", " : "", node);
    for (unsigned k = 0; k < n / 2; k++) {
      double r[5];
      for (int i = 0; i < 5; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        r[i] = (double)(*seed >> 8) / (double)(1u << 24);
      }
      /* fixed cost, per item, and one superlinear term of a random kind */
      double fixed = 0.01 + 0.5 * r[0], lin = 1e-4 * (0.5 + r[1]), sup = r[2] < 0.5 ? 0 : 1;
      const char *term = r[3] < 0.34 ? "quadratic" : r[3] < 0.67 ? "cubic" : "xlogx";
      double coef = term[0] == 'q' ? 1e-8 * r[4] : term[0] == 'c' ? 1e-12 * r[4] : 1e-5 * r[4];
      at += (size_t)snprintf(
          json + at, sizeof json - at,
          "%s{\"name\": \"p%u_%u\", \"kind\": \"cpu\", \"link\": {\"latency_s\": 1e-5, "
          "\"bandwidth_Bps\": 1e10}, \"time\": {\"const\": %.17g, \"linear\": %.17g, "
          "\"%s\": %.17g}}",
          k ? ", " : "", node, k, fixed, lin, term, sup * sup_scale * coef);
    }
    at += (size_t)snprintf(json + at, sizeof json - at, "]}");
  }
  snprintf(json + at, sizeof json - at, "]}");
  return parse(json);
}

static hlb_cluster *random_cluster(uint32_t *seed, unsigned n) {
  return random_cluster_scaled(seed, n, 1.0);
}

/* Fails when some policy's noiseless run of `n` items on `c` ends below the lower bound. */
static void expect_every_run_above_the_bound(const hlb_cluster *c, size_t n, const char *what,
                                             int trial) {
  double bound = 0;
  assert_int_equal(hlb_sim_lower_bound(c, n, &bound), 0);
  assert_true(bound > 0);
  for (unsigned p = 0; p < hlb_policy_count(); p++) {
    hlb_sim_options o = {
        .n_items = n, .policy = hlb_policy_at(p)->name, .seed = 1, .no_noise = 1, .no_events = 1};
    hlb_sim_result *r = NULL;
    assert_int_equal(hlb_sim_run(c, &o, &r), 0);
    if (r->makespan_s < bound * (1 - 1e-9))
      fail_msg("%s, trial %d, policy %s: makespan %.9g below the bound %.9g", what, trial,
               r->policy, r->makespan_s, bound);
    hlb_sim_result_free(r);
  }
}

/* The lower bound is a bound: no policy's noiseless run beats it, on random clusters whose
 * superlinear curves make many small blocks cheaper than one (where the old one-block-per-PU
 * bound was above some runs), and on clusters whose superlinear terms are 100x stronger over
 * fewer items: shares of one to a few best blocks, where the bound counts whole blocks (W_p in
 * src/sim/bound.c) and is highest above the fractional one. */
static void lower_bound_is_below_every_run(void **state) {
  (void)state;
  uint32_t seed = 12345;
  for (int trial = 0; trial < 6; trial++) {
    hlb_cluster *c = random_cluster(&seed, 2 + 2 * (unsigned)(trial % 3));
    expect_every_run_above_the_bound(c, 20000 + 15000 * (size_t)trial, "many blocks", trial);
    hlb_cluster_free(c);
  }
  for (int trial = 0; trial < 6; trial++) {
    hlb_cluster *c = random_cluster_scaled(&seed, 2 + 2 * (unsigned)(trial % 3), 100.0);
    expect_every_run_above_the_bound(c, 1500 + 1500 * (size_t)trial, "few blocks", trial);
    hlb_cluster_free(c);
  }
}

/* One cpu PU on a free node, items without bytes: `members` are its time (and cap). */
static hlb_cluster *one_pu(const char *members) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"nodes\": [{\"name\": \"n\", "
           "\"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, \"pus\": [{\"name\": \"a\", "
           "\"kind\": \"cpu\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, %s}]}]}",
           members);
  return parse(json);
}

/* The bound counts a PU's blocks whole (the F*(x) = min over k of k F(x / k)) and a
 * PU's max_items as its largest block, as the simulator does: 150 items on one PU of
 * 0.01 + 1e-6 y^2 s per block (best block 100 items, 0.2 ms an item) take 2 blocks of 75 at
 * best, 2 (0.01 + 0.005625) = 0.03125 s, not 150 x 0.2 ms = 0.03 s; and 1000 items on a PU of
 * 1 + 0.001 y s with blocks of at most 100 take 10 blocks, 11 s, which a run reaches. */
static void lower_bound_counts_whole_blocks(void **state) {
  (void)state;
  hlb_cluster *c = one_pu("\"time\": {\"const\": 0.01, \"quadratic\": 1e-6}");
  double bound = 0;
  assert_int_equal(hlb_sim_lower_bound(c, 150, &bound), 0);
  assert_near(bound, 0.03125, 1e-9);
  /* 300 items: 3 blocks of 100, exactly the fractional bound. */
  assert_int_equal(hlb_sim_lower_bound(c, 300, &bound), 0);
  assert_near(bound, 0.06, 1e-9);
  hlb_cluster_free(c);
  c = one_pu("\"time\": {\"const\": 1, \"linear\": 0.001}, \"max_items\": 100");
  assert_int_equal(hlb_sim_lower_bound(c, 1000, &bound), 0);
  assert_near(bound, 11.0, 1e-9);
  assert_int_equal(hlb_sim_lower_bound(c, 150, &bound), 0);
  assert_near(bound, 2.15, 1e-9); /* 2 blocks of 75 */
  hlb_sim_options o = {.n_items = 1000, .policy = "hlb", .seed = 1, .no_noise = 1};
  hlb_sim_result *r = NULL;
  assert_int_equal(hlb_sim_run(c, &o, &r), 0);
  assert_true(r->exactly_once);
  assert_near(r->lower_bound_s, 11.0, 1e-9);
  assert_true(r->makespan_s >= 11.0 * (1 - 1e-9));
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* With subadditive curves (fixed cost + linear) the bound is the one-block-per-PU equal-finish
 * split, as before; with a strongly superlinear PU it is well below that split. */
static void lower_bound_matches_one_block_when_subadditive(void **state) {
  (void)state;
  const char *two =
      "{\"item\": {\"in_bytes\": 0, \"out_bytes\": 0}, \"nodes\": [{\"name\": \"n\", "
      "\"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, \"pus\": ["
      "{\"name\": \"a\", \"kind\": \"cpu\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, "
      "\"time\": {\"const\": 1, \"linear\": 0.001}},"
      "{\"name\": \"b\", \"kind\": \"gpu\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e9}, "
      "\"time\": {\"const\": 2, \"linear\": 0.0001}}]}]}";
  hlb_cluster *c = parse(two);
  double bound = 0, x[2], eft = 0;
  hlb_curve k[2];
  hlb_sim_pu_curve(c, 0, &k[0]);
  hlb_sim_pu_curve(c, 1, &k[1]);
  assert_int_equal(hlb_sim_lower_bound(c, 100000, &bound), 0);
  assert_int_equal(hlb_eft_solve(k, NULL, 2, 100000, x, &eft), 0);
  assert_true(fabs(bound - eft) <= 1e-9 * eft);
  hlb_cluster_free(c);
  c = one_pu("\"time\": {\"const\": 0.01, \"quadratic\": 1e-6}");
  assert_int_equal(hlb_sim_lower_bound(c, 100000, &bound), 0);
  /* One block: 0.01 + 1e-6 * 1e10 = 10000 s. Best blocks of y = 100 items: 0.02 s per 100
   * items, so 100000 items need 20 s at least. */
  assert_true(fabs(bound - 20.0) < 1e-6 * 20.0);
  hlb_cluster_free(c);
}

static void trace_is_chrome_json(void **state) {
  (void)state;
  hlb_cluster *c = parse(noisy4);
  hlb_sim_result *r = run(c, 5000, "greedy", NULL, 3, 1);
  char path[] = "/tmp/hlb_sim_trace_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const hlb_sim_result *runs[2] = {r, r};
  const char *labels[2] = {"greedy", "again \"quoted\""};
  assert_int_equal(hlb_sim_write_trace(path, c, runs, labels, 2), 0);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  remove(path);
  buf[n] = '\0';
  cJSON *root = cJSON_Parse(buf);
  assert_non_null(root);
  cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
  assert_true(cJSON_IsArray(ev));
  size_t slices = 0;
  cJSON *e;
  cJSON_ArrayForEach(e, ev) {
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    if (cJSON_IsString(ph) && !strcmp(ph->valuestring, "X")) {
      slices++;
      assert_non_null(
          cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "items"));
    }
  }
  assert_int_equal(slices, 2 * r->n_slices);
  assert_int_equal(r->n_slices, 3 * r->blocks); /* in, compute, out per block */
  cJSON_Delete(root);
  assert_int_equal(hlb_sim_write_trace("/nonexistent/dir/t.json", c, runs, labels, 1), HLB_EIO);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
}

/* ---- passes that remember ---------------------------------------------------------------- */

/* bench_throttle's pair: matmul at n = 2048 on one core and on one throttled 4x. */
static const char throttled_pair[] =
    "{\"item\": {\"in_bytes\": 16384, \"out_bytes\": 16384}, \"nodes\": [{\"name\": "
    "\"m\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e15}, \"pus\": ["
    "{\"name\": \"fast\", \"kind\": \"cpu\", \"time\": {\"const\": 0.004, \"linear\": 0.000285}},"
    "{\"name\": \"slow\", \"kind\": \"cpu\", \"time\": {\"const\": 0.016, \"linear\": "
    "0.00114}}]}]}";

/* With remember, a later pass starts from the earlier passes' samples: no probes, so fewer
 * blocks and a makespan nearer the bound than a pass that trains again (the 4x-throttled pair
 * of bench_throttle, no noise: every figure is exact arithmetic). */
static void remembered_passes_start_from_the_samples(void **state) {
  (void)state;
  hlb_cluster *c = parse(throttled_pair);
  hlb_sim_result *fresh = NULL, *kept = NULL, *bare = NULL, *one = NULL;
  hlb_sim_options o = {.n_items = 2048, .policy = "hlb", .no_noise = 1, .passes = 3};
  assert_int_equal(hlb_sim_run(c, &o, &fresh), 0);
  o.remember = 1;
  assert_int_equal(hlb_sim_run(c, &o, &kept), 0);
  /* Without the samples and without the item costs a pass learnt, the third pass is the first
   * again (with the costs it differs by the rounding of costs to items). */
  o.remember = 0;
  o.no_item_costs = 1;
  assert_int_equal(hlb_sim_run(c, &o, &bare), 0);
  o.passes = 1;
  assert_int_equal(hlb_sim_run(c, &o, &one), 0);
  assert_true(kept->exactly_once && fresh->exactly_once);
  assert_true(kept->blocks < fresh->blocks);
  assert_true(kept->makespan_s < fresh->makespan_s);
  assert_int_equal(one->blocks, bare->blocks);
  assert_near(one->makespan_s, bare->makespan_s, 1e-12);
  hlb_sim_result_free(fresh);
  hlb_sim_result_free(kept);
  hlb_sim_result_free(bare);
  hlb_sim_result_free(one);
  hlb_cluster_free(c);
}

/* The block that ends the run (the last pass's, with passes) is more than a lone item or two. */
static void expect_no_lone_last_block(const hlb_sim_result *r) {
  const hlb_sim_slice *last = NULL;
  for (size_t k = 0; k < r->n_slices; k++)
    if (r->slices[k].phase == HLB_SIM_PHASE_COMPUTE && (!last || r->slices[k].end_s > last->end_s))
      last = &r->slices[k];
  assert_non_null(last);
  if (last->count <= 2)
    fail_msg("the run ends with a block of %zu item(s) on PU %u at %.6g s", last->count, last->pu,
             last->end_s);
}

/* Shares are rounded down to items, so the two PUs' last blocks can leave an item over: alone in
 * a block of its own it costs the throttled PU its 16 ms fixed cost, 3 % of the run. The PU whose
 * last block leaves it takes it when that is cheaper (the same pair, no noise: 0.522 s before).
 * From remembered samples, the guard used to shave the fast PU's last block by its usual miss
 * and leave an item for the throttled PU (0.4926 s); it no longer cuts what costs less than a
 * block's fixed cost (cut_pays). */
static void last_blocks_leave_no_lone_item(void **state) {
  (void)state;
  hlb_cluster *c = parse(throttled_pair);
  hlb_sim_options o = {.n_items = 2048, .policy = "hlb", .no_noise = 1, .keep_trace = 1};
  for (int remember = 0; remember < 2; remember++) {
    o.passes = remember ? 2 : 1;
    o.remember = remember;
    hlb_sim_result *r = NULL;
    assert_int_equal(hlb_sim_run(c, &o, &r), 0);
    assert_true(r->exactly_once);
    expect_no_lone_last_block(r);
    assert_true(r->makespan_s < (remember ? 0.49 : 0.515));
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(queue_pops_by_time_then_push_order),
      cmocka_unit_test(second_sender_waits_for_the_node_link),
      cmocka_unit_test(pus_of_different_nodes_do_not_share),
      cmocka_unit_test(slowdown_stretches_the_block_in_flight),
      cmocka_unit_test(slowdown_of_one_ends_it),
      cmocka_unit_test(failed_block_is_redone_exactly_once),
      cmocka_unit_test(all_pus_failing_is_an_error),
      cmocka_unit_test(blocks_lost_in_each_phase),
      cmocka_unit_test(every_policy_survives_failures),
      cmocka_unit_test(same_seed_same_run),
      cmocka_unit_test(noise_has_mean_one),
      cmocka_unit_test(bad_options_are_named),
      cmocka_unit_test(trace_is_chrome_json),
      cmocka_unit_test(lower_bound_is_below_every_run),
      cmocka_unit_test(lower_bound_matches_one_block_when_subadditive),
      cmocka_unit_test(lower_bound_counts_whole_blocks),
      cmocka_unit_test(remembered_passes_start_from_the_samples),
      cmocka_unit_test(last_blocks_leave_no_lone_item),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
