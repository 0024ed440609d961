/* Two-level assignment: the model of eq. 3 (Boinski & Czarnul, section 3), its evaluation,
 * and the solver dispatch. The solvers themselves are in plan_exact.c and plan_glpk.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "partition/plan_internal.h"

/* Beyond 2^53 a double no longer holds every item count exactly, and the times below are
 * computed in doubles. */
#define PLAN_MAX_ITEMS 9007199254740992.0

void hlb_plan_options_default(hlb_plan_options *o) {
  o->solver = HLB_PLAN_EXACT;
  o->time_limit_s = HLB_PLAN_DEFAULT_TIME_LIMIT_S;
}

const char *hlb_plan_solver_name(hlb_plan_solver s) {
  switch (s) {
  case HLB_PLAN_EXACT:
    return "exact";
  case HLB_PLAN_GLPK:
    return "glpk";
  }
  return "?";
}

int hlb_plan_solver_parse(const char *name, hlb_plan_solver *out) {
  if (name && strcmp(name, "exact") == 0)
    *out = HLB_PLAN_EXACT;
  else if (name && strcmp(name, "glpk") == 0)
    *out = HLB_PLAN_GLPK;
  else
    return hlb__error(HLB_EINVAL, "unknown plan solver '%s' (expected exact or glpk)",
                      name ? name : "(null)");
  return 0;
}

/* (in + out) / b: time per item over a link, both directions. An infinite bandwidth (a free
 * link) gives 0 even when no bytes move, where 0 / inf would too but 0 * inf would not. */
static double per_item(const hlb_cluster *c, const hlb_link *l) {
  return isinf(l->bandwidth_Bps) ? 0.0 : (c->item_in_bytes + c->item_out_bytes) / l->bandwidth_Bps;
}

static size_t min_size(size_t a, size_t b) {
  return a < b ? a : b;
}
static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

int hlb__plan_terms_init(hlb__plan_terms *t, const hlb_cluster *c, size_t items) {
  memset(t, 0, sizeof *t);
  t->c = c;
  t->items = items;
  unsigned nn = c->n_nodes, np = c->n_pus;
  t->n_fixed = malloc(nn * sizeof *t->n_fixed);
  t->n_per = malloc(nn * sizeof *t->n_per);
  t->node_cap = malloc(nn * sizeof *t->node_cap);
  t->p_fixed = malloc(np * sizeof *t->p_fixed);
  t->p_per = malloc(np * sizeof *t->p_per);
  t->pu_cap = malloc(np * sizeof *t->pu_cap);
  t->pu_linear = malloc(np);
  if (!t->n_fixed || !t->n_per || !t->node_cap || !t->p_fixed || !t->p_per || !t->pu_cap ||
      !t->pu_linear) {
    hlb__plan_terms_free(t);
    return hlb__error(HLB_ENOMEM, "plan: out of memory for %u nodes, %u PUs", nn, np);
  }
  for (unsigned i = 0; i < nn; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    /* One message each way per node: latency twice (eq. 3's a_Ni in both brackets). */
    t->n_fixed[i] = 2 * n->link.latency_s + n->partition_s + n->merge_s;
    t->n_per[i] = per_item(c, &n->link);
    size_t node_max = min_size(n->max_items, items), sum = 0;
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      const hlb_cluster_pu *p = &c->pus[j];
      t->p_fixed[j] = 2 * p->link.latency_s;
      t->p_per[j] = per_item(c, &p->link);
      t->pu_cap[j] = min_size(p->max_items, node_max);
      t->pu_linear[j] = p->poly[2] == 0 && p->poly[3] == 0 && p->poly[4] == 0;
      sum = min_size(sat_add(sum, t->pu_cap[j]), items);
    }
    t->node_cap[i] = min_size(node_max, sum);
  }
  return 0;
}

void hlb__plan_terms_free(hlb__plan_terms *t) {
  free(t->n_fixed);
  free(t->n_per);
  free(t->node_cap);
  free(t->p_fixed);
  free(t->p_per);
  free(t->pu_cap);
  free(t->pu_linear);
  memset(t, 0, sizeof *t);
}

double hlb__plan_pu_time_curve(const hlb__plan_terms *t, unsigned j, size_t d) {
  double x = (double)d;
  return (t->p_fixed[j] + x * t->p_per[j]) + hlb_curve_compute(&t->c->pus[j].time, x);
}

/* T of an assignment with the terms' expressions; node shares are summed here. */
static double eval_makespan(const hlb__plan_terms *t, const size_t *pu_items) {
  const hlb_cluster *c = t->c;
  double T = 0;
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    size_t d = 0;
    double pu_max = 0;
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      if (pu_items[j] == 0) continue; /* an idle PU costs nothing */
      d += pu_items[j];
      double f = hlb__plan_pu_time(t, j, pu_items[j]);
      pu_max = f > pu_max ? f : pu_max;
    }
    if (d == 0) continue; /* an idle node costs nothing */
    double node_t = hlb__plan_node_base(t, i, d) + pu_max;
    T = node_t > T ? node_t : T;
  }
  return T;
}

int hlb_plan_makespan(const hlb_cluster *c, const size_t *pu_items, double *makespan_out) {
  if (!c || !pu_items || !makespan_out)
    return hlb__error(HLB_EINVAL, "hlb_plan_makespan: NULL argument");
  hlb__plan_terms t;
  int rc = hlb__plan_terms_init(&t, c, SIZE_MAX);
  if (rc) return rc;
  *makespan_out = eval_makespan(&t, pu_items);
  hlb__plan_terms_free(&t);
  return 0;
}

void hlb_plan_result_free(hlb_plan_result *r) {
  if (!r) return;
  free(r->node_items);
  free(r->pu_items);
  r->node_items = NULL;
  r->pu_items = NULL;
}

static int check_feasible(const hlb__plan_terms *t) {
  size_t total = 0;
  for (unsigned i = 0; i < t->c->n_nodes; i++)
    total = min_size(sat_add(total, t->node_cap[i]), t->items);
  if (total < t->items)
    return hlb__error(HLB_EINFEASIBLE,
                      "plan: %zu items asked, but the per-node and per-PU max_items caps hold at "
                      "most %zu",
                      t->items, total);
  return 0;
}

/* The solver's assignment must hold every item within the caps; anything else is a bug (or a
 * numerical failure inside GLPK) and is reported rather than returned. */
static int verify(const hlb__plan_terms *t, const hlb_plan_result *r) {
  size_t sum = 0;
  for (unsigned i = 0; i < t->c->n_nodes; i++) {
    const hlb_cluster_node *n = &t->c->nodes[i];
    size_t d = 0;
    for (unsigned j = n->first_pu; j < n->first_pu + n->n_pus; j++) {
      if (r->pu_items[j] > t->pu_cap[j])
        return hlb__error(HLB_ENUMERIC, "plan %s: PU '%s' got %zu items, cap %zu", r->solver,
                          t->c->pus[j].name, r->pu_items[j], t->pu_cap[j]);
      d += r->pu_items[j];
    }
    if (d > n->max_items)
      return hlb__error(HLB_ENUMERIC, "plan %s: node '%s' got %zu items, cap %zu", r->solver,
                        n->name, d, n->max_items);
    r->node_items[i] = d;
    sum += d;
  }
  if (sum != t->items)
    return hlb__error(HLB_ENUMERIC, "plan %s: assignment holds %zu items, not %zu", r->solver, sum,
                      t->items);
  return 0;
}

static int run_solver(const hlb__plan_terms *t, const hlb_plan_options *o, hlb_plan_result *r) {
  int rc = check_feasible(t);
  if (rc) return rc;
  if (o->solver == HLB_PLAN_GLPK)
    rc = hlb__plan_glpk(t, o->time_limit_s, r);
  else
    rc = hlb__plan_exact(t, r);
  if (!rc) rc = verify(t, r);
  if (!rc) r->makespan_s = eval_makespan(t, r->pu_items);
  return rc;
}

int hlb_plan_solve(const hlb_cluster *c, size_t items, const hlb_plan_options *opt,
                   hlb_plan_result *out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_plan_solve: out is NULL");
  memset(out, 0, sizeof *out);
  if (!c || c->n_nodes == 0 || c->n_pus == 0)
    return hlb__error(HLB_EINVAL, "hlb_plan_solve: cluster is NULL or has no PU");
  if ((double)items > PLAN_MAX_ITEMS)
    return hlb__error(HLB_EINVAL, "hlb_plan_solve: items must be <= 2^53, got %zu", items);
  hlb_plan_options o;
  hlb_plan_options_default(&o);
  if (opt) o = *opt;
  if (o.solver != HLB_PLAN_EXACT && o.solver != HLB_PLAN_GLPK)
    return hlb__error(HLB_EINVAL, "hlb_plan_solve: unknown solver %d", (int)o.solver);
  if (isnan(o.time_limit_s)) return hlb__error(HLB_EINVAL, "hlb_plan_solve: time_limit_s is NaN");
  out->solver = hlb_plan_solver_name(o.solver);
  out->n_nodes = c->n_nodes;
  out->n_pus = c->n_pus;
  out->node_items = calloc(c->n_nodes, sizeof *out->node_items);
  out->pu_items = calloc(c->n_pus, sizeof *out->pu_items);
  if (!out->node_items || !out->pu_items) {
    hlb_plan_result_free(out);
    return hlb__error(HLB_ENOMEM, "hlb_plan_solve: out of memory");
  }
  double t0 = hlb__now();
  hlb__plan_terms t;
  int rc = hlb__plan_terms_init(&t, c, items);
  if (!rc) {
    rc = run_solver(&t, &o, out);
    hlb__plan_terms_free(&t);
  }
  out->solve_s = hlb__now() - t0;
  if (rc) hlb_plan_result_free(out);
  return rc;
}
