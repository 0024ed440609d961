/* Simulator benchmarks (docs/simulator.md). Prints tables; never passes or fails on time.
 *
 *   bench_sim events   [PUS] [ITEMS]     block events per second (greedy, small chunks)
 *   bench_sim scale    [PUS] [ITEMS]     10^4 PUs x 10^8 items: wall time with greedy and hlb
 *   bench_sim policies [PRESETS_DIR]     every policy on every preset and on random clusters
 *                                         of 2-64 PUs with up to 30x speed spread: ratio to
 *                                         the lower bound and to greedy
 *   bench_sim superlinear [PARAMS] [ITEMS]
 *                                       random clusters whose curves have quadratic, cubic or
 *                                         x ln x terms (a best block size y* per PU): ratio
 *                                         to the lower bound of greedy, plb-hac and hlb, of
 *                                         hlb's third pass remembering the first two, and of
 *                                         hlb with PARAMS (e.g. best_block=0) when given;
 *                                         over ITEMS items (default 10^5; 1e6 style)
 *   bench_sim superlinear-cluster PUS K  prints the JSON of that table's cluster K (1-3) of PUS
 *                                         PUs, for `hlb sim FILE` (docs/benchmarks.md)
 *   bench_sim spike-maps [ITEMS] [MAPS] [PARAMS]
 *                                       the irregular-2machines-spikes preset with its random
 *                                         spikes drawn from map seeds 1..MAPS (default 20) instead
 *                                         of its one seed: greedy, plb-hac, hlb and hlb with
 *                                         PARAMS when given (e.g. block_budget=0), the mean
 *                                         ratio to the bound over noise seeds 1-5 of each map,
 *                                         over ITEMS items (default 10^5)
 *   bench_sim spike-maps-undeclared [ITEMS] [MAPS] [PARAMS]
 *                                       the same maps with cost_map.declared false (an app that
 *                                         does not say its items vary)
 *   bench_sim spike-maps-pass3 [ITEMS] [MAPS] [PARAMS]
 *                                       the declared maps' third pass, each pass starting from
 *                                         the item costs and blocks of the ones before
 *   bench_sim all      (default)         events, scale and policies, with their default sizes
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "../bench_median.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/rng.h"
#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/policy.h"
#include "hlb/sim.h"

#ifndef HLB_PRESETS_DIR
#define HLB_PRESETS_DIR "presets"
#endif

#define MAX_POL 32

/* The synthetic clusters' shared parts: the item and noise, and before every 8th PU the
 * node that holds it (the first node the manager's, on a free link). */
static size_t cluster_head(char *s, size_t cap) {
  return (size_t)snprintf(s, cap,
                          "{\"item\": {\"in_bytes\": 64, \"out_bytes\": 8}, "
                          "\"noise_sigma\": 0.05, \"nodes\": [");
}

static size_t node_head(char *s, size_t cap, unsigned p) {
  if (p % 8) return 0;
  return (size_t)snprintf(s, cap,
                          "%s{\"name\": \"n%u\", \"link\": {\"latency_s\": %g, "
                          "\"bandwidth_Bps\": 1.25e9}, \"pus\": [",
                          p ? "]}, " : "", p / 8, p < 8 ? 0.0 : 2e-5);
}

/* A synthetic cluster of n PUs, 8 per node, speeds spread over [1, spread] log-uniformly;
 * PUs faster than sqrt(spread) are "gpu" (behind a PCIe link), the rest "cpu". */
static char *random_cluster_json(unsigned n, double spread, uint64_t seed) {
  hlb__rng rng;
  hlb__rng_seed(&rng, seed);
  size_t cap = 512 + (size_t)n * 320;
  char *s = malloc(cap);
  if (!s) return NULL;
  size_t len = cluster_head(s, cap);
  for (unsigned p = 0; p < n; p++) {
    len += node_head(s + len, cap - len, p);
    double speed = pow(spread, hlb__rng_uniform(&rng)); /* 1 = slowest: 10 ms per item */
    int gpu = speed > sqrt(spread);
    len += (size_t)snprintf(
        s + len, cap - len,
        "%s{\"name\": \"p%u\", \"kind\": \"%s\", \"time\": {\"const\": %g, \"linear\": %.6g}%s}",
        p % 8 ? ", " : "", p, gpu ? "gpu" : "cpu", gpu ? 2e-3 : 2e-4, 1e-2 / speed,
        gpu ? ", \"link\": {\"latency_s\": 1e-5, \"bandwidth_Bps\": 6e9}" : "");
  }
  snprintf(s + len, cap - len, "]}]}");
  return s;
}

/* A synthetic cluster of n PUs, 8 per node, speeds over [1, 30] log-uniformly as above, whose
 * curves are superlinear: each PU has a fixed cost of F items' worth (F log-uniform in
 * [5, 100]) and, three times in four, one quadratic, cubic or x ln x term sized so that its
 * best block (the argmin of time / size) is y* items, y* log-uniform in [100, 3000]; the
 * fourth PU is affine. With 10^5 items a PU's share is 1500-50000 items, so most shares hold
 * many best blocks and one block per share costs several times the bound. */
static char *superlinear_cluster_json(unsigned n, uint64_t seed) {
  hlb__rng rng;
  hlb__rng_seed(&rng, seed);
  size_t cap = 512 + (size_t)n * 360;
  char *s = malloc(cap);
  if (!s) return NULL;
  size_t len = cluster_head(s, cap);
  for (unsigned p = 0; p < n; p++) {
    len += node_head(s + len, cap - len, p);
    double speed = pow(30.0, hlb__rng_uniform(&rng));
    double lin = 1e-2 / speed, f = lin * 5.0 * pow(20.0, hlb__rng_uniform(&rng));
    double ystar = 100.0 * pow(30.0, hlb__rng_uniform(&rng)), kind = hlb__rng_uniform(&rng);
    char term[96] = "";
    /* argmin of (f + l y + term) / y: quadratic q y^2 -> sqrt(f / q); cubic r y^3 ->
     * (f / 2r)^(1/3); x ln x s y ln y -> f / s. */
    if (kind < 0.25)
      snprintf(term, sizeof term, ", \"quadratic\": %.6g", f / (ystar * ystar));
    else if (kind < 0.5)
      snprintf(term, sizeof term, ", \"cubic\": %.6g", f / (2.0 * ystar * ystar * ystar));
    else if (kind < 0.75)
      snprintf(term, sizeof term, ", \"xlogx\": %.6g", f / ystar);
    len += (size_t)snprintf(s + len, cap - len,
                            "%s{\"name\": \"p%u\", \"kind\": \"cpu\", \"time\": {\"const\": "
                            "%.6g, \"linear\": %.6g%s}}",
                            p % 8 ? ", " : "", p, f, lin, term);
  }
  snprintf(s + len, cap - len, "]}]}");
  return s;
}

/* The seed of the superlinear table's cluster k of n PUs. */
static uint64_t superlinear_seed(unsigned n, unsigned k) {
  return 7000 + 100 * (uint64_t)n + k;
}

/* Process CPU seconds: less disturbed than wall time on a shared machine. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hlb_cluster *random_cluster(unsigned n, double spread, uint64_t seed) {
  char *json = random_cluster_json(n, spread, seed);
  hlb_cluster *c = NULL;
  if (!json || hlb_cluster_parse("random", json, &c)) {
    fprintf(stderr, "random cluster: %s\n", hlb_last_error());
    exit(1);
  }
  free(json);
  return c;
}

/* `passes` > 1: that many passes over the items, each remembering the ones before (the result
 * is the last pass's), as a later run from stored models would go. */
static hlb_sim_result *sim_passes(const hlb_cluster *c, size_t items, const char *policy,
                                  const char *params, uint64_t seed, unsigned passes) {
  hlb_sim_options o = {.n_items = items,
                       .policy = policy,
                       .params = params,
                       .seed = seed,
                       .passes = passes,
                       .remember = passes > 1};
  hlb_sim_result *r = NULL;
  int rc = hlb_sim_run(c, &o, &r);
  if (rc) {
    fprintf(stderr, "sim %s: %s\n", policy, hlb_last_error());
    return NULL;
  }
  return r;
}

static hlb_sim_result *sim(const hlb_cluster *c, size_t items, const char *policy,
                           const char *params, uint64_t seed) {
  return sim_passes(c, items, policy, params, seed, 1);
}

static void bench_events(unsigned pus, size_t items) {
  hlb_cluster *c = random_cluster(pus, 30, 1);
  printf("== block events per second: %u PUs, %zu items, greedy chunk=1..100 ==\n", pus, items);
  printf("%8s %12s %12s %10s %10s %14s %14s\n", "chunk", "blocks", "events", "wall_s", "cpu_s",
         "events/cpu_s", "blocks/cpu_s");
  const char *chunks[] = {"chunk=1", "chunk=10", "chunk=100"};
  for (unsigned i = 0; i < 3; i++) {
    double t0 = hlb__now(), c0 = cpu_now();
    hlb_sim_result *r = sim(c, items, "greedy", chunks[i], 1);
    double dt = hlb__now() - t0, dc = cpu_now() - c0;
    if (r)
      printf("%8s %12zu %12llu %10.3f %10.3f %14.4g %14.4g\n", chunks[i] + 6, r->blocks,
             (unsigned long long)r->events, dt, dc, (double)r->events / dc, (double)r->blocks / dc);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

static void bench_scale(unsigned pus, size_t items) {
  hlb_cluster *c = random_cluster(pus, 30, 2);
  printf("\n== scale: %u PUs, %zu items ==\n", pus, items);
  printf("%-26s %10s %10s %12s %10s %10s %8s\n", "policy", "wall_s", "cpu_s", "blocks", "solver_s",
         "ratio", "once");
  char chunk[64];
  snprintf(chunk, sizeof chunk, "chunk=%zu", items / ((size_t)pus * 100) + 1);
  const char *pol[][2] = {{"greedy", chunk}, {"hlb", NULL}};
  for (unsigned i = 0; i < 2; i++) {
    double t0 = hlb__now(), c0 = cpu_now();
    hlb_sim_result *r = sim(c, items, pol[i][0], pol[i][1], 1);
    double dt = hlb__now() - t0, dc = cpu_now() - c0;
    char name[96];
    snprintf(name, sizeof name, "%s%s%s", pol[i][0], pol[i][1] ? " " : "",
             pol[i][1] ? pol[i][1] : "");
    if (r)
      printf("%-26s %10.3f %10.3f %12zu %10.3f %10.4f %8s\n", name, dt, dc, r->blocks, r->solver_s,
             r->ratio, r->exactly_once ? "yes" : "NO");
    else
      printf("%-26s failed\n", name);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

/* Items for a preset: the problem size its paper used (docs/presets.md). */
static size_t preset_items(const char *name) {
  if (strstr(name, "slowdown")) return 131072;
  if (!strncmp(name, "plbh", 4)) return 65536;
  if (!strncmp(name, "boinski", 7)) return 2048;
  if (strstr(name, "nondedicated")) return 10000;
  return 5000;
}

static unsigned policy_names(const char **names) {
  unsigned n = 0;
  for (unsigned i = 0; i < hlb_policy_count() && n < MAX_POL; i++)
    names[n++] = hlb_policy_at(i)->name;
  return n;
}

static void print_header(const char *first, const char **names, unsigned n) {
  printf("%-36s %10s", first, "bound_s");
  for (unsigned i = 0; i < n; i++)
    printf(" %12s", names[i]);
  printf("\n");
}

/* One row: each policy's makespan / bound and, in parentheses, / greedy's makespan. */
static void policy_row(const char *label, const hlb_cluster *c, size_t items, uint64_t seed,
                       const char **names, unsigned n, double *log_ratio, double *log_vs_greedy) {
  double mk[MAX_POL], bound = 0, greedy = NAN;
  for (unsigned i = 0; i < n; i++) {
    hlb_sim_result *r = sim(c, items, names[i], NULL, seed);
    mk[i] = r && r->exactly_once ? r->makespan_s : NAN;
    if (r) bound = r->lower_bound_s;
    if (!strcmp(names[i], "greedy")) greedy = mk[i];
    hlb_sim_result_free(r);
  }
  printf("%-36s %10.4g", label, bound);
  for (unsigned i = 0; i < n; i++) {
    char cell[32];
    snprintf(cell, sizeof cell, "%.3f(%.2f)", mk[i] / bound, mk[i] / greedy);
    printf(" %12s", cell);
    log_ratio[i] += log(mk[i] / bound);
    log_vs_greedy[i] += log(mk[i] / greedy);
  }
  printf("\n");
  fflush(stdout);
}

static void print_geomean(const char *label, const double *lr, const double *lg, unsigned n,
                          unsigned rows) {
  printf("%-36s %10s", label, "");
  for (unsigned i = 0; i < n; i++) {
    char cell[32];
    snprintf(cell, sizeof cell, "%.3f(%.2f)", exp(lr[i] / rows), exp(lg[i] / rows));
    printf(" %12s", cell);
  }
  printf("\n");
}

static void bench_policies(const char *dir) {
  const char *names[MAX_POL];
  unsigned n = policy_names(names);
  double lr[MAX_POL] = {0}, lg[MAX_POL] = {0};
  unsigned rows = 0;
  printf("\n== every policy on every preset: makespan / lower bound (/ greedy), seed 1 ==\n");
  print_header("preset (items)", names, n);
  DIR *d = opendir(dir);
  if (!d) {
    printf("cannot open %s\n", dir);
    return;
  }
  char *files[64];
  unsigned nf = 0;
  struct dirent *e;
  while ((e = readdir(d)) && nf < 64) {
    size_t len = strlen(e->d_name);
    if (len > 5 && !strcmp(e->d_name + len - 5, ".json")) files[nf++] = strdup(e->d_name);
  }
  closedir(d);
  for (unsigned i = 0; i < nf; i++) /* sorted, so the table is stable */
    for (unsigned j = i + 1; j < nf; j++)
      if (strcmp(files[j], files[i]) < 0) {
        char *t = files[i];
        files[i] = files[j];
        files[j] = t;
      }
  for (unsigned f = 0; f < nf; f++) {
    char path[4096], label[128];
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    hlb_cluster *c = NULL;
    if (hlb_cluster_load(path, &c)) {
      printf("%s: %s\n", files[f], hlb_last_error());
      free(files[f]);
      continue;
    }
    size_t items = preset_items(files[f]);
    snprintf(label, sizeof label, "%.*s (%zu)", (int)(strlen(files[f]) - 5), files[f], items);
    policy_row(label, c, items, 1, names, n, lr, lg);
    rows++;
    hlb_cluster_free(c);
    free(files[f]);
  }
  print_geomean("geometric mean (presets)", lr, lg, n, rows);

  memset(lr, 0, sizeof lr);
  memset(lg, 0, sizeof lg);
  rows = 0;
  printf("\n== random clusters (speed spread up to 30x, noise 0.05, 10^5 items): "
         "ratio to bound (/ greedy) ==\n");
  print_header("PUs seed", names, n);
  const unsigned sizes[] = {2, 4, 8, 16, 32, 64};
  for (unsigned k = 0; k < 6; k++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      hlb_cluster *c = random_cluster(sizes[k], 30, 100 * sizes[k] + seed);
      char label[64];
      snprintf(label, sizeof label, "%u PUs, cluster %llu", sizes[k], (unsigned long long)seed);
      policy_row(label, c, 100000, seed, names, n, lr, lg);
      rows++;
      hlb_cluster_free(c);
    }
  print_geomean("geometric mean (random)", lr, lg, n, rows);
}

/* Random superlinear clusters: greedy, plb-hac and hlb, hlb's third pass remembering the first
 * two (a later run from stored models), and hlb with `params` when given. */
static void bench_superlinear(const char *params, size_t items) {
  const char *names[] = {"greedy", "plb-hac", "hlb", "hlb", "hlb"};
  const char *label_of[] = {"greedy", "plb-hac", "hlb", "hlb pass 3", params};
  const char *prm[] = {NULL, NULL, NULL, NULL, params};
  const unsigned passes[] = {1, 1, 1, 3, 1};
  unsigned n = params ? 5 : 4;
  double lr[5] = {0}, lg[5] = {0};
  unsigned rows = 0;
  printf("\n== random superlinear clusters (best blocks of 100-3000 items, noise 0.05, %zu "
         "items): ratio to bound (/ greedy) ==\n",
         items);
  printf("%-36s %10s", "PUs seed", "bound_s");
  for (unsigned i = 0; i < n; i++)
    printf(" %12s", label_of[i]);
  printf("\n");
  const unsigned sizes[] = {2, 4, 8, 16, 32, 64};
  for (unsigned k = 0; k < 6; k++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      char *json = superlinear_cluster_json(sizes[k], superlinear_seed(sizes[k], (unsigned)seed));
      hlb_cluster *c = NULL;
      if (!json || hlb_cluster_parse("superlinear", json, &c)) {
        fprintf(stderr, "superlinear cluster: %s\n", hlb_last_error());
        exit(1);
      }
      free(json);
      double mk[5], bound = 0;
      for (unsigned i = 0; i < n; i++) {
        hlb_sim_result *r = sim_passes(c, items, names[i], prm[i], seed, passes[i]);
        mk[i] = r && r->exactly_once ? r->makespan_s : NAN;
        if (r) bound = r->lower_bound_s;
        hlb_sim_result_free(r);
      }
      char label[64];
      snprintf(label, sizeof label, "%u PUs, cluster %llu", sizes[k], (unsigned long long)seed);
      printf("%-36s %10.4g", label, bound);
      for (unsigned i = 0; i < n; i++) {
        char cell[32];
        snprintf(cell, sizeof cell, "%.3f(%.2f)", mk[i] / bound, mk[i] / mk[0]);
        printf(" %12s", cell);
        lr[i] += log(mk[i] / bound);
        lg[i] += log(mk[i] / mk[0]);
      }
      printf("\n");
      fflush(stdout);
      rows++;
      hlb_cluster_free(c);
    }
  print_geomean("geometric mean (superlinear)", lr, lg, n, rows);
}

/* bench_sim superlinear [PARAMS] [ITEMS]: an argument that is a whole number of items (1e6 style
 * accepted) is ITEMS, another PARAMS. */
static int run_superlinear(int argc, char **argv) {
  const char *params = NULL;
  size_t items = 100000;
  for (int i = 2; i < argc; i++) {
    char *end = NULL;
    double v = strtod(argv[i], &end);
    if (end != argv[i] && *end == '\0') {
      if (!(v >= 1 && v <= 1e15 && v == floor(v))) {
        fprintf(stderr,
                "bench_sim superlinear: ITEMS must be a whole number from 1 to 1e15, not "
                "'%s'\n",
                argv[i]);
        return 2;
      }
      items = (size_t)v;
    } else {
      params = argv[i];
    }
  }
  bench_superlinear(params, items);
  return 0;
}

/* bench_sim superlinear-cluster PUS K: the cluster bench_superlinear names "PUS PUs, cluster K"
 * (the same seed), as JSON on stdout. */
static int print_superlinear_cluster(int argc, char **argv) {
  int pus = argc > 2 ? atoi(argv[2]) : 0, k = argc > 3 ? atoi(argv[3]) : 0;
  if (argc != 4 || pus < 1 || pus > 4096 || k < 1) {
    fprintf(stderr, "usage: bench_sim superlinear-cluster PUS K (PUS 1-4096, K >= 1; the table's "
                    "clusters are PUS 2, 4, ..., 64 and K 1-3)\n");
    return 2;
  }
  char *json =
      superlinear_cluster_json((unsigned)pus, superlinear_seed((unsigned)pus, (unsigned)k));
  if (!json) {
    fprintf(stderr, "superlinear-cluster: out of memory\n");
    return 1;
  }
  printf("%s\n", json);
  free(json);
  return 0;
}

/* The spikes preset (its parsed JSON) with its map's seed set to `map_seed` and its
 * cost_map.declared to `declared`, as a cluster; NULL with the message printed when the preset
 * has no cost_map.spikes.seed or does not parse. */
static hlb_cluster *spikes_with_seed(const cJSON *preset, unsigned map_seed, int declared) {
  cJSON *copy = cJSON_Duplicate(preset, 1);
  cJSON *map = cJSON_GetObjectItem(copy, "cost_map");
  cJSON *spikes = cJSON_GetObjectItem(map, "spikes");
  cJSON *seed = cJSON_GetObjectItem(spikes, "seed");
  hlb_cluster *c = NULL;
  char *json = NULL;
  cJSON_DeleteItemFromObject(map, "declared");
  if (!cJSON_IsNumber(seed))
    fprintf(stderr, "spike-maps: the preset has no cost_map.spikes.seed\n");
  else if (!cJSON_AddBoolToObject(map, "declared", declared))
    fprintf(stderr, "spike-maps: out of memory\n");
  else if (cJSON_SetNumberValue(seed, map_seed), !(json = cJSON_PrintUnformatted(copy)))
    fprintf(stderr, "spike-maps: out of memory\n");
  else if (hlb_cluster_parse("spikes", json, &c))
    fprintf(stderr, "spike-maps: %s\n", hlb_last_error());
  cJSON_free(json);
  cJSON_Delete(copy);
  return c;
}

/* One policy's mean ratio to the bound over noise seeds 1..5 (of the last of `passes`). */
static double mean_ratio(const hlb_cluster *c, size_t items, const char *policy, const char *params,
                         unsigned passes) {
  double sum = 0;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    hlb_sim_result *r = sim_passes(c, items, policy, params, seed, passes);
    if (!r || !r->exactly_once) {
      hlb_sim_result_free(r);
      return NAN;
    }
    sum += r->ratio;
    hlb_sim_result_free(r);
  }
  return sum / 5;
}

/* bench_sim spike-maps [ITEMS] [MAPS] [PARAMS]: one preset's spikes are one draw of where the dear
 * items fall; this draws MAPS of them (docs/benchmarks.md, "Random spikes, many maps"), and runs
 * hlb with PARAMS too when given. `spike-maps-undeclared`: the same maps with cost_map.declared
 * false, as for an app that does not say its items vary. `spike-maps-pass3`: the declared maps'
 * third pass, each pass starting from the item costs and blocks of the ones before (as an
 * iterative code's later iteration, or a later run from stored models). */
static int run_spike_maps(int argc, char **argv) {
  int declared = strcmp(argv[1], "spike-maps-undeclared") != 0;
  unsigned passes = strcmp(argv[1], "spike-maps-pass3") ? 1 : 3;
  size_t items = argc > 2 ? (size_t)atof(argv[2]) : 100000;
  unsigned maps = argc > 3 ? (unsigned)atoi(argv[3]) : 20;
  const char *params = argc > 4 ? argv[4] : NULL;
  if (items < 1 || maps < 1 || maps > 1000 || argc > 5) {
    fprintf(stderr, "usage: bench_sim %s [ITEMS >= 1] [MAPS 1-1000] [PARAMS]\n", argv[1]);
    return 2;
  }
  cJSON *preset = NULL;
  if (hlb__json_load_file(HLB_PRESETS_DIR "/irregular-2machines-spikes.json", &preset)) {
    fprintf(stderr, "spike-maps: %s\n", hlb_last_error());
    return 1;
  }
  const char *names[] = {"greedy", "plb-hac", "hlb", "hlb"};
  const char *prm[] = {NULL, NULL, NULL, params};
  unsigned n = params ? 4 : 3;
  double *ratio[4] = {NULL};
  for (unsigned i = 0; i < n; i++)
    if (!(ratio[i] = calloc(maps, sizeof *ratio[i]))) {
      fprintf(stderr, "spike-maps: out of memory\n");
      return 1;
    }
  printf("== irregular-2machines-spikes, map seeds 1-%u%s, %zu items%s: mean ratio to the bound "
         "over noise seeds 1-5 ==\n%-10s",
         maps, declared ? "" : ", not declared", items, passes > 1 ? ", third remembered pass" : "",
         "map seed");
  for (unsigned i = 0; i < n; i++)
    printf(" %10s", i == 3 ? params : names[i]);
  printf("\n");
  unsigned above[4] = {0}, over_greedy[4] = {0}, failed = 0;
  for (unsigned m = 0; m < maps; m++) {
    hlb_cluster *c = spikes_with_seed(preset, m + 1, declared);
    if (!c) return 1;
    printf("%-10u", m + 1);
    for (unsigned i = 0; i < n; i++) {
      ratio[i][m] = mean_ratio(c, items, names[i], prm[i], passes);
      failed += isnan(ratio[i][m]);
      above[i] += ratio[i][m] > 1.05;
      over_greedy[i] += ratio[i][m] > ratio[0][m];
      printf(" %10.4f", ratio[i][m]);
    }
    hlb_cluster_free(c);
    printf("\n");
    fflush(stdout);
  }
  double geomean[4], worst[4] = {0};
  for (unsigned i = 0; i < n; i++) {
    double lg = 0;
    for (unsigned m = 0; m < maps; m++)
      lg += log(ratio[i][m]), worst[i] = fmax(worst[i], ratio[i][m]);
    geomean[i] = exp(lg / maps);
  }
  printf("%-10s", "geomean");
  for (unsigned i = 0; i < n; i++)
    printf(" %10.4f", geomean[i]);
  printf("\n%-10s", "median");
  for (unsigned i = 0; i < n; i++)
    printf(" %10.4f", bench_median(ratio[i], maps));
  printf("\n%-10s", "worst");
  for (unsigned i = 0; i < n; i++)
    printf(" %10.4f", worst[i]);
  printf("\n%-10s", "> 1.05");
  for (unsigned i = 0; i < n; i++)
    printf(" %10u", above[i]);
  printf("\n%-10s", "> greedy");
  for (unsigned i = 0; i < n; i++)
    printf(" %10u", over_greedy[i]);
  printf("\n");
  for (unsigned i = 0; i < n; i++)
    free(ratio[i]);
  cJSON_Delete(preset);
  if (failed) fprintf(stderr, "spike-maps: %u runs failed or lost items (NAN above)\n", failed);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "all";
  if (!strcmp(what, "events") || !strcmp(what, "all"))
    bench_events(argc > 2 && strcmp(what, "all") ? (unsigned)atoi(argv[2]) : 1000,
                 argc > 3 && strcmp(what, "all") ? (size_t)atof(argv[3]) : 2000000);
  if (!strcmp(what, "scale") || !strcmp(what, "all"))
    bench_scale(argc > 2 && strcmp(what, "all") ? (unsigned)atoi(argv[2]) : 10000,
                argc > 3 && strcmp(what, "all") ? (size_t)atof(argv[3]) : 100000000);
  if (!strcmp(what, "policies") || !strcmp(what, "all"))
    bench_policies(argc > 2 && strcmp(what, "all") ? argv[2] : HLB_PRESETS_DIR);
  if (!strcmp(what, "superlinear")) return run_superlinear(argc, argv);
  if (!strcmp(what, "superlinear-cluster")) return print_superlinear_cluster(argc, argv);
  if (!strcmp(what, "spike-maps") || !strcmp(what, "spike-maps-undeclared") ||
      !strcmp(what, "spike-maps-pass3"))
    return run_spike_maps(argc, argv);
  return 0;
}
