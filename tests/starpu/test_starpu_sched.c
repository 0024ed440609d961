/* hlb_starpu_sched_policy (include/hlb/starpu.h), StarPU started with it: tasks of any codelet
 * run exactly once (through hlb_starpu_run's equal blocks and as plain tasks of their own, a
 * task's worker mask respected), and once the policy has measured the workers a worker made 4x
 * slower (the adapter's emulated throttle) gets the smaller share of the blocks. Exits 77
 * without two cpu workers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/error.h"
#include "hlb/starpu.h"

#define N 40000u

/* x[i] += 1 with some work per item: an item processed twice reads 2, a missed one 0. */
static void add_one_cpu(void *buffers[], void *arg) {
  (void)arg;
  double *x = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
  unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned i = 0; i < n; i++) {
    volatile double acc = 0;
    for (int k = 0; k < 300; k++)
      acc += 1e-9 * k;
    x[i] += 1;
  }
}

static struct starpu_codelet add_one = {
    .cpu_funcs = {add_one_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "sched_add_one"};

static void check_once(const double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (x[i] != 1.0) fail_msg("item %zu processed %g times", i, x[i]);
}

/* One hlb_starpu_run of `blocks` equal blocks placed by the policy; the blocks of worker 1. */
static size_t run_blocks(size_t blocks, double throttle1) {
  double *x = calloc(N, sizeof *x);
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)x, N, sizeof *x);
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.scheduler_places = 1;
  o.equal_blocks = blocks;
  o.throttle[1] = throttle1;
  hlb_starpu_stats st = {0};
  assert_int_equal(hlb_starpu_run(&add_one, h, &o, &st), 0);
  starpu_data_unregister(h);
  check_once(x, N);
  assert_string_equal(st.placement, "hlb");
  assert_int_equal(st.blocks, blocks);
  size_t items = 0, on1 = 0;
  for (unsigned p = 0; p < st.exec.n_pus; p++) {
    items += st.exec.per_pu[p].items;
    if (st.workerid[p] == 1) on1 = st.exec.per_pu[p].blocks;
  }
  assert_int_equal(items, N);
  hlb_starpu_stats_clear(&st);
  free(x);
  return on1;
}

static void blocks_exactly_once(void **state) {
  (void)state;
  hlb_starpu_sched_forget();
  run_blocks(16, 1); /* nothing measured yet: idle workers take the blocks */
  run_blocks(48, 1); /* placed by the models of the first run */
  run_blocks(7, 1);
}

static void throttled_worker_gets_less(void **state) {
  (void)state;
  hlb_starpu_sched_forget();
  run_blocks(32, 4); /* the policy measures both workers */
  size_t on1 = run_blocks(40, 4);
  /* An even split gives worker 1 20 of the 40 blocks; 4x slower, its fair share is 8. */
  if (on1 >= 16) fail_msg("the 4x-throttled worker 1 ran %zu of 40 blocks", on1);
}

/* Plain tasks, each over a vector of its own, of unequal sizes; some may run on worker 0 only. */
static int ran_on[256];
static void mark_cpu(void *buffers[], void *arg) {
  add_one_cpu(buffers, NULL);
  ran_on[(uintptr_t)arg] = starpu_worker_get_id();
}
static struct starpu_codelet mark = {
    .cpu_funcs = {mark_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "sched_mark"};

static void plain_tasks(void **state) {
  (void)state;
  enum { T = 200 };
  double *x[T];
  starpu_data_handle_t h[T];
  uint32_t only0 = 1u; /* worker 0 */
  for (uintptr_t k = 0; k < T; k++) {
    unsigned n = 50 + (unsigned)(k % 7) * 100;
    x[k] = calloc(n, sizeof *x[k]);
    starpu_vector_data_register(&h[k], STARPU_MAIN_RAM, (uintptr_t)x[k], n, sizeof *x[k]);
    struct starpu_task *t = starpu_task_create();
    t->cl = &mark;
    t->handles[0] = h[k];
    t->cl_arg = (void *)k;
    if (k % 5 == 0) {
      t->workerids = &only0;
      t->workerids_len = 1;
    }
    ran_on[k] = -1;
    assert_int_equal(starpu_task_submit(t), 0);
  }
  assert_int_equal(starpu_task_wait_for_all(), 0);
  for (uintptr_t k = 0; k < T; k++) {
    unsigned n = 50 + (unsigned)(k % 7) * 100;
    starpu_data_unregister(h[k]);
    check_once(x[k], n);
    free(x[k]);
    assert_true(ran_on[k] >= 0);
    if (k % 5 == 0 && ran_on[k] != 0)
      fail_msg("task %u, masked to worker 0, ran on %d", (unsigned)k, ran_on[k]);
  }
}

int main(void) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.sched_policy = hlb_starpu_sched_policy();
  if (starpu_init(&conf) != 0) {
    fprintf(stderr, "skipped: starpu_init found no worker\n");
    return 77;
  }
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 2) {
    starpu_shutdown();
    fprintf(stderr, "skipped: StarPU has fewer than two cpu workers here\n");
    return 77;
  }
  const char *name = starpu_sched_ctx_get_sched_policy(0)->policy_name;
  if (strcmp(name, "hlb")) {
    fprintf(stderr, "FAIL: StarPU runs scheduler '%s', not hlb's\n", name);
    starpu_shutdown();
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocks_exactly_once),
      cmocka_unit_test(throttled_worker_gets_less),
      cmocka_unit_test(plain_tasks),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  starpu_shutdown();
  hlb_starpu_sched_forget();
  return rc;
}
