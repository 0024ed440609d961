/* hlb plan: the two-level node/PU assignment of a cluster file (docs/plan.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/plan.h"

const char hlb_cmd_plan_help[] =
    "assign items to the nodes and PUs of a cluster file (min makespan)";

static const char usage_text[] =
    "usage: hlb plan CLUSTER.json --items D [--solver exact|glpk] [--time-limit S] [--json]\n"
    "\n"
    "Assigns D items to the nodes and PUs of CLUSTER.json (docs/cluster-format.md) so that the\n"
    "makespan of the two-level model of Boinski & Czarnul eq. 3 is minimal (docs/plan.md).\n"
    "  --items D        number of items (integer, 1e6 style accepted)\n"
    "  --solver S       exact (default; hlb's own, proven optimal) or glpk (MILP)\n"
    "  --time-limit S   glpk's time limit in seconds (default 60; 0 = none)\n"
    "  --json           print the result as one JSON object\n";

typedef struct plan_args {
  const char *file;
  size_t items;
  int have_items, json;
  hlb_plan_options opt;
} plan_args;

/* One option at argv[*i]; 0 when handled, else the exit status. */
static int parse_option(int argc, char **argv, int *i, plan_args *a) {
  const char *v = NULL;
  int m;
  if (!strcmp(argv[*i], "--json")) {
    a->json = 1;
  } else if ((m = hlb_cli_option("plan", argc, argv, i, "--items", &v)) != 0) {
    if (m < 0 || hlb_cli_parse_size("plan", "--items", v, 0, (size_t)1 << 53, &a->items))
      return HLB_EXIT_USAGE;
    a->have_items = 1;
  } else if ((m = hlb_cli_option("plan", argc, argv, i, "--solver", &v)) != 0) {
    if (m < 0) return HLB_EXIT_USAGE;
    if (hlb_plan_solver_parse(v, &a->opt.solver))
      return hlb_cli_usage_error("plan", "--solver: expected exact or glpk, got '%s'", v);
  } else if ((m = hlb_cli_option("plan", argc, argv, i, "--time-limit", &v)) != 0) {
    if (m < 0 || hlb_cli_parse_double("plan", "--time-limit", v, 0, 1e9, &a->opt.time_limit_s))
      return HLB_EXIT_USAGE;
  } else if (argv[*i][0] == '-' && argv[*i][1] != '\0') {
    return hlb_cli_usage_error("plan", "unknown option '%s' (try 'hlb plan --help')", argv[*i]);
  } else if (a->file) {
    return hlb_cli_usage_error("plan", "one cluster file only, got '%s' and '%s'", a->file,
                               argv[*i]);
  } else {
    a->file = argv[*i];
  }
  return 0;
}

static int parse_args(int argc, char **argv, plan_args *a) {
  memset(a, 0, sizeof *a);
  hlb_plan_options_default(&a->opt);
  for (int i = 1; i < argc; i++) {
    int rc = parse_option(argc, argv, &i, a);
    if (rc) return rc;
  }
  if (!a->file)
    return hlb_cli_usage_error("plan", "missing the cluster file (try 'hlb plan --help')");
  if (!a->have_items) return hlb_cli_usage_error("plan", "missing --items D");
  return 0;
}

static void print_json(const hlb_cluster *c, const hlb_plan_result *r) {
  printf("{\"makespan_s\": %.17g, \"solver\": \"%s\", \"solve_s\": %.9g, \"optimal\": %s, "
         "\"nodes\": [",
         r->makespan_s, r->solver, r->solve_s, r->optimal ? "true" : "false");
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    printf("%s{\"name\": ", i ? ", " : "");
    hlb_cli_json_string(n->name);
    printf(", \"items\": %zu, \"pus\": [", r->node_items[i]);
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      printf("%s{\"name\": ", j > n->first_pu ? ", " : "");
      hlb_cli_json_string(c->pus[j].name);
      printf(", \"items\": %zu}", r->pu_items[j]);
    }
    printf("]}");
  }
  printf("]}\n");
}

static void print_text(const hlb_cluster *c, const plan_args *a, const hlb_plan_result *r) {
  printf("%s: %zu items, solver %s (%s), solved in %.6f s\n", a->file, a->items, r->solver,
         r->optimal ? "optimal" : "not proven optimal: time limit", r->solve_s);
  printf("makespan %.9g s\n", r->makespan_s);
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    printf("node %-16s %12zu items\n", n->name, r->node_items[i]);
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++)
      printf("  pu %-14s %12zu items  (%s)\n", c->pus[j].name, r->pu_items[j], c->pus[j].kind);
  }
}

int hlb_cmd_plan(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage_text, stdout);
      return HLB_EXIT_OK;
    }
  plan_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  hlb_cluster *c = NULL;
  if ((rc = hlb_cluster_load(a.file, &c))) return hlb_cli_lib_error("plan", rc);
  hlb_plan_result r;
  if ((rc = hlb_plan_solve(c, a.items, &a.opt, &r))) {
    hlb_cluster_free(c);
    return hlb_cli_lib_error("plan", rc);
  }
  if (a.json)
    print_json(c, &r);
  else
    print_text(c, &a, &r);
  hlb_plan_result_free(&r);
  hlb_cluster_free(c);
  return HLB_EXIT_OK;
}
