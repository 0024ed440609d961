/* hlb sim: simulate policies on a cluster file (docs/simulator.md).
 *
 * Output is deterministic for a seed, byte for byte: the policies' solver time is wall-clock,
 * so it is printed only with --timing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/policy.h"
#include "hlb/sim.h"

const hlb_cli_command hlb_cmd_sim_spec = {
    .name = "sim",
    .operands = "CLUSTER.json",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "simulate policies on a cluster file (makespan, ratio to bound)",
    .about = "Simulates each policy on the cluster (docs/cluster-format.md) and prints one row "
             "per policy: makespan, ratio to the lower bound, idle % per PU kind, blocks "
             "(completed and lost). With --reps R: mean and [min, max] over seeds S..S+R-1. "
             "--trace writes the blocks of the first seed. Docs: docs/simulator.md"};

#define MAX_POLICIES 64

typedef struct args {
  const char *cluster, *policy, *params, *trace;
  const char *params_shown; /* --params or $HLB_POLICY_PARAMS, as the library will read them */
  size_t items, granularity, reps, passes;
  uint64_t seed;
  int json, timing, no_noise, no_events, progress, keep_devices, remember, no_item_costs;
} args;

/* Statistics of one policy over the repetitions; runs[0] (seed S) is kept for items and the
 * trace. */
typedef struct row {
  const char *name;
  hlb_sim_result *first;
  double mk_sum, mk_min, mk_max, ratio_sum, ratio_min, ratio_max, solver_sum;
  double blocks_sum, lost_sum;
  double *idle_sum; /* per kind */
  int all_exact;
} row;

static int parse_args(int argc, char **argv, args *a, hlb_cli_args *cli) {
  memset(a, 0, sizeof *a);
  int rc = hlb_cli_parse(&hlb_cmd_sim_spec, argc, argv, cli);
  if (rc) return rc;
  a->cluster = cli->operand[0];
  if (!hlb_cli_given(cli, "items")) return hlb_cli_usage_error("sim", "missing --items N");
  a->items = hlb_cli_size(cli, "items");
  /* Only a flag's policy and parameters go to the library: it reads the environment itself
   * (the same precedence) and names the variable in its errors. */
  a->policy = hlb_cli_get(cli, "policy")->from == HLB_CLI_FLAG ? hlb_cli_text(cli, "policy") : NULL;
  a->params = hlb_cli_get(cli, "params")->from == HLB_CLI_FLAG ? hlb_cli_text(cli, "params") : NULL;
  a->params_shown = hlb_cli_text(cli, "params");
  a->trace = hlb_cli_text(cli, "trace");
  a->seed = (uint64_t)hlb_cli_size(cli, "seed");
  a->reps = hlb_cli_size(cli, "sim.reps");
  a->passes = hlb_cli_size(cli, "passes");
  a->granularity = hlb_cli_size(cli, "granularity");
  a->json = hlb_cli_flag(cli, "json");
  a->timing = hlb_cli_flag(cli, "timing");
  a->no_noise = hlb_cli_flag(cli, "no-noise");
  a->no_events = hlb_cli_flag(cli, "no-events");
  a->keep_devices = hlb_cli_flag(cli, "keep-devices");
  a->remember = hlb_cli_flag(cli, "remember");
  a->no_item_costs = hlb_cli_flag(cli, "no-item-costs");
  a->progress = hlb_cli_show_progress(cli);
  return 0;
}

/* The policies to run: every registered one for "all", else the one named (or the
 * default). An unknown name is a usage error listing the known ones. */
static int pick_policies(const args *a, const char **names, unsigned *n) {
  *n = 0;
  if (a->policy && !strcmp(a->policy, "all")) {
    for (unsigned i = 0; i < hlb_policy_count() && *n < MAX_POLICIES; i++)
      names[(*n)++] = hlb_policy_at(i)->name;
    return 0;
  }
  if (a->policy && !hlb_policy_find(a->policy)) {
    char known[1024] = "";
    for (unsigned i = 0; i < hlb_policy_count(); i++) {
      size_t len = strlen(known);
      snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", hlb_policy_at(i)->name);
    }
    return hlb_cli_usage_error("sim", "--policy: unknown policy '%s' (known: %s, all)", a->policy,
                               known);
  }
  names[(*n)++] = a->policy; /* NULL: $HLB_POLICY, then the default */
  return 0;
}

static void add_run(row *w, hlb_sim_result *r, unsigned rep) {
  if (rep == 0) {
    w->first = r;
    w->mk_min = w->mk_max = r->makespan_s;
    w->ratio_min = w->ratio_max = r->ratio;
    w->all_exact = 1;
  }
  w->mk_sum += r->makespan_s;
  w->mk_min = fmin(w->mk_min, r->makespan_s);
  w->mk_max = fmax(w->mk_max, r->makespan_s);
  w->ratio_sum += r->ratio;
  w->ratio_min = fmin(w->ratio_min, r->ratio);
  w->ratio_max = fmax(w->ratio_max, r->ratio);
  w->solver_sum += r->solver_s;
  w->blocks_sum += (double)r->blocks;
  w->lost_sum += (double)r->blocks_lost;
  for (unsigned k = 0; k < r->n_kinds; k++)
    w->idle_sum[k] += r->idle_pct[k];
  if (!r->exactly_once) w->all_exact = 0;
  if (rep != 0) hlb_sim_result_free(r);
}

/* "policy 3/9 plb-hac, repetition 2/5" on the terminal's line, for runs that take a while. */
static void show_progress(const args *a, unsigned k, unsigned n, const char *policy, size_t rep) {
  if (!a->progress || (n == 1 && a->reps == 1)) return;
  fprintf(stderr, "\r\033[Khlb sim: policy %u/%u %s, repetition %zu/%zu", k + 1, n,
          policy ? policy : "", rep + 1, a->reps);
  fflush(stderr);
}

static void end_progress(const args *a) {
  if (a->progress) fputs("\r\033[K", stderr);
}

static int simulate(const args *a, const hlb_cluster *c, const char *policy, row *w, unsigned k,
                    unsigned n) {
  w->idle_sum = calloc(c->n_pus, sizeof *w->idle_sum);
  if (!w->idle_sum) return hlb_cli_usage_error("sim", "out of memory");
  for (size_t rep = 0; rep < a->reps; rep++) {
    show_progress(a, k, n, policy, rep);
    hlb_sim_options o = {.n_items = a->items,
                         .granularity = a->granularity,
                         .policy = policy,
                         .params = a->params,
                         .seed = a->seed + rep,
                         .keep_trace = a->trace && rep == 0,
                         .no_noise = a->no_noise,
                         .no_events = a->no_events,
                         .passes = (unsigned)a->passes,
                         .keep_weak_devices = a->keep_devices,
                         .remember = a->remember,
                         .no_item_costs = a->no_item_costs};
    hlb_sim_result *r = NULL;
    int rc = hlb_sim_run(c, &o, &r);
    if (rc) return hlb_cli_lib_error("sim", rc);
    add_run(w, r, (unsigned)rep);
  }
  w->name = w->first->policy;
  return 0;
}

/* Width of a kind's idle column: its header "idle%_<kind>", at least 10. */
static int idle_width(const char *kind) {
  int w = 6 + (int)strlen(kind);
  return w < 10 ? 10 : w;
}

static void print_text(const args *a, const hlb_cluster *c, const row *rows, unsigned n) {
  const hlb_sim_result *f = rows[0].first;
  double R = (double)a->reps;
  printf("cluster %s: %u nodes, %u PUs; %zu items; seed %llu", a->cluster, c->n_nodes, c->n_pus,
         a->items, (unsigned long long)a->seed);
  if (a->reps > 1) printf("; %zu reps (mean [min, max])", a->reps);
  printf("\nlower bound: %.6g s\n\n%-14s %-30s %-24s", f->lower_bound_s, "policy", "makespan_s",
         "ratio");
  char h[96];
  for (unsigned k = 0; k < f->n_kinds; k++) {
    snprintf(h, sizeof h, "idle%%_%s", f->kind_names[k]);
    printf(" %*s", idle_width(f->kind_names[k]), h);
  }
  printf(" %10s %8s %5s", "blocks", "lost", "once");
  if (a->timing) printf(" %10s", "solver_s");
  putchar('\n');
  for (unsigned i = 0; i < n; i++) {
    const row *w = &rows[i];
    char mk[64], ra[64];
    if (a->reps > 1) {
      snprintf(mk, sizeof mk, "%.6g [%.6g, %.6g]", w->mk_sum / R, w->mk_min, w->mk_max);
      snprintf(ra, sizeof ra, "%.4f [%.4f, %.4f]", w->ratio_sum / R, w->ratio_min, w->ratio_max);
    } else {
      snprintf(mk, sizeof mk, "%.6g", w->mk_sum);
      snprintf(ra, sizeof ra, "%.4f", w->ratio_sum);
    }
    printf("%-14s %-30s %-24s", w->name, mk, ra);
    for (unsigned k = 0; k < w->first->n_kinds; k++)
      printf(" %*.2f", idle_width(w->first->kind_names[k]), w->idle_sum[k] / R);
    printf(" %10.6g %8.6g %5s", w->blocks_sum / R, w->lost_sum / R, w->all_exact ? "yes" : "NO");
    if (a->timing) printf(" %10.4g", w->solver_sum / R);
    putchar('\n');
  }
  /* Driver-core PUs released in seed S's run, as hlb run prints a released device. */
  for (unsigned i = 0; i < n; i++)
    for (unsigned k = 0; k < rows[i].first->n_released; k++) {
      const hlb_sim_release *e = &rows[i].first->released[k];
      printf("%s: %s %s\n", rows[i].name, c->pus[e->pu].name, e->reason);
    }
}

static cJSON *policy_json(const args *a, const hlb_cluster *c, const row *w) {
  double R = (double)a->reps;
  const hlb_sim_result *f = w->first;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", w->name);
  cJSON_AddNumberToObject(o, "makespan_s", w->mk_sum / R);
  cJSON_AddNumberToObject(o, "ratio", w->ratio_sum / R);
  if (a->reps > 1) {
    cJSON_AddNumberToObject(o, "makespan_min_s", w->mk_min);
    cJSON_AddNumberToObject(o, "makespan_max_s", w->mk_max);
    cJSON_AddNumberToObject(o, "ratio_min", w->ratio_min);
    cJSON_AddNumberToObject(o, "ratio_max", w->ratio_max);
  }
  cJSON *idle = cJSON_AddObjectToObject(o, "idle_pct");
  for (unsigned k = 0; k < f->n_kinds; k++)
    cJSON_AddNumberToObject(idle, f->kind_names[k], w->idle_sum[k] / R);
  cJSON_AddNumberToObject(o, "blocks", w->blocks_sum / R);
  cJSON_AddNumberToObject(o, "blocks_lost", w->lost_sum / R);
  cJSON *items = cJSON_AddObjectToObject(o, "items_per_pu");
  for (unsigned p = 0; p < c->n_pus; p++)
    cJSON_AddNumberToObject(items, c->pus[p].name, (double)f->items_per_pu[p]);
  if (a->timing) cJSON_AddNumberToObject(o, "solver_s", w->solver_sum / R);
  cJSON_AddBoolToObject(o, "exactly_once", w->all_exact);
  if (f->released) { /* seed S's run: the decisions and both figures */
    cJSON *rel = cJSON_AddArrayToObject(o, "released");
    for (unsigned k = 0; k < f->n_released; k++) {
      const hlb_sim_release *e = &f->released[k];
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "pu", c->pus[e->pu].name);
      cJSON_AddStringToObject(x, "cores_to", c->pus[e->host].name);
      cJSON_AddNumberToObject(x, "cores", e->cores);
      cJSON_AddNumberToObject(x, "at_s", e->at_s);
      cJSON_AddNumberToObject(x, "items_per_s", e->pu_items_per_s);
      cJSON_AddNumberToObject(x, "cores_items_per_s", e->core_items_per_s);
      cJSON_AddBoolToObject(x, "in_flight", e->in_flight);
      cJSON_AddStringToObject(x, "reason", e->reason);
      cJSON_AddItemToArray(rel, x);
    }
  }
  return o;
}

static cJSON *sim_json(const args *a, const hlb_cluster *c, const row *rows, unsigned n) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "cluster", a->cluster);
  cJSON_AddNumberToObject(root, "items", (double)a->items);
  cJSON_AddNumberToObject(root, "seed", (double)a->seed);
  cJSON_AddNumberToObject(root, "reps", (double)a->reps);
  /* As hlb run --json: the parameters every policy was given, so a report can show them. */
  if (a->params_shown) cJSON_AddStringToObject(root, "params", a->params_shown);
  cJSON_AddNumberToObject(root, "lower_bound_s", rows[0].first->lower_bound_s);
  cJSON *arr = cJSON_AddArrayToObject(root, "policies");
  for (unsigned i = 0; i < n; i++)
    cJSON_AddItemToArray(arr, policy_json(a, c, &rows[i]));
  return root;
}

static int print_json(const args *a, const hlb_cluster *c, const row *rows, unsigned n) {
  cJSON *root = sim_json(a, c, rows, n);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return hlb_cli_usage_error("sim", "out of memory");
  puts(text);
  cJSON_free(text);
  return 0;
}

static int write_trace(const args *a, const hlb_cluster *c, const row *rows, unsigned n) {
  const hlb_sim_result *runs[MAX_POLICIES];
  const char *labels[MAX_POLICIES];
  for (unsigned i = 0; i < n; i++) {
    runs[i] = rows[i].first;
    labels[i] = rows[i].name;
  }
  int rc = hlb_sim_write_trace(a->trace, c, runs, labels, n);
  if (rc) return hlb_cli_lib_error("sim", rc);
  /* What --json prints, so that `hlb report` names the cluster and gives the lower bound. */
  cJSON *facts = sim_json(a, c, rows, n);
  rc = hlb_cli_trace_add_facts("sim", a->trace, facts);
  cJSON_Delete(facts);
  return rc;
}

int hlb_cmd_sim(int argc, char **argv) {
  args a;
  hlb_cli_args cli;
  int rc = parse_args(argc, argv, &a, &cli);
  hlb_cli_args_free(&cli); /* a's strings point into argv, the environment or the table */
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  const char *names[MAX_POLICIES];
  unsigned n = 0;
  if ((rc = pick_policies(&a, names, &n))) return rc;
  hlb_cluster *c = NULL;
  if ((rc = hlb_cluster_load(a.cluster, &c))) return hlb_cli_lib_error("sim", rc);
  row rows[MAX_POLICIES];
  memset(rows, 0, sizeof rows);
  unsigned done = 0;
  for (; done < n && rc == 0; done++)
    rc = simulate(&a, c, names[done], &rows[done], done, n);
  end_progress(&a);
  if (rc == 0) rc = a.json ? print_json(&a, c, rows, n) : (print_text(&a, c, rows, n), 0);
  if (rc == 0 && a.trace) rc = write_trace(&a, c, rows, n);
  int all_exact = 1;
  for (unsigned i = 0; i < done; i++) {
    if (rows[i].first && !rows[i].all_exact) all_exact = 0;
    hlb_sim_result_free(rows[i].first);
    free(rows[i].idle_sum);
  }
  hlb_cluster_free(c);
  if (rc == 0 && !all_exact) {
    fprintf(stderr, "hlb sim: a policy did not process every item exactly once\n");
    return HLB_EXIT_FAIL;
  }
  return rc;
}
