/* `hlb`: hlb's own repartition policy for SPMD codes.
 *
 * FLEX-MPI (002) rebalances whenever compute times differ by TH2 and the load pattern allows;
 * measured on this machine kind its split flip-flopped through 31 redistributions of ~0.28 s
 * each and saved only 2 % (issue 5). This policy keeps FLEX-MPI's measurements (work per
 * compute second, compute = real - MPI time) and its dedicated test (real - CPU time > TH1
 * of the real time: another process shares the rank's core, 002 3.2), and decides in two ways:
 *
 *  - A change of load: a rank's dedicated/shared state differs from what it was at the last
 *    move for `persist` consecutive intervals (FLEX-MPI's burst filter: a burst costs
 *    nothing). Then hlb moves at once, by the speeds of the last interval: earlier intervals
 *    straddle the change, and averaging them would move only part of the way.
 *  - Evidence from an average: the speeds averaged over the intervals since the last move
 *    (at least `window` of them) predict a relative gain above a bar that is also larger than
 *    `confidence` standard errors of those averages. Timing on a shared VM drifts by 25 %
 *    between identical ranks over several seconds (measured here, docs/benchmarks.md), so one
 *    interval proves little; an average over several, with its own spread, does. The bar is
 *    `threshold` while every rank is dedicated and `refine` once a rank shares its core: a
 *    loaded rank's speed depends on its share of the rows (the fewer it has, the more of its
 *    core share it spends waiting in MPI), so one move lands short and a few refinements
 *    reach the fixed point. Each such move doubles the intervals the next one waits for, so
 *    chasing drift is rare and cheap; a change of load resets that.
 *
 * Every move must also pay off: the gain over `horizon` intervals must exceed `margin` times
 * the measured cost of the last redistribution. And every move is checked: once `window`
 * intervals have run on the new split, their wall time per iteration is compared with the
 * intervals the move was decided on; a move that did not make iterations faster is undone
 * and no move from averages follows until the load changes again. Equal compute times are
 * not always fastest: when a rank shares its core and the code synchronises often (CG: two
 * reductions and a halo exchange per 4 ms iteration), a loaded rank that arrives early spins
 * away its core share and is often descheduled when the others arrive, so the even split,
 * which keeps it busy, beat the balanced one by 25 % here. Rows are split so that predicted compute
 * times are equal, by per-row weights when the application gives them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

enum { P_THRESHOLD, P_PERSIST, P_HORIZON, P_MARGIN, P_REFINE, P_WINDOW, P_CONFIDENCE, P_COUNT };

static const hlb_param_def hlb_params[P_COUNT] = {
    {"threshold", 0.10, 0.0, 1.0,
     "smallest predicted relative gain worth a redistribution while every rank is dedicated, "
     "and after a change of load (PLB-HeC's 10 %, 001 III.D)"},
    {"persist", 2, 1, 64,
     "intervals a change of a rank's dedicated/shared state must last before it is acted on"},
    {"horizon", 10, 1, 1e6, "intervals over which a redistribution must pay for itself"},
    {"margin", 2.0, 1.0, 100.0, "predicted gain over the horizon / redistribution cost needed"},
    {"refine", 0.03, 0.0, 1.0,
     "smallest predicted relative gain, from averaged speeds, that refines the split while a "
     "rank shares its core (1: never below `threshold`)"},
    {"window", 3, 1, 1e6, "intervals averaged before the first decision from an average"},
    {"confidence", 2.0, 0.0, 100.0,
     "a gain from an average must exceed this many standard errors of the averaged speeds"},
};

typedef struct hlb_repart_state {
  hlb_repart_ctx ctx;
  double last_cost_s; /* measured cost of the last redistribution; 0 before the first */
  double *speed;      /* work per compute second of each rank, this interval */
  unsigned char *shared, *shared_then, *shared_before; /* per rank: this interval, at the
                                        last move (or start), the previous interval */
  unsigned changed_run; /* consecutive intervals with the same states, differing from then */
  /* Since the last move: per rank, summed work, compute seconds, speed and speed squared. */
  double *win_work, *win_compute, *win_speed, *win_speed2;
  double *work, *compute;       /* per rank, of the interval or window being judged */
  unsigned win_n;               /* intervals in the window */
  double win_wall, win_iters;   /* the window's wall seconds (slowest rank) and iterations */
  double last_wall, last_iters; /* the same, of the last interval */
  size_t *undo_counts;          /* the split before the move being checked */
  double before_s;       /* wall seconds per iteration the move was decided on; 0: no check due */
  int frozen;            /* a move was undone: no moves from averages until the load changes */
  unsigned from_average; /* moves from averages since the last change of load */
} hlb_repart_state;

static void hlbr_fini(void *state);

static int hlbr_init(const hlb_repart_ctx *ctx, void **state) {
  hlb_repart_state *s = calloc(1, sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "hlb repartition: out of memory");
  size_t n = ctx->n_ranks;
  /* Per-rank arrays in three blocks: seven of doubles, three of flags, one of counts. */
  s->speed = calloc(7 * n, sizeof *s->speed);
  s->shared = calloc(3 * n, 1);
  s->undo_counts = calloc(n, sizeof *s->undo_counts);
  if (!s->speed || !s->shared || !s->undo_counts) {
    hlbr_fini(s);
    return hlb__error(HLB_ENOMEM, "hlb repartition: out of memory for %u ranks", ctx->n_ranks);
  }
  s->win_work = s->speed + n;
  s->win_compute = s->win_work + n;
  s->win_speed = s->win_compute + n;
  s->win_speed2 = s->win_speed + n;
  s->work = s->win_speed2 + n;
  s->compute = s->work + n;
  s->shared_then = s->shared + n;
  s->shared_before = s->shared_then + n;
  s->ctx = *ctx;
  *state = s;
  return 0;
}

static void window_reset(hlb_repart_state *s) {
  size_t n = s->ctx.n_ranks;
  memset(s->win_work, 0, 4 * n * sizeof *s->win_work);
  s->win_n = 0;
  s->win_wall = s->win_iters = 0.0;
}

static void window_add(hlb_repart_state *s, const hlb_rank_interval *iv) {
  s->last_wall = s->last_iters = 0.0;
  for (unsigned r = 0; r < s->ctx.n_ranks; r++) {
    s->win_work[r] += iv[r].work;
    s->win_compute[r] += hlb__repart_compute_s(&iv[r]);
    s->win_speed[r] += s->speed[r];
    s->win_speed2[r] += s->speed[r] * s->speed[r];
    s->last_wall = iv[r].real_s > s->last_wall ? iv[r].real_s : s->last_wall;
    s->last_iters = iv[r].iterations > s->last_iters ? iv[r].iterations : s->last_iters;
  }
  s->win_wall += s->last_wall;
  s->win_iters += s->last_iters;
  s->win_n++;
}

/* Split rows so that each rank's share of the total weight is proportional to speed[r]. */
static int split_by_speed(const hlb_repart_state *s, const double *speed, size_t *counts) {
  unsigned n = s->ctx.n_ranks;
  if (!s->ctx.row_weights) return hlb_split_proportional(speed, n, s->ctx.total_rows, counts);
  double total_speed = 0.0, total_weight = 0.0;
  for (unsigned r = 0; r < n; r++)
    total_speed += speed[r];
  for (size_t i = 0; i < s->ctx.total_rows; i++)
    total_weight += s->ctx.row_weights[i];
  /* Walk the rows once, cutting where the cumulative weight passes each rank's target. */
  size_t row = 0;
  double acc = 0.0, target = 0.0;
  for (unsigned r = 0; r < n; r++) {
    target += total_weight * speed[r] / total_speed;
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

/* Predicted time per interval now (slowest rank's compute) and after a split by speed:
 * total work / total speed. */
static double predicted_gain(const double *work, const double *compute, const double *speed,
                             unsigned n, double *slowest) {
  double total_work = 0.0, total_speed = 0.0;
  *slowest = 0.0;
  for (unsigned r = 0; r < n; r++) {
    if (compute[r] > *slowest) *slowest = compute[r];
    total_work += work[r];
    total_speed += speed[r];
  }
  double balanced = total_speed > 0.0 ? total_work / total_speed : *slowest;
  return *slowest > balanced ? *slowest - balanced : 0.0;
}

static int pays_off(const hlb_repart_state *s, double gain) {
  return gain * s->ctx.param[P_HORIZON] > s->ctx.param[P_MARGIN] * s->last_cost_s;
}

/* Largest relative standard error of a rank's mean speed over the window. */
static double window_speed_error(const hlb_repart_state *s) {
  double worst = 0.0, n = s->win_n;
  if (s->win_n < 2) return 0.0;
  for (unsigned r = 0; r < s->ctx.n_ranks; r++) {
    double mean = s->win_speed[r] / n;
    double var = s->win_speed2[r] / n - mean * mean;
    double rel = mean > 0.0 && var > 0.0 ? sqrt(var / (n - 1)) / mean : 0.0;
    worst = rel > worst ? rel : worst;
  }
  return worst;
}

/* 1 when any rank shares its core in `states`. */
static int any_shared(const unsigned char *states, unsigned n) {
  for (unsigned r = 0; r < n; r++)
    if (states[r]) return 1;
  return 0;
}

/* Track this interval's dedicated/shared states; 1 when they differ from those at the last
 * move and have stayed the same for `persist` intervals: a change of load, not a burst. */
static int load_changed(hlb_repart_state *s, const hlb_rank_interval *iv) {
  unsigned n = s->ctx.n_ranks;
  for (unsigned r = 0; r < n; r++)
    s->shared[r] = !hlb__repart_dedicated(&iv[r], HLB_REPART_TH1);
  int differs = memcmp(s->shared, s->shared_then, n) != 0;
  int same_as_before = memcmp(s->shared, s->shared_before, n) == 0;
  memcpy(s->shared_before, s->shared, n);
  s->changed_run = !differs ? 0 : same_as_before ? s->changed_run + 1 : 1;
  if (s->changed_run < (unsigned)s->ctx.param[P_PERSIST]) return 0;
  memcpy(s->shared_then, s->shared, n);
  s->changed_run = 0;
  s->from_average = 0;
  return 1;
}

/* The test on the window's averages; fills speed[] with the window's speeds. */
static int average_says_move(hlb_repart_state *s, double *window_gain) {
  unsigned n = s->ctx.n_ranks;
  *window_gain = 0.0;
  unsigned backoff = s->from_average < 16 ? s->from_average : 16;
  if (s->frozen || s->win_n < (unsigned)s->ctx.param[P_WINDOW] << backoff) return 0;
  for (unsigned r = 0; r < n; r++) {
    s->work[r] = s->win_work[r] / s->win_n;
    s->compute[r] = s->win_compute[r] / s->win_n;
    s->speed[r] = s->compute[r] > 0.0 && s->work[r] > 0.0 ? s->work[r] / s->compute[r] : 0.0;
  }
  double slowest;
  double gain = predicted_gain(s->work, s->compute, s->speed, n, &slowest);
  double relative = slowest > 0.0 ? gain / slowest : 0.0;
  double bar = s->ctx.param[P_THRESHOLD];
  if (any_shared(s->shared_then, n) && s->ctx.param[P_REFINE] < bar) bar = s->ctx.param[P_REFINE];
  *window_gain = gain;
  return relative > bar && relative > s->ctx.param[P_CONFIDENCE] * window_speed_error(s) &&
         pays_off(s, gain);
}

/* The check of the last move, once `window` intervals ran on its split: 1 when their wall
 * time per iteration is no better than that of the intervals it was decided on. */
static int move_was_worse(hlb_repart_state *s) {
  if (!(s->before_s > 0.0) || s->win_n < (unsigned)s->ctx.param[P_WINDOW] || !(s->win_iters > 0))
    return 0;
  double after_s = s->win_wall / s->win_iters, before_s = s->before_s;
  s->before_s = 0.0; /* checked once */
  return after_s >= before_s;
}

static int hlbr_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  hlb_repart_state *s = state;
  unsigned n = s->ctx.n_ranks;
  hlb__repart_speeds(iv, n, s->speed);
  for (unsigned r = 0; r < n; r++) {
    s->work[r] = iv[r].work;
    s->compute[r] = hlb__repart_compute_s(&iv[r]);
    new_counts[r] = counts[r];
  }
  double slowest;
  double gain = predicted_gain(s->work, s->compute, s->speed, n, &slowest);
  window_add(s, iv);
  int changed = load_changed(s, iv);
  d->dedicated = !any_shared(s->shared, n);
  d->long_term_load = any_shared(s->shared_then, n);
  d->imbalance = hlb__repart_imbalance(iv, n);
  d->predicted_gain_s = gain;
  d->rebalance = 0;
  if (changed) {
    s->frozen = 0;
    s->before_s = 0.0;
  } else if (move_was_worse(s)) {
    memcpy(new_counts, s->undo_counts, n * sizeof *new_counts);
    d->rebalance = !hlb__repart_same(counts, new_counts, n);
    s->frozen = 1;
    window_reset(s);
    return 0;
  }
  int move;
  double before_s = s->last_iters > 0.0 ? s->last_wall / s->last_iters : 0.0;
  if (changed) {
    /* A new load state: this interval's speeds, if the gain is worth it; either way the
     * average starts afresh from here. */
    move = slowest > 0.0 && gain / slowest > s->ctx.param[P_THRESHOLD] && pays_off(s, gain);
    if (!move) window_reset(s);
  } else {
    move = average_says_move(s, &d->predicted_gain_s);
    if (move) s->from_average++;
    if (s->win_iters > 0.0) before_s = s->win_wall / s->win_iters;
  }
  if (!move) return 0;
  int rc = split_by_speed(s, s->speed, new_counts);
  if (rc) return rc;
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  if (d->rebalance) {
    memcpy(s->undo_counts, counts, n * sizeof *counts);
    s->before_s = before_s;
  }
  window_reset(s);
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
    free(s->shared);
    free(s->undo_counts);
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
