/* hlb_executor_run(): one driver thread per PU asks the balancer for blocks, moves the
 * block's data, runs the kernel and reports measured compute and transfer times. The loop is
 * the driver core's (driver.h); this file gives it the local transport (the balancer under the
 * run's lock, the caller's arrays) and judges the devices that hold cores of the cpu PU. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "exec/driver.h"
#include "exec/exec_internal.h"
#include "exec/judge.h"
#include "exec/models.h"
#include "hlb/model.h"
#include "hlb/policy.h"

typedef struct run_ctx {
  hlb_executor *ex;
  const hlb_codelet *cl;
  hlb_exec_options opt;
  hlb_balancer *b; /* guarded by mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;                  /* broadcast after every done/fail/retire */
  double called;                      /* hlb__now() when hlb_executor_run was called */
  double t0;                          /* hlb__now() at the start of the run */
  double last_end;                    /* latest block end, run-relative; guarded by mu */
  unsigned waiting, in_flight, alive; /* drivers waiting, blocks running, PUs alive; mu */
  int error;                          /* first fatal error of a driver; guarded by mu */
  char error_text[512];
  char fail_text[512]; /* the last failed block's error; guarded by mu */
  /* Per PU of the executor (ex->n entries each, allocated per run by alloc_run). */
  const void *(*shared)[HLB_EXEC_MAX_SHARED];
  void **kernel; /* the session's kernel of each prepared PU (NULL where nothing is built) */
  int *prepared;
  hlb_exec_pu_stats *st; /* each written by its driver only */
  /* For the progress display: each PU's last block size and balancer index; guarded by mu. */
  size_t *last_block;
  int *bpu_of;
  /* Each PU's block in flight (for judging a device before its block ends); guarded by mu. */
  int *in_block;
  double *block_start;
  size_t *block_count;
  hlb_block *block;
  /* committing: the PU is writing its block's output back (it can no longer be abandoned);
   * abandoned: its block in flight was given back to the pool when it was released, so it
   * must not write its output. Both guarded by mu. */
  int *committing, *abandoned;
  /* Each PU's newest finished blocks, a ring of HLB__JUDGE_RECENT (n_recent counts all it
   * finished), for judging a device against the cpu PU: the balancer's log would not do, its
   * newest entries can all be one PU's (a device's thousands of one-item blocks beside a
   * throttled cpu PU's few: the cpu PU's blocks fell out of the window and the takeover was
   * never judged). Guarded by mu. */
  hlb_decision (*recent)[HLB__JUDGE_RECENT];
  size_t *n_recent;
  /* Per PU that takes part, in the balancer's numbering: the executor's index, the driver
   * and whether it started on its thread (the executor's, pu_thread.h). */
  unsigned *bidx;
  struct driver *drv;
  int *started;
  size_t n_items;
  /* A device tried alone on every core (give_cores_stored) beside the cpu PU parked: it waits,
   * in the balancer, while the device's first blocks show whether to go on (judge_trial_locked).
   * trial_dev and parked_cpu: executor indices, -1 when no trial is judged; parking: the cpu PU
   * waits; trial_cpu_rate: its stored items per second alone on the device's cores. Guarded
   * by mu. */
  int trial_judged; /* explore_device: the trial this run starts is judged as it goes */
  int trial_dev, parked_cpu, parking;
  unsigned trial_bpu, parked_bpu; /* their balancer indices */
  double trial_cpu_rate;
} run_ctx;

/* A PU's driver: the driver core's state (driver.h) and this executor's view of the PU. Its
 * staging buffers are the executor's (ex->stage), kept from run to run. */
typedef struct driver driver;
struct driver {
  hlb__driver core; /* core.ctx points back here */
  run_ctx *r;
  unsigned pu;  /* the PU's index: the executor's, as core.pu (devices, stats, injection) */
  unsigned bpu; /* the balancer's index of the same PU (driver.h, "One numbering") */
};

void hlb_exec_options_default(hlb_exec_options *o) {
  memset(o, 0, sizeof *o);
  o->max_failures = HLB_EXEC_MAX_FAILURES;
  o->keep_log = 1;
  o->inject_pu = -1;
  o->models = hlb__exec_models_default();
}

void hlb_exec_stats_clear(hlb_exec_stats *s) {
  if (!s) return;
  free(s->log);
  free(s->pu);
  free(s->per_pu);
  memset(s, 0, sizeof *s);
}

double hlb_exec_busy_pct(const hlb_exec_stats *s, unsigned i) {
  if (!s || i >= s->n_pus || !(s->makespan_s > 0)) return 0;
  double p = 100.0 * s->per_pu[i].busy_s / s->makespan_s;
  return p > 100 ? 100 : p;
}

static void set_error_locked(run_ctx *r, int code) {
  if (r->error) return;
  r->error = code;
  snprintf(r->error_text, sizeof r->error_text, "%s", hlb_last_error());
}

static double rel_now(const run_ctx *r) {
  return hlb__now() - r->t0;
}

/* After a failed block: give it back; with `retire` (the driver core counted too many in a
 * row), the PU is given up. */
static void block_failed_locked(driver *d, const hlb_block *blk, int retire) {
  run_ctx *r = d->r;
  snprintf(r->fail_text, sizeof r->fail_text, "%s", hlb_last_error());
  hlb__pu_stats_add_failure(&r->st[d->pu], r->fail_text, retire);
  int rc = hlb_balancer_fail(r->b, d->bpu, blk, rel_now(r));
  if (rc == 0 && retire) rc = hlb_balancer_retire(r->b, d->bpu);
  if (rc) set_error_locked(r, rc);
}

/* Items per second of every PU alive at its last block size: the fitted model where there is
 * one, else what it measured; 0 while nothing is known. */
static double summed_rate_locked(const run_ctx *r, unsigned n_pus) {
  double rate = 0;
  for (unsigned p = 0; p < n_pus; p++) {
    const hlb_exec_pu_stats *st = &r->st[p];
    if (st->retired || st->blocks == 0) continue;
    double x = (double)r->last_block[p];
    const hlb_model *m = hlb_balancer_model(r->b, (unsigned)r->bpu_of[p]);
    double t = m && hlb_model_fitted(m) ? hlb_model_predict(m, x) : NAN;
    if (!(t > 0) && st->busy_s > 0) t = st->busy_s * x / (double)st->items;
    if (t > 0) rate += x / t;
  }
  return rate;
}

static void report_progress_locked(run_ctx *r) {
  if (!r->opt.progress) return;
  hlb_exec_progress p = {.n_items = r->n_items, .elapsed_s = rel_now(r)};
  for (unsigned i = 0; i < r->ex->n; i++) {
    p.items_done += r->st[i].items;
    p.blocks += r->st[i].blocks;
  }
  double rate = summed_rate_locked(r, r->ex->n);
  p.remaining_s = rate > 0 ? (double)(p.n_items - p.items_done) / rate : NAN;
  r->opt.progress(r->opt.progress_user, &p);
}

/* Host cores PU i holds away from the cpu PU: a CPU-type OpenCL device's compute units (the
 * cpu PU was narrowed by as many, Boiński & Czarnul section 4.3 "device fission"), any
 * other device's driver thread (HLB_EXEC_CORES_PER_DEVICE). 0 for a cpu PU. */
static unsigned held_cores(const hlb_executor *ex, unsigned i) {
  const hlb_exec_pu *p = &ex->pu[i];
  if (p->backend == HLB_BACKEND_CPU) return 0;
  return p->backend == HLB_BACKEND_OPENCL && p->cores ? p->cores : HLB_EXEC_CORES_PER_DEVICE;
}

/* The cpu PU that gets a released device's cores: the first one named plain "cpu", whose
 * cores were the machine's minus the devices' (a cpu:N the user sized is left as asked). */
static int automatic_cpu_pu(const hlb_executor *ex) {
  for (unsigned i = 0; i < ex->n; i++)
    if (ex->pu[i].backend == HLB_BACKEND_CPU && !strcmp(ex->pu[i].name, "cpu")) return (int)i;
  return -1;
}

static double items_per_busy_s(const hlb_exec_pu_stats *st) {
  return st->busy_s > 0 ? (double)st->items / st->busy_s : 0;
}

/* The cores the automatic cpu PU runs on now: its own and those released devices gave it. */
static unsigned cpu_cores_now(const run_ctx *r, int cpu) {
  return r->ex->pu[cpu].cores + r->ex->cores_given[cpu];
}

/* Device `dev` did at least as much as the cores it holds would do in the cpu PU over its first
 * blocks: the reason says it was kept, with both figures (it is judged again after every
 * block, and a later release replaces the reason). */
static void note_kept(run_ctx *r, unsigned dev, int cpu, double dev_rate, double core_rate) {
  hlb_executor *ex = r->ex;
  unsigned held = held_cores(ex, dev);
  snprintf(ex->release_reason[dev], sizeof ex->release_reason[dev],
           "kept: %.3g items/s against %.3g items/s for the %u core%s it holds in %s", dev_rate,
           core_rate * held, held, held > 1 ? "s" : "", ex->pu[cpu].name);
}

/* Ends a release's reason when its figures were the device's per-block costs (kernel_unread). */
#define KERNEL_UNREAD_NOTE "; " HLB__KERNEL_UNREAD_MARK
/* What hand_back_tried's release says, which a later run reads back (retake_factor), and what
 * whole_device_faster writes when the cpu PU's figure is a bound. */
#define HANDED_BACK_MARK "its run alone was not faster"
#define AGAINST_A_BOUND "against at most "

/* The cpu PU gets `cores` more cores: released devices' (and a device's given back). */
static void cpu_takes_cores(hlb_executor *ex, int cpu, unsigned cores) {
  ex->cores_given[cpu] += cores;
  ex->ops[cpu]->set_cores(ex->dev[cpu], ex->pu[cpu].cores + ex->cores_given[cpu]);
}

/* Device `dev` released with its figures against the cores it held in cpu PU `cpu` (`at_most`:
 * its rate is a bound, a block in flight), `note` after them; released_core_ratio and
 * explore_device read the figures back, and the note may be cut to the reason's size. */
static void write_release(hlb_executor *ex, unsigned dev, int cpu, int at_most, double dev_rate,
                          double core_rate, const char *note) {
  unsigned held = held_cores(ex, dev);
  char host_name[sizeof ex->pu[cpu].name];
  memcpy(host_name, ex->pu[cpu].name, sizeof host_name);
  if (snprintf(ex->release_reason[dev], sizeof ex->release_reason[dev],
               "released: %s%.3g items/s against %.3g items/s for the %u core%s it held in %s%s",
               at_most ? "at most " : "", dev_rate, core_rate * held, held, held > 1 ? "s" : "",
               host_name, note) < 0)
    ex->release_reason[dev][0] = '\0';
  ex->released[dev] = 1;
}

/* Release device PU `dev` (see should_release): its cores go to the cpu PU from its next block
 * on; the device is retired now, or, with a block in flight, when that block ends (the block
 * is finished, not lost: every item is still done once). */
static void release_locked(run_ctx *r, unsigned dev, int cpu, double dev_rate, double core_rate,
                           int in_flight, int kernel_unread) {
  hlb_executor *ex = r->ex;
  write_release(ex, dev, cpu, in_flight, dev_rate, core_rate,
                kernel_unread ? KERNEL_UNREAD_NOTE : "");
  unsigned cores_before = cpu_cores_now(r, cpu);
  cpu_takes_cores(ex, cpu, held_cores(ex, dev));
  /* The policy plans the cpu PU at its new size from now on, as if its threads scaled with its
   * cores (its correction takes up what they do not); its blocks in flight ran on the cores
   * before. Devices are judged only after the cpu PU's first blocks (should_release), so its
   * balancer index is known; cores after over before is finite and positive: the call cannot
   * fail. */
  (void)hlb_balancer_resize(r->b, (unsigned)r->bpu_of[cpu],
                            (double)cpu_cores_now(r, cpu) / (double)cores_before);
  double now = rel_now(r);
  if (isnan(ex->cores_changed_s[cpu][0])) ex->cores_changed_s[cpu][0] = now;
  ex->cores_changed_s[cpu][1] = now;
  unsigned bpu = (unsigned)r->bpu_of[dev];
  if (in_flight && !r->committing[dev]) {
    /* Its block would end long after the cpu PU could do it: give the items back now, and the
     * device drops its output when the kernel returns (commit). */
    r->abandoned[dev] = 1;
    hlb_balancer_fail(r->b, bpu, &r->block[dev], rel_now(r));
    in_flight = 0;
  }
  if (!in_flight) hlb_balancer_retire(r->b, bpu);
}

/* Devices that an earlier run on this host released for the same codelet (the stored models
 * say so) are left out from the start and their cores given to the cpu PU: the comparison
 * was made, and redoing it costs each run its first blocks. --keep-devices redoes it, as does
 * `hlb models clear`. */
static void release_stored(run_ctx *r, const hlb__exec_models *m) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  /* A cpu PU that gave every core to a device (give_cores_stored) leaves it the run. */
  if (r->opt.keep_weak_devices || cpu < 0 || !ex->ops[cpu]->set_cores || ex->released[cpu]) return;
  for (unsigned i = 0; i < ex->n; i++) {
    const char *why = hlb__exec_models_released(ex, m, i);
    unsigned held = held_cores(ex, i);
    if (!why || !held || ex->released[i] || (int)i == cpu) continue;
    snprintf(ex->release_reason[i], sizeof ex->release_reason[i],
             "released before the run: an earlier run on this host %s", why);
    ex->released[i] = 1;
    cpu_takes_cores(ex, cpu, held);
  }
}

/* 1 when device PU i computes on this machine's cores (a CPU-type OpenCL device's compute
 * units), 0 when it holds only a driver thread (a GPU). */
static int computes_on_cores(const hlb_executor *ex, unsigned i) {
  return ex->pu[i].backend == HLB_BACKEND_OPENCL && ex->pu[i].cores > 0;
}

/* The items per second of a device computing on the cores, having done `items` over `busy`
 * seconds: it is judged on what it did, its per-block costs being costs of using those cores
 * this way (measured, PoCL's spmv and k-means with an allowance for them were kept, and ran
 * 1.2-1.4x slower than with the core in the cpu PU). */
static double judged_rate(size_t items, double busy) {
  return busy > 0 ? (double)items / busy : INFINITY;
}

/* 1 when device PU `dev`, with stats `d`, has done enough to be compared with the cores it
 * holds: HLB_EXEC_RELEASE_BLOCKS blocks, and for one computing on the cores
 * HLB_EXEC_CORE_DEVICE_JUDGE_S of busy time (its launches must not decide). */
static int device_judged_enough(const hlb_executor *ex, unsigned dev, const hlb_exec_pu_stats *d) {
  return d->blocks >= HLB_EXEC_RELEASE_BLOCKS &&
         (!computes_on_cores(ex, dev) || d->busy_s >= HLB_EXEC_CORE_DEVICE_JUDGE_S);
}

/* 1 when devices holding cores of the automatic cpu PU are judged in this run (should_release). */
static int judges_devices(const run_ctx *r) {
  int cpu = automatic_cpu_pu(r->ex);
  return !r->opt.keep_weak_devices && cpu >= 0 && r->ex->ops[cpu]->set_cores && r->prepared[cpu];
}

/* Keep PU p's finished block (its sample s) among its newest (run_ctx.recent). */
static void remember_block_locked(run_ctx *r, unsigned p, unsigned bpu, const hlb_sample *s) {
  r->recent[p][r->n_recent[p]++ % HLB__JUDGE_RECENT] = (hlb_decision){
      .pu = bpu,
      .begin = s->block.begin,
      .count = s->block.count,
      .compute_s = s->compute_s,
      .transfer_s = s->transfer_s,
      .measured_s = s->compute_s + s->transfer_s,
      .end_s = s->end_s,
      .outcome = HLB_OUTCOME_DONE,
  };
}

/* How many of PU p's newest finished blocks its ring holds. */
static size_t recent_count(const run_ctx *r, unsigned p) {
  return r->n_recent[p] < HLB__JUDGE_RECENT ? r->n_recent[p] : HLB__JUDGE_RECENT;
}

static size_t copy_recent(const run_ctx *r, unsigned p, hlb_decision *out) {
  size_t n = recent_count(r, p);
  memcpy(out, r->recent[p], n * sizeof *out);
  return n;
}

/* PU p's newest finished blocks as copy_recent, less its first block of the run while the ring
 * still holds it and later ones: that block pays the run's warm-up (the cpu backend's thread
 * team started on every core, pages touched first). On a 16-core machine the cpu PU's first
 * spmv block took 1.96 ms for 667 rows where its next took 0.03 ms for 2668; PoCL's first
 * blocks, handed the rows right after it, were compared with that block alone and judged 34x
 * faster per core, so later runs gave PoCL all 14 cores (hlb run spmv --pus all, an H100
 * machine, 2026-11-26). */
static size_t copy_recent_warm(const run_ctx *r, unsigned p, hlb_decision *out) {
  if (r->n_recent[p] < 2 || r->n_recent[p] > HLB__JUDGE_RECENT) return copy_recent(r, p, out);
  /* The ring has not wrapped: the first block is entry 0. */
  size_t n = r->n_recent[p] - 1;
  memcpy(out, r->recent[p] + 1, n * sizeof *out);
  return n;
}

/* PU p's block in flight as a pending log entry, compute_s as given. */
static hlb_decision in_flight_entry(const run_ctx *r, unsigned p, double compute_s) {
  return (hlb_decision){.pu = (unsigned)r->bpu_of[p],
                        .begin = r->block[p].begin,
                        .count = r->block[p].count,
                        .compute_s = compute_s,
                        .transfer_s = 0,
                        .measured_s = NAN,
                        .end_s = NAN,
                        .outcome = HLB_OUTCOME_PENDING};
}

/* What the judge reads (exec/judge.h): the newest finished blocks of the cpu PU and of device
 * `dev`, the cpu PU's block in flight as pending with the time it has run so far, and with
 * with_in_flight the device's block in flight as pending. At most HLB__JUDGE_WINDOW entries. */
static size_t judge_window(const run_ctx *r, int cpu, unsigned dev, int with_in_flight,
                           hlb_decision out[HLB__JUDGE_WINDOW]) {
  size_t n = copy_recent_warm(r, (unsigned)cpu, out);
  if (r->in_block[cpu])
    out[n++] = in_flight_entry(r, (unsigned)cpu, rel_now(r) - r->block_start[cpu]);
  n += copy_recent(r, dev, out + n);
  if (with_in_flight && r->in_block[dev] && n < HLB__JUDGE_WINDOW)
    out[n++] = in_flight_entry(r, dev, NAN);
  return n;
}

/* The cpu PU's items per second per core on items like the device's (exec/judge.h). */
static double cpu_rate_near(const run_ctx *r, int cpu, unsigned dev, int with_in_flight) {
  hlb_decision window[HLB__JUDGE_WINDOW];
  size_t n = judge_window(r, cpu, dev, with_in_flight, window);
  unsigned cores = cpu_cores_now(r, cpu);
  double near = hlb__judge_cpu_rate_near(window, n, (unsigned)r->bpu_of[cpu],
                                         (unsigned)r->bpu_of[dev], cores, with_in_flight);
  return near > 0 ? near : items_per_busy_s(&r->st[cpu]) / cores;
}

/* Device core-seconds per cpu core-second on the same items, per block costs left out
 * (exec/judge.h); NAN when its blocks do not tell. */
static double device_core_ratio(const run_ctx *r, int cpu, unsigned dev, int *kernel_read) {
  hlb_decision window[HLB__JUDGE_WINDOW];
  size_t n = judge_window(r, cpu, dev, 0, window);
  return hlb__judge_core_ratio(window, n, (unsigned)r->bpu_of[cpu], (unsigned)r->bpu_of[dev],
                               cpu_cores_now(r, cpu), held_cores(r->ex, dev), kernel_read);
}

/* 1 when a device computing on the cores, with stats `d`, is judged on figures that hold its
 * per-block costs (kernel_read 0: the judge's line went through the origin, or its items over
 * its busy time) and its blocks averaged under HLB_EXEC_LAUNCH_MAX_S, short enough for
 * launches and copies to be most of them: what it did then says little of its kernel, and less
 * of the device whole on every core. PoCL beside the cpu PU on spmv, on this 2-core machine:
 * blocks of 1-46 rows, 0.07-0.11 ms each whatever their rows, read 0.07-0.25x a core, and whole
 * on both cores it takes 0.8x the cpu PU's time. */
static int kernel_unread(const hlb_exec_pu_stats *d, int kernel_read) {
  return !kernel_read && d->blocks > 0 && d->busy_s < HLB_EXEC_LAUNCH_MAX_S * (double)d->blocks;
}

/* should_release for a device that holds only a driver thread (a GPU): judged on its best
 * block (hlb__judge_best_rate, each block less HLB_EXEC_LAUNCH_MAX_S) and, with a block in
 * flight, on the better of that and the block's items over its time so far (the most it can
 * reach): released only when even that is HLB_EXEC_RELEASE_CLEAR_FACTOR times below the rate
 * of the core it holds (hlb__judge_release_driver says why). Never before it
 * finished HLB_EXEC_RELEASE_BLOCKS blocks: its first ones may carry a one-time warm-up of any
 * length (a library's handle, kernels loaded lazily per shape: 43 and 61 ms for an H100's first
 * two matmul blocks), and the core it holds only drives it, so a weak one costs little
 * meanwhile. Its items over its busy time, warm-up included, released an H100 that does
 * 77 000 matmul rows per second against a core's 123. */
static int driver_device_weak(const run_ctx *r, unsigned dev, int cpu, unsigned held,
                              double *dev_rate, double *core_rate) {
  if (r->st[dev].blocks < HLB_EXEC_RELEASE_BLOCKS) return 0;
  /* The ring as it lies: the best of its blocks does not depend on their order. */
  double best = hlb__judge_best_rate(r->recent[dev], recent_count(r, dev), (unsigned)r->bpu_of[dev],
                                     HLB_EXEC_LAUNCH_MAX_S);
  if (r->in_block[dev]) {
    double running = rel_now(r) - r->block_start[dev];
    double so_far = running > 0 ? (double)r->block_count[dev] / running : INFINITY;
    if (so_far > best) best = so_far;
  }
  *dev_rate = best;
  *core_rate = cpu_rate_near(r, cpu, dev, r->in_block[dev]);
  return hlb__judge_release_driver(best, *core_rate, held);
}

/* A device that holds host cores is kept only while it adds more items per second than those
 * cores add to the cpu PU (both measured in this run over their finished blocks, emulated
 * throttling included). A device that only holds a driver thread is judged by
 * driver_device_weak. One computing on the cores is judged once it finished
 * HLB_EXEC_RELEASE_BLOCKS blocks and kept them busy HLB_EXEC_CORE_DEVICE_JUDGE_S, kernel against
 * kernel (device_core_ratio); after its first block if that block alone, lasting
 * HLB_EXEC_FIRST_BLOCK_MAX_S or more, shows it HLB_EXEC_RELEASE_CLEAR_FACTOR times slower; or
 * in flight, on the block in flight alone, when that shows it as hopeless. (Its first block is
 * never judged in flight: it may carry a one-time warm-up.) Returns 1 and fills the rates when
 * `dev` should go; `cpu` is the automatic cpu PU. */
static int should_release(const run_ctx *r, unsigned dev, int cpu, double *dev_rate,
                          double *core_rate, int *unread) {
  const hlb_executor *ex = r->ex;
  unsigned held = held_cores(ex, dev);
  if (!judges_devices(r) || !held || !r->prepared[dev] || ex->released[dev]) return 0;
  const hlb_exec_pu_stats *d = &r->st[dev], *host = &r->st[cpu];
  if (host->blocks < HLB_EXEC_RELEASE_BLOCKS || host->retired || d->retired) return 0;
  if (d->blocks < 1 && !r->in_block[dev]) return 0; /* nothing run yet */
  if (!computes_on_cores(ex, dev))                  /* never before its second block */
    return driver_device_weak(r, dev, cpu, held, dev_rate, core_rate);
  *core_rate = cpu_rate_near(r, cpu, dev, r->in_block[dev]);
  if (r->in_block[dev]) {
    /* Stopped in flight only when hopeless, and on the block in flight alone once it has run
     * HLB_EXEC_CORE_DEVICE_JUDGE_S: its earlier blocks carry their launches and its first one
     * its warm-up (PoCL's first spmv block: 3-4 ms on a quiet machine, over 10 ms on a loaded
     * one, which released it in flight). Its first block only once it has run
     * HLB_EXEC_FIRST_BLOCK_IN_FLIGHT_S, longer than such a warm-up. */
    double running = rel_now(r) - r->block_start[dev];
    double needed = d->blocks < 1 ? HLB_EXEC_FIRST_BLOCK_IN_FLIGHT_S : HLB_EXEC_CORE_DEVICE_JUDGE_S;
    *dev_rate = (double)r->block_count[dev] / running;
    return running >= needed && *dev_rate * HLB_EXEC_RELEASE_CLEAR_FACTOR < *core_rate * held;
  }
  *dev_rate = judged_rate(d->items, d->busy_s);
  /* On its first block alone only when that block is long enough to hold a first block's
   * one-time work several times over. */
  if (d->blocks < HLB_EXEC_RELEASE_BLOCKS)
    return d->busy_s >= HLB_EXEC_FIRST_BLOCK_MAX_S &&
           *dev_rate * HLB_EXEC_RELEASE_CLEAR_FACTOR < *core_rate * held;
  if (!device_judged_enough(ex, dev, d)) return 0;
  /* Its kernel against the core's on the same items, per block costs left out: kept when it
   * is faster per core (and then given the cores in later runs: judge_takeover). */
  int kernel_read = 0;
  double ratio = device_core_ratio(r, cpu, dev, &kernel_read);
  if (isfinite(ratio) && ratio > 0) *dev_rate = *core_rate * held / ratio;
  if (!(*core_rate > 0 && *dev_rate < *core_rate * held)) return 0;
  *unread = kernel_unread(d, kernel_read);        /* a line's ratio is finite and positive */
  if (!isfinite(ratio) || !(ratio > 0)) return 1; /* judged on its items over its busy time */
  /* Slower per core, but perhaps not by enough, or not yet known well enough. */
  return hlb__judge_release_on_ratio(ratio, d->busy_s);
}

/* Stored blocks of the cpu PU on every core that tell its rate there: its first block on cores
 * a device gave back (hand_back_tried) runs right after the device had them, and on this 2-core
 * VM k-means' such blocks of 10^5 points took 5.5-9.2 ms where the next took 0.6-0.7. (On its
 * own cores every mixed run stores many.) */
#define CPU_ALONE_MIN_BLOCKS 2

/* The automatic cpu PU's items per second alone on `cores` cores, from the stored samples (the
 * robust line through them: hlb__exec_models_rate_on). Without a run of it alone on them all yet
 * (after a device's exploration), its rate on its own cores scaled to all of them, at most what
 * it could do (*bound 1): a device faster than that is faster, one that is not waits for the
 * cpu PU's own run alone. 0 when nothing is stored. */
static double cpu_rate_alone(const run_ctx *r, const hlb__exec_models *m, int cpu, unsigned cores,
                             int *bound) {
  double rate = hlb__exec_models_rate_on(r->ex, m, (unsigned)cpu, cores, CPU_ALONE_MIN_BLOCKS);
  unsigned own = r->ex->pu[cpu].cores;
  *bound = !(rate > 0) && own > 0 && own < cores;
  if (*bound) rate = hlb__exec_models_rate_on(r->ex, m, (unsigned)cpu, own, 1) * cores / own;
  return rate;
}

/* ---- A trial cut short -----------------------------------------------------------------
 * A device given every core to try it alone (give_cores_stored) ran the whole run alone:
 * PoCL's blackscholes took 0.57 s where the cpu PU alone takes 0.13. Now, for a released device
 * (but one released at HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO or more over items whose costs vary:
 * include/hlb/exec.h says why), the cpu PU takes part parked: its driver waits while the device
 * runs its first blocks, each at most
 * HLB_EXEC_TRIAL_GROW times the largest it finished (hlb_balancer_cap), and then either the
 * cpu PU is retired and the device runs the rest alone, as before, or the device is released
 * and the cpu PU takes every core for the rest (include/hlb/exec.h, HLB_EXEC_TRIAL_CUT_FACTOR).
 * Either way every item is done once: the balancer hands out what the parked PU never took. */

/* Before the run: the trial of a device given the cores for a release is judged against the cpu
 * PU's stored rate alone on them (or its rate on its own cores scaled to them: at most what it
 * does); without one, the trial runs whole. */
static void plan_trial(run_ctx *r, const hlb__exec_models *m) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (!r->trial_judged || cpu < 0 || !ex->released[cpu] || !ex->ops[cpu]->set_cores ||
      r->opt.keep_weak_devices)
    return;
  for (unsigned i = 0; i < ex->n; i++) {
    if (!ex->on_trial[i] || ex->released[i] || (int)i == cpu) continue;
    int bound = 0;
    double rate = cpu_rate_alone(r, m, cpu, ex->pu[i].cores, &bound);
    if (rate > 0) r->trial_dev = (int)i, r->trial_cpu_rate = rate;
    return;
  }
}

/* The cpu PU of a judged trial takes part parked, last in the balancer's numbering (a run it
 * took no part in stores its models without it: hlb_executor_run). When the device could not
 * load the kernel, or the cpu PU cannot, nothing is judged and the run goes on as before. */
static void park_cpu(run_ctx *r, unsigned *bidx, unsigned *nb) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (!r->prepared[r->trial_dev] || !ex->ops[cpu]->has_kernel(r->cl) ||
      hlb__session_prepare(ex, (unsigned)cpu, r->cl, r->shared[cpu], &r->kernel[cpu],
                           &r->st[cpu]) != 0) {
    hlb_clear_error();
    r->trial_dev = -1;
    return;
  }
  for (unsigned j = 0; j < *nb; j++)
    if ((int)bidx[j] == r->trial_dev) r->trial_bpu = j;
  r->prepared[cpu] = 1;
  r->parked_bpu = *nb;
  bidx[(*nb)++] = (unsigned)cpu;
  r->parked_cpu = cpu;
  r->parking = 1;
}

enum { TRIAL_GO_ON, TRIAL_KEEP, TRIAL_CUT };

/* What the trial device's finished blocks say: cut when even its kernel's rate
 * (hlb__judge_trial_rate, into *rate) is HLB_EXEC_TRIAL_CUT_FACTOR times below the cpu PU's
 * once its blocks kept it busy HLB_EXEC_CORE_DEVICE_JUDGE_S, or its first block alone, lasting
 * HLB_EXEC_FIRST_BLOCK_MAX_S, HLB_EXEC_RELEASE_CLEAR_FACTOR times (it may carry a warm-up, as
 * in a mixed run: should_release); keep then; else go on. */
static int verdict_of(const run_ctx *r, double rate, size_t blocks, double busy_s) {
  if (blocks == 0) return TRIAL_GO_ON;
  if (blocks < HLB_EXEC_RELEASE_BLOCKS)
    return busy_s >= HLB_EXEC_FIRST_BLOCK_MAX_S &&
                   rate * HLB_EXEC_RELEASE_CLEAR_FACTOR < r->trial_cpu_rate
               ? TRIAL_CUT
               : TRIAL_GO_ON;
  if (busy_s < HLB_EXEC_CORE_DEVICE_JUDGE_S) return TRIAL_GO_ON;
  return rate * HLB_EXEC_TRIAL_CUT_FACTOR < r->trial_cpu_rate ? TRIAL_CUT : TRIAL_KEEP;
}

/* verdict_of the device's finished blocks, their rate into *rate. */
static int trial_verdict(const run_ctx *r, double *rate) {
  unsigned dev = (unsigned)r->trial_dev;
  *rate = hlb__judge_trial_rate(r->recent[dev], recent_count(r, dev), r->trial_bpu);
  return verdict_of(r, *rate, r->st[dev].blocks, r->st[dev].busy_s);
}

/* The verdict the trial device's finished blocks and its block in flight would give if that
 * block ended now, `ran` seconds after it started: a bound on the verdict it will get, since
 * the block can only take longer, which lowers the rate (more seconds for the same items, and a
 * steeper line through the sizes). Only a cut is certain this early; 0 otherwise. */
static int cut_certain(const run_ctx *r, double ran, double *rate) {
  unsigned dev = (unsigned)r->trial_dev;
  hlb_decision log[HLB__JUDGE_RECENT + 1];
  size_t n = copy_recent(r, dev, log);
  log[n] = in_flight_entry(r, dev, ran);
  log[n++].outcome = HLB_OUTCOME_DONE; /* as if it had ended now */
  *rate = hlb__judge_trial_rate(log, n, r->trial_bpu);
  return verdict_of(r, *rate, r->st[dev].blocks + 1, r->st[dev].busy_s + ran) == TRIAL_CUT;
}

/* The device runs the rest alone: the parked cpu PU is retired (it took nothing). */
static void keep_trial_locked(run_ctx *r) {
  r->parking = 0;
  int rc = hlb_balancer_retire(r->b, r->parked_bpu);
  if (rc == 0) rc = hlb_balancer_cap(r->b, r->trial_bpu, 0);
  if (rc == 0) rc = hlb_balancer_floor(r->b, r->trial_bpu, r->opt.min_block);
  if (rc) set_error_locked(r, rc);
  pthread_cond_broadcast(&r->cv);
}

/* The device is released with both figures, and the cpu PU takes every core (the device stays
 * open on them, idle, until the next run opens it on its own again: hand_back_tried). Called
 * with no block of the device in flight. */
static void cut_trial_locked(run_ctx *r, double rate, const char *how) {
  hlb_executor *ex = r->ex;
  unsigned dev = (unsigned)r->trial_dev, cpu = (unsigned)r->parked_cpu;
  snprintf(ex->release_reason[dev], sizeof ex->release_reason[dev],
           "released: alone on %u cores %.3g items/s against %.3g for %s alone; trial cut %s",
           ex->pu[dev].cores, rate, r->trial_cpu_rate, ex->pu[cpu].name, how);
  ex->released[dev] = 1;
  unsigned cores_before = cpu_cores_now(r, (int)cpu);
  cpu_takes_cores(ex, (int)cpu, ex->on_trial[dev]);
  int rc = hlb_balancer_retire(r->b, r->trial_bpu);
  /* Its prior was read on its own cores; cores after over before is finite and positive. */
  if (rc == 0)
    rc = hlb_balancer_resize(r->b, r->parked_bpu,
                             (double)cpu_cores_now(r, (int)cpu) / (double)cores_before);
  if (rc) set_error_locked(r, rc);
  ex->cores_changed_s[cpu][0] = ex->cores_changed_s[cpu][1] = rel_now(r);
  ex->released[cpu] = 0;
  ex->release_reason[cpu][0] = '\0';
  r->parking = 0;
  pthread_cond_broadcast(&r->cv);
}

/* The parked cpu PU's look at the trial device's block in flight (mu held): when its finished
 * blocks and the time that block has run already make the cut certain (cut_certain), the block
 * is given back to the pool, dropped when its kernel returns (local_commit), and the trial is cut
 * now; the cpu PU no longer waits for a block whose rate cannot change the verdict. In fresh
 * model directories PoCL's k-means trial ran blocks of 1 to 32768 points in 0.1-0.5 ms each, then
 * one of 65536 that took 70-94 ms (a one-time cost in PoCL at that size: 4 runs of 4), while the
 * cpu PU, parked, did nothing: the first run took 0.16-0.20 s against the later runs' 0.08 s. */
static void watch_trial_locked(run_ctx *r) {
  int dev = r->trial_dev;
  if (!r->parking || dev < 0 || !r->in_block[dev] || r->committing[dev] || r->abandoned[dev])
    return;
  double rate = 0, now = rel_now(r);
  if (!cut_certain(r, now - r->block_start[dev], &rate)) return;
  r->abandoned[dev] = 1;
  int rc = hlb_balancer_fail(r->b, r->trial_bpu, &r->block[dev], now);
  if (rc) {
    set_error_locked(r, rc);
    return;
  }
  cut_trial_locked(r, rate, "while its block ran");
}

/* Judge the trial (mu held) after the device's block, forced_by NULL: cut, kept, or, not
 * judged enough yet, its next block capped at HLB_EXEC_TRIAL_GROW times its largest. Or when
 * the trial cannot wait (forced_by says why: the device left the run, its failures retired
 * it, or waits on the parked cpu PU with nothing in flight, a policy holding a share for it):
 * judged on what it did, and cut when not judged enough, so that the cpu PU goes on. 1 when
 * the trial was cut (the device stops). */
static int judge_trial_locked(run_ctx *r, const char *forced_by) {
  double rate = 0;
  int verdict = hlb_balancer_finished(r->b) ? TRIAL_KEEP : trial_verdict(r, &rate);
  if (verdict == TRIAL_KEEP) {
    keep_trial_locked(r);
    return 0;
  }
  if (verdict == TRIAL_CUT || forced_by) {
    cut_trial_locked(r, rate, forced_by ? forced_by : "after its first blocks");
    return 1;
  }
  size_t largest = 0, n = recent_count(r, (unsigned)r->trial_dev);
  for (size_t k = 0; k < n; k++)
    if (r->recent[r->trial_dev][k].count > largest) largest = r->recent[r->trial_dev][k].count;
  int rc = hlb_balancer_cap(r->b, r->trial_bpu, HLB_EXEC_TRIAL_GROW * largest);
  if (rc == 0) rc = hlb_balancer_floor(r->b, r->trial_bpu, HLB_EXEC_TRIAL_MIN_GROW * largest);
  if (rc) set_error_locked(r, rc);
  return 0;
}

/* After d's block: judge d if it is a device (1: d stops), or, if d is the cpu PU, the devices
 * whose block is in flight. */
static int release_weak_locked(driver *d) {
  run_ctx *r = d->r;
  int cpu = automatic_cpu_pu(r->ex);
  double dev_rate = 0, core_rate = 0;
  int unread = 0;
  if (r->parking && (int)d->pu == r->trial_dev) return judge_trial_locked(r, NULL);
  if (r->ex->released[d->pu]) { /* released while its block ran: retire it now */
    hlb_balancer_retire(r->b, d->bpu);
    return 1;
  }
  if ((int)d->pu != cpu) {
    if (should_release(r, d->pu, cpu, &dev_rate, &core_rate, &unread)) {
      release_locked(r, d->pu, cpu, dev_rate, core_rate, 0, unread);
      return 1;
    }
    /* Judged on its first blocks and not released: say so once. */
    if (core_rate > 0 && isfinite(dev_rate) && !r->ex->release_reason[d->pu][0] &&
        device_judged_enough(r->ex, d->pu, &r->st[d->pu]))
      note_kept(r, d->pu, cpu, dev_rate, core_rate);
    return 0;
  }
  for (unsigned i = 0; i < r->ex->n; i++)
    if ((int)i != cpu && r->in_block[i] &&
        should_release(r, i, cpu, &dev_rate, &core_rate, &unread))
      release_locked(r, i, cpu, dev_rate, core_rate, 1, 0);
  return 0;
}

/* 1 when the stored samples of this host say that device i alone on `cores` cores (a run of
 * it alone) did `factor` times the items per second of the cpu PU alone on as
 * many (a run whose device was released, or of the cpu PU alone), with the two figures in `why`
 * (written whenever both are known, for a release too: hand_back_tried). Whole runs
 * against whole runs: on this machine PoCL narrowed to one compute unit did 0.4-0.7x the cpu
 * kernel's rows per core, but on both it beat the cpu kernel on both by 1.15-1.2x (spmv,
 * mandelbrot), which no comparison within a mixed run can see. A device released before
 * (its stored release) is compared too: the release said it was slower on one core. */
static int whole_device_faster(const run_ctx *r, const hlb__exec_models *m, int cpu, unsigned dev,
                               unsigned cores, double factor, char *why, size_t cap) {
  double dev_rate = hlb__exec_models_rate_on(r->ex, m, dev, cores, 1);
  int bound = 0;
  double cpu_rate = cpu_rate_alone(r, m, cpu, cores, &bound);
  if (!(dev_rate > 0 && cpu_rate > 0)) return 0;
  snprintf(why, cap, "alone on %u cores %.3g %s%.3g items/s", cores, dev_rate,
           bound ? AGAINST_A_BOUND : "against ", cpu_rate);
  return dev_rate >= factor * cpu_rate;
}

/* The device's items per second over those of the cores it held, from a release's reason
 * (release_locked writes it: the judge's comparison, kernel against kernel on neighbouring
 * items; the stored samples cannot redo it, the cpu PU's blocks after the release ran on more
 * cores than their key says); NAN for a release in flight ("at most": hopeless) or another
 * text. */
static double released_core_ratio(const char *reason) {
  double dev_rate = 0, cores_rate = 0;
  if (!reason ||
      sscanf(reason, "released: %lf items/s against %lf items/s", &dev_rate, &cores_rate) != 2)
    return NAN;
  return dev_rate > 0 && cores_rate > 0 ? dev_rate / cores_rate : NAN;
}

/* 1 when the item cost map an earlier run learnt for this run's items (hlb__exec_item_cost)
 * says they cost alike (it spreads by under HLB_ITEM_COST_FLAT), or there is none (as a policy
 * without an item cost density takes them). */
static int items_cost_alike(const run_ctx *r, const hlb__exec_models *m) {
  unsigned n = 0;
  int trusted = 0;
  const double *slice = hlb__exec_item_cost(m, r->n_items, &n, &trusted);
  return hlb_item_cost_spread(slice, n) < HLB_ITEM_COST_FLAT;
}

/* 1 when released device `dev` should run alone on all `cores` once (HLB_EXEC_TRIAL_CUT_FACTOR
 * says why every release is tried, and how a trial is cut short), with why in `why`: no stored
 * run of it alone on them, and the outcome of this run is kept (stored with the models, or
 * remembered by this executor). Once its run alone is stored, whole_device_faster decides. */
static int explore_device(run_ctx *r, const hlb__exec_models *m, int cpu, unsigned dev,
                          unsigned cores, char *why, size_t cap) {
  const hlb_executor *ex = r->ex;
  int kept = m->mode == HLB_MODELS_ON || m->from == HLB_MODELS_PREVIOUS_RUN;
  unsigned held = held_cores(ex, dev);
  if (!kept || !held || hlb__exec_models_rate_on(ex, m, dev, cores, 1) > 0) return 0;
  const char *reason = hlb__exec_models_released(ex, m, dev);
  double ratio = released_core_ratio(reason);
  int unread = reason && strstr(reason, HLB__KERNEL_UNREAD_MARK);
  /* Judged as it goes, and cut when it loses, but for a release close to a core's rate over
   * items that vary (HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO says why). */
  r->trial_judged = !(ratio >= HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO) || items_cost_alike(r, m);
  if (isfinite(ratio))
    snprintf(why, cap, "once alone (%.2fx a core of %s on %u%s)", ratio, ex->pu[cpu].name, held,
             unread ? ", its kernel not read" : "");
  else
    snprintf(why, cap, "once alone (released in flight on %u)", held);
  return 1;
}

/* A device this executor gave the cpu PU's cores to try alone (explore_device), once its run
 * alone is stored: it keeps them when it beat the cpu PU (whole_device_faster); else it is
 * opened again on the cores it had and released, and the cpu PU gets them all back. What a new
 * process does from the stored files (release_stored, give_cores_stored), for the passes of one
 * executor: k-means' iterations, spmv's power steps. */
static void hand_back_tried(run_ctx *r, const hlb__exec_models *m) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (cpu < 0) return;
  for (unsigned i = 0; i < ex->n; i++)
    if (ex->on_trial[i] && ex->released[i] && (int)i != cpu) {
      /* A trial cut short (cut_trial_locked): the cpu PU has every core already; the device,
       * released, is opened again on those it had (still open on all of them if that fails:
       * released, it runs nothing). */
      if (hlb__session_reopen(ex, i, ex->on_trial[i]) != 0) hlb_clear_error();
      ex->on_trial[i] = 0;
      ex->release_unstored[i] = 1;
    }
  if (!ex->released[cpu]) return;
  for (unsigned i = 0; i < ex->n; i++) {
    unsigned before = ex->on_trial[i], cores = ex->pu[i].cores;
    /* A trial that stored nothing (its run failed) is tried again. */
    if (!before || (int)i == cpu || !(hlb__exec_models_rate_on(ex, m, i, cores, 1) > 0)) continue;
    char alone[200] = "";
    ex->on_trial[i] = 0;
    /* Reasons may be cut to their 160 bytes (the figures come first). */
    if (whole_device_faster(r, m, cpu, i, cores, HLB_EXEC_TAKE_CORES_FACTOR, alone, sizeof alone)) {
      if (snprintf(ex->release_reason[cpu], sizeof ex->release_reason[cpu],
                   "released before the run: %s holds its cores (%u), faster: %s", ex->pu[i].name,
                   cores, alone) < 0)
        ex->release_reason[cpu][0] = '\0';
      return;
    }
    if (hlb__session_reopen(ex, i, before) != 0) {
      hlb_clear_error();
      if (ex->dev[i]) return; /* still open on every core: it keeps them */
    }
    ex->released[i] = 1;
    ex->release_unstored[i] = 1;
    ex->handed_back[i] = 1;
    if (alone[0] ? snprintf(ex->release_reason[i], sizeof ex->release_reason[i],
                            "released: " HANDED_BACK_MARK ", %s in %s", alone, ex->pu[cpu].name) < 0
                 : snprintf(ex->release_reason[i], sizeof ex->release_reason[i],
                            "released: its run alone could not be compared with %s's",
                            ex->pu[cpu].name) < 0)
      ex->release_reason[i][0] = '\0';
    ex->released[cpu] = 0;
    ex->release_reason[cpu][0] = '\0';
    cpu_takes_cores(ex, cpu, before);
    return;
  }
}

/* What a device's stored runs alone must show over the cpu PU's to be given its cores:
 * HLB_EXEC_RETAKE_FACTOR for one released after its own run alone on them lost against the cpu
 * PU's measured rate (hand_back_tried, stored), HLB_EXEC_TAKE_CORES_FACTOR otherwise. A
 * hand-back against the cpu PU's rate on its own cores scaled to all of them ("at most": no run
 * of it alone on them yet) compared nothing measured: PoCL's spmv was handed back against "at
 * most 6.54e+08" rows/s, 20x what the cpu PU does, and the next run's measured rate decides. */
static double retake_factor(const hlb_executor *ex, unsigned dev) {
  const char *why = ex->release_reason[dev];
  return ex->released[dev] && strstr(why, HANDED_BACK_MARK) && !strstr(why, AGAINST_A_BOUND)
             ? HLB_EXEC_RETAKE_FACTOR
             : HLB_EXEC_TAKE_CORES_FACTOR;
}

/* The other way round: a device that an earlier run found faster per core than the cpu PU
 * (judge_takeover, stored with the models) is opened again on the cpu PU's cores as well as
 * its own, to try, and the cpu PU is left out; so is one whose stored run alone on them beat
 * the cpu PU's (whole_device_faster), which then decides over a stored takeover. Decided before
 * the run, because a device's compute units are fixed when it is opened (a sub-device and a
 * program built for it). */
static void give_cores_stored(run_ctx *r, const hlb__exec_models *m) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (r->opt.keep_weak_devices || cpu < 0 || ex->released[cpu]) return;
  for (unsigned i = 0; i < ex->n; i++) {
    if ((int)i == cpu || !computes_on_cores(ex, i) || ex->handed_back[i]) continue;
    /* Every core the two hold: a device released before the run gave its own to the cpu PU. */
    unsigned before = ex->pu[i].cores,
             cores = cpu_cores_now(r, cpu) + (ex->released[i] ? 0 : before);
    char alone[200];
    const char *why = hlb__exec_models_takes_cores(ex, m, i);
    /* A takeover judged kernel against kernel in a mixed run is a guess about the device whole
     * on every core (the comparison on one core each does not carry over: k-means' PoCL read
     * 1.2-1.3x a core per core beside the cpu PU in 1 of 12-18 first runs, and alone on both
     * cores took 2.5x the cpu PU's time). Once its run alone on them is stored, that run
     * decides (whole_device_faster), and before, the takeover is a try that hand_back_tried
     * undoes when the run alone is not faster. Taken as stored, it kept k-means on PoCL in
     * every later run: 0.25-0.46 s against 0.09 s. */
    int alone_known = hlb__exec_models_rate_on(ex, m, i, cores, 1) > 0;
    if (why && alone_known) why = NULL;
    int explore = why != NULL, recheck = 0;
    /* Faster on the stored runs alone: checked again after this run by hand_back_tried (the
     * device's rate alone may rest on the few small blocks of a trial cut short). */
    if (!why && whole_device_faster(r, m, cpu, i, cores, retake_factor(ex, i), alone, sizeof alone))
      why = alone, recheck = 1;
    else if (!why && ex->released[i])
      why = (explore = explore_device(r, m, cpu, i, cores, alone, sizeof alone)) ? alone : NULL;
    /* A stored takeover does not overrule a stored release; the runs alone, or a try, do. */
    if (!why || (ex->released[i] && why != alone)) continue;
    if (hlb__session_reopen(ex, i, cores) != 0) {
      /* The device as it was (released or not), the cpu PU kept: the run goes on as if nothing
       * was stored. */
      if (ex->dev[i]) {
        hlb_clear_error();
        continue;
      }
      ex->released[i] = 1; /* it could not even be opened again: leave it out */
      snprintf(ex->release_reason[i], sizeof ex->release_reason[i], "left out: %s",
               hlb_last_error());
      hlb_clear_error();
      continue;
    }
    if (ex->released[i]) {
      /* Released for being slower on its one core (stored, or by an earlier run of this
       * executor), but faster alone on all of them, or to be tried alone: the cores go to it
       * after all. */
      ex->released[i] = 0;
      ex->cores_given[cpu] -= before; /* what it held before it was opened again */
      ex->release_reason[i][0] = '\0';
    }
    if (explore || recheck) ex->on_trial[i] = before;
    /* The reason may be cut to its 160 bytes; the stored decision keeps it whole. */
    if (snprintf(ex->release_reason[cpu], sizeof ex->release_reason[cpu],
                 "released before the run: its %u core%s went to %s (%u now), %s%s",
                 cpu_cores_now(r, cpu), cpu_cores_now(r, cpu) > 1 ? "s" : "", ex->pu[i].name,
                 ex->pu[i].cores, explore ? "to try: " : "faster: ", why) < 0)
      ex->release_reason[cpu][0] = '\0';
    ex->released[cpu] = 1;
    return; /* one device takes the cores */
  }
}

/* After a run in which a device computing on the host's cores and the automatic cpu PU both
 * worked to the end: when the device did HLB_EXEC_TAKE_CORES_FACTOR times the cpu PU's items
 * per second per core or more, say so (stored with the models: give_cores_stored acts on it
 * in later runs) and add it to the device's reason. Both rates are over the whole run's busy
 * time, on the cores each held. (A figure through the origin, its per-block costs in it, only
 * overstates the device's time: faster so, it is faster.) */
static void judge_takeover(run_ctx *r) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (!judges_devices(r) || ex->released[cpu]) return;
  const hlb_exec_pu_stats *host = &r->st[cpu];
  if (host->retired || host->blocks < HLB_EXEC_RELEASE_BLOCKS) return;
  for (unsigned i = 0; i < ex->n; i++) {
    const hlb_exec_pu_stats *d = &r->st[i];
    if ((int)i == cpu || !r->prepared[i] || ex->released[i] || d->retired ||
        !computes_on_cores(ex, i) || !device_judged_enough(ex, i, d))
      continue;
    double core_rate = cpu_rate_near(r, cpu, i, 0), ratio = device_core_ratio(r, cpu, i, NULL);
    if (!(core_rate > 0) || !(ratio > 0) || !isfinite(ratio)) continue;
    double per_core = core_rate / ratio;
    if (!(per_core >= HLB_EXEC_TAKE_CORES_FACTOR * core_rate)) continue;
    snprintf(ex->takes_cores[i], sizeof ex->takes_cores[i], "%.3g against %.3g items/s in %s",
             per_core, core_rate, ex->pu[cpu].name);
    size_t used = strlen(ex->release_reason[i]);
    snprintf(ex->release_reason[i] + used, sizeof ex->release_reason[i] - used,
             "%sfaster per core than %s (%.2fx): later runs give it its cores",
             used ? "; " : "kept: ", ex->pu[cpu].name, per_core / core_rate);
    return;
  }
}

/* ---- Runs too short to judge a device in ------------------------------------------------
 * A device on the cores is judged in a run only once its blocks kept it busy
 * HLB_EXEC_CORE_DEVICE_JUDGE_S (its launches must not decide: should_release). A run of a few
 * milliseconds never gets there: a k-means pass over 10^5 points took 1.9 ms with PoCL beside
 * the cpu PU, where the cpu PU alone on both cores took 0.7 ms, and nothing was stored, so
 * every later run did the same (2-3x the cpu PU alone: docs/benchmarks.md, "Runs too short to
 * judge a device in"). After such a run, a device that did fewer items per busy second than
 * the cores it held did in the cpu PU, both with their per-block costs (in a run this short
 * those are what using the device costs), by more than HLB_EXEC_SHORT_RUN_RELEASE_FACTOR, is
 * released for the runs after it: the next run whose samples are kept tries it alone on every
 * core once (explore_device), as after any release, and the runs alone decide from then on. */
static void judge_short_run(run_ctx *r) {
  hlb_executor *ex = r->ex;
  int cpu = automatic_cpu_pu(ex);
  if (!judges_devices(r) || ex->released[cpu] || r->trial_dev >= 0) return;
  const hlb_exec_pu_stats *host = &r->st[cpu];
  if (host->retired || host->blocks < HLB_EXEC_RELEASE_BLOCKS) return;
  double core_rate = items_per_busy_s(host) / cpu_cores_now(r, cpu);
  for (unsigned i = 0; i < ex->n; i++) {
    const hlb_exec_pu_stats *d = &r->st[i];
    unsigned held = held_cores(ex, i);
    /* (A device judged enough was judged in the run; one on trial held the cpu PU's cores.) */
    if ((int)i == cpu || ex->released[i] || d->retired || !computes_on_cores(ex, i) ||
        d->blocks < HLB_EXEC_RELEASE_BLOCKS || device_judged_enough(ex, i, d))
      continue;
    double dev_rate = items_per_busy_s(d);
    if (!(core_rate > 0) || !(dev_rate * HLB_EXEC_SHORT_RUN_RELEASE_FACTOR < core_rate * held))
      continue;
    char note[80];
    snprintf(note, sizeof note, "; after a run too short to judge it in (busy %.2g ms)",
             d->busy_s * 1e3);
    write_release(ex, i, cpu, 0, dev_rate, core_rate, note);
    cpu_takes_cores(ex, cpu, held);
  }
}

static void block_done_locked(driver *d, hlb_sample *s, double throttle_s) {
  run_ctx *r = d->r;
  hlb_exec_pu_stats *st = &r->st[d->pu];
  double end = rel_now(r);
  s->end_s = end;
  /* A rejected sample (HLB_ESAMPLE) still counts the block as processed. */
  int rc = hlb_balancer_done(r->b, d->bpu, s);
  if (rc && rc != HLB_ESAMPLE) set_error_locked(r, rc);
  hlb__pu_stats_add_block(st, s, throttle_s);
  remember_block_locked(r, d->pu, d->bpu, s);
  r->last_block[d->pu] = s->block.count;
  r->bpu_of[d->pu] = (int)d->bpu;
  if (end > r->last_end) r->last_end = end;
  report_progress_locked(r);
}

/* How often the parked cpu PU looks at the trial device's block in flight (watch_trial_locked):
 * a quarter of the time the device's blocks must have run before it is judged. */
#define TRIAL_WATCH_S (HLB_EXEC_CORE_DEVICE_JUDGE_S / 4)

/* Wait on r->cv (mu held) until woken or `seconds` have passed. */
static void wait_a_while_locked(run_ctx *r, double seconds) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  long ns = until.tv_nsec + (long)(seconds * 1e9);
  until.tv_sec += ns / 1000000000L;
  until.tv_nsec = ns % 1000000000L;
  (void)pthread_cond_timedwait(&r->cv, &r->mu, &until);
}

/* Ask for the next block; 1 = got one, 0 = stop. Called and returns with mu held. */
static int next_locked(driver *d, hlb_block *blk) {
  run_ctx *r = d->r;
  for (;;) {
    if (r->error) return 0;
    if (r->parking && (int)d->pu == r->parked_cpu) { /* until the trial is judged */
      wait_a_while_locked(r, TRIAL_WATCH_S);
      watch_trial_locked(r);
      continue;
    }
    int rc = hlb_balancer_next(r->b, d->bpu, rel_now(r), blk);
    if (rc == HLB_GRANT) return 1;
    if (rc == HLB_DONE) return 0;
    if (rc != HLB_WAIT) {
      set_error_locked(r, rc < 0 ? rc : HLB_ESTATE);
      pthread_cond_broadcast(&r->cv);
      return 0;
    }
    if (r->parking && r->in_flight == 0) { /* only the parked cpu PU could take the rest */
      (void)judge_trial_locked(r, "when the policy waited for the cpu PU");
      continue;
    }
    /* Nothing running anywhere and everyone waiting: no done() will ever wake us. */
    if (r->in_flight == 0 && r->waiting + 1 >= r->alive) {
      hlb__error(HLB_ESTATE, "policy '%s' answered WAIT to every PU with no block in flight",
                 hlb_balancer_policy(r->b));
      set_error_locked(r, HLB_ESTATE);
      pthread_cond_broadcast(&r->cv);
      return 0;
    }
    r->waiting++;
    pthread_cond_wait(&r->cv, &r->mu);
    r->waiting--;
  }
}

/* ---- The local transport: the driver core's hooks for a PU of this executor ---------- */

static int local_next(hlb__driver *core, hlb_block *blk) {
  driver *d = core->ctx;
  run_ctx *r = d->r;
  pthread_mutex_lock(&r->mu);
  int got = next_locked(d, blk);
  if (got) {
    r->in_flight++;
    r->in_block[d->pu] = 1;
    r->committing[d->pu] = 0;
    r->block[d->pu] = *blk;
    r->block_start[d->pu] = rel_now(r);
    r->block_count[d->pu] = blk->count;
    r->bpu_of[d->pu] = (int)d->bpu;
  }
  pthread_mutex_unlock(&r->mu);
  return got;
}

static int local_input(hlb__driver *core, const hlb_block *blk, const void **in, void **out,
                       double *earlier_s) {
  driver *d = core->ctx;
  *earlier_s = 0;
  return hlb__driver_host_input(core, d->r->cl, blk, in, out);
}

/* Before writing a block's output: 0 when the block was abandoned (its PU released while it
 * ran, the items back in the pool), else 1, and the block can no longer be abandoned. */
static int local_commit(hlb__driver *core) {
  driver *d = core->ctx;
  run_ctx *r = d->r;
  pthread_mutex_lock(&r->mu);
  int go = !r->abandoned[d->pu];
  if (go) r->committing[d->pu] = 1;
  pthread_mutex_unlock(&r->mu);
  return go;
}

static int local_output(hlb__driver *core, const hlb_block *blk, void *out) {
  driver *d = core->ctx;
  (void)out; /* written in place, or into the staging buffer unpack reads */
  hlb__driver_host_output(core, d->r->cl, blk);
  return 0;
}

/* The PU's block is over (mu held): 1 when it was abandoned, its PU released while it ran
 * (release_locked gave the block back and retired the PU): nothing is to be recorded. */
static int block_ended_locked(driver *d) {
  run_ctx *r = d->r;
  r->in_flight--;
  r->in_block[d->pu] = 0;
  return r->abandoned[d->pu];
}

static int local_done(hlb__driver *core, hlb_sample *s, double throttle_s) {
  driver *d = core->ctx;
  run_ctx *r = d->r;
  pthread_mutex_lock(&r->mu);
  int stop = block_ended_locked(d);
  if (!stop) {
    block_done_locked(d, s, throttle_s);
    stop = release_weak_locked(d);
  }
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return stop;
}

static int local_fail(hlb__driver *core, const hlb_block *blk, int retire) {
  driver *d = core->ctx;
  run_ctx *r = d->r;
  pthread_mutex_lock(&r->mu);
  int stop = block_ended_locked(d);
  if (!stop) block_failed_locked(d, blk, retire);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return stop;
}

static void local_leave(hlb__driver *core) {
  driver *d = core->ctx;
  run_ctx *r = d->r;
  pthread_mutex_lock(&r->mu);
  if (r->in_block[d->pu]) block_ended_locked(d); /* its block was dropped at commit */
  if (r->parking && (int)d->pu == r->trial_dev) (void)judge_trial_locked(r, "when it left the run");
  r->alive--;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static const hlb__transport local_transport = {.next = local_next,
                                               .input = local_input,
                                               .commit = local_commit,
                                               .output = local_output,
                                               .done = local_done,
                                               .fail = local_fail,
                                               .leave = local_leave};

static void drive(void *arg) {
  hlb__driver_loop(arg);
}

int hlb__codelet_check(const hlb_codelet *cl, size_t n_items) {
  const char *name = cl->name ? cl->name : "(unnamed)";
  if (n_items == 0) return hlb__error(HLB_EINVAL, "codelet '%s': n_items must be > 0", name);
  if (cl->n_shared > HLB_EXEC_MAX_SHARED)
    return hlb__error(HLB_EINVAL, "codelet '%s': %u shared buffers, at most %u", name, cl->n_shared,
                      HLB_EXEC_MAX_SHARED);
  if (cl->in_bytes_per_item && !cl->pack && !cl->in)
    return hlb__error(HLB_EINVAL, "codelet '%s': input of %zu bytes per item needs pack or in",
                      name, cl->in_bytes_per_item);
  if (cl->out_bytes_per_item && !cl->unpack && !cl->out)
    return hlb__error(HLB_EINVAL, "codelet '%s': output of %zu bytes per item needs unpack or out",
                      name, cl->out_bytes_per_item);
  return 0;
}

static int check_args(const hlb_executor *ex, const hlb_codelet *cl, size_t n_items) {
  if (!ex || !cl)
    return hlb__error(HLB_EINVAL, "hlb_executor_run: executor and codelet are required");
  int rc = hlb__codelet_check(cl, n_items);
  if (rc) return rc;
  const char *name = cl->name ? cl->name : "(unnamed)";
  for (unsigned i = 0; i < ex->n; i++)
    if (ex->ops[i]->has_kernel(cl)) return 0;
  return hlb__error(HLB_EINVAL, "codelet '%s': no kernel for any of the %u PUs", name, ex->n);
}

/* The balancer over the PUs that take part; bidx maps its PU numbers to the executor's. */
static int make_balancer(run_ctx *r, const unsigned *bidx, unsigned nb, size_t n_items,
                         const hlb__exec_models *models) {
  hlb_pu_desc *desc = calloc(nb, sizeof *desc);
  if (!desc) return hlb__error(HLB_ENOMEM, "hlb_executor_run: out of memory for %u PUs", nb);
  for (unsigned j = 0; j < nb; j++) {
    const hlb_exec_pu *p = &r->ex->pu[bidx[j]];
    desc[j].name = p->name;
    desc[j].kind = hlb_backend_name(p->backend);
    desc[j].speed_hint = r->ex->rate[bidx[j]];
    desc[j].min_block = r->opt.min_block;
    /* A device that holds a core of the cpu PU and of which nothing is known probes with one
     * granule: its first block holds that core until it ends, however slow it turns out to be
     * (PoCL's first matmul block of 4 rows at n = 4096 cost the run 0.45 s of 1.3). */
    if (judges_devices(r) && held_cores(r->ex, bidx[j]) &&
        (!models->n_per_bpu || models->n_per_bpu[j] == 0))
      desc[j].first_block = 1;
  }
  unsigned n_item_cost = 0;
  int trusted = 0;
  const double *item_cost = hlb__exec_item_cost(models, n_items, &n_item_cost, &trusted);
  hlb_balancer_config cfg = {.n_items = n_items,
                             .granularity = r->opt.granularity,
                             .n_pus = nb,
                             .pus = desc,
                             .policy = r->opt.policy,
                             .params = r->opt.params,
                             .keep_log = r->opt.keep_log,
                             .prior = models->per_bpu,
                             .n_prior = models->n_per_bpu,
                             .item_cost = item_cost,
                             .n_item_cost = n_item_cost,
                             .item_cost_on_trial = !trusted,
                             .learn_item_cost = 1,
                             .items_vary = r->cl->items_vary};
  int rc = hlb_balancer_create(&cfg, &r->b);
  free(desc);
  return rc;
}

/* Every PU with a kernel: the session's kernel (built on the first run of the codelet, or
 * when its source changed) and this run's shared buffers; list those PUs in bidx. */
static unsigned prepare_all(run_ctx *r, unsigned *bidx, int *first_err) {
  unsigned nb = 0;
  for (unsigned i = 0; i < r->ex->n; i++) {
    if (!r->ex->ops[i]->has_kernel(r->cl) || r->ex->released[i]) continue;
    int rc = hlb__session_prepare(r->ex, i, r->cl, r->shared[i], &r->kernel[i], &r->st[i]);
    if (rc) {
      /* A PU that cannot even load the kernel is left out, like a retired one; the reason
       * (e.g. the OpenCL compiler's log) stays in its stats for the caller to show. */
      r->st[i].retired = 1;
      snprintf(r->st[i].failure, sizeof r->st[i].failure, "%s", hlb_last_error());
      if (!*first_err) *first_err = rc;
      continue;
    }
    r->prepared[i] = 1;
    bidx[nb++] = i;
  }
  if (r->trial_dev >= 0) park_cpu(r, bidx, &nb);
  return nb;
}

static int fill_stats(run_ctx *r, const unsigned *bidx, unsigned nb, size_t n_items,
                      hlb_exec_stats *s) {
  hlb_exec_stats_clear(s);
  unsigned n = r->ex->n;
  s->pu = malloc(n * sizeof *s->pu);
  s->per_pu = malloc(n * sizeof *s->per_pu);
  if (!s->pu || !s->per_pu) {
    hlb_exec_stats_clear(s);
    return hlb__error(HLB_ENOMEM, "hlb_executor_run: out of memory for the stats of %u PUs", n);
  }
  snprintf(s->policy, sizeof s->policy, "%s", hlb_balancer_policy(r->b));
  s->n_items = n_items;
  s->item_costs_known = hlb_balancer_has_item_cost(r->b);
  s->item_costs_on_trial = hlb_balancer_item_cost_on_trial(r->b);
  s->item_costs_trusted = hlb_balancer_item_cost_trusted(r->b);
  s->n_pus = n;
  memcpy(s->pu, r->ex->pu, n * sizeof *s->pu);
  memcpy(s->per_pu, r->st, n * sizeof *s->per_pu);
  for (unsigned i = 0; i < r->ex->n; i++) {
    s->per_pu[i].released = r->ex->released[i];
    memcpy(s->per_pu[i].release_reason, r->ex->release_reason[i],
           sizeof s->per_pu[i].release_reason);
    s->per_pu[i].cores_given = r->ex->cores_given[i];
  }
  s->makespan_s = r->last_end;
  s->setup_s = r->t0 - r->called;
  s->kept_kernels = hlb__session_kernels(r->ex);
  s->solver_s = hlb_balancer_solver_seconds(r->b);
  for (unsigned j = 0; j < nb; j++) {
    const hlb_model *m = hlb_balancer_model(r->b, j);
    hlb_exec_pu_stats *st = &s->per_pu[bidx[j]];
    if (m && hlb_model_fitted(m) && hlb_model_curve(m, &st->model) == 0) {
      st->fitted = 1;
      st->model_terms = hlb_model_terms(m);
      st->model_r2 = hlb_model_r2(m);
    }
  }
  const hlb_decision *log = NULL;
  size_t n_log = hlb_balancer_log(r->b, &log);
  if (n_log && log && (s->log = malloc(n_log * sizeof *log))) {
    memcpy(s->log, log, n_log * sizeof *log);
    for (size_t k = 0; k < n_log; k++)
      s->log[k].pu = bidx[s->log[k].pu];
    s->n_log = n_log;
  }
  return 0;
}

/* The rates of this run become the next run's speed hints. */
static void remember_rates(run_ctx *r) {
  for (unsigned i = 0; i < r->ex->n; i++)
    if (r->st[i].busy_s > 0 && r->st[i].items > 0)
      r->ex->rate[i] = (double)r->st[i].items / r->st[i].busy_s;
}

/* PU i's driver, the balancer's PU bpu. */
static void init_driver(run_ctx *r, driver *d, unsigned i, unsigned bpu) {
  hlb_executor *ex = r->ex;
  *d = (driver){.r = r, .pu = i, .bpu = bpu};
  d->core = (hlb__driver){.t = &local_transport,
                          .ctx = d,
                          .pu = i,
                          .ops = ex->ops[i],
                          .dev = ex->dev[i],
                          .call = HLB__KERNEL_LAUNCH,
                          .kernel = r->kernel[i],
                          .cl = r->cl,
                          .shared = r->shared[i],
                          .throttle = ex->pu[i].throttle,
                          .max_failures = r->opt.max_failures,
                          .inject_pu = r->opt.inject_pu,
                          .inject_from = r->opt.inject_from,
                          .inject_count = r->opt.inject_count,
                          .sg = &ex->stage[i]};
  snprintf(d->core.label, sizeof d->core.label, "pu '%s'", ex->pu[i].name);
}

/* Each PU's driver runs on the executor's thread for that PU (pu_thread.h: kept from run to
 * run, so a cpu kernel's OpenMP team is made once per session, not once per run). */
static void start_drivers(run_ctx *r, driver *drv, int *started, const unsigned *bidx,
                          unsigned nb) {
  r->alive = nb;
  r->t0 = hlb__now();
  for (unsigned j = 0; j < nb; j++) {
    init_driver(r, &drv[j], bidx[j], j);
    started[j] = hlb__pu_thread_post(&r->ex->thread[bidx[j]], drive, &drv[j].core) == 0;
    if (!started[j]) {
      /* Threads already started finish the work; this PU simply takes none. */
      pthread_mutex_lock(&r->mu);
      if (r->parking && (int)bidx[j] == r->trial_dev)
        (void)judge_trial_locked(r, "as it never started");
      if (r->parking && (int)bidx[j] == r->parked_cpu) r->parking = 0, r->trial_dev = -1;
      int rc = hlb_balancer_retire(r->b, j);
      if (rc) set_error_locked(r, rc);
      r->alive--;
      pthread_cond_broadcast(&r->cv);
      pthread_mutex_unlock(&r->mu);
    }
  }
}

static int finish(run_ctx *r, int prep_err) {
  if (r->error) return hlb__error(r->error, "%s", r->error_text);
  if (!hlb_balancer_finished(r->b)) {
    if (prep_err)
      return hlb__error(HLB_EDEVICE, "run stopped with %zu items left: %s",
                        hlb_balancer_remaining(r->b), r->error_text);
    return hlb__error(HLB_EDEVICE,
                      "run stopped with %zu items left: every PU was retired (last failure: %s)",
                      hlb_balancer_remaining(r->b), r->fail_text);
  }
  return hlb_balancer_check_exactly_once(r->b);
}

static void free_run(run_ctx *r) {
  if (!r) return;
  free(r->shared);
  free(r->kernel);
  free(r->prepared);
  free(r->st);
  free(r->last_block);
  free(r->bpu_of);
  free(r->in_block);
  free(r->block_start);
  free(r->block_count);
  free(r->block);
  free(r->committing);
  free(r->abandoned);
  free(r->bidx);
  free(r->drv);
  free(r->started);
  free(r->recent);
  free(r->n_recent);
  free(r);
}

/* A run's state, with one entry per PU of the executor in each per-PU array. */
static run_ctx *alloc_run(unsigned n) {
  run_ctx *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  int ok = (r->shared = calloc(n, sizeof *r->shared)) && (r->kernel = calloc(n, sizeof(void *))) &&
           (r->prepared = calloc(n, sizeof(int))) && (r->st = calloc(n, sizeof *r->st)) &&
           (r->last_block = calloc(n, sizeof(size_t))) && (r->bpu_of = calloc(n, sizeof(int))) &&
           (r->in_block = calloc(n, sizeof(int))) && (r->block_start = calloc(n, sizeof(double))) &&
           (r->block_count = calloc(n, sizeof(size_t))) &&
           (r->block = calloc(n, sizeof *r->block)) && (r->committing = calloc(n, sizeof(int))) &&
           (r->abandoned = calloc(n, sizeof(int))) && (r->bidx = calloc(n, sizeof(unsigned))) &&
           (r->drv = calloc(n, sizeof *r->drv)) && (r->started = calloc(n, sizeof(int))) &&
           (r->recent = calloc(n, sizeof *r->recent)) && (r->n_recent = calloc(n, sizeof(size_t)));
  if (ok) return r;
  free_run(r);
  return NULL;
}

int hlb_executor_run(hlb_executor *ex, const hlb_codelet *cl, size_t n_items,
                     const hlb_exec_options *opt, hlb_exec_stats *stats) {
  double called = hlb__now();
  int rc = check_args(ex, cl, n_items);
  if (rc) return rc;
  run_ctx *r = alloc_run(ex->n);
  if (!r) return hlb__error(HLB_ENOMEM, "hlb_executor_run: out of memory for %u PUs", ex->n);
  r->ex = ex;
  r->cl = cl;
  r->called = called;
  r->n_items = n_items;
  if (opt)
    r->opt = *opt;
  else
    hlb_exec_options_default(&r->opt);
  unsigned *bidx = r->bidx;
  int prep_err = 0;
  hlb__exec_models models = {0};
  rc = hlb__exec_models_begin(ex, cl, &r->opt, &models);
  if (rc) {
    hlb__exec_models_free(&models);
    free_run(r);
    return rc;
  }
  for (unsigned i = 0; i < ex->n; i++)
    ex->cores_changed_s[i][0] = ex->cores_changed_s[i][1] = NAN;
  r->trial_dev = r->parked_cpu = -1;
  if (!r->opt.same_pus) {
    release_stored(r, &models);
    hand_back_tried(r, &models);
    give_cores_stored(r, &models);
    plan_trial(r, &models);
  }
  unsigned nb = prepare_all(r, bidx, &prep_err);
  if (prep_err) snprintf(r->error_text, sizeof r->error_text, "%s", hlb_last_error());
  if (nb == 0)
    rc = hlb__error(prep_err ? prep_err : HLB_EDEVICE, "codelet '%s': no PU could load it: %s",
                    cl->name ? cl->name : "(unnamed)", r->error_text);
  else if ((rc = hlb__exec_models_priors(ex, &models, bidx, nb)) == 0)
    rc = make_balancer(r, bidx, nb, n_items, &models);
  /* The trial device's second block at most HLB_EXEC_TRIAL_GROW granules (its first is one). */
  if (rc == 0 && r->parking)
    rc = hlb_balancer_cap(r->b, r->trial_bpu,
                          HLB_EXEC_TRIAL_GROW * (r->opt.granularity ? r->opt.granularity : 1));
  if (rc == 0) {
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    start_drivers(r, r->drv, r->started, bidx, nb);
    for (unsigned j = 0; j < nb; j++)
      if (r->started[j]) hlb__pu_thread_wait(&ex->thread[bidx[j]]);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    judge_takeover(r);
    judge_short_run(r);
    int fill_rc = stats ? fill_stats(r, bidx, nb, n_items, stats) : 0;
    int filled = stats && fill_rc == 0;
    /* Before finish(): a failure to store the models must not replace the run's own error. */
    /* A parked cpu PU that never ran is left out (it is last): its run is the device's. */
    unsigned stored = r->parked_cpu >= 0 && r->st[r->parked_cpu].blocks == 0 ? nb - 1 : nb;
    hlb__exec_models_end(ex, cl, &models, r->b, bidx, stored, n_items, stats);
    rc = finish(r, prep_err);
    rc = rc ? rc : fill_rc;
    remember_rates(r);
    hlb_balancer_destroy(r->b);
    /* The kernels and shared buffers stay with the executor (the session) for the next run. */
    if (filled) stats->wrapup_s = hlb__now() - (r->t0 + r->last_end);
  }
  hlb__exec_models_free(&models);
  free_run(r);
  /* A run that succeeded with some PUs left out must not leave their errors behind as the
   * last error: they are in the stats (failure) instead. */
  if (rc == 0) hlb_clear_error();
  return rc;
}
