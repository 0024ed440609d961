/* Chrome trace JSON of a run, written with the common trace writer (src/common/trace.h).
 * Process 1 is the run; one thread track per PU; each block is a slice (cat "block") named
 * by its range, with its transfer and compute parts as nested slices (cats "transfer",
 * "compute"), and failed blocks as cat "failed". `hlb report` reads these names. */
#include <math.h>
#include <stdio.h>

#include "common/error_internal.h"
#include "common/trace.h"
#include "hlb/exec.h"

static int names(hlb__trace *t, const hlb_exec_stats *s) {
  char buf[160];
  snprintf(buf, sizeof buf, "hlb run: policy %s, %zu items, makespan %.6f s", s->policy, s->n_items,
           s->makespan_s);
  int rc = hlb__trace_process(t, 1, buf, 0);
  for (unsigned i = 0; rc == 0 && i < s->n_pus; i++) {
    /* Throttling is emulated; the track name says so wherever the trace is viewed. */
    if (s->pu[i].throttle > 1)
      snprintf(buf, sizeof buf, "%s (%s, throttled x%g, emulated)", s->pu[i].name,
               hlb_backend_name(s->pu[i].backend), s->pu[i].throttle);
    else
      snprintf(buf, sizeof buf, "%s (%s)", s->pu[i].name, hlb_backend_name(s->pu[i].backend));
    rc = hlb__trace_thread(t, 1, (int)i, buf, (int)i);
  }
  return rc;
}

static double fin(double x) {
  return isfinite(x) ? x : 0;
}

static int block(hlb__trace *t, const hlb_decision *d) {
  char name[64];
  snprintf(name, sizeof name, "[%zu,+%zu)", d->begin, d->count);
  hlb__trace_arg args[5] = {{"begin", (double)d->begin, NULL},
                            {"count", (double)d->count, NULL},
                            {"predicted_s", isfinite(d->predicted_s) ? d->predicted_s : -1, NULL},
                            {"compute_s", fin(d->compute_s), NULL},
                            {"transfer_s", fin(d->transfer_s), NULL}};
  int tid = (int)d->pu;
  if (d->outcome == HLB_OUTCOME_FAILED) {
    double end = isfinite(d->end_s) ? d->end_s : d->time_s;
    return hlb__trace_slice(t, 1, tid, name, "failed", d->time_s, fmax(0, end - d->time_s), args,
                            2);
  }
  if (d->outcome != HLB_OUTCOME_DONE) return 0;
  double tr = fin(d->transfer_s), cp = fin(d->compute_s);
  double start = d->end_s - cp - tr;
  int rc = hlb__trace_slice(t, 1, tid, name, "block", start, cp + tr, args, 5);
  if (rc == 0) rc = hlb__trace_slice(t, 1, tid, "transfer", "transfer", start, tr, args, 2);
  if (rc == 0) rc = hlb__trace_slice(t, 1, tid, "compute", "compute", start + tr, cp, args, 2);
  return rc;
}

int hlb_exec_write_trace(const hlb_exec_stats *s, const char *path) {
  if (!s || !path)
    return hlb__error(HLB_EINVAL, "hlb_exec_write_trace: stats and path are required");
  if (s->n_log == 0)
    return hlb__error(HLB_EINVAL, "%s: the run kept no decision log (keep_log = 0)", path);
  hlb__trace *t = NULL;
  int rc = hlb__trace_open(path, &t);
  if (rc) return rc;
  rc = names(t, s);
  for (size_t k = 0; rc == 0 && k < s->n_log; k++)
    rc = block(t, &s->log[k]);
  int rc2 = hlb__trace_close(t);
  return rc ? rc : rc2;
}
