/* Every preset in presets/ loads and runs to completion with greedy, exactly once, at or
 * above its lower bound (noise and events off: the bound holds for the presets' curves,
 * which have no superadditive terms), and with its events and noise on too. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/sim.h"

#ifndef HLB_PRESETS_DIR
#error "HLB_PRESETS_DIR must name the presets folder"
#endif

static void run_one(const char *path) {
  hlb_cluster *c = NULL;
  int rc = hlb_cluster_load(path, &c);
  if (rc) fail_msg("%s: %s", path, hlb_last_error());
  for (int quiet = 1; quiet >= 0; quiet--) {
    hlb_sim_options o = {
        .n_items = 20000, .policy = "greedy", .seed = 1, .no_noise = quiet, .no_events = quiet};
    hlb_sim_result *r = NULL;
    rc = hlb_sim_run(c, &o, &r);
    if (rc) fail_msg("%s: %s", path, hlb_last_error());
    assert_true(r->exactly_once);
    assert_true(r->lower_bound_s > 0);
    if (quiet && r->ratio < 1 - 1e-9)
      fail_msg("%s: makespan %g below the bound %g", path, r->makespan_s, r->lower_bound_s);
    size_t sum = 0;
    for (unsigned p = 0; p < r->n_pus; p++)
      sum += r->items_per_pu[p];
    assert_int_equal(sum, 20000);
    hlb_sim_result_free(r);
  }
  hlb_cluster_free(c);
}

static void every_preset_runs(void **state) {
  (void)state;
  DIR *d = opendir(HLB_PRESETS_DIR);
  assert_non_null(d);
  unsigned n = 0;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", HLB_PRESETS_DIR, e->d_name);
    print_message("preset %s\n", e->d_name);
    run_one(path);
    n++;
  }
  closedir(d);
  assert_true(n >= 10); /* PLB-HAC, PLB-HeC, Boinski, FLEX-MPI setups */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(every_preset_runs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
