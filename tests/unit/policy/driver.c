#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlb/error.h"
#include "hlb/partition.h"
#include "driver.h"

double tpu_time(const tpu *p, double x, double t) {
  double d = p->fixed_s + p->per_item_s * x;
  if (p->factor > 0 && t >= p->change_at) d *= p->factor;
  return d;
}

double tbound(const tpu *pus, unsigned n, size_t items) {
  hlb_curve *c = calloc(n, sizeof *c);
  double *x = calloc(n, sizeof *x);
  double ms = NAN;
  for (unsigned p = 0; p < n; p++)
    hlb_curve_from_poly(&c[p], pus[p].fixed_s, pus[p].per_item_s, 0, 0, 0);
  if (hlb_eft_solve(c, NULL, n, (double)items, x, &ms) != 0) ms = NAN;
  free(c);
  free(x);
  return ms;
}

static int push(trun *r, size_t *cap, tev e) {
  if (r->n_ev == *cap) {
    size_t nc = *cap ? 2 * *cap : 256;
    tev *ne = realloc(r->ev, nc * sizeof *ne);
    if (!ne) return -1;
    r->ev = ne;
    *cap = nc;
  }
  r->ev[r->n_ev++] = e;
  return 0;
}

/* Deterministic jitter in [-1, 1] for block k of PU p. */
static double jitter(unsigned p, unsigned k) {
  unsigned long long z = (unsigned long long)p * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 31;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 29;
  return (double)(z % 2000001ull) / 1000000.0 - 1.0;
}

typedef struct pstate {
  int busy, fin;
  hlb_block blk;
  double start, end;
  unsigned k; /* blocks granted */
} pstate;

static int ask_all(hlb_balancer *b, const tpu *pus, unsigned n, pstate *st, double now, trun *r,
                   size_t *cap) {
  for (unsigned p = 0; p < n; p++) {
    if (st[p].busy || st[p].fin) continue;
    int rc = hlb_balancer_next(b, p, now, &st[p].blk);
    if (rc < 0) return rc;
    if (rc == HLB_DONE) {
      st[p].fin = 1;
    } else if (rc == HLB_WAIT) {
      /* Only the policy's waits: with the pool empty the balancer itself says wait. */
      if (hlb_balancer_remaining(b) > 0) push(r, cap, (tev){1, p, now, 0});
    } else {
      st[p].k++;
      double d = tpu_time(&pus[p], (double)st[p].blk.count, now);
      if (pus[p].noise > 0) d *= 1.0 + pus[p].noise * jitter(p, st[p].k);
      st[p].busy = 1;
      st[p].start = now;
      st[p].end = now + d;
      push(r, cap, (tev){0, p, now, st[p].blk.count});
    }
  }
  return 0;
}

static int land(hlb_balancer *b, const tpu *pus, pstate *s, unsigned p, double now) {
  s->busy = 0;
  if (pus[p].fail_every && s->k % pus[p].fail_every == 0)
    return hlb_balancer_fail(b, p, &s->blk, now);
  hlb_sample smp = {.block = s->blk, .compute_s = now - s->start, .transfer_s = 0, .end_s = now};
  if (pus[p].nan_every && s->k % pus[p].nan_every == 0) smp.compute_s = NAN;
  int rc = hlb_balancer_done(b, p, &smp);
  return rc == HLB_ESAMPLE ? 0 : rc;
}

int tdrive(const char *policy, const char *params, const tpu *pus, unsigned n, size_t items,
           size_t granularity, trun *r) {
  memset(r, 0, sizeof *r);
  hlb_pu_desc *desc = calloc(n, sizeof *desc);
  pstate *st = calloc(n, sizeof *st);
  for (unsigned p = 0; p < n; p++) {
    desc[p].name = "pu";
    desc[p].kind = "test";
  }
  hlb_balancer_config cfg = {.n_items = items,
                             .granularity = granularity,
                             .n_pus = n,
                             .pus = desc,
                             .policy = policy,
                             .params = params};
  hlb_balancer *b = NULL;
  int rc = hlb_balancer_create(&cfg, &b);
  size_t cap = 0;
  double now = 0.0;
  for (unsigned long iter = 0; rc == 0 && iter < 50000000ul; iter++) {
    if ((rc = ask_all(b, pus, n, st, now, r, &cap)) != 0) break;
    int next = -1;
    for (unsigned p = 0; p < n; p++)
      if (st[p].busy && (next < 0 || st[p].end < st[next].end)) next = (int)p;
    if (next < 0) break;
    now = st[next].end;
    rc = land(b, pus, &st[next], (unsigned)next, now);
  }
  if (rc == 0) {
    r->makespan = now;
    r->exactly_once = hlb_balancer_check_exactly_once(b) == 0;
    r->blocks = (size_t)hlb_balancer_blocks(b);
    r->solver_s = hlb_balancer_solver_seconds(b);
  }
  r->rc = rc;
  hlb_balancer_destroy(b);
  free(desc);
  free(st);
  return rc;
}
