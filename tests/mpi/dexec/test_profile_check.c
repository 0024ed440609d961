/* Checks a cluster file written by `hlb profile-links`: it loads with hlb_cluster_load (the
 * loader of hlb plan and hlb sim), has one node per rank and the expected PUs, and every
 * measured link and time is physical: latency >= 0 (> 0 between ranks), bandwidth finite
 * and > 0, a per-item time > 0.
 *   test_profile_check FILE N_RANKS PU_NAME...   (PU names expected in the file)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlb/cluster.h"
#include "hlb/error.h"

#include "mpi/check.h"

static int physical(const hlb_link *l) {
  return isfinite(l->latency_s) && l->latency_s >= 0 && isfinite(l->bandwidth_Bps) &&
         l->bandwidth_Bps > 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_profile_check FILE N_RANKS PU_NAME...\n");
    return 2;
  }
  hlb_cluster *c = NULL;
  int rc = hlb_cluster_load(argv[1], &c);
  if (rc) {
    fprintf(stderr, "%s\n", hlb_last_error());
    return 1;
  }
  unsigned ranks = (unsigned)atoi(argv[2]);
  CHECK(c->n_nodes == ranks, "%u nodes, expected %u (one per rank)", c->n_nodes, ranks);
  for (unsigned r = 0; r < c->n_nodes; r++) {
    const hlb_link *l = &c->nodes[r].link;
    CHECK(physical(l), "node %u: link latency %g s, bandwidth %g B/s", r, l->latency_s,
          l->bandwidth_Bps);
    CHECK(r == 0 || l->latency_s > 0, "node %u: a link between ranks has latency %g s", r,
          l->latency_s);
  }
  for (unsigned p = 0; p < c->n_pus; p++) {
    const hlb_cluster_pu *pu = &c->pus[p];
    /* Host cores have no link (free: latency 0, infinite bandwidth); devices a measured one. */
    int is_cpu = !strcmp(pu->kind, "cpu");
    int free_link = pu->link.latency_s == 0 && isinf(pu->link.bandwidth_Bps);
    CHECK(is_cpu ? free_link : physical(&pu->link),
          "pu %s (%s): link latency %g s, bandwidth %g B/s", pu->name, pu->kind, pu->link.latency_s,
          pu->link.bandwidth_Bps);
    CHECK(pu->poly[1] > 0 && pu->poly[0] >= 0, "pu %s: time %g + %g x", pu->name, pu->poly[0],
          pu->poly[1]);
  }
  for (int k = 3; k < argc; k++)
    CHECK(hlb_cluster_find_pu(c, argv[k]) >= 0, "no pu '%s' in the file", argv[k]);
  CHECK(c->n_pus == (unsigned)(argc - 3), "%u PUs, expected %d", c->n_pus, argc - 3);
  hlb_cluster_free(c);
  return check_failures ? 1 : 0;
}
