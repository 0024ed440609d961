/* hlb partition: equal-finish-time block sizes for PUs with polynomial time models
 * (PLB-HeC III.C; docs/partition.md). Exact integer optimum of the makespan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/error_internal.h"
#include "common/json.h"
#include "hlb/error.h"
#include "hlb/partition.h"

const hlb_cli_command hlb_cmd_partition_spec = {
    .name = "partition",
    .operands = "MODELS.json",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "equal-finish-time split of items over PUs with given time curves",
    .about = "Splits N items over the PUs of MODELS.json so that the makespan (the latest finish "
             "time) is the smallest possible with whole items (docs/partition.md). MODELS.json: "
             "{\"items\": N, \"pus\": [{\"name\": \"gpu0\", \"time\": {\"const\": c0, "
             "\"linear\": c1, \"quadratic\": c2, \"cubic\": c3, \"xlogx\": c4}, "
             "\"min_block\": m, \"max_block\": M, \"ready_s\": r}, ...]}; the time of a block "
             "of x items is c0 + c1 x + c2 x^2 + c3 x^3 + c4 x ln x seconds (absent terms 0); "
             "items, min_block, max_block and ready_s are optional. --json prints "
             "{\"makespan_s\", \"pus\": [{\"name\", \"items\", \"finish_s\"}]}."};

/* Largest item count: doubles hold every integer up to 2^53 exactly. */
#define MAX_ITEMS ((size_t)1 << 53)

typedef struct part_args {
  const char *file;
  size_t items, granularity;
  int have_items, json;
} part_args;

typedef struct models {
  unsigned n;
  const char **name;
  hlb_curve *curve;
  size_t *min_block, *max_block;
  double *ready;
  size_t items;
  int have_items;
  cJSON *root;
} models;

static int parse_args(int argc, char **argv, part_args *a, hlb_cli_args *cli) {
  memset(a, 0, sizeof *a);
  int rc = hlb_cli_parse(&hlb_cmd_partition_spec, argc, argv, cli);
  if (rc) return rc;
  a->file = cli->operand[0];
  a->have_items = hlb_cli_given(cli, "items");
  a->items = hlb_cli_size(cli, "items");
  a->granularity = hlb_cli_size(cli, "granularity");
  a->json = hlb_cli_flag(cli, "json");
  return 0;
}

static void free_models(models *m) {
  free(m->name);
  free(m->curve);
  free(m->min_block);
  free(m->max_block);
  free(m->ready);
  cJSON_Delete(m->root);
}

/* The "time" object of one PU: polynomial coefficients, absent ones 0. */
static int read_time(const hlb__jctx *c, const cJSON *pu, const char *path, hlb_curve *out) {
  static const char *const terms[] = {"const", "linear", "quadratic", "cubic", "xlogx", NULL};
  const cJSON *t;
  char tpath[64];
  snprintf(tpath, sizeof tpath, "%s.time", path);
  int rc = hlb__json_object(c, pu, path, "time", 1, &t);
  if (!rc) rc = hlb__json_only_keys(c, t, tpath, terms);
  double k[5] = {0};
  for (int i = 0; !rc && i < 5; i++)
    rc = hlb__json_number(c, t, tpath, terms[i], 0, 0.0, -HUGE_VAL, HUGE_VAL, &k[i]);
  if (!rc) hlb_curve_from_poly(out, k[0], k[1], k[2], k[3], k[4]);
  return rc;
}

static int read_pu(const hlb__jctx *c, const cJSON *pu, unsigned p, models *m) {
  static const char *const keys[] = {"name", "time", "min_block", "max_block", "ready_s", NULL};
  char path[48];
  snprintf(path, sizeof path, "pus[%u]", p);
  if (!cJSON_IsObject(pu))
    return hlb__error(HLB_EPARSE, "%s: %s: must be an object", c->file, path);
  int rc = hlb__json_only_keys(c, pu, path, keys);
  if (!rc) rc = hlb__json_string(c, pu, path, "name", 1, NULL, &m->name[p]);
  if (!rc) rc = read_time(c, pu, path, &m->curve[p]);
  if (!rc) rc = hlb__json_size(c, pu, path, "min_block", 0, 0, MAX_ITEMS, &m->min_block[p]);
  if (!rc) rc = hlb__json_size(c, pu, path, "max_block", 0, 0, MAX_ITEMS, &m->max_block[p]);
  if (!rc) rc = hlb__json_number(c, pu, path, "ready_s", 0, 0.0, 0.0, 1e12, &m->ready[p]);
  if (!rc && m->max_block[p] && m->min_block[p] > m->max_block[p])
    rc = hlb__error(HLB_EPARSE, "%s: %s: min_block %zu is larger than max_block %zu", c->file, path,
                    m->min_block[p], m->max_block[p]);
  for (unsigned q = 0; !rc && q < p; q++)
    if (!strcmp(m->name[q], m->name[p]))
      rc = hlb__error(HLB_EPARSE, "%s: %s.name: '%s' is already the name of pus[%u]", c->file, path,
                      m->name[p], q);
  return rc;
}

static int read_models(const char *file, models *m) {
  static const char *const keys[] = {"items", "pus", NULL};
  hlb__jctx c = {file};
  const cJSON *pus;
  memset(m, 0, sizeof *m);
  int rc = hlb__json_load_file(file, &m->root);
  if (rc) return rc;
  if (!cJSON_IsObject(m->root))
    return hlb__error(HLB_EPARSE, "%s: the top level must be an object", file);
  if ((rc = hlb__json_only_keys(&c, m->root, "", keys))) return rc;
  if ((rc = hlb__json_array(&c, m->root, "", "pus", 1, &pus))) return rc;
  int n = cJSON_GetArraySize(pus);
  if (n <= 0) return hlb__error(HLB_EPARSE, "%s: pus: must list at least one PU", file);
  m->have_items = cJSON_GetObjectItemCaseSensitive(m->root, "items") != NULL;
  if ((rc = hlb__json_size(&c, m->root, "", "items", 0, 0, MAX_ITEMS, &m->items))) return rc;
  if (m->have_items && m->items == 0)
    return hlb__error(HLB_EPARSE, "%s: items: must be >= 1, got 0", file);
  m->n = (unsigned)n;
  m->name = calloc(m->n, sizeof *m->name);
  m->curve = calloc(m->n, sizeof *m->curve);
  m->min_block = calloc(m->n, sizeof *m->min_block);
  m->max_block = calloc(m->n, sizeof *m->max_block);
  m->ready = calloc(m->n, sizeof *m->ready);
  if (!m->name || !m->curve || !m->min_block || !m->max_block || !m->ready)
    return hlb__error(HLB_ENOMEM, "%s: out of memory for %u PUs", file, m->n);
  for (unsigned p = 0; p < m->n && !rc; p++)
    rc = read_pu(&c, cJSON_GetArrayItem(pus, (int)p), p, m);
  return rc;
}

/* Every curve must be usable for the blocks it may get: [1, N] items. */
static int check_curves(const char *file, const models *m, size_t items) {
  for (unsigned p = 0; p < m->n; p++) {
    int rc = hlb_eft_check_curve(&m->curve[p], p, 1.0, (double)items);
    if (rc) return hlb__error_prefix(HLB_EPARSE, "%s: pus[%u].time ('%s'): ", file, p, m->name[p]);
    double t1 = hlb_curve_time(&m->curve[p], 1.0);
    if (t1 < 0)
      return hlb__error(HLB_EPARSE, "%s: pus[%u].time ('%s'): time of 1 item is negative (%g)",
                        file, p, m->name[p], t1);
  }
  return 0;
}

static double finish_of(const models *m, unsigned p, size_t x) {
  return m->ready[p] + hlb_curve_time(&m->curve[p], (double)x);
}

static void print_result(const models *m, const size_t *x, double makespan, int json) {
  if (json) {
    printf("{\"makespan_s\": %.17g, \"pus\": [", makespan);
    for (unsigned p = 0; p < m->n; p++) {
      printf("%s{\"name\": ", p ? ", " : "");
      hlb_cli_json_string(m->name[p]);
      printf(", \"items\": %zu, \"finish_s\": %.17g}", x[p], finish_of(m, p, x[p]));
    }
    printf("]}\n");
    return;
  }
  printf("%-16s %16s %16s\n", "pu", "items", "finish_s");
  for (unsigned p = 0; p < m->n; p++)
    printf("%-16s %16zu %16.9g\n", m->name[p], x[p], finish_of(m, p, x[p]));
  printf("makespan_s %.9g\n", makespan);
}

static int solve_and_print(const part_args *a, const models *m, size_t items) {
  size_t *x = calloc(m->n, sizeof *x);
  if (!x) return hlb_cli_lib_error("partition", HLB_ENOMEM);
  hlb_eft_int_options opt = {a->granularity, m->min_block, m->max_block};
  double makespan = 0.0;
  int rc = hlb_eft_solve_int(m->curve, m->ready, m->n, items, &opt, x, &makespan);
  if (!rc) print_result(m, x, makespan, a->json);
  free(x);
  return rc ? hlb_cli_lib_error("partition", rc) : HLB_EXIT_OK;
}

int hlb_cmd_partition(int argc, char **argv) {
  part_args a;
  hlb_cli_args cli;
  int rc = parse_args(argc, argv, &a, &cli);
  hlb_cli_args_free(&cli);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  models m;
  rc = read_models(a.file, &m);
  size_t items = a.have_items ? a.items : m.items;
  if (!rc && !a.have_items && !m.have_items) {
    free_models(&m);
    return hlb_cli_usage_error("partition", "missing --items N (the file has no \"items\")");
  }
  if (!rc) rc = check_curves(a.file, &m, items);
  int status = rc ? hlb_cli_lib_error("partition", rc) : solve_and_print(&a, &m, items);
  free_models(&m);
  return status;
}
