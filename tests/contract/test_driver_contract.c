/* The driver core's contract (driver_contract.h) through the threaded executor: two one-core
 * cpu PUs, every case with its fault on PU 0 and on PU 1. */
#include <stdio.h>

#include "contract/driver_contract.h"
#include "hlb/error.h"

static hlb_executor *two_cpus(void) {
  hlb_exec_pu pus[2];
  unsigned n = 0;
  if (hlb_exec_parse_pus("cpu:1", pus, 1, &n) || n != 1) return NULL;
  pus[1] = pus[0];
  snprintf(pus[0].name, sizeof pus[0].name, "cpu-a");
  snprintf(pus[1].name, sizeof pus[1].name, "cpu-b");
  hlb_executor *ex = NULL;
  return hlb_executor_create(pus, 2, &ex) == 0 ? ex : NULL;
}

int main(void) {
  hlb_executor *ex = two_cpus();
  dc_work w;
  if (!ex || dc_work_init(&w, 1)) {
    fprintf(stderr, "set-up failed: %s\n", hlb_last_error());
    return 1;
  }
  hlb_codelet cl = dc_codelet(&w);
  int bad = 0;
  for (size_t k = 0; k < DC_N_CASES; k++)
    for (int target = 0; target < 2; target++) {
      const dc_case *c = &dc_cases[k];
      hlb_exec_options o = dc_options(c, target);
      hlb_exec_stats s = {0};
      dc_work_reset(&w);
      int rc = hlb_executor_run(ex, &cl, DC_ITEMS, &o, &s);
      bad += dc_check(c, target, "executor", &w, rc, hlb_last_error(), s.per_pu, s.n_pus);
      printf("%s, fault on pu %d: %s\n", c->name, target, rc ? "failed" : "ran");
      hlb_exec_stats_clear(&s);
    }
  dc_work_free(&w);
  hlb_executor_destroy(ex);
  return bad ? 1 : 0;
}
