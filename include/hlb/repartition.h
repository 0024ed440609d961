/* Repartition policies for iterative SPMD codes (docs/architecture.md, "Policies"; FLEX-MPI;
 * the 1-D balancer of Issakhov et al.).
 *
 * An SPMD code owns contiguous row ranges, one per rank. Between two iterations a repartition
 * policy sees what every rank measured over the last sampling interval and returns new row
 * counts for all ranks, or "keep". Policies are pure (no MPI): the MPI layer gathers the
 * measurements, calls decide() with identical inputs on every rank (so every rank reaches the
 * same decision without another message) and moves the rows.
 *
 * Thread safety: a policy state belongs to one caller; the registry is read-only.
 */
#ifndef HLB_REPARTITION_H
#define HLB_REPARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/export.h"
#include "hlb/policy.h"

HLB_BEGIN_DECLS

/* What one rank measured over one sampling interval (sums over its begin/end windows). */
typedef struct hlb_rank_interval {
  double real_s; /* wall-clock time inside the windows */
  double cpu_s;  /* CPU time of the process inside the windows */
  double comm_s; /* time spent inside MPI calls inside the windows (PMPI) */
  double work;   /* floating-point operations (PAPI) or, as fallback, row-iterations */
  size_t rows;   /* rows owned during the interval */
  unsigned iterations;
} hlb_rank_interval;

typedef struct hlb_repart_ctx {
  unsigned n_ranks;
  size_t total_rows;
  const double *row_weights; /* per-row cost weights of all rows (global order), or NULL */
  const double *param;       /* values of the policy's params, in its table's order */
} hlb_repart_ctx;

/* Decision of one sampling interval. */
typedef struct hlb_repart_decision {
  int rebalance;           /* 1: new_counts differ and should be applied */
  int dedicated;           /* 1 when no rank showed external load this interval */
  int long_term_load;      /* 1 when external load lasted k intervals (FLEX-MPI 3.2) */
  double imbalance;        /* (max - min) / max of the ranks' compute times */
  double predicted_gain_s; /* policy's estimate of time saved by rebalancing (0 if unknown) */
} hlb_repart_decision;

/* Why a sampling interval's measurements were rejected. A policy rejects the whole interval
 * when any rank's values are unusable, because every decision compares all ranks. */
typedef enum hlb_repart_reject {
  HLB_REPART_REJECT_NAN = 0,  /* real_s, cpu_s, comm_s or work is NaN */
  HLB_REPART_REJECT_INF,      /* one of them is infinite */
  HLB_REPART_REJECT_NEGATIVE, /* one of them is < 0 */
  HLB_REPART_REJECT_ZERO,     /* real_s is 0 or iterations is 0: nothing was measured */
  HLB_REPART_REJECT_COUNT
} hlb_repart_reject;

/* Short name of a reason ("nan", "inf", "negative", "zero"). */
HLB_EXTERN const char *hlb_repart_reject_name(hlb_repart_reject r);

/* What one policy state has seen, the same for every policy. */
typedef struct hlb_repart_stats {
  size_t decisions;                         /* decide() calls whose measurements were used */
  size_t rejected[HLB_REPART_REJECT_COUNT]; /* intervals rejected, by the first bad value */
} hlb_repart_stats;

typedef struct hlb_repart_ops {
  uint32_t abi_version; /* HLB_POLICY_ABI_VERSION */
  uint32_t struct_size; /* sizeof(hlb_repart_ops) */
  const char *name;
  const char *description;
  const hlb_param_def *params;
  unsigned n_params;
  /* The state keeps copies of what it needs from ctx (param, row_weights): the caller may free
   * or change its arrays as soon as init returns. */
  int (*init)(const hlb_repart_ctx *ctx, void **state);
  /* iv[r] for every rank r; counts[r] the current rows of r (sum equal to total_rows, else
   * HLB_EINVAL). Fills every field of *d and new_counts (sum equal to total_rows); keeps no
   * pointer to iv, counts or new_counts. Must be deterministic: the same inputs in the same
   * order give the same outputs on every rank and in every fresh state. Measurements with a
   * NaN, infinite or negative time or work, a zero wall time or no iterations reject the whole
   * interval: new_counts = counts, d->rebalance = 0, the state learns nothing from it, the
   * reason is counted (stats) and HLB_ESAMPLE is returned, with hlb_last_error() naming the
   * rank, the field and its value. Such an interval is not fatal to the caller. Ranks that
   * measure the same time for their rows (a balanced split) keep their counts. */
  int (*decide)(void *state, const hlb_rank_interval *iv, const size_t *counts, size_t *new_counts,
                hlb_repart_decision *d);
  /* Optional: the last rebalance took `seconds` on the slowest rank (for cost-aware policies). */
  void (*rebalanced)(void *state, double seconds);
  void (*fini)(void *state);
  /* What this state has seen (required; tests/contract/test_repart_contract.c checks it). */
  void (*stats)(const void *state, hlb_repart_stats *out);
} hlb_repart_ops;

HLB_EXTERN unsigned hlb_repart_count(void);
HLB_EXTERN const hlb_repart_ops *hlb_repart_at(unsigned i);
HLB_EXTERN const hlb_repart_ops *hlb_repart_find(const char *name);
#define HLB_REPART_DEFAULT "hlb"

/* Parse "name=value,..." against a policy's parameter table into values (defaults first).
 * HLB_EINVAL naming the unknown parameter or the out-of-range value. */
HLB_EXTERN int hlb_repart_params(const hlb_repart_ops *ops, const char *text, double *values);

/* Split `total` rows in proportion to `share` (non-negative, not all zero) with the largest
 * remainder method, so the counts sum exactly to total. */
HLB_EXTERN int hlb_split_proportional(const double *share, unsigned n, size_t total,
                                      size_t *counts);

HLB_END_DECLS

#endif
