/* Figures of a run: per-PU busy, transfer, throttle, failed, idle and tail-idle time, models
 * fitted to the blocks (or the run's own), the fitted-ideal split of the same items, and the
 * blocks that missed their prediction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlb/error.h"
#include "hlb/partition.h"
#include "report/report.h"

/* A block is mispredicted when it took more than (1 + this) times its prediction or less than
 * 1 / (1 + this) of it. The traces do not record the prediction's own uncertainty yet; 0.5 is
 * a display threshold (not from the papers), wide enough that timing noise of a few tens of
 * percent on small blocks does not count. */
#define MISPREDICT_TOLERANCE 0.5

static double trace_makespan(const hlb__report *r, const hlb__rrun *run) {
  double end = 0;
  for (size_t k = 0; k < run->n; k++)
    end = fmax(end, run->b[k].end_s);
  const char *m = strstr(r->title, "makespan ");
  double titled = m ? strtod(m + 9, NULL) : 0;
  return r->kind == HLB__REPORT_EXEC && titled > end ? titled : end;
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void block_figures(hlb__rrun *run) {
  double prev_end[HLB__REPORT_MAX_PUS];
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    u->first_start_s = INFINITY;
    u->first_predicted_s = NAN;
    prev_end[p] = NAN;
  }
  for (size_t k = 0; k < run->n; k++) {
    const hlb__rblock *b = &run->b[k];
    hlb__rpu *u = &run->pu[b->pu];
    double dur = b->end_s - b->start_s;
    if (isfinite(prev_end[b->pu]) && b->start_s > prev_end[b->pu])
      u->gaps_s += b->start_s - prev_end[b->pu];
    prev_end[b->pu] = fmax(isfinite(prev_end[b->pu]) ? prev_end[b->pu] : 0, b->end_s);
    u->first_start_s = fmin(u->first_start_s, b->start_s);
    u->last_end_s = fmax(u->last_end_s, b->end_s);
    if (b->failed) {
      u->failed_blocks++;
      u->failed_items += b->count;
      u->failed_s += dur;
      continue;
    }
    u->blocks++;
    u->items += b->count;
    run->items += b->count;
    u->busy_s += dur;
    u->transfer_s += b->transfer_s;
    u->throttle_s += b->compute_s * (u->throttle - 1) / u->throttle;
    u->max_count = fmax(u->max_count, b->count);
    if (b->predicted_s > 0 && isnan(u->first_predicted_s)) u->first_predicted_s = b->start_s;
  }
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    if (!isfinite(u->first_start_s)) u->first_start_s = 0;
    u->idle_s = fmax(0, run->makespan_s - u->busy_s - u->failed_s);
    u->tail_idle_s = fmax(0, run->makespan_s - u->last_end_s);
  }
}

static void prediction_figures(hlb__rrun *run) {
  double *ratio = malloc((run->n + 1) * sizeof *ratio);
  if (!ratio) return;
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    size_t n = 0;
    for (size_t k = 0; k < run->n; k++) {
      const hlb__rblock *b = &run->b[k];
      if (b->pu != p || b->failed || !(b->predicted_s > 0)) continue;
      double r = (b->end_s - b->start_s) / b->predicted_s;
      ratio[n++] = r;
      if (r > 1 + MISPREDICT_TOLERANCE || r < 1 / (1 + MISPREDICT_TOLERANCE)) u->mispredicted++;
    }
    u->predicted = n;
    qsort(ratio, n, sizeof *ratio, by_double);
    u->median_ratio = n ? (n % 2 ? ratio[n / 2] : 0.5 * (ratio[n / 2 - 1] + ratio[n / 2])) : NAN;
  }
  free(ratio);
}

/* Fit F + G to the PU's finished blocks with the library's model (the same basis and criterion
 * the policies use), valid up to all the run's items so the ideal split can use it. */
static void fit_from_blocks(const hlb__rrun *run, unsigned p, hlb__rpu *u) {
  hlb_model *m = NULL;
  if (!(u->max_count > 0) || hlb_model_create(u->max_count, NULL, &m)) return;
  for (size_t k = 0; k < run->n; k++) {
    const hlb__rblock *b = &run->b[k];
    if (b->pu == p && !b->failed && b->count > 0)
      hlb_model_add(m, b->count, b->compute_s, b->transfer_s);
  }
  if (hlb_model_fit(m, fmax(run->items, u->max_count)) == 0 && hlb_model_curve(m, &u->curve) == 0) {
    u->fitted = 1;
    u->fit_from_run = 0;
    u->r2 = hlb_model_r2(m);
    u->terms = hlb_model_terms(m);
  }
  hlb_model_destroy(m);
}

/* The split's solver takes a curve down to x = 0+ (hlb_eft_solve checks E(0+) <= E(W)), so a
 * curve is checked from a millionth of an item, not from one item. */
#define SOLVE_FROM 1e-6

/* A PU whose blocks were all of one size (greedy's chunks, static's one block) has no curve
 * to fit, yet it did part of the work: left out, the ideal split would be over the others
 * alone and a run could come out faster than its "ideal". Its curve is then its rate, time
 * proportional to items at its items per busy second, the most its blocks tell. */
static void rate_from_blocks(const hlb__rrun *run, hlb__rpu *u) {
  if (u->fitted || !(u->items > 0) || !(u->busy_s > 0)) return;
  memset(&u->curve, 0, sizeof u->curve);
  u->curve.scale = fmax(run->items, 1);
  u->curve.coef[HLB_TERM_U] = u->busy_s / u->items * u->curve.scale;
  u->terms = 1u << HLB_TERM_U;
  u->r2 = NAN;
  u->fitted = u->rate_only = 1;
  u->fit_from_run = 0;
}

/* A curve is taken as it is when the times it gives for the PU's own blocks add up to within
 * this factor of their busy time: the band "where the time went" uses for one block. */
#define CURVE_BAND 1.5

/* The fitted-ideal split is only as good as the curves: one that does not add up to its PU's
 * busy time (the run's model under MPI or noise, fitted to the small training blocks and
 * wrong by 5x on the large ones) would make the split, and the gap to it, fiction. Such a
 * curve is scaled, as a whole, to the busy time of its blocks: its shape is kept, its level is
 * what the PU did, and the table says so. */
static void scale_to_blocks(const hlb__rrun *run, unsigned p, hlb__rpu *u) {
  u->scaled = 1;
  u->curve_sum_s = NAN;
  if (!u->fitted) return;
  double sum = 0;
  for (size_t k = 0; k < run->n; k++) {
    const hlb__rblock *b = &run->b[k];
    if (b->pu == p && !b->failed && b->count > 0) sum += hlb_curve_time(&u->curve, b->count);
  }
  u->curve_sum_s = sum;
  if (!(sum > 0) || !(u->busy_s > 0)) return;
  double f = u->busy_s / sum;
  if (f <= CURVE_BAND && f >= 1 / CURVE_BAND) return;
  for (int t = 0; t < HLB_TERM_COUNT; t++)
    u->curve.coef[t] *= f;
  u->curve.transfer_per_item *= f;
  u->curve.transfer_fixed *= f;
  u->scaled = f;
}

/* The equal-finish-time split (PLB-HeC III.C) of the run's items over the fitted PUs, leaving
 * out PU `skip` (-1: none). NaN when fewer than one PU is fitted or the solver refuses. */
static double ideal_makespan(hlb__rrun *run, int skip, double *share) {
  hlb_curve curves[HLB__REPORT_MAX_PUS];
  unsigned idx[HLB__REPORT_MAX_PUS], n = 0;
  for (unsigned p = 0; p < run->n_pus; p++)
    if (run->pu[p].fitted && (int)p != skip) {
      idx[n] = p;
      curves[n++] = run->pu[p].curve;
    }
  double x[HLB__REPORT_MAX_PUS], mk = NAN;
  if (n == 0 || !(run->items > 0)) return NAN;
  if (hlb_eft_solve(curves, NULL, n, run->items, x, &mk)) {
    if (skip < 0) snprintf(run->ideal_why, sizeof run->ideal_why, "%s", hlb_last_error());
    return NAN;
  }
  for (unsigned i = 0; share && i < n; i++)
    share[idx[i]] = x[i];
  return mk;
}

static void ideal_figures(hlb__rrun *run) {
  double share[HLB__REPORT_MAX_PUS] = {0};
  run->ideal_s = ideal_makespan(run, -1, share);
  run->ideal_pus = 0;
  for (unsigned p = 0; p < run->n_pus; p++) {
    run->pu[p].ideal_items = share[p];
    run->pu[p].without_s = NAN;
    if (run->pu[p].fitted) run->ideal_pus++;
  }
  if (run->ideal_pus < 2) return;
  for (unsigned p = 0; p < run->n_pus; p++)
    if (run->pu[p].fitted) run->pu[p].without_s = ideal_makespan(run, (int)p, NULL);
}

/* A PU that got no block during the last half of the run while the others still worked was
 * stopped (released or retired); the executor trace does not say which, the facts do. */
static void infer_stopped(hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    if (u->stopped_known || u->stopped[0] || !(u->last_end_s < 0.5 * run->makespan_s)) continue;
    snprintf(u->stopped, sizeof u->stopped,
             "stopped getting blocks at %.3g s (%.0f %% into the run): released or retired; the "
             "trace does not record why",
             u->last_end_s, 100 * u->last_end_s / run->makespan_s);
  }
}

/* The block a released PU had in flight is traced as failed (cat "failed"): its output was
 * dropped and its items redone elsewhere. That is the release, not a failure of the device,
 * and the run's --json does not count it in failed_blocks, so neither does the page. Only when
 * the run's facts say the PU was released: a PU inferred stopped may have been retired. */
static void mark_dropped(hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    if (!u->stopped_known || !u->stopped[0] || !strncmp(u->stopped, "retired: ", 9)) continue;
    for (size_t k = 0; k < run->n; k++) {
      hlb__rblock *b = &run->b[k];
      if (b->pu != p || b->failed != 1 || b->end_s < u->last_end_s) continue;
      b->failed = 2;
      u->failed_blocks--;
      u->failed_items -= b->count;
      u->failed_s -= b->end_s - b->start_s;
      u->dropped_items += b->count;
      u->dropped_s += b->end_s - b->start_s;
    }
  }
}

/* Under MPI every rank may have a PU of the same name: the page says NAME@RANK, as --throttle
 * and --inject spell it; other repeats get "#k". */
static void labels(hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    hlb__rpu *u = &run->pu[p];
    unsigned same = 0;
    for (unsigned q = 0; q < p; q++)
      same += !strcmp(run->pu[q].name, u->name);
    char label[sizeof u->label];
    if (!strncmp(u->where, "rank ", 5))
      snprintf(label, sizeof label, "%s@%s", u->name, u->where + 5);
    else if (same)
      snprintf(label, sizeof label, "%s #%u", u->name, same + 1);
    else
      snprintf(label, sizeof label, "%s", u->name);
    memcpy(u->label, label, sizeof label);
  }
}

void hlb__report_analyze(hlb__report *r) {
  for (unsigned i = 0; i < r->n_runs; i++) {
    hlb__rrun *run = &r->runs[i];
    labels(run);
    run->makespan_s = trace_makespan(r, run);
    block_figures(run);
    mark_dropped(run);
    prediction_figures(run);
    for (unsigned p = 0; p < run->n_pus; p++) {
      hlb__rpu *u = &run->pu[p];
      /* The run's own model is kept when its curve can be solved over all the items. */
      if (u->fitted && hlb_eft_check_curve(&u->curve, p, SOLVE_FROM, fmax(run->items, 1)))
        u->fitted = 0;
      if (!u->fitted) {
        fit_from_blocks(run, p, u);
        /* The library's fit may keep a term that makes the curve fall near zero (a negative
         * ln u); the split's solver refuses such a curve, so the PU is then taken at its rate
         * rather than left out of the split. */
        if (u->fitted && hlb_eft_check_curve(&u->curve, p, SOLVE_FROM, fmax(run->items, 1))) {
          snprintf(u->refused, sizeof u->refused, "%s", hlb_last_error());
          u->fitted = 0;
        }
      }
      if (!u->fitted) rate_from_blocks(run, u);
      scale_to_blocks(run, p, u);
    }
    ideal_figures(run);
    if (r->kind == HLB__REPORT_EXEC) infer_stopped(run);
  }
}
