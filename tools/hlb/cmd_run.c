/* hlb run APP: run an application on this machine's PUs with a balancing policy, check the
 * result against a reference, and report per-PU work, busy/idle time, fitted models, the
 * makespan and the imbalance (paper 004: I% = (t_max - t_avg) / t_max * N / (N - 1), over
 * each PU's busy time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "apps.h"
#include "cli.h"
#include "hlb/ccp.h"
#include "hlb/error.h"
#include "hlb/exec.h"

const char hlb_cmd_run_help[] =
    "run an app (matmul, blackscholes, kmeans, mandelbrot) on local PUs";

static const char usage_text[] =
    "usage: hlb run APP [--size N] [--policy P] [--pus cpu,opencl:0,cuda:0|all]\n"
    "               [--throttle PU=FACTOR]... [--trace FILE] [--json] [--compare]\n"
    "               [--seed S] [--inject PU:N[:COUNT]]\n"
    "  APP          matmul | blackscholes | kmeans | mandelbrot\n"
    "  --size N     problem size (see below); default: the app's default\n"
    "  --policy P   balancing policy (hlb policies); default $HLB_POLICY, then hlb\n"
    "  --pus LIST   PUs to use; default all (cpu:N = a cpu PU of N cores)\n"
    "  --throttle PU=F  make PU look F times slower, by sleeping after each block\n"
    "               (emulated heterogeneity; the output says so)\n"
    "  --trace FILE write a Chrome trace JSON of the run (see hlb report)\n"
    "  --json       print the result as JSON\n"
    "  --compare    also run greedy and static on the same PUs and report their makespans\n"
    "  --inject PU:N[:COUNT]  make PU fail its N-th block (and COUNT-1 more; 0 = all after)\n"
    "Exit status: 0 verified, 1 wrong result or failed run, 2 bad usage.\n";

typedef struct run_args {
  const char *app, *policy, *pus, *trace;
  size_t size;
  uint64_t seed;
  int json, compare;
  const char *throttle[HLB_EXEC_MAX_PUS];
  unsigned n_throttle;
  const char *inject;
} run_args;

static int parse_args(int argc, char **argv, run_args *a) {
  memset(a, 0, sizeof *a);
  a->pus = "all";
  a->seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int m;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage_text, stdout);
      for (unsigned k = 0; k < hlb_app_count(); k++)
        printf("  %-13s size = %s (default %zu): %s\n", hlb_app_info_at(k)->name,
               hlb_app_info_at(k)->size_meaning, hlb_app_info_at(k)->default_size,
               hlb_app_info_at(k)->description);
      return -1;
    } else if (!strcmp(argv[i], "--json")) {
      a->json = 1;
    } else if (!strcmp(argv[i], "--compare")) {
      a->compare = 1;
    } else if ((m = hlb_cli_option("run", argc, argv, &i, "--size", &v))) {
      if (m < 0 || hlb_cli_parse_size("run", "--size", v, 2, (size_t)1 << 40, &a->size))
        return HLB_EXIT_USAGE;
    } else if ((m = hlb_cli_option("run", argc, argv, &i, "--seed", &v))) {
      size_t s;
      if (m < 0 || hlb_cli_parse_size("run", "--seed", v, 0, (size_t)1 << 52, &s))
        return HLB_EXIT_USAGE;
      a->seed = s;
    } else if ((m = hlb_cli_option("run", argc, argv, &i, "--policy", &a->policy)) ||
               (m = hlb_cli_option("run", argc, argv, &i, "--pus", &a->pus)) ||
               (m = hlb_cli_option("run", argc, argv, &i, "--trace", &a->trace)) ||
               (m = hlb_cli_option("run", argc, argv, &i, "--inject", &a->inject))) {
      if (m < 0) return HLB_EXIT_USAGE;
    } else if ((m = hlb_cli_option("run", argc, argv, &i, "--throttle", &v))) {
      if (m < 0) return HLB_EXIT_USAGE;
      if (a->n_throttle == HLB_EXEC_MAX_PUS)
        return hlb_cli_usage_error("run", "--throttle: at most %d", HLB_EXEC_MAX_PUS);
      a->throttle[a->n_throttle++] = v;
    } else if (argv[i][0] == '-') {
      return hlb_cli_usage_error("run", "unknown option '%s' (try hlb run --help)", argv[i]);
    } else if (!a->app) {
      a->app = argv[i];
    } else {
      return hlb_cli_usage_error("run", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!a->app)
    return hlb_cli_usage_error("run", "no app given (matmul, blackscholes, kmeans, mandelbrot)");
  if (!hlb_app_find(a->app))
    return hlb_cli_usage_error("run", "unknown app '%s' (matmul, blackscholes, kmeans, mandelbrot)",
                               a->app);
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

/* "0.12 + 3.4 u + 0.5 u2 (u = x/1536) + 1e-6 x + 2e-5" */
static void format_model(char *buf, size_t cap, const hlb_exec_pu_stats *st) {
  if (!st->fitted) {
    snprintf(buf, cap, "(not fitted)");
    return;
  }
  size_t len = 0;
  for (unsigned t = 0; t < HLB_TERM_COUNT && len < cap; t++)
    if (st->model_terms & (1u << t))
      len += (size_t)snprintf(buf + len, cap - len, "%s%.3g%s%s", len ? " + " : "",
                              st->model.coef[t], t ? " " : "", t ? hlb_term_name((hlb_term)t) : "");
  if (len < cap)
    snprintf(buf + len, cap - len, " (u = x/%g); G = %.3g x + %.3g", st->model.scale,
             st->model.transfer_per_item, st->model.transfer_fixed);
}

/* Imbalance over the busy times of the PUs that were not retired. */
static double imbalance_pct(const hlb_exec_stats *s) {
  double t[HLB_EXEC_MAX_PUS];
  unsigned n = 0;
  for (unsigned i = 0; i < s->n_pus; i++)
    if (!s->per_pu[i].retired) t[n++] = s->per_pu[i].busy_s;
  hlb_imbalance im;
  if (n == 0 || hlb_imbalance_compute(t, n, &im) != 0) return NAN;
  return im.percent;
}

typedef struct outcome {
  int rc, verified;
  char error[512];
  hlb_exec_stats st;
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

static void print_text(const run_args *a, const hlb_app *app, const outcome *r,
                       const outcome *greedy, const outcome *stat) {
  const hlb_exec_stats *s = &r->st;
  printf("hlb run %s: size %zu, %zu items per pass, policy %s\n", a->app,
         a->size ? a->size : hlb_app_info_of(app)->default_size, hlb_app_items(app), s->policy);
  for (unsigned i = 0; i < s->n_pus; i++)
    if (s->pu[i].throttle > 1)
      printf("NOTE: %s is throttled x%g - EMULATED heterogeneity (each block is stretched by "
             "sleeping), not a real device speed\n",
             s->pu[i].name, s->pu[i].throttle);
  printf("%-10s %-7s %-42s %10s %7s %6s %6s %6s  %s\n", "PU", "kind", "device", "items", "blocks",
         "busy%", "idle%", "failed", "fitted model F(x) [s]");
  for (unsigned i = 0; i < s->n_pus; i++) {
    const hlb_exec_pu_stats *p = &s->per_pu[i];
    char model[256];
    format_model(model, sizeof model, p);
    double busy = hlb_exec_busy_pct(s, i);
    printf("%-10s %-7s %-42.42s %10zu %7zu %6.1f %6.1f %6zu%s  %s\n", s->pu[i].name,
           hlb_backend_name(s->pu[i].backend), s->pu[i].device_name, p->items, p->blocks, busy,
           100 - busy, p->failed_blocks, p->retired ? " (retired)" : "", model);
  }
  printf("makespan %.4f s, imbalance %.1f %%, policy time %.4f s\n", s->makespan_s,
         imbalance_pct(s), s->solver_s);
  if (greedy)
    printf("compare: %s %.4f s, greedy %.4f s%s, static %.4f s%s\n", s->policy, s->makespan_s,
           greedy->st.makespan_s, greedy->verified ? "" : " (FAILED)", stat->st.makespan_s,
           stat->verified ? "" : " (FAILED)");
  printf("result: %s\n", r->verified ? "verified against the reference" : r->error);
}

static void print_json(const run_args *a, const outcome *r, const outcome *greedy,
                       const outcome *stat) {
  const hlb_exec_stats *s = &r->st;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "app", a->app);
  cJSON_AddStringToObject(o, "policy", s->policy);
  cJSON_AddBoolToObject(o, "verified", r->verified);
  if (r->rc) cJSON_AddStringToObject(o, "error", r->error);
  cJSON_AddNumberToObject(o, "makespan_s", s->makespan_s);
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
    cJSON_AddNumberToObject(p, "items", (double)s->per_pu[i].items);
    cJSON_AddNumberToObject(p, "blocks", (double)s->per_pu[i].blocks);
    cJSON_AddNumberToObject(p, "busy_pct", hlb_exec_busy_pct(s, i));
    cJSON_AddNumberToObject(p, "failed_blocks", (double)s->per_pu[i].failed_blocks);
    cJSON_AddBoolToObject(p, "retired", s->per_pu[i].retired);
    cJSON_AddNumberToObject(p, "throttle", s->pu[i].throttle);
    cJSON_AddBoolToObject(p, "throttle_emulated", s->pu[i].throttle > 1);
    cJSON_AddItemToArray(pus, p);
  }
  if (greedy) {
    cJSON *c = cJSON_AddObjectToObject(o, "compare");
    cJSON_AddNumberToObject(c, "greedy_s", greedy->st.makespan_s);
    cJSON_AddNumberToObject(c, "static_s", stat->st.makespan_s);
    cJSON_AddBoolToObject(c, "greedy_verified", greedy->verified);
    cJSON_AddBoolToObject(c, "static_verified", stat->verified);
  }
  char *text = cJSON_Print(o);
  puts(text);
  free(text);
  cJSON_Delete(o);
}

static int open_executor(const run_args *a, hlb_executor **ex) {
  hlb_exec_pu pus[HLB_EXEC_MAX_PUS];
  unsigned n = 0;
  int rc = hlb_exec_parse_pus(a->pus, pus, HLB_EXEC_MAX_PUS, &n);
  if (rc) return hlb_cli_lib_error("run", rc);
  if ((rc = apply_throttles(a, pus, n))) return rc;
  if ((rc = hlb_executor_create(pus, n, ex))) return hlb_cli_lib_error("run", rc);
  return 0;
}

static int run_all(const run_args *a, hlb_app *app, hlb_executor *ex) {
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = a->policy;
  int rc = apply_inject(a, hlb_executor_pu(ex, 0), hlb_executor_pu_count(ex), &o);
  if (rc) return rc;
  outcome *r = calloc(3, sizeof *r);
  if (!r) return hlb_cli_usage_error("run", "out of memory");
  run_once(app, ex, &o, &r[0]);
  if (r[0].rc && r[0].rc != HLB_EVERIFY && !r[0].st.n_pus) {
    fprintf(stderr, "hlb run: %s\n", r[0].error);
    int usage = r[0].rc == HLB_ENOTFOUND || r[0].rc == HLB_EINVAL;
    free(r);
    return usage ? HLB_EXIT_USAGE : HLB_EXIT_FAIL;
  }
  if (a->trace && (rc = hlb_exec_write_trace(&r[0].st, a->trace)))
    fprintf(stderr, "hlb run: %s\n", hlb_last_error());
  if (a->compare) {
    hlb_exec_options g = o, s = o;
    g.policy = "greedy";
    s.policy = "static";
    g.inject_pu = s.inject_pu = -1;
    run_once(app, ex, &g, &r[1]);
    run_once(app, ex, &s, &r[2]);
  }
  if (a->json)
    print_json(a, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL);
  else
    print_text(a, app, &r[0], a->compare ? &r[1] : NULL, a->compare ? &r[2] : NULL);
  int ok = r[0].verified && rc == 0;
  if (!r[0].verified) fprintf(stderr, "hlb run: %s: %s\n", a->app, r[0].error);
  for (int k = 0; k < 3; k++)
    hlb_exec_stats_clear(&r[k].st);
  free(r);
  return ok ? HLB_EXIT_OK : HLB_EXIT_FAIL;
}

int hlb_cmd_run(int argc, char **argv) {
  run_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc < 0 ? HLB_EXIT_OK : rc;
  hlb_app *app = NULL;
  if ((rc = hlb_app_create(a.app, a.size, a.seed, &app))) return hlb_cli_lib_error("run", rc);
  hlb_executor *ex = NULL;
  if ((rc = open_executor(&a, &ex)) == 0) rc = run_all(&a, app, ex);
  hlb_executor_destroy(ex);
  hlb_app_destroy(app);
  return rc;
}
