/* `hlb`: hlb's own repartition policy for SPMD codes.
 *
 * FLEX-MPI rebalances whenever compute times differ by TH2 and the load pattern allows;
 * measured on this machine kind its split flip-flopped through 31 redistributions of ~0.28 s
 * each and saved only 2 % (issue 5). This policy keeps FLEX-MPI's dedicated test (real - CPU
 * time > TH1 of the real time: another process shares the rank's core, FLEX-MPI 3.2) and measures
 * speed as work per busy second, where a rank is busy for the interval's wall time (the
 * slowest rank's; the code runs in step) minus its own time in MPI. It decides in two ways:
 *
 *  - A change of load: a rank's dedicated/shared state differs from what it was at the last
 *    move for `persist` consecutive intervals (FLEX-MPI's burst filter: a burst costs
 *    nothing). Then hlb moves at once, by the speeds of the last interval: earlier intervals
 *    straddle the change, and averaging them would move only part of the way.
 *  - Evidence from an average: the averages over the intervals since the last move (at least
 *    `window` of them) predict a relative gain above a bar that is also larger than
 *    `confidence` standard errors of the averaged speeds. Timing on a shared VM drifts by 25 %
 *    between identical ranks over several seconds (measured here, docs/benchmarks.md), so one
 *    interval proves little; an average over several, with its own spread, does. The bar is
 *    `threshold` while every rank is dedicated and `refine` once a rank shares its core.
 *    After a move under the same load, the prediction is a secant step through the last two
 *    splits (aim_by_secant): a loaded rank changes its own and the others' speeds as its
 *    share changes, so one split's speeds lead only part of the way. Each such move doubles
 *    the intervals the next one waits for, so chasing drift is rare and cheap; a change of
 *    load resets that.
 *
 * Every move must also pay off: the gain over `horizon` intervals must exceed `margin` times
 * the measured cost of the last redistribution, and no more than `budget` redistributions
 * (undos included) happen between two changes of load: issue 5 allows 3 after a load
 * appears, and on this VM further refinements were within the timing noise. And every move is
 * checked: once `window` intervals have run on the new split, their wall time per iteration is
 * compared with the intervals the move was decided on; a move that did not make iterations faster
 * is undone and no move from averages follows until the load changes again. Equal busy times are
 * not always fastest: when a rank shares its core and the code synchronises often (CG: two
 * reductions and a halo exchange per 4 ms iteration), a loaded rank that arrives early spins
 * away its core share and is often descheduled when the others arrive, so the even split,
 * which keeps it busy, beat the balanced one by 25 % here. Rows are split by per-row weights
 * when the application gives them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

enum {
  P_THRESHOLD,
  P_PERSIST,
  P_HORIZON,
  P_MARGIN,
  P_REFINE,
  P_WINDOW,
  P_CONFIDENCE,
  P_REACH,
  P_BUDGET,
  P_COUNT
};

static const hlb_param_def hlb_params[P_COUNT] = {
    {"threshold", 0.10, 0.0, 1.0,
     "smallest predicted relative gain worth a redistribution while every rank is dedicated, "
     "and after a change of load (PLB-HeC's 10 %, PLB-HeC III.D)"},
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
    {"reach", 2.0, 0.0, 100.0,
     "a refinement through the last two splits moves a rank's work at most this many times as "
     "far as the last move did (0: always split in proportion to the averaged speeds)"},
    {"budget", 3, 1, 1e6,
     "most redistributions between two changes of load, undos included (issue 5: 3); a move "
     "from averages is made only while both it and its possible undo fit"},
};

typedef struct hlb_repart_state {
  hlb__repart_base base; /* first: copies of the context and the row weights, stats */
  double last_cost_s;    /* measured cost of the last redistribution; 0 before the first */
  double *speed;         /* work per busy second of each rank, of the interval or window judged */
  unsigned char *shared, *shared_then, *shared_before; /* per rank: this interval, at the
                                        last move (or start), the previous interval */
  unsigned changed_run; /* consecutive intervals with the same states, differing from then */
  /* Since the last move: per rank, summed work, busy seconds, speed and speed squared. */
  double *win_work, *win_busy, *win_speed, *win_speed2;
  double *work, *busy;           /* per rank, of the interval or window being judged */
  double *then_work, *then_busy; /* per rank, what the last move was decided on */
  double *target;                /* per rank, the work per interval the next split aims at */
  int have_then;                 /* then_* hold the last move, made under the current load */
  unsigned win_n;                /* intervals in the window */
  double win_wall, win_iters;    /* the window's wall seconds (slowest rank) and iterations */
  double last_wall, last_iters;  /* the same, of the last interval */
  size_t *undo_counts;           /* the split before the move being checked */
  double before_s;       /* wall seconds per iteration the move was decided on; 0: no check due */
  int frozen;            /* a move was undone: no moves from averages until the load changes */
  unsigned from_average; /* moves from averages since the last change of load */
  unsigned moves;        /* redistributions since the last change of load, undos included */
} hlb_repart_state;

static void hlbr_fini(void *state);
extern const hlb_repart_ops hlb__repart_hlb;

static int hlbr_init(const hlb_repart_ctx *ctx, void **state) {
  hlb_repart_state *s = calloc(1, sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "hlb repartition: out of memory");
  size_t n = ctx->n_ranks;
  /* Per-rank arrays in three blocks: ten of doubles, three of flags, one of counts. */
  s->speed = calloc(10 * n, sizeof *s->speed);
  s->shared = calloc(3 * n, 1);
  s->undo_counts = calloc(n, sizeof *s->undo_counts);
  if (!s->speed || !s->shared || !s->undo_counts) {
    hlbr_fini(s);
    return hlb__error(HLB_ENOMEM, "hlb repartition: out of memory for %u ranks", ctx->n_ranks);
  }
  s->win_work = s->speed + n;
  s->win_busy = s->win_work + n;
  s->win_speed = s->win_busy + n;
  s->win_speed2 = s->win_speed + n;
  s->work = s->win_speed2 + n;
  s->busy = s->work + n;
  s->then_work = s->busy + n;
  s->then_busy = s->then_work + n;
  s->target = s->then_busy + n;
  s->shared_then = s->shared + n;
  s->shared_before = s->shared_then + n;
  /* The caller may free or change its weights after init (hlb_spmd_set_row_weights does):
   * the base keeps a copy of them, which split_by_share reads. */
  int rc = hlb__repart_base_init(&s->base, &hlb__repart_hlb, ctx, 1);
  if (rc) {
    hlbr_fini(s);
    return rc;
  }
  *state = s;
  return 0;
}

/* The interval's wall time is the slowest rank's time inside its windows (an SPMD code runs
 * in step, so every rank's iterations take that long), and a rank was busy for all of it but
 * its time in MPI. Counting the time a rank spent outside its windows as busy matters when it
 * shares its core: it is often descheduled between one iteration's end and the next begin,
 * and that time is lost to the whole code (up to 10 % of the interval measured here). */
static void interval_busy(hlb_repart_state *s, const hlb_rank_interval *iv) {
  unsigned n = s->base.ctx.n_ranks;
  double wall = 0.0;
  for (unsigned r = 0; r < n; r++)
    wall = iv[r].real_s > wall ? iv[r].real_s : wall;
  for (unsigned r = 0; r < n; r++) {
    double busy = wall - iv[r].comm_s;
    s->busy[r] = busy > 0.01 * wall ? busy : 0.01 * wall; /* a rank that only waited */
    s->work[r] = iv[r].work;
    s->speed[r] = s->work[r] > 0.0 && s->busy[r] > 0.0 ? s->work[r] / s->busy[r] : 0.0;
  }
  hlb__repart_fill_unknown_speeds(s->speed, n);
}

static void window_reset(hlb_repart_state *s) {
  size_t n = s->base.ctx.n_ranks;
  memset(s->win_work, 0, 4 * n * sizeof *s->win_work);
  s->win_n = 0;
  s->win_wall = s->win_iters = 0.0;
}

static void window_add(hlb_repart_state *s, const hlb_rank_interval *iv) {
  s->last_wall = s->last_iters = 0.0;
  for (unsigned r = 0; r < s->base.ctx.n_ranks; r++) {
    s->win_work[r] += s->work[r];
    s->win_busy[r] += s->busy[r];
    s->win_speed[r] += s->speed[r];
    s->win_speed2[r] += s->speed[r] * s->speed[r];
    s->last_wall = iv[r].real_s > s->last_wall ? iv[r].real_s : s->last_wall;
    s->last_iters = iv[r].iterations > s->last_iters ? iv[r].iterations : s->last_iters;
  }
  s->win_wall += s->last_wall;
  s->win_iters += s->last_iters;
  s->win_n++;
}

/* Split rows so that each rank's share of the total weight is proportional to share[r]. */
static int split_by_share(const hlb_repart_state *s, const double *share, size_t *counts) {
  unsigned n = s->base.ctx.n_ranks;
  if (!s->base.ctx.row_weights)
    return hlb_split_proportional(share, n, s->base.ctx.total_rows, counts);
  double total_share = 0.0, total_weight = 0.0;
  for (unsigned r = 0; r < n; r++)
    total_share += share[r];
  for (size_t i = 0; i < s->base.ctx.total_rows; i++)
    total_weight += s->base.ctx.row_weights[i];
  /* Walk the rows once, cutting where the cumulative weight passes each rank's target. */
  size_t row = 0;
  double acc = 0.0, target = 0.0;
  for (unsigned r = 0; r < n; r++) {
    target += total_weight * share[r] / total_share;
    size_t first = row;
    if (r + 1 == n) {
      row = s->base.ctx.total_rows;
    } else {
      while (row < s->base.ctx.total_rows && acc + 0.5 * s->base.ctx.row_weights[row] <= target)
        acc += s->base.ctx.row_weights[row++];
    }
    counts[r] = row - first;
  }
  return 0;
}

/* The slowest rank's busy time in busy[]: the time per interval the code takes now. */
static double slowest_busy(const hlb_repart_state *s) {
  double slowest = 0.0;
  for (unsigned r = 0; r < s->base.ctx.n_ranks; r++)
    slowest = s->busy[r] > slowest ? s->busy[r] : slowest;
  return slowest;
}

/* Aim at work per interval in proportion to speed (busy time proportional to work) and
 * return the predicted gain per interval: slowest busy time now minus total work / total
 * speed. */
static double aim_by_speed(hlb_repart_state *s) {
  double total_work = 0.0, total_speed = 0.0, slowest = slowest_busy(s);
  for (unsigned r = 0; r < s->base.ctx.n_ranks; r++) {
    total_work += s->work[r];
    total_speed += s->speed[r];
  }
  for (unsigned r = 0; r < s->base.ctx.n_ranks; r++)
    s->target[r] = total_speed > 0.0 ? total_work * s->speed[r] / total_speed : s->work[r];
  double balanced = total_speed > 0.0 ? total_work / total_speed : slowest;
  return slowest > balanced ? slowest - balanced : 0.0;
}

/* Rank r's busy time per interval as a line of its work: through what it measured before the
 * last move (then_*) and since (work, busy) when that line rises and the move was large enough
 * to measure it; otherwise through the origin, as a split in proportion to speed assumes. */
static void busy_line(const hlb_repart_state *s, unsigned r, double *slope, double *intercept) {
  double dw = s->work[r] - s->then_work[r];
  *slope = s->busy[r] / s->work[r];
  *intercept = 0.0;
  if (fabs(dw) > 0.02 * s->work[r]) {
    double secant = (s->busy[r] - s->then_busy[r]) / dw;
    if (secant > 0.0 && isfinite(secant)) {
      *slope = secant;
      *intercept = s->busy[r] - secant * s->work[r];
    }
  }
}

/* Aim through the last two splits (a secant step): the target gives every rank the same busy
 * time on its busy_line. A loaded rank's speed depends on the split (on this VM the unloaded
 * rank speeds up as the loaded one streams less memory, and the loaded one loses more of its
 * core share the earlier it waits), so a split in proportion to the speeds lands short of
 * the equal-time split and reaches it only over many moves; the secant reaches it in one or
 * two. No rank's work moves more than `reach` times as far as the largest change of the last
 * move. Returns the predicted gain per interval, or -1 when there is no last move under this
 * load to draw lines through (then aim_by_speed applies). */
static double aim_by_secant(hlb_repart_state *s) {
  unsigned n = s->base.ctx.n_ranks;
  double reach = s->base.ctx.param[P_REACH];
  if (!s->have_then || !(reach > 0.0)) return -1.0;
  double total_work = 0.0, inv_slope = 0.0, offset = 0.0, last_step = 0.0;
  for (unsigned r = 0; r < n; r++) {
    if (!(s->work[r] > 0.0) || !(s->busy[r] > 0.0)) return -1.0;
    double slope, intercept;
    busy_line(s, r, &slope, &intercept);
    total_work += s->work[r];
    inv_slope += 1.0 / slope;
    offset += intercept / slope;
    double dw = fabs(s->work[r] - s->then_work[r]);
    last_step = dw > last_step ? dw : last_step;
  }
  double equal_busy = (total_work + offset) / inv_slope, sum = 0.0;
  for (unsigned r = 0; r < n; r++) {
    double slope, intercept;
    busy_line(s, r, &slope, &intercept);
    double aim = (equal_busy - intercept) / slope, limit = reach * last_step;
    aim = fmin(fmax(aim, s->work[r] - limit), s->work[r] + limit);
    s->target[r] = aim > 0.0 ? aim : 0.0;
    sum += s->target[r];
  }
  if (!(sum > 0.0)) return -1.0;
  /* Clamping may leave the targets off the total: scale back, then predict from the lines. */
  double predicted = 0.0;
  for (unsigned r = 0; r < n; r++) {
    double slope, intercept;
    busy_line(s, r, &slope, &intercept);
    s->target[r] *= total_work / sum;
    predicted = fmax(predicted, intercept + slope * s->target[r]);
  }
  double slowest = slowest_busy(s);
  return slowest > predicted ? slowest - predicted : 0.0;
}

static int pays_off(const hlb_repart_state *s, double gain) {
  return gain * s->base.ctx.param[P_HORIZON] > s->base.ctx.param[P_MARGIN] * s->last_cost_s;
}

/* Largest relative standard error of a rank's mean speed over the window. */
static double window_speed_error(const hlb_repart_state *s) {
  double worst = 0.0, n = s->win_n;
  if (s->win_n < 2) return 0.0;
  for (unsigned r = 0; r < s->base.ctx.n_ranks; r++) {
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
  unsigned n = s->base.ctx.n_ranks;
  for (unsigned r = 0; r < n; r++)
    s->shared[r] = !hlb__repart_dedicated(&iv[r], HLB_REPART_TH1);
  int differs = memcmp(s->shared, s->shared_then, n) != 0;
  int same_as_before = memcmp(s->shared, s->shared_before, n) == 0;
  memcpy(s->shared_before, s->shared, n);
  s->changed_run = !differs ? 0 : same_as_before ? s->changed_run + 1 : 1;
  if (s->changed_run < (unsigned)s->base.ctx.param[P_PERSIST]) return 0;
  memcpy(s->shared_then, s->shared, n);
  s->changed_run = 0;
  s->from_average = 0;
  s->moves = 0;
  return 1;
}

/* The test on the window's averages; leaves the window's work and busy time in work[] and
 * busy[], the split to aim at in target[] and the predicted gain per interval in *gain. */
static int average_says_move(hlb_repart_state *s, double *gain) {
  unsigned n = s->base.ctx.n_ranks;
  *gain = 0.0;
  unsigned backoff = s->from_average < 16 ? s->from_average : 16;
  if (s->frozen || s->win_n < (unsigned)s->base.ctx.param[P_WINDOW] << backoff) return 0;
  if (s->moves + 2 > (unsigned)s->base.ctx.param[P_BUDGET]) return 0; /* no room for an undo */
  for (unsigned r = 0; r < n; r++) {
    s->work[r] = s->win_work[r] / s->win_n;
    s->busy[r] = s->win_busy[r] / s->win_n;
    s->speed[r] = s->busy[r] > 0.0 && s->work[r] > 0.0 ? s->work[r] / s->busy[r] : 0.0;
  }
  double slowest = slowest_busy(s);
  double error = window_speed_error(s); /* before aim_by_secant reuses speed[] */
  *gain = aim_by_secant(s);
  if (*gain < 0.0) *gain = aim_by_speed(s);
  double relative = slowest > 0.0 ? *gain / slowest : 0.0;
  double bar = s->base.ctx.param[P_THRESHOLD];
  if (any_shared(s->shared_then, n) && s->base.ctx.param[P_REFINE] < bar)
    bar = s->base.ctx.param[P_REFINE];
  return relative > bar && relative > s->base.ctx.param[P_CONFIDENCE] * error && pays_off(s, *gain);
}

/* The check of the last move, once `window` intervals ran on its split: 1 when their wall
 * time per iteration is no better than that of the intervals it was decided on. */
static int move_was_worse(hlb_repart_state *s) {
  if (!(s->before_s > 0.0) || s->win_n < (unsigned)s->base.ctx.param[P_WINDOW] ||
      !(s->win_iters > 0))
    return 0;
  double after_s = s->win_wall / s->win_iters, before_s = s->before_s;
  s->before_s = 0.0; /* checked once */
  return after_s >= before_s;
}

static int hlbr_decide(void *state, const hlb_rank_interval *iv, const size_t *counts,
                       size_t *new_counts, hlb_repart_decision *d) {
  hlb_repart_state *s = state;
  unsigned n = s->base.ctx.n_ranks;
  int rc = hlb__repart_admit(&s->base, iv, counts, new_counts, d);
  if (rc) return rc;
  interval_busy(s, iv);
  window_add(s, iv);
  double gain = aim_by_speed(s);
  int changed = load_changed(s, iv);
  d->dedicated = !any_shared(s->shared, n);
  d->long_term_load = any_shared(s->shared_then, n);
  d->predicted_gain_s = gain;
  if (changed) {
    s->frozen = 0;
    s->before_s = 0.0;
    s->have_then = 0; /* the last split's measurements were taken under another load */
  } else if (move_was_worse(s)) {
    memcpy(new_counts, s->undo_counts, n * sizeof *new_counts);
    d->rebalance = !hlb__repart_same(counts, new_counts, n);
    s->moves += d->rebalance;
    s->frozen = 1;
    s->have_then = 0;
    window_reset(s);
    return 0;
  }
  int move;
  double before_s = s->last_iters > 0.0 ? s->last_wall / s->last_iters : 0.0;
  if (changed) {
    /* A new load state: this interval's speeds, if the gain is worth it; either way the
     * average starts afresh from here. */
    double slowest = slowest_busy(s);
    move = slowest > 0.0 && gain / slowest > s->base.ctx.param[P_THRESHOLD] && pays_off(s, gain);
    if (!move) window_reset(s);
  } else {
    move = average_says_move(s, &d->predicted_gain_s);
    if (move) s->from_average++;
    if (s->win_iters > 0.0) before_s = s->win_wall / s->win_iters;
  }
  if (!move) return 0;
  rc = split_by_share(s, s->target, new_counts);
  if (rc) return rc;
  d->rebalance = !hlb__repart_same(counts, new_counts, n);
  if (d->rebalance) {
    memcpy(s->undo_counts, counts, n * sizeof *counts);
    memcpy(s->then_work, s->work, n * sizeof *s->work);
    memcpy(s->then_busy, s->busy, n * sizeof *s->busy);
    s->have_then = 1;
    s->before_s = before_s;
    s->moves++;
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
    hlb__repart_base_fini(&s->base);
  }
  free(s);
}

const hlb_repart_ops hlb__repart_hlb = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_repart_ops),
    .name = "hlb",
    .description = "hlb: load-change and averaged-evidence moves, secant refinement, each move "
                   "checked against wall time",
    .params = hlb_params,
    .n_params = P_COUNT,
    .init = hlbr_init,
    .decide = hlbr_decide,
    .rebalanced = hlbr_rebalanced,
    .fini = hlbr_fini,
    .stats = hlb__repart_base_stats,
};
