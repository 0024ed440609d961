/* libhlb_starpu (include/hlb/starpu.h) on StarPU's workers: every item processed exactly once
 * under several policies and under StarPU's own scheduler, vectors and matrices, a throttled
 * worker that gets less work, and errors that name the place and the value. Exits 77 when
 * StarPU has no worker here. Workers come from the environment (tests/starpu/CMakeLists.txt
 * sets STARPU_NCPU and friends per test). */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <cmocka.h>
#include <dirent.h>
#include <unistd.h>

#include "hlb/error.h"
#include "hlb/starpu.h"

#define N 20000u

/* x[i] += 1: an item processed twice reads 2, a missed one 0. Costs a little per item so the
 * blocks take measurable time. */
static void add_one_cpu(void *buffers[], void *arg) {
  (void)arg;
  double *x = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
  unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned i = 0; i < n; i++) {
    double acc = 0;
    for (int k = 0; k < 200; k++)
      acc += 1e-9 * k;
    x[i] += 1 + acc * 0;
  }
}

static struct starpu_codelet add_one = {
    .cpu_funcs = {add_one_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "test_add_one"};

static void check_once(const double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (x[i] != 1.0) fail_msg("item %zu processed %g times", i, x[i]);
}

static size_t items_of(const hlb_starpu_stats *st) {
  size_t s = 0;
  for (unsigned p = 0; p < st->exec.n_pus; p++)
    s += st->exec.per_pu[p].items;
  return s;
}

static void run_vector(const char *policy, int scheduler) {
  double *x = calloc(N, sizeof *x);
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)x, N, sizeof *x);
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = policy;
  o.scheduler_places = scheduler;
  hlb_starpu_stats st = {0};
  int rc = hlb_starpu_run(&add_one, h, &o, &st);
  if (rc) fail_msg("policy %s: %s: %s", policy ? policy : "-", hlb_err_name(rc), hlb_last_error());
  starpu_data_unregister(h);
  check_once(x, N);
  assert_int_equal(items_of(&st), N);
  assert_true(st.blocks > 0);
  assert_true(st.exec.makespan_s > 0);
  assert_int_equal(st.exec.n_pus, starpu_worker_get_count_by_type(STARPU_CPU_WORKER));
  if (!scheduler) assert_string_equal(st.exec.policy, policy);
  assert_string_equal(st.placement, scheduler ? st.exec.policy : "hlb");
  hlb_starpu_stats_clear(&st);
  free(x);
}

static void policies_exactly_once(void **state) {
  (void)state;
  const char *policies[] = {"hlb", "plb-hec", "plb-hac", "greedy", "static", "guided"};
  for (unsigned i = 0; i < sizeof policies / sizeof *policies; i++)
    run_vector(policies[i], 0);
}

static void scheduler_places_exactly_once(void **state) {
  (void)state;
  run_vector(NULL, 1);
}

/* Rows of a matrix with a leading dimension wider than a row: row r gets r + 1 in every
 * element, found through hlb_starpu_current_block; the padding stays untouched. */
enum { NX = 5, LD = 7, NY = 3001 };

static void rows_cpu(void *buffers[], void *arg) {
  (void)arg;
  float *m = (float *)STARPU_MATRIX_GET_PTR(buffers[0]);
  unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]);
  unsigned ld = STARPU_MATRIX_GET_LD(buffers[0]);
  size_t begin = 0, count = 0;
  if (hlb_starpu_current_block(&begin, &count) || count != ny) return; /* the check sees it */
  for (unsigned y = 0; y < ny; y++)
    for (unsigned xi = 0; xi < nx; xi++)
      m[y * ld + xi] += (float)(begin + y + 1);
}

static struct starpu_codelet rows = {
    .cpu_funcs = {rows_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "test_rows"};

static void matrix_rows(void **state) {
  (void)state;
  float *m = calloc((size_t)LD * NY, sizeof *m);
  starpu_data_handle_t h;
  starpu_matrix_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)m, LD, NX, NY, sizeof *m);
  hlb_starpu_stats st = {0};
  int rc = hlb_starpu_run(&rows, h, NULL, &st);
  if (rc) fail_msg("%s: %s", hlb_err_name(rc), hlb_last_error());
  starpu_data_unregister(h);
  for (unsigned y = 0; y < NY; y++)
    for (unsigned xi = 0; xi < LD; xi++) {
      float want = xi < NX ? (float)(y + 1) : 0.0f;
      if (m[y * LD + xi] != want)
        fail_msg("row %u column %u: %g, want %g", y, xi, m[y * LD + xi], want);
    }
  assert_int_equal(items_of(&st), NY);
  hlb_starpu_stats_clear(&st);
  free(m);
}

/* cl over a fresh vector of n zeros under policy hlb and `o`'s throttles (NULL: none): every
 * item once (the kernel adds one) and the stats' items adding up to n; the stats in *st. */
static void run_checked(struct starpu_codelet *cl, const hlb_starpu_options *o, size_t n,
                        hlb_starpu_stats *st) {
  double *x = calloc(n, sizeof *x);
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)x, n, sizeof *x);
  hlb_starpu_options opt;
  if (o)
    opt = *o;
  else
    hlb_starpu_options_default(&opt);
  opt.policy = "hlb";
  int rc = hlb_starpu_run(cl, h, &opt, st);
  if (rc) fail_msg("%s: %s", hlb_err_name(rc), hlb_last_error());
  starpu_data_unregister(h);
  check_once(x, n);
  assert_int_equal(items_of(st), n);
  free(x);
}

/* Cpu workers settle their own blocks: each task's callback gives the balancer its sample and
 * submits the worker's next block, so every block but none is granted by the driver thread
 * after the first ones; the items still add up exactly once. */
static void cpu_workers_grant_their_own_blocks(void **state) {
  (void)state;
  hlb_starpu_stats st = {0};
  run_checked(&add_one, NULL, N, &st);
  /* Every block is settled in its callback (the driver settles only a device's). */
  assert_int_equal(st.blocks_granted_by_workers, st.blocks);
  hlb_starpu_stats_clear(&st);
}

/* Worker 0's kernels wait (up to 30 s) until worker 1 has got that far, so that worker 1 is
 * sure to take part however the machine's load delays its thread. */
static void wait_for_worker1(atomic_int *progress, int at_least) {
  if (starpu_worker_get_id() != 0) return;
  for (int ms = 0; ms < 30000 && atomic_load(progress) < at_least; ms++)
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
}

/* Worker 1 refuses every task after its first: the refusal happens when its next block is
 * submitted from a callback. The worker is retired, its block goes back to the pool, and the
 * other worker processes every item left, exactly once. */
static atomic_int worker1_ran;

static void add_one_noting_worker(void *buffers[], void *arg) {
  wait_for_worker1(&worker1_ran, 1);
  add_one_cpu(buffers, arg);
  if (starpu_worker_get_id() == 1) atomic_store(&worker1_ran, 1);
}

static int refuse_worker1_after_one(unsigned workerid, struct starpu_task *task, unsigned nimpl) {
  (void)task;
  (void)nimpl;
  return workerid != 1 || !atomic_load(&worker1_ran);
}

static void refusing_worker_is_retired(void **state) {
  (void)state;
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 2) skip();
  atomic_store(&worker1_ran, 0);
  struct starpu_codelet cl = add_one;
  cl.cpu_funcs[0] = add_one_noting_worker;
  cl.can_execute = refuse_worker1_after_one;
  hlb_starpu_stats st = {0};
  run_checked(&cl, NULL, N, &st);
  unsigned w1 = st.workerid[0] == 1 ? 0 : 1;
  const hlb_exec_pu_stats *s = &st.exec.per_pu[w1];
  assert_true(s->retired);
  assert_int_equal(s->failed_blocks, 1);
  assert_int_equal(s->blocks, 1); /* the one it ran before refusing */
  assert_non_null(strstr(s->failure, "submitting"));
  assert_false(st.exec.per_pu[1 - w1].retired);
  hlb_starpu_stats_clear(&st);
}

/* An executor codelet whose kernel fails on worker 1 after its first block: the failed blocks
 * go back to the pool, the worker is retired after HLB_EXEC_MAX_FAILURES in a row, and the
 * output is still complete and right. */
static atomic_int worker1_blocks;

static int double_failing_on_worker1(const hlb_exec_call *c) {
  /* its first block, then HLB_EXEC_MAX_FAILURES failed ones */
  wait_for_worker1(&worker1_blocks, 1 + (int)HLB_EXEC_MAX_FAILURES);
  if (starpu_worker_get_id() == 1 && atomic_fetch_add(&worker1_blocks, 1) > 0)
    return HLB_EDEVICE; /* before writing anything, as a device that gives up would */
  const double *in = c->in;
  double *out = c->out;
  for (size_t i = 0; i < c->count; i++)
    out[i] = 2 * in[i];
  return 0;
}

static void kernel_errors_retire_the_worker(void **state) {
  (void)state;
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 2) skip();
  atomic_store(&worker1_blocks, 0);
  double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
  for (size_t i = 0; i < N; i++)
    in[i] = (double)i, out[i] = -1;
  hlb_codelet cl = {.name = "test_failing",
                    .in_bytes_per_item = sizeof(double),
                    .out_bytes_per_item = sizeof(double),
                    .in = in,
                    .out = out,
                    .cpu = double_failing_on_worker1};
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "hlb";
  hlb_starpu_stats st = {0};
  int rc = hlb_starpu_run_codelet(&cl, N, &o, &st);
  if (rc) fail_msg("%s: %s", hlb_err_name(rc), hlb_last_error());
  for (size_t i = 0; i < N; i++)
    if (out[i] != 2 * in[i]) fail_msg("out[%zu] = %g, expected %g", i, out[i], 2 * in[i]);
  assert_int_equal(items_of(&st), N);
  unsigned w1 = st.workerid[0] == 1 ? 0 : 1;
  const hlb_exec_pu_stats *s = &st.exec.per_pu[w1];
  assert_true(s->retired);
  assert_int_equal(s->failed_blocks, HLB_EXEC_MAX_FAILURES);
  assert_non_null(strstr(s->failure, "test_failing"));
  hlb_starpu_stats_clear(&st);
  free(in);
  free(out);
}

/* Worker 1 throttled 8x: hlb measures it slower and gives it the smaller share (a fair
 * split gives it 1/9 of the items with two workers; under 40 % is asked). At 4x (1/5), with
 * three busy processes beside it on the two cores, it got 41 % in one run of six; at 8x it
 * stayed under in eight of eight. */
static void throttled_worker(void **state) {
  (void)state;
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 2) skip();
  double *x = calloc(N * 4, sizeof *x);
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)x, N * 4, sizeof *x);
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.throttle[1] = 8;
  hlb_starpu_stats st = {0};
  int rc = hlb_starpu_run(&add_one, h, &o, &st);
  if (rc) fail_msg("%s: %s", hlb_err_name(rc), hlb_last_error());
  starpu_data_unregister(h);
  check_once(x, N * 4);
  unsigned slow = st.workerid[0] == 1 ? 0 : 1;
  const hlb_exec_pu_stats *s = &st.exec.per_pu[slow], *f = &st.exec.per_pu[1 - slow];
  assert_true(s->throttle_s > 0);
  assert_true(f->throttle_s == 0);
  assert_true(st.exec.pu[slow].throttle == 8);
  if (!(s->items * 10 < (s->items + f->items) * 4))
    fail_msg("the 8x-throttled worker got %zu of %zu items (want under 40 %%)", s->items,
             s->items + f->items);
  hlb_starpu_stats_clear(&st);
  free(x);
}

static void errors_name_the_value(void **state) {
  (void)state;
  double x[4] = {0};
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)x, 4, sizeof *x);
  struct starpu_codelet two = add_one;
  two.nbuffers = 2;
  assert_int_equal(hlb_starpu_run(&two, h, NULL, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "nbuffers 2"));
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "no-such-policy";
  assert_int_equal(hlb_starpu_run(&add_one, h, &o, NULL), HLB_ENOTFOUND);
  assert_non_null(strstr(hlb_last_error(), "no-such-policy"));
  hlb_starpu_options_default(&o);
  o.throttle[0] = 0.5;
  assert_int_equal(hlb_starpu_run(&add_one, h, &o, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "throttle[0] = 0.5"));
  hlb_starpu_options_default(&o);
  o.workers[0] = 99;
  o.n_workers = 1;
  assert_int_equal(hlb_starpu_run(&add_one, h, &o, NULL), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "workers[0] = 99"));
  assert_int_equal(hlb_starpu_current_block(NULL, NULL), HLB_ESTATE);
  /* Nothing ran, and the handle is free again: a valid run still works on it. */
  assert_int_equal(hlb_starpu_run(&add_one, h, NULL, NULL), 0);
  starpu_data_unregister(h);
  for (int i = 0; i < 4; i++)
    assert_true(x[i] == 1.0);
}

/* hlb_starpu_passes: out[i] = in[i] * scale[0], scale changed by the host between passes. */
static int scale_kernel(const hlb_exec_call *c) {
  const double *in = c->in, *k = c->shared[0];
  double *out = c->out;
  for (size_t i = 0; i < c->count; i++) {
    volatile double acc = 0;
    for (int j = 0; j < 200; j++)
      acc += 1e-9 * j;
    out[i] = in[i] * k[0] + (double)(c->begin + i) * 0;
  }
  return 0;
}

static hlb_codelet scale_codelet(const double *in, double *out, const double *scale) {
  return (hlb_codelet){.name = "test_scale",
                       .in_bytes_per_item = sizeof(double),
                       .out_bytes_per_item = sizeof(double),
                       .in = in,
                       .out = out,
                       .shared = {{scale, sizeof *scale}},
                       .n_shared = 1,
                       .cpu = scale_kernel};
}

static void passes_learn_and_see_changes(void **state) {
  (void)state;
  double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out), scale = 2;
  for (size_t i = 0; i < N; i++)
    in[i] = (double)i;
  hlb_codelet cl = scale_codelet(in, out, &scale);
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "hlb";
  hlb_starpu_passes *p = NULL;
  assert_int_equal(hlb_starpu_passes_open(&cl, N, &o, &p), 0);
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < N; i++)
      out[i] = -1;
    hlb_starpu_stats st = {0};
    assert_int_equal(hlb_starpu_passes_run(p, pass ? 1u : ~0u, &st), 0);
    assert_int_equal(items_of(&st), N);
    for (size_t i = 0; i < N; i++)
      if (out[i] != in[i] * scale)
        fail_msg("pass %d: out[%zu] = %g, expected %g", pass, i, out[i], in[i] * scale);
    /* A later pass starts from the samples of the earlier ones (policy hlb takes priors). */
    size_t primed = 0;
    for (unsigned q = 0; q < st.exec.n_pus; q++)
      primed += st.exec.per_pu[q].prior_samples;
    if (pass == 0) assert_int_equal(primed, 0);
    if (pass > 0 && primed == 0) fail_msg("pass %d started from no samples", pass);
    hlb_starpu_stats_clear(&st);
    scale += 1; /* the host's step: the next pass must see it */
  }
  hlb_starpu_passes_close(p);
  /* A memory given by the caller carries across hlb_starpu_run_codelet calls. */
  hlb_starpu_memory *mem = NULL;
  assert_int_equal(hlb_starpu_memory_create(&mem), 0);
  o.memory = mem;
  for (int run = 0; run < 2; run++) {
    hlb_starpu_stats st = {0};
    assert_int_equal(hlb_starpu_run_codelet(&cl, N, &o, &st), 0);
    assert_int_equal(items_of(&st), N);
    if (run == 1 && st.exec.models_from != HLB_MODELS_PREVIOUS_RUN)
      fail_msg("the second run did not start from the memory");
    hlb_starpu_stats_clear(&st);
  }
  hlb_starpu_memory_destroy(mem);
  assert_int_equal(hlb_starpu_memory_create(NULL), HLB_EINVAL);
  assert_int_equal(hlb_starpu_passes_open(&cl, N, &o, NULL), HLB_EINVAL);
  assert_int_equal(hlb_starpu_passes_run(NULL, 0, NULL), HLB_EINVAL);
  free(in);
  free(out);
}

/* The samples stored for PU `key` in the one model file under dir/HOST/ (-1: no file). */
static int stored_samples(const char *dir, const char *key) {
  char path[1024], host[512] = "";
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') snprintf(host, sizeof host, "%s/%s", dir, e->d_name);
  closedir(d);
  if (!host[0] || !(d = opendir(host))) return -1;
  path[0] = 0;
  while ((e = readdir(d)))
    if (strstr(e->d_name, "test_scale")) snprintf(path, sizeof path, "%s/%s", host, e->d_name);
  closedir(d);
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return -1;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  cJSON *root = cJSON_Parse(text), *pu;
  int found = 0;
  cJSON_ArrayForEach(pu, cJSON_GetObjectItem(root, "pus")) {
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(pu, "pu"));
    if (k && !strcmp(k, key)) found = cJSON_GetArraySize(cJSON_GetObjectItem(pu, "samples"));
  }
  cJSON_Delete(root);
  return found;
}

/* A model file keeps the newest 64 samples of each PU (docs/models.md). */
#define FILE_KEEP 64

static int kept(size_t n) {
  return n < FILE_KEEP ? (int)n : FILE_KEEP;
}

/* One run of the scale codelet through a memory read from and saved to model files in dir;
 * returns its stats' models_from and the blocks of worker `id`'s PU, and whether the stored
 * samples are replaced, not added to: that PU's first blocks contradicted them, or the run's
 * samples are in other units (item costs on trial that predicted the run, or trusted ones that
 * no longer did: hlb_balancer_samples_rescaled; with timings that scatter, a run of this
 * codelet may find either). */
static int run_from_files(const char *dir, hlb_starpu_options *o, size_t *blocks, int id,
                          int *forgot) {
  static double in[N], out[N], scale = 3;
  for (size_t i = 0; i < N; i++)
    in[i] = (double)i;
  hlb_codelet cl = scale_codelet(in, out, &scale);
  hlb_starpu_memory *mem = NULL;
  assert_int_equal(hlb_starpu_memory_create(&mem), 0);
  assert_int_equal(hlb_starpu_memory_load(mem, &cl, o, dir), 0);
  o->memory = mem;
  hlb_starpu_stats st = {0};
  assert_int_equal(hlb_starpu_run_codelet(&cl, N, o, &st), 0);
  assert_int_equal(items_of(&st), N);
  for (size_t i = 0; i < N; i++)
    if (out[i] != in[i] * scale) fail_msg("out[%zu] = %g, expected %g", i, out[i], in[i] * scale);
  *blocks = 0;
  *forgot = 0;
  for (unsigned q = 0; q < st.exec.n_pus; q++)
    if (st.workerid[q] == id) {
      *blocks = st.exec.per_pu[q].blocks;
      *forgot = st.exec.per_pu[q].priors_forgotten;
    }
  const hlb_exec_stats *e = &st.exec;
  if ((e->item_costs_on_trial && e->item_costs_trusted) ||
      (e->item_costs_known && !e->item_costs_trusted))
    *forgot = 1;
  int from = st.exec.models_from;
  if (from == HLB_MODELS_STORED) assert_non_null(strstr(st.exec.model_file, dir));
  hlb_starpu_stats_clear(&st);
  assert_int_equal(hlb_starpu_memory_save(mem, &cl, o, dir), 0);
  /* Saved once: a second save adds nothing more. */
  assert_int_equal(hlb_starpu_memory_save(mem, &cl, o, dir), 0);
  hlb_starpu_memory_destroy(mem);
  o->memory = NULL;
  return from;
}

/* hlb_starpu_memory_load/save: a later process's run starts from the model files, each
 * worker under its own key (a throttled worker under another), and what a run adds is
 * written once; a corrupt file is ignored. */
static void memory_kept_in_model_files(void **state) {
  (void)state;
  char dir[] = "/tmp/hlb_starpu_models_XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "hlb";
  char key0[160], key1[160], name[32];
  snprintf(key0, sizeof key0, "starpu %s|", hlb_starpu_worker_name(0, name, sizeof name));
  size_t blocks0 = 0, blocks1 = 0;
  int forgot = 0;
  assert_int_equal(stored_samples(dir, "none"), -1);
  assert_int_equal(run_from_files(dir, &o, &blocks0, 0, &forgot), HLB_MODELS_TRAINED);
  /* The worker's key: its name, StarPU's name of it, one core. */
  char wname[64];
  starpu_worker_get_name(0, wname, sizeof wname);
  snprintf(key0 + strlen(key0), sizeof key0 - strlen(key0), "%s|cores=1", wname);
  int first = stored_samples(dir, key0);
  if (first != kept(blocks0))
    fail_msg("%s: %d samples stored, the run did %zu blocks", key0, first, blocks0);
  assert_int_equal(run_from_files(dir, &o, &blocks0, 0, &forgot), HLB_MODELS_STORED);
  int second = stored_samples(dir, key0), expect = kept((forgot ? 0 : (size_t)first) + blocks0);
  if (second != expect)
    fail_msg("%s: %d samples after the second run (%zu blocks, priors %s), expected %d", key0,
             second, blocks0, forgot ? "replaced" : "kept", expect);
  /* Worker 1 throttled 4x is another PU: it starts from nothing and is stored apart. */
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) >= 2) {
    o.throttle[1] = 4;
    char wname1[64];
    starpu_worker_get_name(1, wname1, sizeof wname1);
    snprintf(key1, sizeof key1, "starpu %s|%s|cores=1|throttle=4",
             hlb_starpu_worker_name(1, name, sizeof name), wname1);
    assert_int_equal(run_from_files(dir, &o, &blocks1, 1, &forgot), HLB_MODELS_STORED);
    assert_int_equal(stored_samples(dir, key1), kept(blocks1));
    o.throttle[1] = 0;
  }
  /* A corrupt file: ignored (one warning), the run trains, and its samples replace it. */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "for f in %s/*/test_scale*.json; do echo '{not json' > \"$f\"; done",
           dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(run_from_files(dir, &o, &blocks0, 0, &forgot), HLB_MODELS_TRAINED);
  assert_int_equal(stored_samples(dir, key0), kept(blocks0));
  hlb_starpu_memory *mem = NULL;
  assert_int_equal(hlb_starpu_memory_create(&mem), 0);
  assert_int_equal(hlb_starpu_memory_load(mem, NULL, &o, dir), HLB_EINVAL);
  assert_int_equal(hlb_starpu_memory_save(NULL, NULL, &o, dir), HLB_EINVAL);
  hlb_starpu_memory_destroy(mem);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A run pauses StarPU's workers when its last block ends (pause_at_end) and must resume them
 * before it returns: a task submitted after the run then runs. Left paused, it would not
 * (the test gives up after 5 s and resumes StarPU itself, so that it fails instead of hanging). */
static atomic_int marked;

static void mark_cpu(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
  atomic_store(&marked, 1);
}

static struct starpu_codelet mark = {.cpu_funcs = {mark_cpu}, .nbuffers = 0, .name = "test_mark"};

static void assert_workers_take_tasks(const char *after) {
  atomic_store(&marked, 0);
  struct starpu_task *t = starpu_task_create();
  t->cl = &mark;
  assert_int_equal(starpu_task_submit(t), 0);
  for (int i = 0; i < 5000 && !atomic_load(&marked); i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  int ran = atomic_load(&marked);
  if (!ran) starpu_resume();
  starpu_task_wait_for_all();
  if (!ran) fail_msg("after %s, StarPU's workers took no task for 5 s: left paused", after);
}

static void workers_resumed_after_a_run(void **state) {
  (void)state;
  hlb_starpu_options o; /* run_vector runs with the defaults: the pause is one of them */
  hlb_starpu_options_default(&o);
  assert_int_equal(o.pause_at_end, 1);
  run_vector("hlb", 0);
  assert_workers_take_tasks("a run placed by hlb");
  run_vector(NULL, 1);
  assert_workers_take_tasks("a run placed by StarPU's scheduler, paused at its end");
}

int main(void) {
  if (starpu_init(NULL) != 0) {
    fprintf(stderr, "skipped: starpu_init found no worker\n");
    return 77;
  }
  if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) < 1) {
    starpu_shutdown();
    fprintf(stderr, "skipped: StarPU has no cpu worker here\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(policies_exactly_once),
      cmocka_unit_test(scheduler_places_exactly_once),
      cmocka_unit_test(matrix_rows),
      cmocka_unit_test(throttled_worker),
      cmocka_unit_test(errors_name_the_value),
      cmocka_unit_test(passes_learn_and_see_changes),
      cmocka_unit_test(memory_kept_in_model_files),
      cmocka_unit_test(cpu_workers_grant_their_own_blocks),
      cmocka_unit_test(refusing_worker_is_retired),
      cmocka_unit_test(kernel_errors_retire_the_worker),
      cmocka_unit_test(workers_resumed_after_a_run),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  starpu_shutdown();
  return rc;
}
