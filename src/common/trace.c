#include "common/trace.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"

struct hlb__trace {
  FILE *f;
  int owns_file;
  int first;            /* no event written yet: no comma before the next */
  int failed;           /* a write failed; reported at close */
  pthread_mutex_t lock; /* guards every field and the stream */
};

/* JSON string with the escapes the format needs; names come from user files. */
static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* Finite numbers only: JSON has no NaN or infinity, so those become null. */
static void put_number(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.17g", x);
  else
    fputs("null", f);
}

/* Microseconds with nanosecond resolution, the unit of the format's "ts" and "dur". */
static void put_us(FILE *f, double s) {
  if (isfinite(s))
    fprintf(f, "%.3f", s * 1e6);
  else
    fputs("0", f);
}

static int start(FILE *f, int owns, hlb__trace **out) {
  hlb__trace *t = calloc(1, sizeof *t);
  if (!t) {
    if (owns) fclose(f);
    return hlb__error(HLB_ENOMEM, "trace: out of memory");
  }
  t->f = f;
  t->owns_file = owns;
  t->first = 1;
  pthread_mutex_init(&t->lock, NULL);
  if (fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f) < 0) t->failed = 1;
  *out = t;
  return 0;
}

int hlb__trace_open(const char *path, hlb__trace **out) {
  FILE *f = fopen(path, "w");
  if (!f) return hlb__error(HLB_EIO, "%s: cannot write trace: %s", path, strerror(errno));
  return start(f, 1, out);
}

int hlb__trace_open_stream(FILE *f, hlb__trace **out) {
  if (!f) return hlb__error(HLB_EINVAL, "trace: stream is NULL");
  return start(f, 0, out);
}

/* Comma between events; the caller holds the lock. */
static void next_event_locked(hlb__trace *t) {
  if (!t->first) fputs(",\n", t->f);
  t->first = 0;
}

static int meta(hlb__trace *t, int pid, int tid, int with_tid, const char *what, const char *name,
                int sort) {
  pthread_mutex_lock(&t->lock);
  FILE *f = t->f;
  for (int k = 0; k < 2; k++) {
    next_event_locked(t);
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d", pid);
    if (with_tid) fprintf(f, ",\"tid\":%d", tid);
    if (k == 0) {
      fprintf(f, ",\"name\":\"%s_name\",\"args\":{\"name\":", what);
      put_string(f, name);
    } else {
      fprintf(f, ",\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%d", what, sort);
    }
    fputs("}}", f);
  }
  if (ferror(f)) t->failed = 1;
  pthread_mutex_unlock(&t->lock);
  return 0;
}

int hlb__trace_process(hlb__trace *t, int pid, const char *name, int sort) {
  return meta(t, pid, 0, 0, "process", name, sort);
}

int hlb__trace_thread(hlb__trace *t, int pid, int tid, const char *name, int sort) {
  return meta(t, pid, tid, 1, "thread", name, sort);
}

int hlb__trace_slice(hlb__trace *t, int pid, int tid, const char *name, const char *cat,
                     double begin_s, double dur_s, const hlb__trace_arg *args, unsigned n_args) {
  if (!(dur_s >= 0))
    return hlb__error(HLB_EINVAL, "trace: slice '%s' on %d/%d: duration must be >= 0, got %g", name,
                      pid, tid, dur_s);
  pthread_mutex_lock(&t->lock);
  FILE *f = t->f;
  next_event_locked(t);
  fputs("{\"ph\":\"X\",\"name\":", f);
  put_string(f, name);
  if (cat) {
    fputs(",\"cat\":", f);
    put_string(f, cat);
  }
  fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":", pid, tid);
  put_us(f, begin_s);
  fputs(",\"dur\":", f);
  put_us(f, dur_s);
  if (n_args) {
    fputs(",\"args\":{", f);
    for (unsigned i = 0; i < n_args; i++) {
      if (i) fputc(',', f);
      put_string(f, args[i].key);
      fputc(':', f);
      if (args[i].str)
        put_string(f, args[i].str);
      else
        put_number(f, args[i].num);
    }
    fputc('}', f);
  }
  fputc('}', f);
  if (ferror(f)) t->failed = 1;
  pthread_mutex_unlock(&t->lock);
  return 0;
}

int hlb__trace_close(hlb__trace *t) {
  if (!t) return 0;
  fputs("\n]}\n", t->f);
  int failed = t->failed || ferror(t->f);
  if (t->owns_file) {
    if (fclose(t->f) != 0) failed = 1;
  } else if (fflush(t->f) != 0) {
    failed = 1;
  }
  pthread_mutex_destroy(&t->lock);
  free(t);
  return failed ? hlb__error(HLB_EIO, "trace: write failed") : 0;
}
