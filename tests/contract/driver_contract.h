/* The driver core's contract (src/exec/driver.h), shared by its two harnesses: the threaded
 * executor (test_driver_contract.c) and the MPI executor (tests/mpi/test_driver_contract_mpi.c,
 * rank 0's own PU over the local transport, the other ranks' over the remote one). Every case
 * runs once with the fault on the first PU and once on the last, and is checked the same way:
 *
 *   exactly-once  no fault: every item's output arrives once and is right, no PU retired
 *   one failure   the PU's first block fails (injected): it is retried elsewhere, counted as one
 *                 failed block, and the PU goes on (not retired)
 *   retire        every block of the PU fails: after max_failures (2 here, not the default) in a
 *                 row it is retired with its failure kept, having done no item, and the others
 *                 finish the run
 *
 * The kernel writes out[k] = 2 in[k] + 1; unpack copies the output to the caller's array and
 * counts each item's arrivals, so an item delivered twice or never shows whatever the
 * balancer believes. Header only: each harness includes it once. */
#ifndef HLB_TESTS_DRIVER_CONTRACT_H
#define HLB_TESTS_DRIVER_CONTRACT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlb/exec.h"

#define DC_ITEMS 8000u
#define DC_MAX_FAILURES 2u
/* 100 blocks of a few milliseconds, so that every PU asks for several before the pool runs
 * out, also with the MPI harness's ranks sharing two cores. */
#define DC_POLICY "greedy"
#define DC_PARAMS "chunk=80"

typedef struct dc_work {
  double *in, *out;
  unsigned *arrivals;
} dc_work;

typedef struct dc_case {
  const char *name;
  unsigned inject_from, inject_count; /* hlb_exec_options' meaning; from 0: no fault */
} dc_case;

static const dc_case dc_cases[] = {
    {"exactly-once", 0, 0},
    {"one failure", 1, 1},
    {"retire", 1, 0},
};
#define DC_N_CASES (sizeof dc_cases / sizeof dc_cases[0])

/* Some work per item (tens of microseconds), so that blocks overlap and every PU gets some. */
static int dc_kernel(const hlb_exec_call *c) {
  const double *in = c->in;
  double *out = c->out;
  for (size_t k = 0; k < c->count; k++) {
    volatile double v = in[k];
    for (int i = 0; i < 20000; i++)
      v = v * 1.0;
    out[k] = 2 * v + 1;
  }
  return 0;
}

static void dc_unpack(void *user, size_t begin, size_t count, const void *src) {
  dc_work *w = user;
  memcpy(w->out + begin, src, count * sizeof(double));
  for (size_t i = begin; i < begin + count; i++)
    __atomic_add_fetch(&w->arrivals[i], 1u, __ATOMIC_RELAXED);
}

/* The work's arrays (rank 0's, in the MPI harness; NULL elsewhere is fine: only rank 0 reads
 * and writes them). 0, or -1 when out of memory. */
static int dc_work_init(dc_work *w, int with_data) {
  memset(w, 0, sizeof *w);
  if (!with_data) return 0;
  w->in = malloc(DC_ITEMS * sizeof *w->in);
  w->out = malloc(DC_ITEMS * sizeof *w->out);
  w->arrivals = calloc(DC_ITEMS, sizeof *w->arrivals);
  if (!w->in || !w->out || !w->arrivals) return -1;
  for (size_t i = 0; i < DC_ITEMS; i++)
    w->in[i] = (double)(i % 977);
  return 0;
}

static void dc_work_reset(dc_work *w) {
  if (w->arrivals) memset(w->arrivals, 0, DC_ITEMS * sizeof *w->arrivals);
  if (w->out) memset(w->out, 0, DC_ITEMS * sizeof *w->out);
}

static void dc_work_free(dc_work *w) {
  free(w->in);
  free(w->out);
  free(w->arrivals);
}

static hlb_codelet dc_codelet(dc_work *w) {
  return (hlb_codelet){.name = "driver-contract",
                       .user = w,
                       .in_bytes_per_item = sizeof(double),
                       .out_bytes_per_item = sizeof(double),
                       .in = w->in,
                       .unpack = dc_unpack,
                       .cpu = dc_kernel};
}

/* The options of case c with its fault on PU `target`. */
static hlb_exec_options dc_options(const dc_case *c, int target) {
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = DC_POLICY;
  o.params = DC_PARAMS;
  o.max_failures = DC_MAX_FAILURES;
  o.inject_pu = c->inject_from ? target : -1;
  o.inject_from = c->inject_from;
  o.inject_count = c->inject_count;
  return o;
}

#define DC_EXPECT(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "driver contract, %s (fault on pu %d), %s: ", c->name, target, who);         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      bad++;                                                                                       \
    }                                                                                              \
  } while (0)

/* Check a run of case c (fault on PU target) that returned rc with stats s (per_pu over n_pus
 * PUs); `who` names the executor. Returns the number of broken rules, each printed. */
static int dc_check(const dc_case *c, int target, const char *who, const dc_work *w, int rc,
                    const char *err, const hlb_exec_pu_stats *per_pu, unsigned n_pus) {
  int bad = 0;
  DC_EXPECT(rc == 0, "the run failed: %s", err);
  if (rc) return bad;
  size_t wrong = 0, not_once = 0, items = 0;
  for (size_t i = 0; i < DC_ITEMS; i++) {
    not_once += w->arrivals[i] != 1;
    wrong += w->out[i] != 2 * w->in[i] + 1;
  }
  DC_EXPECT(not_once == 0, "%zu items did not arrive exactly once", not_once);
  DC_EXPECT(wrong == 0, "%zu outputs are wrong", wrong);
  for (unsigned p = 0; p < n_pus; p++) {
    const hlb_exec_pu_stats *st = &per_pu[p];
    items += st->items;
    int faulty = c->inject_from && (int)p == target;
    size_t want_failed = !faulty ? 0 : c->inject_count ? c->inject_count : DC_MAX_FAILURES;
    DC_EXPECT(st->failed_blocks == want_failed, "pu %u: %zu failed blocks, expected %zu", p,
              st->failed_blocks, want_failed);
    int retire = faulty && c->inject_count == 0;
    DC_EXPECT(st->retired == retire, "pu %u: retired %d, expected %d", p, st->retired, retire);
    if (retire) {
      DC_EXPECT(st->items == 0, "pu %u: retired but did %zu items", p, st->items);
      DC_EXPECT(strstr(st->failure, "injected failure") != NULL,
                "pu %u: its failure '%s' does not name the injected failure", p, st->failure);
    }
  }
  DC_EXPECT(items == DC_ITEMS, "the stats count %zu items, expected %u", items, DC_ITEMS);
  return bad;
}

#endif
