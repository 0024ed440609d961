/* hlb plan: the two-level node/PU assignment of a cluster file (docs/plan.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/cluster.h"
#include "hlb/error.h"
#include "hlb/plan.h"

const hlb_cli_command hlb_cmd_plan_spec = {
    .name = "plan",
    .operands = "CLUSTER.json",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "assign items to the nodes and PUs of a cluster file (min makespan)",
    .about = "Assigns --items items to the nodes and PUs of CLUSTER.json (docs/cluster-format.md) "
             "so that the makespan of the two-level model of Boiński & Czarnul (eq. 3) is "
             "minimal (docs/plan.md)."};

typedef struct plan_args {
  const char *file;
  size_t items;
  int have_items, json;
  hlb_plan_options opt;
} plan_args;

static int parse_args(int argc, char **argv, plan_args *a, hlb_cli_args *cli) {
  memset(a, 0, sizeof *a);
  hlb_plan_options_default(&a->opt);
  int rc = hlb_cli_parse(&hlb_cmd_plan_spec, argc, argv, cli);
  if (rc) return rc;
  a->file = cli->operand[0];
  if (!hlb_cli_given(cli, "items")) return hlb_cli_usage_error("plan", "missing --items N");
  a->items = hlb_cli_size(cli, "items");
  a->json = hlb_cli_flag(cli, "json");
  a->opt.time_limit_s = hlb_cli_number(cli, "time-limit");
  const char *solver = hlb_cli_text(cli, "solver");
  if (hlb_plan_solver_parse(solver, &a->opt.solver))
    return hlb_cli_usage_error("plan", "--solver: expected exact or glpk, got '%s'", solver);
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
  plan_args a;
  hlb_cli_args cli;
  int rc = parse_args(argc, argv, &a, &cli);
  hlb_cli_args_free(&cli);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
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
