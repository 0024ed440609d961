/* The glpk solver: the mixed-integer program of eq. 3 (Boinski & Czarnul, section 3) given to
 * GLPK's branch and cut, as the paper gave it to lp_solve.
 *
 * Columns: T (continuous, >= 0); per PU j an integer d_j in [0, cap_j] and a binary y_j
 * ("PU j is used"); per node i a binary z_i ("node i is used"). Minimise T subject to
 *   sum_j d_j = D
 *   d_j <= cap_j y_j                         (fixed PU costs only when it works)
 *   sum_{j in i} d_j <= cap_i z_i            (fixed node costs only when it works)
 *   T >= nfix_i z_i + nper_i sum_{j in i} d_j + (pfix_j + c0_j) y_j + (pper_j + c1_j) d_j
 *                                            (one row per PU: eq. 3's two max operators)
 * The binaries give an idle PU or node zero cost, as the exact solver and hlb_plan_makespan()
 * do. Only linear curves fit a MILP; other curves are refused (HLB_EUNSUPPORTED). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include <glpk.h>

#include "common/error_internal.h"
#include "partition/plan_internal.h"

/* Sparse matrix in GLPK's 1-based triplet form. */
typedef struct triplets {
  int *ia, *ja;
  double *ar;
  int n;
} triplets;

static void put(triplets *m, int row, int col, double v) {
  m->n++;
  m->ia[m->n] = row;
  m->ja[m->n] = col;
  m->ar[m->n] = v;
}

/* GLPK aborts the process on a non-finite coefficient, so overflowing ones (latencies near
 * DBL_MAX doubled) are refused here first. */
static int check_finite(const hlb__plan_terms *t) {
  const hlb_cluster *c = t->c;
  for (unsigned i = 0; i < c->n_nodes; i++)
    if (!isfinite(t->n_fixed[i]) || !isfinite(t->n_per[i]))
      return hlb__error(HLB_ERANGE,
                        "plan glpk: node '%s': link or partition/merge times overflow "
                        "a double",
                        c->nodes[i].name);
  for (unsigned j = 0; j < c->n_pus; j++)
    if (!isfinite(t->p_fixed[j] + c->pus[j].poly[0]) || !isfinite(t->p_per[j] + c->pus[j].poly[1]))
      return hlb__error(HLB_ERANGE,
                        "plan glpk: PU '%s': link or time coefficients overflow a "
                        "double",
                        c->pus[j].name);
  return 0;
}

static int check_linear(const hlb__plan_terms *t) {
  for (unsigned j = 0; j < t->c->n_pus; j++)
    if (!t->pu_linear[j]) {
      const double *k = t->c->pus[j].poly;
      return hlb__error(HLB_EUNSUPPORTED,
                        "plan glpk: PU '%s' has a non-linear time curve (quadratic %g, cubic %g, "
                        "xlogx %g); the MILP models const + linear only, use the exact solver",
                        t->c->pus[j].name, k[2], k[3], k[4]);
    }
  return 0;
}

/* Column numbers: T is 1, then d_j, y_j per PU, then z_i per node. */
static int col_d(unsigned j) {
  return 2 + 2 * (int)j;
}
static int col_y(unsigned j) {
  return 3 + 2 * (int)j;
}
static int col_z(const hlb__plan_terms *t, unsigned i) {
  return 2 + 2 * (int)t->c->n_pus + (int)i;
}

static void add_columns(glp_prob *lp, const hlb__plan_terms *t) {
  const hlb_cluster *c = t->c;
  glp_add_cols(lp, 1 + 2 * (int)c->n_pus + (int)c->n_nodes);
  glp_set_col_bnds(lp, 1, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(lp, 1, 1.0);
  for (unsigned j = 0; j < c->n_pus; j++) {
    glp_set_col_kind(lp, col_d(j), GLP_IV);
    glp_set_col_bnds(lp, col_d(j), GLP_DB, 0.0, (double)t->pu_cap[j]);
    glp_set_col_kind(lp, col_y(j), GLP_BV);
  }
  for (unsigned i = 0; i < c->n_nodes; i++)
    glp_set_col_kind(lp, col_z(t, i), GLP_BV);
}

/* Rows and their coefficients; see the formulation at the top of the file. */
static void add_rows(glp_prob *lp, const hlb__plan_terms *t, triplets *m) {
  const hlb_cluster *c = t->c;
  int row = glp_add_rows(lp, 1 + 2 * (int)c->n_pus + (int)c->n_nodes);
  glp_set_row_bnds(lp, row, GLP_FX, (double)t->items, (double)t->items);
  for (unsigned j = 0; j < c->n_pus; j++)
    put(m, row, col_d(j), 1.0);
  row++;
  for (unsigned i = 0; i < c->n_nodes; i++) {
    const hlb_cluster_node *n = &c->nodes[i];
    unsigned j0 = n->first_pu, j1 = n->first_pu + n->n_pus;
    glp_set_row_bnds(lp, row, GLP_UP, 0.0, 0.0); /* sum d_j - cap_i z_i <= 0 */
    for (unsigned j = j0; j < j1; j++)
      put(m, row, col_d(j), 1.0);
    put(m, row, col_z(t, i), -(double)t->node_cap[i]);
    row++;
    for (unsigned j = j0; j < j1; j++) {
      glp_set_row_bnds(lp, row, GLP_UP, 0.0, 0.0); /* d_j - cap_j y_j <= 0 */
      put(m, row, col_d(j), 1.0);
      put(m, row, col_y(j), -(double)t->pu_cap[j]);
      row++;
      const double *k = c->pus[j].poly;
      glp_set_row_bnds(lp, row, GLP_LO, 0.0, 0.0); /* T - (node + PU time) >= 0 */
      put(m, row, 1, 1.0);
      put(m, row, col_z(t, i), -t->n_fixed[i]);
      for (unsigned q = j0; q < j1; q++)
        put(m, row, col_d(q), -(t->n_per[i] + (q == j ? t->p_per[j] + k[1] : 0.0)));
      put(m, row, col_y(j), -(t->p_fixed[j] + k[0]));
      row++;
    }
  }
}

static int build_problem(glp_prob *lp, const hlb__plan_terms *t) {
  const hlb_cluster *c = t->c;
  size_t nz = 1 + c->n_pus + 2 * (size_t)c->n_nodes + 2 * (size_t)c->n_pus;
  for (unsigned i = 0; i < c->n_nodes; i++)
    nz += (size_t)c->nodes[i].n_pus * (c->nodes[i].n_pus + 4);
  triplets m = {malloc((nz + 1) * sizeof(int)), malloc((nz + 1) * sizeof(int)),
                malloc((nz + 1) * sizeof(double)), 0};
  if (!m.ia || !m.ja || !m.ar) {
    free(m.ia), free(m.ja), free(m.ar);
    return hlb__error(HLB_ENOMEM, "plan glpk: out of memory for %zu coefficients", nz);
  }
  glp_set_obj_dir(lp, GLP_MIN);
  add_columns(lp, t);
  add_rows(lp, t, &m);
  glp_load_matrix(lp, m.n, m.ia, m.ja, m.ar);
  free(m.ia), free(m.ja), free(m.ar);
  return 0;
}

static int run(glp_prob *lp, double time_limit_s, int *proven) {
  glp_iocp p;
  glp_init_iocp(&p);
  p.presolve = GLP_ON; /* also solves the root LP, so no glp_simplex call is needed */
  p.msg_lev = GLP_MSG_OFF;
  /* GLPK prunes a branch when its bound is within tol_obj (relative, default 1e-7) of the
   * incumbent; near-ties that close would make its "optimum" differ from the true one. */
  p.tol_obj = 1e-12;
  if (time_limit_s > 0)
    p.tm_lim = time_limit_s * 1000 >= INT_MAX ? INT_MAX : (int)ceil(time_limit_s * 1000);
  int ret = glp_intopt(lp, &p);
  int st = glp_mip_status(lp);
  *proven = ret == 0 && st == GLP_OPT;
  if (st == GLP_OPT || st == GLP_FEAS)
    return 0; /* at the time limit with an incumbent: returned, not proven */
  if (ret == GLP_ETMLIM)
    return hlb__error(HLB_ETIMEOUT, "plan glpk: no integer solution within the %g s time limit",
                      time_limit_s);
  if (st == GLP_NOFEAS || ret == GLP_ENOPFS)
    return hlb__error(HLB_EINFEASIBLE, "plan glpk: GLPK found the program infeasible");
  return hlb__error(HLB_ENUMERIC, "plan glpk: glp_intopt failed (return code %d, status %d)", ret,
                    st);
}

int hlb__plan_glpk(const hlb__plan_terms *t, double time_limit_s, hlb_plan_result *r) {
  int rc = check_linear(t);
  if (!rc) rc = check_finite(t);
  if (rc) return rc;
  r->optimal = 0;
  if (t->items == 0) {
    r->optimal = 1; /* nothing to place: all zero, as calloc left it */
    return 0;
  }
  glp_term_out(GLP_OFF);
  glp_prob *lp = glp_create_prob();
  rc = build_problem(lp, t);
  int proven = 0;
  if (!rc) rc = run(lp, time_limit_s, &proven);
  for (unsigned j = 0; !rc && j < t->c->n_pus; j++) {
    double v = glp_mip_col_val(lp, col_d(j));
    /* GLPK's integers are integral within tol_int (1e-5); round and let plan.c verify. */
    r->pu_items[j] = v > 0 ? (size_t)llround(v) : 0;
  }
  r->optimal = !rc && proven;
  glp_delete_prob(lp);
  return rc;
}
