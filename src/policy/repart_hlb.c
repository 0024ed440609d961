/* `hlb`: hlb's own repartition policy for SPMD codes.
 *
 * FLEX-MPI (002) rebalances whenever compute times differ by TH2 and the load pattern allows;
 * measured on this machine kind its split flip-flopped through 31 redistributions of ~0.28 s
 * each and saved only 2 % (issue 5). This policy keeps FLEX-MPI's measurements (work per
 * compute second, compute = real - MPI time) and changes the decision:
 *  - an imbalance must persist for `persist` consecutive intervals WITH THE SAME SLOWEST RANK
 *    (a burst filter applied to the imbalance itself: a burst costs nothing, long-term load
 *    reacts after `persist` intervals instead of k, and timing noise, whose slowest rank
 *    changes from one interval to the next, does not add up);
 *  - the new split uses the speeds of the last interval: the persistence test has already
 *    shown the imbalance is real, and earlier intervals of the run may straddle the change
 *    of load (averaging them moved the split only part of the way, one step at a time);
 *  - the gain is predicted: per-interval time now (slowest rank) against the balanced time
 *    (total work / total speed); the relative gain must exceed `threshold`, and the gain over
 *    `horizon` intervals must exceed `margin` times the measured cost of the last
 *    redistribution, so cheap rebalances happen and ones that cannot pay off do not;
 *  - rows are split so that predicted compute times are equal, with per-row weights when the
 *    application gives them.
 */
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

enum { P_THRESHOLD, P_PERSIST, P_HORIZON, P_MARGIN, P_COUNT };

static const hlb_param_def hlb_params[P_COUNT] = {
    {"threshold", 0.10, 0.0, 1.0,
     "smallest predicted relative gain per interval that is worth a redistribution (PLB-HeC's "
     "10 %, 001 III.D; timing noise between identical ranks reaches 5-8 % here)"},
    {"persist", 2, 1, 64, "intervals an imbalance must last before it is acted on"},
    {"horizon", 10, 1, 1e6, "intervals over which a redistribution must pay for itself"},
    {"margin", 2.0, 1.0, 100.0, "predicted gain over the horizon / redistribution cost needed"},
};

typedef struct hlb_repart_state {
  hlb_repart_ctx ctx;
  unsigned imbalanced_run; /* consecutive intervals with a worthwhile predicted gain */
  double last_cost_s;      /* measured cost of the last redistribution; 0 before the first */
  int last_slowest;        /* slowest rank of the previous interval; -1 before the first */
  double *speed;           /* work per compute second of each rank, this interval */
} hlb_repart_state;

static int hlbr_init(const hlb_repart_ctx *ctx, void **state) {
  hlb_repart_state *s = calloc(1, sizeof *s);
  double *speed = calloc(ctx->n_ranks, sizeof *speed);
  if (!s || !speed) {
    free(s);
    free(speed);
    return hlb__error(HLB_ENOMEM, "hlb repartition: out of memory for %u ranks", ctx->n_ranks);
  }
  s->ctx = *ctx;
  s->speed = speed;
  s->last_slowest = -1;
  *state = s;
  return 0;
}

/* Split rows so that each rank's share of the total weight is proportional to its speed. */
static int split_by_speed(const hlb_repart_state *s, size_t *counts) {
  unsigned n = s->ctx.n_ranks;
  if (!s->ctx.row_weights) return hlb_split_proportional(s->speed, n, s->ctx.total_rows, counts);
  double total_speed = 0.0, total_weight = 0.0;
  for (unsigned r = 0; r < n; r++)
    total_speed += s->speed[r];
  for (size_t i = 0; i < s->ctx.total_rows; i++)
    total_weight += s->ctx.row_weights[i];
  /* Walk the rows once, cutting where the cumulative weight passes each rank's target. */
  size_t row = 0;
  double acc = 0.0, target = 0.0;
  for (unsigned r = 0; r < n; r++) {
    target += total_weight * s->speed[r] / total_speed;
    size_t first = row;
    if (r + 1 == n) {
      row = s->ctx.total_rows;
    } else {
      while (row < s->ctx.total_rows && acc + 0.5 * s->ctx.row_weights[row] <= target)
        acc += s->ctx.row_weights[row++];
    }
    counts[r] = row - first;
  }
  return 0;
}

/* Count this interval into the imbalanced run, restarting it unless the same rank was the
 * slowest in the previous interval too. */
static void extend_run(hlb_repart_state *s, int worthwhile, int slowest_rank) {
  int same_slowest = slowest_rank == s->last_slowest;
  s->last_slowest = slowest_rank;
  if (!worthwhile)
    s->imbalanced_run = 0;
  else
    s->imbalanced_run = same_slowest ? s->imbalanced_run + 1 : 1;
}

static int hlbr_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  hlb_repart_state *s = state;
  unsigned n = s->ctx.n_ranks;
  double slowest = 0.0, total_work = 0.0, total_speed = 0.0;
  hlb__repart_speeds(iv, n, s->speed);
  int dedicated = 1, slowest_rank = 0;
  for (unsigned r = 0; r < n; r++) {
    double c = hlb__repart_compute_s(&iv[r]);
    if (c > slowest) {
      slowest = c;
      slowest_rank = (int)r;
    }
    total_work += iv[r].work;
    total_speed += s->speed[r];
    dedicated &= hlb__repart_dedicated(&iv[r], 0.05);
  }
  double balanced = total_speed > 0.0 ? total_work / total_speed : slowest;
  double gain = slowest > balanced ? slowest - balanced : 0.0;
  d->dedicated = dedicated;
  d->imbalance = hlb__repart_imbalance(iv, n);
  d->predicted_gain_s = gain;
  d->rebalance = 0;
  for (unsigned r = 0; r < n; r++)
    new_counts[r] = counts[r];
  int worthwhile = slowest > 0.0 && gain / slowest > s->ctx.param[P_THRESHOLD] &&
                   gain * s->ctx.param[P_HORIZON] > s->ctx.param[P_MARGIN] * s->last_cost_s;
  extend_run(s, worthwhile, slowest_rank);
  d->long_term_load = !dedicated && s->imbalanced_run >= (unsigned)s->ctx.param[P_PERSIST];
  if (s->imbalanced_run < (unsigned)s->ctx.param[P_PERSIST]) return 0;
  int rc = split_by_speed(s, new_counts);
  if (rc) return rc;
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  if (d->rebalance) extend_run(s, 0, -1);
  return 0;
}

static void hlbr_rebalanced(void *state, double seconds) {
  hlb_repart_state *s = state;
  s->last_cost_s = seconds;
}

static void hlbr_fini(void *state) {
  hlb_repart_state *s = state;
  if (s) {
    free(s->speed);
  }
  free(s);
}

const hlb_repart_ops hlb__repart_hlb = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "hlb",
    .description = "hlb: persistent-imbalance filter, cost-aware, equal predicted compute time",
    .params = hlb_params,
    .n_params = P_COUNT,
    .init = hlbr_init,
    .decide = hlbr_decide,
    .rebalanced = hlbr_rebalanced,
    .fini = hlbr_fini,
};
