/* hlb run APP: run an application on this machine's PUs with a balancing policy, check the
 * result against a reference, and report per-PU work, busy/idle time, fitted models, the
 * makespan and the imbalance (Issakhov et al.: I% = (t_max - t_avg) / t_max * N / (N - 1), over
 * each PU's busy time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "apps.h"
#include "cli.h"
#include "hlb/ccp.h"
#include "hlb/error.h"
#include "hlb/exec.h"
#ifdef HLB_CLI_WITH_MPI
#include "hlb/mpi.h"
#endif
#ifdef HLB_CLI_WITH_STARPU
#include "run_starpu.h"
#endif

static void list_apps(FILE *to) {
  fprintf(to, "\napps (--size counts what is said; default and smallest):\n");
  for (unsigned k = 0; k < hlb_app_count(); k++) {
    const hlb_app_info *i = hlb_app_info_at(k);
    fprintf(to, "  %-13s size = %s (default %zu): %s\n", i->name, i->size_meaning, i->default_size,
            i->description);
  }
}

const hlb_cli_command hlb_cmd_run_spec = {
    .name = "run",
    .operands = "APP",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "run an app (matmul, blackscholes, kmeans, mandelbrot, spmv) on local PUs",
    .about = "Runs APP on this machine's PUs with a balancing policy, checks the result against "
             "a reference, and reports per-PU work, busy and idle time, fitted models, the "
             "makespan and the imbalance (Issakhov et al.: I% = (t_max - t_avg) / t_max * "
             "N / (N - 1), over each PU's busy time). On a terminal a progress line shows items "
             "done, blocks, elapsed time and the time left from the models. Exits 1 when the "
             "result is wrong or the run failed. The cpu kernels (OpenMP) run under "
             "OMP_WAIT_POLICY=passive unless the environment sets it (hlb then executes itself "
             "again with it; OMP_WAIT_POLICY=active keeps libgomp spinning; docs/executor.md).",
    .more_help = list_apps};

typedef struct run_args {
  const char *app, *pus, *trace;
  /* The policy and its parameters as shown (from the flag, the environment or the default),
   * and as given to the library: only a flag's, so that the library reads the environment
   * itself and names the variable in its errors. */
  const char *policy, *params, *policy_arg, *params_arg;
  size_t size;
  uint64_t seed;
  int json, compare, mpi, progress, keep_devices;
  int models; /* hlb_models_mode */
  const char *model_dir;
  const char **throttle;
  unsigned n_throttle;
  const char *inject;
  int hier;          /* --hierarchy node */
  const char *links; /* --links FILE (hierarchical mode's plan) */
  int starpu;        /* --runtime starpu */
  const char *starpu_sched;
  size_t starpu_blocks;
} run_args;

/* --runtime, --starpu-sched, --starpu-blocks, and what does not go with StarPU's workers. */
static int parse_runtime(run_args *a, hlb_cli_args *cli) {
  const char *rt = hlb_cli_text(cli, "runtime");
  a->starpu_sched = hlb_cli_text(cli, "starpu-sched");
  a->starpu_blocks = hlb_cli_size(cli, "starpu-blocks");
  if (strcmp(rt, "exec") && strcmp(rt, "starpu"))
    return hlb_cli_usage_error("run", "--runtime: expected exec or starpu, got '%s'", rt);
  a->starpu = !strcmp(rt, "starpu");
  if (!a->starpu && (a->starpu_sched || a->starpu_blocks))
    return hlb_cli_usage_error("run", "--starpu-sched and --starpu-blocks need --runtime starpu");
  if (!a->starpu) return 0;
#ifndef HLB_CLI_WITH_STARPU
  return hlb_cli_usage_error("run", "--runtime starpu: this hlb was built without StarPU "
                                    "(libhlb_starpu; HLB_WITH_STARPU)");
#else
  if (a->starpu_blocks && !a->starpu_sched)
    return hlb_cli_usage_error("run", "--starpu-blocks: hlb sizes its own blocks; it goes with "
                                      "--starpu-sched");
  if (a->starpu_sched && (a->policy_arg || a->params_arg))
    return hlb_cli_usage_error("run",
                               "--starpu-sched %s places the blocks itself; it does not "
                               "take --policy or --params",
                               a->starpu_sched);
  const char *other = a->mpi                  ? "--mpi"
                      : a->compare            ? "--compare"
                      : a->inject             ? "--inject"
                      : strcmp(a->pus, "all") ? "--pus"
                                              : NULL;
  if (other)
    return hlb_cli_usage_error("run",
                               "%s does not go with --runtime starpu (StarPU's workers "
                               "come from STARPU_NCPU, STARPU_NOPENCL...)",
                               other);
  return 0;
#endif
}

static int parse_args(int argc, char **argv, run_args *a, hlb_cli_args *cli) {
  memset(a, 0, sizeof *a);
  int rc = hlb_cli_parse(&hlb_cmd_run_spec, argc, argv, cli);
  if (rc) return rc;
  a->app = cli->operand[0];
  a->size = hlb_cli_size(cli, "size");
  a->seed = (uint64_t)hlb_cli_size(cli, "seed");
  a->policy = hlb_cli_text(cli, "policy");
  a->params = hlb_cli_text(cli, "params");
  a->policy_arg = hlb_cli_get(cli, "policy")->from == HLB_CLI_FLAG ? a->policy : NULL;
  a->params_arg = hlb_cli_get(cli, "params")->from == HLB_CLI_FLAG ? a->params : NULL;
  a->pus = hlb_cli_text(cli, "pus");
  a->trace = hlb_cli_text(cli, "trace");
  a->inject = hlb_cli_text(cli, "inject");
  a->json = hlb_cli_flag(cli, "json");
  a->compare = hlb_cli_flag(cli, "compare");
  a->mpi = hlb_cli_flag(cli, "mpi");
  const char *hier = hlb_cli_text(cli, "hierarchy");
  if (strcmp(hier, "flat") && strcmp(hier, "node"))
    return hlb_cli_usage_error("run", "--hierarchy: expected flat or node, got '%s'", hier);
  a->hier = !strcmp(hier, "node");
  a->links = hlb_cli_text(cli, "mpi-links");
  if ((a->hier || hlb_cli_get(cli, "mpi-links")->from == HLB_CLI_FLAG) && !a->mpi)
    return hlb_cli_usage_error("run", "--hierarchy node and --links go with --mpi");
  a->keep_devices = hlb_cli_flag(cli, "keep-devices");
  a->progress = hlb_cli_show_progress(cli);
  a->model_dir = hlb_cli_text(cli, "model-dir");
  if (hlb_models_mode_parse(hlb_cli_text(cli, "models"), &a->models)) {
    hlb_clear_error();
    return hlb_cli_usage_error("run", "--models: expected on, read, write or off, got '%s'",
                               hlb_cli_text(cli, "models"));
  }
  a->throttle = hlb_cli_get(cli, "throttle")->list;
  a->n_throttle = hlb_cli_get(cli, "throttle")->n_list;
#ifndef HLB_CLI_WITH_MPI
  if (a->mpi)
    return hlb_cli_usage_error("run", "--mpi: this hlb was built without MPI (libhlb_mpi)");
#endif
  if ((rc = parse_runtime(a, cli))) return rc;
  if (!hlb_app_find(a->app))
    return hlb_cli_usage_error("run", "unknown app '%s' (see hlb run --help)", a->app);
  return 0;
}

static int find_pu(const hlb_exec_pu *pus, unsigned n, const char *name, size_t len) {
  for (unsigned i = 0; i < n; i++)
    if (strlen(pus[i].name) == len && !strncmp(pus[i].name, name, len)) return (int)i;
  return -1;
}

static int apply_throttles(const run_args *a, hlb_exec_pu *pus, unsigned n) {
  for (unsigned k = 0; k < a->n_throttle; k++) {
    const char *t = a->throttle[k], *eq = strchr(t, '=');
    if (!eq) return hlb_cli_usage_error("run", "--throttle '%s': expected PU=FACTOR", t);
    int i = find_pu(pus, n, t, (size_t)(eq - t));
    if (i < 0)
      return hlb_cli_usage_error("run", "--throttle '%s': no PU named '%.*s' in this run", t,
                                 (int)(eq - t), t);
    if (hlb_cli_parse_double("run", "--throttle", eq + 1, 1, 1e6, &pus[i].throttle))
      return HLB_EXIT_USAGE;
  }
  return 0;
}

static int apply_inject(const run_args *a, const hlb_exec_pu *pus, unsigned n,
                        hlb_exec_options *o) {
  if (!a->inject) return 0;
  const char *c1 = strchr(a->inject, ':');
  /* The PU name may itself contain ':' (opencl:0): the number is after the last ones. */
  const char *last = strrchr(a->inject, ':');
  unsigned from = 0, count = 1;
  int i = -1;
  if (c1) {
    char *end;
    /* Try PU:N:COUNT first, then PU:N. */
    const char *prev = last;
    while (prev > a->inject && prev[-1] != ':')
      prev--;
    if (prev > a->inject + 1 &&
        (i = find_pu(pus, n, a->inject, (size_t)(prev - 1 - a->inject))) >= 0) {
      from = (unsigned)strtoul(prev, &end, 10);
      if (*end != ':' || !last[1])
        i = -1;
      else
        count = (unsigned)strtoul(last + 1, &end, 10);
      if (*end) i = -1;
    }
    if (i < 0 && (i = find_pu(pus, n, a->inject, (size_t)(last - a->inject))) >= 0) {
      from = (unsigned)strtoul(last + 1, &end, 10);
      count = 1;
      if (*end || !last[1]) i = -1;
    }
  }
  if (i < 0 || from == 0)
    return hlb_cli_usage_error("run",
                               "--inject '%s': expected PU:N[:COUNT] with a PU of this "
                               "run and N >= 1",
                               a->inject);
  o->inject_pu = i;
  o->inject_from = from;
  o->inject_count = count;
  return 0;
}

/* The block size a model is quoted at: the PU's mean block (at least one item). */
static double typical_block(const hlb_exec_pu_stats *st) {
  return st->blocks ? fmax(1.0, round((double)st->items / (double)st->blocks)) : 1.0;
}

/* "F(1000 items) = 0.41 s; 0.12 + 3.4 u + 0.5 u2 (u = x/1536), R2 0.98": a person reads the
 * time of a typical block first, the terms after. */
static void format_model(char *buf, size_t cap, const hlb_exec_pu_stats *st) {
  if (!st->fitted) {
    snprintf(buf, cap, "(not fitted)");
    return;
  }
  double x = typical_block(st);
  size_t len =
      (size_t)snprintf(buf, cap, "F(%.0f items) = %.3g s; ", x, hlb_curve_time(&st->model, x));
  int first = 1;
  for (unsigned t = 0; t < HLB_TERM_COUNT && len < cap; t++)
    if (st->model_terms & (1u << t)) {
      len += (size_t)snprintf(buf + len, cap - len, "%s%.3g%s%s", first ? "" : " + ",
                              st->model.coef[t], t ? " " : "", t ? hlb_term_name((hlb_term)t) : "");
      first = 0;
    }
  if (len < cap)
    snprintf(buf + len, cap - len, " (u = x/%g), R2 %.3f", st->model.scale, st->model_r2);
}

/* Imbalance over the busy times of the PUs that were not retired. */
static double imbalance_pct(const hlb_exec_stats *s) {
  double *t = malloc((s->n_pus ? s->n_pus : 1) * sizeof *t);
  if (!t) return NAN;
  unsigned n = 0;
  for (unsigned i = 0; i < s->n_pus; i++)
    if (!s->per_pu[i].retired && !s->per_pu[i].released) t[n++] = s->per_pu[i].busy_s;
  hlb_imbalance im;
  int bad = n == 0 || hlb_imbalance_compute(t, n, &im) != 0;
  free(t);
  return bad ? NAN : im.percent;
}

typedef struct outcome {
  int rc, verified;
  char error[512];
  hlb_exec_stats st;
  /* --runtime starpu: who placed the blocks, how many, the adapter's time outside kernels */
  char placement[32];
  size_t blocks;
  double adapter_s;
} outcome;

static void run_once(hlb_app *app, hlb_executor *ex, const hlb_exec_options *o, outcome *out) {
  memset(out, 0, sizeof *out);
  out->rc = hlb_app_run(app, ex, o, &out->st);
  if (out->rc == 0) {
    int v = hlb_app_verify(app);
    out->verified = v == 0;
    if (v) out->rc = v;
  }
  if (out->rc) snprintf(out->error, sizeof out->error, "%s", hlb_last_error());
}

/* Where the models came from and went (docs/models.md). */
static void print_models(const hlb_exec_stats *s) {
  if (s->models_from == HLB_MODELS_STORED)
    printf("models: started from stored samples (%s)", s->model_file);
  else
    printf("models: trained from this run's blocks");
  for (unsigned i = 0; i < s->n_pus; i++)
    if (s->per_pu[i].priors_forgotten)
      printf("; %s's stored samples mispredicted, forgotten", s->pu[i].name);
  if (s->item_costs_known) printf("; blocks sized by the item costs an earlier run learnt");
  if (s->item_costs_on_trial)
    printf("; item costs an earlier run learnt on trial (blocks sized by count)");
  if (s->item_costs_known || s->item_costs_on_trial)
    printf("; they %s this run's blocks better than counts",
           s->item_costs_trusted ? "predicted" : "did not predict");
  printf("\n");
  if (s->model_error[0]) fprintf(stderr, "hlb run: warning: %s\n", s->model_error);
}

/* ranks: the MPI rank of each PU under --mpi, else NULL. */
static void print_text(const run_args *a, const hlb_app *app, const outcome *r,
                       const outcome *greedy, const outcome *stat, const int *ranks) {
  const hlb_exec_stats *s = &r->st;
  (void)app; /* the header line was printed before the run */
  int dev_w = 6;
  for (unsigned i = 0; i < s->n_pus; i++)
    if ((int)strlen(s->pu[i].device_name) > dev_w) dev_w = (int)strlen(s->pu[i].device_name);
  for (unsigned i = 0; i < s->n_pus; i++)
    if (s->pu[i].throttle > 1)
      printf("NOTE: %s is throttled x%g - EMULATED heterogeneity (each block is stretched by "
             "sleeping), not a real device speed\n",
             s->pu[i].name, s->pu[i].throttle);
  printf("%-10s %-7s %-*s %10s %7s %6s %6s %6s  %s\n", "PU", "kind", dev_w, "device", "items",
         "blocks", "busy%", "idle%", "failed", "fitted model: time of a typical block; terms");
  for (unsigned i = 0; i < s->n_pus; i++) {
    const hlb_exec_pu_stats *p = &s->per_pu[i];
    char model[320];
    format_model(model, sizeof model, p);
    double busy = hlb_exec_busy_pct(s, i);
    char name[48];
    if (ranks)
      snprintf(name, sizeof name, "%s@%d", s->pu[i].name, ranks[i]);
    else
      snprintf(name, sizeof name, "%s", s->pu[i].name);
    printf("%-10s %-7s %-*s %10zu %7zu %6.1f %6.1f %6zu%s  %s\n", name,
           hlb_backend_name(s->pu[i].backend), dev_w, s->pu[i].device_name, p->items, p->blocks,
           busy, 100 - busy, p->failed_blocks, p->retired ? " (retired)" : "", model);
  }
  for (unsigned i = 0; i < s->n_pus; i++)
    if (s->per_pu[i].release_reason[0])
      printf("%s %s\n", s->pu[i].name, s->per_pu[i].release_reason);
  for (unsigned i = 0; i < s->n_pus; i++)
    if (s->per_pu[i].failure[0])
      fprintf(stderr, "hlb run: warning: %s %s: %s\n", s->pu[i].name,
              s->per_pu[i].blocks || s->per_pu[i].failed_blocks ? "retired" : "left out",
              s->per_pu[i].failure);
  for (unsigned i = 0; i < s->n_pus; i++) {
    if (s->per_pu[i].cores_given)
      printf("%s ran on %u more core%s from then on\n", s->pu[i].name, s->per_pu[i].cores_given,
             s->per_pu[i].cores_given > 1 ? "s" : "");
  }
  printf("makespan %.4f s, imbalance %.1f %%, policy time %.4f s\n", s->makespan_s,
         imbalance_pct(s), s->solver_s);
  /* StarPU's scheduler fits no hlb model. */
  if (!a->starpu_sched) print_models(s);
  if (a->starpu)
    printf("starpu: %zu blocks placed by %s%s, adapter %.1f us per block\n", r->blocks,
           a->starpu_sched ? "StarPU's scheduler " : "hlb's policy ", s->policy,
           r->blocks ? r->adapter_s / (double)r->blocks * 1e6 : 0.0);
  if (greedy)
    printf("compare: %s %.4f s, greedy %.4f s%s, static %.4f s%s\n", s->policy, s->makespan_s,
           greedy->st.makespan_s, greedy->verified ? "" : " (FAILED)", stat->st.makespan_s,
           stat->verified ? "" : " (FAILED)");
  printf("result: %s\n", r->verified ? "verified against the reference" : r->error);
}

/* {"terms": {"u": c, ...}, "scale", "r2", "transfer": {...}, "typical_block", "typical_time_s"} */
static cJSON *model_json(const hlb_exec_pu_stats *st) {
  if (!st->fitted) return cJSON_CreateNull();
  cJSON *m = cJSON_CreateObject(), *terms = cJSON_AddObjectToObject(m, "terms");
  for (unsigned t = 0; t < HLB_TERM_COUNT; t++)
    if (st->model_terms & (1u << t))
      cJSON_AddNumberToObject(terms, hlb_term_name((hlb_term)t), st->model.coef[t]);
  cJSON_AddNumberToObject(m, "scale", st->model.scale);
  cJSON_AddNumberToObject(m, "r2", st->model_r2);
  cJSON *g = cJSON_AddObjectToObject(m, "transfer");
  cJSON_AddNumberToObject(g, "per_item_s", st->model.transfer_per_item);
  cJSON_AddNumberToObject(g, "fixed_s", st->model.transfer_fixed);
  double x = typical_block(st);
  cJSON_AddNumberToObject(m, "typical_block", x);
  cJSON_AddNumberToObject(m, "typical_time_s", hlb_curve_time(&st->model, x));
  return m;
}

static cJSON *run_json(const run_args *a, const hlb_app *app, const outcome *r,
                       const outcome *greedy, const outcome *stat, const int *ranks) {
  const hlb_exec_stats *s = &r->st;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "app", a->app);
  cJSON_AddNumberToObject(o, "size",
                          (double)(a->size ? a->size : hlb_app_info_of(app)->default_size));
  cJSON_AddNumberToObject(o, "items", (double)hlb_app_items(app));
  cJSON_AddStringToObject(o, "policy", s->policy);
  cJSON_AddStringToObject(o, "runtime", a->starpu ? "starpu" : "exec");
  /* The OpenMP wait policy the cpu kernels ran under (null: libgomp's default, spinning) and
   * whether hlb set it (main.c, rerun_with_passive_omp_wait_policy). */
  int omp_by_hlb = 0;
  const char *omp_wait = hlb_cli_omp_wait_policy(&omp_by_hlb);
  if (omp_wait)
    cJSON_AddStringToObject(o, "omp_wait_policy", omp_wait);
  else
    cJSON_AddNullToObject(o, "omp_wait_policy");
  cJSON_AddBoolToObject(o, "omp_wait_policy_set_by_hlb", omp_by_hlb);
  if (a->starpu) {
    cJSON *sp = cJSON_AddObjectToObject(o, "starpu");
    cJSON_AddStringToObject(sp, "placement", a->starpu_sched ? "scheduler" : "hlb");
    cJSON_AddStringToObject(sp, "scheduler", r->placement);
    cJSON_AddNumberToObject(sp, "blocks", (double)r->blocks);
    cJSON_AddNumberToObject(sp, "adapter_s", r->adapter_s);
    cJSON_AddNumberToObject(sp, "adapter_s_per_block",
                            r->blocks ? r->adapter_s / (double)r->blocks : 0.0);
  }
  if (a->params) cJSON_AddStringToObject(o, "params", a->params);
  cJSON_AddBoolToObject(o, "verified", r->verified);
  if (r->rc) cJSON_AddStringToObject(o, "error", r->error);
  cJSON_AddNumberToObject(o, "makespan_s", s->makespan_s);
  cJSON_AddNumberToObject(o, "policy_s", s->solver_s); /* the policy's decisions, in all */
  cJSON_AddStringToObject(o, "models", s->models_from == HLB_MODELS_STORED ? "stored" : "trained");
  if (s->model_file[0]) cJSON_AddStringToObject(o, "model_file", s->model_file);
  cJSON_AddBoolToObject(o, "item_costs_known", s->item_costs_known);
  cJSON_AddBoolToObject(o, "item_costs_on_trial", s->item_costs_on_trial);
  cJSON_AddBoolToObject(o, "item_costs_trusted", s->item_costs_trusted);
  if (s->model_error[0]) cJSON_AddStringToObject(o, "model_error", s->model_error);
  double im = imbalance_pct(s);
  if (isfinite(im))
    cJSON_AddNumberToObject(o, "imbalance_pct", im);
  else
    cJSON_AddNullToObject(o, "imbalance_pct");
  cJSON *pus = cJSON_AddArrayToObject(o, "pus");
  for (unsigned i = 0; i < s->n_pus; i++) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", s->pu[i].name);
    cJSON_AddStringToObject(p, "kind", hlb_backend_name(s->pu[i].backend));
    cJSON_AddStringToObject(p, "device", s->pu[i].device_name);
    if (ranks) cJSON_AddNumberToObject(p, "rank", ranks[i]);
    cJSON_AddNumberToObject(p, "items", (double)s->per_pu[i].items);
    cJSON_AddNumberToObject(p, "blocks", (double)s->per_pu[i].blocks);
    cJSON_AddNumberToObject(p, "busy_pct", hlb_exec_busy_pct(s, i));
    cJSON_AddNumberToObject(p, "failed_blocks", (double)s->per_pu[i].failed_blocks);
    cJSON_AddBoolToObject(p, "retired", s->per_pu[i].retired);
    cJSON_AddBoolToObject(p, "released", s->per_pu[i].released);
    if (s->per_pu[i].failure[0]) cJSON_AddStringToObject(p, "failure", s->per_pu[i].failure);
    if (s->per_pu[i].release_reason[0])
      cJSON_AddStringToObject(p, "release_reason", s->per_pu[i].release_reason);
    if (s->per_pu[i].cores_given)
      cJSON_AddNumberToObject(p, "cores_given", s->per_pu[i].cores_given);
    cJSON_AddNumberToObject(p, "throttle", s->pu[i].throttle);
    cJSON_AddBoolToObject(p, "throttle_emulated", s->pu[i].throttle > 1);
    cJSON_AddItemToObject(p, "model", model_json(&s->per_pu[i]));
    cJSON_AddNumberToObject(p, "prior_samples", (double)s->per_pu[i].prior_samples);
    cJSON_AddBoolToObject(p, "priors_forgotten", s->per_pu[i].priors_forgotten);
    cJSON_AddItemToArray(pus, p);
  }
  if (greedy) {
    cJSON *c = cJSON_AddObjectToObject(o, "compare");
    cJSON_AddNumberToObject(c, "greedy_s", greedy->st.makespan_s);
    cJSON_AddNumberToObject(c, "static_s", stat->st.makespan_s);
    cJSON_AddBoolToObject(c, "greedy_verified", greedy->verified);
    cJSON_AddBoolToObject(c, "static_verified", stat->verified);
  }
  return o;
}

static void print_json(const run_args *a, const hlb_app *app, const outcome *r,
                       const outcome *greedy, const outcome *stat, const int *ranks) {
  cJSON *o = run_json(a, app, r, greedy, stat, ranks);
  char *text = cJSON_Print(o);
  puts(text);
  free(text);
  cJSON_Delete(o);
}

/* The trace of the run r, carrying what --json prints as its top-level "hlb" object, so that
 * `hlb report` can say what ran (app, size, devices, ranks, why a device was released, the
 * run's own models) from the trace alone. 0, or 1 after saying why on stderr. */
static int write_trace(const run_args *a, const hlb_app *app, const outcome *r,
                       const outcome *greedy, const outcome *stat, const int *ranks) {
  if (hlb_exec_write_trace(&r->st, a->trace)) {
    fprintf(stderr, "hlb run: %s\n", hlb_last_error()); /* checked writable before the run */
    return 1;
  }
  cJSON *o = run_json(a, app, r, greedy, stat, ranks);
  int rc = hlb_cli_trace_add_facts("run", a->trace, o);
  cJSON_Delete(o);
  return rc != 0;
}

static int open_executor(const run_args *a, hlb_executor **ex) {
  hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
  unsigned n = 0;
  int rc = hlb_exec_parse_pus(a->pus, pus, HLB_EXEC_MAX_LOCAL_PUS, &n);
  if (rc) return hlb_cli_lib_error("run", rc);
  if ((rc = apply_throttles(a, pus, n))) return rc;
  if ((rc = hlb_executor_create(pus, n, ex))) return hlb_cli_lib_error("run", rc);
  return 0;
}

/* The progress line on stderr: at most ten times a second, and cleared at the end. */
typedef struct progress_line {
  const char *app;
  double last_s;
  int shown;
} progress_line;

static void show_progress(void *user, const hlb_exec_progress *p) {
  progress_line *pl = user;
  if (pl->shown && p->elapsed_s - pl->last_s < 0.1 && p->items_done < p->n_items) return;
  pl->last_s = p->elapsed_s;
  pl->shown = 1;
  fprintf(stderr, "\r\033[Khlb run %s: %zu/%zu items (%.0f %%), %zu blocks, %.1f s", pl->app,
          p->items_done, p->n_items, 100.0 * (double)p->items_done / (double)p->n_items, p->blocks,
          p->elapsed_s);
  if (isfinite(p->remaining_s)) fprintf(stderr, ", about %.1f s left", p->remaining_s);
  fflush(stderr);
}

static void end_progress(progress_line *pl) {
  if (pl->shown) fputs("\r\033[K", stderr);
  pl->shown = 0;
}

/* The line saying what runs, printed before the run starts. */
static void print_header(const run_args *a, const hlb_app *app, const hlb_executor *ex) {
  printf("hlb run %s: size %zu, %zu items per pass, policy %s%s%s, PUs", a->app,
         a->size ? a->size : hlb_app_info_of(app)->default_size, hlb_app_items(app), a->policy,
         a->params ? " " : "", a->params ? a->params : "");
  for (unsigned i = 0; i < hlb_executor_pu_count(ex); i++)
    printf("%s %s", i ? "," : "", hlb_executor_pu(ex, 0)[i].name);
  printf("\n");
  fflush(stdout);
}

static int run_all(const run_args *a, hlb_app *app, hlb_executor *ex) {
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = a->policy_arg;
  o.params = a->params_arg;
  o.keep_weak_devices = a->keep_devices;
  o.models = a->models;
  o.model_dir = a->model_dir;
  progress_line pl = {.app = a->app};
  if (a->progress) {
    o.progress = show_progress;
    o.progress_user = &pl;
  }
  int rc = apply_inject(a, hlb_executor_pu(ex, 0), hlb_executor_pu_count(ex), &o);
  if (rc) return rc;
  outcome *r = calloc(3, sizeof *r);
  if (!r) return hlb_cli_usage_error("run", "out of memory");
  if (!a->json) print_header(a, app, ex);
  run_once(app, ex, &o, &r[0]);
  end_progress(&pl);
  if (r[0].rc && r[0].rc != HLB_EVERIFY && !r[0].st.n_pus) {
    fprintf(stderr, "hlb run: %s\n", r[0].error);
    int usage = r[0].rc == HLB_ENOTFOUND || r[0].rc == HLB_EINVAL;
    free(r);
    return usage ? HLB_EXIT_USAGE : HLB_EXIT_FAIL;
  }
  if (a->compare) {
    hlb_exec_options g = o, s = o;
    g.policy = "greedy";
    s.policy = "static";
    g.inject_pu = s.inject_pu = -1;
    g.params = s.params = NULL;  /* the parameters are the chosen policy's */
    g.same_pus = s.same_pus = 1; /* the PUs the chosen policy's run ended with */
    run_once(app, ex, &g, &r[1]);
    end_progress(&pl);
    run_once(app, ex, &s, &r[2]);
    end_progress(&pl);
  }
  if (a->trace)
    rc = write_trace(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL, NULL);
  if (a->json)
    print_json(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL, NULL);
  else
    print_text(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL, NULL);
  int ok = r[0].verified && rc == 0;
  if (!r[0].verified) fprintf(stderr, "hlb run: %s: %s\n", a->app, r[0].error);
  for (int k = 0; k < 3; k++)
    hlb_exec_stats_clear(&r[k].st);
  free(r);
  return ok ? HLB_EXIT_OK : HLB_EXIT_FAIL;
}

#ifdef HLB_CLI_WITH_MPI
/* ---- hlb run --mpi: the same run spread over the ranks of MPI_COMM_WORLD (libhlb_mpi) ---- */

/* Every rank's PU names, so "NAME@RANK" can be resolved to a global PU index on any rank
 * (hlb_mpi_run numbers rank 0's PUs first, then rank 1's, ...). */
typedef struct mpi_pu_names {
  int n_ranks, rank;
  int *count, *first; /* per rank (n_ranks entries) */
  char (*name)[32];   /* per global PU (total entries) */
  unsigned total;
} mpi_pu_names;

static void *mpi_alloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "hlb run: --mpi: out of memory for %zu PU names\n", n);
    MPI_Abort(MPI_COMM_WORLD, HLB_EXIT_FAIL);
  }
  return p;
}

static void free_names(mpi_pu_names *g) {
  free(g->count);
  free(g->first);
  free(g->name);
}

/* Collective over MPI_COMM_WORLD; any number of ranks and PUs. */
static int gather_names(const hlb_exec_pu *pus, unsigned n, mpi_pu_names *g) {
  memset(g, 0, sizeof *g);
  MPI_Comm_size(MPI_COMM_WORLD, &g->n_ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &g->rank);
  size_t ranks = (size_t)g->n_ranks;
  g->count = mpi_alloc(ranks, sizeof *g->count);
  g->first = mpi_alloc(ranks, sizeof *g->first);
  int *bytes = mpi_alloc(ranks, sizeof *bytes), *displs = mpi_alloc(ranks, sizeof *displs);
  int mine = (int)n, at = 0;
  MPI_Allgather(&mine, 1, MPI_INT, g->count, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < g->n_ranks; r++) {
    g->first[r] = at / 32;
    bytes[r] = g->count[r] * 32;
    displs[r] = at;
    at += bytes[r];
  }
  g->total = (unsigned)(at / 32);
  g->name = mpi_alloc(g->total, sizeof *g->name);
  char(*local)[32] = mpi_alloc(n, sizeof *local);
  for (unsigned i = 0; i < n; i++)
    memcpy(local[i], pus[i].name, strnlen(pus[i].name, 31)); /* stays NUL-terminated */
  MPI_Allgatherv(local, mine * 32, MPI_CHAR, g->name, bytes, displs, MPI_CHAR, MPI_COMM_WORLD);
  free(local);
  free(bytes);
  free(displs);
  return 0;
}

/* Global index of "NAME@RANK" (len characters of spec), or -1. */
static int resolve_global(const mpi_pu_names *g, const char *spec, size_t len, int *rank_out) {
  const char *at = memchr(spec, '@', len);
  if (!at) return -1;
  char *end;
  long r = strtol(at + 1, &end, 10);
  if (end != spec + len || r < 0 || r >= g->n_ranks) return -1;
  for (int i = 0; i < g->count[r]; i++)
    if (strlen(g->name[g->first[r] + i]) == (size_t)(at - spec) &&
        !strncmp(g->name[g->first[r] + i], spec, (size_t)(at - spec))) {
      if (rank_out) *rank_out = (int)r;
      return g->first[r] + i;
    }
  return -1;
}

static int mpi_throttles(const run_args *a, const mpi_pu_names *g, hlb_exec_pu *pus) {
  for (unsigned k = 0; k < a->n_throttle; k++) {
    const char *t = a->throttle[k], *eq = strchr(t, '=');
    int r = -1, gi = eq ? resolve_global(g, t, (size_t)(eq - t), &r) : -1;
    if (gi < 0)
      return hlb_cli_usage_error("run",
                                 "--throttle '%s': expected NAME@RANK=FACTOR with a PU "
                                 "of this run",
                                 t);
    double f;
    if (hlb_cli_parse_double("run", "--throttle", eq + 1, 1, 1e6, &f)) return HLB_EXIT_USAGE;
    if (r == g->rank) pus[gi - g->first[r]].throttle = f;
  }
  return 0;
}

static int mpi_inject(const run_args *a, const mpi_pu_names *g, hlb_exec_options *o) {
  if (!a->inject) return 0;
  /* NAME@RANK:N[:COUNT]; the PU name has no ':' after its '@RANK'. */
  const char *at = strchr(a->inject, '@');
  const char *c1 = at ? strchr(at, ':') : NULL;
  int gi = c1 ? resolve_global(g, a->inject, (size_t)(c1 - a->inject), NULL) : -1;
  char *end = NULL;
  unsigned long from = c1 ? strtoul(c1 + 1, &end, 10) : 0, count = 1;
  if (end && *end == ':') count = strtoul(end + 1, &end, 10);
  if (gi < 0 || from == 0 || !end || *end)
    return hlb_cli_usage_error("run",
                               "--inject '%s': expected NAME@RANK:N[:COUNT] with a PU "
                               "of this run and N >= 1",
                               a->inject);
  o->inject_pu = gi;
  o->inject_from = (unsigned)from;
  o->inject_count = (unsigned)count;
  return 0;
}

static void run_once_mpi(const run_args *a, hlb_app *app, const hlb_exec_pu *pus, unsigned n,
                         const hlb_exec_options *o, outcome *out, hlb_mpi_run_stats *st, int rank) {
  memset(out, 0, sizeof *out);
  if (a->hier) {
    hlb_mpi_hier_options ho;
    hlb_mpi_hier_options_default(&ho);
    ho.links = a->links;
    out->rc = hlb_mpi_run_hier(MPI_COMM_WORLD, pus, n, hlb_app_codelet(app), hlb_app_items(app), o,
                               &ho, st);
  } else {
    out->rc = hlb_mpi_run(MPI_COMM_WORLD, pus, n, hlb_app_codelet(app), hlb_app_items(app), o, st);
  }
  if (out->rc == 0 && rank == 0) {
    int v = hlb_app_verify(app);
    out->verified = v == 0;
    if (v) out->rc = v;
  }
  if (out->rc) snprintf(out->error, sizeof out->error, "%s", hlb_last_error());
  out->st = st->exec;
}

/* The hierarchical mode's nodes: a "nodes" member of --json, a table otherwise. */
static void print_json_mpi(const run_args *a, const hlb_app *app, const outcome *r,
                           const outcome *greedy, const outcome *stat,
                           const hlb_mpi_run_stats *st) {
  cJSON *o = run_json(a, app, r, greedy, stat, st->rank);
  if (st->n_nodes) {
    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    for (unsigned i = 0; i < st->n_nodes; i++) {
      cJSON *nd = cJSON_CreateObject();
      cJSON_AddNumberToObject(nd, "leader", st->node_leader[i]);
      cJSON *ranks = cJSON_AddArrayToObject(nd, "ranks");
      for (int r = 0; r < st->n_ranks; r++)
        if (st->rank_node[r] == (int)i) cJSON_AddItemToArray(ranks, cJSON_CreateNumber(r));
      cJSON_AddNumberToObject(nd, "items", (double)st->node_items[i]);
      cJSON_AddNumberToObject(nd, "planned", (double)st->node_planned[i]);
      cJSON_AddNumberToObject(nd, "shares", st->node_shares[i]);
      cJSON_AddBoolToObject(nd, "failed", st->node_failed[i]);
      cJSON_AddItemToArray(nodes, nd);
    }
    cJSON_AddNumberToObject(o, "plan_makespan_s", st->plan_makespan_s);
  }
  char *text = cJSON_Print(o);
  puts(text);
  free(text);
  cJSON_Delete(o);
}

static void print_nodes(const hlb_mpi_run_stats *st) {
  if (!st->n_nodes) return;
  printf("nodes (hierarchical mode; planned: the two-level plan's share of the items it placed, "
         "T = %.4f s)\n",
         st->plan_makespan_s);
  for (unsigned i = 0; i < st->n_nodes; i++) {
    printf("  node %u  leader rank %d  ranks", i, st->node_leader[i]);
    for (int r = 0; r < st->n_ranks; r++)
      if (st->rank_node[r] == (int)i) printf(" %d", r);
    printf("  items %zu  planned %zu  shares %u%s\n", st->node_items[i], st->node_planned[i],
           st->node_shares[i],
           st->node_failed[i] ? "  FAILED (its shares went to the others)" : "");
  }
}

/* Every rank takes part in every run; rank 0 owns the data, verifies and prints. */
static int run_mpi_runs(const run_args *a, hlb_app *app, hlb_exec_pu *pus, unsigned n,
                        const mpi_pu_names *g) {
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = a->policy_arg;
  o.params = a->params_arg;
  o.models = a->models; /* rank 0's mode holds; every rank reads and writes its host's file */
  o.model_dir = a->model_dir;
  int rc = mpi_inject(a, g, &o);
  if (rc) return rc;
  outcome r[3];
  hlb_mpi_run_stats st[3];
  memset(st, 0, sizeof st);
  const char *policies[3] = {a->policy_arg, "greedy", "static"};
  int runs = a->compare ? 3 : 1;
  if (g->rank == 0 && !a->json) {
    printf("hlb run %s --mpi%s: size %zu, %zu items per pass, policy %s%s%s, %u PUs on %d "
           "ranks\n",
           a->app, a->hier ? " --hierarchy node" : "",
           a->size ? a->size : hlb_app_info_of(app)->default_size, hlb_app_items(app), a->policy,
           a->params ? " " : "", a->params ? a->params : "", g->total, g->n_ranks);
    fflush(stdout);
  }
  for (int k = 0; k < runs; k++) {
    hlb_exec_options ok = o;
    ok.policy = policies[k];
    if (k) ok.inject_pu = -1, ok.params = NULL;
    run_once_mpi(a, app, pus, n, &ok, &r[k], &st[k], g->rank);
  }
  int ok = r[0].verified;
  if (g->rank == 0) {
    if (r[0].rc && !r[0].st.n_pus) {
      fprintf(stderr, "hlb run: %s\n", r[0].error);
    } else {
      if (a->trace && write_trace(a, app, &r[0], a->compare ? &r[1] : NULL,
                                  a->compare ? &r[2] : NULL, st[0].rank))
        ok = 0;
      if (a->json)
        print_json_mpi(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL, &st[0]);
      else
        print_text(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL, st[0].rank);
      if (!a->json) print_nodes(&st[0]);
      if (!r[0].verified) fprintf(stderr, "hlb run: %s: %s\n", a->app, r[0].error);
    }
  }
  for (int k = 0; k < runs; k++)
    hlb_mpi_run_stats_clear(&st[k]);
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok ? HLB_EXIT_OK : HLB_EXIT_FAIL;
}

static int run_mpi(const run_args *a, hlb_app *app) {
  if (!hlb_app_codelet(app))
    return hlb_cli_usage_error("run", "--mpi runs single-pass apps; '%s' is iterative", a->app);
  int provided = 0;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
  unsigned n = 0;
  mpi_pu_names g = {0};
  int rc = hlb_exec_parse_pus(a->pus, pus, HLB_EXEC_MAX_LOCAL_PUS, &n);
  if (rc) rc = hlb_cli_lib_error("run", rc);
  /* Every rank must agree to go on, or the collectives below would wait forever. */
  int bad = rc != 0, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (!any_bad) rc = gather_names(pus, n, &g);
  if (!any_bad && !rc) rc = mpi_throttles(a, &g, pus);
  bad = rc != 0;
  if (!any_bad) MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (!any_bad)
    rc = run_mpi_runs(a, app, pus, n, &g);
  else if (!rc)
    rc = HLB_EXIT_USAGE;
  free_names(&g);
  MPI_Finalize();
  return rc;
}
#endif

#ifdef HLB_CLI_WITH_STARPU
/* ---- hlb run --runtime starpu: StarPU's workers run the app (libhlb_starpu) ---- */

/* Workers named in the header line; StarPU 1.3 has at most STARPU_NMAXWORKERS. */
#define STARPU_HEADER_MAX 64
static void print_starpu_header(const run_args *a, const hlb_app *app) {
  char names[STARPU_HEADER_MAX][32];
  unsigned n = hlb__cli_starpu_workers(names, STARPU_HEADER_MAX);
  printf("hlb run %s --runtime starpu: size %zu, %zu items per pass, ", a->app,
         a->size ? a->size : hlb_app_info_of(app)->default_size, hlb_app_items(app));
  if (a->starpu_sched)
    printf("equal blocks placed by StarPU's %s scheduler, workers", a->starpu_sched);
  else
    printf("policy %s%s%s, workers", a->policy, a->params ? " " : "", a->params ? a->params : "");
  for (unsigned i = 0; i < n && i < STARPU_HEADER_MAX; i++)
    printf("%s %s", i ? "," : "", names[i]);
  printf("\n");
  fflush(stdout);
}

static int starpu_runs(const run_args *a, hlb_app *app) {
  hlb__cli_starpu sa = {.sched = a->starpu_sched,
                        .blocks = a->starpu_blocks,
                        .policy = a->policy_arg,
                        .params = a->params_arg,
                        .throttle = a->throttle,
                        .n_throttle = a->n_throttle,
                        .models = a->models,
                        .model_dir = a->model_dir};
  if (!a->json) print_starpu_header(a, app);
  outcome r;
  memset(&r, 0, sizeof r);
  hlb__cli_starpu_result res;
  r.rc = hlb__cli_starpu_run(app, &sa, &r.st, &res);
  if (r.rc == HLB_EXIT_USAGE) return r.rc; /* a bad --throttle, already said */
  if (r.rc == 0) {
    int v = hlb_app_verify(app);
    r.verified = v == 0;
    if (v) r.rc = v;
  }
  if (r.rc) snprintf(r.error, sizeof r.error, "%s", hlb_last_error());
  memcpy(r.placement, res.placement, sizeof r.placement);
  r.blocks = res.blocks;
  r.adapter_s = res.adapter_s;
  int rc = 0;
  if (r.rc && r.rc != HLB_EVERIFY && !r.st.n_pus) {
    fprintf(stderr, "hlb run: %s\n", r.error);
    rc = r.rc == HLB_ENOTFOUND || r.rc == HLB_EINVAL ? HLB_EXIT_USAGE : HLB_EXIT_FAIL;
  } else {
    if (a->trace) write_trace(a, app, &r, NULL, NULL, NULL);
    if (a->json)
      print_json(a, app, &r, NULL, NULL, NULL);
    else
      print_text(a, app, &r, NULL, NULL, NULL);
    if (!r.verified) fprintf(stderr, "hlb run: %s: %s\n", a->app, r.error);
    rc = r.verified ? HLB_EXIT_OK : HLB_EXIT_FAIL;
  }
  hlb_exec_stats_clear(&r.st);
  return rc;
}

static int run_starpu(const run_args *a, hlb_app *app) {
  int rc = hlb__cli_starpu_start(a->starpu_sched);
  if (rc) return rc;
  rc = starpu_runs(a, app);
  hlb__cli_starpu_stop();
  return rc;
}
#endif

static int run_parsed(const run_args *a) {
  hlb_app *app = NULL;
  int rc = hlb_app_create(a->app, a->size, a->seed, &app);
  if (rc) return hlb_cli_lib_error("run", rc);
#ifdef HLB_CLI_WITH_STARPU
  if (a->starpu) {
    rc = run_starpu(a, app);
    hlb_app_destroy(app);
    return rc;
  }
#endif
#ifdef HLB_CLI_WITH_MPI
  if (a->mpi) {
    rc = run_mpi(a, app);
    hlb_app_destroy(app);
    return rc;
  }
#endif
  hlb_executor *ex = NULL;
  if ((rc = open_executor(a, &ex)) == 0) rc = run_all(a, app, ex);
  hlb_executor_destroy(ex);
  hlb_app_destroy(app);
  return rc;
}

int hlb_cmd_run(int argc, char **argv) {
  run_args a;
  hlb_cli_args cli; /* owns a.throttle: freed after the run */
  int rc = parse_args(argc, argv, &a, &cli);
  if (rc == 0) rc = run_parsed(&a);
  hlb_cli_args_free(&cli);
  return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
}
