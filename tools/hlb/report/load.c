/* Reading a trace of `hlb run --trace` or `hlb sim --trace` (Chrome trace JSON) into runs.
 *
 * Executor traces (src/exec/trace.c): process 1 named "hlb run: policy P, N items, makespan T s",
 * one thread per PU named "NAME (BACKEND[, throttled xF, emulated])", each block a slice of cat
 * "block" (args begin, count, predicted_s, compute_s, transfer_s) with nested "transfer" and
 * "compute" slices (skipped here: the block carries both), failed blocks of cat "failed".
 * Simulator traces (src/sim/trace_out.c): one process per (policy, node) named "POLICY / NODE",
 * one thread per PU named "NAME (KIND)", each block as up to three slices "in", "compute",
 * "out" with args begin, items, lost. Both may carry the run's facts as a top-level "hlb"
 * object (the command's --json output); facts.c reads it. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "report/report.h"

__attribute__((format(printf, 2, 3))) static int bad(const char *path, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hlb report: %s: ", path);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return HLB_EXIT_USAGE;
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A pid or tid: a whole number an int holds, else dflt (casting 1e73 to int is undefined:
 * the fuzzer found it). */
static int id_of(const cJSON *o, const char *k, int dflt) {
  double v = num_of(o, k, dflt);
  return v >= -1e9 && v <= 1e9 && v == floor(v) ? (int)v : dflt;
}

/* The process and thread of each (pid, tid), resolved to a run and a PU of that run. */
typedef struct track {
  int pid, tid;
  unsigned run, pu;
} track;

typedef struct loader {
  const char *path;
  hlb__report *r;
  int pid_run[256]; /* pid -> run index + 1 (0: unknown pid) */
  char pid_node[256][64];
  track tracks[HLB__REPORT_MAX_PUS * 32];
  unsigned n_tracks;
  int saw_exec, saw_sim;
} loader;

static int find_track(const loader *L, int pid, int tid) {
  for (unsigned i = 0; i < L->n_tracks; i++)
    if (L->tracks[i].pid == pid && L->tracks[i].tid == tid) return (int)i;
  return -1;
}

static int run_named(loader *L, const char *name, unsigned *out) {
  hlb__report *r = L->r;
  for (unsigned i = 0; i < r->n_runs; i++)
    if (!strcmp(r->runs[i].name, name)) return *out = i, 0;
  hlb__rrun *runs = realloc(r->runs, (r->n_runs + 1) * sizeof *runs);
  if (!runs) return HLB_EXIT_FAIL;
  r->runs = runs;
  hlb__rrun *run = memset(&runs[r->n_runs], 0, sizeof *runs);
  snprintf(run->name, sizeof run->name, "%s", name);
  run->bound_s = NAN;
  run->policy_s = NAN;
  run->ideal_s = NAN;
  *out = r->n_runs++;
  return 0;
}

/* "hlb run: policy P, N items, makespan T s" (executor) or "POLICY / NODE" (simulator). */
static int process_name(loader *L, int pid, const char *name, size_t idx) {
  if (pid < 0 || pid >= 256)
    return bad(L->path, "traceEvents[%zu]: pid must be in [0, 256), got %d", idx, pid);
  unsigned run = 0;
  char policy[96] = "";
  const char *slash = strstr(name, " / ");
  if (!strncmp(name, "hlb run: policy ", 16)) {
    L->saw_exec = 1;
    sscanf(name + 16, "%95[^,]", policy);
    snprintf(L->r->title, sizeof L->r->title, "%s", name);
  } else if (slash) {
    L->saw_sim = 1;
    snprintf(policy, sizeof policy, "%.*s", (int)(slash - name), name);
    snprintf(L->pid_node[pid], sizeof L->pid_node[pid], "%s", slash + 3);
  } else {
    return 0; /* another tool's process: not ours, not an error by itself */
  }
  if (run_named(L, policy, &run)) return HLB_EXIT_FAIL;
  L->pid_run[pid] = (int)run + 1;
  return 0;
}

/* "NAME (KIND[, throttled xF, emulated])". */
static void parse_track_name(hlb__rpu *p, const char *label) {
  const char *open = strrchr(label, '(');
  size_t n = open && open > label ? (size_t)(open - label - 1) : strlen(label);
  snprintf(p->name, sizeof p->name, "%.*s", (int)n, label);
  p->throttle = 1;
  if (!open) return;
  sscanf(open + 1, "%31[^,)]", p->kind);
  const char *th = strstr(open, "throttled x");
  if (th) p->throttle = strtod(th + 11, NULL);
  if (!(p->throttle >= 1)) p->throttle = 1;
}

static int thread_name(loader *L, int pid, int tid, const char *label, size_t idx) {
  if (pid < 0 || pid >= 256 || !L->pid_run[pid]) return 0; /* a process we do not draw */
  if (find_track(L, pid, tid) >= 0) return 0;
  hlb__rrun *run = &L->r->runs[L->pid_run[pid] - 1];
  if (run->n_pus == HLB__REPORT_MAX_PUS || L->n_tracks == sizeof L->tracks / sizeof L->tracks[0])
    return bad(L->path, "traceEvents[%zu]: more than %d PUs in run '%s', got thread %d", idx,
               HLB__REPORT_MAX_PUS, run->name, tid);
  hlb__rpu *p = &run->pu[run->n_pus];
  parse_track_name(p, label);
  snprintf(p->where, sizeof p->where, "%s", L->pid_node[pid]);
  L->tracks[L->n_tracks++] = (track){pid, tid, (unsigned)(L->pid_run[pid] - 1), run->n_pus++};
  return 0;
}

static int meta_event(loader *L, const cJSON *e, size_t idx) {
  const char *name = str_of(e, "name");
  const char *val = str_of(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
  if (!name || !val) return 0;
  int pid = id_of(e, "pid", -1);
  if (!strcmp(name, "process_name")) return process_name(L, pid, val, idx);
  if (!strcmp(name, "thread_name")) return thread_name(L, pid, id_of(e, "tid", -1), val, idx);
  return 0;
}

static int push_block(hlb__rrun *run, const hlb__rblock *b) {
  if (run->n == run->cap) {
    size_t cap = run->cap ? 2 * run->cap : 256;
    hlb__rblock *nb = realloc(run->b, cap * sizeof *nb);
    if (!nb) return HLB_EXIT_FAIL;
    run->b = nb;
    run->cap = cap;
  }
  run->b[run->n++] = *b;
  return 0;
}

/* Phase of a simulator slice: 0 in, 1 compute, 2 out; the block is put together later. */
static int sim_phase(const char *name) {
  return !strcmp(name, "in") ? 0 : !strcmp(name, "compute") ? 1 : !strcmp(name, "out") ? 2 : -1;
}

static int slice_event(loader *L, const cJSON *e, size_t idx) {
  const char *cat = str_of(e, "cat"), *name = str_of(e, "name");
  if (!cat || !name) return 0;
  int exec_block = !strcmp(cat, "block") || !strcmp(cat, "failed");
  int phase = sim_phase(name);
  int pid = id_of(e, "pid", -1), tid = id_of(e, "tid", -1);
  int k = find_track(L, pid, tid);
  if (k < 0) return 0; /* a nested part, or a track we do not know */
  hlb__rrun *run = &L->r->runs[L->tracks[k].run];
  int sim = L->pid_node[pid][0] != 0;
  if (!(sim ? phase >= 0 : exec_block)) return 0; /* nested transfer/compute part */
  double ts = num_of(e, "ts", NAN), dur = num_of(e, "dur", NAN);
  if (!isfinite(ts) || !isfinite(dur) || dur < 0 || ts < 0)
    return bad(L->path,
               "traceEvents[%zu]: \"ts\" and \"dur\" must be numbers >= 0, got ts %g dur %g", idx,
               ts, dur);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");
  hlb__rblock b = {.pu = L->tracks[k].pu,
                   .start_s = ts * 1e-6,
                   .end_s = (ts + dur) * 1e-6,
                   .begin = num_of(a, "begin", 0),
                   .predicted_s = -1};
  if (sim) {
    const char *lost = str_of(a, "lost");
    b.count = num_of(a, "items", 0);
    b.failed = lost && !strcmp(lost, "yes");
    /* The phase rides in compute_s/transfer_s until the slices are merged (merge_sim). */
    b.compute_s = phase == 1 ? dur * 1e-6 : 0;
    b.transfer_s = phase == 1 ? 0 : dur * 1e-6;
    b.predicted_s = -1 - phase;
  } else {
    b.count = num_of(a, "count", 0);
    b.failed = !strcmp(cat, "failed");
    b.compute_s = num_of(a, "compute_s", b.failed ? 0 : dur * 1e-6);
    b.transfer_s = num_of(a, "transfer_s", 0);
    b.predicted_s = num_of(a, "predicted_s", -1);
  }
  if (!(b.count >= 0))
    return bad(L->path, "traceEvents[%zu]: block item count must be >= 0, got %g", idx, b.count);
  return push_block(run, &b) ? HLB_EXIT_FAIL : 0;
}

static int by_pu_begin_start(const void *pa, const void *pb) {
  const hlb__rblock *a = pa, *b = pb;
  if (a->pu != b->pu) return a->pu < b->pu ? -1 : 1;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  return (a->start_s > b->start_s) - (a->start_s < b->start_s);
}

static int by_start(const void *pa, const void *pb) {
  const hlb__rblock *a = pa, *b = pb;
  return (a->start_s > b->start_s) - (a->start_s < b->start_s);
}

/* The simulator writes a block as "in", "compute", "out" slices: join the consecutive phases
 * of one (PU, begin) into one block; a phase that does not follow the previous one starts
 * another block (the same range redone after a loss). */
static void merge_sim(hlb__rrun *run) {
  if (run->n == 0) return; /* no array to sort: qsort forbids NULL even for 0 elements */
  qsort(run->b, run->n, sizeof *run->b, by_pu_begin_start);
  size_t out = 0;
  int last_phase = 3;
  for (size_t i = 0; i < run->n; i++) {
    hlb__rblock s = run->b[i];
    int phase = (int)(-1 - s.predicted_s);
    hlb__rblock *cur = out ? &run->b[out - 1] : NULL;
    if (cur && cur->pu == s.pu && cur->begin == s.begin && phase > last_phase) {
      cur->end_s = fmax(cur->end_s, s.end_s);
      cur->compute_s += s.compute_s;
      cur->transfer_s += s.transfer_s;
      cur->failed |= s.failed;
    } else {
      s.predicted_s = -1;
      run->b[out++] = s;
    }
    last_phase = phase;
  }
  for (size_t i = 0; i < out; i++)
    run->b[i].predicted_s = -1;
  run->n = out;
}

int hlb__report_read_facts(const char *path, const cJSON *facts, hlb__report *r);

static int events(loader *L, const cJSON *ev) {
  size_t i = 0;
  const cJSON *e;
  /* Names first: a writer may put them after the slices. */
  for (int pass = 0; pass < 2; pass++) {
    i = 0;
    cJSON_ArrayForEach(e, ev) {
      if (!cJSON_IsObject(e)) return bad(L->path, "traceEvents[%zu]: not an object", i);
      const char *ph = str_of(e, "ph");
      int rc = 0;
      if (ph && !strcmp(ph, "M") && pass == 0) rc = meta_event(L, e, i);
      if (ph && !strcmp(ph, "X") && pass == 1) rc = slice_event(L, e, i);
      if (rc) return rc;
      i++;
    }
  }
  return 0;
}

static int check_kind(loader *L) {
  hlb__report *r = L->r;
  if (!L->saw_exec && !L->saw_sim)
    return bad(L->path, "not an hlb trace: no process named \"hlb run: ...\" (hlb run --trace) "
                        "or \"POLICY / NODE\" (hlb sim --trace)");
  if (L->saw_exec && L->saw_sim)
    return bad(L->path, "mixes an hlb run trace and an hlb sim trace; give one of them");
  r->kind = L->saw_sim ? HLB__REPORT_SIM : HLB__REPORT_EXEC;
  size_t blocks = 0;
  for (unsigned i = 0; i < r->n_runs; i++) {
    if (r->kind == HLB__REPORT_SIM) merge_sim(&r->runs[i]);
    if (r->runs[i].n) /* a run with no block may have no array: qsort forbids NULL */
      qsort(r->runs[i].b, r->runs[i].n, sizeof *r->runs[i].b, by_start);
    blocks += r->runs[i].n;
  }
  if (blocks == 0) return bad(L->path, "an hlb trace without any block, got 0 blocks");
  return 0;
}

int hlb__report_load(const char *path, hlb__report *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->source, sizeof r->source, "%s", path);
  char *text = NULL;
  if (hlb_cli_read_file("report", path, &text, NULL)) return HLB_EXIT_USAGE;
  cJSON *root = NULL;
  int parsed = hlb_cli_json_parse("report", path, text, &root);
  free(text);
  if (parsed) return HLB_EXIT_USAGE;
  loader *L = calloc(1, sizeof *L);
  int rc = L ? 0 : HLB_EXIT_FAIL;
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
  const cJSON *spmd = cJSON_GetObjectItemCaseSensitive(root, "hlb_spmd");
  if (rc == 0 && spmd) {
    rc = hlb__report_load_spmd(path, spmd, r);
    free(L);
    cJSON_Delete(root);
    return rc;
  }
  if (rc == 0 && !cJSON_IsArray(ev))
    rc =
        bad(path, "not an hlb trace: no \"traceEvents\" array (nor an \"hlb_spmd\" object), got %s",
            cJSON_IsObject(root) ? "an object without it" : "no JSON object at the top");
  if (rc == 0) {
    L->path = path;
    L->r = r;
    rc = events(L, ev);
  }
  if (rc == 0) rc = check_kind(L);
  if (rc == 0) rc = hlb__report_read_facts(path, cJSON_GetObjectItemCaseSensitive(root, "hlb"), r);
  free(L);
  cJSON_Delete(root);
  return rc;
}

void hlb__report_free(hlb__report *r) {
  for (unsigned i = 0; i < r->n_runs; i++)
    free(r->runs[i].b);
  free(r->runs);
  if (r->spmd) {
    free(r->spmd->iv);
    free(r->spmd->values);
    free(r->spmd);
  }
  memset(r, 0, sizeof *r);
}
