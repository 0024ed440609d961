/* The run's facts, when the trace carries them: a top-level "hlb" object holding what the
 * command printed with --json (hlb run: app, size, items, policy, params, pus[] with device,
 * rank, released/retired and the reason, the fitted model; hlb sim: cluster, items, seed,
 * lower_bound_s, policies[]). Chrome trace viewers ignore unknown top-level keys. Everything
 * here is optional: a trace without facts gives a page with what the blocks alone show. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "report/report.h"

static const cJSON *item(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *text(const cJSON *o, const char *k) {
  const cJSON *v = item(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double number(const cJSON *o, const char *k) {
  const cJSON *v = item(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* {"terms": {"u": c, ...}, "scale", "r2", "transfer": {"per_item_s", "fixed_s"}} */
static int model(const cJSON *m, hlb__rpu *p) {
  if (!cJSON_IsObject(m)) return 0;
  hlb_curve c = {.scale = number(m, "scale")};
  if (!(c.scale > 0)) return 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, item(m, "terms")) {
    for (int k = 0; k < HLB_TERM_COUNT; k++)
      if (cJSON_IsNumber(t) && !strcmp(t->string, hlb_term_name((hlb_term)k))) {
        c.coef[k] = t->valuedouble;
        p->terms |= 1u << k;
      }
  }
  const cJSON *g = item(m, "transfer");
  c.transfer_per_item = isfinite(number(g, "per_item_s")) ? number(g, "per_item_s") : 0;
  c.transfer_fixed = isfinite(number(g, "fixed_s")) ? number(g, "fixed_s") : 0;
  p->curve = c;
  p->r2 = number(m, "r2");
  p->fitted = p->fit_from_run = 1;
  return 0;
}

static void exec_pu(const cJSON *f, hlb__rpu *p, int *max_rank) {
  const char *dev = text(f, "device");
  if (dev) snprintf(p->device, sizeof p->device, "%s", dev);
  double rank = number(f, "rank");
  if (rank >= 0 && rank < 1e9) { /* beyond an int's range the cast is undefined */
    snprintf(p->where, sizeof p->where, "rank %.0f", rank);
    if ((int)rank > *max_rank) *max_rank = (int)rank;
  }
  const char *why = text(f, "release_reason");
  if (cJSON_IsTrue(item(f, "released")))
    snprintf(p->stopped, sizeof p->stopped, "%s", why ? why : "released");
  else if (cJSON_IsTrue(item(f, "retired")))
    snprintf(p->stopped, sizeof p->stopped, "retired: %s",
             text(f, "failure") ? text(f, "failure") : "too many failed blocks");
  p->stopped_known = 1;
  model(item(f, "model"), p);
}

static void exec_facts(const cJSON *facts, hlb__report *r) {
  hlb__rrun *run = &r->runs[0];
  run->policy_s = number(facts, "policy_s");
  const char *params = text(facts, "params");
  if (params) snprintf(run->params, sizeof run->params, "%s", params);
  snprintf(r->what, sizeof r->what, "app %s, size %.0f, %.0f items",
           text(facts, "app") ? text(facts, "app") : "?", number(facts, "size"),
           number(facts, "items"));
  const cJSON *pus = item(facts, "pus");
  int max_rank = -1;
  /* The --json lists the PUs in the order the trace numbers them (the run's PU index). */
  if (cJSON_GetArraySize(pus) == (int)run->n_pus) {
    unsigned i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, pus) exec_pu(f, &run->pu[i++], &max_rank);
  }
  r->ranks = max_rank + 1;
}

static void sim_facts(const cJSON *facts, hlb__report *r) {
  double bound = number(facts, "lower_bound_s");
  const char *params = text(facts, "params");
  for (unsigned i = 0; i < r->n_runs; i++) {
    r->runs[i].bound_s = bound;
    if (params) snprintf(r->runs[i].params, sizeof r->runs[i].params, "%s", params);
  }
  const char *cluster = text(facts, "cluster");
  snprintf(r->what, sizeof r->what, "cluster %s, %.0f items, seed %.0f", cluster ? cluster : "?",
           number(facts, "items"), number(facts, "seed"));
}

int hlb__report_read_facts(const char *path, const cJSON *facts, hlb__report *r) {
  if (!facts) return 0;
  if (!cJSON_IsObject(facts)) {
    fprintf(stderr, "hlb report: %s: \"hlb\" must be an object (the run's --json), got %s\n", path,
            cJSON_IsArray(facts) ? "an array" : "a scalar");
    return HLB_EXIT_USAGE;
  }
  r->has_facts = 1;
  if (r->kind == HLB__REPORT_EXEC)
    exec_facts(facts, r);
  else
    sim_facts(facts, r);
  return 0;
}
