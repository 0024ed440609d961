/* hlb report TRACE.json -o report.html: a self-contained HTML page (inline SVG, no external
 * assets) from a trace written by `hlb run --trace` (or any trace with the same slice
 * categories): the Gantt chart of the blocks per PU (transfer and compute parts, failures),
 * the block size each PU got over time, and each PU's idle time. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/error.h"

const hlb_cli_command hlb_cmd_report_spec = {
    .name = "report",
    .operands = "TRACE.json",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "HTML report (Gantt, block sizes, idle time) from a run's trace",
    .about = "Writes a self-contained HTML page (inline SVG) from a trace of `hlb run --trace`: "
             "the Gantt chart, the block size per PU over time, and the idle time per PU."};

#define MAX_TRACKS 64

/* Print "hlb report: ..." and return code (the command uses the public API only). */
__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hlb report: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return code;
}

typedef struct slice {
  int tid;
  double ts, dur; /* seconds */
  double count;
  char cat[12];
} slice;

typedef struct report {
  char title[256];
  char track[MAX_TRACKS][128];
  int n_tracks; /* highest tid + 1 */
  slice *s;
  size_t n, cap;
  double t_end;
} report;

static void html_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else if (*s == '"')
      fputs("&quot;", f);
    else
      fputc(*s, f);
  }
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int add_meta(report *r, const cJSON *e) {
  const char *name = str_of(e, "name");
  const char *val = str_of(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
  if (!name || !val) return 0;
  if (!strcmp(name, "process_name")) snprintf(r->title, sizeof r->title, "%s", val);
  int tid = (int)num_of(e, "tid", -1);
  if (!strcmp(name, "thread_name") && tid >= 0 && tid < MAX_TRACKS) {
    snprintf(r->track[tid], sizeof r->track[tid], "%s", val);
    if (tid + 1 > r->n_tracks) r->n_tracks = tid + 1;
  }
  return 0;
}

static int add_slice(report *r, const cJSON *e, const char *file, size_t idx) {
  const char *cat = str_of(e, "cat");
  if (!cat || (strcmp(cat, "block") && strcmp(cat, "transfer") && strcmp(cat, "compute") &&
               strcmp(cat, "failed")))
    return 0;
  int tid = (int)num_of(e, "tid", -1);
  double ts = num_of(e, "ts", NAN), dur = num_of(e, "dur", NAN);
  if (tid < 0 || tid >= MAX_TRACKS || !isfinite(ts) || !isfinite(dur) || dur < 0)
    return fail(HLB_EPARSE, "%s: traceEvents[%zu]: needs tid in [0, %d), ts and dur >= 0", file,
                idx, MAX_TRACKS);
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 1024;
    slice *s = realloc(r->s, cap * sizeof *s);
    if (!s) return fail(HLB_ENOMEM, "%s: out of memory", file);
    r->s = s;
    r->cap = cap;
  }
  slice *s = &r->s[r->n++];
  s->tid = tid;
  s->ts = ts * 1e-6;
  s->dur = dur * 1e-6;
  s->count = num_of(cJSON_GetObjectItemCaseSensitive(e, "args"), "count", 0);
  snprintf(s->cat, sizeof s->cat, "%s", cat);
  if (tid + 1 > r->n_tracks) r->n_tracks = tid + 1;
  if (s->ts + s->dur > r->t_end) r->t_end = s->ts + s->dur;
  return 0;
}

static int load(const char *path, report *r) {
  char *text = NULL;
  if (hlb_cli_read_file("report", path, &text, NULL)) return HLB_EIO;
  cJSON *root = NULL;
  int parsed = hlb_cli_json_parse("report", path, text, &root);
  free(text);
  if (parsed) return HLB_EPARSE;
  int rc = 0;
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
  if (!cJSON_IsArray(ev)) {
    cJSON_Delete(root);
    return fail(HLB_EPARSE, "%s: no traceEvents array (not a Chrome trace)", path);
  }
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev) {
    const char *ph = str_of(e, "ph");
    if (ph && !strcmp(ph, "M"))
      rc = add_meta(r, e);
    else if (ph && !strcmp(ph, "X"))
      rc = add_slice(r, e, path, i);
    if (rc) break;
    i++;
  }
  cJSON_Delete(root);
  if (rc == 0 && r->n == 0)
    rc = fail(HLB_EPARSE, "%s: no block slices (cat \"block\") in the trace", path);
  return rc;
}

static const char *color(const char *cat) {
  if (!strcmp(cat, "compute")) return "#4c78a8";
  if (!strcmp(cat, "transfer")) return "#f58518";
  if (!strcmp(cat, "failed")) return "#e45756";
  return "none";
}

#define W 900.0
#define LEFT 190.0
#define ROW 26.0

static double xpos(const report *r, double t) {
  return LEFT + (W - LEFT - 10) * t / r->t_end;
}

static void axis(FILE *f, const report *r, double y) {
  for (int k = 0; k <= 5; k++) {
    double t = r->t_end * k / 5;
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ccc'/>", xpos(r, t), 0.0,
            xpos(r, t), y);
    fprintf(f, "<text x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%.3g s</text>",
            xpos(r, t), y + 14, t);
  }
}

static void gantt(FILE *f, const report *r) {
  double h = r->n_tracks * ROW;
  fprintf(f,
          "<h2>Blocks per PU over time</h2><p>Blue: compute, orange: transfer, red: failed "
          "block (returned to the pool). Hover a block for its range and times.</p>\n"
          "<svg width='%.0f' height='%.0f' xmlns='http://www.w3.org/2000/svg'>",
          W, h + 20);
  axis(f, r, h);
  for (int t = 0; t < r->n_tracks; t++) {
    fprintf(f, "<text x='4' y='%.1f' font-size='12'>", t * ROW + 17);
    html_escape(f, r->track[t][0] ? r->track[t] : "pu");
    fprintf(f, "</text>");
  }
  /* Parts first, then the block outlines on top of them. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < r->n; k++) {
      const slice *s = &r->s[k];
      int outline = !strcmp(s->cat, "block");
      if (outline != pass) continue;
      double x = xpos(r, s->ts), w = fmax(0.5, xpos(r, s->ts + s->dur) - x);
      fprintf(f, "<rect x='%.2f' y='%.1f' width='%.2f' height='%.1f' fill='%s'%s>", x,
              s->tid * ROW + 3, w, ROW - 6, color(s->cat),
              outline ? " stroke='#222' stroke-width='0.6'" : "");
      fprintf(f, "<title>%s: %.0f items, %.6f s at %.6f s</title></rect>", s->cat, s->count, s->dur,
              s->ts);
    }
  fprintf(f, "</svg>\n");
}

static void sizes(FILE *f, const report *r) {
  double max = 1;
  for (size_t k = 0; k < r->n; k++)
    if (!strcmp(r->s[k].cat, "block") && r->s[k].count > max) max = r->s[k].count;
  double h = 220;
  static const char *pal[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"};
  fprintf(f,
          "<h2>Block size per PU over time</h2><p>Each point is a block, at its start; "
          "height is its item count (max %.0f).</p>\n"
          "<svg width='%.0f' height='%.0f' xmlns='http://www.w3.org/2000/svg'>",
          max, W, h + 20 + 16.0 * r->n_tracks);
  axis(f, r, h);
  for (size_t k = 0; k < r->n; k++) {
    const slice *s = &r->s[k];
    if (strcmp(s->cat, "block")) continue;
    fprintf(f, "<circle cx='%.2f' cy='%.2f' r='3' fill='%s'><title>%.0f items</title></circle>",
            xpos(r, s->ts), h - (h - 10) * s->count / max, pal[s->tid % 6], s->count);
  }
  for (int t = 0; t < r->n_tracks; t++) {
    fprintf(f, "<rect x='%.0f' y='%.0f' width='10' height='10' fill='%s'/>", LEFT,
            h + 22 + 16.0 * t, pal[t % 6]);
    fprintf(f, "<text x='%.0f' y='%.0f' font-size='12'>", LEFT + 14, h + 31 + 16.0 * t);
    html_escape(f, r->track[t][0] ? r->track[t] : "pu");
    fprintf(f, "</text>");
  }
  fprintf(f, "</svg>\n");
}

static void idle(FILE *f, const report *r) {
  double busy[MAX_TRACKS] = {0};
  for (size_t k = 0; k < r->n; k++)
    if (!strcmp(r->s[k].cat, "block") || !strcmp(r->s[k].cat, "failed"))
      busy[r->s[k].tid] += r->s[k].dur;
  fprintf(f,
          "<h2>Idle time per PU</h2><p>Share of the makespan (%.6f s) each PU spent "
          "without a block.</p>\n<svg width='%.0f' height='%.0f' "
          "xmlns='http://www.w3.org/2000/svg'>",
          r->t_end, W, r->n_tracks * ROW + 10);
  for (int t = 0; t < r->n_tracks; t++) {
    double idle_pct = 100 * fmax(0, 1 - busy[t] / r->t_end);
    fprintf(f, "<text x='4' y='%.1f' font-size='12'>", t * ROW + 17);
    html_escape(f, r->track[t][0] ? r->track[t] : "pu");
    fprintf(f,
            "</text><rect x='%.0f' y='%.1f' width='%.2f' height='%.1f' fill='#bab0ac'/>"
            "<text x='%.2f' y='%.1f' font-size='12'>%.1f %% idle (%.6f s)</text>",
            LEFT, t * ROW + 4, (W - LEFT - 200) * idle_pct / 100, ROW - 8,
            LEFT + (W - LEFT - 200) * idle_pct / 100 + 6, t * ROW + 17, idle_pct,
            r->t_end - busy[t] > 0 ? r->t_end - busy[t] : 0);
  }
  fprintf(f, "</svg>\n");
}

static int write_html(const report *r, const char *src, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
  if (!f) return fail(HLB_EIO, "%s: cannot open for writing", path);
  fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>hlb report</title>"
             "<style>body{font-family:sans-serif;margin:20px}svg{background:#fafafa}"
             "</style></head><body>\n<h1>hlb report</h1><p>");
  html_escape(f, r->title[0] ? r->title : "run");
  fprintf(f, "<br>trace: ");
  html_escape(f, src);
  fprintf(f, "</p>\n");
  gantt(f, r);
  sizes(f, r);
  idle(f, r);
  fprintf(f, "</body></html>\n");
  int bad = ferror(f);
  if (f != stdout && fclose(f) != 0) bad = 1;
  return bad ? fail(HLB_EIO, "%s: write failed", path) : 0;
}

int hlb_cmd_report(int argc, char **argv) {
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_report_spec, argc, argv, &cli);
  const char *in = rc == 0 ? cli.operand[0] : NULL;
  const char *out = rc == 0 ? hlb_cli_text(&cli, "report.output") : NULL;
  hlb_cli_args_free(&cli);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  /* The default page name is checked here; a given -o was checked by the parser. */
  if (!out) out = hlb_option_find("report.output")->def;
  if (hlb_cli_check_writable("report", "-o", out)) return HLB_EXIT_USAGE;
  report *r = calloc(1, sizeof *r);
  if (!r) return hlb_cli_usage_error("report", "out of memory");
  rc = load(in, r);
  if (rc == 0 && !(r->t_end > 0)) rc = fail(HLB_EPARSE, "%s: the trace spans no time", in);
  if (rc == 0) rc = write_html(r, in, out);
  free(r->s);
  free(r);
  if (rc == HLB_ENOMEM) return HLB_EXIT_FAIL;
  return rc ? HLB_EXIT_USAGE : HLB_EXIT_OK;
}
