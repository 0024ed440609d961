/* Helpers shared by the baseline policies (static, proportional, greedy, guided, acosta, hdss)
 * and available to any policy in src/policy.
 *
 * Thread safety: pure functions, and per-policy state owned by one balancer.
 */
#ifndef HLB_POLICY_COMMON_H
#define HLB_POLICY_COMMON_H

#include <stddef.h>

#include "hlb/policy.h"

/* Fraction of the data the initial (profiling) phase should cover: "so that the initial
 * phase of the algorithm would take about 10% of the application execution time, and used
 * the same initial block size for all algorithms" (PLB-HeC, section V.A). */
#define HLB__INITIAL_FRACTION 0.10

/* The initial block size x_init shared by every baseline (PLB-HeC, section V.A). PLB-HeC's initial
 * phase sends each PU blocks of 1, 2, 4 and 8 times x_init (PLB-HeC, section III.B), 15 x_init in
 * all, so it covers `fraction` of the n items when x_init = fraction * n / (15 * P). At least one
 * granule. */
size_t hlb__initial_block(const hlb_policy_ctx *ctx, double fraction);

/* ceil(total * w / wsum), at least 1; total when wsum <= 0. */
size_t hlb__share(size_t total, double w, double wsum);

/* Compute plus transfer seconds of a finished block; NaN when the sample is not valid. */
double hlb__sample_seconds(const hlb_sample *s);

/* Synchronised rounds (Acosta's iterations, HDSS's adaptive phase): each PU gets one block
 * per round, and a PU that already has its block waits until every block of the round is
 * back. O(1) per call. */
typedef struct hlb__rounds {
  unsigned *round_of; /* per PU: the round of its last grant (UINT_MAX before any) */
  unsigned round;
  size_t outstanding; /* blocks granted and not yet done or failed */
} hlb__rounds;

int hlb__rounds_init(hlb__rounds *r, unsigned n_pus);
void hlb__rounds_fini(hlb__rounds *r);
/* 1 when `pu` already had its block of the current round. */
int hlb__rounds_served(const hlb__rounds *r, unsigned pu);
void hlb__rounds_grant(hlb__rounds *r, unsigned pu);
/* A block came back (done or failed); 1 when it was the round's last one. */
int hlb__rounds_back(hlb__rounds *r);

/* One-block-per-PU splits (static, proportional): PU p's first block is its share
 * n * w_p / sum(w). Shares of PUs that have not asked yet stay reserved, so a PU asking again
 * (a driver keeping one block ahead, a max_block, items lost by a failure) gets only the
 * items nobody is owed, split by weight among the PUs served so far; with none free it
 * waits while it has a block in flight. */
typedef struct hlb__split {
  const hlb_policy_ctx *ctx;
  double *w;             /* weight of each PU */
  size_t *share;         /* first-block size of each PU */
  unsigned char *served; /* 1 once a PU got its first block */
  double total_w;        /* all PUs */
  double served_w;       /* served and alive */
  double alive_w;        /* alive */
  size_t reserved;       /* items owed to live PUs not yet served */
} hlb__split;

/* weights NULL: every PU weighs 1. */
int hlb__split_init(hlb__split *s, const hlb_policy_ctx *ctx, const double *weights);
void hlb__split_fini(hlb__split *s);
int hlb__split_next(hlb__split *s, unsigned pu, size_t *count);
void hlb__split_retired(hlb__split *s, unsigned pu);

#endif
