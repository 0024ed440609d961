/* The driver core (driver.h): one loop for every PU, local or on another rank, and the pieces
 * of a block's life both executors share: staging, fault injection, the emulated throttle,
 * timing, the failure streak and the per-PU stats. */
#include "exec/driver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error_internal.h"

void hlb__sleep_s(double s) {
  if (!(s > 0)) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

int hlb__staging_grow_host(void **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  void *p = realloc(*buf, need);
  if (!p) return hlb__error(HLB_ENOMEM, "executor: cannot allocate %zu bytes of staging", need);
  *buf = p;
  *cap = need;
  return 0;
}

int hlb__staging_grow_device(const hlb__backend_ops *ops, void *dev, void **buf, size_t *cap,
                             size_t need) {
  if (need <= *cap) return 0;
  ops->release(dev, *buf);
  *buf = NULL;
  *cap = 0;
  int rc = ops->alloc(dev, need, buf);
  if (rc == 0) *cap = need;
  return rc;
}

int hlb__block_host_io(const hlb_codelet *cl, const hlb_block *blk, void **host_in,
                       size_t *host_in_cap, void **host_out, size_t *host_out_cap, const void **in,
                       void **out) {
  size_t in_b = cl->in_bytes_per_item * blk->count, out_b = cl->out_bytes_per_item * blk->count;
  int rc = 0;
  *in = NULL;
  *out = NULL;
  if (in_b && cl->pack) {
    if ((rc = hlb__staging_grow_host(host_in, host_in_cap, in_b))) return rc;
    cl->pack(cl->user, blk->begin, blk->count, *host_in);
    *in = *host_in;
  } else if (in_b) {
    *in = (const char *)cl->in + blk->begin * cl->in_bytes_per_item;
  }
  if (out_b && cl->unpack) {
    if ((rc = hlb__staging_grow_host(host_out, host_out_cap, out_b))) return rc;
    *out = *host_out;
  } else if (out_b) {
    *out = (char *)cl->out + blk->begin * cl->out_bytes_per_item;
  }
  return 0;
}

int hlb__driver_host_input(hlb__driver *d, const hlb_codelet *io, const hlb_block *blk,
                           const void **in, void **out) {
  hlb__stage *sg = d->sg;
  return hlb__block_host_io(io, blk, &sg->host_in, &sg->host_in_cap, &sg->host_out,
                            &sg->host_out_cap, in, out);
}

void hlb__driver_host_output(hlb__driver *d, const hlb_codelet *io, const hlb_block *blk) {
  if (io->out_bytes_per_item && io->unpack)
    io->unpack(io->user, blk->begin, blk->count, d->sg->host_out);
}

void hlb__pu_stats_add_block(hlb_exec_pu_stats *st, const hlb_sample *s, double throttle_s) {
  st->items += s->block.count;
  st->blocks++;
  st->compute_s += s->compute_s - throttle_s;
  st->throttle_s += throttle_s;
  st->transfer_s += s->transfer_s;
  st->busy_s += s->compute_s + s->transfer_s;
  st->finish_s = s->end_s;
}

void hlb__pu_stats_retire(hlb_exec_pu_stats *st, const char *text) {
  st->retired = 1;
  /* The stats keep the first part of a long message. */
  snprintf(st->failure, sizeof st->failure, "%s", text);
}

void hlb__pu_stats_add_failure(hlb_exec_pu_stats *st, const char *text, int retire) {
  st->failed_blocks++;
  if (retire) hlb__pu_stats_retire(st, text);
}

static int grow_dev(hlb__driver *d, void **buf, size_t *cap, size_t need) {
  return hlb__staging_grow_device(d->ops, d->dev, buf, cap, need);
}

/* Point call->in/out at the PU's memory: the host's own, or device staging with the input
 * copied in. */
static int to_device(hlb__driver *d, const void *in, void *out, size_t in_b, size_t out_b,
                     hlb_exec_call *call) {
  if (d->ops->host_memory) {
    call->in = in_b ? in : NULL;
    call->out = out_b ? out : NULL;
    return 0;
  }
  hlb__stage *sg = d->sg;
  int rc;
  if ((rc = grow_dev(d, &sg->dev_in, &sg->dev_in_cap, in_b)) ||
      (rc = grow_dev(d, &sg->dev_out, &sg->dev_out_cap, out_b)))
    return rc;
  call->in = in_b ? sg->dev_in : NULL;
  call->out = out_b ? sg->dev_out : NULL;
  return in_b ? d->ops->to_device(d->dev, sg->dev_in, in, in_b) : 0;
}

static int to_host(hlb__driver *d, void *out, size_t out_b) {
  if (!out_b || d->ops->host_memory) return 0;
  return d->ops->to_host(d->dev, out, d->sg->dev_out, out_b);
}

/* 1 when the options make this block (the d->started-th) fail on purpose. */
static int injected(const hlb__driver *d) {
  if (d->inject_pu != (int)d->pu || d->inject_from == 0 || d->started < d->inject_from) return 0;
  return d->inject_count == 0 || d->started < d->inject_from + d->inject_count;
}

static int compute(hlb__driver *d, hlb_exec_call *call) {
  if (d->call == HLB__KERNEL_LAUNCH) return d->ops->launch(d->dev, d->kernel, d->cl, call);
  return d->ops->run(d->dev, d->cl, call);
}

/* run_block's answer when the transport took the block back while it ran. */
#define BLOCK_DROPPED 1

/* Run one block: stage, compute, bring back; fill the sample's times and the emulated
 * throttle. 0, BLOCK_DROPPED, or HLB_E* (the block failed). */
static int run_block(hlb__driver *d, const hlb_block *blk, hlb_sample *s, double *throttle_s) {
  size_t in_b = d->cl->in_bytes_per_item * blk->count;
  size_t out_b = d->cl->out_bytes_per_item * blk->count;
  hlb_exec_call call = {.begin = blk->begin, .count = blk->count, .user = d->cl->user};
  memcpy((void *)call.shared, d->shared, sizeof call.shared);
  d->started++;
  const void *in = NULL;
  void *out = NULL;
  double earlier_s = 0;
  double t_a = hlb__now();
  int rc = d->t->input(d, blk, &in, &out, &earlier_s);
  if (rc == 0) rc = to_device(d, in, out, in_b, out_b, &call);
  double t_b = hlb__now();
  if (rc == 0 && injected(d))
    rc = hlb__error(HLB_EDEVICE, "%s: injected failure of its block %u (items [%zu, +%zu))",
                    d->label, d->started, blk->begin, blk->count);
  if (rc == 0) rc = compute(d, &call);
  double t_c = hlb__now();
  if (rc == 0 && d->t->commit && !d->t->commit(d)) return BLOCK_DROPPED;
  if (rc == 0) rc = to_host(d, out, out_b);
  if (rc == 0 && d->t->output) rc = d->t->output(d, blk, out);
  double t_d = hlb__now();
  double compute_s = t_c - t_b;
  /* Emulated slowdown: the PU looks `throttle` times slower to the balancer. Sleeping, not
   * spinning, so the emulation does not steal cores from the other PUs. */
  *throttle_s = 0;
  if (rc == 0 && d->throttle > 1) {
    *throttle_s = compute_s * (d->throttle - 1);
    hlb__sleep_s(*throttle_s);
    compute_s *= d->throttle;
  }
  s->block = *blk;
  s->compute_s = compute_s;
  s->transfer_s = earlier_s + (t_b - t_a) + (t_d - t_c);
  return rc;
}

void hlb__driver_loop(hlb__driver *d) {
  const hlb__transport *t = d->t;
  unsigned limit = d->max_failures ? d->max_failures : HLB_EXEC_MAX_FAILURES;
  hlb_block blk;
  while (t->next(d, &blk)) {
    hlb_sample s;
    double throttle_s = 0;
    int rc = run_block(d, &blk, &s, &throttle_s);
    if (rc == BLOCK_DROPPED) break;
    int stop;
    if (rc == 0) {
      d->fail_streak = 0;
      stop = t->done(d, &s, throttle_s);
    } else {
      int retire = ++d->fail_streak >= limit;
      stop = t->fail(d, &blk, retire) || retire;
    }
    if (stop) break;
  }
  t->leave(d);
}
