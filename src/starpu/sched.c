/* hlb_starpu_sched_policy (include/hlb/starpu.h): a StarPU scheduling policy that places each
 * task on the worker with the earliest predicted finish, predicted by hlb's models
 * (include/hlb/model.h) fitted per worker (not per architecture, as StarPU's history models
 * are) from the measured times of the tasks that worker ran.
 *
 * A task's size x is the bytes of the buffers it writes (all its buffers when it writes
 * none): for a block of a divisible workload, a measure of its items. Each worker's model of a
 * codelet (keyed by its performance model's symbol, else its name) is an hlb_model of x when
 * the worker has run at least two distinct sizes (refitted as samples double, then every
 * REFIT samples), else its mean time per byte. Until every worker that can run a task has a
 * model of its codelet the task goes to a queue shared by all, from which idle workers take
 * (eager), so that every worker measures itself; after that push_task puts it on the worker
 * queue with the earliest predicted end: the predicted end of the task it runs plus the
 * predictions of its queued ones. A worker whose queue is empty takes from the shared queue,
 * then steals the last task of the worker with the latest predicted end (a model that
 * mispredicts costs an idle worker no more than the stolen task). Models live for the process,
 * across starpu_init, so later runs start placed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/model.h"
#include "internal.h"

/* Codelets whose models are kept; beyond this, tasks of new codelets are placed eagerly. */
#define SCHED_KINDS 32
/* Refit every this many samples once past it (a fit costs about 0.15 ms). */
#define REFIT 16u

typedef struct wmodel {
  hlb_model *m;
  size_t n;            /* accepted samples */
  double sum_x, sum_t; /* for the mean rate */
  double x_min, x_max; /* sizes seen */
  int fitted;
} wmodel;

typedef struct kind {
  char key[64];
  wmodel w[STARPU_NMAXWORKERS];
} kind;

typedef struct sched {
  pthread_mutex_t mu; /* queues, predictions and models */
  struct starpu_task_list shared;
  struct starpu_task_list q[STARPU_NMAXWORKERS];
  double queued_s[STARPU_NMAXWORKERS];    /* sum of the predictions of q[w] */
  double running_end[STARPU_NMAXWORKERS]; /* predicted end of the task w runs; 0: none */
  double started[STARPU_NMAXWORKERS];     /* when w's current task started (our clock) */
  kind kinds[SCHED_KINDS];
  unsigned n_kinds;
} sched;

static sched S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void) {
  return starpu_timing_now() / 1e6;
}

static void task_key(const struct starpu_task *t, char *out, size_t cap) {
  const struct starpu_codelet *cl = t->cl;
  if (cl->model && cl->model->symbol)
    snprintf(out, cap, "%s", cl->model->symbol);
  else if (cl->name)
    snprintf(out, cap, "%s", cl->name);
  else
    snprintf(out, cap, "%p", (const void *)cl);
}

/* The kind of the task's codelet, made when new; NULL when the table is full. */
static kind *kind_of(const struct starpu_task *t) {
  char key[64];
  task_key(t, key, sizeof key);
  for (unsigned i = 0; i < S.n_kinds; i++)
    if (!strcmp(S.kinds[i].key, key)) return &S.kinds[i];
  if (S.n_kinds == SCHED_KINDS) return NULL;
  kind *k = &S.kinds[S.n_kinds++];
  memset(k, 0, sizeof *k);
  memcpy(k->key, key, sizeof k->key);
  return k;
}

/* Bytes the task writes (all its bytes when it writes nothing). */
static double task_size(const struct starpu_task *t) {
  double w = 0, all = 0;
  unsigned n = STARPU_TASK_GET_NBUFFERS(t);
  for (unsigned i = 0; i < n; i++) {
    double b = (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(t, i));
    all += b;
    if (STARPU_TASK_GET_MODE(t, i) & STARPU_W) w += b;
  }
  return w > 0 ? w : all > 0 ? all : 1;
}

/* Predicted seconds for a task of size x on worker w; NAN when w has no model yet. */
static double predict(const wmodel *m, double x) {
  if (m->n == 0) return NAN;
  if (m->fitted && x <= 2 * m->x_max && x >= m->x_min / 2) {
    double t = hlb_model_predict(m->m, x);
    if (t > 0 && isfinite(t)) return t;
  }
  return m->sum_t / m->sum_x * x;
}

static void learn(wmodel *m, double x, double compute_s, double transfer_s) {
  if (!(compute_s > 0) || !isfinite(compute_s) || !(transfer_s >= 0)) return;
  if (!m->m && hlb_model_create(x, NULL, &m->m) != 0) {
    hlb_clear_error();
    return;
  }
  if (hlb_model_add(m->m, x, compute_s, transfer_s) != 0) {
    hlb_clear_error();
    return;
  }
  m->n++;
  m->sum_x += x;
  m->sum_t += compute_s + transfer_s;
  m->x_min = m->n == 1 ? x : fmin(m->x_min, x);
  m->x_max = m->n == 1 ? x : fmax(m->x_max, x);
  /* Refit as samples double, then every REFIT; equal sizes cannot be fitted (the mean rate
   * stands for them). */
  int due = (m->n & (m->n - 1)) == 0 || m->n % REFIT == 0;
  if (due && m->x_max > m->x_min) {
    if (hlb_model_fit(m->m, m->x_max) == 0)
      m->fitted = 1;
    else
      hlb_clear_error();
  }
}

static int allowed(const struct starpu_task *t, unsigned w) {
  if (t->workerids_len &&
      (w / 32 >= t->workerids_len || !(t->workerids[w / 32] & (1u << (w % 32)))))
    return 0;
  return starpu_worker_can_execute_task_first_impl(w, (struct starpu_task *)t, NULL);
}

/* When worker w would finish everything it has if it were given nothing more. */
static double end_of(unsigned w, double now) {
  double e = S.running_end[w] > now ? S.running_end[w] : now;
  return e + S.queued_s[w];
}

static int push(struct starpu_task *t) {
  struct starpu_worker_collection *ws = starpu_sched_ctx_get_worker_collection(t->sched_ctx);
  pthread_mutex_lock(&S.mu);
  double now = now_s(), x = task_size(t), best_end = INFINITY;
  kind *k = kind_of(t);
  int best = -1, unknown = k == NULL;
  struct starpu_sched_ctx_iterator it;
  ws->init_iterator(ws, &it);
  while (ws->has_next(ws, &it) && !unknown) {
    unsigned w = (unsigned)ws->get_next(ws, &it);
    if (!allowed(t, w)) continue;
    double p = predict(&k->w[w], x);
    if (isnan(p)) {
      unknown = 1; /* a worker that can run it has not measured itself: place eagerly */
      break;
    }
    double e = end_of(w, now) + p;
    if (e < best_end) {
      best_end = e;
      best = (int)w;
    }
  }
  if (unknown || best < 0) {
    t->predicted = 0; /* unknown */
    starpu_task_list_push_back(&S.shared, t);
  } else {
    double p = best_end - end_of((unsigned)best, now);
    t->predicted = p * 1e6; /* StarPU's unit: microseconds */
    S.queued_s[best] += p;
    starpu_task_list_push_back(&S.q[best], t);
  }
  starpu_push_task_end(t);
  pthread_mutex_unlock(&S.mu);
#ifndef STARPU_NON_BLOCKING_DRIVERS
  /* Blocking drivers sleep until woken: wake the chosen worker, or every one for the shared
   * queue (non-blocking drivers poll pop_task). */
  if (best >= 0 && !unknown) {
    starpu_wake_worker_relax_light(best);
  } else {
    ws->init_iterator(ws, &it);
    while (ws->has_next(ws, &it))
      starpu_wake_worker_relax_light(ws->get_next(ws, &it));
  }
#endif
  return 0;
}

/* The first task of list l that worker w may run, taken out of l. */
static struct starpu_task *take(struct starpu_task_list *l, unsigned w, int from_back) {
  struct starpu_task *t = from_back ? starpu_task_list_back(l) : starpu_task_list_front(l);
  while (t && !allowed(t, w))
    t = from_back ? t->prev : t->next;
  if (t) starpu_task_list_erase(l, t);
  return t;
}

static double queued_prediction(const struct starpu_task *t) {
  return t->predicted / 1e6;
}

static struct starpu_task *pop(unsigned sched_ctx_id) {
  (void)sched_ctx_id;
  unsigned w = starpu_worker_get_id_check();
  if (w >= STARPU_NMAXWORKERS) return NULL;
  pthread_mutex_lock(&S.mu);
  /* StarPU 1.3's pop_front must not be given an empty list. */
  struct starpu_task *t =
      starpu_task_list_empty(&S.q[w]) ? NULL : starpu_task_list_pop_front(&S.q[w]);
  if (t) S.queued_s[w] -= queued_prediction(t);
  if (!t) t = take(&S.shared, w, 0);
  if (!t) { /* steal the last task of the worker that will finish last */
    double now = now_s(), latest = 0;
    int victim = -1;
    for (unsigned v = 0; v < STARPU_NMAXWORKERS; v++) {
      if (v == w || starpu_task_list_empty(&S.q[v])) continue;
      double e = end_of(v, now);
      if (e > latest) latest = e, victim = (int)v;
    }
    if (victim >= 0 && (t = take(&S.q[victim], w, 1)) != NULL)
      S.queued_s[victim] -= queued_prediction(t);
  }
  if (S.queued_s[w] < 0) S.queued_s[w] = 0;
  pthread_mutex_unlock(&S.mu);
  return t;
}

static void pre_exec(struct starpu_task *t, unsigned sched_ctx_id) {
  (void)sched_ctx_id;
  int w = starpu_worker_get_id();
  if (w < 0 || w >= STARPU_NMAXWORKERS || !t->cl) return;
  pthread_mutex_lock(&S.mu);
  double now = now_s();
  S.started[w] = now;
  kind *k = kind_of(t);
  double p = k ? predict(&k->w[w], task_size(t)) : NAN;
  S.running_end[w] = now + (isnan(p) ? 0 : p);
  pthread_mutex_unlock(&S.mu);
}

static double since(const struct timespec *a, const struct timespec *b) {
  return starpu_timing_timespec_delay_us((struct timespec *)a, (struct timespec *)b) / 1e6;
}

static void post_exec(struct starpu_task *t, unsigned sched_ctx_id) {
  (void)sched_ctx_id;
  int w = starpu_worker_get_id();
  if (w < 0 || w >= STARPU_NMAXWORKERS || !t->cl) return;
  pthread_mutex_lock(&S.mu);
  double now = now_s(), compute = now - S.started[w], transfer = 0;
  /* With profiling on, StarPU's own times: the kernel alone, and fetching its data. */
  const struct starpu_profiling_task_info *pi = t->profiling_info;
  if (pi && (pi->end_time.tv_sec || pi->end_time.tv_nsec)) {
    compute = since(&pi->start_time, &pi->end_time);
    transfer = since(&pi->acquire_data_start_time, &pi->acquire_data_end_time);
  }
  kind *k = kind_of(t);
  if (k) learn(&k->w[w], task_size(t), compute, transfer > 0 ? transfer : 0);
  S.running_end[w] = 0;
  pthread_mutex_unlock(&S.mu);
}

static void init_sched(unsigned sched_ctx_id) {
  (void)sched_ctx_id;
  pthread_mutex_lock(&S.mu);
  starpu_task_list_init(&S.shared);
  for (unsigned w = 0; w < STARPU_NMAXWORKERS; w++) {
    starpu_task_list_init(&S.q[w]);
    S.queued_s[w] = S.running_end[w] = S.started[w] = 0;
  }
  pthread_mutex_unlock(&S.mu);
}

static void deinit_sched(unsigned sched_ctx_id) {
  (void)sched_ctx_id; /* the queues are empty at shutdown; the models stay for the next init */
}

static struct starpu_sched_policy policy = {
    .init_sched = init_sched,
    .deinit_sched = deinit_sched,
    .push_task = push,
    .pop_task = pop,
    .pre_exec_hook = pre_exec,
    .post_exec_hook = post_exec,
    .policy_name = "hlb",
    .policy_description = "earliest predicted finish from hlb's models fitted per worker "
                          "(libhlb_starpu)",
    .worker_type = STARPU_WORKER_LIST,
};

struct starpu_sched_policy *hlb_starpu_sched_policy(void) {
  return &policy;
}

void hlb_starpu_sched_forget(void) {
  pthread_mutex_lock(&S.mu);
  for (unsigned i = 0; i < S.n_kinds; i++)
    for (unsigned w = 0; w < STARPU_NMAXWORKERS; w++)
      hlb_model_destroy(S.kinds[i].w[w].m);
  S.n_kinds = 0;
  pthread_mutex_unlock(&S.mu);
}
