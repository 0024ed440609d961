/* One-dimensional partitioning of a cell sequence between ranks (Issakhov et al., Issakhov,
 * Abylkasymova, Mansurova 2021): the exact chains-on-chains partitioner (CCP), the diffusive
 * refinement of the split offsets (Issakhov et al., eq. 5-7), the 25 % truncated mean of per-step
 * timings, the per-type weight estimate A c ~= l by least squares (Issakhov et al., eq. 3-4) and
 * the imbalance metrics I%, I_t, I_T (Issakhov et al., section 1).
 *
 * A partition of m cells between P ranks is given by P + 1 offsets o_0 = 0 <= o_1 <= ... <=
 * o_P = m: rank p owns the cells [o_p, o_{p+1}). Parts may be empty. The MPI layer turns
 * offsets into counts (counts[p] = o[p+1] - o[p]) and back.
 *
 * Every function is pure: no global state, caller-provided output arrays, and no allocation
 * except where a function says so (hlb_ccp_solve for its prefix sums, hlb_truncated_mean
 * without a work buffer, hlb_weights_estimate for LAPACK). All of them are safe to call from
 * any thread at the same time on different outputs.
 */
#ifndef HLB_CCP_H
#define HLB_CCP_H

#include <stddef.h>

#include "hlb/export.h"

HLB_BEGIN_DECLS

/* ---- exact chains-on-chains partitioning ------------------------------------------------ */

/* prefix_out[0] = 0 and prefix_out[k] = w[0] + ... + w[k-1] for k = 1..m (m + 1 entries).
 * HLB_EINVAL for m == 0 or a weight that is negative or not finite (naming its index);
 * HLB_ERANGE when the total overflows. */
HLB_EXTERN int hlb_ccp_prefix(const double *w, size_t m, double *prefix_out);

/* Exact CCP on prefix sums (from hlb_ccp_prefix): offsets_out (P + 1 entries) minimising the
 * bottleneck max_p (prefix[o_{p+1}] - prefix[o_p]) / speed[p] over contiguous splits with the
 * ranks in their given order. speed == NULL means all ranks have speed 1. *bottleneck_out
 * (may be NULL) gets the optimum. The optimum is exact for the part loads computed as
 * differences of prefix sums (so exact outright for integer-valued weights). Among optimal
 * splits, this one gives each rank in turn the longest part it can take (later ranks may be
 * left empty or light). No allocation: O(m) to check the prefix sums, then O(P log m) per
 * probe at worst (each search starts where the previous probe ended), a few dozen probes.
 * HLB_EINVAL for m == 0, P == 0, a speed that is not finite and > 0, or prefix sums that do not
 * start at 0, decrease, or are not finite. */
HLB_EXTERN int hlb_ccp_solve_prefix(const double *prefix, size_t m, const double *speed, unsigned P,
                                    size_t *offsets_out, double *bottleneck_out);

/* hlb_ccp_prefix + hlb_ccp_solve_prefix: allocates the m + 1 prefix sums (HLB_ENOMEM). */
HLB_EXTERN int hlb_ccp_solve(const double *w, size_t m, const double *speed, unsigned P,
                             size_t *offsets_out, double *bottleneck_out);

/* Check that offsets (P + 1 entries) are a partition of m cells: o_0 = 0, non-decreasing,
 * o_P = m. HLB_EINVAL naming the first offending entry. */
HLB_EXTERN int hlb_ccp_check_offsets(const size_t *offsets, unsigned P, size_t m);

/* Offsets (P + 1 entries) from per-rank counts, as the repartition policies and the MPI layer
 * keep them: o_0 = 0, o_{p+1} = o_p + counts[p]. HLB_EINVAL for P == 0 or counts that do not
 * add up to m (naming the sum). */
HLB_EXTERN int hlb_ccp_offsets_from_counts(const size_t *counts, unsigned P, size_t m,
                                           size_t *offsets_out);

/* Per-rank counts (P entries) of a partition: counts[p] = o_{p+1} - o_p. HLB_EINVAL for
 * offsets that are not a partition of m cells. counts_out may not alias offsets. */
HLB_EXTERN int hlb_ccp_counts_from_offsets(const size_t *offsets, unsigned P, size_t m,
                                           size_t *counts_out);

/* Bottleneck max_p (sum of w over part p) / speed[p] of a given partition (speed NULL: all 1);
 * part sums are added cell by cell (for non-integer weights this may differ in the last bits
 * from the prefix-difference figure of hlb_ccp_solve). HLB_EINVAL for bad weights, speeds or
 * offsets. */
HLB_EXTERN int hlb_ccp_evaluate(const double *w, size_t m, const double *speed, unsigned P,
                                const size_t *offsets, double *bottleneck_out);

/* ---- measured loads (Issakhov et al., eq. 1-2)
 * ------------------------------------------------------- */

/* Trimming of the truncated mean of Issakhov et al. section 1: r_i is "the 25 % truncated mean" of
 * the recent per-step compute times. hlb reads that as 25 % cut from EACH end (the interquartile
 * mean, as scipy.stats.trim_mean(x, 0.25)). */
#define HLB_TRUNCATED_MEAN_TRIM 0.25

/* Truncated mean of a window of n timings: sort, drop floor(trim * n) values at each end, and
 * average the rest (n = 1, 2, 3 with trim 0.25: the plain mean; n = 4: the mean of the middle
 * two). trim in [0, 0.5). work: n doubles of scratch (may not alias x), or NULL to allocate
 * (HLB_ENOMEM). HLB_EINVAL for n == 0, a bad trim, or a timing that is negative or not finite
 * (naming its index and value). */
HLB_EXTERN int hlb_truncated_mean(const double *x, size_t n, double trim, double *work,
                                  double *mean_out);

/* Local loads l_i = r_i / r_bar with r_bar the mean of r over the n ranks (Issakhov et al., eq.
 * 1-2). HLB_EINVAL for n == 0, a time that is negative or not finite, or all times zero. l_out may
 * be r. */
HLB_EXTERN int hlb_ccp_loads(const double *r, unsigned n, double *l_out);

/* ---- diffusive refinement of the offsets (Issakhov et al., eq. 5-7)
 * ----------------------------------- */

/* Penalty factor f_penalty of Issakhov et al. eq. 7 (>= 1); the paper's worked example uses 1.25.
 */
#define HLB_DIFFUSIVE_F_PENALTY 1.25

/* How the load moved across an offset is scaled between ranks of different speed (Issakhov et al.,
 * end of section 1: power weights p_i = l_i * W_bar / W_i, "more work can be moved from
 * slower to faster ranks"). A cell crossing from rank a to rank b counts with p_b / p_a
 * (p_{i-1} = 0.8, p_i = 1.2: factor 1.5 from i-1 to i). */
typedef enum hlb_diffusive_power {
  HLB_POWER_NONE = 0, /* homogeneous hardware: factor 1 */
  HLB_POWER_MEASURED, /* p_i = l_i * W_bar / W_i from the loads and the cell weights; factor 1
                         next to a domain of zero weight (p undefined) */
  HLB_POWER_GIVEN     /* p_i from hlb_diffusive_options.power_given */
} hlb_diffusive_power;

/* Options of hlb_diffusive_step; hlb_diffusive_options_default() gives the paper's values. */
typedef struct hlb_diffusive_options {
  double f_penalty;          /* >= 1, default HLB_DIFFUSIVE_F_PENALTY */
  hlb_diffusive_power power; /* default HLB_POWER_NONE */
  const double *power_given; /* N entries, finite and > 0, for HLB_POWER_GIVEN */
  size_t max_shift;          /* most cells one offset moves per step; 0 = no limit (default) */
  int power_mix;             /* 0 (default): factor r = p_dest / p_src as in Issakhov et al.; 1: the
                                first-order change of s_j, which also counts that the total
                                load changes: ((N-j) + j r) / N for cells moving right (d_j =
                                -1), ((N-j) r + j) / N moving left; converges at larger speed
                                ratios (docs/ccp.md) */
} hlb_diffusive_options;

/* Fill *opt with the defaults (f_penalty 1.25, no power weights, no shift limit). */
HLB_EXTERN void hlb_diffusive_options_default(hlb_diffusive_options *opt);

/* One diffusive step: move every inner offset o_j (j = 1..N-1) cell by cell towards the
 * lighter side until the cumulative imbalance s_j = sum_{i<j} l_i - j (Issakhov et al., eq. 5) is
 * as close to 0 as the crossed cells allow (Issakhov et al., eq. 7): s_j^k = s_j^{k-1} + d_j *
 * f_penalty * w~_m(k) * factor,  d_j = -sign(s_j), w~_m = l_i * w_m / W_i  (the cell's share of its
 * old domain i's load; Issakhov et al. eq. 6), where the cell m(k) is the k-th cell beyond the
 * offset on the heavy side (o_j - k with d_j = -1, o_j + k - 1 with d_j = +1) and factor is 1 or
 * p_dest / p_src (see hlb_diffusive_power). The offset stops at the k with the smallest |s_j^k|: it
 * crosses a cell only while that brings s_j strictly closer to 0 (cells of zero weight are crossed
 * only on the way to a cell that is). A domain with W_i = 0 shares its load equally among its
 * cells.
 *
 * load: N per-rank compute times r_i (or loads l_i): normalised by their mean here, so either
 * works. Offsets are processed left to right; o_j never moves past the cells its adjacent
 * domains owned before the step and never below the new o_{j-1}, so the result is always a
 * valid partition (non-decreasing, within [0, m], no part negative). new_offsets (N + 1) may
 * be offsets. s_out (N + 1 entries, may be NULL) gets the final s_j^k (s_0 = s_N = 0).
 * No allocation; O(m + cells moved). HLB_EINVAL for m == 0, N == 0, bad weights, loads,
 * offsets or options, naming the value. */
HLB_EXTERN int hlb_diffusive_step(const double *w, size_t m, const double *load, unsigned N,
                                  const size_t *offsets, const hlb_diffusive_options *opt,
                                  size_t *new_offsets, double *s_out);

/* Power weights p_i = l_i * W_bar / W_i of the current partition (Issakhov et al., end of section
 * 1), with l_i = load_i / mean(load) and W_bar the mean of the domain weights W_i. A domain with
 * W_i = 0 gets p_i = 0 (undefined: no work to measure a speed with). */
HLB_EXTERN int hlb_diffusive_powers(const double *w, size_t m, const double *load, unsigned N,
                                    const size_t *offsets, double *p_out);

/* ---- weight estimation (Issakhov et al., eq. 3-4)
 * ----------------------------------------------------- */

/* Default relative singular-value cut-off of hlb_weights_estimate. LAPACK's machine epsilon
 * is too tight: a count matrix with two proportional columns comes out with sigma_min a few
 * ulps above it and is called full rank. 1e-12 still accepts full-rank count matrices of
 * moderate size, whose smallest singular value stays far above it. */
#define HLB_WEIGHTS_RCOND 1e-12

/* Options of hlb_weights_estimate; NULL means the defaults (all fields 0). */
typedef struct hlb_weights_options {
  int allow_negative; /* 0 (default): non-negative least squares; 1: DGELSD as is */
  double rcond;       /* relative singular value cut-off for the rank; <= 0: HLB_WEIGHTS_RCOND */
} hlb_weights_options;

/* Per-type weights c (n_types entries) with A c ~= l in the least-squares sense, A row-major
 * n_domains x n_types (A[i][t] = number of objects of type t in domain i) and l the n_domains
 * loads (Issakhov et al., eq. 3: LAPACK DGELSD, minimum-norm solution). Issakhov et al.'s example A
 * = [[10,7],[13,4], [12,2],[5,8]], l = [1.2,0.9,0.8,1.1] gives c = [0.0420, 0.1097] (ratio 2.61):
 * the loads are used as given, not normalised.
 *
 * A negative weight has no meaning as a cost, so by default a solution with a negative entry
 * is replaced by the non-negative least-squares optimum (Lawson-Hanson active set, each
 * subproblem solved by DGELSD): the types whose weight would go negative get 0. With
 * allow_negative the raw DGELSD solution is returned. Rank-deficient A (types that cannot be
 * told apart) gives the minimum-norm solution; *rank_out (may be NULL) gets the numerical rank
 * of A. HLB_EINVAL for zero sizes or an entry/load that is negative or not finite (naming it);
 * HLB_ENUMERIC when A is all zero (rank 0) or LAPACK fails; HLB_ENOMEM. */
HLB_EXTERN int hlb_weights_estimate(const double *A, unsigned n_domains, unsigned n_types,
                                    const double *load, const hlb_weights_options *opt,
                                    double *c_out, unsigned *rank_out);

/* A for hlb_weights_estimate from a cell-type sequence: A_out (N x n_types, row-major) counts
 * the cells of each type in each part of offsets. HLB_EINVAL for a type >= n_types (naming the
 * cell) or bad offsets. */
HLB_EXTERN int hlb_weights_counts(const unsigned *type, size_t m, unsigned n_types,
                                  const size_t *offsets, unsigned N, double *A_out);

/* Cell weights w_k = c[type[k]] for the CCP and diffusive solvers. HLB_EINVAL for a type >=
 * n_types or a weight that is negative or not finite. */
HLB_EXTERN int hlb_weights_cells(const unsigned *type, size_t m, const double *c, unsigned n_types,
                                 double *w_out);

/* ---- imbalance metrics (Issakhov et al., section 1)
 * ---------------------------------------------------- */

/* Imbalance of one code section over N processes. */
typedef struct hlb_imbalance {
  double t_max;   /* slowest process */
  double t_avg;   /* mean over the processes */
  double percent; /* I% = (t_max - t_avg) / t_max * N / (N - 1) * 100: 0 balanced, 100 one
                     process did everything; 0 for N = 1 or all times 0 */
  double time;    /* I_t = t_max - t_avg: time saved by a perfect balance */
  double total;   /* I_T = N * I_t: upper bound of the resources wasted */
} hlb_imbalance;

/* Imbalance metrics of the times t (n entries). HLB_EINVAL for n == 0 or a time that is
 * negative or NaN/infinite (naming its index and value). */
HLB_EXTERN int hlb_imbalance_compute(const double *t, unsigned n, hlb_imbalance *out);

HLB_END_DECLS

#endif
