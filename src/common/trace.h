/* Chrome trace JSON writer ("Trace Event Format"; opens in Perfetto and chrome://tracing).
 *
 * Generic: processes and threads (pid/tid) with names, complete slices ("ph":"X") with a
 * begin time and a duration in seconds, and small sets of numeric or string args. The
 * simulator writes one track per PU; the threaded executor reuses it for real runs.
 *
 * Output is deterministic: numbers are printed with a fixed format, so the same calls give
 * the same bytes.
 *
 * Thread safety: every call on one hlb__trace takes its internal mutex (`lock`), so executor
 * threads may write slices directly; slices then appear in the order the calls were made.
 */
#ifndef HLB_COMMON_TRACE_H
#define HLB_COMMON_TRACE_H

#include <stdio.h>

typedef struct hlb__trace hlb__trace;

/* One arg of a slice: a number when str is NULL, a string otherwise. */
typedef struct hlb__trace_arg {
  const char *key;
  double num;
  const char *str;
} hlb__trace_arg;

/* Create (truncate) `path` and write the header. HLB_EIO naming the file on failure. */
int hlb__trace_open(const char *path, hlb__trace **out);

/* The same on an open stream the caller keeps owning (not closed by hlb__trace_close). */
int hlb__trace_open_stream(FILE *f, hlb__trace **out);

/* Name a process (a node, a run) and a thread (a PU); the viewer shows these as track names.
 * `sort` orders the tracks (lower first). */
int hlb__trace_process(hlb__trace *t, int pid, const char *name, int sort);
int hlb__trace_thread(hlb__trace *t, int pid, int tid, const char *name, int sort);

/* A complete slice on track (pid, tid) from begin_s lasting dur_s seconds (>= 0). `cat` may be
 * NULL. */
int hlb__trace_slice(hlb__trace *t, int pid, int tid, const char *name, const char *cat,
                     double begin_s, double dur_s, const hlb__trace_arg *args, unsigned n_args);

/* Write the footer and close. Returns HLB_EIO if any write failed (the first failure is
 * reported); the object is freed either way. */
int hlb__trace_close(hlb__trace *t);

#endif
