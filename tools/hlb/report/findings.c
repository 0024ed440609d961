/* "Where the time went": a short list computed from a run's figures, each line with its
 * figure and what a user could change, most costly first. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

/* A PU whose removal changes the fitted-ideal makespan by less than this is not worth its
 * place (its core, its driver thread). 1 %: below the run-to-run noise of the examples. */
#define NOT_WORTH_GAIN 0.01

/* Tail idle, transfers and gaps below this share of their whole are left out of the list: it
 * names what is worth changing, not every figure (the table has them all). */
#define MINOR_SHARE 0.01

static const char *plural(double n) {
  return n == 1 ? "" : "s";
}

typedef struct list {
  hlb__finding *f;
  size_t n, max;
} list;

__attribute__((format(printf, 5, 6))) static void add(list *L, const char *key, const char *pu,
                                                      double cost_s, const char *fmt, ...) {
  if (L->n == L->max) return;
  hlb__finding *f = &L->f[L->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->key, sizeof f->key, "%s", key);
  snprintf(f->pu, sizeof f->pu, "%s", pu ? pu : "");
  f->cost_s = cost_s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->text, sizeof f->text, fmt, ap);
  va_end(ap);
}

static void change(list *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void change(list *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->f[L->n - 1].change, sizeof L->f[0].change, fmt, ap);
  va_end(ap);
}

static int is_hlb(const hlb__rrun *run) {
  return !strcmp(run->name, "hlb");
}

static double total(const hlb__rrun *run, size_t off) {
  double s = 0;
  for (unsigned p = 0; p < run->n_pus; p++)
    s += *(const double *)((const char *)&run->pu[p] + off);
  return s;
}

static void training(list *L, const hlb__rrun *run) {
  double end = 0;
  double items = 0;
  for (unsigned p = 0; p < run->n_pus; p++)
    if (isfinite(run->pu[p].first_predicted_s)) end = fmax(end, run->pu[p].first_predicted_s);
  if (!(end > 0)) return;
  for (size_t k = 0; k < run->n; k++)
    if (run->b[k].start_s < end && !run->b[k].failed) items += run->b[k].count;
  add(L, "training", NULL, end,
      "Training: %.3g s (%.1f %% of the makespan) passed before every PU had a prediction; "
      "%.0f items (%.1f %%) were done in blocks without one.",
      end, 100 * end / run->makespan_s, items, 100 * items / fmax(run->items, 1));
  change(L, is_hlb(run)
                ? "probe_fraction (--params probe_fraction=...) sets the first blocks' size; "
                  "smaller probes train sooner, larger ones time more reliably."
                : "Try --policy hlb, whose probe_fraction sets the training blocks.");
}

static void tail(list *L, const hlb__rrun *run) {
  unsigned last = 0;
  for (unsigned p = 1; p < run->n_pus; p++)
    if (run->pu[p].last_end_s > run->pu[last].last_end_s) last = p;
  double waited = 0;
  for (unsigned p = 0; p < run->n_pus; p++)
    if (!run->pu[p].stopped[0]) waited += run->pu[p].tail_idle_s;
  double last_block = 0;
  for (size_t k = 0; k < run->n; k++)
    if (run->b[k].pu == last && run->b[k].end_s >= run->pu[last].last_end_s)
      last_block = run->b[k].count;
  double pu_time = run->makespan_s * run->n_pus;
  if (!(waited > MINOR_SHARE * pu_time) || run->n_pus < 2) return;
  add(L, "tail", run->pu[last].label, waited / (run->n_pus - 1),
      "Tail idle: %.3g PU-seconds (%.1f %% of all PU time) the PUs waited at the end for %s, whose "
      "last block of %.0f items ended at %.3g s.",
      waited, 100 * waited / pu_time, run->pu[last].label, last_block, run->pu[last].last_end_s);
  change(L, is_hlb(run)
                ? "Smaller last blocks: lower fraction or min_fraction (--params "
                  "fraction=0.25,min_fraction=0.005)."
                : "A policy that shrinks its last blocks (hlb, guided, plb-hec) ends closer "
                  "together.");
}

static void mispredicted(list *L, const hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    if (!u->mispredicted) continue;
    double cost = 0;
    for (size_t k = 0; k < run->n; k++) {
      const hlb__rblock *b = &run->b[k];
      if (b->pu == p && !b->failed && b->predicted_s > 0)
        cost += fabs(b->end_s - b->start_s - b->predicted_s);
    }
    add(L, "mispredicted", u->label, cost,
        "Mispredicted: %zu of %s's %zu predicted blocks took outside [%.2gx, %.2gx] of their "
        "prediction (median %.2gx; %.3g s off in all)%s.",
        u->mispredicted, u->label, u->predicted, 1 / 1.5, 1.5, u->median_ratio, cost,
        u->throttle > 1 ? "; it is throttled (emulated)" : "");
    /* hlb's misprediction guard (tail_idle, docs/policies-plb.md) sizes a PU's blocks by how
     * badly its recent blocks were mispredicted: it is the knob that bounds what a wrong
     * prediction costs at the end, whatever made the prediction wrong. */
    if (u->throttle > 1)
      change(L,
             "%s runs x%g slower on purpose (--throttle): its first blocks set the model "
             "before the slowdown showed; drop --throttle, or raise smoothing so the "
             "correction follows faster%s.",
             u->label, u->throttle,
             is_hlb(run) ? "; a lower tail_idle (--params tail_idle=0.01) keeps a mispredicted "
                           "PU's blocks smaller so a late one idles the others less"
                         : "");
    else
      change(L, is_hlb(run) ? "The PU's speed drifts: raise smoothing (--params smoothing=0.7); a "
                              "lower tail_idle (--params tail_idle=0.01) keeps its blocks smaller "
                              "while it mispredicts; or leave a shared device out of --pus."
                            : "Use a policy that corrects drift and guards against "
                              "misprediction (hlb, its tail_idle parameter).");
  }
}

static void throttle(list *L, const hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    if (!(u->throttle_s > 0)) continue;
    add(L, "throttle", u->label, u->throttle_s,
        "Emulated throttle: %.3g s of %s's %.3g s busy time (%.0f %%) was the x%g slowdown "
        "asked for, not compute.",
        u->throttle_s, u->label, u->busy_s, 100 * u->throttle_s / fmax(u->busy_s, 1e-300),
        u->throttle);
    change(L, "Drop --throttle %s=%g for a real run; it is there to test balancing.", u->label,
           u->throttle);
  }
}

static void transfer(list *L, const hlb__rrun *run) {
  double tr = total(run, offsetof(hlb__rpu, transfer_s)),
         busy = total(run, offsetof(hlb__rpu, busy_s));
  if (!(tr > MINOR_SHARE * busy) || !(busy > 0)) return;
  unsigned worst = 0;
  for (unsigned p = 1; p < run->n_pus; p++)
    if (run->pu[p].transfer_s > run->pu[worst].transfer_s) worst = p;
  add(L, "transfer", run->pu[worst].label, tr / run->n_pus,
      "Transfers: %.1f %% of the busy time (%.3g s); most on %s (%.3g s, %.1f %% of its busy "
      "time).",
      100 * tr / busy, tr, run->pu[worst].label, run->pu[worst].transfer_s,
      100 * run->pu[worst].transfer_s / fmax(run->pu[worst].busy_s, 1e-300));
  change(L, is_hlb(run) ? "Larger blocks amortise transfers: lower overhead_max (--params "
                          "overhead_max=0.02); or leave the device out of --pus."
                        : "Larger blocks amortise transfers; or leave the device out of --pus.");
}

static void not_worth(list *L, const hlb__rrun *run) {
  if (!isfinite(run->ideal_s)) return;
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    if (!isfinite(u->without_s) || u->without_s > run->ideal_s * (1 + NOT_WORTH_GAIN)) continue;
    add(L, "not_worth", u->label, run->ideal_s * NOT_WORTH_GAIN,
        "Not worth its place: without %s the fitted-ideal split takes %.4g s against %.4g s "
        "with it (%+.1f %%); it did %.0f items (%.1f %%).",
        u->label, u->without_s, run->ideal_s, 100 * (u->without_s / run->ideal_s - 1), u->items,
        100 * u->items / fmax(run->items, 1));
    change(L, "Leave %s out of --pus; its core or driver thread can go to the cpu PU.", u->label);
  }
}

/* The block a PU had in flight when it was released is traced as failed: its output was
 * dropped and its items redone. That is part of the release, not a failure of the device. */
static int dropped_at_release(const hlb__rrun *run, const hlb__rblock *b) {
  const hlb__rpu *u = &run->pu[b->pu];
  if (b->failed == 2) return 1; /* marked from the run's facts (analyze.c) */
  return b->failed && u->stopped[0] && strstr(u->stopped, "retired: ") != u->stopped &&
         b->end_s >= u->last_end_s;
}

static void stopped(list *L, const hlb__rrun *run) {
  for (unsigned p = 0; p < run->n_pus; p++) {
    const hlb__rpu *u = &run->pu[p];
    if (!u->stopped[0]) continue;
    int retired = strstr(u->stopped, "retired: ") == u->stopped;
    char dropped[160] = "";
    for (size_t k = 0; k < run->n; k++)
      if (run->b[k].pu == p && dropped_at_release(run, &run->b[k]))
        snprintf(dropped, sizeof dropped,
                 "; its block in flight (%.0f items, %.3g s) was dropped and redone elsewhere",
                 run->b[k].count, run->b[k].end_s - run->b[k].start_s);
    add(L, retired ? "retired" : "released", u->label, u->tail_idle_s * 0.01,
        "%s %s: %s (it did %.0f items in %zu block%s%s).", retired ? "Retired" : "Released device",
        u->label, u->stopped, u->items, u->blocks, plural((double)u->blocks), dropped);
    change(L,
           retired ? "Check %s's device and driver; leave it out of --pus until it works."
                   : "Leave %s out of --pus (its core goes to the cpu PU), or keep it with "
                     "--keep-devices.",
           u->label);
  }
}

static void failures(list *L, const hlb__rrun *run) {
  double s = 0, items = 0;
  size_t n = 0;
  for (size_t k = 0; k < run->n; k++)
    if (run->b[k].failed && !dropped_at_release(run, &run->b[k])) {
      n++;
      s += run->b[k].end_s - run->b[k].start_s;
      items += run->b[k].count;
    }
  if (!n) return;
  add(L, "failures", NULL, s,
      "Failures: %zu block%s failed after %.3g s of work; their %.0f items were redone elsewhere.",
      n, plural((double)n), s, items);
  change(L, "Check the device named in the table; a PU is retired after repeated failures.");
}

static void gaps(list *L, const hlb__rrun *run) {
  double g = total(run, offsetof(hlb__rpu, gaps_s));
  if (!(g > MINOR_SHARE * run->makespan_s * run->n_pus)) return;
  size_t blocks = 0;
  for (unsigned p = 0; p < run->n_pus; p++)
    blocks += run->pu[p].blocks + run->pu[p].failed_blocks;
  add(L, "decision", NULL, g / run->n_pus,
      "Between blocks: %.3g PU-seconds (%.1f %% of all PU time) passed between a PU's blocks "
      "(policy decision and dispatch), %.3g ms per block.",
      g, 100 * g / (run->makespan_s * run->n_pus), 1e3 * g / fmax((double)blocks, 1));
  change(L, is_hlb(run) ? "Fewer, larger blocks: raise fraction (--params fraction=0.5)."
                        : "Fewer, larger blocks cost fewer decisions.");
}

static int by_cost(const void *a, const void *b) {
  double x = ((const hlb__finding *)a)->cost_s, y = ((const hlb__finding *)b)->cost_s;
  return (x < y) - (x > y);
}

size_t hlb__report_findings(const hlb__report *r, const hlb__rrun *run, hlb__finding *out,
                            size_t max) {
  (void)r;
  list L = {out, 0, max};
  training(&L, run);
  tail(&L, run);
  mispredicted(&L, run);
  throttle(&L, run);
  transfer(&L, run);
  not_worth(&L, run);
  stopped(&L, run);
  failures(&L, run);
  gaps(&L, run);
  qsort(out, L.n, sizeof *out, by_cost);
  return L.n;
}
