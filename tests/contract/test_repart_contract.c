/* The repartition contract (include/hlb/repartition.h): every registered repartition policy,
 * the same checks, on a small deterministic model of an SPMD code (ranks of known speeds run
 * in step; a rank's load can change mid-run). For each policy:
 *  - sums: new_counts always sum to the rows, and equal counts unless rebalance is set; a
 *    large imbalance is acted on (except by `none`), so the sums are checked on real moves;
 *  - deterministic: two fresh states fed the same inputs, interleaved, give the same counts,
 *    return codes and decisions byte for byte, whatever the output buffers held before;
 *  - no caller pointer kept: parameters and row weights are poisoned right after init,
 *    measurements, counts and outputs right after each decide, and the outputs must equal
 *    those of a run whose arrays stay intact; a third run frees them at once (under ASan a
 *    late read is a use after free);
 *  - balanced: ranks that take the same time for their rows are left alone;
 *  - rejected: a NaN, infinite, negative or zero measurement returns HLB_ESAMPLE, keeps the
 *    split, is counted by reason, names the rank and field, and teaches the state nothing;
 *    counts that do not sum to the rows are HLB_EINVAL. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/error.h"
#include "hlb/repartition.h"

#define MAX_INTERVALS 40
#define MAX_RANKS 64

/* ---- the modelled SPMD code -------------------------------------------------------------- */

typedef struct scenario {
  unsigned n_ranks, intervals, iterations;
  size_t rows;
  int weighted;        /* rows cost 1 + (i % 7) / 2 instead of 1 */
  double speed[8];     /* weight per second of rank r % 8 */
  unsigned load_at;    /* from this interval on rank 1 shares its core (0: never) */
  const size_t *start; /* initial counts, or NULL for an even split */
  double jitter;       /* compute times vary by up to +-jitter/2, in a fixed pattern */
} scenario;

static const scenario imbalanced = {4, 30, 5, 1200, 0, {1, 4, 1, 1, 1, 1, 1, 1}, 0, NULL, 0};
static const scenario weighted = {4, 30, 5, 1200, 1, {1, 4, 2, 1, 1, 1, 1, 1}, 12, NULL, 0};
static const scenario load_change = {4, 30, 5, 1200, 0, {1, 1, 1, 1, 1, 1, 1, 1}, 8, NULL, 0};
static const scenario many = {64, 12, 5, 6400, 0, {1, 2, 3, 4, 1, 2, 3, 4}, 4, NULL, 0};
static const scenario one_rank = {1, 10, 5, 100, 0, {1, 1, 1, 1, 1, 1, 1, 1}, 0, NULL, 0};
static const scenario *const all_scenarios[] = {&imbalanced, &weighted, &load_change, &many,
                                                &one_rank};

static const size_t proportional_start[4] = {100, 200, 300, 400};
/* Balanced splits, with the timing noise of a real machine (4 %, below every policy's
 * threshold): an exactly balanced input would let a policy that ignores its threshold pass. */
static const scenario balanced_same = {4, 20, 5, 1200, 0, {1, 1, 1, 1, 1, 1, 1, 1}, 0, NULL, 0.04};
static const scenario balanced_hetero = {
    4, 20, 5, 1000, 0, {1, 2, 3, 4, 1, 2, 3, 4}, 0, proportional_start, 0.04};

static double row_weight(const scenario *sc, size_t i) {
  return sc->weighted ? 1.0 + (double)(i % 7) / 2.0 : 1.0;
}

static double *make_weights(const scenario *sc) {
  if (!sc->weighted) return NULL;
  double *w = malloc(sc->rows * sizeof *w);
  assert_non_null(w);
  for (size_t i = 0; i < sc->rows; i++)
    w[i] = row_weight(sc, i);
  return w;
}

/* Rank r's speed in interval t: a loaded rank gets half its core. */
static double speed_of(const scenario *sc, unsigned r, unsigned t) {
  double v = sc->speed[r % 8];
  return sc->load_at && t >= sc->load_at && r == 1 ? v / 2 : v;
}

/* What every rank measures in interval t with the given counts: the ranks run in step, so
 * each waits in MPI for the slowest; a loaded rank's CPU time is half its wall time. */
static void measure(const scenario *sc, unsigned t, const size_t *counts, hlb_rank_interval *iv) {
  double compute[MAX_RANKS], slowest = 0.0;
  size_t first = 0;
  for (unsigned r = 0; r < sc->n_ranks; r++) {
    double w = 0.0;
    for (size_t i = first; i < first + counts[r]; i++)
      w += row_weight(sc, i);
    first += counts[r];
    /* A fixed pattern in [-1/2, 1/2] over ranks and intervals, the same in every run. */
    double pattern = (double)((r * 7 + t * 13) % 11) / 10.0 - 0.5;
    compute[r] = w / speed_of(sc, r, t) * (1.0 + sc->jitter * pattern);
    slowest = fmax(slowest, compute[r]);
    iv[r] = (hlb_rank_interval){
        .work = w * sc->iterations, .rows = counts[r], .iterations = sc->iterations};
  }
  for (unsigned r = 0; r < sc->n_ranks; r++) {
    int loaded = sc->load_at && t >= sc->load_at && r == 1;
    iv[r].real_s = slowest * sc->iterations;
    iv[r].comm_s = (slowest - compute[r]) * sc->iterations;
    iv[r].cpu_s = iv[r].real_s * (loaded ? 0.5 : 1.0);
  }
}

static void start_counts(const scenario *sc, size_t *counts) {
  for (unsigned r = 0; r < sc->n_ranks; r++)
    counts[r] = sc->start ? sc->start[r] : sc->rows / sc->n_ranks + (r < sc->rows % sc->n_ranks);
}

/* ---- a policy instance and the record of its outputs -------------------------------------- */

typedef struct step_out {
  int rc;
  size_t counts[MAX_RANKS]; /* counts going in */
  size_t new_counts[MAX_RANKS];
  hlb_repart_decision d;
} step_out;

/* What the caller does with its arrays once a call returns. POISONS keeps them allocated, so a
 * policy that reads them later sees the poison in any build; FREES frees them at once, so
 * ASan reports the read. */
typedef enum caller { CALLER_KEEPS, CALLER_POISONS, CALLER_FREES } caller;

typedef struct instance {
  const hlb_repart_ops *ops;
  const scenario *sc;
  caller mode;
  void *state;
  void *kept[4 * MAX_INTERVALS + 2]; /* the caller's arrays, freed after fini */
  unsigned n_kept;
  size_t counts[MAX_RANKS];
  unsigned t;
} instance;

/* After a call: keep p until fini, or poison it with `bytes` of 0xff (NaN doubles, huge
 * counts) and keep or free it. */
static void caller_done(instance *in, void *p, size_t bytes) {
  if (!p) return;
  if (in->mode != CALLER_KEEPS) memset(p, 0xff, bytes);
  if (in->mode == CALLER_FREES) {
    free(p);
    return;
  }
  assert_true(in->n_kept < sizeof in->kept / sizeof in->kept[0]);
  in->kept[in->n_kept++] = p;
}

static void params_of(const hlb_repart_ops *ops, double *param) {
  assert_int_equal(hlb_repart_params(ops, "", param), 0);
}

/* The caller's init arrays are on the heap, handled by `mode` once init returns. */
static void instance_start(instance *in, const hlb_repart_ops *ops, const scenario *sc,
                           caller mode) {
  memset(in, 0, sizeof *in);
  in->ops = ops;
  in->sc = sc;
  in->mode = mode;
  double *param = calloc(ops->n_params + 1, sizeof *param);
  assert_non_null(param);
  params_of(ops, param);
  double *weights = make_weights(sc);
  hlb_repart_ctx ctx = {sc->n_ranks, sc->rows, weights, param};
  assert_int_equal(ops->init(&ctx, &in->state), 0);
  caller_done(in, param, ops->n_params * sizeof *param);
  caller_done(in, weights, sc->rows * sizeof *weights);
}

static void instance_stop(instance *in) {
  in->ops->fini(in->state);
  in->state = NULL;
  for (unsigned i = 0; i < in->n_kept; i++)
    free(in->kept[i]);
  in->n_kept = 0;
}

/* One decide() with the measurements of the instance's next interval, in heap arrays handled
 * by the instance's caller mode after the call. fill: the byte the output buffers hold before
 * the call. iv_edit may corrupt the measurements. */
static void instance_step(instance *in, int fill, step_out *out,
                          void (*iv_edit)(hlb_rank_interval *iv)) {
  unsigned n = in->sc->n_ranks;
  hlb_rank_interval *iv = malloc(n * sizeof *iv);
  size_t *counts = malloc(n * sizeof *counts), *next = malloc(n * sizeof *next);
  hlb_repart_decision *d = malloc(sizeof *d);
  assert_true(iv && counts && next && d);
  measure(in->sc, in->t, in->counts, iv);
  if (iv_edit) iv_edit(iv);
  memcpy(counts, in->counts, n * sizeof *counts);
  memset(next, fill, n * sizeof *next);
  memset(d, fill, sizeof *d);
  memset(out, 0, sizeof *out);
  out->rc = in->ops->decide(in->state, iv, counts, next, d);
  memcpy(out->counts, in->counts, n * sizeof *counts);
  memcpy(out->new_counts, next, n * sizeof *next);
  out->d = *d;
  caller_done(in, iv, n * sizeof *iv);
  caller_done(in, counts, n * sizeof *counts);
  caller_done(in, next, n * sizeof *next);
  caller_done(in, d, sizeof *d);
  if (out->rc == 0 && out->d.rebalance) {
    memcpy(in->counts, out->new_counts, n * sizeof *counts);
    if (in->ops->rebalanced) in->ops->rebalanced(in->state, 0.01);
  }
  in->t++;
}

/* Runs a whole scenario; out[t] for each interval. */
static void run_scenario(const hlb_repart_ops *ops, const scenario *sc, caller mode, int fill,
                         step_out *out) {
  instance in;
  instance_start(&in, ops, sc, mode);
  start_counts(sc, in.counts);
  for (unsigned t = 0; t < sc->intervals; t++)
    instance_step(&in, fill, &out[t], NULL);
  instance_stop(&in);
}

static void assert_same_step(const hlb_repart_ops *ops, const scenario *sc, unsigned t,
                             const step_out *a, const step_out *b, const char *what) {
  if (a->rc == b->rc && !memcmp(a->new_counts, b->new_counts, sc->n_ranks * sizeof(size_t)) &&
      !memcmp(&a->d, &b->d, sizeof a->d))
    return;
  fail_msg("%s: %s differs at interval %u of a %u-rank scenario: rc %d vs %d, rebalance %d vs "
           "%d, rank 0 gets %zu vs %zu rows, imbalance %g vs %g, gain %g vs %g s",
           ops->name, what, t, sc->n_ranks, a->rc, b->rc, a->d.rebalance, b->d.rebalance,
           a->new_counts[0], b->new_counts[0], a->d.imbalance, b->d.imbalance,
           a->d.predicted_gain_s, b->d.predicted_gain_s);
}

/* ---- the checks --------------------------------------------------------------------------- */

static void check_sums(const hlb_repart_ops *ops, const scenario *sc, const step_out *out,
                       unsigned *rebalances) {
  for (unsigned t = 0; t < sc->intervals; t++) {
    const step_out *o = &out[t];
    if (o->rc) fail_msg("%s: decide failed at interval %u: %s", ops->name, t, hlb_last_error());
    size_t sum = 0;
    for (unsigned r = 0; r < sc->n_ranks; r++)
      sum += o->new_counts[r];
    if (sum != sc->rows)
      fail_msg("%s: new counts sum to %zu, not %zu rows (interval %u, %u ranks)", ops->name, sum,
               sc->rows, t, sc->n_ranks);
    int same = !memcmp(o->new_counts, o->counts, sc->n_ranks * sizeof(size_t));
    if (!o->d.rebalance && !same)
      fail_msg("%s: rebalance is 0 but the counts changed (interval %u)", ops->name, t);
    if (o->d.rebalance && same)
      fail_msg("%s: rebalance is 1 but the counts are unchanged (interval %u)", ops->name, t);
    *rebalances += (unsigned)o->d.rebalance;
  }
}

static void counts_sum_to_rows(const hlb_repart_ops *ops) {
  static step_out out[MAX_INTERVALS];
  for (size_t k = 0; k < sizeof all_scenarios / sizeof all_scenarios[0]; k++) {
    unsigned rebalances = 0;
    run_scenario(ops, all_scenarios[k], CALLER_KEEPS, 0, out);
    check_sums(ops, all_scenarios[k], out, &rebalances);
    /* A 4:1 speed difference must move rows, or the sums above were only checked on kept
     * splits; `none` is the one policy that never moves. */
    if (all_scenarios[k] == &imbalanced && strcmp(ops->name, "none") && rebalances == 0)
      fail_msg("%s: never rebalanced ranks of speeds 1:4:1:1 in %u intervals", ops->name,
               imbalanced.intervals);
  }
}

static void same_inputs_same_outputs(const hlb_repart_ops *ops) {
  static step_out a[MAX_INTERVALS], b[MAX_INTERVALS];
  for (size_t k = 0; k < sizeof all_scenarios / sizeof all_scenarios[0]; k++) {
    const scenario *sc = all_scenarios[k];
    instance x, y;
    instance_start(&x, ops, sc, CALLER_KEEPS);
    instance_start(&y, ops, sc, CALLER_KEEPS);
    start_counts(sc, x.counts);
    start_counts(sc, y.counts);
    /* Interleaved, and with different garbage in the output buffers: shared hidden state or
     * an output field left unwritten shows as a difference. */
    for (unsigned t = 0; t < sc->intervals; t++) {
      instance_step(&x, 0x00, &a[t], NULL);
      instance_step(&y, 0xa5, &b[t], NULL);
      assert_same_step(ops, sc, t, &a[t], &b[t], "a second fresh state");
    }
    instance_stop(&x);
    instance_stop(&y);
  }
}

static void keeps_no_caller_pointer(const hlb_repart_ops *ops) {
  static step_out friendly[MAX_INTERVALS], poisoned[MAX_INTERVALS], freed[MAX_INTERVALS];
  for (size_t k = 0; k < sizeof all_scenarios / sizeof all_scenarios[0]; k++) {
    const scenario *sc = all_scenarios[k];
    run_scenario(ops, sc, CALLER_KEEPS, 0, friendly);
    run_scenario(ops, sc, CALLER_POISONS, 0, poisoned);
    run_scenario(ops, sc, CALLER_FREES, 0, freed);
    for (unsigned t = 0; t < sc->intervals; t++) {
      assert_same_step(ops, sc, t, &friendly[t], &poisoned[t],
                       "a run whose caller arrays were poisoned after each call");
      assert_same_step(ops, sc, t, &friendly[t], &freed[t],
                       "a run whose caller arrays were freed after each call");
    }
  }
}

static void balanced_is_left_alone(const hlb_repart_ops *ops) {
  static step_out out[MAX_INTERVALS];
  const scenario *cases[] = {&balanced_same, &balanced_hetero};
  for (size_t k = 0; k < 2; k++) {
    run_scenario(ops, cases[k], CALLER_KEEPS, 0, out);
    for (unsigned t = 0; t < cases[k]->intervals; t++) {
      if (out[t].rc) fail_msg("%s: decide failed: %s", ops->name, hlb_last_error());
      if (out[t].d.rebalance ||
          memcmp(out[t].new_counts, out[t].counts, cases[k]->n_ranks * sizeof(size_t)))
        fail_msg("%s: moved rows of a balanced split (%s speeds) at interval %u: rank 0 %zu -> "
                 "%zu",
                 ops->name, k ? "1:2:3:4 with rows 1:2:3:4" : "equal", t, out[t].counts[0],
                 out[t].new_counts[0]);
    }
  }
}

/* ---- rejected measurements ---------------------------------------------------------------- */

typedef struct bad_case {
  const char *field;
  hlb_repart_reject reason;
  void (*edit)(hlb_rank_interval *iv); /* corrupts rank 2 */
} bad_case;

static void real_nan(hlb_rank_interval *iv) {
  iv[2].real_s = NAN;
}
static void real_inf(hlb_rank_interval *iv) {
  iv[2].real_s = INFINITY;
}
static void real_zero(hlb_rank_interval *iv) {
  iv[2].real_s = 0.0;
}
static void real_neg(hlb_rank_interval *iv) {
  iv[2].real_s = -1.0;
}
static void cpu_nan(hlb_rank_interval *iv) {
  iv[2].cpu_s = NAN;
}
static void cpu_neg(hlb_rank_interval *iv) {
  iv[2].cpu_s = -0.25;
}
static void comm_neg(hlb_rank_interval *iv) {
  iv[2].comm_s = -0.5;
}
static void comm_inf(hlb_rank_interval *iv) {
  iv[2].comm_s = -INFINITY;
}
static void work_nan(hlb_rank_interval *iv) {
  iv[2].work = NAN;
}
static void work_neg(hlb_rank_interval *iv) {
  iv[2].work = -3.0;
}
static void no_iterations(hlb_rank_interval *iv) {
  iv[2].iterations = 0;
}

static const bad_case bad_cases[] = {
    {"real_s", HLB_REPART_REJECT_NAN, real_nan},
    {"real_s", HLB_REPART_REJECT_INF, real_inf},
    {"real_s", HLB_REPART_REJECT_ZERO, real_zero},
    {"real_s", HLB_REPART_REJECT_NEGATIVE, real_neg},
    {"cpu_s", HLB_REPART_REJECT_NAN, cpu_nan},
    {"cpu_s", HLB_REPART_REJECT_NEGATIVE, cpu_neg},
    {"comm_s", HLB_REPART_REJECT_NEGATIVE, comm_neg},
    {"comm_s", HLB_REPART_REJECT_INF, comm_inf},
    {"work", HLB_REPART_REJECT_NAN, work_nan},
    {"work", HLB_REPART_REJECT_NEGATIVE, work_neg},
    {"iterations", HLB_REPART_REJECT_ZERO, no_iterations},
};

static void assert_stats(const hlb_repart_ops *ops, const instance *in, size_t decisions,
                         hlb_repart_reject reason, size_t rejected) {
  hlb_repart_stats st;
  memset(&st, 0xa5, sizeof st);
  ops->stats(in->state, &st);
  if (st.decisions != decisions)
    fail_msg("%s: stats.decisions %zu, expected %zu", ops->name, st.decisions, decisions);
  for (unsigned k = 0; k < HLB_REPART_REJECT_COUNT; k++) {
    size_t want = k == (unsigned)reason ? rejected : 0;
    if (st.rejected[k] != want)
      fail_msg("%s: stats.rejected[%s] = %zu, expected %zu", ops->name,
               hlb_repart_reject_name((hlb_repart_reject)k), st.rejected[k], want);
  }
}

/* One bad interval after `before` good ones: rejected as the contract says, and the next
 * intervals go exactly as in a state that never saw it. */
static void one_bad_interval(const hlb_repart_ops *ops, const bad_case *bc) {
  const scenario *sc = &load_change;
  const unsigned before = 10;
  instance x, y;
  step_out a, b;
  instance_start(&x, ops, sc, CALLER_KEEPS);
  instance_start(&y, ops, sc, CALLER_KEEPS);
  start_counts(sc, x.counts);
  start_counts(sc, y.counts);
  for (unsigned t = 0; t < before; t++) {
    instance_step(&x, 0, &a, NULL);
    instance_step(&y, 0, &b, NULL);
  }
  instance_step(&x, 0x5a, &a, bc->edit);
  x.t--; /* the rejected interval is measured again, as the next one */
  if (a.rc != HLB_ESAMPLE)
    fail_msg("%s: rank 2's %s %s returned %d (%s), not HLB_ESAMPLE", ops->name, bc->field,
             hlb_repart_reject_name(bc->reason), a.rc, hlb_err_name(a.rc));
  char want[64];
  snprintf(want, sizeof want, "rank 2's %s", bc->field);
  if (!strstr(hlb_last_error(), want) || !strstr(hlb_last_error(), ops->name))
    fail_msg("%s: the error does not name the policy and \"%s\": %s", ops->name, want,
             hlb_last_error());
  if (a.d.rebalance || memcmp(a.new_counts, a.counts, sc->n_ranks * sizeof(size_t)))
    fail_msg("%s: a rejected interval changed the split", ops->name);
  assert_stats(ops, &x, before, bc->reason, 1);
  for (unsigned t = before; t < sc->intervals; t++) {
    instance_step(&x, 0, &a, NULL);
    instance_step(&y, 0, &b, NULL);
    assert_same_step(ops, sc, t, &a, &b, "a state that saw a rejected interval");
  }
  instance_stop(&x);
  instance_stop(&y);
}

static void bad_measurements_are_rejected(const hlb_repart_ops *ops) {
  assert_non_null(ops->stats);
  for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++)
    one_bad_interval(ops, &bad_cases[k]);
  /* Counts that do not sum to the rows are the caller's error, not a measurement. */
  instance x;
  step_out a;
  instance_start(&x, ops, &load_change, CALLER_KEEPS);
  start_counts(&load_change, x.counts);
  x.counts[3]++;
  instance_step(&x, 0, &a, NULL);
  if (a.rc != HLB_EINVAL)
    fail_msg("%s: counts summing to %zu of %zu rows returned %d, not HLB_EINVAL", ops->name,
             load_change.rows + 1, load_change.rows, a.rc);
  instance_stop(&x);
}

/* ---- the registry, and one cmocka test per policy and check -------------------------------- */

typedef void (*check_fn)(const hlb_repart_ops *ops);
static const struct {
  const char *name;
  check_fn fn;
} checks[] = {
    {"counts_sum_to_rows", counts_sum_to_rows},
    {"same_inputs_same_outputs", same_inputs_same_outputs},
    {"keeps_no_caller_pointer", keeps_no_caller_pointer},
    {"balanced_is_left_alone", balanced_is_left_alone},
    {"bad_measurements_are_rejected", bad_measurements_are_rejected},
};
enum { N_CHECKS = sizeof checks / sizeof checks[0] };

static void registry_is_complete(void **state) {
  (void)state;
  assert_true(hlb_repart_count() > 0);
  for (unsigned i = 0; i < hlb_repart_count(); i++) {
    const hlb_repart_ops *ops = hlb_repart_at(i);
    assert_int_equal(ops->struct_size, sizeof(hlb_repart_ops));
    assert_true(ops->init && ops->decide && ops->fini && ops->stats);
    assert_ptr_equal(hlb_repart_find(ops->name), ops);
  }
}

static void run_check(void **state) {
  const unsigned *pair = *state; /* policy index, check index */
  checks[pair[1]].fn(hlb_repart_at(pair[0]));
}

int main(void) {
  unsigned np = hlb_repart_count();
  size_t n = 1 + (size_t)np * N_CHECKS;
  struct CMUnitTest *tests = calloc(n, sizeof *tests);
  unsigned *pairs = calloc(2 * n, sizeof *pairs);
  void **states = calloc(n, sizeof *states);
  char *names = calloc(n, 96);
  assert_true(tests && pairs && states && names);
  tests[0] = (struct CMUnitTest)cmocka_unit_test(registry_is_complete);
  size_t k = 1;
  for (unsigned i = 0; i < np; i++)
    for (unsigned c = 0; c < N_CHECKS; c++, k++) {
      pairs[2 * k] = i;
      pairs[2 * k + 1] = c;
      states[k] = &pairs[2 * k];
      snprintf(names + 96 * k, 96, "%s/%s", hlb_repart_at(i)->name, checks[c].name);
      tests[k] = (struct CMUnitTest){names + 96 * k, run_check, NULL, NULL, states[k]};
    }
  int rc = _cmocka_run_group_tests("repart_contract", tests, n, NULL, NULL);
  free(tests);
  free(pairs);
  free(states);
  free(names);
  return rc;
}
