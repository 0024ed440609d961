/* hlb policies [NAME] [--json]: the registered policies with their parameters. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/policy.h"
#include "hlb/repartition.h"

const hlb_cli_command hlb_cmd_policies_spec = {
    .name = "policies",
    .operands = "[NAME]",
    .min_operands = 0,
    .max_operands = 1,
    .summary = "list the balancing policies and their parameters",
    .about = "Lists the block policies (select with --policy or HLB_POLICY) and the repartition "
             "policies of SPMD codes (HLB_REPART_POLICY), each with its parameters: name, "
             "default, accepted range and where the value comes from. NAME shows one policy. "
             "Set parameters as \"name=value,name=value\" (--params, HLB_POLICY_PARAMS). "
             "--json prints {\"default\":..., \"policies\":[...], \"repartition\":[...]}."};

static void print_params(const hlb_param_def *p, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    printf("      %s=%g  [%g, %g]  %s\n", p[i].name, p[i].dflt, p[i].lo, p[i].hi, p[i].doc);
}

static void print_one(const char *name, const char *desc, const hlb_param_def *p, unsigned n,
                      int is_default) {
  printf("  %-14s %s%s\n", name, desc, is_default ? " (default)" : "");
  print_params(p, n);
}

static cJSON *json_one(const char *name, const char *desc, const hlb_param_def *p, unsigned n,
                       int is_default) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "description", desc);
  cJSON_AddBoolToObject(o, "default", is_default);
  cJSON *arr = cJSON_AddArrayToObject(o, "params");
  for (unsigned i = 0; i < n; i++) {
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "name", p[i].name);
    cJSON_AddNumberToObject(q, "default", p[i].dflt);
    cJSON_AddNumberToObject(q, "min", p[i].lo);
    cJSON_AddNumberToObject(q, "max", p[i].hi);
    cJSON_AddStringToObject(q, "doc", p[i].doc);
    cJSON_AddItemToArray(arr, q);
  }
  return o;
}

static int matches(const char *only, const char *name) {
  return !only || !strcmp(only, name);
}

static int print_json(const char *only) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "default", HLB_POLICY_DEFAULT);
  cJSON *pol = cJSON_AddArrayToObject(root, "policies");
  for (unsigned i = 0; i < hlb_policy_count(); i++) {
    const hlb_policy_ops *p = hlb_policy_at(i);
    if (matches(only, p->name))
      cJSON_AddItemToArray(pol, json_one(p->name, p->description, p->params, p->n_params,
                                         !strcmp(p->name, HLB_POLICY_DEFAULT)));
  }
  cJSON *rep = cJSON_AddArrayToObject(root, "repartition");
  for (unsigned i = 0; i < hlb_repart_count(); i++) {
    const hlb_repart_ops *p = hlb_repart_at(i);
    if (matches(only, p->name))
      cJSON_AddItemToArray(rep, json_one(p->name, p->description, p->params, p->n_params, 0));
  }
  char *text = cJSON_Print(root);
  int ok = text != NULL;
  if (ok) printf("%s\n", text);
  cJSON_free(text);
  cJSON_Delete(root);
  return ok ? HLB_EXIT_OK : HLB_EXIT_FAIL;
}

static void print_text(const char *only) {
  if (!only || hlb_policy_find(only))
    printf("block policies (--policy NAME or HLB_POLICY=NAME; default %s):\n", HLB_POLICY_DEFAULT);
  for (unsigned i = 0; i < hlb_policy_count(); i++) {
    const hlb_policy_ops *p = hlb_policy_at(i);
    if (matches(only, p->name))
      print_one(p->name, p->description, p->params, p->n_params,
                !strcmp(p->name, HLB_POLICY_DEFAULT));
  }
  if (!only || hlb_repart_find(only)) printf("repartition policies (SPMD codes):\n");
  for (unsigned i = 0; i < hlb_repart_count(); i++) {
    const hlb_repart_ops *p = hlb_repart_at(i);
    if (matches(only, p->name)) print_one(p->name, p->description, p->params, p->n_params, 0);
  }
}

int hlb_cmd_policies(int argc, char **argv) {
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_policies_spec, argc, argv, &cli);
  int json = rc == 0 && hlb_cli_flag(&cli, "json");
  const char *only = rc == 0 && cli.n_operands ? cli.operand[0] : NULL;
  hlb_cli_args_free(&cli);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  if (only && !hlb_policy_find(only) && !hlb_repart_find(only))
    return hlb_cli_usage_error("policies", "unknown policy '%s' (run 'hlb policies' for the list)",
                               only);
  if (json) return print_json(only);
  print_text(only);
  return HLB_EXIT_OK;
}
