/* Helpers shared by the repartition policies (src/policy/repart_*.c). Pure functions. */
#ifndef HLB_POLICY_REPART_COMMON_H
#define HLB_POLICY_REPART_COMMON_H

#include <stddef.h>

#include "hlb/repartition.h"

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
