/* `flex`: FLEX-MPI's load balancing algorithm (FLEX-MPI, section 3.2, Algorithm 1).
 *
 * Each sampling interval: a rank is dedicated when (Treal - Tcpu) / Treal < TH1; the run is
 * dedicated when every rank is. The last k run-level flags are kept: external load is
 * long-term when the run was non-dedicated in each of the last k intervals, and a burst
 * otherwise (then nothing is done). When dedicated or under long-term load, and the compute
 * times differ by more than TH2 of the largest, rows are split by relative computing power
 * RCP_i = MFLOPS_i / sum MFLOPS (eq. 1-2), MFLOPS_i = work_i / compute time_i. Compute time is
 * real time minus MPI time measured through PMPI, as the paper prescribes. */
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

enum { P_TH1, P_TH2, P_K, P_COUNT };

static const hlb_param_def flex_params[P_COUNT] = {
    {"th1", 0.05, 0.0, 1.0,
     "dedicated test: (Treal - Tcpu) / Treal below this means no external load (FLEX-MPI, section "
     "3.2: 5 %)"},
    {"th2", 0.15, 0.0, 1.0,
     "rebalance when (max - min) / max of compute times exceeds this (FLEX-MPI, section 3.2: 15 "
     "%)"},
    {"k", 3, 1, 64,
     "intervals of continuous external load before it counts as long-term (FLEX-MPI 3.2 and 4.2 "
     "evaluate k = 1, 3, 5; 3 is the middle)"},
};

typedef struct flex_state {
  hlb__repart_base base; /* first: copies of the context, stats */
  unsigned k;
  unsigned nondedicated_run; /* consecutive non-dedicated intervals so far */
  double *speed;
} flex_state;

extern const hlb_repart_ops hlb__repart_flex;

static void flex_fini(void *state) {
  flex_state *s = state;
  if (s) {
    hlb__repart_base_fini(&s->base);
    free(s->speed);
  }
  free(s);
}

static int flex_init(const hlb_repart_ctx *ctx, void **state) {
  flex_state *s = calloc(1, sizeof *s);
  double *speed = calloc(ctx->n_ranks, sizeof *speed);
  if (!s || !speed) {
    free(s);
    free(speed);
    return hlb__error(HLB_ENOMEM, "flex: out of memory for %u ranks", ctx->n_ranks);
  }
  s->speed = speed;
  int rc = hlb__repart_base_init(&s->base, &hlb__repart_flex, ctx, 0);
  if (rc) {
    flex_fini(s);
    return rc;
  }
  s->k = (unsigned)ctx->param[P_K];
  *state = s;
  return 0;
}

static int flex_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  flex_state *s = state;
  const hlb_repart_ctx *ctx = &s->base.ctx;
  unsigned n = ctx->n_ranks;
  int rc = hlb__repart_admit(&s->base, iv, counts, new_counts, d);
  if (rc) return rc;
  int dedicated = 1;
  for (unsigned r = 0; r < n; r++)
    dedicated &= hlb__repart_dedicated(&iv[r], ctx->param[P_TH1]);
  s->nondedicated_run = dedicated ? 0 : s->nondedicated_run + 1;
  d->dedicated = dedicated;
  d->long_term_load = !dedicated && s->nondedicated_run >= s->k;
  if (!(dedicated || d->long_term_load) || d->imbalance <= ctx->param[P_TH2]) return 0;
  hlb__repart_speeds(iv, n, s->speed);
  rc = hlb_split_proportional(s->speed, n, ctx->total_rows, new_counts);
  if (rc) return rc;
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  return 0;
}

const hlb_repart_ops hlb__repart_flex = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "flex",
    .description =
        "FLEX-MPI: relative computing power, burst vs long-term load (FLEX-MPI, section 3.2)",
    .params = flex_params,
    .n_params = P_COUNT,
    .init = flex_init,
    .decide = flex_decide,
    .fini = flex_fini,
    .stats = hlb__repart_base_stats,
};
