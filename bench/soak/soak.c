/* Soak: many executor runs in one process, with random sizes, random policies and random
 * injected failures (docs/reliability.md, "Soak"). Every run must process every item exactly
 * once (each item's counter ends at 1) and the process's resident memory must stay flat: a
 * leak of a few bytes per block shows over a thousand runs. Prints the resident set after
 * the first tenth of the runs and at the end.
 *
 *   soak [RUNS] [SEED]        (default 1000 runs, seed 1)
 *
 * Exit status 0 when every run verified, 1 otherwise (naming the run and the item). The test
 * suite runs it with fewer runs, under AddressSanitizer and LeakSanitizer too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/policy.h"

#define MAX_ITEMS 20000

typedef struct work {
  unsigned char count[MAX_ITEMS];
} work;

static int count_kernel(const hlb_exec_call *c) {
  work *w = c->user;
  for (size_t i = 0; i < c->count; i++)
    w->count[c->begin + i]++;
  return 0;
}

/* splitmix64: the same sequence of runs on every machine for a seed. */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static long resident_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Two one-core cpu PUs, so every policy has a choice and an injected PU has a partner. */
static hlb_executor *make_executor(void) {
  hlb_exec_pu pus[2];
  unsigned n = 0;
  if (hlb_exec_parse_pus("cpu:1", pus, 1, &n)) return NULL;
  pus[1] = pus[0];
  snprintf(pus[0].name, sizeof pus[0].name, "cpu-a");
  snprintf(pus[1].name, sizeof pus[1].name, "cpu-b");
  hlb_executor *ex = NULL;
  return hlb_executor_create(pus, 2, &ex) ? NULL : ex;
}

/* One run: random size, policy and failures; 0 when every item ran exactly once. */
static int one_run(hlb_executor *ex, work *w, uint64_t *rng, unsigned run) {
  size_t n = 1 + next(rng) % MAX_ITEMS;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = hlb_policy_at((unsigned)(next(rng) % hlb_policy_count()))->name;
  o.models = HLB_MODELS_OFF;
  if (next(rng) % 2) { /* half the runs: PU 0 or 1 fails some blocks, or every one from then */
    o.inject_pu = (int)(next(rng) % 2);
    o.inject_from = 1 + (unsigned)(next(rng) % 4);
    o.inject_count = (unsigned)(next(rng) % 3);
  }
  hlb_codelet cl = {.name = "soak", .user = w, .cpu = count_kernel};
  memset(w->count, 0, n);
  hlb_exec_stats st;
  memset(&st, 0, sizeof st);
  int rc = hlb_executor_run(ex, &cl, n, &o, &st);
  hlb_exec_stats_clear(&st);
  if (rc) {
    fprintf(stderr,
            "soak: run %u (%zu items, policy %s, inject pu %d from block %u count %u): %s\n", run,
            n, o.policy, o.inject_pu, o.inject_from, o.inject_count, hlb_last_error());
    return 1;
  }
  for (size_t i = 0; i < n; i++)
    if (w->count[i] != 1) {
      fprintf(stderr, "soak: run %u (%zu items, policy %s): item %zu processed %u times\n", run, n,
              o.policy, i, w->count[i]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  unsigned runs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000;
  uint64_t rng = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  if (runs == 0) {
    fprintf(stderr, "usage: soak [RUNS > 0] [SEED]\n");
    return 2;
  }
  hlb_executor *ex = make_executor();
  work *w = calloc(1, sizeof *w);
  if (!ex || !w) {
    fprintf(stderr, "soak: cannot create the executor: %s\n", hlb_last_error());
    free(w);
    hlb_executor_destroy(ex);
    return 1;
  }
  long early = -1;
  int bad = 0;
  for (unsigned r = 0; r < runs && !bad; r++) {
    bad = one_run(ex, w, &rng, r);
    if (r + 1 == (runs + 9) / 10) early = resident_kib();
  }
  long end = resident_kib();
  hlb_executor_destroy(ex);
  free(w);
  printf("soak: %u runs %s; resident %ld KiB after %u runs, %ld KiB at the end (%+ld KiB)\n", runs,
         bad ? "FAILED" : "verified", early, (runs + 9) / 10, end, end - early);
  return bad;
}
