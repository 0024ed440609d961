/* Two-level assignment of items to the nodes and PUs of a cluster (Boinski & Czarnul, The
 * Computer Journal, section 3, eq. 3; docs/plan.md).
 *
 * The manager sends node i its share d_i over the node link (one message each way, d_i *
 * in_bytes and d_i * out_bytes), the node partitions it (partition_s), sends each PU j its share
 * d_ij over the PU link (one message each way), the PU computes (time curve of the cluster
 * file: `const` is a once-per-PU setup, `linear` the per-item time), the results come back and
 * the node merges them (merge_s). Nodes work in parallel, as do the PUs of a node, so
 *
 *   T = max_i [ 2 a_i + d_i (in + out) / b_i + partition_s_i + merge_s_i
 *               + max_j ( 2 a_ij + d_ij (in + out) / b_ij + F_ij(d_ij) ) ]
 *
 * over nodes with d_i > 0 and PUs with d_ij > 0 (idle ones cost nothing). Integer d_ij, with
 * sum d_ij = D and the per-PU and per-node caps of the file; the solvers minimise T.
 *
 * Thread safety: the exact solver and hlb_plan_makespan() are pure and safe from any thread.
 * The glpk solver uses GLPK, whose environment is per thread in GLPK 5, so it is safe from
 * several threads as long as each call stays on its thread.
 */
#ifndef HLB_PLAN_H
#define HLB_PLAN_H

#include <stddef.h>

#include "hlb/cluster.h"
#include "hlb/export.h"

HLB_BEGIN_DECLS

/* Which solver hlb_plan_solve() uses. */
typedef enum hlb_plan_solver {
  HLB_PLAN_EXACT = 0, /* hlb's own: bisection on the makespan over doubles, proven optimal */
  HLB_PLAN_GLPK = 1   /* the MILP of eq. 3 given to GLPK's branch and cut */
} hlb_plan_solver;

/* Default time limit of the glpk solver: the paper ran lp_solve with 30, 60 and 90 s
 * timeouts (section 4.5) and used 60 s for its main comparisons. */
#define HLB_PLAN_DEFAULT_TIME_LIMIT_S 60.0

typedef struct hlb_plan_options {
  hlb_plan_solver solver;
  double time_limit_s; /* glpk: wall-clock limit; <= 0 means none. The exact solver ignores it */
} hlb_plan_options;

/* Defaults: exact solver, HLB_PLAN_DEFAULT_TIME_LIMIT_S. */
HLB_EXTERN void hlb_plan_options_default(hlb_plan_options *o);

/* "exact" or "glpk". */
HLB_EXTERN const char *hlb_plan_solver_name(hlb_plan_solver s);

/* Solver from its name; HLB_EINVAL naming the unknown name otherwise. */
HLB_EXTERN int hlb_plan_solver_parse(const char *name, hlb_plan_solver *out);

/* The assignment found and how it was found. Arrays are owned by the result. */
typedef struct hlb_plan_result {
  double makespan_s;  /* T of the assignment, by hlb_plan_makespan() */
  const char *solver; /* static string: "exact" or "glpk" */
  double solve_s;     /* wall-clock time of the solve */
  int optimal;        /* 1 when the solver proved the assignment optimal */
  unsigned n_nodes, n_pus;
  size_t *node_items; /* [n_nodes]: d_i */
  size_t *pu_items;   /* [n_pus], indexed like hlb_cluster.pus: d_ij */
} hlb_plan_result;

/* Assign `items` items to minimise T. opt may be NULL (defaults). On success fills *out
 * (free with hlb_plan_result_free). Errors: HLB_EINVAL for bad arguments; HLB_EINFEASIBLE
 * when the caps hold fewer than `items` (the message gives both numbers); HLB_EUNSUPPORTED
 * from glpk for a curve with quadratic, cubic or xlogx terms (the MILP is linear; the exact
 * solver handles any non-decreasing curve); HLB_ETIMEOUT when glpk found no integer solution
 * within the time limit; HLB_ERANGE when the file's times are so large that every makespan
 * overflows a double. When glpk stops at the limit with a solution, it is returned with
 * optimal = 0. */
HLB_EXTERN int hlb_plan_solve(const hlb_cluster *c, size_t items, const hlb_plan_options *opt,
                              hlb_plan_result *out);

/* Release the arrays of a result (not the struct itself); safe on a zeroed result. */
HLB_EXTERN void hlb_plan_result_free(hlb_plan_result *r);

/* T of any assignment (pu_items[n_pus]) by the formula above; node shares are the sums of
 * their PUs'. Caps are not checked here. HLB_EINVAL for NULL arguments. */
HLB_EXTERN int hlb_plan_makespan(const hlb_cluster *c, const size_t *pu_items,
                                 double *makespan_out);

HLB_END_DECLS

#endif
