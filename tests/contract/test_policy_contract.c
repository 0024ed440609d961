/* The policy contract: every registered policy, the same scenarios, driven by a small
 * deterministic event-driven driver (PUs of known speeds, simulated time, a min-heap of
 * completion events). For each pair it checks: every item processed exactly once, the run
 * terminates with every PU told DONE, blocks respect granularity and min/max, a fast PU is
 * not starved, a PU that fails mid-run is survived, a PU that doubles its speed mid-run
 * (hlb_balancer_resize) is followed, bad samples are reported as
 * HLB_ESAMPLE and counted, and one PU or a thousand PUs work. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "hlb/error.h"
#include "common/rng.h"
#include "hlb/policy.h"

/* ---- scenarios -------------------------------------------------------------------------- */

typedef struct scenario {
  const char *name;
  size_t n_items, granularity;
  unsigned n_pus;
  unsigned depth; /* blocks each PU keeps in flight (2: the MPI executor's one ahead) */
  double (*speed)(unsigned p); /* items per second */
  size_t min_block, max_block; /* applied to odd PUs */
  unsigned fail_pu;            /* PU that fails, or UINT32_MAX */
  double fail_at;              /* simulated second of its failure */
  int bad_samples;  /* PU 1: NaN compute on blocks 1, 3, 5...; PU 2: negative on 1, 4, 7... */
  int starvation;   /* check the fastest PU processed at least about its share */
  double noise;     /* compute times vary uniformly by +-noise/2 (deterministic) */
  double resize_at; /* simulated second from which PU 0 runs twice as fast (0: never); the driver
                     * calls hlb_balancer_resize then, with a block of it in flight */
} scenario;

static double speed_hetero(unsigned p) {
  static const double s[] = {1000, 2000, 5000, 10000};
  return s[p % 4];
}
static double speed_one_fast(unsigned p) {
  return p == 3 ? 50000 : 1000;
}
static double speed_cycle(unsigned p) {
  return 1000.0 * (1 + p % 4);
}

static const scenario scenarios[] = {
    {"hetero4", 20000, 1, 4, 1, speed_hetero, 0, 0, UINT32_MAX, 0, 0, 0, 0, 0},
    {"fast_not_starved", 20000, 1, 4, 1, speed_one_fast, 0, 0, UINT32_MAX, 0, 0, 1, 0, 0},
    {"pu_fails", 20000, 1, 4, 1, speed_hetero, 0, 0, 2, 0.5, 0, 0, 0, 0},
    {"bad_samples", 20000, 1, 4, 1, speed_hetero, 0, 0, UINT32_MAX, 0, 1, 0, 0, 0},
    {"single_pu", 5000, 1, 1, 1, speed_hetero, 0, 0, UINT32_MAX, 0, 0, 0, 0, 0},
    {"one_ahead", 20000, 1, 4, 2, speed_hetero, 0, 0, UINT32_MAX, 0, 0, 0, 0, 0},
    {"granularity_min_max", 10007, 8, 5, 1, speed_hetero, 60, 200, UINT32_MAX, 0, 0, 0, 0, 0},
    {"pus_1000", 3000000, 1, 1000, 1, speed_cycle, 0, 0, UINT32_MAX, 0, 0, 0, 0, 0},
    {"fails_early", 20000, 1, 4, 1, speed_hetero, 0, 0, 0, 0.01, 0, 0, 0, 0},
    {"fails_one_ahead", 20000, 1, 4, 2, speed_hetero, 0, 0, 3, 0.3, 0, 0, 0, 0},
    {"noisy", 20000, 1, 4, 1, speed_hetero, 0, 0, UINT32_MAX, 0, 0, 0, 0.4, 0},
    {"pu_resized", 20000, 1, 4, 2, speed_hetero, 0, 0, UINT32_MAX, 0, 0, 0, 0, 0.5},
};
enum { N_SCENARIOS = sizeof scenarios / sizeof scenarios[0] };

/* ---- the driver ------------------------------------------------------------------------- */

typedef struct event {
  double t;
  uint64_t seq; /* ties broken by insertion order: deterministic */
  hlb_block blk;
  double compute; /* the block's compute seconds */
} event;

typedef struct heap {
  event *e;
  size_t n, cap;
} heap;

static int ev_less(const event *a, const event *b) {
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(heap *h, event ev) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 256;
    h->e = realloc(h->e, h->cap * sizeof *h->e);
    assert_non_null(h->e);
  }
  size_t i = h->n++;
  while (i && ev_less(&ev, &h->e[(i - 1) / 2])) {
    h->e[i] = h->e[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->e[i] = ev;
}

static event heap_pop(heap *h) {
  event top = h->e[0], last = h->e[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && ev_less(&h->e[c + 1], &h->e[c])) c++;
    if (!ev_less(&h->e[c], &last)) break;
    h->e[i] = h->e[c];
    i = c;
  }
  if (h->n) h->e[i] = last;
  return top;
}

typedef struct run {
  const scenario *sc;
  const hlb_policy_ops *ops;
  hlb_balancer *b;
  hlb_pu_desc *pus;
  heap h;
  double now;
  uint64_t seq;
  hlb__rng rng;
  double *busy_until;   /* per PU: when its queue of blocks drains */
  unsigned *in_flight;  /* per PU */
  unsigned char *state; /* per PU: 0 ready, 1 waiting, 2 stopped, 3 failed */
  size_t *items, *blocks;
  unsigned *ready; /* stack of PUs to ask */
  unsigned n_ready;
  unsigned *waiting;
  unsigned n_waiting;
  size_t bad_sent, esample;
  uint64_t events;
  int resized; /* PU 0 runs twice as fast (scenario.resize_at passed) */
} run;

enum { READY, WAITING, STOPPED, FAILED };

static const char *tag(const run *r) {
  static char buf[128];
  snprintf(buf, sizeof buf, "%s/%s", r->ops->name, r->sc->name);
  return buf;
}

static void check_block(const run *r, unsigned pu, const hlb_block *blk) {
  const scenario *sc = r->sc;
  const hlb_pu_desc *d = &r->pus[pu];
  size_t g = sc->granularity, end = blk->begin + blk->count;
  if (blk->pu != pu || blk->count == 0 || end > sc->n_items)
    fail_msg("%s: pu %u got a bad block [%zu, +%zu) for pu %u", tag(r), pu, blk->begin, blk->count,
             blk->pu);
  if (blk->begin % g || (blk->count % g && end != sc->n_items))
    fail_msg("%s: block [%zu, +%zu) breaks granularity %zu", tag(r), blk->begin, blk->count, g);
  if (d->max_block && blk->count > d->max_block)
    fail_msg("%s: block of %zu items over pu %u's max %zu", tag(r), blk->count, pu, d->max_block);
  /* Below the minimum only at the pool's end (no failures in the min/max scenario). */
  if (blk->count < d->min_block && end != sc->n_items && sc->fail_pu == UINT32_MAX)
    fail_msg("%s: block of %zu items under pu %u's min %zu", tag(r), blk->count, pu, d->min_block);
}

static void granted(run *r, unsigned pu, const hlb_block *blk) {
  check_block(r, pu, blk);
  double start = r->busy_until[pu] > r->now ? r->busy_until[pu] : r->now;
  double compute = (double)blk->count / r->sc->speed(pu);
  if (pu == 0 && r->resized) compute *= 0.5;
  if (r->sc->noise > 0) compute *= 1 + r->sc->noise * (hlb__rng_uniform(&r->rng) - 0.5);
  double t = start + 2e-4 + compute;
  r->busy_until[pu] = t;
  r->in_flight[pu]++;
  r->blocks[pu]++;
  heap_push(&r->h, (event){t, r->seq++, *blk, compute});
}

/* Ask pu for work until its queue is full, or it waits or stops. */
static void ask(run *r, unsigned pu) {
  while (r->in_flight[pu] < r->sc->depth) {
    hlb_block blk;
    int rc = hlb_balancer_next(r->b, pu, r->now, &blk);
    if (rc == HLB_GRANT) {
      granted(r, pu, &blk);
      continue;
    }
    if (rc == HLB_WAIT) {
      if (r->in_flight[pu] == 0 && r->state[pu] != WAITING) {
        r->state[pu] = WAITING;
        r->waiting[r->n_waiting++] = pu;
      }
    } else if (rc == HLB_DONE) {
      if (r->in_flight[pu])
        fail_msg("%s: pu %u told DONE with %u blocks in flight", tag(r), pu, r->in_flight[pu]);
      r->state[pu] = STOPPED;
    } else {
      fail_msg("%s: next(pu %u) at t=%g: %s: %s", tag(r), pu, r->now, hlb_err_name(rc),
               hlb_last_error());
    }
    return;
  }
}

static void ask_all(run *r) {
  while (r->n_ready) {
    unsigned pu = r->ready[--r->n_ready];
    if (r->state[pu] == READY) ask(r, pu);
  }
}

/* After any event, every waiting PU is asked again (HLB_WAIT: "ask again after the next
 * done/fail"). */
static void wake_waiting(run *r) {
  for (unsigned i = 0; i < r->n_waiting; i++) {
    unsigned pu = r->waiting[i];
    if (r->state[pu] == WAITING) {
      r->state[pu] = READY;
      r->ready[r->n_ready++] = pu;
    }
  }
  r->n_waiting = 0;
}

static int bad_sample(run *r, unsigned pu, hlb_sample *s) {
  if (!r->sc->bad_samples) return 0;
  /* Counted from the first block, so policies that send one block per PU see them too. */
  if (pu == 1 && r->blocks[1] % 2 == 1)
    s->compute_s = NAN;
  else if (pu == 2 && r->blocks[2] % 3 == 1)
    s->compute_s = -s->compute_s;
  else
    return 0;
  return 1;
}

static void fail_pu(run *r, unsigned pu, const hlb_block *blk) {
  int rc = hlb_balancer_fail(r->b, pu, blk, r->now);
  if (rc) fail_msg("%s: fail(pu %u): %s", tag(r), pu, hlb_last_error());
  r->in_flight[pu]--;
  if (r->in_flight[pu] == 0) {
    if (hlb_balancer_retire(r->b, pu))
      fail_msg("%s: retire(pu %u): %s", tag(r), pu, hlb_last_error());
    r->state[pu] = FAILED;
  }
}

static void finish(run *r, const event *ev) {
  unsigned pu = ev->blk.pu;
  r->now = ev->t;
  r->events++;
  if (r->sc->resize_at > 0 && !r->resized && r->now >= r->sc->resize_at) {
    int rc = hlb_balancer_resize(r->b, 0, 2.0);
    if (rc) fail_msg("%s: resize(pu 0): %s", tag(r), hlb_last_error());
    r->resized = 1;
  }
  if (pu == r->sc->fail_pu && ev->t >= r->sc->fail_at) {
    fail_pu(r, pu, &ev->blk);
    return;
  }
  hlb_sample s = {.block = ev->blk, .compute_s = ev->compute, .transfer_s = 2e-4, .end_s = ev->t};
  int bad = bad_sample(r, pu, &s);
  r->bad_sent += (size_t)bad;
  int rc = hlb_balancer_done(r->b, pu, &s);
  if (rc == HLB_ESAMPLE && bad)
    r->esample++;
  else if (rc)
    fail_msg("%s: done(pu %u) %s: %s", tag(r), pu, hlb_err_name(rc), hlb_last_error());
  r->in_flight[pu]--;
  r->items[pu] += ev->blk.count;
  if (r->state[pu] == READY) r->ready[r->n_ready++] = pu;
}

static void setup(run *r, const scenario *sc, const hlb_policy_ops *ops) {
  memset(r, 0, sizeof *r);
  r->sc = sc;
  r->ops = ops;
  hlb__rng_seed(&r->rng, 42);
  unsigned n = sc->n_pus;
  r->pus = calloc(n, sizeof *r->pus);
  r->busy_until = calloc(n, sizeof(double));
  r->in_flight = calloc(n, sizeof(unsigned));
  r->state = calloc(n, 1);
  r->items = calloc(n, sizeof(size_t));
  r->blocks = calloc(n, sizeof(size_t));
  r->ready = calloc(n, sizeof(unsigned));
  r->waiting = calloc(n, sizeof(unsigned));
  assert_true(r->pus && r->busy_until && r->in_flight && r->state && r->items && r->blocks &&
              r->ready && r->waiting);
  for (unsigned p = 0; p < n; p++) {
    r->pus[p] = (hlb_pu_desc){.name = "pu", .kind = p % 2 ? "gpu" : "cpu"};
    if (p % 2) {
      r->pus[p].min_block = sc->min_block;
      r->pus[p].max_block = sc->max_block;
    }
    r->ready[r->n_ready++] = n - 1 - p; /* popped in index order */
  }
  hlb_balancer_config c = {.n_items = sc->n_items,
                           .granularity = sc->granularity,
                           .n_pus = n,
                           .pus = r->pus,
                           .policy = ops->name};
  int rc = hlb_balancer_create(&c, &r->b);
  if (rc) fail_msg("%s: create: %s", tag(r), hlb_last_error());
}

static void teardown(run *r) {
  hlb_balancer_destroy(r->b);
  free(r->h.e);
  free(r->pus);
  free(r->busy_until);
  free(r->in_flight);
  free(r->state);
  free(r->items);
  free(r->blocks);
  free(r->ready);
  free(r->waiting);
}

static void check_outcome(run *r) {
  const scenario *sc = r->sc;
  if (!hlb_balancer_finished(r->b))
    fail_msg("%s: stopped with %zu items never processed", tag(r),
             sc->n_items - hlb_balancer_processed(r->b));
  if (hlb_balancer_check_exactly_once(r->b)) fail_msg("%s: %s", tag(r), hlb_last_error());
  for (unsigned p = 0; p < sc->n_pus; p++)
    if (r->state[p] != STOPPED && r->state[p] != FAILED)
      fail_msg("%s: pu %u never told DONE (state %d)", tag(r), p, r->state[p]);
  if (r->esample != r->bad_sent || hlb_balancer_rejected(r->b) != r->bad_sent)
    fail_msg("%s: %zu bad samples sent, %zu HLB_ESAMPLE, %zu counted", tag(r), r->bad_sent,
             r->esample, hlb_balancer_rejected(r->b));
  if (sc->bad_samples && r->bad_sent == 0) fail_msg("%s: the scenario sent no bad sample", tag(r));
}

/* Every live PU got work, and the fastest processed at least 90 % of the mean per PU. */
static void check_no_starvation(run *r) {
  const scenario *sc = r->sc;
  unsigned fastest = 0;
  for (unsigned p = 0; p < sc->n_pus; p++) {
    if (r->state[p] != FAILED && r->blocks[p] == 0 && sc->n_items >= 100 * (size_t)sc->n_pus)
      fail_msg("%s: pu %u never got a block", tag(r), p);
    if (sc->speed(p) > sc->speed(fastest)) fastest = p;
  }
  double mean = (double)sc->n_items / sc->n_pus;
  if (sc->starvation && (double)r->items[fastest] < 0.9 * mean)
    fail_msg("%s: the fastest pu %u processed %zu items, mean per PU %.0f", tag(r), fastest,
             r->items[fastest], mean);
}

static void drive(void **state) {
  const scenario *sc = ((const void **)*state)[0];
  const hlb_policy_ops *ops = ((const void **)*state)[1];
  run r;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  setup(&r, sc, ops);
  /* Termination: no correct policy needs more events than items plus a margin per PU. */
  uint64_t limit = 4 * (uint64_t)sc->n_items + 1000 * (uint64_t)sc->n_pus;
  for (;;) {
    ask_all(&r);
    if (r.h.n == 0) break;
    event ev = heap_pop(&r.h);
    finish(&r, &ev);
    wake_waiting(&r);
    if (r.events > limit)
      fail_msg("%s: no end after %llu events", tag(&r), (unsigned long long)r.events);
  }
  if (r.n_waiting) fail_msg("%s: %u PUs left waiting with nothing in flight", tag(&r), r.n_waiting);
  check_outcome(&r);
  check_no_starvation(&r);
  double makespan = r.now;
  teardown(&r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (getenv("HLB_CONTRACT_TIMES"))
    print_message("%s: %llu events, makespan %.4f s simulated, %.3f s wall\n", tag(&r),
                  (unsigned long long)r.events, makespan,
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}

/* ---- the registry itself ---------------------------------------------------------------- */

static void registry_tables_are_well_formed(void **state) {
  (void)state;
  assert_true(hlb_policy_count() > 0);
  for (unsigned i = 0; i < hlb_policy_count(); i++) {
    const hlb_policy_ops *p = hlb_policy_at(i);
    assert_int_equal(p->abi_version, HLB_POLICY_ABI_VERSION);
    assert_int_equal(p->struct_size, sizeof(hlb_policy_ops));
    assert_true(p->name && *p->name && p->description && *p->description);
    assert_true(p->init && p->next && p->done && p->fini);
    for (unsigned j = 0; j < i; j++)
      if (!strcmp(hlb_policy_at(j)->name, p->name))
        fail_msg("policy name '%s' registered twice", p->name);
    for (unsigned k = 0; k < p->n_params; k++) {
      const hlb_param_def *d = &p->params[k];
      if (!d->name || !d->doc || !*d->doc || !(d->lo <= d->dflt && d->dflt <= d->hi))
        fail_msg("policy '%s': parameter %u (%s) is malformed or its default is out of range",
                 p->name, k, d->name ? d->name : "?");
    }
  }
}

int main(void) {
  unsigned np = hlb_policy_count();
  size_t n = 1 + (size_t)np * N_SCENARIOS;
  struct CMUnitTest *tests = calloc(n, sizeof *tests);
  const void **pairs = calloc(2 * n, sizeof *pairs);
  char *names = calloc(n, 96);
  assert_true(tests && pairs && names);
  tests[0] = (struct CMUnitTest)cmocka_unit_test(registry_tables_are_well_formed);
  size_t k = 1;
  for (unsigned i = 0; i < np; i++)
    for (unsigned s = 0; s < N_SCENARIOS; s++, k++) {
      pairs[2 * k] = &scenarios[s];
      pairs[2 * k + 1] = hlb_policy_at(i);
      snprintf(names + 96 * k, 96, "%s/%s", hlb_policy_at(i)->name, scenarios[s].name);
      tests[k] = (struct CMUnitTest){names + 96 * k, drive, NULL, NULL, &pairs[2 * k]};
    }
  int rc = _cmocka_run_group_tests("policy_contract", tests, n, NULL, NULL);
  free(tests);
  free(pairs);
  free(names);
  return rc;
}
