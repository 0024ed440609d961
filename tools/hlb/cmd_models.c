/* hlb models list|show|clear: the samples that runs stored per host, codelet and PU
 * (docs/models.md), through the public API of include/hlb/models.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/error.h"
#include "hlb/model.h"
#include "hlb/models.h"

const hlb_cli_command hlb_cmd_models_spec = {
    .name = "models",
    .operands = "list|show|clear",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "list, show or clear the models runs stored (docs/models.md)",
    .about = "hlb run stores each PU's block samples per host and codelet (an app and its data "
             "sizes) under the model directory, and starts later runs from them. list: one line "
             "per file, with the PUs and samples, and why a file is ignored (corrupt, another "
             "version, another host). show: per PU the samples' block sizes and the model "
             "fitted to them, and a device that a run released or gave the cpu PU's cores. clear: "
             "removes the files "
             "(--codelet NAME: only that codelet's), so the next run trains from nothing."};

/* The model fitted to a PU's stored samples, as "F(x) = ..., R2"; "" when it cannot be. */
static void fit_text(const hlb_stored_pu *p, char *out, size_t cap, double *typical_s,
                     double *typical_x) {
  *out = '\0';
  *typical_s = NAN;
  *typical_x = 0;
  double x_max = 0;
  for (size_t k = 0; k < p->n; k++)
    x_max = fmax(x_max, p->items[k]);
  hlb_model *m = NULL;
  if (!(x_max >= 1) || hlb_model_create(x_max, NULL, &m)) return;
  for (size_t k = 0; k < p->n; k++)
    hlb_model_add(m, p->items[k], p->compute_s[k], p->transfer_s[k]);
  hlb_curve c;
  if (hlb_model_fit(m, x_max) == 0 && hlb_model_curve(m, &c) == 0) {
    int at = snprintf(out, cap, "F(x) =");
    for (int t = 0; t < HLB_TERM_COUNT && at > 0 && (size_t)at < cap; t++)
      if (c.coef[t] != 0)
        at += snprintf(out + at, cap - (size_t)at, " %+.3g %s", c.coef[t],
                       hlb_term_name((hlb_term)t));
    if (at > 0 && (size_t)at < cap)
      snprintf(out + at, cap - (size_t)at, " (u = x / %.4g), R2 %.3f", c.scale, hlb_model_r2(m));
    *typical_x = x_max;
    *typical_s = hlb_curve_time(&c, x_max);
  }
  hlb_clear_error();
  hlb_model_destroy(m);
}

static size_t samples_of(const hlb_stored_models *f) {
  size_t n = 0;
  for (unsigned p = 0; p < f->n_pus; p++)
    n += f->pus[p].n;
  return n;
}

static void print_list(const hlb_stored_models *list, size_t n, const char *dir, int show) {
  char host[17], desc[256];
  hlb_models_host(host, desc, sizeof desc);
  printf("models in %s/%s (this host: %s)\n", dir, host, desc);
  if (!n) printf("  none: the next run trains from its own blocks\n");
  for (size_t i = 0; i < n; i++) {
    const hlb_stored_models *f = &list[i];
    if (f->problem[0]) {
      printf("  %-28s ignored by runs: %s\n", f->key, f->problem);
      continue;
    }
    printf("  %-28s %u PU%s, %zu samples", f->key, f->n_pus, f->n_pus == 1 ? "" : "s",
           samples_of(f));
    if (f->item_cost_slices)
      printf(", item costs of %zu items (%u slices, %s)", f->item_cost_items, f->item_cost_slices,
             f->item_cost_trusted ? "trusted" : "on trial");
    printf("\n");
    for (unsigned p = 0; show && p < f->n_pus; p++) {
      const hlb_stored_pu *u = &f->pus[p];
      char fit[512];
      double ts, tx;
      fit_text(u, fit, sizeof fit, &ts, &tx);
      printf("    %s: %zu samples", u->pu, u->n);
      if (fit[0]) printf("; %s; a block of %.0f items takes %.4g s", fit, tx, ts);
      printf("\n");
      if (u->released[0]) printf("      released by a run: %s\n", u->released);
      if (u->takes_cores[0])
        printf("      given the cpu PU's cores by a run: %s\n", u->takes_cores);
    }
  }
}

static void print_json(const hlb_stored_models *list, size_t n, const char *dir) {
  char host[17], desc[256];
  hlb_models_host(host, desc, sizeof desc);
  cJSON *o = cJSON_CreateObject(), *files = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "dir", dir);
  cJSON_AddStringToObject(o, "host", host);
  cJSON_AddStringToObject(o, "host_desc", desc);
  cJSON_AddItemToObject(o, "files", files);
  for (size_t i = 0; i < n; i++) {
    cJSON *f = cJSON_CreateObject(), *pus = cJSON_CreateArray();
    cJSON_AddItemToArray(files, f);
    cJSON_AddStringToObject(f, "path", list[i].path);
    cJSON_AddStringToObject(f, "key", list[i].key);
    cJSON_AddStringToObject(f, "codelet", list[i].codelet);
    if (list[i].problem[0]) cJSON_AddStringToObject(f, "problem", list[i].problem);
    if (list[i].item_cost_slices) {
      cJSON_AddNumberToObject(f, "item_cost_items", (double)list[i].item_cost_items);
      cJSON_AddNumberToObject(f, "item_cost_slices", list[i].item_cost_slices);
      cJSON_AddBoolToObject(f, "item_cost_trusted", list[i].item_cost_trusted);
    }
    cJSON_AddItemToObject(f, "pus", pus);
    for (unsigned p = 0; p < list[i].n_pus; p++) {
      cJSON *u = cJSON_CreateObject();
      cJSON_AddItemToArray(pus, u);
      cJSON_AddStringToObject(u, "pu", list[i].pus[p].pu);
      cJSON_AddNumberToObject(u, "samples", (double)list[i].pus[p].n);
      if (list[i].pus[p].released[0])
        cJSON_AddStringToObject(u, "released", list[i].pus[p].released);
      if (list[i].pus[p].takes_cores[0])
        cJSON_AddStringToObject(u, "takes_cores", list[i].pus[p].takes_cores);
    }
  }
  char *text = cJSON_Print(o);
  puts(text);
  free(text);
  cJSON_Delete(o);
}

int hlb_cmd_models(int argc, char **argv) {
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_models_spec, argc, argv, &cli);
  if (rc) {
    hlb_cli_args_free(&cli);
    return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  }
  const char *what = cli.operand[0], *codelet = hlb_cli_text(&cli, "codelet");
  int json = hlb_cli_flag(&cli, "json");
  char dir[768];
  if (strcmp(what, "list") && strcmp(what, "show") && strcmp(what, "clear")) {
    rc = hlb_cli_usage_error("models", "expected list, show or clear, got '%s'", what);
  } else if (hlb_models_dir(hlb_cli_text(&cli, "model-dir"), dir, sizeof dir)) {
    rc = hlb_cli_lib_error("models", HLB_EINVAL);
  } else if (!strcmp(what, "clear")) {
    size_t removed = 0;
    rc = hlb_models_clear(dir, codelet, &removed) ? hlb_cli_lib_error("models", HLB_EIO) : 0;
    if (!rc) printf("removed %zu model file%s from %s\n", removed, removed == 1 ? "" : "s", dir);
  } else {
    hlb_stored_models *list = NULL;
    size_t n = 0;
    rc = hlb_models_list(dir, &list, &n) ? hlb_cli_lib_error("models", HLB_EIO) : 0;
    size_t kept = 0; /* --codelet: only that codelet's files */
    for (size_t i = 0; !rc && i < n; i++)
      if (!codelet || !strcmp(list[i].codelet, codelet)) {
        hlb_stored_models t = list[kept];
        list[kept++] = list[i];
        list[i] = t;
      }
    if (!rc && json) print_json(list, kept, dir);
    if (!rc && !json) print_list(list, kept, dir, !strcmp(what, "show"));
    hlb_models_list_free(list, n);
  }
  hlb_cli_args_free(&cli);
  return rc;
}
