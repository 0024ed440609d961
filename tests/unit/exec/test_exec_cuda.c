/* The cuda backend on a real GPU, alone and beside a cpu PU: data moved in and out, shared
 * buffers, the block's begin, exactly once under every policy; injected failures and a
 * kernel the runtime refuses (the block taken back, the PU retired, the run still right); the
 * executor as a session (a shared buffer's new contents reach the device). Skipped (77)
 * without a CUDA device. The kernels are in cuda_kernels.cu. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/policy.h"

int hlb_test_cuda_affine(const hlb_exec_call *c);
int hlb_test_cuda_bad_launch(const hlb_exec_call *c);
int hlb_test_cuda_warm_up_once(const hlb_exec_call *c);

/* Enough items for many blocks on both PUs, few enough for a fast test. */
#define N 200000

static double in[N], out[N], scale[1] = {3.0};

static int cpu_affine(const hlb_exec_call *c) {
  const double *x = c->in, *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = x[i] * s[0] + (double)(c->begin + i);
  return 0;
}

/* The same, as slow as a core doing real work per item (so the GPU's warm-up is not the run). */
static int cpu_slow_affine(const hlb_exec_call *c) {
  const double *x = c->in, *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++) {
    volatile double acc = x[i];
    for (int k = 0; k < 2000; k++)
      acc = acc * 0.999999 + 1e-9;
    y[i] = x[i] * s[0] + (double)(c->begin + i) + (acc > 1e300 ? 1.0 : 0.0);
  }
  return 0;
}

/* The codelet over in/out with out poisoned, so an item no block wrote is seen. */
static hlb_codelet codelet(void) {
  for (size_t i = 0; i < N; i++) {
    in[i] = (double)i * 0.5;
    out[i] = -1;
  }
  return (hlb_codelet){.name = "affine",
                       .in_bytes_per_item = sizeof(double),
                       .out_bytes_per_item = sizeof(double),
                       .in = in,
                       .out = out,
                       .shared = {{scale, sizeof scale}},
                       .n_shared = 1,
                       .cpu = cpu_affine,
                       .cuda = hlb_test_cuda_affine};
}

static void check(double a) {
  for (size_t i = 0; i < N; i++)
    if (out[i] != in[i] * a + (double)i)
      fail_msg("out[%zu] = %g, expected %g", i, out[i], in[i] * a + (double)i);
}

static hlb_executor *open_spec(const char *spec, unsigned *n) {
  hlb_exec_pu pus[4];
  assert_int_equal(hlb_exec_parse_pus(spec, pus, 4, n), 0);
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, *n, &ex)) fail_msg("%s: %s", spec, hlb_last_error());
  return ex;
}

/* Every item once: the stats' items add up to N and the output is right everywhere. */
static void assert_all_once(const hlb_exec_stats *s) {
  size_t items = 0;
  for (unsigned i = 0; i < s->n_pus; i++)
    items += s->per_pu[i].items;
  assert_int_equal(items, N);
  check(scale[0]);
}

/* Run cl over N items with options o (NULL: defaults) into *s; the run must succeed and do
 * every item once. */
static void run_all_once(hlb_executor *ex, const hlb_codelet *cl, const hlb_exec_options *o,
                         hlb_exec_stats *s, const char *what) {
  if (hlb_executor_run(ex, cl, N, o, s)) fail_msg("%s: %s", what, hlb_last_error());
  assert_all_once(s);
}

static void run_every_policy(const char *spec) {
  unsigned n = 0;
  hlb_executor *ex = open_spec(spec, &n);
  for (unsigned p = 0; p < hlb_policy_count(); p++) {
    hlb_codelet cl = codelet();
    hlb_exec_options o;
    hlb_exec_options_default(&o);
    o.policy = hlb_policy_at(p)->name;
    o.keep_weak_devices = 1; /* the GPU judged on its merits is not what this test checks */
    hlb_exec_stats s = {0};
    run_all_once(ex, &cl, &o, &s, o.policy);
    assert_true(s.per_pu[n - 1].items > 0);
    hlb_exec_stats_clear(&s);
  }
  hlb_executor_destroy(ex);
}

static void test_cuda_alone(void **st) {
  (void)st;
  run_every_policy("cuda:0");
}

static void test_cuda_with_cpu(void **st) {
  (void)st;
  run_every_policy("cpu:1,cuda:0");
}

/* The device's name comes from the runtime (cudaGetDeviceProperties). */
static void test_device_named(void **st) {
  (void)st;
  unsigned n = 0;
  hlb_executor *ex = open_spec("cuda:0", &n);
  const hlb_exec_pu *pu = hlb_executor_pu(ex, 0);
  assert_non_null(pu);
  assert_true(strlen(pu->device_name) > 0);
  printf("cuda:0 is '%s'\n", pu->device_name);
  hlb_executor_destroy(ex);
}

/* A device number past the last is refused, naming it (by the list's parser or on opening). */
static void test_missing_device(void **st) {
  (void)st;
  hlb_exec_pu pu;
  unsigned n = 0;
  hlb_executor *ex = NULL;
  int rc = hlb_exec_parse_pus("cuda:63", &pu, 1, &n);
  if (rc == 0) rc = hlb_executor_create(&pu, 1, &ex);
  assert_int_not_equal(rc, 0);
  assert_null(ex);
  if (!strstr(hlb_last_error(), "63"))
    fail_msg("the error does not name the device: %s", hlb_last_error());
}

/* The GPU's 2nd block fails (injected): taken back, done again, nothing lost. Then every block
 * from the first fails: the GPU is retired and the cpu PU does everything. */
static void test_injected_failures(void **st) {
  (void)st;
  unsigned n = 0;
  hlb_executor *ex = open_spec("cpu:1,cuda:0", &n);
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "greedy";
  o.granularity = 2000; /* many blocks on both PUs */
  o.keep_weak_devices = 1;
  o.inject_pu = 1;
  o.inject_from = 2;
  o.inject_count = 1;
  hlb_codelet cl = codelet();
  hlb_exec_stats s = {0};
  run_all_once(ex, &cl, &o, &s, "one failure");
  assert_int_equal(s.per_pu[1].failed_blocks, 1);
  assert_int_equal(s.per_pu[1].retired, 0);
  hlb_exec_stats_clear(&s);

  o.inject_from = 1;
  o.inject_count = 0;
  cl = codelet();
  run_all_once(ex, &cl, &o, &s, "every block fails");
  assert_int_equal(s.per_pu[1].retired, 1);
  assert_int_equal(s.per_pu[1].items, 0);
  assert_int_equal(s.per_pu[0].items, N);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* A kernel the runtime refuses to launch: alone, the run fails naming the PU and CUDA's
 * reason; beside a cpu PU, the GPU is retired with that reason and the result is right. */
static void test_refused_launch(void **st) {
  (void)st;
  unsigned n = 0;
  hlb_executor *ex = open_spec("cuda:0", &n);
  hlb_codelet cl = codelet();
  cl.cuda = hlb_test_cuda_bad_launch;
  assert_int_equal(hlb_executor_run(ex, &cl, N, NULL, NULL), HLB_EDEVICE);
  assert_non_null(strstr(hlb_last_error(), "cuda:0"));
  hlb_executor_destroy(ex);

  ex = open_spec("cpu:1,cuda:0", &n);
  cl = codelet();
  cl.cuda = hlb_test_cuda_bad_launch;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.keep_weak_devices = 1;
  hlb_exec_stats s = {0};
  run_all_once(ex, &cl, &o, &s, "beside cpu");
  assert_int_equal(s.per_pu[1].retired, 1);
  assert_int_equal(s.per_pu[1].items, 0);
  /* The backend's words and CUDA's reason (an invalid launch configuration). */
  if (!strstr(s.per_pu[1].failure, "kernel"))
    fail_msg("cuda:0's failure does not say the kernel failed: '%s'", s.per_pu[1].failure);
  printf("cuda:0 retired: %s\n", s.per_pu[1].failure);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* Two runs on one executor: the second sees the shared buffer's new contents (copied to the
 * device again, as the centroids of a k-means pass are). */
static void test_session_new_shared(void **st) {
  (void)st;
  unsigned n = 0;
  hlb_executor *ex = open_spec("cuda:0", &n);
  for (int pass = 0; pass < 2; pass++) {
    scale[0] = pass ? 5.0 : 3.0;
    hlb_codelet cl = codelet();
    hlb_exec_stats s = {0};
    run_all_once(ex, &cl, NULL, &s, pass ? "second pass" : "first pass");
    hlb_exec_stats_clear(&s);
  }
  scale[0] = 3.0;
  hlb_executor_destroy(ex);
}

/* A first block that carries a long one-time warm-up (cuBLAS's handle and lazily loaded
 * kernels took 43 and 61 ms in an H100's first two matmul blocks) does not get the GPU released
 * when it sits beside the automatic cpu PU, as `--pus all` puts it: the GPU is judged on its
 * best block, and it does a large part of the items. */
static void test_warm_up_not_released(void **st) {
  (void)st;
  unsigned n = 0;
  hlb_executor *ex = open_spec("cpu,cuda:0", &n);
  hlb_codelet cl = codelet();
  cl.cuda = hlb_test_cuda_warm_up_once;
  cl.cpu = cpu_slow_affine;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.models = HLB_MODELS_OFF;
  hlb_exec_stats s = {0};
  run_all_once(ex, &cl, &o, &s, "warm-up first block");
  if (s.per_pu[1].released || s.per_pu[1].items < N / 4)
    fail_msg("cuda:0 did %zu of %d items (released: %d, %s)", s.per_pu[1].items, N,
             s.per_pu[1].released, s.per_pu[1].release_reason);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

int main(void) {
  if (!hlb_backend_built(HLB_BACKEND_CUDA) || hlb_backend_devices(HLB_BACKEND_CUDA) == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_named),       cmocka_unit_test(test_missing_device),
      cmocka_unit_test(test_cuda_alone),         cmocka_unit_test(test_cuda_with_cpu),
      cmocka_unit_test(test_injected_failures),  cmocka_unit_test(test_refused_launch),
      cmocka_unit_test(test_session_new_shared), cmocka_unit_test(test_warm_up_not_released),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
