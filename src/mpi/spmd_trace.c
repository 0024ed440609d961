/* The SPMD trace (spmd_trace.h): kept on rank 0 in memory, one interval at a time, and written
 * once at the end, so tracing costs the ranks nothing beyond what the monitor already gathers. */
#include "mpi/spmd_trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"

int hlb__spmd_trace_open(hlb__spmd_trace *t, const char *path, int ranks, double now_s) {
  memset(t, 0, sizeof *t);
  if (!path || !*path) return 0;
  /* Fail now, not after an hour of computing, when the file cannot be written. */
  size_t len = strlen(path) + 5;
  char *tmp = malloc(len);
  if (!tmp) return hlb__error(HLB_ENOMEM, "spmd: out of memory for the trace path");
  snprintf(tmp, len, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int err = errno;
  if (f) fclose(f), remove(tmp);
  free(tmp);
  if (!f)
    return hlb__error(HLB_EIO, "spmd: HLB_SPMD_TRACE=%s: cannot write the trace: %s", path,
                      strerror(err));
  t->path = strdup(path);
  if (!t->path) return hlb__error(HLB_ENOMEM, "spmd: out of memory for the trace path");
  t->ranks = ranks;
  t->t0_s = t->last_s = now_s;
  return 0;
}

static int grow(hlb__spmd_trace *t) {
  size_t cap = t->cap ? 2 * t->cap : 64;
  hlb__spmd_trace_interval *iv = realloc(t->iv, cap * sizeof *iv);
  if (iv) t->iv = iv;
  hlb_rank_interval *m = realloc(t->measured, cap * (size_t)t->ranks * sizeof *m);
  if (m) t->measured = m;
  if (!iv || !m) return hlb__error(HLB_ENOMEM, "spmd: out of memory for %zu traced intervals", cap);
  t->cap = cap;
  return 0;
}

int hlb__spmd_trace_interval_add(hlb__spmd_trace *t, unsigned iteration, double now_s,
                                 const hlb_rank_interval *measured, const hlb_repart_decision *d) {
  if (!t->path) return 0;
  if (t->n == t->cap && grow(t)) return HLB_ENOMEM;
  t->iv[t->n] = (hlb__spmd_trace_interval){.iteration = iteration,
                                           .t_start_s = t->last_s - t->t0_s,
                                           .t_end_s = now_s - t->t0_s,
                                           .decision = *d};
  memcpy(&t->measured[t->n * (size_t)t->ranks], measured, (size_t)t->ranks * sizeof *measured);
  t->n++;
  t->last_s = now_s;
  return 0;
}

void hlb__spmd_trace_moved(hlb__spmd_trace *t, size_t rows_moved, double seconds) {
  if (!t->path || t->n == 0) return;
  hlb__spmd_trace_interval *iv = &t->iv[t->n - 1];
  iv->redistributed = 1;
  iv->rows_moved = rows_moved;
  iv->redistribute_s = seconds;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void number(FILE *f, double x) {
  fprintf(f, isfinite(x) ? "%.9g" : "null", x);
}

/* Chrome trace events: one track per rank with a slice per interval (its time inside the
 * windows, from the interval's start), and one track of redistributions. */
static void events(FILE *f, const hlb__spmd_trace *t, const char *policy, size_t rows) {
  fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":"
             "\"hlb spmd: policy ");
  for (const char *p = policy; *p; p++)
    if (*p != '"' && *p != '\\') fputc(*p, f);
  fprintf(f, ", %zu rows, %d ranks\"}}", rows, t->ranks);
  for (int r = 0; r < t->ranks; r++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
            "\"rank %d\"}}",
            r, r);
  fprintf(f,
          ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
          "\"redistributions\"}}",
          t->ranks);
  for (size_t k = 0; k < t->n; k++) {
    const hlb__spmd_trace_interval *iv = &t->iv[k];
    for (int r = 0; r < t->ranks; r++) {
      const hlb_rank_interval *m = &t->measured[k * (size_t)t->ranks + (size_t)r];
      fprintf(f,
              ",\n{\"ph\":\"X\",\"cat\":\"interval\",\"name\":\"interval %zu\",\"pid\":1,"
              "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"rows\":%zu,\"cpu_s\":",
              k, r, iv->t_start_s * 1e6, fmax(m->real_s, 0) * 1e6, m->rows);
      number(f, m->cpu_s);
      fputs(",\"comm_s\":", f);
      number(f, m->comm_s);
      fputs("}}", f);
    }
    if (iv->redistributed)
      fprintf(f,
              ",\n{\"ph\":\"X\",\"cat\":\"redistribute\",\"name\":\"%zu rows moved\",\"pid\":1,"
              "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
              iv->rows_moved, t->ranks, iv->t_end_s * 1e6, iv->redistribute_s * 1e6);
  }
}

/* One per-rank field of interval k as a JSON array. */
static void per_rank(FILE *f, const hlb__spmd_trace *t, size_t k, const char *name, int field) {
  fprintf(f, ",\"%s\":[", name);
  for (int r = 0; r < t->ranks; r++) {
    const hlb_rank_interval *m = &t->measured[k * (size_t)t->ranks + (size_t)r];
    if (r) fputc(',', f);
    if (field == 0)
      fprintf(f, "%zu", m->rows);
    else
      number(f, field == 1 ? m->real_s : field == 2 ? m->cpu_s : field == 3 ? m->comm_s : m->work);
  }
  fputc(']', f);
}

static void figures(FILE *f, const hlb__spmd_trace *t, const char *policy, const char *params,
                    size_t rows, unsigned interval, unsigned iterations, int papi) {
  fputs("\"hlb_spmd\":{\"version\":1,\"policy\":", f);
  json_string(f, policy);
  fputs(",\"params\":", f);
  json_string(f, params);
  fprintf(f,
          ",\"rows\":%zu,\"ranks\":%d,\"interval\":%u,\"iterations\":%u,\"work\":\"%s\","
          "\"intervals\":[",
          rows, t->ranks, interval, iterations, papi ? "flops" : "row-iterations");
  for (size_t k = 0; k < t->n; k++) {
    const hlb__spmd_trace_interval *iv = &t->iv[k];
    fprintf(f, "%s\n{\"iteration\":%u,\"t_start_s\":", k ? "," : "", iv->iteration);
    number(f, iv->t_start_s);
    fputs(",\"t_end_s\":", f);
    number(f, iv->t_end_s);
    fputs(",\"imbalance\":", f);
    number(f, iv->decision.imbalance);
    fputs(",\"predicted_gain_s\":", f);
    number(f, iv->decision.predicted_gain_s);
    fprintf(f, ",\"rebalance\":%d,\"dedicated\":%d,\"long_term_load\":%d",
            iv->decision.rebalance, iv->decision.dedicated, iv->decision.long_term_load);
    per_rank(f, t, k, "rows", 0);
    per_rank(f, t, k, "real_s", 1);
    per_rank(f, t, k, "cpu_s", 2);
    per_rank(f, t, k, "comm_s", 3);
    per_rank(f, t, k, "work", 4);
    if (iv->redistributed) {
      fprintf(f, ",\"rows_moved\":%zu,\"redistribute_s\":", iv->rows_moved);
      number(f, iv->redistribute_s);
    }
    fputc('}', f);
  }
  fputs("]}", f);
}

int hlb__spmd_trace_write(const hlb__spmd_trace *t, const char *policy, const char *params,
                          size_t rows, unsigned interval, unsigned iterations, int papi) {
  if (!t->path) return 0;
  size_t len = strlen(t->path) + 5;
  char *tmp = malloc(len);
  if (!tmp) return hlb__error(HLB_ENOMEM, "spmd: out of memory writing the trace");
  snprintf(tmp, len, "%s.tmp", t->path);
  FILE *f = fopen(tmp, "w");
  int rc = 0;
  if (!f) {
    rc = hlb__error(HLB_EIO, "spmd: HLB_SPMD_TRACE=%s: cannot write %s: %s", t->path, tmp,
                    strerror(errno));
  } else {
    fputs("{\"traceEvents\":[\n", f);
    events(f, t, policy ? policy : "", rows);
    fputs("],\n", f);
    figures(f, t, policy ? policy : "", params ? params : "", rows, interval, iterations, papi);
    fputs("}\n", f);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, t->path)) {
      rc = hlb__error(HLB_EIO, "spmd: HLB_SPMD_TRACE=%s: writing the trace failed: %s", t->path,
                      strerror(errno));
      remove(tmp);
    }
  }
  free(tmp);
  return rc;
}

void hlb__spmd_trace_free(hlb__spmd_trace *t) {
  free(t->path);
  free(t->iv);
  free(t->measured);
  memset(t, 0, sizeof *t);
}
