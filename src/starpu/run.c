/* The driver of libhlb_starpu (include/hlb/starpu.h): the calling thread asks hlb's balancer
 * for a block each time a worker is idle, cuts the block out of the split handles as handles
 * of its own, pins the task to that worker, and feeds StarPU's measurement of the task back.
 *
 * Why blocks are handles registered over the parent's memory rather than StarPU partitions:
 * StarPU 1.3 fixes every child's size when a handle is partitioned (starpu_vector_filter_list
 * takes all the lengths up front, and a handle has one active partition for writing), while
 * hlb decides each block's size when a worker becomes idle. Partitioning the remainder again
 * at each grant would nest one level per block. So the run holds each parent (acquired in
 * main memory) and registers each block's range as a handle of its own; StarPU moves it like
 * any data, and unregistering it writes it back into the parent's memory.
 *
 * A worker that computes in main memory (a cpu worker) settles its own blocks: the task's
 * callback, on the worker's thread, gives the balancer the block's sample, asks for the
 * worker's next block and submits it, under the run's mutex. A worker with memory of its own
 * (an OpenCL device) hands its finished block to the calling thread, which writes it back
 * (unregistering it; StarPU forbids that in a callback), then settles it; that worker holds a
 * second block queued meanwhile. The calling thread also unregisters the cpu workers' blocks,
 * in batches, and sleeps otherwise: with as many spinning StarPU workers as cores, each of its
 * wake-ups took a core from a worker, and a worker waiting for it to wake and submit its next
 * block lost 1-2 ms (a scheduler time slice) each time. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "exec/backend.h"
#include "hlb/policy.h"
#include "internal.h"

typedef struct run {
  hlb__sp_wrap w;
  const hlb_starpu_options *o;
  hlb__sp_split split[STARPU_NMAXBUFS];
  unsigned n_split;
  const starpu_data_handle_t *whole;
  unsigned n_whole;
  size_t n_items;
  unsigned n_pus;
  int ids[STARPU_NMAXWORKERS];
  /* Everything below is shared by the driver and the tasks' callbacks: under mu. */
  /* busy: the worker's blocks submitted and not settled (at most blocks_ahead). */
  int busy[STARPU_NMAXWORKERS], stopped[STARPU_NMAXWORKERS];
  /* settles_in_callback: the worker computes in main memory, so its blocks are settled and
   * its next block granted on its own thread, in the task's callback (see settle). */
  int settles_in_callback[STARPU_NMAXWORKERS];
  unsigned fail_streak[STARPU_NMAXWORKERS];
  hlb_exec_pu_stats st[STARPU_NMAXWORKERS];
  uint32_t mask[(STARPU_NMAXWORKERS + 31) / 32]; /* the selected workers, for StarPU's scheduler */
  hlb_balancer *b;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Finished blocks handed to the driver, oldest first: settled ones only to unregister,
   * unsettled ones (a device's) to write back first. */
  hlb__sp_block *head, *tail;
  unsigned queued_settled, queued_unsettled;
  hlb__sp_block *refused; /* blocks whose task StarPU refused: their handles, to unregister */
  unsigned in_flight;     /* blocks submitted and not settled (scheduler_places: not finished) */
  int rc;                 /* the first policy error: no block is granted after it */
  char rc_why[256];       /* its message (it may arise on a worker's thread) */
  double t0, adapter_s, last_end;
  size_t blocks, granted_by_workers;
  hlb_decision *log; /* scheduler_places: one entry per block, the balancer keeps none */
  size_t n_log;
  /* o->memory: each PU's priors, and whether the run forgot them */
  const hlb_sample *prior[STARPU_NMAXWORKERS];
  size_t n_prior[STARPU_NMAXWORKERS];
  int forgot[STARPU_NMAXWORKERS];
  int from_file; /* the priors include samples read from a model file */
  int paused;    /* a callback paused StarPU's workers (pause_if_last) */
} run;

void hlb_starpu_options_default(hlb_starpu_options *o) {
  memset(o, 0, sizeof *o);
  o->keep_log = 1;
  o->pause_at_end = 1;
}

void hlb_starpu_stats_clear(hlb_starpu_stats *s) {
  if (!s) return;
  hlb_exec_stats_clear(&s->exec);
  free(s->workerid);
  memset(s, 0, sizeof *s);
}

static double since(const struct timespec *a, const struct timespec *b) {
  return starpu_timing_timespec_delay_us((struct timespec *)a, (struct timespec *)b) / 1e6;
}

int hlb_starpu_current_block(size_t *begin, size_t *count) {
  const hlb__sp_block *k = hlb__sp_current();
  if (!k)
    return hlb__error(HLB_ESTATE, "hlb_starpu_current_block: the current task is not a block of "
                                  "an hlb_starpu run");
  if (begin) *begin = k->blk.begin;
  if (count) *count = k->blk.count;
  return 0;
}

/* Unregistering blocks: StarPU forbids it in a callback (it waits), so only the driver
 * thread does it. With write_back, the block's items are copied back into the parent. */
static void unregister_block(run *r, hlb__sp_block *k, int write_back) {
  for (unsigned i = 0; i < k->n_h; i++) {
    if (write_back && (r->split[i].mode & STARPU_W))
      starpu_data_unregister(k->h[i]);
    else
      starpu_data_unregister_no_coherency(k->h[i]);
  }
}

/* Settled blocks wait for the driver in batches of this many: it then wakes once per batch,
 * not once per block, and takes no core from the workers in between (as many StarPU workers
 * as cores spin on them). A batch costs about a microsecond a block to unregister. */
#define UNREGISTER_BATCH 32u

/* Under mu. A finished block goes to the driver to be unregistered; the driver is woken when
 * it has to act now (a block to settle, the run's last block, a full batch). */
static void hand_to_driver(run *r, hlb__sp_block *k) {
  k->next = NULL;
  if (r->tail)
    r->tail->next = k;
  else
    r->head = k;
  r->tail = k;
  if (k->settled)
    r->queued_settled++;
  else
    r->queued_unsettled++;
  if (r->queued_unsettled || r->queued_settled >= UNREGISTER_BATCH || !r->in_flight)
    pthread_cond_signal(&r->cv);
}

static struct starpu_task *make_task(run *r, hlb__sp_block *k, int pinned_pu) {
  struct starpu_task *t = starpu_task_create();
  if (!t) return NULL;
  t->cl = &r->w.cl;
  t->cl_arg = r->o->cl_arg;
  for (unsigned i = 0; i < r->n_split; i++)
    t->handles[i] = k->h[i];
  for (unsigned j = 0; j < r->n_whole; j++)
    t->handles[r->n_split + j] = r->whole[j];
  t->callback_func = hlb__sp_task_done;
  t->callback_arg = k;
  if (pinned_pu >= 0) {
    t->execute_on_a_specific_worker = 1;
    t->workerid = (unsigned)r->ids[pinned_pu];
  } else if (r->o->n_workers) {
    t->workerids = r->mask; /* StarPU's scheduler may place it on the selected workers only */
    t->workerids_len = (unsigned)(sizeof r->mask / sizeof r->mask[0]);
  }
  return t;
}

/* Under mu. Register the block's handles and submit its task; pinned_pu < 0 lets StarPU
 * place it. A task StarPU refuses leaves its block's handles to the driver to unregister at
 * the end (this may run in a callback, where unregistering is forbidden). */
static int submit_block(run *r, const hlb_block *blk, int pinned_pu) {
  double t_a = hlb__now();
  hlb__sp_block *k = calloc(1, sizeof *k);
  if (!k)
    return hlb__error(HLB_ENOMEM, "hlb_starpu: out of memory for block %llu",
                      (unsigned long long)blk->id);
  k->blk = *blk;
  k->owner = r;
  k->pu = pinned_pu >= 0 ? (unsigned)pinned_pu : UINT32_MAX;
  for (unsigned i = 0; i < r->n_split; i++)
    hlb__sp_split_block(&r->split[i], blk->begin, blk->count, &k->h[i]);
  k->n_h = r->n_split;
  k->start_s = t_a - r->t0;
  struct starpu_task *t = k->task = make_task(r, k, pinned_pu);
  int err = t ? starpu_task_submit(t) : -ENOMEM;
  if (err) {
    if (t) { /* never submitted: StarPU will not destroy it, and refuses to while destroy = 1 */
      t->destroy = 0;
      starpu_task_destroy(t);
    }
    k->next = r->refused;
    r->refused = k;
    return hlb__error(HLB_EDEVICE,
                      "hlb_starpu: submitting the task of items [%zu, +%zu) to worker %d failed "
                      "(%d)",
                      blk->begin, blk->count, pinned_pu >= 0 ? r->ids[pinned_pu] : -1, err);
  }
  r->in_flight++;
  r->blocks++;
  r->adapter_s += hlb__now() - t_a;
  return 0;
}

static int pu_of_worker(const run *r, int workerid) {
  for (unsigned p = 0; p < r->n_pus; p++)
    if (r->ids[p] == workerid) return (int)p;
  return -1;
}

/* Under mu. */
static int grant(run *r, unsigned p) {
  hlb_block blk;
  int rc = hlb_balancer_next(r->b, p, hlb__now() - r->t0, &blk);
  if (rc == HLB_DONE) r->stopped[p] = 1;
  if (rc != HLB_GRANT) return rc < 0 ? rc : 0;
  rc = submit_block(r, &blk, (int)p);
  if (rc) { /* the worker refused the task: its items go back, it takes no more */
    snprintf(r->st[p].failure, sizeof r->st[p].failure, "%s", hlb_last_error());
    r->st[p].failed_blocks++;
    r->st[p].retired = 1;
    r->stopped[p] = 1;
    hlb_balancer_fail(r->b, p, &blk, hlb__now() - r->t0);
    hlb_balancer_retire(r->b, p);
    return 0;
  }
  r->busy[p]++;
  return 0;
}

/* Blocks a worker holds at once under an hlb policy. A worker whose blocks are settled in its
 * callback asks for its next block itself when one ends, so it holds one: each block is sized
 * with the newest measurements, and none waits queued on a worker that turns out slow. A
 * worker whose blocks the driver thread settles holds two, the one it runs and the next,
 * queued on it, so that it does not wait for that thread to wake (which on a machine with as
 * many spinning StarPU workers as cores first waits for a core: k-means' 35 ms passes spent
 * 45 blocks each that way). The balancer plans a block asked for ahead from when the PU's
 * block in flight ends, as it does for the MPI executor's PUs. */
static int blocks_ahead(const run *r, unsigned p) {
  return r->settles_in_callback[p] ? 1 : 2;
}

/* Under mu. */
static int offer_idle(run *r) {
  for (unsigned p = 0; p < r->n_pus; p++) {
    while (r->busy[p] < blocks_ahead(r, p) && !r->stopped[p]) {
      int before = r->busy[p];
      int rc = grant(r, p);
      if (rc) return rc;
      if (r->busy[p] == before) break; /* WAIT, DONE or refused */
    }
  }
  return 0;
}

/* Under mu. A kernel failed: its items go back to the pool; after HLB_EXEC_MAX_FAILURES in a
 * row the worker is retired, as the executor does with a PU. */
static void block_failed(run *r, unsigned pu, const hlb_sample *s, const char *why) {
  r->st[pu].failed_blocks++;
  hlb_balancer_fail(r->b, pu, &s->block, s->end_s);
  if (++r->fail_streak[pu] < HLB_EXEC_MAX_FAILURES) return;
  hlb_balancer_retire(r->b, pu);
  r->st[pu].retired = 1;
  r->stopped[pu] = 1;
  snprintf(r->st[pu].failure, sizeof r->st[pu].failure, "%s", why);
}

/* Under mu. The run's first policy error, with its message: hlb's errors are per thread, and
 * this one may arise in a callback, on a worker's thread. */
static void note_error(run *r, int rc) {
  if (!rc || r->rc) return;
  r->rc = rc;
  snprintf(r->rc_why, sizeof r->rc_why, "%s", hlb_last_error());
}

/* Under mu. A finished block's sample goes to the balancer (its transfer time is the task's
 * data acquisition plus the write-back, as the executor's copy back counts), then every
 * worker short of blocks is offered its next. */
static void settle(run *r, hlb__sp_block *k, double write_back_s) {
  unsigned pu = k->pu;
  hlb_sample s = {.block = k->blk,
                  .compute_s = k->compute_s,
                  .transfer_s = k->acquire_s + write_back_s,
                  .end_s = hlb__now() - r->t0};
  k->settled = 1;
  r->in_flight--;
  r->busy[pu]--;
  if (s.end_s > r->last_end) r->last_end = s.end_s;
  if (k->failed) {
    block_failed(r, pu, &s, k->failure);
  } else {
    r->fail_streak[pu] = 0;
    int d = hlb_balancer_done(r->b, pu, &s);
    if (d != HLB_ESAMPLE) note_error(r, d);
    hlb__pu_stats_add_block(&r->st[pu], &s, k->throttle_s);
  }
  if (!r->rc) note_error(r, offer_idle(r));
}

/* Under mu, in a task's callback. StarPU 1.3's workers (Debian builds them with
 * STARPU_NON_BLOCKING_DRIVERS) poll for tasks in a tight loop when they have none: with as
 * many workers as cores, the driver thread woken for the run's last block then waits for a
 * core, up to the kernel's time slice (1.4-4.9 ms measured in 8-pass spmv runs on 2 cores,
 * against passes of 18-25 ms). When no other block is in flight, the run has nothing more
 * for the workers until the driver acts, so they are paused (starpu_pause, which only
 * counts up; StarPU's documentation recommends it for phases without tasks) and give their
 * cores up at their next poll; the driver resumes them as soon as it wakes (end_pause). */
static void pause_if_last(run *r) {
  unsigned running = r->in_flight - r->queued_unsettled; /* the finished wait for the driver */
  if (running || r->paused || !r->o->pause_at_end) return;
  starpu_pause();
  r->paused = 1;
}

/* Under mu, on the driver thread. */
static void end_pause(run *r) {
  if (!r->paused) return;
  starpu_resume();
  r->paused = 0;
}

/* The tasks' callback, on the worker's thread. The kernel's time (the wrapper's throttle
 * sleep included) feeds F; fetching the inputs feeds G. Without profiling the times stay NaN
 * and the balancer rejects the sample. A worker that computes in main memory settles its
 * block and submits its own next one here, without waking the driver: its block's handle
 * already is where the parent's items are, so the write-back that the driver does later
 * copies nothing and the sample lacks nothing. StarPU allows task submission (and handle
 * registration) from callbacks. */
void hlb__sp_task_done(void *arg) {
  hlb__sp_block *k = arg;
  run *r = k->owner;
  const struct starpu_profiling_task_info *pi = k->task->profiling_info;
  k->compute_s = pi ? since(&pi->start_time, &pi->end_time) : NAN;
  k->acquire_s = pi ? since(&pi->acquire_data_start_time, &pi->acquire_data_end_time) : NAN;
  k->workerid = pi ? pi->workerid : starpu_worker_get_id();
  pthread_mutex_lock(&r->mu);
  if (r->b && k->pu != UINT32_MAX && r->settles_in_callback[k->pu]) {
    settle(r, k, 0.0);
    r->granted_by_workers++;
  }
  hand_to_driver(r, k);
  pause_if_last(r);
  pthread_mutex_unlock(&r->mu);
}

/* Under mu: every block handed to the driver, the queue emptied. */
static hlb__sp_block *take_handed(run *r) {
  hlb__sp_block *list = r->head;
  r->head = r->tail = NULL;
  r->queued_settled = r->queued_unsettled = 0;
  return list;
}

/* Without mu (unregistering waits for StarPU): write back and free the blocks handed to the
 * driver, settling those no callback could. */
static void write_back(run *r, hlb__sp_block *list) {
  while (list) {
    hlb__sp_block *k = list;
    list = k->next;
    double t_a = hlb__now();
    unregister_block(r, k, 1);
    double t_b = hlb__now();
    pthread_mutex_lock(&r->mu);
    r->adapter_s += t_b - t_a;
    if (!k->settled) settle(r, k, t_b - t_a);
    /* The run ends when the last block is back in the parent's memory. */
    if (t_b - r->t0 > r->last_end) r->last_end = t_b - r->t0;
    pthread_mutex_unlock(&r->mu);
    free(k);
  }
}

/* The handles of the blocks StarPU refused, once no callback can add one. */
static void drop_refused(run *r) {
  while (r->refused) {
    hlb__sp_block *k = r->refused;
    r->refused = k->next;
    unregister_block(r, k, 0);
    free(k);
  }
}

static int drive_balancer(run *r) {
  pthread_mutex_lock(&r->mu);
  note_error(r, offer_idle(r));
  for (;;) {
    while (r->in_flight && !r->queued_unsettled && r->queued_settled < UNREGISTER_BATCH)
      pthread_cond_wait(&r->cv, &r->mu);
    end_pause(r);
    hlb__sp_block *list = take_handed(r);
    if (!list && !r->in_flight) break;
    pthread_mutex_unlock(&r->mu);
    write_back(r, list);
    pthread_mutex_lock(&r->mu);
  }
  int rc = r->rc;
  pthread_mutex_unlock(&r->mu);
  drop_refused(r);
  if (rc) return hlb__error(rc, "%s", r->rc_why);
  if (!hlb_balancer_finished(r->b))
    return hlb__error(HLB_EDEVICE, "hlb_starpu: every worker stopped with %zu of %zu items left",
                      hlb_balancer_remaining(r->b), r->n_items);
  return hlb_balancer_check_exactly_once(r->b);
}

/* scheduler_places: the next finished block, waiting for one. */
static hlb__sp_block *wait_finished(run *r) {
  pthread_mutex_lock(&r->mu);
  while (!r->head)
    pthread_cond_wait(&r->cv, &r->mu);
  end_pause(r);
  hlb__sp_block *k = r->head;
  r->head = k->next;
  if (!r->head) r->tail = NULL;
  r->queued_unsettled--;
  r->in_flight--;
  pthread_mutex_unlock(&r->mu);
  return k;
}

/* scheduler_places: write a finished block back and make its sample (the write-back counts
 * as transfer). Returns the PU it ran on, or -1. */
static int finish_block(run *r, hlb__sp_block *k, hlb_sample *s, double *throttle_s) {
  double t_a = hlb__now();
  int pu = pu_of_worker(r, k->workerid);
  s->block = k->blk;
  s->compute_s = k->compute_s;
  double acquire_s = k->acquire_s;
  *throttle_s = k->throttle_s;
  unregister_block(r, k, 1);
  free(k);
  double t_b = hlb__now();
  s->transfer_s = acquire_s + (t_b - t_a);
  s->end_s = t_b - r->t0;
  r->last_end = s->end_s;
  r->adapter_s += t_b - t_a;
  return pu;
}

static void log_block(run *r, const hlb_sample *s, unsigned pu, double start_s) {
  hlb_decision *d = &r->log[r->n_log++];
  *d = (hlb_decision){.time_s = start_s,
                      .pu = pu,
                      .begin = s->block.begin,
                      .count = s->block.count,
                      .predicted_s = NAN,
                      .measured_s = s->compute_s + s->transfer_s,
                      .compute_s = s->compute_s,
                      .transfer_s = s->transfer_s,
                      .end_s = s->end_s,
                      .outcome = HLB_OUTCOME_DONE};
}

/* scheduler_places: equal blocks, all submitted at once, placed by StarPU's scheduler. */
static int drive_scheduler(run *r) {
  size_t k =
      r->o->equal_blocks ? r->o->equal_blocks : (size_t)HLB_STARPU_BLOCKS_PER_WORKER * r->n_pus;
  if (k > r->n_items) k = r->n_items;
  unsigned char *seen = calloc(k, 1);
  r->log = calloc(k, sizeof *r->log);
  if (!seen || !r->log) {
    free(seen);
    return hlb__error(HLB_ENOMEM, "hlb_starpu: out of memory for %zu blocks", k);
  }
  int rc = 0;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < k && !rc; i++) {
    size_t b = r->n_items * i / k, e = r->n_items * (i + 1) / k;
    hlb_block blk = {.id = i, .begin = b, .count = e - b, .pu = 0, .granted_s = 0};
    rc = submit_block(r, &blk, -1);
  }
  pthread_mutex_unlock(&r->mu);
  size_t items = 0;
  while (r->in_flight) {
    hlb__sp_block *kb = wait_finished(r);
    double start_s = kb->start_s;
    if (kb->failed && !rc) rc = hlb__error(HLB_EDEVICE, "hlb_starpu: %s", kb->failure);
    hlb_sample s;
    double throttle_s;
    int pu = finish_block(r, kb, &s, &throttle_s);
    if (pu < 0) { /* cannot happen with the worker mask; said rather than counted wrong */
      if (!rc)
        rc = hlb__error(HLB_ESTATE,
                        "hlb_starpu: block [%zu, +%zu) ran on a worker outside "
                        "the run's",
                        s.block.begin, s.block.count);
      continue;
    }
    seen[s.block.id]++;
    items += s.block.count;
    hlb__pu_stats_add_block(&r->st[pu], &s, throttle_s);
    log_block(r, &s, (unsigned)pu, start_s);
  }
  drop_refused(r);
  for (size_t i = 0; i < k && !rc; i++)
    if (seen[i] != 1)
      rc = hlb__error(HLB_EVERIFY, "hlb_starpu: block %zu of %zu finished %u times", i, k, seen[i]);
  if (!rc && items != r->n_items)
    rc = hlb__error(HLB_EVERIFY, "hlb_starpu: blocks covered %zu of %zu items", items, r->n_items);
  free(seen);
  return rc;
}

static int make_balancer(run *r) {
  hlb_pu_desc *pus = calloc(r->n_pus, sizeof *pus);
  char(*names)[32] = calloc(r->n_pus, sizeof *names);
  int rc = pus && names ? 0 : hlb__error(HLB_ENOMEM, "hlb_starpu: out of memory");
  for (unsigned p = 0; !rc && p < r->n_pus; p++) {
    hlb_starpu_worker_name(r->ids[p], names[p], sizeof names[p]);
    pus[p] = (hlb_pu_desc){
        .name = names[p],
        .kind = starpu_worker_get_type(r->ids[p]) == STARPU_CPU_WORKER ? "cpu" : "opencl",
        .min_block = r->o->min_block};
  }
  const hlb_starpu_memory *mem = r->o->memory;
  /* With a memory the log is kept: the run's samples are read from it at the end. */
  hlb_balancer_config cfg = {.n_items = r->n_items,
                             .granularity = r->o->granularity,
                             .n_pus = r->n_pus,
                             .pus = pus,
                             .policy = r->o->policy,
                             .params = r->o->params,
                             .keep_log = r->o->keep_log || mem,
                             .learn_item_cost = mem != NULL,
                             .items_vary = r->o->items_vary};
  if (mem) {
    hlb__sp_memory_priors(mem, r->ids, r->n_pus, r->prior, r->n_prior);
    r->from_file = hlb__sp_memory_from_file(mem, r->ids, r->n_pus);
    cfg.prior = r->prior;
    cfg.n_prior = r->n_prior;
    int trusted = 0;
    cfg.item_cost = hlb__sp_memory_item_cost(mem, r->n_items, &cfg.n_item_cost, &trusted);
    cfg.item_cost_on_trial = !trusted;
  }
  if (!rc) rc = hlb_balancer_create(&cfg, &r->b);
  free(pus);
  free(names);
  return rc;
}

static void fill_pu(const run *r, unsigned p, hlb_exec_pu *pu) {
  int id = r->ids[p];
  memset(pu, 0, sizeof *pu);
  hlb_starpu_worker_name(id, pu->name, sizeof pu->name);
  pu->backend =
      starpu_worker_get_type(id) == STARPU_CPU_WORKER ? HLB_BACKEND_CPU : HLB_BACKEND_OPENCL;
  pu->device = pu->backend == HLB_BACKEND_CPU ? 0 : (unsigned)starpu_worker_get_devid(id);
  pu->cores = 1;
  pu->throttle = r->w.throttle[id];
  starpu_worker_get_name(id, pu->device_name, sizeof pu->device_name);
}

static void fill_models(const run *r, hlb_exec_stats *s) {
  for (unsigned p = 0; p < r->n_pus; p++) {
    const hlb_model *m = hlb_balancer_model(r->b, p);
    hlb_exec_pu_stats *st = &s->per_pu[p];
    if (m && hlb_model_fitted(m) && hlb_model_curve(m, &st->model) == 0) {
      st->fitted = 1;
      st->model_terms = hlb_model_terms(m);
      st->model_r2 = hlb_model_r2(m);
    }
  }
}

static void copy_log(run *r, hlb_exec_stats *s) {
  if (!r->o->keep_log) return;
  const hlb_decision *log = r->log;
  size_t n = r->n_log;
  if (r->b) n = hlb_balancer_log(r->b, &log);
  if (!n || !log || !(s->log = malloc(n * sizeof *log))) return;
  memcpy(s->log, log, n * sizeof *log);
  s->n_log = n;
}

static const char *scheduler_name(void) {
  struct starpu_sched_policy *p = starpu_sched_ctx_get_sched_policy(0);
  return p && p->policy_name ? p->policy_name : "?";
}

static int fill_stats(run *r, hlb_starpu_stats *out) {
  hlb_exec_stats *s = &out->exec;
  s->pu = calloc(r->n_pus, sizeof *s->pu);
  s->per_pu = calloc(r->n_pus, sizeof *s->per_pu);
  out->workerid = calloc(r->n_pus, sizeof *out->workerid);
  if (!s->pu || !s->per_pu || !out->workerid) {
    hlb_starpu_stats_clear(out);
    return hlb__error(HLB_ENOMEM, "hlb_starpu: out of memory for the stats of %u workers",
                      r->n_pus);
  }
  s->n_pus = r->n_pus;
  s->n_items = r->n_items;
  for (unsigned p = 0; p < r->n_pus; p++) {
    fill_pu(r, p, &s->pu[p]);
    s->per_pu[p] = r->st[p];
    out->workerid[p] = r->ids[p];
  }
  snprintf(s->policy, sizeof s->policy, "%s", r->b ? hlb_balancer_policy(r->b) : scheduler_name());
  snprintf(out->placement, sizeof out->placement, "%s", r->b ? "hlb" : scheduler_name());
  s->makespan_s = r->last_end;
  if (r->b) {
    s->solver_s = hlb_balancer_solver_seconds(r->b);
    fill_models(r, s);
    s->item_costs_known = hlb_balancer_has_item_cost(r->b);
    s->item_costs_on_trial = hlb_balancer_item_cost_on_trial(r->b);
    s->item_costs_trusted = hlb_balancer_item_cost_trusted(r->b);
    for (unsigned p = 0; p < r->n_pus; p++) {
      s->per_pu[p].prior_samples = hlb_balancer_primed(r->b, p);
      s->per_pu[p].priors_forgotten = r->forgot[p];
      if (s->per_pu[p].prior_samples)
        s->models_from = r->from_file ? HLB_MODELS_STORED : HLB_MODELS_PREVIOUS_RUN;
    }
    if (r->o->memory)
      snprintf(s->model_file, sizeof s->model_file, "%s", hlb__sp_memory_file(r->o->memory));
  }
  copy_log(r, s);
  out->blocks = r->blocks;
  out->adapter_s = r->adapter_s;
  out->blocks_granted_by_workers = r->granted_by_workers;
  return 0;
}

static int check_args(const struct starpu_codelet *cl, unsigned n_split, unsigned n_whole,
                      const hlb_starpu_options *o) {
  if (!cl || !o)
    return hlb__error(HLB_EINVAL, "hlb_starpu: codelet %p and options %p must not be NULL",
                      (const void *)cl, (const void *)o);
  if (n_split == 0 || n_split + n_whole > STARPU_NMAXBUFS)
    return hlb__error(HLB_EINVAL,
                      "hlb_starpu: %u split and %u whole handles: need at least one split and at "
                      "most STARPU_NMAXBUFS (%d) in all",
                      n_split, n_whole, STARPU_NMAXBUFS);
  if (cl->nbuffers != (int)(n_split + n_whole))
    return hlb__error(HLB_EINVAL, "hlb_starpu: codelet '%s' has nbuffers %d, the run gives %u",
                      cl->name ? cl->name : "?", cl->nbuffers, n_split + n_whole);
  if (!o->scheduler_places && o->equal_blocks)
    return hlb__error(HLB_EINVAL,
                      "hlb_starpu: equal_blocks %zu is for scheduler_places; hlb sizes "
                      "its blocks itself",
                      o->equal_blocks);
  return 0;
}

static int run_driver(run *r) {
  int rc = hlb__sp_select_workers(&r->w.cl, r->o, r->ids, &r->n_pus);
  for (unsigned p = 0; !rc && p < r->n_pus; p++) {
    r->mask[r->ids[p] / 32] |= 1u << (r->ids[p] % 32);
    r->settles_in_callback[p] = starpu_worker_get_memory_node(r->ids[p]) == STARPU_MAIN_RAM;
  }
  if (!rc && !r->o->scheduler_places) rc = make_balancer(r);
  if (rc) return rc;
  int was = starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  r->t0 = hlb__now();
  rc = r->b ? drive_balancer(r) : drive_scheduler(r);
  pthread_mutex_lock(&r->mu);
  end_pause(r); /* both drivers resume on waking; never leave StarPU paused */
  pthread_mutex_unlock(&r->mu);
  if (was >= 0) starpu_profiling_status_set(was);
  if (!rc && r->b && r->o->memory)
    rc = hlb__sp_memory_keep(r->o->memory, r->b, r->ids, r->n_pus, r->n_items, r->forgot);
  return rc;
}

int hlb_starpu_run_handles(struct starpu_codelet *cl, const starpu_data_handle_t *split,
                           unsigned n_split, const starpu_data_handle_t *whole, unsigned n_whole,
                           const hlb_starpu_options *opt, hlb_starpu_stats *stats) {
  hlb_starpu_options dflt;
  if (!opt) hlb_starpu_options_default(&dflt);
  const hlb_starpu_options *o = opt ? opt : &dflt;
  if (stats) hlb_starpu_stats_clear(stats);
  int rc = check_args(cl, n_split, n_whole, o);
  if (rc) return rc;
  run *r = calloc(1, sizeof *r);
  if (!r) return hlb__error(HLB_ENOMEM, "hlb_starpu: out of memory");
  r->o = o;
  r->whole = whole;
  r->n_whole = n_whole;
  r->n_split = n_split;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  rc = hlb__sp_wrap_init(&r->w, cl, o);
  unsigned opened = 0;
  for (; !rc && opened < n_split; opened++)
    rc = hlb__sp_split_open(&r->split[opened], split[opened], cl->modes[opened], opened);
  for (unsigned i = 1; !rc && i < n_split; i++)
    if (r->split[i].items != r->split[0].items)
      rc = hlb__error(HLB_EINVAL, "hlb_starpu: split handle %u has %zu items, handle 0 has %zu", i,
                      r->split[i].items, r->split[0].items);
  r->n_items = n_split ? r->split[0].items : 0;
  if (!rc && (r->n_items == 0 || r->n_items > UINT32_MAX))
    rc = hlb__error(HLB_EINVAL,
                    "hlb_starpu: the split handles have %zu items; StarPU's vectors "
                    "and matrices hold 1 to 2^32-1",
                    r->n_items);
  if (!rc) rc = run_driver(r);
  int frc = !rc || r->blocks ? (stats ? fill_stats(r, stats) : 0) : 0;
  for (unsigned i = 0; i < opened; i++)
    hlb__sp_split_close(&r->split[i]);
  hlb_balancer_destroy(r->b);
  free(r->log);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
  return rc ? rc : frc;
}

int hlb_starpu_run(struct starpu_codelet *cl, starpu_data_handle_t data,
                   const hlb_starpu_options *opt, hlb_starpu_stats *stats) {
  return hlb_starpu_run_handles(cl, &data, 1, NULL, 0, opt, stats);
}
