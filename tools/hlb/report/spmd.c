/* The page of an SPMD trace (HLB_SPMD_TRACE, src/mpi/spmd_trace.c): per sampling interval what
 * every rank measured, the repartition policy's decision with its predicted gain, and each
 * redistribution with the rows it moved and its cost. Read from the trace's "hlb_spmd" object,
 * checked value by value, then drawn as one section with the same look as a run's page. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "report/report.h"

/* An interval whose imbalance is at least this and in which the policy kept the split is
 * named in "where the time went": 10 % is where FLEX-MPI's own examples start to rebalance. */
#define KEPT_IMBALANCE 0.10
/* FLEX-MPI's TH1 (section 3.2): a rank whose CPU time is below 95 % of its wall time shared
 * its core with other processes. */
#define SHARED_CPU_SHARE 0.95
/* Findings below this share of the time in the windows are left out (the tables have them). */
#define MINOR_SHARE 0.01

__attribute__((format(printf, 2, 3))) static int bad(const char *path, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hlb report: %s: hlb_spmd.", path);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return HLB_EXIT_USAGE;
}

static const char *type_of(const cJSON *v) {
  return !v                 ? "nothing"
         : cJSON_IsNumber(v) ? "a number"
         : cJSON_IsString(v) ? "a string"
         : cJSON_IsArray(v)  ? "an array"
         : cJSON_IsObject(v) ? "an object"
                             : "another JSON value";
}

/* A number >= 0 (null where the writer had no finite value: read as NaN, allowed if `nan_ok`). */
static int number(const char *path, const cJSON *o, const char *key, const char *where, int nan_ok,
                  double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (nan_ok && cJSON_IsNull(v)) return *out = NAN, 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))
    return cJSON_IsNumber(v)
               ? bad(path, "%s%s: must be a number >= 0, got %g", where, key, v->valuedouble)
               : bad(path, "%s%s: must be a number >= 0, got %s", where, key, type_of(v));
  *out = v->valuedouble;
  return 0;
}

static void string(const cJSON *o, const char *key, char *out, size_t size) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  snprintf(out, size, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static int rank_array(const char *path, const cJSON *iv, size_t k, const char *key, unsigned ranks,
                      double *out) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(iv, key);
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != (int)ranks)
    return bad(path, "intervals[%zu].%s: must be an array of %u numbers (one per rank), got %s%s",
               k, key, ranks, type_of(a), cJSON_IsArray(a) ? " of another length" : "");
  unsigned r = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, a) {
    if (cJSON_IsNull(v)) {
      out[r++] = NAN;
      continue;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))
      return cJSON_IsNumber(v)
                 ? bad(path, "intervals[%zu].%s[%u]: must be a number >= 0, got %g", k, key, r,
                       v->valuedouble)
                 : bad(path, "intervals[%zu].%s[%u]: must be a number >= 0, got %s", k, key, r,
                       type_of(v));
    out[r++] = v->valuedouble;
  }
  return 0;
}

static int flag(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble != 0 : cJSON_IsTrue(v);
}

static int interval(const char *path, const cJSON *o, size_t k, hlb__rspmd *s) {
  hlb__rspmd_interval *iv = &s->iv[k];
  char where[48];
  snprintf(where, sizeof where, "intervals[%zu].", k);
  if (!cJSON_IsObject(o)) return bad(path, "intervals[%zu]: must be an object, got %s", k, type_of(o));
  int rc = number(path, o, "iteration", where, 0, &iv->iteration) ||
           number(path, o, "t_start_s", where, 0, &iv->t_start_s) ||
           number(path, o, "t_end_s", where, 0, &iv->t_end_s) ||
           number(path, o, "imbalance", where, 1, &iv->imbalance) ||
           number(path, o, "predicted_gain_s", where, 1, &iv->gain_s);
  if (rc) return HLB_EXIT_USAGE;
  if (iv->t_end_s < iv->t_start_s)
    return bad(path, "intervals[%zu]: t_end_s %g is before t_start_s %g", k, iv->t_end_s,
               iv->t_start_s);
  iv->rebalance = flag(o, "rebalance");
  iv->dedicated = flag(o, "dedicated");
  iv->long_term = flag(o, "long_term_load");
  iv->redistributed = cJSON_GetObjectItemCaseSensitive(o, "rows_moved") != NULL;
  if (iv->redistributed && (number(path, o, "rows_moved", where, 0, &iv->rows_moved) ||
                            number(path, o, "redistribute_s", where, 1, &iv->redistribute_s)))
    return HLB_EXIT_USAGE;
  double *at = s->values + k * 5 * (size_t)s->ranks;
  iv->rows = at;
  iv->real_s = at + s->ranks;
  iv->cpu_s = at + 2 * s->ranks;
  iv->comm_s = at + 3 * s->ranks;
  iv->work = at + 4 * s->ranks;
  static const char *const keys[] = {"rows", "real_s", "cpu_s", "comm_s", "work"};
  for (unsigned f = 0; f < 5; f++)
    if (rank_array(path, o, k, keys[f], s->ranks, at + f * s->ranks)) return HLB_EXIT_USAGE;
  return 0;
}

/* Compute time of rank r in an interval: its time in the windows less its time inside MPI
 * (which includes waiting for the others). */
static double compute_s(const hlb__rspmd_interval *iv, unsigned r) {
  double c = iv->real_s[r] - (isfinite(iv->comm_s[r]) ? iv->comm_s[r] : 0);
  return c > 0 ? c : 0;
}

static void analyze(hlb__rspmd *s) {
  for (size_t k = 0; k < s->n; k++) {
    hlb__rspmd_interval *iv = &s->iv[k];
    double most = 0, sum = 0;
    for (unsigned r = 0; r < s->ranks; r++) {
      double c = compute_s(iv, r);
      sum += c;
      if (c > most) most = c, iv->slowest = r;
    }
    iv->waited_s = most - sum / s->ranks;
  }
}

int hlb__report_load_spmd(const char *path, const cJSON *o, hlb__report *r) {
  if (!cJSON_IsObject(o)) return bad(path, " must be an object, got %s", type_of(o));
  const cJSON *ivs = cJSON_GetObjectItemCaseSensitive(o, "intervals");
  double ranks = 0, version = 0;
  if (number(path, o, "version", "", 0, &version) || number(path, o, "ranks", "", 0, &ranks))
    return HLB_EXIT_USAGE;
  if (version != 1) return bad(path, "version: this hlb reads version 1, got %g", version);
  if (!(ranks >= 1 && ranks <= 1 << 20 && ranks == floor(ranks)))
    return bad(path, "ranks: must be a whole number in [1, 2^20], got %g", ranks);
  if (!cJSON_IsArray(ivs) || cJSON_GetArraySize(ivs) == 0)
    return bad(path, "intervals: must be an array of at least one interval, got %s%s",
               type_of(ivs), cJSON_IsArray(ivs) ? " that is empty (the code ran fewer iterations "
                                                  "than one sampling interval)"
                                                : "");
  hlb__rspmd *s = calloc(1, sizeof *s);
  if (!s) return HLB_EXIT_FAIL;
  r->spmd = s;
  r->kind = HLB__REPORT_SPMD;
  s->ranks = (unsigned)ranks;
  s->n = (size_t)cJSON_GetArraySize(ivs);
  s->iv = calloc(s->n, sizeof *s->iv);
  s->values = calloc(s->n * 5 * (size_t)s->ranks, sizeof *s->values);
  if (!s->iv || !s->values) return HLB_EXIT_FAIL;
  string(o, "policy", s->policy, sizeof s->policy);
  string(o, "params", s->params, sizeof s->params);
  string(o, "work", s->work_unit, sizeof s->work_unit);
  if (number(path, o, "rows", "", 0, &s->rows) ||
      number(path, o, "iterations", "", 0, &s->iterations) ||
      number(path, o, "interval", "", 0, &s->interval))
    return HLB_EXIT_USAGE;
  size_t k = 0;
  const cJSON *iv;
  cJSON_ArrayForEach(iv, ivs) {
    if (interval(path, iv, k, s)) return HLB_EXIT_USAGE;
    k++;
  }
  snprintf(r->title, sizeof r->title, "hlb spmd: policy %s", s->policy);
  snprintf(r->what, sizeof r->what, "an SPMD code: %.0f rows over %u ranks, %.0f iterations",
           s->rows, s->ranks, s->iterations);
  r->ranks = (int)s->ranks;
  analyze(s);
  return 0;
}

/* ---- where the time went ---------------------------------------------------------------- */

typedef struct list {
  hlb__finding *f;
  size_t n, max;
} list;

__attribute__((format(printf, 6, 7))) static void add(list *L, const char *key, const char *rank,
                                                      double cost_s, const char *change,
                                                      const char *fmt, ...) {
  if (L->n == L->max) return;
  hlb__finding *f = &L->f[L->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->key, sizeof f->key, "%s", key);
  snprintf(f->pu, sizeof f->pu, "%s", rank ? rank : "");
  snprintf(f->change, sizeof f->change, "%s", change);
  f->cost_s = cost_s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->text, sizeof f->text, fmt, ap);
  va_end(ap);
}

static double windows_s(const hlb__rspmd *s) {
  double t = 0;
  for (size_t k = 0; k < s->n; k++)
    for (unsigned r = 0; r < s->ranks; r++)
      t += s->iv[k].real_s[r];
  return t;
}

static void imbalance_finding(const hlb__rspmd *s, list *L, double whole) {
  double waited = 0;
  unsigned *slowest = calloc(s->ranks, sizeof *slowest), worst = 0;
  if (!slowest) return;
  for (size_t k = 0; k < s->n; k++) {
    waited += s->iv[k].waited_s;
    if (++slowest[s->iv[k].slowest] > slowest[worst]) worst = s->iv[k].slowest;
  }
  char rank[32];
  snprintf(rank, sizeof rank, "rank %u", worst);
  /* Every rank waits for the slowest at the next exchange: the loss is per rank, so compare
   * it with the mean time a rank spent in the windows. */
  double per_rank = whole / s->ranks;
  if (waited > MINOR_SHARE * per_rank)
    add(L, "imbalance", rank, waited,
        "a policy that reacts sooner: a lower threshold or persist (hlb policies NAME; "
        "HLB_REPART_POLICY), or a shorter sampling interval",
        "The ranks waited %.3g s for the slowest one (%.1f %% of a rank's %.3g s in the "
        "windows); %s was the slowest in %u of %zu intervals.",
        waited, 100 * waited / per_rank, per_rank, rank, slowest[worst], s->n);
  free(slowest);
}

static void kept_finding(const hlb__rspmd *s, list *L) {
  size_t kept = 0;
  double worst = 0, cost = 0;
  for (size_t k = 0; k < s->n; k++) {
    const hlb__rspmd_interval *iv = &s->iv[k];
    if (iv->rebalance || !(iv->imbalance >= KEPT_IMBALANCE)) continue;
    kept++;
    cost += iv->waited_s;
    worst = fmax(worst, iv->imbalance);
  }
  if (!kept) return;
  add(L, "kept", "", cost,
      "if the imbalance lasts, lower the policy's threshold; if it comes and goes, keeping the "
      "split was right (burst load is told from long-term load, FLEX-MPI section 3.2)",
      "The policy kept the split in %zu of %zu intervals whose imbalance was %.0f %% or more "
      "(up to %.0f %%); the ranks waited %.3g s in them.",
      kept, s->n, 100 * KEPT_IMBALANCE, 100 * worst, cost);
}

/* FLEX-MPI's TH1 per rank: one line for all ranks that shared their core, naming the one that
 * lost the most (on an oversubscribed node every rank does, and one line says it). */
static void shared_finding(const hlb__rspmd *s, list *L) {
  unsigned ranks = 0, worst = 0;
  size_t worst_shared = 0;
  double lost = 0, worst_lost = -1, lowest = 1;
  for (unsigned r = 0; r < s->ranks; r++) {
    size_t shared = 0;
    double mine = 0;
    for (size_t k = 0; k < s->n; k++) {
      const hlb__rspmd_interval *iv = &s->iv[k];
      if (!(iv->real_s[r] > 0) || !isfinite(iv->cpu_s[r])) continue;
      double share = iv->cpu_s[r] / iv->real_s[r];
      if (share >= SHARED_CPU_SHARE) continue;
      shared++;
      lowest = fmin(lowest, share);
      mine += iv->real_s[r] - iv->cpu_s[r];
    }
    if (!shared) continue;
    ranks++;
    lost += mine;
    if (mine > worst_lost) worst_lost = mine, worst = r, worst_shared = shared;
  }
  if (!ranks) return;
  char rank[32];
  snprintf(rank, sizeof rank, "rank %u", worst);
  add(L, "shared", rank, worst_lost,
      "dedicated cores for the job, or a policy that moves rows off a loaded rank (hlb, flex)",
      "%u of %u ranks shared their core with other processes (CPU time below FLEX-MPI's TH1, "
      "95 %% of wall time, down to %.0f %%); %s lost the most, %.3g s off the CPU in %zu of %zu "
      "intervals (%.3g s over all ranks).",
      ranks, s->ranks, 100 * lowest, rank, worst_lost, worst_shared, s->n, lost);
}

static void redistribution_finding(const hlb__rspmd *s, list *L) {
  size_t moves = 0;
  double rows = 0, cost = 0, gain = 0;
  for (size_t k = 0; k < s->n; k++) {
    const hlb__rspmd_interval *iv = &s->iv[k];
    if (!iv->redistributed) continue;
    moves++;
    rows += iv->rows_moved;
    cost += isfinite(iv->redistribute_s) ? iv->redistribute_s : 0;
    gain += isfinite(iv->gain_s) ? iv->gain_s : 0;
  }
  if (!moves) {
    add(L, "redistribute", "", 0, "", "No redistribution: the split stayed as it started.");
    return;
  }
  add(L, "redistribute", "", cost,
      cost > gain && gain > 0 ? "the moves cost more than the policy expected to gain: raise its "
                                "threshold or persist, or register fewer arrays"
                              : "",
      "%zu redistribution%s moved %.0f rows and cost %.3g s; the policy predicted %.3g s of gain "
      "from them.",
      moves, moves == 1 ? "" : "s", rows, cost, gain);
}

static void comm_finding(const hlb__rspmd *s, list *L, double whole) {
  double comm = 0;
  for (size_t k = 0; k < s->n; k++)
    for (unsigned r = 0; r < s->ranks; r++)
      comm += isfinite(s->iv[k].comm_s[r]) ? s->iv[k].comm_s[r] : 0;
  if (!(comm > MINOR_SHARE * whole)) return;
  add(L, "comm", "", comm / s->ranks,
      "overlap the exchanges with computation; a better split shortens only the waiting part",
      "%.1f %% of the time in the windows was inside MPI calls (%.3g s per rank), waiting for "
      "slower ranks included.",
      100 * comm / whole, comm / s->ranks);
}

static int by_cost(const void *a, const void *b) {
  double x = ((const hlb__finding *)a)->cost_s, y = ((const hlb__finding *)b)->cost_s;
  return (x < y) - (x > y);
}

size_t hlb__report_spmd_findings(const hlb__rspmd *s, hlb__finding *out, size_t max) {
  list L = {out, 0, max};
  double whole = windows_s(s);
  imbalance_finding(s, &L, whole);
  kept_finding(s, &L);
  shared_finding(s, &L);
  redistribution_finding(s, &L);
  comm_finding(s, &L, whole);
  qsort(out, L.n, sizeof *out, by_cost);
  return L.n;
}

/* ---- the page --------------------------------------------------------------------------- */

#define esc hlb__report_esc
#define json_num hlb__report_json_num

static void header(FILE *f, const hlb__report *r) {
  const hlb__rspmd *s = r->spmd;
  fputs("<header><h1>hlb report: SPMD run</h1><dl class='facts' id='what'><dt>trace</dt><dd>", f);
  esc(f, r->source);
  fputs("</dd><dt>what ran</dt><dd>", f);
  esc(f, r->what);
  fputs("</dd><dt>repartition policy</dt><dd>", f);
  esc(f, s->policy);
  if (s->params[0]) {
    fputs(" (", f);
    esc(f, s->params);
    fputs(")", f);
  }
  fprintf(f,
          "</dd><dt>ranks</dt><dd data-ranks='%u'>%u</dd><dt>sampling</dt><dd>%zu intervals of "
          "%.0f iterations; work counted as ",
          s->ranks, s->ranks, s->n, s->interval);
  esc(f, s->work_unit[0] ? s->work_unit : "unknown units");
  fputs("</dd></dl></header>\n", f);
}

static void facts(FILE *f, const hlb__rspmd *s) {
  double waited = 0, moved = 0, cost = 0;
  size_t moves = 0;
  for (size_t k = 0; k < s->n; k++) {
    waited += s->iv[k].waited_s;
    if (!s->iv[k].redistributed) continue;
    moves++;
    moved += s->iv[k].rows_moved;
    cost += isfinite(s->iv[k].redistribute_s) ? s->iv[k].redistribute_s : 0;
  }
  double span = s->iv[s->n - 1].t_end_s;
  fprintf(f,
          "<dl class='facts'><dt>wall time</dt><dd class='makespan' data-s='%.9g'>%.4g s (rank "
          "0, from hlb_spmd_create to the last interval)</dd><dt>waiting for the slowest rank</dt>"
          "<dd class='waited' data-s='%.9g'>%.4g s, %.1f %% of the wall time</dd>"
          "<dt>redistributions</dt><dd class='moves' data-moves='%zu' data-rows='%.0f'>%zu, "
          "%.0f rows moved, %.4g s</dd></dl>\n",
          span, span, waited, waited, span > 0 ? 100 * waited / span : 0, moves, moved, moves,
          moved, cost);
}

static double sum_ranks(const hlb__rspmd *s, unsigned r, size_t field_off) {
  double t = 0;
  for (size_t k = 0; k < s->n; k++) {
    const double *a = *(double *const *)((const char *)&s->iv[k] + field_off);
    t += isfinite(a[r]) ? a[r] : 0;
  }
  return t;
}

static void rank_table(FILE *f, const hlb__rspmd *s) {
  fputs("<h3>Ranks</h3><table class='pus'><thead><tr><th>rank</th><th>rows at the start</th>"
        "<th>rows at the end</th><th>time in the windows s</th><th>compute s</th>"
        "<th>inside MPI s</th><th>CPU / wall</th><th>slowest in</th><th>work per compute s</th>"
        "</tr></thead><tbody>",
        f);
  const hlb__rspmd_interval *last = &s->iv[s->n - 1];
  for (unsigned r = 0; r < s->ranks; r++) {
    double real = sum_ranks(s, r, offsetof(hlb__rspmd_interval, real_s));
    double cpu = sum_ranks(s, r, offsetof(hlb__rspmd_interval, cpu_s));
    double comm = sum_ranks(s, r, offsetof(hlb__rspmd_interval, comm_s));
    double work = sum_ranks(s, r, offsetof(hlb__rspmd_interval, work));
    double compute = 0;
    size_t slowest = 0;
    for (size_t k = 0; k < s->n; k++) {
      compute += compute_s(&s->iv[k], r);
      slowest += s->iv[k].slowest == r;
    }
    /* The rows a rank holds after the last interval: its last count, changed by a
     * redistribution at the very end (not measured in any interval, so not in the trace). */
    fprintf(f,
            "<tr data-pu='rank %u' data-items='%.0f' data-blocks='%zu'><td><span class='sw' "
            "style='background:%s'></span>rank %u</td><td>%.0f</td><td class='items'>%.0f%s</td>"
            "<td>%.4g</td><td>%.4g</td><td>%.4g</td><td>%.0f %%</td><td>%zu of %zu intervals</td>"
            "<td>%.4g</td></tr>",
            r, last->rows[r], s->n, hlb__report_color(r), r, s->iv[0].rows[r], last->rows[r],
            last->redistributed ? " (before the last move)" : "", real, compute, comm,
            real > 0 ? 100 * cpu / real : 0, slowest, s->n, compute > 0 ? work / compute : 0);
  }
  fputs("</tbody></table>\n", f);
}

static void decisions_table(FILE *f, const hlb__rspmd *s) {
  fputs("<h3>Redistributions</h3>", f);
  size_t shown = 0;
  for (size_t k = 0; k < s->n; k++) {
    const hlb__rspmd_interval *iv = &s->iv[k];
    if (!iv->redistributed) continue;
    if (shown++ == 0)
      fputs("<table class='pus decisions'><thead><tr><th>interval</th><th>after iteration</th>"
            "<th>imbalance</th><th>predicted gain s</th><th>rows moved</th><th>cost s</th>"
            "<th>long-term load</th></tr></thead><tbody>",
            f);
    fprintf(f,
            "<tr class='move'><td>%zu</td><td>%.0f</td><td>%.1f %%</td><td>%.4g</td><td>%.0f</td>"
            "<td>%.4g</td><td>%s</td></tr>",
            k, iv->iteration, 100 * iv->imbalance, iv->gain_s, iv->rows_moved, iv->redistribute_s,
            iv->long_term ? "yes" : "no");
  }
  fputs(shown ? "</tbody></table>\n" : "<p class='note'>None: the split stayed as it started.</p>\n",
        f);
}

static const char *const charts[][2] = {
    {"imbalance", "Imbalance per sampling interval ((slowest - fastest) / slowest compute time, "
                  "as the policy saw it) and the intervals after which rows moved (triangles)."},
    {"ranktime", "Compute time per rank in each interval (time in the windows less time inside "
                 "MPI): lines apart are an imbalance; a line that jumps is a rank that got "
                 "slower."},
    {"rows", "Rows per rank in each interval: the split the policy chose."},
    {"moves", "Each redistribution: the rows it moved (bars) and what it cost."}};

static void array(FILE *f, const double *a, unsigned n) {
  fputc('[', f);
  for (unsigned i = 0; i < n; i++) {
    if (i) fputc(',', f);
    json_num(f, a[i]);
  }
  fputc(']', f);
}

static void data(FILE *f, const hlb__rspmd *s, double *c) {
  fputs("<script id='hlb-data' type='application/json'>{\"kind\":\"spmd\",\"runs\":[{\"ranks\":[",
        f);
  for (unsigned r = 0; r < s->ranks; r++)
    fprintf(f, "%s{\"name\":\"rank %u\",\"color\":\"%s\"}", r ? "," : "", r, hlb__report_color(r));
  fputs("],\"intervals\":[", f);
  for (size_t k = 0; k < s->n; k++) {
    const hlb__rspmd_interval *iv = &s->iv[k];
    fprintf(f, "%s{\"it\":%.0f,\"t\":", k ? "," : "", iv->iteration);
    json_num(f, iv->t_end_s);
    fputs(",\"imb\":", f);
    json_num(f, iv->imbalance);
    fputs(",\"gain\":", f);
    json_num(f, iv->gain_s);
    fprintf(f, ",\"rebalance\":%d,\"moved\":", iv->rebalance);
    json_num(f, iv->redistributed ? iv->rows_moved : NAN);
    fputs(",\"cost\":", f);
    json_num(f, iv->redistributed ? iv->redistribute_s : NAN);
    fputs(",\"rows\":", f);
    array(f, iv->rows, s->ranks);
    for (unsigned r = 0; r < s->ranks; r++)
      c[r] = compute_s(iv, r);
    fputs(",\"compute\":", f);
    array(f, c, s->ranks);
    fputs(",\"comm\":", f);
    array(f, iv->comm_s, s->ranks);
    fputc('}', f);
  }
  fputs("]}]}</script>\n", f);
}

int hlb__report_write_spmd_html(const hlb__report *r, FILE *f) {
  const hlb__rspmd *s = r->spmd;
  fputs("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>hlb report: ", f);
  esc(f, r->source);
  fputs("</title><style>", f);
  fputs(hlb__report_page_css, f);
  fputs("</style></head><body>\n", f);
  header(f, r);
  fputs("<section class='run' id='run-0' data-run='", f);
  esc(f, s->policy);
  fputs("' data-index='0'><h2>Repartition policy ", f);
  esc(f, s->policy);
  fputs("</h2>", f);
  facts(f, s);
  hlb__finding list[16];
  hlb__report_findings_html(f, list, hlb__report_spmd_findings(s, list, 16));
  rank_table(f, s);
  decisions_table(f, s);
  for (size_t c = 0; c < sizeof charts / sizeof charts[0]; c++) {
    fprintf(f, "<figure class='chart' data-chart='%s'><figcaption>", charts[c][0]);
    esc(f, charts[c][1]);
    fputs("</figcaption><div class='box'><canvas></canvas></div><p class='note'></p></figure>", f);
  }
  fputs("</section>\n", f);
  double *compute = malloc(s->ranks * sizeof *compute);
  if (!compute) return -1;
  data(f, s, compute);
  free(compute);
  fputs("<script>", f);
  fputs(hlb__report_chartjs, f);
  fputs("</script>\n<script>", f);
  fputs(hlb__report_page_js, f);
  fputs("</script></body></html>\n", f);
  return ferror(f) ? -1 : 0;
}
