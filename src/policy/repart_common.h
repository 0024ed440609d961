/* Helpers shared by the repartition policies (src/policy/repart_*.c). Pure functions. */
#ifndef HLB_POLICY_REPART_COMMON_H
#define HLB_POLICY_REPART_COMMON_H

#include <stddef.h>

#include "hlb/repartition.h"

/* The first member of every repartition policy's state: its own copies of what it reads from
 * the caller's context (so the caller may free its arrays after init), and the statistics
 * every policy keeps the same way (hlb_repart_stats). */
typedef struct hlb__repart_base {
  hlb_repart_ctx ctx; /* ctx.param points to param; ctx.row_weights to weights, or NULL */
  const char *name;   /* the policy's name, for error messages */
  double *param;      /* copy of the caller's parameter values */
  double *weights;    /* copy of the caller's row weights when the policy reads them later */
  hlb_repart_stats stats;
} hlb__repart_base;

/* Copy ctx into b; keep_weights: copy the row weights too (else ctx.row_weights is NULL). */
int hlb__repart_base_init(hlb__repart_base *b, const hlb_repart_ops *ops, const hlb_repart_ctx *ctx,
                          int keep_weights);
void hlb__repart_base_fini(hlb__repart_base *b);

/* The ops->stats of every policy: `state` begins with an hlb__repart_base. */
void hlb__repart_base_stats(const void *state, hlb_repart_stats *out);

/* The start of every decide(): checks counts and measurements (include/hlb/repartition.h).
 * Fills *d with what every policy reports the same way (dedicated, imbalance, the rest 0) and
 * new_counts with counts. Returns 0 when the policy may decide; HLB_ESAMPLE (counted by
 * reason) or HLB_EINVAL when it must return that code at once. */
int hlb__repart_admit(hlb__repart_base *b, const hlb_rank_interval *iv, const size_t *counts,
                      size_t *new_counts, hlb_repart_decision *d);

/* FLEX-MPI's dedicated test threshold TH1 (FLEX-MPI, section 3.2): a rank losing 5 % or more of its
 * wall time to other processes shares its core. */
#define HLB_REPART_TH1 0.05

/* Compute time of an interval: real time minus time in MPI calls, never below 1 % of the
 * real time (a rank that only waited still did some work). */
double hlb__repart_compute_s(const hlb_rank_interval *iv);

/* (max - min) / max of the ranks' compute times; 0 when max is 0. */
double hlb__repart_imbalance(const hlb_rank_interval *iv, unsigned n);

/* 1 when the interval shows no external load: (real - cpu) / real < th1 (FLEX-MPI 3.2). */
int hlb__repart_dedicated(const hlb_rank_interval *iv, double th1);

/* Work per compute second of each rank (speed[r]); ranks with no work get the mean speed of
 * the others so they are not starved of rows forever. */
void hlb__repart_speeds(const hlb_rank_interval *iv, unsigned n, double *speed);

/* Give every speed[r] that is not positive the mean of the positive ones (1 if none is). */
void hlb__repart_fill_unknown_speeds(double *speed, unsigned n);

/* 1 when a and b hold the same n counts. */
int hlb__repart_same(const size_t *a, const size_t *b, unsigned n);

#endif
