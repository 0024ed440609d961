/* matmul on two one-core cpu PUs, one throttled to look 4x slower (emulated: it sleeps 3x
 * its measured time after each block). The ideal split gives the fast PU 4/5 of the rows:
 * ideal makespan = T1 / (1 + 1/4), T1 being the fast PU alone on all rows. Prints each
 * policy's makespan, its ratio to the ideal, and whether the result verified. Never passes
 * or fails on time. Usage: bench_throttle [--quick] [--size N] [--factor F] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "hlb/error.h"
#include "hlb/exec.h"

static hlb_executor *open_pus(unsigned n, double factor) {
  hlb_exec_pu pus[2];
  unsigned k;
  if (hlb_exec_parse_pus("cpu:1", pus, 1, &k)) return NULL;
  pus[1] = pus[0];
  snprintf(pus[0].name, sizeof pus[0].name, "cpu-fast");
  snprintf(pus[1].name, sizeof pus[1].name, "cpu-slow");
  pus[1].throttle = factor;
  hlb_executor *ex = NULL;
  return hlb_executor_create(pus, n, &ex) ? NULL : ex;
}

typedef struct result {
  double makespan, slow_share, fast_idle;
  size_t blocks;
} result;

static result run(hlb_app *app, hlb_executor *ex, const char *policy, int *ok) {
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = policy;
  hlb_exec_stats st = {0};
  int rc = hlb_app_run(app, ex, &o, &st);
  *ok = rc == 0 && hlb_app_verify(app) == 0;
  if (rc) fprintf(stderr, "bench_throttle: %s: %s\n", policy, hlb_last_error());
  result r = {.makespan = st.makespan_s};
  size_t items = 0;
  for (unsigned i = 0; i < st.n_pus; i++) {
    items += st.per_pu[i].items;
    r.blocks += st.per_pu[i].blocks;
  }
  if (st.n_pus == 2 && items) r.slow_share = 100.0 * (double)st.per_pu[1].items / (double)items;
  r.fast_idle = 100 - hlb_exec_busy_pct(&st, 0);
  hlb_exec_stats_clear(&st);
  return r;
}

int main(int argc, char **argv) {
  size_t n = 2048;
  double factor = 4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      n = 192;
    else if (!strcmp(argv[i], "--size") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--factor") && i + 1 < argc)
      factor = atof(argv[++i]);
  }
  hlb_app *app = NULL;
  hlb_executor *one = open_pus(1, 1), *two = open_pus(2, factor);
  if (!one || !two || hlb_app_create("matmul", n, 1, &app)) {
    fprintf(stderr, "bench_throttle: %s\n", hlb_last_error());
    return 1;
  }
  int ok;
  double t1 = run(app, one, "static", &ok).makespan;
  double ideal = t1 / (1 + 1 / factor);
  printf("matmul n=%zu on cpu-fast + cpu-slow (throttled x%g, EMULATED by sleeping)\n", n, factor);
  printf("cpu-fast alone: %.4f s; ideal two-PU makespan %.4f s\n", t1, ideal);
  printf("ideal share of the slow PU: %.1f %% of the rows\n", 100 / (1 + factor));
  printf("%-14s %12s %12s %12s %12s %8s %9s\n", "policy", "makespan s", "vs ideal", "slow share",
         "fast idle", "blocks", "verified");
  static const char *const policies[] = {"hlb",    "plb-hec", "plb-hac", "hdss",
                                         "acosta", "greedy",  "guided",  "static"};
  for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
    result r = run(app, two, policies[k], &ok);
    printf("%-14s %12.4f %+11.1f%% %11.1f%% %11.1f%% %8zu %9s\n", policies[k], r.makespan,
           100 * (r.makespan / ideal - 1), r.slow_share, r.fast_idle, r.blocks, ok ? "yes" : "NO");
  }
  hlb_app_destroy(app);
  hlb_executor_destroy(one);
  hlb_executor_destroy(two);
  return 0;
}
