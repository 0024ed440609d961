/* The reference makespan of a simulation (hlb_sim_lower_bound; docs/simulator.md). */
#include <math.h>

#include "common/error_internal.h"
#include "hlb/partition.h"
#include "hlb/sim.h"

#include <stdlib.h>

static double per_byte(const hlb_link *l) {
  return isinf(l->bandwidth_Bps) ? 0.0 : 1.0 / l->bandwidth_Bps;
}

void hlb_sim_pu_curve(const hlb_cluster *c, unsigned p, hlb_curve *out) {
  const hlb_cluster_pu *cp = &c->pus[p];
  const hlb_link *ln = &c->nodes[cp->node].link, *lp = &cp->link;
  *out = cp->time;
  /* One block in and out over both links, uncontended: bytes at each link's bandwidth and
   * each latency once per direction. */
  out->transfer_per_item = (c->item_in_bytes + c->item_out_bytes) * (per_byte(ln) + per_byte(lp));
  out->transfer_fixed = 2.0 * (ln->latency_s + lp->latency_s);
}

int hlb_sim_lower_bound(const hlb_cluster *c, size_t n_items, double *out) {
  if (!c || !out || c->n_pus == 0 || n_items == 0)
    return hlb__error(HLB_EINVAL, "sim: lower bound needs a cluster with PUs and items > 0");
  hlb_curve *k = malloc(c->n_pus * sizeof *k);
  double *x = malloc(c->n_pus * sizeof *x);
  int rc = 0;
  if (!k || !x) rc = hlb__error(HLB_ENOMEM, "sim: lower bound for %u PUs: out of memory", c->n_pus);
  for (unsigned p = 0; rc == 0 && p < c->n_pus; p++)
    hlb_sim_pu_curve(c, p, &k[p]);
  if (rc == 0) rc = hlb_eft_solve(k, NULL, c->n_pus, (double)n_items, x, out);
  if (rc < 0) rc = hlb__error_prefix(rc, "sim: lower bound: ");
  free(k);
  free(x);
  return rc;
}
