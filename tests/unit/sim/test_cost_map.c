/* Items that do not cost the same: cost maps in cluster files (src/partition/cost_map.c), the
 * lower bound with them (src/sim/bound.c), the hlb policy's misprediction guard and the cost
 * density learnt from one pass and used by the next (src/balancer/density.c, hlb_sim passes). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/policy.h"
#include "hlb/sim.h"

/* Two nodes, five PUs: the PLB-HeC two-machine matmul preset's shape (CPUs ~8x slower than
 * GPUs, fixed costs of 1 and 5 ms), with a cost map spliced in. */
static const char cluster_head[] =
    "{\"item\": {\"in_bytes\": 1000, \"out_bytes\": 1000}, \"nodes\": ["
    "{\"name\": \"A\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e15}, \"pus\": ["
    "{\"name\": \"A.cpu\", \"kind\": \"cpu\", \"time\": {\"const\": 0.001, \"linear\": 0.0298}},"
    "{\"name\": \"A.gpu\", \"kind\": \"gpu\", \"time\": {\"const\": 0.005, \"linear\": 0.0035},"
    " \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}}]},"
    "{\"name\": \"B\", \"link\": {\"latency_s\": 1e-4, \"bandwidth_Bps\": 1e9}, \"pus\": ["
    "{\"name\": \"B.cpu\", \"kind\": \"cpu\", \"time\": {\"const\": 0.001, \"linear\": 0.06}},"
    "{\"name\": \"B.gpu0\", \"kind\": \"gpu\", \"time\": {\"const\": 0.005, \"linear\": 0.005},"
    " \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}},"
    "{\"name\": \"B.gpu1\", \"kind\": \"gpu\", \"time\": {\"const\": 0.005, \"linear\": 0.005},"
    " \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}}]}]";

static hlb_cluster *with_map(const char *map) {
  char json[4096];
  snprintf(json, sizeof json, "%s%s%s}", cluster_head, map ? ", \"cost_map\": " : "",
           map ? map : "");
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("test.json", json, &c) != 0) fail_msg("parse: %s", hlb_last_error());
  return c;
}

/* The PLB-HeC two-machine matmul preset (presets/) with a cost map: the papers' cluster on
 * work whose items do not cost the same. */
static hlb_cluster *preset_with_map(const char *map) {
  FILE *f = fopen(HLB_PRESETS_DIR "/plbhec-2machines-matmul.json", "rb");
  assert_non_null(f);
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 512, f);
  fclose(f);
  while (n > 0 && text[n - 1] != '}') /* drop the closing brace, append the map */
    n--;
  snprintf(text + n - 1, sizeof text - n, ", \"cost_map\": %s}", map);
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("preset.json", text, &c) != 0) fail_msg("parse: %s", hlb_last_error());
  return c;
}

/* That preset with the random spikes preset's map (5 % of 512 slices 30x the others) drawn from
 * map seed `seed` (the preset's own is 3), said to vary or not (cost_map.declared). */
static hlb_cluster *preset_with_spikes(unsigned seed, int declared) {
  char spec[160];
  snprintf(spec, sizeof spec,
           "{\"spikes\": {\"seed\": %u, \"fraction\": 0.05, \"height\": 30}, \"slices\": 512, "
           "\"declared\": %s}",
           seed, declared ? "true" : "false");
  return preset_with_map(spec);
}

static hlb_sim_result *sim(const hlb_cluster *c, size_t n, const char *policy, const char *params,
                           unsigned passes) {
  hlb_sim_options o = {.n_items = n,
                       .policy = policy,
                       .params = params,
                       .seed = 1,
                       .no_noise = 1,
                       .no_events = 1,
                       .passes = passes};
  hlb_sim_result *r = NULL;
  if (hlb_sim_run(c, &o, &r) != 0) fail_msg("sim %s: %s", policy, hlb_last_error());
  assert_true(r->exactly_once);
  return r;
}

/* Every map is normalised to mean 1: the whole run costs n_items, a range its share. */
static void maps_have_mean_one(void **state) {
  (void)state;
  const char *maps[] = {"{\"segments\": [1, 3]}", "{\"profile\": \"mandelbrot\", \"slices\": 64}",
                        "{\"spikes\": {\"seed\": 3, \"fraction\": 0.1, \"height\": 50}}"};
  for (unsigned i = 0; i < 3; i++) {
    hlb_cluster *c = with_map(maps[i]);
    assert_true(c->cost_slices > 0);
    assert_float_equal(hlb_cluster_range_cost(c, 1000, 0, 1000), 1000.0, 1e-6);
    double a = hlb_cluster_range_cost(c, 1000, 0, 400),
           b = hlb_cluster_range_cost(c, 1000, 400, 600);
    assert_float_equal(a + b, 1000.0, 1e-6);
    hlb_cluster_free(c);
  }
  hlb_cluster *c = with_map("{\"segments\": [1, 3]}"); /* halves cost 0.5 and 1.5 */
  assert_float_equal(hlb_cluster_range_cost(c, 1000, 0, 500), 250.0, 1e-9);
  assert_float_equal(hlb_cluster_range_cost(c, 1000, 250, 500), 125.0 + 375.0, 1e-9);
  hlb_cluster_free(c);
  c = with_map(NULL);
  assert_float_equal(hlb_cluster_range_cost(c, 1000, 10, 20), 20.0, 0);
  hlb_cluster_free(c);
}

/* The mandelbrot profile is the app's: rows through the set (the middle) cost far more than the
 * top and bottom rows, and the image is symmetric about the real axis. */
static void mandelbrot_profile_is_the_apps(void **state) {
  (void)state;
  hlb_cluster *c = with_map("{\"profile\": \"mandelbrot\", \"slices\": 64}");
  double top = c->cost_weight[0], mid = c->cost_weight[32], bottom = c->cost_weight[63];
  assert_true(mid > 20 * top);
  assert_float_equal(top, bottom, 1e-9 * top);
  hlb_cluster_free(c);
}

static void bad_maps_are_named(void **state) {
  (void)state;
  struct {
    const char *map, *says;
  } bad[] = {
      {"{\"segments\": [1, -2]}", "cost_map.segments[1]"},
      {"{\"segments\": []}", "cost_map.segments"},
      {"{\"segments\": [1], \"profile\": \"mandelbrot\"}", "exactly one"},
      {"{\"profile\": \"julia\"}", "julia"},
      {"{\"spikes\": {\"fraction\": 2, \"height\": 3}}", "cost_map.spikes.fraction"},
      {"{\"spikes\": {\"fraction\": 0.1}}", "height"},
      {"{\"profile\": \"mandelbrot\", \"slices\": 0}", "cost_map.slices"},
      {"{\"segments\": [1], \"slices\": 4}", "cost_map.slices"},
      {"{\"segments\": [1], \"declared\": 1}", "cost_map.declared"},
      {"{\"segment\": [1]}", "segment"},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
    char json[4096];
    snprintf(json, sizeof json, "%s, \"cost_map\": %s}", cluster_head, bad[i].map);
    hlb_cluster *c = NULL;
    assert_int_equal(hlb_cluster_parse("bad.json", json, &c), HLB_EPARSE);
    if (!strstr(hlb_last_error(), bad[i].says) || !strstr(hlb_last_error(), "bad.json"))
      fail_msg("map %s: message '%s' does not name '%s'", bad[i].map, hlb_last_error(),
               bad[i].says);
  }
}

/* The bound stays a bound with cost maps: no policy's noiseless run is below it. */
static void bound_is_below_every_run_with_maps(void **state) {
  (void)state;
  const char *maps[] = {"{\"segments\": [1, 1, 8, 8, 1, 0.2]}", "{\"profile\": \"mandelbrot\"}",
                        "{\"spikes\": {\"seed\": 7, \"fraction\": 0.05, \"height\": 30}}"};
  for (unsigned i = 0; i < 3; i++) {
    hlb_cluster *c = with_map(maps[i]);
    double bound = 0;
    assert_int_equal(hlb_sim_lower_bound(c, 20000, &bound), 0);
    for (unsigned p = 0; p < hlb_policy_count(); p++) {
      hlb_sim_result *r = sim(c, 20000, hlb_policy_at(p)->name, NULL, 1);
      if (r->makespan_s < bound * (1 - 1e-9))
        fail_msg("map %s, policy %s: makespan %.9g below the bound %.9g", maps[i], r->policy,
                 r->makespan_s, bound);
      hlb_sim_result_free(r);
    }
    hlb_cluster_free(c);
  }
}

/* Every item crosses some PU's links (src/sim/bound.c, item_bound). PU a computes 4 s per
 * average item and moves none; PU b computes next to nothing but moves each item over a 2 B/s
 * link (1 s an item, 2 bytes). The first half of the items cost 1.5, the second 0.5. Were each of
 * b's items as dear as the dearest, b would do 1.5 units of cost a second and the bound would be
 * 100 / (1.5 + 1 / 4) = 57.14 s. But only 50 items are dear: by T, b moves T items, 50 dear and
 * T - 50 cheap (50 + T / 2 of cost), and a computes the rest, 50 - T / 2 = T / 4: T = 200 / 3. The
 * plan that meets it (b takes the dear half and 16.7 cheap items, a the other 33.3) is one no
 * policy of ranges from one end can make, so every run is above it. */
static const char two_pus_one_link[] =
    "{\"item\": {\"in_bytes\": 1, \"out_bytes\": 1}, \"nodes\": ["
    "{\"name\": \"A\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 1e15}, \"pus\": ["
    "{\"name\": \"a\", \"kind\": \"cpu\", \"time\": {\"const\": 0, \"linear\": 4}}]},"
    "{\"name\": \"B\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 2}, \"pus\": ["
    "{\"name\": \"b\", \"kind\": \"gpu\", \"time\": {\"const\": 0, \"linear\": 1e-9}}]}],"
    " \"cost_map\": {\"segments\": [3, 1]}}";

static void bound_moves_every_item(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("two.json", two_pus_one_link, &c) != 0)
    fail_msg("parse: %s", hlb_last_error());
  double bound = 0;
  assert_int_equal(hlb_sim_lower_bound(c, 100, &bound), 0);
  if (fabs(bound - 200.0 / 3) > 1e-3) fail_msg("bound %.9g, not 200 / 3", bound);
  for (unsigned p = 0; p < hlb_policy_count(); p++) {
    hlb_sim_result *r = sim(c, 100, hlb_policy_at(p)->name, NULL, 1);
    if (r->makespan_s < bound * (1 - 1e-9))
      fail_msg("policy %s: makespan %.9g below the bound %.9g", r->policy, r->makespan_s, bound);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

/* A random cluster with a cost map whose items' bytes matter: 2-4 nodes of 1-3 PUs, per-item
 * compute 1-100 ms, links that move an item in 0-50 ms, fixed costs 0-5 ms, a few PUs with
 * quadratic terms or a largest block; the map random segments or random spikes. */
static double rnd(uint32_t *seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (double)(*seed >> 8) / 16777216.0;
}

static hlb_cluster *random_moving_cluster(uint32_t *seed) {
  char json[8192];
  size_t at = 0;
  unsigned nodes = 2 + (unsigned)(rnd(seed) * 3);
  at += (size_t)snprintf(json + at, sizeof json - at,
                         "{\"item\": {\"in_bytes\": 1000, \"out_bytes\": 1000}, \"nodes\": [");
  for (unsigned n = 0; n < nodes; n++) {
    double bw = rnd(seed) < 0.3 ? 1e15 : 2000.0 / (0.05 * rnd(seed) + 1e-4);
    unsigned pus = 1 + (unsigned)(rnd(seed) * 3);
    double latency = 1e-4 * rnd(seed);
    at += (size_t)snprintf(json + at, sizeof json - at,
                           "%s{\"name\": \"n%u\", \"link\": {\"latency_s\": %.6g, "
                           "\"bandwidth_Bps\": %.17g}, \"pus\": [",
                           n ? ", " : "", n, latency, bw);
    for (unsigned k = 0; k < pus; k++) {
      double shape = rnd(seed);
      char in_time[64] = "", after[64] = ""; /* a quadratic term, or a largest block */
      if (shape < 0.2)
        snprintf(in_time, sizeof in_time, ", \"quadratic\": %.6g", 1e-6 * rnd(seed));
      else if (shape < 0.35)
        snprintf(after, sizeof after, ", \"max_items\": %u", 50 + (unsigned)(rnd(seed) * 500));
      double fixed = 0.005 * rnd(seed), per_item = 0.001 + 0.099 * rnd(seed);
      at += (size_t)snprintf(json + at, sizeof json - at,
                             "%s{\"name\": \"n%u.p%u\", \"kind\": \"cpu\", \"time\": "
                             "{\"const\": %.6g, \"linear\": %.6g%s}%s}",
                             k ? ", " : "", n, k, fixed, per_item, in_time, after);
    }
    at += (size_t)snprintf(json + at, sizeof json - at, "]}");
  }
  if (rnd(seed) < 0.5) {
    at += (size_t)snprintf(json + at, sizeof json - at, "], \"cost_map\": {\"segments\": [");
    for (unsigned k = 0; k < 8; k++) {
      double w = rnd(seed) < 0.3 ? 10 + 20 * rnd(seed) : 0.2 + rnd(seed);
      at += (size_t)snprintf(json + at, sizeof json - at, "%s%.4g", k ? ", " : "", w);
    }
    at += (size_t)snprintf(json + at, sizeof json - at, "]}}");
  } else {
    unsigned map_seed = 1 + (unsigned)(rnd(seed) * 1000);
    double fraction = 0.02 + 0.2 * rnd(seed), height = 5 + 40 * rnd(seed);
    at += (size_t)snprintf(json + at, sizeof json - at,
                           "], \"cost_map\": {\"spikes\": {\"seed\": %u, \"fraction\": %.3g, "
                           "\"height\": %.3g}, \"slices\": 64}}",
                           map_seed, fraction, height);
  }
  hlb_cluster *c = NULL;
  if (hlb_cluster_parse("random.json", json, &c) != 0)
    fail_msg("parse: %s\n%s", hlb_last_error(), json);
  return c;
}

/* The bound stays a bound where it counts every item's bytes: on random clusters with cost maps
 * and links that matter, no policy's noiseless run is below it. */
static void bound_with_moving_items_is_below_every_run(void **state) {
  (void)state;
  uint32_t seed = 2026;
  for (int trial = 0; trial < 12; trial++) {
    hlb_cluster *c = random_moving_cluster(&seed);
    size_t n = 2000 + 1500 * (size_t)trial;
    double bound = 0;
    assert_int_equal(hlb_sim_lower_bound(c, n, &bound), 0);
    assert_true(bound > 0);
    for (unsigned p = 0; p < hlb_policy_count(); p++) {
      hlb_sim_result *r = sim(c, n, hlb_policy_at(p)->name, NULL, 1);
      if (r->makespan_s < bound * (1 - 1e-9))
        fail_msg("trial %d, policy %s: makespan %.9g below the bound %.9g", trial, r->policy,
                 r->makespan_s, bound);
      hlb_sim_result_free(r);
    }
    hlb_cluster_free(c);
  }
}

/* The mandelbrot map seen for the first time: without the misprediction guard the default
 * policy gives blocks sized on the cheap top rows that reach the set and run past everyone
 * else (1.13 x the bound, the GPUs 10 % idle); with it the run ends near the bound, below
 * greedy. */
static void guard_keeps_mandelbrot_near_the_bound(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_map("{\"profile\": \"mandelbrot\"}");
  /* best_block off too: its cap on the blocks that look dearer per item would hide the guard; and
   * block_budget, which holds the blocks once a PU is found uneven (1.02 x with it). */
  hlb_sim_result *off = sim(c, 65536, "hlb", "tail_idle=0,best_block=0,block_budget=0", 1);
  hlb_sim_result *on = sim(c, 65536, "hlb", NULL, 1);
  hlb_sim_result *greedy = sim(c, 65536, "greedy", NULL, 1);
  if (!(off->ratio > 1.08))
    fail_msg("without the guard: %.3f x the bound (expected > 1.08)", off->ratio);
  if (!(on->ratio < 1.04))
    fail_msg("with the guard: %.3f x the bound (expected < 1.04)", on->ratio);
  if (!(on->makespan_s <= greedy->makespan_s))
    fail_msg("hlb %.6g s against greedy %.6g s", on->makespan_s, greedy->makespan_s);
  hlb_sim_result_free(off);
  hlb_sim_result_free(on);
  hlb_sim_result_free(greedy);
  hlb_cluster_free(c);
}

/* A later run that starts from stored samples but not from the item costs that explain them
 * (another item count, a file written without them): on the mandelbrot map the samples scatter
 * far around any curve (median |ln(measured / predicted)| 0.13-3.3, most above 0.41), and planning
 * from them sent a block sized on cheap rows into the set (2.23 x the bound at seed 4, 1.74 at seed
 * 7). Such priors are forgotten before the PU's first block; the run ends as a run that trains. */
static void scattered_priors_are_not_trusted(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_map("{\"profile\": \"mandelbrot\"}");
  double worst = 0.0;
  uint64_t worst_seed = 0;
  for (uint64_t seed = 1; seed <= 10; seed++) {
    hlb_sim_options o = {.n_items = 65536,
                         .policy = "hlb",
                         .seed = seed,
                         .no_events = 1,
                         .passes = 2,
                         .remember = 1,
                         .no_item_costs = 1};
    hlb_sim_result *r = NULL;
    if (hlb_sim_run(c, &o, &r) != 0) fail_msg("sim: %s", hlb_last_error());
    assert_true(r->exactly_once);
    if (r->ratio > worst) worst = r->ratio, worst_seed = seed;
    hlb_sim_result_free(r);
  }
  if (!(worst < 1.1))
    fail_msg("priors without item costs: %.3f x the bound at seed %llu (expected < 1.1)", worst,
             (unsigned long long)worst_seed);
  hlb_cluster_free(c);
}

/* A preset of presets/, by name. */
static hlb_cluster *preset(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.json", HLB_PRESETS_DIR, name);
  hlb_cluster *c = NULL;
  if (hlb_cluster_load(path, &c) != 0) fail_msg("%s: %s", path, hlb_last_error());
  return c;
}

/* A policy on a loaded cluster at one seed of its noise, as `hlb sim CLUSTER --items N --seed S
 * --policy P [--params PARAMS] --passes PASSES [--remember]` runs it: the ratio to the bound. */
static double ratio_at_seed(const hlb_cluster *c, size_t n, const char *policy, const char *params,
                            unsigned passes, int remember, uint64_t seed) {
  hlb_sim_options o = {.n_items = n,
                       .policy = policy,
                       .params = params,
                       .seed = seed,
                       .passes = passes,
                       .remember = remember};
  hlb_sim_result *r = NULL;
  if (hlb_sim_run(c, &o, &r) != 0) fail_msg("sim: %s", hlb_last_error());
  assert_true(r->exactly_once);
  double ratio = r->ratio;
  hlb_sim_result_free(r);
  return ratio;
}

/* The same over seeds 1..20 (`--reps 20`): the mean ratio to the bound, the worst in *worst. */
static double mean_at_seeds(const hlb_cluster *c, size_t n, const char *policy, const char *params,
                            unsigned passes, int remember, double *worst) {
  double mean = 0.0;
  *worst = 0.0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    double ratio = ratio_at_seed(c, n, policy, params, passes, remember, seed);
    mean += ratio / 20;
    if (ratio > *worst) *worst = ratio;
  }
  return mean;
}

/* A preset over 100000 items and seeds 1..20 (passes > 1: remembering), as `hlb sim PRESET
 * --items 100000 --reps 20` runs it. */
static double mean_over_seeds(const char *name, const char *policy, const char *params,
                              unsigned passes, double *worst) {
  hlb_cluster *c = preset(name);
  double mean = mean_at_seeds(c, 100000, policy, params, passes, passes > 1, worst);
  hlb_cluster_free(c);
  return mean;
}

/* Later passes start from the density the earlier ones learnt, once it has shown that it
 * predicts a pass (the second pass scores the first's costs on trial). On random spikes at 65536
 * items no first pass can foresee them: with blocks sized by the curves alone (block_budget=0)
 * 1.53 x the bound at every seed, machine B's CPU meeting a spike in its second block, 2 s into
 * the run; held by the budget (the default where items vary) 1.07. The third pass, remembering
 * the models and (where the second found them predictive) sizing by the item costs learnt,
 * ends nearer the bound on average than either (1.03 over 20 seeds); the budget does not hold
 * it, its items are measured. On the mandelbrot map (no noise) it ends with under half the
 * blocks (the guard no longer cuts them small). */
static void later_passes_use_the_density(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_spikes(3, 1);
  double worst_one, worst_held, worst_three;
  double one = mean_at_seeds(c, 65536, "hlb", "block_budget=0", 1, 0, &worst_one);
  double held = mean_at_seeds(c, 65536, "hlb", NULL, 1, 0, &worst_held);
  double three = mean_at_seeds(c, 65536, "hlb", NULL, 3, 1, &worst_three);
  if (!(one > 1.4 && three < held && three < 1.05))
    fail_msg("spikes: pass 1 at %.3f unheld, %.3f held, pass 3 at %.3f x the bound (means over 20 "
             "seeds)",
             one, held, three);
  hlb_cluster_free(c);
  c = preset_with_map("{\"profile\": \"mandelbrot\"}");
  hlb_sim_result *first = sim(c, 65536, "hlb", NULL, 1), *third = sim(c, 65536, "hlb", NULL, 3);
  if (!(third->blocks * 2 < first->blocks && third->ratio < 1.04))
    fail_msg("mandelbrot: pass 1 %zu blocks, pass 3 %zu blocks at %.3f x the bound", first->blocks,
             third->blocks, third->ratio);
  hlb_sim_result_free(first);
  hlb_sim_result_free(third);
  hlb_cluster_free(c);
}

/* The hlb policy's mean and worst ratio (mean_over_seeds) must stay under the given ones. */
static void expect_over_seeds(const char *name, unsigned passes, double mean_below,
                              double worst_below) {
  double worst, mean = mean_over_seeds(name, "hlb", NULL, passes, &worst);
  if (!(mean < mean_below && worst < worst_below))
    fail_msg("%s, pass %u: mean %.4f (expected < %.2f), worst %.4f (expected < %.2f) x the bound",
             name, passes, mean, mean_below, worst, worst_below);
}

/* A region 8x dearer than the rest, first pass: a CPU that met it read the unevenness as a fixed
 * cost of 2.4 s per block (its real one 1 ms), and the guard, which never cut below a block that
 * amortises the fixed cost, let a 160-row block run 79 s past everyone (1.21 x the bound at seed
 * 6; 1.07 on average). A PU whose curve misses by more than prior_tolerance is guarded down to a
 * granule. */
static void untrusted_curves_do_not_floor_the_guard(void **state) {
  (void)state;
  expect_over_seeds("irregular-2machines-segments", 1, 1.04, 1.06);
}

/* Random spikes, first pass: every PU's blocks learn from the run's misses on any PU, not only
 * its own; a PU that had met only cheap items sized its next block for none (1.19 x the bound on
 * average over 20 seeds, 1.71 at worst; with the guard's floor alone 1.19 and 1.70). */
static void run_misses_guard_every_pu(void **state) {
  (void)state;
  expect_over_seeds("irregular-2machines-spikes", 1, 1.16, 1.5);
}

/* The mandelbrot map, first pass: the slowest CPU, with one miss of its own so far (a 40-row
 * block 7.7x its prediction), was not guarded and got 640 rows of the dear middle that ran 227 s
 * past a 220 s run; later, after 1-row blocks of the dear rows that its line (their cost read as
 * a fixed cost) predicted well, it got 640 rows again. The run's misses guard a PU without two of
 * its own, and a PU whose curve missed beyond prior_tolerance stays distrusted for the run
 * (1.036 x the bound on average, 1.088 at worst, against greedy's 1.032). */
static void first_pass_never_above_greedy_on_mandelbrot(void **state) {
  (void)state;
  double worst, greedy_worst;
  double mean = mean_over_seeds("irregular-2machines-mandelbrot", "hlb", NULL, 1, &worst);
  double greedy =
      mean_over_seeds("irregular-2machines-mandelbrot", "greedy", NULL, 1, &greedy_worst);
  if (!(mean < greedy && worst < 1.05))
    fail_msg("mandelbrot map, first pass: hlb mean %.4f (greedy %.4f), worst %.4f (expected < "
             "1.05) x the bound",
             mean, greedy, worst);
}

/* Passes that remember keep their samples in the units the next pass reads them in (average
 * items under the item costs, hlb_balancer_log_sample, as the executor stores them). As raw
 * counts, a pass sized by item costs read blocks of cheap rows as blocks of average ones and
 * planned a PU 3-5x too fast: 2.2 x the bound at worst on the mandelbrot map. */
static void remembered_samples_are_costs(void **state) {
  (void)state;
  expect_over_seeds("irregular-2machines-mandelbrot", 3, 1.04, 1.12);
}

/* The spikes preset's map drawn from map seeds 1-20 (the preset is one of them, seed 3), declared
 * or not, noiseless, over n items: hlb's geometric mean and worst ratio to the bound, and the maps
 * on which it ends after greedy. */
static void over_spike_maps(size_t n, int declared, double *mean, double *worst,
                            unsigned *over_greedy) {
  double log_sum = 0;
  *worst = 0;
  *over_greedy = 0;
  for (unsigned map = 1; map <= 20; map++) {
    hlb_cluster *c = preset_with_spikes(map, declared);
    hlb_sim_result *g = sim(c, n, "greedy", NULL, 1);
    hlb_sim_result *b = sim(c, n, "hlb", NULL, 1);
    log_sum += log(b->ratio);
    *worst = fmax(*worst, b->ratio);
    *over_greedy += b->makespan_s > g->makespan_s;
    hlb_sim_result_free(g);
    hlb_sim_result_free(b);
    hlb_cluster_free(c);
  }
  *mean = exp(log_sum / 20);
}

/* block_budget: where the items' costs vary (a cost map stands for a codelet that says so) no
 * block of a first pass is planned longer than that share of the predicted makespan unless its
 * fixed cost needs it. Over the 20 maps at 100000 items, unheld (block_budget=0) the run ends 1.22
 * x the bound on average and above greedy on 5 maps of 20, machine B's CPU meeting spikes nobody
 * had met in a block of hundreds of rows (map 19: 2.33 x); the default (0.02) 1.054, worst 1.078,
 * never above greedy (1.09, 1.34 and 2 maps while a PU's spread block, its second size, was not
 * held: map 16's B CPU; docs/benchmarks.md, "Random spikes, many maps", "Said to vary"). With
 * best_block off where items are said to vary, 1.037, worst 1.100 (map 6: B's CPU, 64 rows at
 * 103 s within the budget, met a spike slice and ended 15 s after the others). */
static void block_budget_holds_slow_pus_on_unseen_spikes(void **state) {
  (void)state;
  double mean, worst;
  unsigned over_greedy;
  over_spike_maps(100000, 1, &mean, &worst, &over_greedy);
  if (!(mean < 1.05 && worst < 1.12 && over_greedy == 0))
    fail_msg("hlb over 20 spike maps: %.4f x the bound (geomean), worst %.4f, above greedy on %u "
             "(expected < 1.05, < 1.12, 0; block_budget=0: 1.22, 2.33, 5)",
             mean, worst, over_greedy);
}

/* A flat size read off items that cost differently is no fixed cost (flat_may_be_dear_items in
 * src/policy/hlb.c): machine B's CPU on spike map 1 read 28 rows as flat off a 1-row spike block
 * and 28 cheap rows, and that floor held its guarded blocks at 28 rows to the end, one of which
 * met a spike slice and ran 44 s past the others. With noise (seeds 1 and 2, 10^5 items) that was
 * 1.22 and 1.27 x the bound; without the floor where such a block could end past the finish,
 * 1.015 and 1.014. */
static void flat_size_of_dear_items_does_not_floor_the_guard(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_spikes(1, 1);
  for (uint64_t seed = 1; seed <= 2; seed++) {
    hlb_sim_options o = {.n_items = 100000, .policy = "hlb", .seed = seed, .no_events = 1};
    hlb_sim_result *r = NULL;
    if (hlb_sim_run(c, &o, &r) != 0) fail_msg("sim: %s", hlb_last_error());
    assert_true(r->exactly_once);
    if (!(r->ratio < 1.05))
      fail_msg("noise seed %u: %.4f x the bound (expected < 1.05; floored at the flat size: 1.22, "
               "1.27)",
               (unsigned)seed, r->ratio);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

/* Near the end a slow PU waits rather than take a granule that, as dear as its dearest recent
 * row, would end past the finish (dear_granule_ends_late in src/policy/hlb.c): machine B's CPU on
 * spike map 1 (20000 items, noise seed 1) took its last row 0.7 s before the others were done, a
 * spike that ended 1.7 s after them (1.072 x the bound; 1.033 waiting). Over the 20 maps at 5000
 * items, noiseless, the worst map is 1.193 x (1.213 taking the granule). */
static void slow_pu_waits_for_a_dear_last_granule(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_spikes(1, 1);
  hlb_sim_options o = {.n_items = 20000, .policy = "hlb", .seed = 1, .no_events = 1};
  hlb_sim_result *r = NULL;
  if (hlb_sim_run(c, &o, &r) != 0) fail_msg("sim: %s", hlb_last_error());
  assert_true(r->exactly_once);
  if (!(r->ratio < 1.05))
    fail_msg("map 1, 20000 items: %.4f x the bound (expected < 1.05; taking the granule 1.072)",
             r->ratio);
  hlb_sim_result_free(r);
  hlb_cluster_free(c);
  double mean, worst;
  unsigned over_greedy;
  over_spike_maps(5000, 1, &mean, &worst, &over_greedy);
  if (!(worst < 1.205 && over_greedy == 0))
    fail_msg("20 spike maps, 5000 items: worst %.4f x the bound, above greedy on %u (expected < "
             "1.205, 0; taking the granule 1.213)",
             worst, over_greedy);
}

/* hlb's noiseless last of `passes` over the declared spike maps 1-8 at n items: the geometric
 * mean of their ratios to the bound, the worst (worst may be NULL) and each map's (ratio[8]). */
static double last_passes_on_maps_1_to_8(size_t n, unsigned passes, double *worst,
                                         double ratio[8]) {
  double lg = 0, w = 0;
  for (unsigned m = 1; m <= 8; m++) {
    hlb_cluster *c = preset_with_spikes(m, 1);
    hlb_sim_result *r = sim(c, n, "hlb", NULL, passes);
    ratio[m - 1] = r->ratio;
    lg += log(r->ratio);
    w = fmax(w, r->ratio);
    hlb_sim_result_free(r);
    hlb_cluster_free(c);
  }
  if (worst) *worst = w;
  return exp(lg / 8);
}

/* In a pass sized by measured item costs a block asked for by cost is rounded up to one item, and
 * near the end a slow PU's one item may be a spike it cannot finish in time: it waits while others
 * are busy (dear_item_ends_late in src/policy/hlb.c). Machine B's CPU in the noiseless third pass
 * of spike map 2 at 5000 items took one spike row with a fraction of its cost left to the finish
 * and ended the run late: 1.232 x the bound, 1.059 waiting; over maps 1-8, 1.141 -> 1.076
 * (geomean; the density smears some spikes, so a PU may still take one it reads as cheaper). */
static void slow_pu_waits_for_a_known_dear_item(void **state) {
  (void)state;
  double ratio[8], geomean = last_passes_on_maps_1_to_8(5000, 3, NULL, ratio), map2 = ratio[1];
  if (!(map2 < 1.1 && geomean < 1.1))
    fail_msg("third passes at 5000 items: map 2 %.4f x the bound, maps 1-8 %.4f (geomean) "
             "(expected < 1.1, < 1.1; taking the item 1.232, 1.141)",
             map2, geomean);
}

/* A second pass is given the first pass's item costs on trial: its blocks go by count, and the
 * dear items the costs would place are as unplaced as in a first pass. Where the items are said to
 * vary it is guarded as one (hlb_balancer_items_measured in src/balancer/balancer.c). Unguarded,
 * machine B's CPU took blocks that met spikes far from the end of a pass whose guards thought the
 * items measured: noiseless second passes of maps 1-8 at 20000 items 1.088 x the bound (geomean),
 * worst 1.217; guarded 1.034, worst 1.056. */
static void a_pass_with_costs_on_trial_is_guarded(void **state) {
  (void)state;
  double ratio[8], worst, geomean = last_passes_on_maps_1_to_8(20000, 2, &worst, ratio);
  if (!(geomean < 1.05 && worst < 1.1))
    fail_msg("second passes at 20000 items: %.4f x the bound (geomean of maps 1-8), worst %.4f "
             "(expected < 1.05, < 1.1; unguarded 1.088, 1.217)",
             geomean, worst);
}

/* Where the items are said to vary, a larger block that took longer per item met dearer items:
 * best_block's cap, read off one such block, had held machine A's GPU (5 ms of fixed cost, 3.5 ms
 * a row) to 3-row blocks for the rest of a run, a third of its time fixed costs, and it is off in
 * a first pass over such items. And a PU whose share is under a granule waits where that granule,
 * as late as the run's worst block, would end past the finish: machine B's CPU took one row 0.26 s
 * before the others were done, a spike that ended 2.2 s after them (map 1 at 5000 items). Over the
 * 20 maps at 20000 items 1.129 x the bound (geomean), worst 1.330, with the cap; 1.055, 1.075
 * without; at 5000 items 1.226, worst 1.544, above greedy on 3, with the cap; 1.164, 1.291 and 2
 * without it but without the wait; 1.134, 1.234 and 0 with both (docs/benchmarks.md, "No
 * best_block where items are said to vary"). */
static void items_said_to_vary_keep_blocks_that_pay(void **state) {
  (void)state;
  double mean, worst;
  unsigned over_greedy;
  over_spike_maps(20000, 1, &mean, &worst, &over_greedy);
  if (!(mean < 1.08 && worst < 1.1 && over_greedy == 0))
    fail_msg("20 spike maps, 20000 items: %.4f x the bound (geomean), worst %.4f, above greedy on "
             "%u (expected < 1.08, < 1.1, 0; with best_block's cap 1.129, 1.330, 0)",
             mean, worst, over_greedy);
  over_spike_maps(5000, 1, &mean, &worst, &over_greedy);
  if (!(mean < 1.16 && worst < 1.26 && over_greedy == 0))
    fail_msg("20 spike maps, 5000 items: %.4f x the bound (geomean), worst %.4f, above greedy on "
             "%u (expected < 1.16, < 1.26, 0; with best_block's cap 1.226, 1.544, 3; without the "
             "cap nor the wait 1.164, 1.291, 2)",
             mean, worst, over_greedy);
}

/* The default policy's makespan and blocks on a cluster, noiseless, 65536 items; and with
 * block_budget=0 in off. */
static hlb_sim_result *with_and_without_budget(const hlb_cluster *c, hlb_sim_result **off) {
  *off = sim(c, 65536, "hlb", "block_budget=0", 1);
  return sim(c, 65536, "hlb", NULL, 1);
}

/* The budget holds only items said to vary or found to (a PU whose blocks miss its curve beyond
 * prior_tolerance: budget_holds). On a cluster whose PUs follow their curves the default runs
 * exactly as block_budget=0 does, noiseless and at the preset's noise (PLB-HAC's matmul presets
 * lost 0.1-0.35 % held, their blocks queueing on shared node links); the same cluster with a flat
 * map declared is held, in many more blocks. */
static void budget_holds_only_items_said_or_found_to_vary(void **state) {
  (void)state;
  hlb_cluster *c[2] = {preset("plbhec-2machines-matmul"),
                       preset_with_map("{\"segments\": [1, 1], \"declared\": true}")};
  for (unsigned k = 0; k < 2; k++) {
    hlb_sim_result *off, *on = with_and_without_budget(c[k], &off);
    if (k == 0 && !(on->makespan_s == off->makespan_s && on->blocks == off->blocks))
      fail_msg("uniform, not declared: the default %.9g s in %zu blocks, block_budget=0 %.9g s in "
               "%zu",
               on->makespan_s, on->blocks, off->makespan_s, off->blocks);
    if (k == 1 && !(on->blocks > 2 * off->blocks))
      fail_msg("a flat map, declared: the default in %zu blocks, block_budget=0 in %zu "
               "(expected over twice as many held)",
               on->blocks, off->blocks);
    hlb_sim_result_free(on);
    hlb_sim_result_free(off);
  }
  for (uint64_t seed = 1; seed <= 3; seed++) {
    double on = ratio_at_seed(c[0], 65536, "hlb", NULL, 1, 0, seed);
    double off = ratio_at_seed(c[0], 65536, "hlb", "block_budget=0", 1, 0, seed);
    if (on != off)
      fail_msg("uniform with noise, seed %llu: the default %.9g x the bound, block_budget=0 %.9g",
               (unsigned long long)seed, on, off);
  }
  hlb_cluster_free(c[0]);
  hlb_cluster_free(c[1]);
}

/* An app that does not say its items vary meets its first dear block unheld, but once a PU's
 * blocks miss its curve beyond prior_tolerance (note_uneven) the budget holds the rest of a first
 * run's pass as if it had said so (budget_holds). The 20 spike maps not declared, noiseless: at
 * 20000 items 1.267 x the bound (geomean), worst 2.026, above greedy on 5 maps, when only items
 * said to vary were held; 1.203, 1.915 and 3 held once found. At 5000 items 1.230, worst 2.698;
 * 1.204, worst 1.487. The worst map stays far above: its first spike is met by a slow PU's block
 * before any block has missed. */
static void items_found_to_vary_are_held(void **state) {
  (void)state;
  double mean, worst;
  unsigned over_greedy;
  over_spike_maps(20000, 0, &mean, &worst, &over_greedy);
  if (!(mean < 1.23 && over_greedy <= 4))
    fail_msg("20 spike maps not declared, 20000 items: %.4f x the bound (geomean), above greedy "
             "on %u (expected < 1.23, <= 4; held only where declared 1.267, 5)",
             mean, over_greedy);
  over_spike_maps(5000, 0, &mean, &worst, &over_greedy);
  if (!(mean < 1.22 && worst < 1.8))
    fail_msg("20 spike maps not declared, 5000 items: %.4f x the bound (geomean), worst %.4f "
             "(expected < 1.22, < 1.8; held only where declared 1.230, 2.698)",
             mean, worst);
}

/* A PU found uneven is given its second size (spread_block) only where that block, at the dearest
 * time per item of the PU's recent blocks, would end before the common finish. Unheld, machine B's
 * CPU took 320 rows after a 35-row block of spikes that took 89 s (map seed 11, 10^5 items, noise
 * seed 3: 1.744 x the bound, 1.167 held), and on map seed 4 at 5000 items (noise seed 5) the run
 * read 1.603 (1.170 held). Not declared: where items are said to vary the budget holds it. */
static void a_second_size_fits_the_dearest_item(void **state) {
  (void)state;
  const struct {
    unsigned map;
    size_t items;
    uint64_t seed;
  } runs[] = {{11, 100000, 3}, {4, 5000, 5}};
  for (unsigned i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    hlb_cluster *c = preset_with_spikes(runs[i].map, 0);
    double ratio = ratio_at_seed(c, runs[i].items, "hlb", NULL, 1, 0, runs[i].seed);
    hlb_cluster_free(c);
    if (!(ratio < 1.3))
      fail_msg("spikes map %u not declared, %zu items, noise seed %llu: %.4f x the bound "
               "(expected < 1.3; a second size unheld 1.744 and 1.603)",
               runs[i].map, runs[i].items, (unsigned long long)runs[i].seed, ratio);
  }
}

/* Random spikes (5 % of the slices 30x the others), first pass: the guard's mean miss let a block
 * that met the spikes run far past everyone (machine A's CPU, 675 rows planned at 9 s with 80 s
 * left, took 160 s: 1.14 x the bound on average, 1.36 at worst). Every block is kept able to end
 * within tail_idle of the finish even if it overran as badly as the run's worst block (1.051,
 * 1.137 at worst); and a block dearer per item than a smaller one by 10 % caps the PU's blocks
 * (best_block), read against every larger size measured, not only the next (1.040, 1.071). The
 * guard alone: the spikes preset's map not declared and block_budget=0 (not declared, the budget
 * also holds once a PU is found uneven: budget_holds; best_block on). Declared,
 * as the preset is, this one map, one of the luckiest unheld, reads 1.032, worst 1.039, and the
 * 20 maps of block_budget's test 1.037. */
static void worst_miss_bounds_every_block(void **state) {
  (void)state;
  hlb_cluster *c = preset_with_spikes(3, 0);
  double worst, greedy_worst;
  double mean = mean_at_seeds(c, 100000, "hlb", "block_budget=0", 1, 0, &worst);
  double greedy = mean_at_seeds(c, 100000, "greedy", NULL, 1, 0, &greedy_worst);
  hlb_cluster_free(c);
  if (!(mean < 1.05 && worst < 1.1 && mean < greedy))
    fail_msg("spikes, not declared, first pass: hlb mean %.4f (expected < 1.05, greedy %.4f), "
             "worst %.4f (expected < 1.1) x the bound",
             mean, greedy, worst);
}

/* The hlb policy's third remembered pass (`hlb sim PRESET --items 100000 --seed S --passes 3
 * --remember`) at each of the n seeds must end under `below` x the bound. */
static void expect_remembered_seeds_below(const char *name, const uint64_t *seeds, unsigned n,
                                          double below) {
  hlb_cluster *c = preset(name);
  for (unsigned i = 0; i < n; i++) {
    double ratio = ratio_at_seed(c, 100000, "hlb", NULL, 3, 1, seeds[i]);
    if (!(ratio < below))
      fail_msg("%s, pass 3, seed %llu: %.4f x the bound (expected < %.2f)", name,
               (unsigned long long)seeds[i], ratio, below);
  }
  hlb_cluster_free(c);
}

/* Remembered passes: a PU whose priors were forgotten (they mispredicted its first blocks)
 * starts again without misses of its own; in a run with item costs it was then not guarded at
 * all. On the spikes map machine B's CPU was given 794 rows predicted at 45 s that took 485 s
 * (seed 230, 2.44 x the bound; seed 294, 2.40); on the segments map the same CPU took 131 s for
 * a block predicted at 11 s and 142 s for the next (seed 131, 1.28; seed 123, 1.21 through a GPU's
 * amortising block of 89 s that ran 195 s). The run's misses guard it, as they guard any PU
 * without misses of its own in a run without item costs. And the guard may cut its blocks to a
 * granule (guard_floor): its fixed cost read off the 1-item blocks since, which met spikes
 * (2.2 s each), held the guard up to 230 rows that took 397 s (seed 234, 2.16 x the bound;
 * seed 236, 1.30). */
static void forgotten_priors_leave_the_guard_on(void **state) {
  (void)state;
  expect_remembered_seeds_below("irregular-2machines-spikes",
                                (const uint64_t[]){230, 294, 234, 236}, 4, 1.1);
  expect_remembered_seeds_below("irregular-2machines-segments", (const uint64_t[]){123, 131}, 2,
                                1.1);
}

/* A pass sized by item costs an earlier pass measured grows each PU's blocks by at most
 * tail_grow over its largest, not by grow: the map is smoothed, and a block 4x beyond the PU's
 * largest met spikes it had smeared. Random spikes, three passes (item costs carried, no
 * samples): 1.215 x the bound over seeds 1-20 grown by 4x, worst 2.28; 1.034, worst 1.10. And
 * remembered, seed 113: B's CPU took 201 rows at the start of pass 3 (277 s, 1.34 x the bound);
 * 1.03. */
static void later_passes_grow_by_tail_grow(void **state) {
  (void)state;
  hlb_cluster *c = preset("irregular-2machines-spikes");
  double worst, mean = mean_at_seeds(c, 100000, "hlb", NULL, 3, 0, &worst);
  hlb_cluster_free(c);
  if (!(mean < 1.08 && worst < 1.5))
    fail_msg("spikes, pass 3: mean %.4f (expected < 1.08), worst %.4f (expected < 1.5) x the "
             "bound",
             mean, worst);
  expect_remembered_seeds_below("irregular-2machines-spikes", (const uint64_t[]){113}, 1, 1.1);
}

/* Uniform work: the guard does not bind and passes change nothing that matters. */
static void uniform_work_is_unchanged(void **state) {
  (void)state;
  hlb_cluster *c = with_map(NULL);
  hlb_sim_result *off = sim(c, 65536, "hlb", "tail_idle=0", 1), *on = sim(c, 65536, "hlb", NULL, 1);
  hlb_sim_result *three = sim(c, 65536, "hlb", NULL, 3);
  assert_float_equal(on->makespan_s, off->makespan_s, 1e-9 * off->makespan_s);
  if (!(three->makespan_s <= 1.01 * on->makespan_s))
    fail_msg("uniform: pass 3 %.6g s against pass 1 %.6g s", three->makespan_s, on->makespan_s);
  hlb_sim_result_free(off);
  hlb_sim_result_free(on);
  hlb_sim_result_free(three);
  hlb_cluster_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(maps_have_mean_one),
      cmocka_unit_test(mandelbrot_profile_is_the_apps),
      cmocka_unit_test(bad_maps_are_named),
      cmocka_unit_test(bound_is_below_every_run_with_maps),
      cmocka_unit_test(bound_moves_every_item),
      cmocka_unit_test(bound_with_moving_items_is_below_every_run),
      cmocka_unit_test(guard_keeps_mandelbrot_near_the_bound),
      cmocka_unit_test(later_passes_use_the_density),
      cmocka_unit_test(scattered_priors_are_not_trusted),
      cmocka_unit_test(uniform_work_is_unchanged),
      cmocka_unit_test(untrusted_curves_do_not_floor_the_guard),
      cmocka_unit_test(run_misses_guard_every_pu),
      cmocka_unit_test(remembered_samples_are_costs),
      cmocka_unit_test(first_pass_never_above_greedy_on_mandelbrot),
      cmocka_unit_test(worst_miss_bounds_every_block),
      cmocka_unit_test(block_budget_holds_slow_pus_on_unseen_spikes),
      cmocka_unit_test(items_said_to_vary_keep_blocks_that_pay),
      cmocka_unit_test(flat_size_of_dear_items_does_not_floor_the_guard),
      cmocka_unit_test(slow_pu_waits_for_a_dear_last_granule),
      cmocka_unit_test(slow_pu_waits_for_a_known_dear_item),
      cmocka_unit_test(a_pass_with_costs_on_trial_is_guarded),
      cmocka_unit_test(budget_holds_only_items_said_or_found_to_vary),
      cmocka_unit_test(items_found_to_vary_are_held),
      cmocka_unit_test(a_second_size_fits_the_dearest_item),
      cmocka_unit_test(forgotten_priors_leave_the_guard_on),
      cmocka_unit_test(later_passes_grow_by_tail_grow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
