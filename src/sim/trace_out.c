/* Chrome trace export of simulated runs (hlb_sim_write_trace). */
#include <stdio.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "common/trace.h"
#include "hlb/sim.h"

static const char *const phase_name[] = {"in", "compute", "out"};

/* One process per (run, node) so Perfetto groups a node's PUs; tid is the PU index. */
static int write_tracks(hlb__trace *t, const hlb_cluster *c, unsigned run, const char *label) {
  char name[256];
  for (unsigned n = 0; n < c->n_nodes; n++) {
    int pid = (int)(run * c->n_nodes + n);
    snprintf(name, sizeof name, "%s / %s", label, c->nodes[n].name);
    int rc = hlb__trace_process(t, pid, name, pid);
    for (unsigned p = c->nodes[n].first_pu; rc == 0 && p < c->nodes[n].first_pu + c->nodes[n].n_pus;
         p++) {
      snprintf(name, sizeof name, "%s (%s)", c->pus[p].name, c->pus[p].kind);
      rc = hlb__trace_thread(t, pid, (int)p, name, (int)p);
    }
    if (rc) return rc;
  }
  return 0;
}

static int write_slices(hlb__trace *t, const hlb_cluster *c, unsigned run,
                        const hlb_sim_result *r) {
  for (size_t i = 0; i < r->n_slices; i++) {
    const hlb_sim_slice *sl = &r->slices[i];
    int pid = (int)(run * c->n_nodes + c->pus[sl->pu].node);
    hlb__trace_arg args[4] = {{"begin", (double)sl->begin, NULL},
                              {"items", (double)sl->count, NULL},
                              {"lost", 0, sl->lost ? "yes" : "no"},
                              {"pu", 0, c->pus[sl->pu].name}};
    int rc = hlb__trace_slice(t, pid, (int)sl->pu, phase_name[sl->phase],
                              sl->phase == HLB_SIM_PHASE_COMPUTE ? "compute" : "transfer",
                              sl->start_s, sl->end_s - sl->start_s, args, 4);
    if (rc) return rc;
  }
  return 0;
}

int hlb_sim_write_trace(const char *path, const hlb_cluster *c, const hlb_sim_result *const *runs,
                        const char *const *labels, unsigned n_runs) {
  if (!path || !c || (n_runs && (!runs || !labels)))
    return hlb__error(HLB_EINVAL, "sim trace: path, cluster and runs must not be NULL");
  hlb__trace *t = NULL;
  int rc = hlb__trace_open(path, &t);
  for (unsigned i = 0; rc == 0 && i < n_runs; i++) {
    rc = write_tracks(t, c, i, labels[i]);
    if (rc == 0) rc = write_slices(t, c, i, runs[i]);
  }
  if (t) {
    int rc2 = hlb__trace_close(t);
    if (rc == 0 && rc2) rc = hlb__error_prefix(rc2, "%s: ", path);
  }
  return rc;
}
