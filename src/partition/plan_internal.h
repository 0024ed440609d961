/* Internals shared by the two-level assignment solvers (plan.c, plan_exact.c, plan_glpk.c).
 *
 * Both solvers and hlb_plan_makespan() evaluate times through the same few expressions below,
 * so the exact solver's bisection compares against precisely the number that is reported
 * (see the proof in plan_exact.c). */
#ifndef HLB_PARTITION_PLAN_INTERNAL_H
#define HLB_PARTITION_PLAN_INTERNAL_H

#include <stddef.h>

#include "hlb/plan.h"

/* Per-node and per-PU constants of eq. 3, precomputed once per solve. */
typedef struct hlb__plan_terms {
  const hlb_cluster *c;
  size_t items;
  double *n_fixed;          /* [n_nodes] 2 a_i + partition_s + merge_s */
  double *n_per;            /* [n_nodes] (in + out) / b_i */
  double *p_fixed;          /* [n_pus] 2 a_ij */
  double *p_per;            /* [n_pus] (in + out) / b_ij */
  size_t *pu_cap;           /* [n_pus] min(PU cap, node cap, items) */
  size_t *node_cap;         /* [n_nodes] min(node cap, sum of its PU caps, items) */
  unsigned char *pu_linear; /* [n_pus] 1 when only the const and linear terms are non-zero */
} hlb__plan_terms;

int hlb__plan_terms_init(hlb__plan_terms *t, const hlb_cluster *c, size_t items);
void hlb__plan_terms_free(hlb__plan_terms *t);

/* Node part of a node's time for a share of d items (d > 0). */
static inline double hlb__plan_node_base(const hlb__plan_terms *t, unsigned i, size_t d) {
  return t->n_fixed[i] + (double)d * t->n_per[i];
}

/* PU part for d > 0 items: its link both ways plus its compute curve. Linear curves are
 * evaluated here directly (the hot loop of the exact solver); every caller, including the
 * reported makespan, goes through this one function, so all agree to the bit. */
double hlb__plan_pu_time_curve(const hlb__plan_terms *t, unsigned j, size_t d);
static inline double hlb__plan_pu_time(const hlb__plan_terms *t, unsigned j, size_t d) {
  if (!t->pu_linear[j]) return hlb__plan_pu_time_curve(t, j, d);
  double x = (double)d;
  const double *k = t->c->pus[j].poly;
  return (t->p_fixed[j] + x * t->p_per[j]) + (k[0] + x * k[1]);
}

/* Solvers: fill r->pu_items, r->optimal; the caller does the rest of the result. */
int hlb__plan_exact(const hlb__plan_terms *t, hlb_plan_result *r);
int hlb__plan_glpk(const hlb__plan_terms *t, double time_limit_s, hlb_plan_result *r);

#endif
