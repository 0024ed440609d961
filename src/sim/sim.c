/* The discrete-event simulator (docs/simulator.md).
 *
 * Life of a block on PU p of node n, all in simulated seconds:
 *   grant at t0 -> input waits for node n's inbound link (FIFO), crosses it, then crosses
 *   p's own link -> compute for F_p(count) * noise * slowdown -> output crosses p's link,
 *   waits for node n's outbound link (FIFO), crosses it -> done: the sample goes to the
 *   balancer and p asks for its next block.
 * A PU holds one block at a time, so its own link is never contended; a node's links are
 * (one per direction: the networks modelled are full duplex). Input reservations are made at
 * grant time, which is FIFO because grants happen in time order; output needs an event when
 * it reaches the node (EV_OUT_AT_NODE) so that it queues in arrival order.
 *
 * Three kinds of events per block at most (two when the PU link is free), in a binary heap
 * preallocated for the run: no allocation per event. A PU has at most one live event; slowdowns and
 * failures invalidate it by bumping the PU's generation, so the heap never needs a decrease-key.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/rng.h"
#include "hlb/balancer.h"
#include "hlb/policy.h"
#include "hlb/sim.h"
#include "sim/evq.h"

enum { EV_COMPUTE_END = 0, EV_OUT_AT_NODE, EV_BLOCK_DONE };

enum { PU_READY = 0, PU_BUSY, PU_WAITING, PU_STOPPED, PU_DEAD, PU_RELEASED };

typedef struct pu_state {
  int state;
  uint32_t gen;     /* bumped when the pending event is invalidated */
  hlb_block blk;    /* the block in flight (PU_BUSY) */
  int phase;        /* hlb_sim_phase of the block in flight */
  double in_start;  /* input starts crossing the node link */
  double in_end;    /* input has arrived: compute starts */
  double c_end;     /* compute ends (moves with slowdowns) */
  double c_slow;    /* slowdown factor the rest of the compute runs at */
  double out_start; /* output leaves the PU */
  double out_end;   /* output has arrived at the manager */
  double own_xfer;  /* this block's own link time, queueing excluded */
  double slowdown;  /* factor in force now (events) */
  double busy_s, died_s;
  size_t items;
  hlb__rng rng;
  /* Driver cores (see should_release): finished blocks, busy time over them,
   * and for a cpu PU the cores its block in flight runs on and core-seconds over its blocks. */
  unsigned blocks;
  double fin_busy_s, core_s;
  unsigned cores_now;
  int released; /* a driver-core PU given up; retired when its block in flight is done */
} pu_state;

typedef struct sim {
  const hlb_cluster *c;
  const hlb_sim_options *opt;
  hlb_balancer *b;
  hlb__evq q;
  pu_state *pu;
  double *node_in_free, *node_out_free; /* when each node's link is next free */
  unsigned *waiters;                    /* PUs told HLB_WAIT, in the order they were told */
  unsigned n_waiters;
  double sigma, jitter; /* the cluster's noise_sigma and host_jitter_s, 0 under no_noise */
  double now;
  hlb_sim_result *r;
  size_t slice_cap;
  const double *item_cost; /* the previous pass's density (passes > 1) */
  unsigned n_item_cost;
  int item_cost_on_trial; /* it did not predict the pass that learnt it: scored, not used */
  double *learn;          /* n_item_cost slots for this pass's density, or NULL */
  unsigned *held;         /* per cpu PU: cores its unreleased driver-core PUs hold (NULL: none) */
  struct memory *mem;     /* hlb_sim_options.remember: the earlier passes' samples, or NULL */
} sim;

/* What the passes remember of each other (hlb_sim_options.remember): per PU the newest
 * HLB_SIM_REMEMBERED finished blocks, given to the next pass's balancer as priors. */
typedef struct memory {
  hlb_sample *s;           /* n_pus * HLB_SIM_REMEMBERED, oldest first per PU */
  size_t *n;               /* per PU */
  const hlb_sample **each; /* per PU: &s[p * HLB_SIM_REMEMBERED] */
  hlb_sim_release *gone;   /* per PU: why an earlier pass released it (.cores 0: it did not) */
} memory;

static void memory_free(memory *m) {
  free(m->s);
  free(m->n);
  free(m->each);
  free(m->gone);
}

static int memory_init(memory *m, unsigned n_pus) {
  m->s = calloc((size_t)n_pus * HLB_SIM_REMEMBERED, sizeof *m->s);
  m->n = calloc(n_pus, sizeof *m->n);
  m->each = calloc(n_pus, sizeof *m->each);
  m->gone = calloc(n_pus, sizeof *m->gone);
  if (!m->s || !m->n || !m->each || !m->gone) {
    memory_free(m);
    return hlb__error(HLB_ENOMEM, "sim: out of memory for the samples of %u PUs", n_pus);
  }
  for (unsigned p = 0; p < n_pus; p++)
    m->each[p] = &m->s[(size_t)p * HLB_SIM_REMEMBERED];
  return 0;
}

/* The pass's finished blocks, from its decision log, added to what the PUs remember: sized as
 * the executor keeps them for a later run (hlb_balancer_log_sample, in average items under the
 * item costs), the unit the next pass reads priors in. Kept as raw counts, a pass sized by item
 * costs read a CPU's blocks of cheap rows as blocks of average ones: 3x too fast, and its first
 * block of the next pass ran 5x past its plan (the refined-region map, 2.5 x the bound). */
static void memory_add(memory *m, const hlb_balancer *b, const hlb_sim_result *r, unsigned n_pus) {
  for (unsigned k = 0; k < r->n_released; k++)
    m->gone[r->released[k].pu] = r->released[k];
  const hlb_decision *log = NULL;
  size_t n_log = hlb_balancer_log(b, &log);
  /* Samples in other units than those remembered (item costs newly trusted, or found wanting)
   * replace them, as the executor's do. */
  if (hlb_balancer_samples_rescaled(b)) memset(m->n, 0, n_pus * sizeof *m->n);
  for (size_t k = 0; k < n_log; k++) {
    const hlb_decision *e = &log[k];
    hlb_sample kept;
    if (e->pu >= n_pus || !hlb_balancer_log_sample(b, e, &kept)) continue;
    hlb_sample *ring = &m->s[(size_t)e->pu * HLB_SIM_REMEMBERED];
    if (m->n[e->pu] == HLB_SIM_REMEMBERED) { /* forget the oldest */
      memmove(ring, ring + 1, (HLB_SIM_REMEMBERED - 1) * sizeof *ring);
      m->n[e->pu]--;
    }
    ring[m->n[e->pu]++] = kept;
  }
}

/* Seconds to send `bytes` over a link. INFINITY bandwidth (the manager's own node, host
 * cores) costs only the latency, which is 0 for those. */
static double link_time(const hlb_link *l, double bytes) {
  return l->latency_s + (isinf(l->bandwidth_Bps) ? 0.0 : bytes / l->bandwidth_Bps);
}

static int record(sim *s, unsigned p, hlb_sim_phase phase, double a, double z, int lost) {
  if (!s->opt->keep_trace) return 0;
  hlb_sim_result *r = s->r;
  if (r->n_slices == s->slice_cap) {
    /* Trace runs only: growth by doubling keeps it amortised O(1) per slice. */
    size_t cap = s->slice_cap ? 2 * s->slice_cap : 1024;
    hlb_sim_slice *n = realloc(r->slices, cap * sizeof *n);
    if (!n) return hlb__error(HLB_ENOMEM, "sim: trace of %zu slices: out of memory", cap);
    r->slices = n;
    s->slice_cap = cap;
  }
  const hlb_block *blk = &s->pu[p].blk;
  /* Field by field over zeroed memory: a compound literal leaves the padding after `lost`
   * undefined, and two runs of one seed then differed in those bytes (test_sim's
   * same_seed_same_run compares the slices whole). */
  hlb_sim_slice *sl = &r->slices[r->n_slices++];
  memset(sl, 0, sizeof *sl);
  sl->pu = p;
  sl->phase = phase;
  sl->lost = lost;
  sl->begin = blk->begin;
  sl->count = blk->count;
  sl->start_s = a;
  sl->end_s = z > a ? z : a;
  return 0;
}

/* The lognormal factor exp(sigma N - sigma^2 / 2): mean 1, so noise does not bias speeds. */
static double noise(sim *s, unsigned p) {
  if (s->sigma <= 0) return 1.0;
  return exp(s->sigma * hlb__rng_normal(&s->pu[p].rng) - 0.5 * s->sigma * s->sigma);
}

/* The host's scheduling delay for one block: exponential of mean host_jitter_s (drawn only
 * when there is jitter, so clusters without it keep their noise streams). */
static double jitter(sim *s, unsigned p) {
  if (s->jitter <= 0) return 0.0;
  return -s->jitter * log(1.0 - hlb__rng_uniform(&s->pu[p].rng));
}

/* Start block blk on p at s->now: reserve the node's inbound link, schedule compute end. */
static int start_block(sim *s, unsigned p, const hlb_block *blk) {
  const hlb_cluster *c = s->c;
  const hlb_cluster_pu *cp = &c->pus[p];
  const hlb_cluster_node *cn = &c->nodes[cp->node];
  pu_state *ps = &s->pu[p];
  double bytes = (double)blk->count * c->item_in_bytes;
  double start = s->now > s->node_in_free[cp->node] ? s->now : s->node_in_free[cp->node];
  double t_node = link_time(&cn->link, bytes);
  double t_pu = link_time(&cp->link, bytes);
  s->node_in_free[cp->node] = start + t_node;
  ps->state = PU_BUSY;
  ps->blk = *blk;
  ps->phase = HLB_SIM_PHASE_IN;
  ps->in_start = start;
  ps->in_end = start + t_node + t_pu;
  ps->own_xfer = t_node + t_pu;
  ps->c_slow = ps->slowdown;
  /* The curve applies to the block's cost in average items: its count unless the cluster
   * has a cost map. */
  double cost = hlb_cluster_range_cost(c, s->opt->n_items, blk->begin, blk->count);
  double f = fmax(0.0, hlb_curve_compute(&cp->time, cost)); /* x ln x below one item */
  /* A cpu PU's curve is for all its cores; while driver-core PUs hold some, it runs on the
   * rest, its time scaled by cores / (cores - held) from this block on. */
  ps->cores_now = cp->cores;
  if (s->held && cp->cores && s->held[p]) {
    ps->cores_now = cp->cores - s->held[p];
    f *= (double)cp->cores / ps->cores_now;
  }
  ps->c_end = ps->in_end + f * noise(s, p) * ps->c_slow + jitter(s, p);
  return hlb__evq_push(&s->q, ps->c_end, p, ps->gen, EV_COMPUTE_END);
}

/* Ask the balancer for p's next block. *waited is set when the answer is HLB_WAIT. */
static int ask(sim *s, unsigned p, int *waited) {
  hlb_block blk;
  *waited = 0;
  int rc = hlb_balancer_next(s->b, p, s->now, &blk);
  if (rc == HLB_GRANT) return start_block(s, p, &blk);
  if (rc == HLB_WAIT) {
    s->pu[p].state = PU_WAITING;
    *waited = 1;
    return 0;
  }
  if (rc == HLB_DONE) {
    s->pu[p].state = PU_STOPPED;
    return 0;
  }
  return rc < 0 ? hlb__error_prefix(rc, "sim: pu %u at t=%g: ", p, s->now)
                : hlb__error(HLB_ESTATE, "sim: pu %u: hlb_balancer_next returned %d", p, rc);
}

/* After a done or a failure, PUs that were told to wait may get work. Asked in the order
 * they started waiting; those told to wait again keep their place. A done that leaves the
 * pool empty cannot give a waiter anything (the policy is asked only while items remain), so
 * the loop is skipped: that keeps the tail of a 10^4-PU run from being quadratic. */
static int wake_waiters(sim *s, int after_fail) {
  if (!s->n_waiters || (!after_fail && hlb_balancer_remaining(s->b) == 0)) return 0;
  unsigned n = s->n_waiters, keep = 0;
  for (unsigned i = 0; i < n; i++) {
    unsigned p = s->waiters[i];
    int waited = 0;
    if (s->pu[p].state == PU_WAITING) {
      int rc = ask(s, p, &waited);
      if (rc < 0) {
        s->n_waiters = 0;
        return rc;
      }
    }
    if (waited) s->waiters[keep++] = p;
  }
  s->n_waiters = keep;
  return 0;
}

static int ask_and_wake(sim *s, unsigned p, int after_fail) {
  int waited = 0, rc = 0;
  if (s->pu[p].state != PU_DEAD) rc = ask(s, p, &waited);
  if (rc == 0) rc = wake_waiters(s, after_fail);
  if (rc == 0 && waited) s->waiters[s->n_waiters++] = p;
  return rc;
}

static int on_out_at_node(sim *s, unsigned p);

static int on_compute_end(sim *s, unsigned p) {
  const hlb_cluster *c = s->c;
  pu_state *ps = &s->pu[p];
  int rc = record(s, p, HLB_SIM_PHASE_IN, ps->in_start, ps->in_end, 0);
  if (rc == 0) rc = record(s, p, HLB_SIM_PHASE_COMPUTE, ps->in_end, ps->c_end, 0);
  if (rc) return rc;
  ps->busy_s += ps->c_end - ps->in_end;
  double bytes = (double)ps->blk.count * c->item_out_bytes;
  double t_pu = link_time(&c->pus[p].link, bytes);
  ps->phase = HLB_SIM_PHASE_OUT;
  ps->out_start = s->now;
  ps->own_xfer += t_pu;
  /* A free PU link (host cores) reaches the node at once: no event needed. */
  if (t_pu == 0) return on_out_at_node(s, p);
  return hlb__evq_push(&s->q, s->now + t_pu, p, ps->gen, EV_OUT_AT_NODE);
}

static int on_out_at_node(sim *s, unsigned p) {
  const hlb_cluster *c = s->c;
  pu_state *ps = &s->pu[p];
  unsigned node = c->pus[p].node;
  double bytes = (double)ps->blk.count * c->item_out_bytes;
  double t_node = link_time(&c->nodes[node].link, bytes);
  double start = s->now > s->node_out_free[node] ? s->now : s->node_out_free[node];
  s->node_out_free[node] = start + t_node;
  ps->own_xfer += t_node;
  ps->out_end = start + t_node;
  return hlb__evq_push(&s->q, ps->out_end, p, ps->gen, EV_BLOCK_DONE);
}

/* Driver cores: the executor's rule (src/exec/exec.c, should_release; docs/executor.md, "Devices
 * that must pay for their core"), on simulated time. A PU that holds cores of a cpu PU is kept
 * only while it does more items per busy second than those cores do in the cpu PU. It is
 * judged once the cpu PU finished HLB_SIM_RELEASE_BLOCKS blocks: after its own
 * HLB_SIM_RELEASE_BLOCKS-th block on its finished blocks; after its first block when that
 * block alone shows it HLB_SIM_RELEASE_CLEAR_FACTOR times slower; or while its second block
 * runs, counting that block as done now (more than it can have reached: when even that is
 * below, it is slower for sure; its first block is never judged in flight). The cpu PU's
 * per-core rate is its items over its core-seconds (each block's busy time times the cores it
 * ran on), which stays right after an earlier release changed its core count. Returns 1 and
 * the two rates when d should go. */
static int should_release(const sim *s, unsigned d, int in_flight, double *dev_rate,
                          double *core_rate) {
  const hlb_cluster_pu *cd = &s->c->pus[d];
  const pu_state *ds = &s->pu[d];
  if (s->opt->keep_weak_devices || cd->driver_of < 0 || ds->released || ds->state == PU_DEAD)
    return 0;
  const pu_state *hs = &s->pu[cd->driver_of];
  if (hs->state == PU_DEAD || hs->blocks < HLB_SIM_RELEASE_BLOCKS || !(hs->core_s > 0)) return 0;
  *core_rate = (double)hs->items / hs->core_s;
  if (in_flight) {
    if (ds->blocks < 1 || ds->state != PU_BUSY) return 0;
    double busy = ds->fin_busy_s + (s->now - ds->blk.granted_s);
    if (!(busy > 0)) return 0;
    *dev_rate = (double)(ds->items + ds->blk.count) / busy;
  } else {
    if (ds->blocks < 1 || !(ds->fin_busy_s > 0)) return 0;
    *dev_rate = (double)ds->items / ds->fin_busy_s;
    if (ds->blocks < HLB_SIM_RELEASE_BLOCKS) /* its first block alone: only a clear loser */
      return ds->fin_busy_s >= HLB_SIM_RELEASE_CLEAR_MIN_S &&
             *dev_rate * HLB_SIM_RELEASE_CLEAR_FACTOR < *core_rate * cd->driver_cores;
  }
  return *core_rate > 0 && *dev_rate < *core_rate * cd->driver_cores;
}

/* A released driver-core PU leaves the run now. */
static int retire_released(sim *s, unsigned d) {
  s->pu[d].state = PU_RELEASED;
  s->pu[d].died_s = s->now;
  int rc = hlb_balancer_retire(s->b, d);
  return rc < 0 ? hlb__error_prefix(rc, "sim: retiring released pu %u at t=%g: ", d, s->now) : 0;
}

/* Give up driver-core PU d: its cores go back to the cpu PU from that PU's next block on, and
 * the decision with both figures goes to the result. A block in flight still computing goes
 * back to the pool (the device drops its output); one already sending its output is let finish
 * and d retires at its end, as the executor lets a committing block finish. */
static int release(sim *s, unsigned d, int in_flight, double dev_rate, double core_rate) {
  const hlb_cluster_pu *cd = &s->c->pus[d];
  pu_state *ds = &s->pu[d];
  unsigned host = (unsigned)cd->driver_of, k = cd->driver_cores;
  hlb_sim_result *r = s->r;
  unsigned cores = s->c->pus[host].cores, before = cores - s->held[host];
  s->held[host] -= k;
  /* Mid-run, the policy plans the cpu PU at its new size from then on, as the executor tells
   * it (release_locked); before the run (release_remembered) it has no block of this pass. A
   * dead cpu PU judges nothing (should_release), and the cluster file leaves it a core. */
  if (s->r->blocks > 0) {
    int rc = hlb_balancer_resize(s->b, host, (double)(cores - s->held[host]) / before);
    if (rc < 0) return hlb__error_prefix(rc, "sim: resizing pu %u at t=%g: ", host, s->now);
  }
  ds->released = 1;
  hlb_sim_release *e = &r->released[r->n_released++];
  *e = (hlb_sim_release){d, host, k, s->now, dev_rate, core_rate * k, in_flight, ""};
  snprintf(e->reason, sizeof e->reason,
           "released at %.6g s: %s%.3g items/s against %.3g items/s for the %u core%s it held in "
           "%s",
           s->now, in_flight ? "at most " : "", dev_rate, core_rate * k, k, k > 1 ? "s" : "",
           s->c->pus[host].name);
  if (in_flight && ds->phase == HLB_SIM_PHASE_OUT) return 0; /* retired at its block's end */
  if (in_flight) {
    int rc = record(s, d, HLB_SIM_PHASE_IN, ds->in_start, fmin(s->now, ds->in_end), 1);
    if (rc == 0 && s->now > ds->in_end) {
      rc = record(s, d, HLB_SIM_PHASE_COMPUTE, ds->in_end, s->now, 1);
      ds->busy_s += s->now - ds->in_end;
    }
    if (rc) return rc;
    r->blocks_lost++;
    rc = hlb_balancer_fail(s->b, d, &ds->blk, s->now);
    if (rc < 0) return hlb__error_prefix(rc, "sim: releasing pu %u at t=%g: ", d, s->now);
    ds->gen++; /* its pending event is void */
  }
  return retire_released(s, d);
}

/* A pass that remembers the ones before it starts without the driver-core PUs they released,
 * their cores with their cpu PU from the start, as the executor decides before a run from the
 * rates stored with the models (docs/executor.md). Left in, such a PU held its core through a
 * first block sized from its stored samples until it was judged again (the driver-core preset:
 * 1.4-2.0 x the bound on the remembered pass, 1.2-1.4 on the first). */
static int release_remembered(sim *s) {
  for (unsigned d = 0; d < s->c->n_pus; d++) {
    const hlb_sim_release *was = &s->mem->gone[d];
    if (was->cores == 0) continue;
    int rc = release(s, d, 0, was->pu_items_per_s, was->core_items_per_s / was->cores);
    if (rc) return rc;
    hlb_sim_release *e = &s->r->released[s->r->n_released - 1];
    snprintf(e->reason, sizeof e->reason,
             "released before the run: an earlier pass released it (%.3g items/s against %.3g "
             "items/s for the %u core%s it held in %s)",
             was->pu_items_per_s, was->core_items_per_s, was->cores, was->cores > 1 ? "s" : "",
             s->c->pus[was->host].name);
  }
  return 0;
}

/* After p's block: judge p if it holds driver cores (*stopped = 1: p was released), or, if p is a
 * cpu PU whose cores are held, the PUs holding them whose block is in flight. */
static int judge_drivers(sim *s, unsigned p, int *stopped) {
  const hlb_cluster *c = s->c;
  double dev_rate, core_rate;
  pu_state *ps = &s->pu[p];
  if (ps->released) { /* released while its output was on the way: retire it now */
    *stopped = 1;
    return retire_released(s, p);
  }
  if (c->pus[p].driver_of >= 0) {
    if (!should_release(s, p, 0, &dev_rate, &core_rate)) return 0;
    *stopped = 1;
    return release(s, p, 0, dev_rate, core_rate);
  }
  if (!s->held[p]) return 0;
  int back = 0, rc = 0;
  for (unsigned d = 0; d < c->n_pus && rc == 0; d++)
    if (c->pus[d].driver_of == (int)p && should_release(s, d, 1, &dev_rate, &core_rate)) {
      rc = release(s, d, 1, dev_rate, core_rate);
      back = 1;
    }
  if (rc == 0 && back) rc = wake_waiters(s, 1); /* items came back */
  return rc;
}

static int on_block_done(sim *s, unsigned p) {
  pu_state *ps = &s->pu[p];
  int rc = record(s, p, HLB_SIM_PHASE_OUT, ps->out_start, s->now, 0);
  if (rc) return rc;
  /* What a real driver measures: wall time of each phase, so queueing on the shared node
   * link counts as transfer time. */
  hlb_sample smp = {.block = ps->blk,
                    .compute_s = ps->c_end - ps->in_end,
                    .transfer_s = (ps->in_end - ps->blk.granted_s) + (s->now - ps->c_end),
                    .end_s = s->now};
  double block_busy = ps->busy_s + ps->own_xfer - ps->fin_busy_s;
  ps->busy_s += ps->own_xfer;
  ps->fin_busy_s = ps->busy_s;
  ps->core_s += block_busy * (ps->cores_now ? ps->cores_now : 1);
  ps->blocks++;
  ps->items += ps->blk.count;
  ps->state = PU_READY;
  s->r->blocks++;
  if (s->now > s->r->makespan_s) s->r->makespan_s = s->now;
  rc = hlb_balancer_done(s->b, p, &smp);
  if (rc < 0 && rc != HLB_ESAMPLE) return hlb__error_prefix(rc, "sim: pu %u at t=%g: ", p, s->now);
  if (s->held) {
    int stopped = 0;
    rc = judge_drivers(s, p, &stopped);
    if (rc == 0 && stopped) rc = wake_waiters(s, 1);
    if (rc || stopped) return rc;
  }
  return ask_and_wake(s, p, 0);
}

/* A slowdown changes the factor for the rest of a block in flight too: external load slows
 * the device from at_s on, whatever it is running (docs/simulator.md). */
static int on_slowdown(sim *s, unsigned p, double factor) {
  pu_state *ps = &s->pu[p];
  ps->slowdown = factor;
  if (ps->state != PU_BUSY || ps->phase != HLB_SIM_PHASE_IN) return 0;
  double from = s->now > ps->in_end ? s->now : ps->in_end;
  double rest = (ps->c_end - from) / ps->c_slow; /* compute left, in unslowed seconds */
  ps->c_end = from + rest * factor;
  ps->c_slow = factor;
  ps->gen++;
  return hlb__evq_push(&s->q, ps->c_end, p, ps->gen, EV_COMPUTE_END);
}

/* The PU dies: its block in flight (in any phase) is lost and goes back to the pool, the PU
 * is retired, and waiting PUs are asked again since items came back. */
static int on_fail(sim *s, unsigned p) {
  pu_state *ps = &s->pu[p];
  if (ps->state == PU_DEAD) return 0;
  int rc = 0;
  if (ps->state == PU_BUSY) {
    double t = s->now;
    if (ps->phase == HLB_SIM_PHASE_IN) {
      rc = record(s, p, HLB_SIM_PHASE_IN, ps->in_start, t < ps->in_end ? t : ps->in_end, 1);
      if (rc == 0 && t > ps->in_end) {
        rc = record(s, p, HLB_SIM_PHASE_COMPUTE, ps->in_end, t, 1);
        ps->busy_s += t - ps->in_end;
      }
    } else {
      rc = record(s, p, HLB_SIM_PHASE_OUT, ps->out_start, t, 1);
    }
    if (rc) return rc;
    s->r->blocks_lost++;
    rc = hlb_balancer_fail(s->b, p, &ps->blk, t);
    if (rc < 0) return hlb__error_prefix(rc, "sim: pu %u failing at t=%g: ", p, t);
  }
  ps->gen++; /* its pending event, if any, is void */
  ps->state = PU_DEAD;
  ps->died_s = s->now;
  rc = hlb_balancer_retire(s->b, p);
  if (rc < 0) return hlb__error_prefix(rc, "sim: retiring pu %u at t=%g: ", p, s->now);
  return wake_waiters(s, 1);
}

static int apply_event(sim *s, const hlb_cluster_event *e) {
  s->now = e->at_s > s->now ? e->at_s : s->now;
  s->r->events++;
  if (e->kind == HLB_EVENT_FAIL) return on_fail(s, e->pu);
  return on_slowdown(s, e->pu, e->slowdown);
}

static int handle(sim *s, const hlb__event *e) {
  if (e->gen != s->pu[e->pu].gen) return 0; /* stale: invalidated by a slowdown or a failure */
  s->now = e->t;
  s->r->events++;
  switch (e->kind) {
  case EV_COMPUTE_END:
    return on_compute_end(s, e->pu);
  case EV_OUT_AT_NODE:
    return on_out_at_node(s, e->pu);
  default:
    return on_block_done(s, e->pu);
  }
}

/* The main loop: cluster events (sorted by time) merged with the heap; at equal times the
 * cluster event goes first, so a PU failing at t loses a block that would finish at t. */
static int run_loop(sim *s) {
  const hlb_cluster *c = s->c;
  unsigned n_ev = s->opt->no_events ? 0 : c->n_events, ei = 0;
  for (;;) {
    if (hlb_balancer_finished(s->b)) return 0;
    const hlb__event *top = hlb__evq_top(&s->q);
    int rc;
    if (ei < n_ev && (!top || c->events[ei].at_s <= top->t)) {
      rc = apply_event(s, &c->events[ei++]);
    } else if (top) {
      hlb__event e;
      hlb__evq_pop(&s->q, &e);
      rc = handle(s, &e);
    } else {
      return hlb__error(HLB_ESTATE,
                        "sim: stalled at t=%g with %zu items left: %u PUs waiting and nothing "
                        "in flight (policy '%s')",
                        s->now, hlb_balancer_remaining(s->b), s->n_waiters,
                        hlb_balancer_policy(s->b));
    }
    if (rc < 0) return rc;
  }
}

/* The balancer's view of the PUs: names, kinds, a speed hint (true throughput at an equal
 * share, transfers included) for `proportional`, and block caps from the memory caps. */
static int make_balancer(sim *s) {
  const hlb_cluster *c = s->c;
  const hlb_sim_options *o = s->opt;
  hlb_pu_desc *d = calloc(c->n_pus, sizeof *d);
  if (!d) return hlb__error(HLB_ENOMEM, "sim: out of memory");
  double share = (double)o->n_items / c->n_pus;
  if (share < 1) share = 1;
  for (unsigned p = 0; p < c->n_pus; p++) {
    const hlb_cluster_pu *cp = &c->pus[p];
    hlb_curve k;
    hlb_sim_pu_curve(c, p, &k);
    double t = hlb_curve_time(&k, share);
    if (s->held && cp->cores && s->held[p]) /* on the cores its driver-core PUs leave it */
      t = hlb_curve_compute(&cp->time, share) * cp->cores / (cp->cores - s->held[p]) +
          hlb_curve_transfer(&k, share);
    size_t cap = cp->max_items;
    if (c->nodes[cp->node].max_items < cap) cap = c->nodes[cp->node].max_items;
    d[p] = (hlb_pu_desc){.name = cp->name,
                         .kind = cp->kind,
                         .speed_hint = t > 0 ? share / t : 0.0,
                         .max_block = cap == SIZE_MAX ? 0 : cap};
  }
  hlb_balancer_config cfg = {.n_items = o->n_items,
                             .granularity = o->granularity,
                             .n_pus = c->n_pus,
                             .pus = d,
                             .policy = o->policy,
                             .params = o->params,
                             .item_cost = s->item_cost,
                             .n_item_cost = s->n_item_cost,
                             .item_cost_on_trial = s->item_cost_on_trial,
                             .learn_item_cost = s->learn != NULL,
                             /* cost_map.declared: the app's codelet says so. */
                             .items_vary = c->cost_declared,
                             .keep_log = s->mem != NULL,
                             .prior = s->mem ? s->mem->each : NULL,
                             .n_prior = s->mem ? s->mem->n : NULL};
  int rc = hlb_balancer_create(&cfg, &s->b);
  free(d);
  return rc;
}

static int alloc_result(sim *s) {
  const hlb_cluster *c = s->c;
  hlb_sim_result *r = calloc(1, sizeof *r);
  if (!r) return hlb__error(HLB_ENOMEM, "sim: out of memory");
  s->r = r;
  r->n_pus = c->n_pus;
  r->items_per_pu = calloc(c->n_pus, sizeof *r->items_per_pu);
  r->busy_s = calloc(c->n_pus, sizeof *r->busy_s);
  r->alive_s = calloc(c->n_pus, sizeof *r->alive_s);
  r->kind_names = calloc(c->n_pus, sizeof *r->kind_names);
  r->idle_pct = calloc(c->n_pus, sizeof *r->idle_pct);
  if (!r->items_per_pu || !r->busy_s || !r->alive_s || !r->kind_names || !r->idle_pct)
    return hlb__error(HLB_ENOMEM, "sim: out of memory");
  unsigned drivers = 0;
  for (unsigned p = 0; p < c->n_pus; p++)
    drivers += c->pus[p].driver_of >= 0;
  if (drivers && !(r->released = calloc(drivers, sizeof *r->released)))
    return hlb__error(HLB_ENOMEM, "sim: out of memory");
  return 0;
}

static int alloc_state(sim *s) {
  const hlb_cluster *c = s->c;
  s->pu = calloc(c->n_pus, sizeof *s->pu);
  s->node_in_free = calloc(c->n_nodes, sizeof *s->node_in_free);
  s->node_out_free = calloc(c->n_nodes, sizeof *s->node_out_free);
  s->waiters = calloc(c->n_pus, sizeof *s->waiters);
  if (!s->pu || !s->node_in_free || !s->node_out_free || !s->waiters)
    return hlb__error(HLB_ENOMEM, "sim: out of memory for %u PUs", c->n_pus);
  for (unsigned p = 0; p < c->n_pus; p++) {
    int host = c->pus[p].driver_of;
    if (host < 0) continue;
    if (!s->held && !(s->held = calloc(c->n_pus, sizeof *s->held)))
      return hlb__error(HLB_ENOMEM, "sim: out of memory for %u PUs", c->n_pus);
    s->held[host] += c->pus[p].driver_cores;
  }
  for (unsigned p = 0; p < c->n_pus; p++) {
    s->pu[p].slowdown = 1.0;
    /* One noise stream per PU: PU p's k-th block gets the same factor under every policy
     * that gives it a k-th block, which makes policies comparable for one seed. */
    hlb__rng_seed(&s->pu[p].rng, s->opt->seed ^ (0x9e3779b97f4a7c15ull * (p + 1)));
  }
  /* Live events: one per PU, plus one stale event per cluster event at most. */
  return hlb__evq_init(&s->q, 2 * (size_t)c->n_pus + c->n_events + 16);
}

static void finish_result(sim *s) {
  const hlb_cluster *c = s->c;
  hlb_sim_result *r = s->r;
  snprintf(r->policy, sizeof r->policy, "%s", hlb_balancer_policy(s->b));
  r->solver_s = hlb_balancer_solver_seconds(s->b);
  r->exactly_once = hlb_balancer_check_exactly_once(s->b) == 0;
  r->ratio = r->lower_bound_s > 0 ? r->makespan_s / r->lower_bound_s : NAN;
  double *busy = calloc(c->n_pus, sizeof *busy), *alive = calloc(c->n_pus, sizeof *alive);
  for (unsigned p = 0; p < c->n_pus; p++) {
    const pu_state *ps = &s->pu[p];
    r->items_per_pu[p] = ps->items;
    r->busy_s[p] = ps->busy_s;
    r->alive_s[p] = (ps->state == PU_DEAD || ps->state == PU_RELEASED) && ps->died_s < r->makespan_s
                        ? ps->died_s
                        : r->makespan_s;
    unsigned k = 0;
    while (k < r->n_kinds && strcmp(r->kind_names[k], c->pus[p].kind) != 0)
      k++;
    if (k == r->n_kinds) r->kind_names[r->n_kinds++] = c->pus[p].kind;
    if (busy && alive) {
      busy[k] += r->busy_s[p];
      alive[k] += r->alive_s[p];
    }
  }
  for (unsigned k = 0; k < r->n_kinds; k++)
    r->idle_pct[k] = busy && alive && alive[k] > 0 ? 100.0 * (1.0 - busy[k] / alive[k]) : 0.0;
  free(busy);
  free(alive);
}

static int check_options(const hlb_cluster *c, const hlb_sim_options *o) {
  if (!c || !o) return hlb__error(HLB_EINVAL, "sim: cluster and options must not be NULL");
  if (o->n_items == 0) return hlb__error(HLB_EINVAL, "sim: n_items must be > 0, got 0");
  if (c->n_pus == 0) return hlb__error(HLB_EINVAL, "sim: the cluster has no PU");
  for (unsigned i = 0; i < c->n_events; i++)
    if (c->events[i].pu >= c->n_pus)
      return hlb__error(HLB_EINVAL, "sim: events[%u]: pu %u out of range (%u PUs)", i,
                        c->events[i].pu, c->n_pus);
  return 0;
}

static void free_state(sim *s) {
  hlb__evq_fini(&s->q);
  free(s->pu);
  free(s->node_in_free);
  free(s->node_out_free);
  free(s->waiters);
  free(s->held);
  hlb_balancer_destroy(s->b);
}

/* The item costs passed from one pass to the next: m slices (cost), and whether the pass that
 * handed them on found the costs it was given predictive (hlb_balancer_item_cost_trusted);
 * costs not yet found so go on trial, as the executor's do. */
typedef struct pass_costs {
  double *cost;
  unsigned m;
  int known, trusted;
} pass_costs;

/* One pass; `prior` (or NULL) is the previous pass's costs, `learn` (or NULL) receives this
 * one's. */
static int run_pass(const hlb_cluster *c, const hlb_sim_options *opt, const pass_costs *prior,
                    pass_costs *learn, memory *mem, hlb_sim_result **out) {
  int given = prior && prior->known;
  sim s = {.c = c,
           .opt = opt,
           .sigma = opt->no_noise ? 0.0 : c->noise_sigma,
           .jitter = opt->no_noise ? 0.0 : c->host_jitter_s,
           .item_cost = given ? prior->cost : NULL,
           .n_item_cost = given ? prior->m : 0,
           .item_cost_on_trial = given && !prior->trusted,
           .learn = learn ? learn->cost : NULL,
           .mem = mem};
  int rc = alloc_result(&s);
  if (rc == 0) rc = alloc_state(&s);
  if (rc == 0) rc = hlb_sim_lower_bound(c, opt->n_items, &s.r->lower_bound_s);
  if (rc == 0) rc = make_balancer(&s);
  if (rc == 0 && mem) rc = release_remembered(&s);
  /* Every PU is ready at t = 0 and asks in index order. */
  for (unsigned p = 0; rc == 0 && p < c->n_pus; p++) {
    if (s.pu[p].state == PU_RELEASED) continue;
    int waited = 0;
    rc = ask(&s, p, &waited);
    if (rc == 0 && waited) s.waiters[s.n_waiters++] = p;
  }
  if (rc == 0) rc = run_loop(&s);
  if (rc == 0) finish_result(&s);
  if (rc == 0 && learn) {
    learn->trusted = hlb_balancer_item_cost_trusted(s.b);
    rc = hlb_balancer_item_cost(s.b, learn->cost, learn->m);
    learn->known = rc == 0;
  }
  if (rc == 0 && mem) memory_add(mem, s.b, s.r, c->n_pus);
  free_state(&s);
  if (rc) {
    hlb_sim_result_free(s.r);
    return rc;
  }
  *out = s.r;
  return 0;
}

int hlb_sim_run(const hlb_cluster *c, const hlb_sim_options *opt, hlb_sim_result **out) {
  int rc = check_options(c, opt);
  if (rc) return rc;
  unsigned passes = opt->passes ? opt->passes : 1, m = HLB_ITEM_COST_SLICES;
  /* Two buffers: a pass reads what the one before learnt and learns its own (the measured
   * pass too: costs on trial are scored only by a pass that learns). */
  pass_costs costs[2] = {{.m = m}, {.m = m}};
  for (int i = 0; passes > 1 && i < 2; i++)
    if (!(costs[i].cost = malloc(m * sizeof *costs[i].cost))) rc = HLB_ENOMEM;
  if (rc) {
    free(costs[0].cost), free(costs[1].cost);
    return hlb__error(HLB_ENOMEM, "sim: out of memory");
  }
  memory mem = {0}, *remember = NULL;
  if (opt->remember && passes > 1) {
    rc = memory_init(&mem, c->n_pus);
    remember = rc == 0 ? &mem : NULL;
  }
  hlb_sim_options o = *opt;
  /* Pass k starts from the item costs pass k - 1 learnt; the last one is measured. */
  for (unsigned k = 1; rc == 0 && k <= passes; k++) {
    hlb_sim_result *r = NULL;
    o.seed = opt->seed + k - 1;
    o.keep_trace = k == passes ? opt->keep_trace : 0;
    pass_costs *before = k > 1 && !opt->no_item_costs ? &costs[k % 2] : NULL;
    rc = run_pass(c, &o, before, passes > 1 ? &costs[(k + 1) % 2] : NULL, remember, &r);
    if (rc == 0 && k == passes)
      *out = r;
    else
      hlb_sim_result_free(r);
  }
  free(costs[0].cost), free(costs[1].cost);
  memory_free(&mem);
  return rc;
}

void hlb_sim_result_free(hlb_sim_result *r) {
  if (!r) return;
  free(r->items_per_pu);
  free(r->busy_s);
  free(r->alive_s);
  free(r->kind_names);
  free(r->idle_pct);
  free(r->slices);
  free(r->released);
  free(r);
}
