/* hlb run --runtime starpu (run_starpu.h): StarPU's workers run the app's codelet through
 * libhlb_starpu. */
#include "run_starpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "cli.h"
#include "common/error_internal.h"
#include "hlb/error.h"
#include "hlb/starpu.h"

int hlb__cli_starpu_start(const char *sched) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  /* "hlb": libhlb_starpu's own task scheduler; any other name is one of StarPU's. */
  if (sched && !strcmp(sched, "hlb"))
    conf.sched_policy = hlb_starpu_sched_policy();
  else if (sched)
    conf.sched_policy_name = sched;
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

/* The app's passes, each one hlb_starpu_passes_run over the buffers registered at the first. */
typedef struct pass_ctx {
  hlb_starpu_options o;
  hlb_starpu_passes *p;
  const hlb_codelet *cl;
  hlb__cli_starpu_result *res;
  const hlb__cli_starpu *a;
  hlb_starpu_memory *memory; /* the passes' memory, read from and saved to the model files */
  char model_error[512];     /* why the model files could not be used; "" when they could */
} pass_ctx;

/* hlb places: the passes share one memory, started from the model files (--models read) as
 * the executor's runs start from them, so a StarPU run is calibrated by the runs before it as
 * dmda is by STARPU_CALIBRATE. A file that cannot be read does not stop the run: it says why. */
static int open_memory(pass_ctx *c, const hlb_codelet *cl) {
  if (c->a->sched) return 0;
  int rc = hlb_starpu_memory_create(&c->memory);
  if (rc) return rc;
  c->o.memory = c->memory;
  if ((c->a->models & HLB_MODELS_READ) &&
      hlb_starpu_memory_load(c->memory, cl, &c->o, c->a->model_dir) != 0) {
    snprintf(c->model_error, sizeof c->model_error, "%s", hlb_last_error());
    hlb_clear_error();
  }
  return 0;
}

static void save_memory(pass_ctx *c) {
  if (!c->memory || !c->cl || !(c->a->models & HLB_MODELS_WRITE)) return;
  if (hlb_starpu_memory_save(c->memory, c->cl, &c->o, c->a->model_dir) != 0) {
    snprintf(c->model_error, sizeof c->model_error, "%s", hlb_last_error());
    hlb_clear_error();
  }
}

static int starpu_pass(void *ctx, const hlb_codelet *cl, size_t n_items, unsigned changed,
                       hlb_exec_stats *st) {
  pass_ctx *c = ctx;
  int rc = 0;
  if (!c->p) {
    rc = open_memory(c, cl);
    if (!rc) rc = hlb_starpu_passes_open(cl, n_items, &c->o, &c->p);
    c->cl = cl;
  } else if (cl != c->cl) {
    rc = hlb__error(HLB_ESTATE,
                    "hlb run --runtime starpu: codelet '%s' in a pass of "
                    "codelet '%s'",
                    cl->name, c->cl->name);
  }
  if (rc) return rc;
  hlb_starpu_stats s = {0};
  rc = hlb_starpu_passes_run(c->p, changed, &s);
  snprintf(c->res->placement, sizeof c->res->placement, "%s", s.placement);
  c->res->blocks += s.blocks;
  c->res->adapter_s += s.adapter_s;
  if (st) {
    *st = s.exec; /* the caller owns the executor-style stats now */
    s.exec = (hlb_exec_stats){0};
  }
  hlb_starpu_stats_clear(&s);
  return rc;
}

int hlb__cli_starpu_run(hlb_app *app, const hlb__cli_starpu *a, hlb_exec_stats *stats,
                        hlb__cli_starpu_result *res) {
  pass_ctx c = {.res = res, .a = a};
  hlb_starpu_options_default(&c.o);
  c.o.policy = a->policy;
  c.o.params = a->params;
  c.o.scheduler_places = a->sched != NULL;
  c.o.equal_blocks = a->sched ? a->blocks : 0;
  c.o.pause_at_end = a->sched == NULL; /* StarPU's schedulers as StarPU users run them */
  memset(res, 0, sizeof *res);
  int rc = apply_throttles(a, &c.o);
  if (rc) return rc;
  rc = hlb_app_run_passes(app, starpu_pass, &c, stats);
  hlb_starpu_passes_close(c.p);
  if (!rc) save_memory(&c);
  if (stats && c.model_error[0])
    snprintf(stats->model_error, sizeof stats->model_error, "%s", c.model_error);
  hlb_starpu_memory_destroy(c.memory);
  return rc;
}
