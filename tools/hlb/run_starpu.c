/* hlb run --runtime starpu (run_starpu.h): StarPU's workers run the app's codelet through
 * libhlb_starpu. */
#include "run_starpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hlb/error.h"
#include "hlb/starpu.h"

int hlb__cli_starpu_start(const char *sched) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  if (sched) conf.sched_policy_name = sched;
  /* StarPU prints a banner and calibration notes on stdout unless told not to; the run's
   * output is hlb's. A user who sets STARPU_SILENT decides. */
  setenv("STARPU_SILENT", "1", 0);
  int err = starpu_init(&conf);
  if (err) {
    fprintf(stderr,
            "hlb run: --runtime starpu: starpu_init failed (%d): no worker, or a bad "
            "STARPU_* variable\n",
            err);
    return HLB_EXIT_FAIL;
  }
  return 0;
}

void hlb__cli_starpu_stop(void) {
  starpu_shutdown();
}

unsigned hlb__cli_starpu_workers(char (*names)[32], unsigned cap) {
  unsigned n = 0;
  for (unsigned i = 0; i < starpu_worker_get_count(); i++) {
    char buf[32];
    if (!hlb_starpu_worker_name((int)i, buf, sizeof buf)[0]) continue;
    if (n < cap) memcpy(names[n], buf, sizeof buf);
    n++;
  }
  return n;
}

static int worker_named(const char *name, size_t len) {
  for (unsigned i = 0; i < starpu_worker_get_count(); i++) {
    char buf[32];
    hlb_starpu_worker_name((int)i, buf, sizeof buf);
    if (strlen(buf) == len && !strncmp(buf, name, len)) return (int)i;
  }
  return -1;
}

static int apply_throttles(const hlb__cli_starpu *a, hlb_starpu_options *o) {
  for (unsigned k = 0; k < a->n_throttle; k++) {
    const char *t = a->throttle[k], *eq = strchr(t, '=');
    if (!eq) return hlb_cli_usage_error("run", "--throttle '%s': expected WORKER=FACTOR", t);
    int id = worker_named(t, (size_t)(eq - t));
    if (id < 0)
      return hlb_cli_usage_error("run",
                                 "--throttle '%s': StarPU has no worker named '%.*s' (names: "
                                 "cpu:K, opencl:K; see the run's header line)",
                                 t, (int)(eq - t), t);
    if (hlb_cli_parse_double("run", "--throttle", eq + 1, 1, 1e6, &o->throttle[id]))
      return HLB_EXIT_USAGE;
  }
  return 0;
}

int hlb__cli_starpu_run(const hlb_codelet *cl, size_t n_items, const hlb__cli_starpu *a,
                        hlb_exec_stats *stats, hlb__cli_starpu_result *res) {
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = a->policy;
  o.params = a->params;
  o.scheduler_places = a->sched != NULL;
  o.equal_blocks = a->sched ? a->blocks : 0;
  int rc = apply_throttles(a, &o);
  if (rc) return rc;
  hlb_starpu_stats st = {0};
  rc = hlb_starpu_run_codelet(cl, n_items, &o, &st);
  memset(res, 0, sizeof *res);
  snprintf(res->placement, sizeof res->placement, "%s", st.placement);
  res->blocks = st.blocks;
  res->adapter_s = st.adapter_s;
  *stats = st.exec; /* the caller owns the executor-style stats now */
  st.exec = (hlb_exec_stats){0};
  hlb_starpu_stats_clear(&st);
  return rc;
}
