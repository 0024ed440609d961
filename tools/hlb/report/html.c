/* The page: header, per-PU table and "where the time went" as HTML (readable without
 * scripts), the charts' data as one JSON object, and Chart.js plus page.js inlined so the file
 * needs no network. Large traces are merged (Gantt) or thinned (scatter charts) to stay a few
 * MB and quick to draw; the page says so where it happens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlb/policy.h"
#include "report/report.h"

/* Drawing limits: Chart.js draws about 10^4 bars or points in well under a second; beyond
 * these the page merges consecutive blocks (Gantt) or keeps every k-th block (scatter). */
#define GANTT_MAX 4000
#define POINTS_MAX 3000
#define DONE_POINTS_MAX 400
#define CURVE_POINTS 60

/* Okabe & Ito's colour-blind-safe palette without black (black marks failed blocks). */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                      "#56B4E9", "#D55E00", "#F0E442"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

void hlb__report_esc(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&#39;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

/* A JSON string inside a <script>: "</" would end the script, so "/" after "<" is escaped. */
void hlb__report_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else if (*p == '<')
      fputs("\\u003c", f);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

void hlb__report_json_num(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.6g", x);
  else
    fputs("null", f);
}

#define esc hlb__report_esc
#define json_str hlb__report_json_str
#define json_num hlb__report_json_num

const char *hlb__report_color(unsigned i) {
  return palette[i % PALETTE_N];
}

/* ---- header, facts, table, findings ------------------------------------------------------ */

static void pu_label(FILE *f, const hlb__rrun *run, unsigned p) {
  fprintf(f, "<span class='sw' style='background:%s'></span>", palette[p % PALETTE_N]);
  esc(f, run->pu[p].label);
}

static void header(FILE *f, const hlb__report *r) {
  fputs("<header><h1>hlb report: ", f);
  esc(f, r->kind == HLB__REPORT_SIM ? "simulated policies" : r->ranks ? "MPI run" : "run");
  fputs("</h1><dl class='facts' id='what'>", f);
  fputs("<dt>trace</dt><dd>", f);
  esc(f, r->source);
  fputs("</dd>", f);
  if (r->what[0]) {
    fputs("<dt>what ran</dt><dd>", f);
    esc(f, r->what);
    fputs("</dd>", f);
  }
  const hlb__rrun *run = &r->runs[0];
  if (r->kind == HLB__REPORT_EXEC) {
    fputs("<dt>policy</dt><dd>", f);
    esc(f, run->name);
    if (run->params[0]) {
      fputs(" (", f);
      esc(f, run->params);
      fputs(")", f);
    }
    fputs("</dd>", f);
  } else {
    fprintf(f, "<dt>policies</dt><dd>%u</dd>", r->n_runs);
  }
  if (r->ranks)
    fprintf(
        f,
        "<dt>ranks</dt><dd data-ranks='%d'>%d (links between them: not recorded in the trace)</dd>",
        r->ranks, r->ranks);
  fputs("<dt>PUs</dt><dd>", f);
  for (unsigned p = 0; p < run->n_pus; p++) {
    if (p) fputs("; ", f);
    pu_label(f, run, p);
    const char *where = run->pu[p].where, *dev = run->pu[p].device;
    if (where[0] || dev[0] || run->pu[p].kind[0]) {
      fputs(" (", f);
      esc(f, run->pu[p].kind);
      if (where[0]) fputs(", ", f), esc(f, where);
      if (dev[0]) fputs(", ", f), esc(f, dev);
      fputs(")", f);
    }
  }
  fputs("</dd></dl>", f);
  if (!r->has_facts && r->kind == HLB__REPORT_EXEC)
    fputs("<p class='note'>This trace carries only the blocks: devices, ranks, the run's own "
          "models and the reasons a device was released are not in it, so the models below are "
          "fitted here from the blocks and a stopped PU is inferred from its blocks.</p>",
          f);
  else if (!r->has_facts)
    fputs("<p class='note'>This trace carries only the blocks: the cluster and the simulator's "
          "lower bound are not in it, so each policy is compared with the fitted-ideal split of "
          "its own blocks.</p>",
          f);
  fputs("</header>\n", f);
}

/* The value `text` ("name=value,name=value", as --params) gives `name`, into val; 0 if none. */
static int given_param(const char *text, const char *name, char *val, size_t n) {
  size_t len = strlen(name);
  for (const char *p = text; *p;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if ((size_t)(end - p) > len && !strncmp(p, name, len) && p[len] == '=') {
      snprintf(val, n, "%.*s", (int)(end - p - len - 1), p + len + 1);
      return 1;
    }
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* Every parameter of the policy as the run used it: the ones given (--params, in bold) and the
 * others' defaults from the library's table, so that the knobs "where the time went" names
 * can be read with their values. A policy this hlb does not know shows what was given. */
static void policy_params(FILE *f, const hlb__report *r, const hlb__rrun *run) {
  const hlb_policy_ops *ops = hlb_policy_find(run->name);
  if (!ops && !run->params[0]) return;
  fputs("<dt>parameters</dt><dd class='params'>", f);
  /* Without the run's facts the trace does not say what was given: no values are claimed. */
  if (!r->has_facts) {
    fputs("not recorded in this trace", f);
    if (ops && ops->n_params) {
      fputs(" (the policy's defaults: ", f);
      for (unsigned k = 0; k < ops->n_params; k++)
        fprintf(f, "%s%s=%g", k ? ", " : "", ops->params[k].name, ops->params[k].dflt);
      fputs(")", f);
    }
  } else if (!ops) {
    esc(f, run->params);
  } else if (!ops->n_params) {
    fputs("none", f);
  } else {
    for (unsigned k = 0; k < ops->n_params; k++) {
      char v[64];
      int given = given_param(run->params, ops->params[k].name, v, sizeof v);
      if (!given) snprintf(v, sizeof v, "%g", ops->params[k].dflt);
      fprintf(f, "%s<span data-param='%s'%s>%s=", k ? ", " : "", ops->params[k].name,
              given ? " class='given'" : "", ops->params[k].name);
      esc(f, v);
      fputs("</span>", f);
    }
    fputs(run->params[0] ? " (given ones in bold, the others are defaults)" : " (defaults)", f);
  }
  fputs("</dd>", f);
}

static void run_facts(FILE *f, const hlb__report *r, const hlb__rrun *run) {
  fprintf(f, "<dl class='facts'><dt>makespan</dt><dd class='makespan' data-s='%.9g'>%.4g s</dd>",
          run->makespan_s, run->makespan_s);
  fprintf(f, "<dt>items done</dt><dd>%.0f</dd>", run->items);
  policy_params(f, r, run);
  if (isfinite(run->policy_s)) {
    size_t blocks = 0;
    for (unsigned p = 0; p < run->n_pus; p++)
      blocks += run->pu[p].blocks + run->pu[p].failed_blocks;
    fprintf(f,
            "<dt>policy decisions</dt><dd class='policy' data-s='%.9g'>%.3g s in all, %.3g ms "
            "per block, %.2g %% of the makespan</dd>",
            run->policy_s, run->policy_s, 1e3 * run->policy_s / (double)(blocks ? blocks : 1),
            100 * run->policy_s / run->makespan_s);
  }
  if (isfinite(run->ideal_s))
    fprintf(f,
            "<dt>fitted-ideal split</dt><dd class='ideal' data-s='%.9g'>%.4g s over %u PU%s "
            "(equal finish times on the fitted curves, PLB-HeC III.C); the run took "
            "<b>%+.1f %%</b> longer",
            run->ideal_s, run->ideal_s, run->ideal_pus, run->ideal_pus == 1 ? "" : "s",
            100 * (run->makespan_s / run->ideal_s - 1));
  if (isfinite(run->ideal_s)) {
    unsigned scaled = 0;
    for (unsigned p = 0; p < run->n_pus; p++)
      scaled += run->pu[p].fitted && run->pu[p].scaled != 1;
    if (scaled)
      fprintf(f, " (%u curve%s scaled to %s blocks' busy time: see the model column)", scaled,
              scaled == 1 ? "" : "s", scaled == 1 ? "its" : "their");
    fputs("</dd>", f);
  } else {
    fputs("<dt>fitted-ideal split</dt><dd>not computed: ", f);
    esc(f, run->ideal_why[0] ? run->ideal_why : "no PU finished a block");
    fputs("</dd>", f);
  }
  if (isfinite(run->bound_s))
    fprintf(f,
            "<dt>simulator's lower bound</dt><dd class='bound' data-s='%.9g'>%.4g s; gap <b>%+.1f "
            "%%</b></dd>",
            run->bound_s, run->bound_s, 100 * (run->makespan_s / run->bound_s - 1));
  else if (r->kind == HLB__REPORT_SIM)
    fputs("<dt>simulator's lower bound</dt><dd>not in this trace (hlb sim --json prints "
          "lower_bound_s)</dd>",
          f);
  fputs("</dl>\n", f);
}

static void findings(FILE *f, const hlb__report *r, const hlb__rrun *run) {
  hlb__finding *list = calloc(64, sizeof *list);
  size_t n = list ? hlb__report_findings(r, run, list, 64) : 0;
  hlb__report_findings_html(f, list, n);
  free(list);
}

void hlb__report_findings_html(FILE *f, const hlb__finding *list, size_t n) {
  fputs("<h3>Where the time went</h3><ol class='findings'>", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "<li data-finding='%s' data-pu='", list[i].key);
    esc(f, list[i].pu);
    fputs("'>", f);
    esc(f, list[i].text);
    if (list[i].change[0]) {
      fputs(" <span class='change'>Change: ", f);
      esc(f, list[i].change);
      fputs("</span>", f);
    }
    fputs("</li>", f);
  }
  if (n == 0)
    fputs("<li data-finding='none'>Nothing stands out: no tail, transfers, failures or gaps worth "
          "naming.</li>",
          f);
  fputs("</ol>\n", f);
}

static void model_cell(FILE *f, const hlb__rpu *u) {
  if (!u->fitted) {
    fputs("<td class='model'>none (no finished block)</td>", f);
    return;
  }
  if (u->rate_only) {
    fprintf(f, "<td class='model' data-rate='%.6g'>its rate, %.4g items/s (", u->items / u->busy_s,
            u->items / u->busy_s);
    if (u->refused[0]) {
      fputs("the curve fitted to its blocks cannot be solved over the run's items: ", f);
      esc(f, u->refused);
    } else {
      fputs("all its blocks were of one size: no curve to fit", f);
    }
    fputs(")</td>", f);
    return;
  }
  fputs("<td class='model'>F = ", f);
  int first = 1;
  for (int k = 0; k < HLB_TERM_COUNT; k++)
    if (u->curve.coef[k] != 0) {
      fprintf(f, "%s%.3g&middot;%s", first ? "" : " + ", u->curve.coef[k],
              hlb_term_name((hlb_term)k));
      first = 0;
    }
  fprintf(f, " (u = x / %.4g); R&sup2; %.3f; %s", u->curve.scale, u->r2,
          u->fit_from_run ? "the run's model" : "fitted here from its blocks");
  if (u->scaled != 1)
    fprintf(f,
            "; <span class='scaled' data-scaled='%.6g'>scaled x%.3g: as fitted it gave %.3g s "
            "for its blocks, which took %.3g s</span>",
            u->scaled, u->scaled, u->curve_sum_s, u->busy_s);
  fputs("</td>", f);
}

static void pu_table(FILE *f, const hlb__rrun *run) {
  fputs("<h3>PUs</h3><table class='pus'><thead><tr><th>PU</th><th>where</th><th>items</th>"
        "<th>blocks</th><th>busy s</th><th>transfer s</th><th>emulated throttle s</th>"
        "<th>idle s (at the tail)</th><th>failed</th><th>items/s busy</th>"
        "<th>ideal-split items</th><th>model</th><th>status</th></tr></thead><tbody>",
        f);
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    fputs("<tr data-pu='", f);
    esc(f, u->name);
    fprintf(f, "' data-items='%.0f' data-blocks='%zu'><td>", u->items, u->blocks);
    pu_label(f, run, p);
    fputs("</td><td>", f);
    esc(f, u->where[0] ? u->where : "-");
    fprintf(f,
            "</td><td class='items'>%.0f</td><td class='blocks'>%zu</td><td>%.4g</td><td>%.4g</td>"
            "<td>%.4g</td><td>%.4g (%.4g)</td><td class='failed'>%zu blocks, %.4g s, %.0f items",
            u->items, u->blocks, u->busy_s, u->transfer_s, u->throttle_s, u->idle_s, u->tail_idle_s,
            u->failed_blocks, u->failed_s, u->failed_items);
    if (u->dropped_items > 0)
      fprintf(f, "; dropped at its release: a block of %.0f items, %.4g s", u->dropped_items,
              u->dropped_s);
    fprintf(f, "</td><td>%.4g</td>", u->busy_s > 0 ? u->items / u->busy_s : 0);
    if (u->fitted && isfinite(run->ideal_s))
      fprintf(f, "<td>%.0f</td>", u->ideal_items);
    else
      fputs("<td>-</td>", f);
    model_cell(f, u);
    fputs(u->stopped[0] ? "<td class='stopped'>" : "<td>", f);
    esc(f, u->stopped[0] ? u->stopped : "worked to the end");
    fputs("</td></tr>", f);
  }
  fputs("</tbody></table>\n", f);
}

/* MPI runs: what each rank's link cost as the blocks measured it. A remote PU's transfer time
 * is its block's input arriving over MPI, its host-device copies, and rank 0 receiving the
 * output; rank 0's own PUs pay only the copies. */
static int block_rank(const hlb__rpu *u) {
  int rank = -1;
  return sscanf(u->where, "rank %d", &rank) == 1 ? rank : -1;
}

static void links_table(FILE *f, const hlb__report *r, const hlb__rrun *run) {
  if (r->ranks < 2) return;
  fputs("<h3>Links, as the blocks measured them</h3><table class='pus links'><thead><tr>"
        "<th>rank</th><th>PUs</th><th>blocks</th><th>items</th><th>transfer s</th>"
        "<th>transfer per block</th><th>transfer per 1000 items</th><th>transfer share of busy</th>"
        "</tr></thead><tbody>",
        f);
  for (int rank = 0; rank < r->ranks; rank++) {
    double blocks = 0, items = 0, transfer = 0, busy = 0;
    unsigned pus = 0;
    for (unsigned p = 0; p < run->n_pus; p++) {
      const hlb__rpu *u = &run->pu[p];
      if (block_rank(u) != rank) continue;
      pus++;
      blocks += (double)u->blocks;
      items += u->items;
      transfer += u->transfer_s;
      busy += u->busy_s;
    }
    fprintf(f, "<tr data-rank='%d' data-transfer-s='%.9g'><td>%d%s</td><td>%u</td>", rank, transfer,
            rank, rank ? "" : " (balances)", pus);
    if (blocks > 0)
      fprintf(
          f,
          "<td>%.0f</td><td>%.0f</td><td>%.4g</td><td>%.3g s</td><td>%.3g s</td><td>%.1f %%</td>",
          blocks, items, transfer, transfer / blocks, items > 0 ? 1000 * transfer / items : 0,
          busy > 0 ? 100 * transfer / busy : 0);
    else
      fputs("<td>0</td><td>0</td><td>-</td><td>-</td><td>-</td><td>-</td>", f);
    fputs("</tr>", f);
  }
  fputs("</tbody></table><p class='note'>Rank 0 gives out the blocks; a block for another rank "
        "sends its input there and its output back, so that rank's transfer time is the link "
        "(plus host-device copies). <code>hlb profile-links</code> measures the links alone.</p>\n",
        f);
}

/* ---- chart data ------------------------------------------------------------------------- */

/* One entry of the Gantt: a block, or consecutive finished blocks of a PU merged. */
static void gantt_entry(FILE *f, const hlb__rblock *b, double count, double compute,
                        double transfer, size_t merged, int *first) {
  fputs(*first ? "[" : ",[", f);
  *first = 0;
  fprintf(f, "%u,", b->pu);
  json_num(f, b->start_s);
  fputc(',', f);
  json_num(f, b->end_s);
  fprintf(f, ",%.0f,%.0f,", count, b->begin);
  json_num(f, merged > 1 ? -1 : b->predicted_s);
  fputc(',', f);
  json_num(f, compute);
  fputc(',', f);
  json_num(f, transfer);
  fprintf(f, ",%d,%zu]", b->failed, merged);
}

static size_t gantt(FILE *f, const hlb__rrun *run) {
  size_t per_pu = GANTT_MAX / (run->n_pus ? run->n_pus : 1);
  size_t group = 1;
  for (unsigned p = 0; p < run->n_pus; p++) {
    size_t n = run->pu[p].blocks;
    if (n > per_pu && (n + per_pu - 1) / per_pu > group) group = (n + per_pu - 1) / per_pu;
  }
  fputs("\"gantt\":[", f);
  int first = 1;
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rblock acc = {0};
    size_t in = 0;
    double count = 0, compute = 0, transfer = 0;
    for (size_t k = 0; k <= run->n; k++) {
      const hlb__rblock *b = k < run->n ? &run->b[k] : NULL;
      if (b && b->pu != p) continue;
      int flush = in && (!b || b->failed || in == group);
      if (flush) {
        gantt_entry(f, &acc, count, compute, transfer, in, &first);
        in = 0;
      }
      if (!b) break;
      if (b->failed) {
        gantt_entry(f, b, b->count, b->compute_s, b->transfer_s, 1, &first);
        continue;
      }
      if (in == 0) acc = *b, count = compute = transfer = 0;
      acc.end_s = b->end_s;
      count += b->count;
      compute += b->compute_s;
      transfer += b->transfer_s;
      in++;
    }
  }
  fputs("]", f);
  return group;
}

/* Blocks for the scatter charts: every `stride`-th block, and every block that missed its
 * prediction (those are the ones the eye looks for). */
static size_t points(FILE *f, const hlb__rrun *run) {
  size_t stride = run->n > POINTS_MAX ? (run->n + POINTS_MAX - 1) / POINTS_MAX : 1;
  fputs("\"points\":[", f);
  int first = 1;
  for (size_t k = 0; k < run->n; k++) {
    const hlb__rblock *b = &run->b[k];
    double dur = b->end_s - b->start_s;
    int missed = b->predicted_s > 0 && (dur > 1.5 * b->predicted_s || dur < b->predicted_s / 1.5);
    if (k % stride && !missed) continue;
    fputs(first ? "[" : ",[", f);
    first = 0;
    fprintf(f, "%u,", b->pu);
    json_num(f, b->start_s);
    fputc(',', f);
    json_num(f, dur);
    fprintf(f, ",%.0f,%.0f,", b->count, b->begin);
    json_num(f, b->predicted_s);
    fprintf(f, ",%d,", b->failed);
    json_num(f, b->compute_s);
    fputc(',', f);
    json_num(f, b->transfer_s);
    fputc(']', f);
  }
  fputs("]", f);
  return stride;
}

/* Items finished over time per PU: [t, cumulative items] at each block end, thinned. */
static void done(FILE *f, const hlb__rrun *run) {
  fputs("\"done\":[", f);
  for (unsigned p = 0; p < run->n_pus; p++) {
    size_t n = run->pu[p].blocks,
           stride = n > DONE_POINTS_MAX ? (n + DONE_POINTS_MAX - 1) / DONE_POINTS_MAX : 1;
    fputs(p ? ",[[0,0]" : "[[0,0]", f);
    double cum = 0;
    size_t i = 0;
    for (size_t k = 0; k < run->n; k++) {
      const hlb__rblock *b = &run->b[k];
      if (b->pu != p || b->failed) continue;
      cum += b->count;
      if (++i % stride && i != n) continue;
      fputs(",[", f);
      json_num(f, b->end_s);
      fprintf(f, ",%.0f]", cum);
    }
    fputs("]", f);
  }
  fputs("]", f);
}

static void curve(FILE *f, const hlb__rpu *u) {
  if (!u->fitted || !(u->max_count > 0)) {
    fputs("null", f);
    return;
  }
  double lo = 1, hi = u->max_count * 1.2;
  fputs("[", f);
  for (int i = 0; i < CURVE_POINTS; i++) {
    double x = lo * pow(hi / lo, (double)i / (CURVE_POINTS - 1));
    fputs(i ? ",[" : "[", f);
    json_num(f, x);
    fputc(',', f);
    json_num(f, hlb_curve_time(&u->curve, x));
    fputc(']', f);
  }
  fputs("]", f);
}

static void pus_json(FILE *f, const hlb__rrun *run) {
  fputs("\"pus\":[", f);
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    fputs(p ? ",{\"name\":" : "{\"name\":", f);
    json_str(f, u->label);
    fprintf(f, ",\"color\":\"%s\",\"throttle\":", palette[p % PALETTE_N]);
    json_num(f, u->throttle);
    fputs(",\"last_end\":", f);
    json_num(f, u->last_end_s);
    fputs(",\"tail_idle\":", f);
    json_num(f, u->tail_idle_s);
    fputs(",\"stopped\":", f);
    json_str(f, u->stopped);
    fputs(",\"r2\":", f);
    json_num(f, u->fitted ? u->r2 : NAN);
    fprintf(f, ",\"rate_only\":%d", u->rate_only);
    fputs(",\"curve\":", f);
    curve(f, u);
    fputs("}", f);
  }
  fputs("]", f);
}

static void run_json(FILE *f, const hlb__rrun *run) {
  fputs("{\"name\":", f);
  json_str(f, run->name);
  fputs(",\"makespan\":", f);
  json_num(f, run->makespan_s);
  fputs(",\"n_blocks\":", f);
  fprintf(f, "%zu,", run->n);
  pus_json(f, run);
  fputc(',', f);
  size_t group = gantt(f, run);
  fprintf(f, ",\"gantt_group\":%zu,", group);
  size_t stride = points(f, run);
  fprintf(f, ",\"points_stride\":%zu,", stride);
  done(f, run);
  fputs("}", f);
}

/* ---- page ------------------------------------------------------------------------------- */

static const char *const charts[][2] = {
    {"gantt", "Blocks per PU over time (Gantt). Each bar is a block in its PU's colour: solid is "
              "compute, pale is transfer, hatched is the emulated throttle's sleep, black is a "
              "failed block, crossed black a block dropped when its PU was released, and the "
              "outlined light bars are idle time. Hover a bar for its items "
              "and times."},
    {"sizes", "Block size over time: each point is a block at its start; a good policy shrinks "
              "blocks towards the end so that the PUs finish together."},
    {"predicted", "Predicted against actual time per block, log-log: points on the diagonal were "
                  "predicted right; above it they took longer. The worst blocks are labelled."},
    {"fit", "Each PU's fitted curve (line) over its blocks (points): time against items, "
            "log-log. Points far from their line are blocks the model does not explain."},
    {"done", "Items done over time per PU: the slope is the PU's throughput; a flat end is a PU "
             "that waited."},
    {"tail", "Idle time at the tail: how long each PU waited at the end for the last one to "
             "finish (grey), after its own last block ended (colour)."}};

static void section(FILE *f, const hlb__report *r, unsigned i) {
  const hlb__rrun *run = &r->runs[i];
  fprintf(f, "<section class='run' id='run-%u' data-run='", i);
  esc(f, run->name);
  fprintf(f, "' data-index='%u'%s><h2>", i, r->kind == HLB__REPORT_SIM && i ? " hidden" : "");
  esc(f, r->kind == HLB__REPORT_SIM ? "Policy " : "Policy ");
  esc(f, run->name);
  fputs("</h2>", f);
  run_facts(f, r, run);
  findings(f, r, run);
  pu_table(f, run);
  links_table(f, r, run);
  for (size_t c = 0; c < sizeof charts / sizeof charts[0]; c++) {
    fprintf(f, "<figure class='chart' data-chart='%s'><figcaption>", charts[c][0]);
    esc(f, charts[c][1]);
    fputs("</figcaption><div class='box'><canvas></canvas></div><p class='note'></p></figure>", f);
  }
  fputs("</section>\n", f);
}

static void picker(FILE *f, const hlb__report *r) {
  if (r->kind != HLB__REPORT_SIM) return;
  fputs("<nav><label>Policy: <select id='picker'>", f);
  for (unsigned i = 0; i < r->n_runs; i++) {
    fprintf(f, "<option value='%u'>", i);
    esc(f, r->runs[i].name);
    fprintf(f, " (%.4g s)</option>", r->runs[i].makespan_s);
  }
  fputs("</select></label> <span class='hint'>one section per policy; the same charts for "
        "each</span></nav>\n",
        f);
}

int hlb__report_write_html(const hlb__report *r, FILE *f) {
  if (r->kind == HLB__REPORT_SPMD) return hlb__report_write_spmd_html(r, f);
  fputs("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>hlb report: ", f);
  esc(f, r->source);
  fputs("</title><style>", f);
  fputs(hlb__report_page_css, f);
  fputs("</style></head><body>\n", f);
  header(f, r);
  picker(f, r);
  for (unsigned i = 0; i < r->n_runs; i++)
    section(f, r, i);
  fputs("<script id='hlb-data' type='application/json'>{\"kind\":", f);
  json_str(f, r->kind == HLB__REPORT_SIM ? "sim" : "exec");
  fputs(",\"runs\":[", f);
  for (unsigned i = 0; i < r->n_runs; i++) {
    if (i) fputc(',', f);
    run_json(f, &r->runs[i]);
  }
  fputs("]}</script>\n<script>", f);
  fputs(hlb__report_chartjs, f);
  fputs("</script>\n<script>", f);
  fputs(hlb__report_page_js, f);
  fputs("</script></body></html>\n", f);
  return ferror(f) ? -1 : 0;
}
