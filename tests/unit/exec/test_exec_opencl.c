/* The opencl backend (PoCL's CPU device in CI), alone and beside a cpu PU: data moved in and
 * out, shared buffers, the block's begin, exactly once. Skipped (77) without a device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/judge.h"
#include "exec/model_store.h"
#include "hlb/error.h"
#include "hlb/exec.h"

#define N 4000

/* out[i] = in[i] * s0[0] + begin + i, in doubles. */
static const char src[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void k(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  ((global double *)out)[i] = ((global const double *)in)[i] *\n"
    "      ((global const double *)s0)[0] + (double)(begin + i);\n"
    "}\n"
    /* The same result after HEAVY steps of arithmetic per item whose value never matters. */
    "kernel void heavy(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  double x = ((global const double *)in)[i], acc = x;\n"
    "  for (int k = 0; k < 20000; k++) acc = acc * 0.999999 + 1e-9;\n"
    "  ((global double *)out)[i] = x * ((global const double *)s0)[0] + (double)(begin + i) +\n"
    "      (acc > 1e300 ? 1.0 : 0.0);\n"
    "}\n";
#define HEAVY 20000

static double in[N], out[N], scale[1] = {3.0};

static int cpu_k(const hlb_exec_call *c) {
  const double *x = c->in, *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = x[i] * s[0] + (double)(c->begin + i);
  return 0;
}

static int cpu_heavy(const hlb_exec_call *c) {
  const double *x = c->in, *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++) {
    double acc = x[i];
    for (int k = 0; k < HEAVY; k++)
      acc = acc * 0.999999 + 1e-9;
    y[i] = x[i] * s[0] + (double)(c->begin + i) + (acc > 1e300 ? 1.0 : 0.0);
  }
  return 0;
}

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
                       .cpu = cpu_k,
                       .opencl_source = src,
                       .opencl_kernel = "k"};
}

/* The heavy kernel's codelet (cpu_heavy, OpenCL "heavy"); `name` keys its stored models (NULL:
 * codelet()'s name). */
static hlb_codelet heavy_codelet(const char *name) {
  hlb_codelet cl = codelet();
  if (name) cl.name = name;
  cl.cpu = cpu_heavy;
  cl.opencl_kernel = "heavy";
  return cl;
}

static void check(void) {
  for (size_t i = 0; i < N; i++)
    if (out[i] != in[i] * 3.0 + (double)i)
      fail_msg("out[%zu] = %g, expected %g", i, out[i], in[i] * 3.0 + (double)i);
}

static void run_on(const char *spec, const char *policy) {
  hlb_exec_pu pus[4];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus(spec, pus, 4, &n), 0);
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s: %s", spec, hlb_last_error());
  hlb_codelet cl = codelet();
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = policy;
  hlb_exec_stats s = {0};
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s %s: %s", spec, policy, hlb_last_error());
  check();
  size_t items = 0;
  for (unsigned i = 0; i < s.n_pus; i++)
    items += s.per_pu[i].items;
  assert_int_equal(items, N);
  assert_true(s.per_pu[n - 1].items > 0 || n > 1);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

static void test_opencl_alone(void **st) {
  (void)st;
  run_on("opencl:0", "greedy");
}

static void test_opencl_with_cpu(void **st) {
  (void)st;
  run_on("cpu:1,opencl:0", "hlb");
  run_on("cpu:1,opencl:0", "static");
}

/* Beside a cpu PU, a CPU-type device (PoCL) is narrowed to the cores the cpu PU leaves
 * (Boiński & Czarnul, device fission). */
static void test_fission(void **st) {
  (void)st;
  hlb_exec_pu pus[2];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus("cpu:1,opencl:0", pus, 2, &n), 0);
  hlb_executor *ex = NULL;
  assert_int_equal(hlb_executor_create(pus, n, &ex), 0);
  const hlb_exec_pu *cl = hlb_executor_pu(ex, 1);
  if (strstr(cl->device_name, "CUs")) { /* a CPU-type device */
    assert_true(cl->cores >= 1);
    if (pus[1].cores >= 1 && strstr(cl->device_name, "fission"))
      assert_int_equal(cl->cores, pus[1].cores);
  } else {
    assert_int_equal(cl->cores, 0);
  }
  hlb_executor_destroy(ex);
}

static void test_bad_kernel(void **st) {
  (void)st;
  hlb_exec_pu pu;
  unsigned n;
  assert_int_equal(hlb_exec_parse_pus("opencl:0", &pu, 1, &n), 0);
  hlb_executor *ex = NULL;
  assert_int_equal(hlb_executor_create(&pu, 1, &ex), 0);
  hlb_codelet cl = codelet();
  cl.opencl_source = "kernel void k(this is not OpenCL) {}";
  assert_int_equal(hlb_executor_run(ex, &cl, N, NULL, NULL), HLB_EDEVICE);
  assert_non_null(strstr(hlb_last_error(), "build failed"));
  hlb_executor_destroy(ex);
}

/* With a cpu PU beside it, a kernel that does not build leaves the OpenCL PU out: the run
 * succeeds on the cpu, the stats keep the compiler's reason for that PU, and the successful
 * call leaves no error behind. */
static void test_bad_kernel_beside_cpu(void **st) {
  (void)st;
  hlb_exec_pu pus[2];
  unsigned n;
  assert_int_equal(hlb_exec_parse_pus("cpu:1,opencl:0", pus, 2, &n), 0);
  hlb_executor *ex = NULL;
  assert_int_equal(hlb_executor_create(pus, n, &ex), 0);
  hlb_codelet cl = codelet();
  cl.opencl_source = "kernel void k(this is not OpenCL) {}";
  hlb_exec_stats s = {0};
  assert_int_equal(hlb_executor_run(ex, &cl, N, NULL, &s), 0);
  check();
  assert_string_equal(hlb_last_error(), "");
  assert_int_equal(s.per_pu[1].items, 0);
  assert_int_equal(s.per_pu[1].retired, 1);
  assert_non_null(strstr(s.per_pu[1].failure, "build failed"));
  assert_string_equal(s.per_pu[0].failure, "");
  assert_int_equal(s.per_pu[0].items, N);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* ---- the executor as a session: kernels kept, rebuilt on a changed source ---------------- */

/* out[i] = in[i] * s0[0] + 2 (begin + i): another program for the same codelet. */
static const char src_twice[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void k(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  ((global double *)out)[i] = ((global const double *)in)[i] *\n"
    "      ((global const double *)s0)[0] + 2.0 * (double)(begin + i);\n"
    "}\n";

static int cpu_twice(const hlb_exec_call *c) {
  const double *x = c->in, *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = x[i] * s[0] + 2.0 * (double)(c->begin + i);
  return 0;
}

/* out[i] == in[i] * a + b * i for every item, each written by this run (out reset before). */
static void check_affine(double a, double b) {
  for (size_t i = 0; i < N; i++)
    if (out[i] != in[i] * a + b * (double)i)
      fail_msg("out[%zu] = %g, expected %g", i, out[i], in[i] * a + b * (double)i);
}

/* Run cl over N items (out reset first); every item processed once (the items of the stats
 * add up, the executor checked exactly-once), the stats kept in *s. */
static void session_run(hlb_executor *ex, const hlb_codelet *cl, const char *policy,
                        hlb_exec_stats *s) {
  for (size_t i = 0; i < N; i++)
    out[i] = -1;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = policy;
  o.keep_weak_devices = 1;
  hlb_exec_stats_clear(s);
  if (hlb_executor_run(ex, cl, N, &o, s)) fail_msg("%s: %s", cl->name, hlb_last_error());
  size_t items = 0;
  for (unsigned i = 0; i < s->n_pus; i++)
    items += s->per_pu[i].items;
  assert_int_equal(items, N);
  assert_true(s->setup_s >= 0 && s->wrapup_s >= 0);
}

static hlb_executor *open_spec(const char *spec) {
  hlb_exec_pu pus[4];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus(spec, pus, 4, &n), 0);
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s: %s", spec, hlb_last_error());
  return ex;
}

/* out[i] = the work-group size of the launch that computed item i. */
static const char src_local[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void group(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  ((global double *)out)[i] = (double)get_local_size(0);\n"
    "}\n";

/* The work-group size every item of one block of n items on `ex`'s only PU was computed in;
 * fails unless every item has the same. */
static double group_size_of_block(hlb_executor *ex, size_t n) {
  hlb_codelet cl = codelet();
  cl.name = "group";
  cl.opencl_source = src_local;
  cl.opencl_kernel = "group";
  cl.cpu = NULL;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "static"; /* one PU: one block */
  o.models = HLB_MODELS_OFF;
  if (hlb_executor_run(ex, &cl, n, &o, NULL)) fail_msg("%zu items: %s", n, hlb_last_error());
  for (size_t i = 1; i < n; i++)
    if (out[i] != out[0])
      fail_msg("%zu items: item %zu in groups of %g, item 0 of %g", n, i, out[i], out[0]);
  return out[0];
}

/* A CPU-type device runs a work-group on one of its threads: a block too small to give every
 * compute unit two groups of the usual size runs in groups of one item, a larger block in the
 * usual groups (opencl.c, launch_local). */
static void test_small_blocks_on_every_thread(void **st) {
  (void)st;
  hlb_executor *ex = open_spec("opencl:0");
  unsigned cus = hlb_executor_pu(ex, 0)->cores;
  if (cus < 2 || 2u * cus * 64u >= N) { /* a GPU, one compute unit, or too many for N */
    hlb_executor_destroy(ex);
    skip();
  }
  assert_true(group_size_of_block(ex, 2u * cus * 64u) > 1);
  assert_true(group_size_of_block(ex, 2u * cus * 64u - 1) == 1);
  assert_true(group_size_of_block(ex, 3) == 1);
  hlb_executor_destroy(ex);
}

/* The second run of a codelet uses the kernel the first built, and the shared buffer's new
 * contents: the centroids of a k-means pass change every pass. */
static void test_session_keeps_kernel(void **st) {
  (void)st;
  hlb_executor *ex = open_spec("opencl:0");
  hlb_codelet cl = codelet();
  hlb_exec_stats s = {0};
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  assert_true(s.per_pu[0].build_s > 0);
  assert_true(s.per_pu[0].setup_s >= s.per_pu[0].build_s);
  assert_int_equal(s.kept_kernels, 1);
  for (int pass = 0; pass < 3; pass++) {
    scale[0] = 5.0 + pass;
    session_run(ex, &cl, "greedy", &s);
    check_affine(5.0 + pass, 1.0);
    assert_int_equal(s.per_pu[0].kernel_builds, 0);
    assert_true(s.per_pu[0].build_s < s.per_pu[0].setup_s + 1e-12);
    assert_int_equal(s.kept_kernels, 1);
  }
  scale[0] = 3.0;
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* A source changed in place (same address, other text) is built again and replaces the kept
 * kernel of that codelet; a codelet of another name keeps its own, so alternating two does not
 * rebuild either. */
static void test_session_changed_source(void **st) {
  (void)st;
  static char text[sizeof src > sizeof src_twice ? sizeof src : sizeof src_twice];
  hlb_executor *ex = open_spec("opencl:0");
  hlb_codelet cl = codelet();
  memcpy(text, src, sizeof src);
  cl.opencl_source = text;
  hlb_exec_stats s = {0};
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  memcpy(text, src_twice, sizeof src_twice);
  cl.cpu = cpu_twice;
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 2.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  assert_int_equal(s.kept_kernels, 1);
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 2.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 0);
  /* Another codelet beside it: its own kernel, and no rebuild of either when they alternate. */
  hlb_codelet other = codelet();
  other.name = "affine-other";
  session_run(ex, &other, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  assert_int_equal(s.kept_kernels, 2);
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 2.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 0);
  session_run(ex, &other, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 0);
  /* Another kernel name in the same source is another kernel. */
  other.opencl_kernel = "heavy";
  other.cpu = cpu_heavy;
  session_run(ex, &other, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  assert_int_equal(s.kept_kernels, 2);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* A shared buffer of 2 MiB (written into the kept device buffer, not made anew: the OpenCL
 * backend's path for large buffers): out[i] = s0[(begin + i) % BIG], its new contents used in
 * every run. */
#define BIG (1u << 18)
static const char src_big[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void k(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  ((global double *)out)[i] = ((global const double *)s0)[(begin + i) % 262144];\n"
    "}\n";

static int cpu_big(const hlb_exec_call *c) {
  const double *s = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = s[(c->begin + i) % BIG];
  return 0;
}

static void test_session_big_shared(void **st) {
  (void)st;
  static double big[BIG];
  hlb_executor *ex = open_spec("opencl:0");
  hlb_codelet cl = codelet();
  cl.name = "big-shared";
  cl.opencl_source = src_big;
  cl.cpu = cpu_big;
  cl.shared[0] = (hlb_exec_buffer){big, sizeof big};
  hlb_exec_stats s = {0};
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < BIG; i++)
      big[i] = (double)i * (pass + 1) + 0.25;
    session_run(ex, &cl, "greedy", &s);
    assert_int_equal(s.per_pu[0].kernel_builds, pass == 0);
    for (size_t i = 0; i < N; i++)
      if (out[i] != big[i % BIG])
        fail_msg("pass %d: out[%zu] = %g, expected %g", pass, i, out[i], big[i % BIG]);
  }
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* A kept kernel whose source becomes one that does not build: the PU is left out with the
 * compiler's reason (alone: the run fails naming it; beside a cpu PU: the cpu does every item);
 * the good source again is built again and the device does the work. */
static void test_session_bad_source_later(void **st) {
  (void)st;
  static const char bad[] = "kernel void k(this is not OpenCL) {}";
  hlb_executor *ex = open_spec("opencl:0");
  hlb_codelet cl = codelet();
  hlb_exec_stats s = {0};
  session_run(ex, &cl, "greedy", &s);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  cl.opencl_source = bad;
  assert_int_equal(hlb_executor_run(ex, &cl, N, NULL, NULL), HLB_EDEVICE);
  assert_non_null(strstr(hlb_last_error(), "build failed"));
  cl.opencl_source = src;
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 1);
  assert_int_equal(s.per_pu[0].items, N);
  session_run(ex, &cl, "greedy", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 0);
  hlb_executor_destroy(ex);

  ex = open_spec("cpu:1,opencl:0");
  session_run(ex, &cl, "hlb", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[0].kernel_builds, 0); /* the cpu builds nothing */
  assert_int_equal(s.per_pu[1].kernel_builds, 1);
  assert_int_equal(s.kept_kernels, 1);
  cl.opencl_source = bad;
  session_run(ex, &cl, "hlb", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[1].kernel_builds, 1);
  assert_int_equal(s.per_pu[1].retired, 1);
  assert_int_equal(s.per_pu[1].items, 0);
  assert_non_null(strstr(s.per_pu[1].failure, "build failed"));
  assert_int_equal(s.per_pu[0].items, N);
  assert_int_equal(s.kept_kernels, 0);
  cl.opencl_source = src;
  session_run(ex, &cl, "hlb", &s);
  check_affine(3.0, 1.0);
  assert_int_equal(s.per_pu[1].kernel_builds, 1);
  assert_int_equal(s.per_pu[1].retired, 0);
  assert_string_equal(s.per_pu[1].failure, "");
  assert_int_equal(s.kept_kernels, 1);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

/* An executor of the cpu PU and opencl:0, each throttled as given (`--throttle`; 1: not). */
static hlb_executor *cpu_and_device(double cpu_throttle, double cl_throttle) {
  hlb_exec_pu pus[2];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus("cpu,opencl:0", pus, 2, &n), 0);
  pus[0].throttle = cpu_throttle;
  pus[1].throttle = cl_throttle;
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s", hlb_last_error());
  return ex;
}

/* The heavy kernel on `spec` (two PUs) under greedy with `params`, PUs throttled as given. */
#define JUDGED_RUN_TRIES 5

/* 1 when the cpu PU (PU 0) of a run finished HLB_EXEC_RELEASE_BLOCKS blocks, the fewest on
 * which judge_takeover decides anything; else says so and clears s. The emulated throttle
 * sleeps 999x a block's measured time, so one preemption of the cpu PU's one-item block on a
 * loaded machine (a time slice of a few ms: CI runs ctest -j2 under ASan on 2 cores) makes it
 * sleep seconds while the device does all N items, and the run ends on one cpu block (seen in
 * CI, 2026-11-29). Such a run is no test of the decision: run again. */
static int cpu_judged(hlb_exec_stats *s) {
  if (s->per_pu[0].blocks >= HLB_EXEC_RELEASE_BLOCKS) return 1;
  print_message("the cpu PU finished %zu block(s) (the device %zu): not judged, run again\n",
                s->per_pu[0].blocks, s->per_pu[1].blocks);
  hlb_exec_stats_clear(s);
  return 0;
}

/* Codelet `cl` on `spec` (two PUs) under greedy with `params`, PUs throttled as given; every
 * item checked done once. run_stats: the heavy kernel's codelet. */
static void run_codelet(const char *spec, double cl_throttle, double cpu_throttle,
                        const char *params, hlb_codelet cl, hlb_exec_stats *s) {
  hlb_exec_pu pus[2];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus(spec, pus, 2, &n), 0);
  assert_int_equal(n, 2);
  pus[0].throttle = cpu_throttle;
  pus[1].throttle = cl_throttle;
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s: %s", spec, hlb_last_error());
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "greedy";
  o.params = params;
  if (hlb_executor_run(ex, &cl, N, &o, s)) fail_msg("%s: %s", spec, hlb_last_error());
  check();
  assert_int_equal(s->per_pu[0].items + s->per_pu[1].items, N);
  hlb_executor_destroy(ex);
}

static void run_stats(const char *spec, double cl_throttle, double cpu_throttle, const char *params,
                      hlb_exec_stats *s) {
  run_codelet(spec, cl_throttle, cpu_throttle, params, heavy_codelet(NULL), s);
}

/* The affine result after SLOW_STEPS steps of arithmetic per item whose value never matters:
 * about 0.6 s an item on one core of this 2-core machine; five times faster would still be past
 * HLB_EXEC_FIRST_BLOCK_IN_FLIGHT_S. */
#define SLOW_STEPS "500000000"
static const char slow_src[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void slow(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  double x = ((global const double *)in)[i], acc = x;\n"
    "  for (long k = 0; k < " SLOW_STEPS "L; k++) acc = acc * 0.999999 + 1e-9;\n"
    "  ((global double *)out)[i] = x * ((global const double *)s0)[0] + (double)(begin + i) +\n"
    "      (acc > 1e300 ? 1.0 : 0.0);\n"
    "}\n";

/* A device whose first block is still running after HLB_EXEC_FIRST_BLOCK_IN_FLIGHT_S and shows
 * it far slower than the core it holds, even if it ended now, is released in flight ("at most":
 * its rate is a bound): the block goes back to the pool, its output is dropped when the kernel
 * returns, and its core goes to the cpu PU's next block. The device's kernel takes about 0.6 s
 * for the one item of its first block; the cpu PU (the heavy kernel, throttled 3x) has work for
 * longer than 0.1 s and ends a block every few milliseconds, each a chance to judge the device.
 * Before, a first block was never judged in flight: the device kept its core until that block
 * ended and was released then, its rate measured (`make demo`'s matmul held a core for PoCL's
 * 0.33 s row). */
static void test_first_block_released_in_flight(void **st) {
  (void)st;
  hlb_codelet cl = heavy_codelet("slow-first");
  cl.opencl_source = slow_src, cl.opencl_kernel = "slow";
  hlb_exec_stats s = {0};
  run_codelet("cpu,opencl:0", 1, 3, "chunk=5", cl, &s); /* checks every item once */
  if (s.pu[1].cores == 0) { /* not a CPU-type device: it holds no core, nothing to judge */
    hlb_exec_stats_clear(&s);
    return;
  }
  if (!s.per_pu[1].released || !strstr(s.per_pu[1].release_reason, "released: at most "))
    fail_msg("opencl:0 (%zu blocks, %.3g s busy): reason '%s' (expected a release in flight)",
             (size_t)s.per_pu[1].blocks, s.per_pu[1].busy_s, s.per_pu[1].release_reason);
  assert_int_equal(s.per_pu[1].items, 0); /* its block given back, done by the cpu PU */
  assert_int_equal(s.per_pu[0].items, N);
  assert_int_equal(s.per_pu[0].cores_given, 1);
  hlb_exec_stats_clear(&s);
}

/* A device (holding a core of the automatic cpu PU) that its first block shows far slower than
 * that core is released after that block: no second block keeps its core busy. A device far
 * faster (on a kernel heavy enough that its launches do not dominate) is kept after its first
 * blocks, with both rates in the reason; beside a cpu PU the user sized nothing is judged.
 * Throttles of 1000x make the outcome independent of the machine's load; the released
 * device's first block (one item: nothing is known of it) takes well over the 10 ms
 * (HLB_EXEC_FIRST_BLOCK_MAX_S) a first block must last to be judged alone. */
static void test_judged_devices(void **st) {
  (void)st;
  hlb_exec_stats s = {0};
  run_stats("cpu,opencl:0", 1000, 1, "chunk=5", &s);
  if (s.pu[1].cores == 0) { /* not a CPU-type device: it holds no core, nothing to judge */
    hlb_exec_stats_clear(&s);
    return;
  }
  assert_int_equal(s.per_pu[1].released, 1);
  assert_int_equal(s.per_pu[1].blocks, 1);
  assert_int_equal(s.per_pu[1].items, 1); /* nothing known of it: a first block of one item */
  assert_non_null(strstr(s.per_pu[1].release_reason, "released: "));
  assert_int_equal(s.per_pu[0].cores_given, 1);
  hlb_exec_stats_clear(&s);

  /* One-item blocks: the device's thousands of blocks outlast the cpu PU's first two (40 ms
   * each), so it is judged even when the machine is busy; at 1000x a first device block slowed
   * to 50 ms and more by a loaded machine cannot release it. A run in which one preempted cpu
   * block slept seconds while the device did everything judged nothing (the sanitised suite in
   * a bare root beside other work: reason ""): it is run again (cpu_judged). */
  for (int tries = 0;; tries++) {
    if (tries == JUDGED_RUN_TRIES) fail_msg("no run judged in %d tries", JUDGED_RUN_TRIES);
    run_stats("cpu,opencl:0", 1, 1000, "chunk=1", &s);
    if (cpu_judged(&s)) break;
  }
  if (s.per_pu[1].released || !strstr(s.per_pu[1].release_reason, "kept: "))
    fail_msg("opencl:0 (%zu blocks, %.3g s busy; cpu %zu blocks, %.3g s busy): reason '%s'",
             (size_t)s.per_pu[1].blocks, s.per_pu[1].busy_s, (size_t)s.per_pu[0].blocks,
             s.per_pu[0].busy_s, s.per_pu[1].release_reason);
  assert_int_equal(s.per_pu[0].cores_given, 0);
  hlb_exec_stats_clear(&s);

  run_stats("cpu:1,opencl:0", 200, 1, "chunk=5", &s);
  assert_int_equal(s.per_pu[1].released, 0);
  assert_string_equal(s.per_pu[1].release_reason, "");
  hlb_exec_stats_clear(&s);
}

/* An executor of the PUs of `spec` (a "cpu" among them throttled cpu_throttle times), and the
 * options of a heavy-affine run: greedy with `params`, models `models` in `dir`. */
static hlb_executor *heavy_executor(const char *spec, double cpu_throttle, const char *params,
                                    int models, const char *dir, hlb_exec_options *o) {
  hlb_exec_pu pus[2];
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus(spec, pus, 2, &n), 0);
  for (unsigned i = 0; i < n; i++)
    if (pus[i].backend == HLB_BACKEND_CPU) pus[i].throttle = cpu_throttle;
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s", hlb_last_error());
  hlb_exec_options_default(o);
  o->policy = "greedy";
  o->params = params;
  o->models = models;
  o->model_dir = dir;
  return ex;
}

/* The heavy kernel on the PUs of `spec` (a "cpu" among them throttled cpu_throttle times),
 * greedy with `params` (chunk=1 for a run judged as it goes: the device's thousands of blocks
 * outlast the cpu PU's first two, as in test_judged_devices), models read and written in
 * `dir`; keep: keep_weak_devices. */
static void run_spec_with_models(const char *spec, double cpu_throttle, const char *dir, int keep,
                                 const char *params, hlb_exec_stats *s) {
  hlb_exec_options o;
  hlb_executor *ex = heavy_executor(spec, cpu_throttle, params, HLB_MODELS_ON, dir, &o);
  hlb_codelet cl = heavy_codelet("heavy-affine");
  o.keep_weak_devices = keep;
  if (hlb_executor_run(ex, &cl, N, &o, s)) fail_msg("%s", hlb_last_error());
  check();
  size_t items = 0;
  for (unsigned i = 0; i < s->n_pus; i++)
    items += s->per_pu[i].items;
  assert_int_equal(items, N);
  hlb_executor_destroy(ex);
}

static void run_with_models(double cpu_throttle, const char *dir, int keep, hlb_exec_stats *s) {
  run_spec_with_models("cpu,opencl:0", cpu_throttle, dir, keep, "chunk=1", s);
}

static void remove_dir(const char *dir) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* `dir` emptied of what a run stored: the next try starts with nothing stored. */
static void empty_dir(const char *dir) {
  remove_dir(dir);
  assert_int_equal(mkdir(dir, 0700), 0);
}

/* Tries for a run that finished the blocks its check needs, which a loaded machine can cut short
 * (cpu_judged, test_trial_blocks_grow). */
/* Fails with the device's reason unless it says that later runs give it the cpu PU's cores. */
static void assert_takes_cores(const hlb_exec_stats *s) {
  if (!strstr(s->per_pu[1].release_reason, "later runs give it its cores"))
    fail_msg("opencl:0 not given the cores after the cpu PU's %zu blocks and its %zu: \"%s\"",
             s->per_pu[0].blocks, s->per_pu[1].blocks, s->per_pu[1].release_reason);
}

/* A device on the cores that a run finds faster per core than the cpu PU (here the cpu PU is
 * throttled 1000x: a first device block slowed by a loaded machine, 50 ms and more, cannot
 * release it) is kept, and
 * the stored decision gives it the cpu PU's cores in the next run: the cpu PU is left out, the
 * device opened again on both cores does every item. With keep_weak_devices the decision is not
 * applied. */
static void test_device_takes_cores(void **st) {
  (void)st;
  char dir[] = "/tmp/hlb-takes-XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_exec_stats s = {0};
  for (int tries = 0;; tries++) {
    if (tries == JUDGED_RUN_TRIES) fail_msg("no run judged in %d tries", JUDGED_RUN_TRIES);
    run_with_models(1000, dir, 0, &s);
    if (cpu_judged(&s)) break;
    empty_dir(dir);
  }
  unsigned cus = s.pu[1].cores;
  if (cus == 0 || s.pu[0].cores + cus < 2) { /* a GPU, or one core: nothing to give */
    hlb_exec_stats_clear(&s);
    remove_dir(dir);
    return;
  }
  assert_int_equal(s.per_pu[1].released, 0);
  assert_takes_cores(&s);
  unsigned cpu_cores = s.pu[0].cores;
  hlb_exec_stats_clear(&s);

  run_with_models(1000, dir, 0, &s);
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "released before the run"));
  assert_non_null(strstr(s.per_pu[0].release_reason, "opencl:0"));
  assert_int_equal(s.per_pu[0].items, 0);
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.pu[1].cores, cus + cpu_cores);
  hlb_exec_stats_clear(&s);

  run_with_models(1000, dir, 1, &s);
  assert_int_equal(s.per_pu[0].released, 0);
  assert_int_equal(s.pu[1].cores, cus);
  assert_true(s.per_pu[0].items > 0);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
}

/* A decision acts from the next run of the same executor on (a solver's next pass), with
 * models off: the device found faster per core takes the cpu PU's cores in the second run; a
 * second run with same_pus (`hlb run --compare`'s greedy and static runs) runs on the PUs as
 * the first left them. */
static void test_decision_acts_in_the_next_pass(void **st) {
  (void)st;
  for (int same_pus = 0; same_pus <= 1; same_pus++) {
    hlb_exec_options o;
    hlb_executor *ex = NULL;
    hlb_codelet cl = heavy_codelet("heavy-affine");
    hlb_exec_stats s = {0};
    for (int tries = 0;; tries++) {
      if (tries == JUDGED_RUN_TRIES) fail_msg("no run judged in %d tries", JUDGED_RUN_TRIES);
      ex = heavy_executor("cpu,opencl:0", 1000, "chunk=1", HLB_MODELS_OFF, NULL, &o);
      if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
      check();
      if (cpu_judged(&s)) break;
      hlb_executor_destroy(ex); /* its next run would act on what this one left */
    }
    unsigned cus = s.pu[1].cores, cpu_cores = s.pu[0].cores;
    int applies = cus > 0 && cpu_cores > 0; /* a GPU, or one core: nothing to give */
    if (applies) assert_takes_cores(&s);
    hlb_exec_stats_clear(&s);
    o.same_pus = same_pus;
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    check();
    assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
    if (applies) {
      assert_int_equal(s.per_pu[0].released, !same_pus);
      assert_int_equal(s.pu[1].cores, same_pus ? cus : cus + cpu_cores);
      if (!same_pus) assert_int_equal(s.per_pu[1].items, N);
    }
    hlb_exec_stats_clear(&s);
    hlb_executor_destroy(ex);
  }
}

/* Greedy's blocks for runs that are compared whole (a PU alone, or a decision made before the
 * run): 50 items, so that a device's launches (a few ms each on a loaded machine) do not make
 * its rate. */
#define ALONE_CHUNKS "chunk=50"

/* A stored release of the device narrowed beside the cpu PU (throttled 10x), as a run on a
 * loaded machine could leave: written straight into the model file. */
static void store_release(const char *dir, const hlb_exec_pu *narrowed) {
  hlb_codelet cl = codelet();
  cl.name = "heavy-affine";
  char codelet_key[256], pu_key[320];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  hlb__model_pu_key(narrowed, narrowed->cores, pu_key, sizeof pu_key);
  hlb__model_set set = {0};
  hlb_sample one = {.block = {.count = 1}, .compute_s = 1e-3};
  assert_int_equal(hlb__model_append(&set, pu_key, &one, 1), 0);
  snprintf(set.pu[0].released, sizeof set.pu[0].released, "released: slower on one core");
  assert_int_equal(hlb__model_write(dir, codelet_key, cl.name, &set), 0);
  hlb__model_set_free(&set);
}

/* Runs of each PU alone on every core, stored: when the device alone did more items per second
 * than the cpu PU alone (here throttled 10x), a run of both gives the device the cpu PU's cores
 * from the start, whatever a comparison on one core said (a stored release included). */
static void test_device_alone_faster_takes_cores(void **st) {
  (void)st;
  char dir[] = "/tmp/hlb-alone-XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_exec_stats s = {0};
  run_spec_with_models("cpu,opencl:0", 10, dir, 1, ALONE_CHUNKS, &s); /* keep: nothing decided */
  hlb_exec_pu narrowed = s.pu[1];
  hlb_exec_stats_clear(&s);
  if (narrowed.cores == 0) { /* a GPU: nothing to give */
    remove_dir(dir);
    return;
  }
  store_release(dir, &narrowed);
  run_spec_with_models("opencl:0", 1, dir, 0, ALONE_CHUNKS, &s);
  unsigned cus = s.pu[0].cores;
  hlb_exec_stats_clear(&s);
  if (cus < 2) { /* a GPU, or one core: nothing to give */
    remove_dir(dir);
    return;
  }
  run_spec_with_models("cpu", 10, dir, 0, ALONE_CHUNKS, &s);
  hlb_exec_stats_clear(&s);
  run_spec_with_models("cpu,opencl:0", 10, dir, 0, ALONE_CHUNKS, &s);
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "alone on"));
  assert_int_equal(s.per_pu[1].released, 0); /* its stored release overruled */
  assert_string_equal(s.per_pu[1].release_reason, "");
  assert_int_equal(s.per_pu[0].cores_given, 0);
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.pu[1].cores, cus);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
}

/* Stored as a mixed run would leave them: the device narrowed beside the cpu PU, its blocks doing
 * dev_rate items per second on its cores, the cpu PU's blocks cpu_rate on its own (both written
 * straight into the model file), and the run's decision: the device released, `note` ending the
 * reason, or with `takes_cores` found faster per core (judge_takeover) and kept. */
static void store_mixed_decision(const char *dir, const hlb_exec_pu *narrowed,
                                 const hlb_exec_pu *cpu, double dev_rate, double cpu_rate,
                                 const char *note, int takes_cores) {
  hlb_codelet cl = codelet();
  cl.name = "heavy-affine";
  char codelet_key[256], dev_key[320], cpu_key[320];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  hlb__model_pu_key(narrowed, narrowed->cores, dev_key, sizeof dev_key);
  hlb__model_pu_key(cpu, cpu->cores, cpu_key, sizeof cpu_key);
  hlb__model_set set = {0};
  hlb_sample dev = {.block = {.count = 100}, .compute_s = 100 / dev_rate};
  hlb_sample host = {.block = {.count = 100}, .compute_s = 100 / cpu_rate};
  assert_int_equal(hlb__model_append(&set, dev_key, &dev, 1), 0);
  assert_int_equal(hlb__model_append(&set, cpu_key, &host, 1), 0);
  hlb__stored_pu *d = (hlb__stored_pu *)hlb__model_find(&set, dev_key);
  /* The reasons as the executor writes them: the device's rate against its cores' in the cpu PU,
   * or per core against a core's. */
  if (takes_cores)
    snprintf(d->takes_cores, sizeof d->takes_cores, "%.3g against %.3g items/s in cpu",
             dev_rate / narrowed->cores, cpu_rate / cpu->cores);
  else
    snprintf(d->released, sizeof d->released,
             "released: %.3g items/s against %.3g items/s for the %u core%s it held in cpu%s",
             dev_rate, cpu_rate / cpu->cores * narrowed->cores, narrowed->cores,
             narrowed->cores > 1 ? "s" : "", note);
  assert_int_equal(hlb__model_write(dir, codelet_key, cl.name, &set), 0);
  hlb__model_set_free(&set);
}

static void store_mixed_run(const char *dir, const hlb_exec_pu *narrowed, const hlb_exec_pu *cpu,
                            double dev_rate, double cpu_rate, const char *note) {
  store_mixed_decision(dir, narrowed, cpu, dev_rate, cpu_rate, note, 0);
}

/* Adds to the run stored in `dir` an item cost map over N items, as an earlier run learns one:
 * one of items alike (every slice 1) or of items that vary (the first half ten times cheaper
 * than the second, a coefficient of variation of 0.82). */
static void store_item_costs(const char *dir, int vary) {
  hlb_codelet cl = codelet();
  cl.name = "heavy-affine";
  char codelet_key[256];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  double map[64];
  for (unsigned k = 0; k < 64; k++)
    map[k] = !vary ? 1.0 : k < 32 ? 2.0 / 11 : 20.0 / 11;
  /* Written as a run's learnt map is: merged into what the file keeps. */
  hlb__model_set set = {0};
  assert_int_equal(hlb__model_set_item_cost(&set, map, 64, N, 0), 0);
  set.item_cost_learnt = 1;
  assert_int_equal(hlb__model_write(dir, codelet_key, cl.name, &set), 0);
  hlb__model_set_free(&set);
}

/* The cpu PU (throttled 10x) and the device narrowed beside it, as a mixed run opens them (a run
 * that decides nothing); 0 when there is nothing to give (a GPU, or one core). */
static int mixed_pus(hlb_exec_pu *host, hlb_exec_pu *narrowed) {
  char dir[] = "/tmp/hlb-mixed-XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_exec_stats s = {0};
  run_spec_with_models("cpu,opencl:0", 10, dir, 1, ALONE_CHUNKS, &s); /* keep: nothing decided */
  *host = s.pu[0], *narrowed = s.pu[1];
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
  return narrowed->cores > 0 && host->cores > 0;
}

/* 1 when a trial's release reason says it was cut as it went: after its first blocks, or while a
 * block ran whose time already made the cut certain (watch_trial_locked in src/exec/exec.c). */
static int trial_was_cut(const char *reason) {
  return strstr(reason, "trial cut after its first blocks") ||
         strstr(reason, "trial cut while its block ran");
}

/* A device released by a mixed run is tried alone on every core in the next run, whatever its
 * figures (HLB_EXEC_TRIAL_CUT_FACTOR). Released at 0.1x a core, the cpu PU is parked and the
 * trial judged against its stored rate: the stored blocks of 10^6 items/s a core (far above
 * the heavy kernel on any device) cut it after its first blocks, and the cpu PU does the rest
 * on every core; against 10 items/s a core it is kept and runs the rest alone, and the next run
 * gives it the cores at once, the cpu PU's rate scaled to every core bounding it. Released at
 * 0.9x (HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO), the trial is judged the same way over items alike
 * (cut against 10^6 items/s a core), and runs whole, the cpu PU left out, over items that vary:
 * its first blocks' items then say little of the rest. */
static void test_released_device_tried_alone(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  hlb_exec_stats s = {0};
  char fast[] = "/tmp/hlb-explore-XXXXXX";
  unsigned all = host.cores + narrowed.cores;

  assert_non_null(mkdtemp(fast));
  store_mixed_run(fast, &narrowed, &host, 1e6 * 0.1 * narrowed.cores, 1e6 * host.cores, "");
  run_spec_with_models("cpu,opencl:0", 10, fast, 0, ALONE_CHUNKS, &s);
  assert_int_equal(s.per_pu[1].released, 1);
  assert_true(trial_was_cut(s.per_pu[1].release_reason));
  assert_int_equal(s.per_pu[0].released, 0);
  assert_true(s.per_pu[0].items > 0 && s.per_pu[1].items > 0);
  assert_int_equal(s.per_pu[0].cores_given, narrowed.cores);
  hlb_exec_stats_clear(&s);
  remove_dir(fast);

  /* Released at 0.2x, judged against 10 items/s a core: kept, it runs the rest alone. */
  char kept[] = "/tmp/hlb-explore-XXXXXX";
  assert_non_null(mkdtemp(kept));
  store_mixed_run(kept, &narrowed, &host, 10 * 0.2 * narrowed.cores, 10.0 * host.cores, "");
  run_spec_with_models("cpu,opencl:0", 10, kept, 0, ALONE_CHUNKS, &s);
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "to try: once alone (0.20x a core of cpu"));
  assert_int_equal(s.per_pu[1].released, 0);
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.per_pu[0].items, 0);
  assert_int_equal(s.pu[1].cores, all);
  hlb_exec_stats_clear(&s);
  run_spec_with_models("cpu,opencl:0", 10, kept, 0, ALONE_CHUNKS, &s);
  assert_non_null(strstr(s.per_pu[0].release_reason, "against at most"));
  assert_int_equal(s.per_pu[1].items, N);
  hlb_exec_stats_clear(&s);
  remove_dir(kept);

  /* At 0.9x over items an earlier run found alike (and with no map: as alike), judged and cut;
   * over items it found to vary, a whole run alone. */
  for (int map = 0; map < 3; map++) {
    char slow[] = "/tmp/hlb-explore-XXXXXX";
    assert_non_null(mkdtemp(slow));
    store_mixed_run(slow, &narrowed, &host, 1e6 * 0.9 * narrowed.cores, 1e6 * host.cores, "");
    if (map) store_item_costs(slow, map == 2);
    run_spec_with_models("cpu,opencl:0", 10, slow, 0, ALONE_CHUNKS, &s);
    if (map < 2) {
      assert_int_equal(s.per_pu[1].released, 1);
      assert_true(trial_was_cut(s.per_pu[1].release_reason));
      assert_int_equal(s.per_pu[0].released, 0);
      assert_true(s.per_pu[0].items > 0 && s.per_pu[0].items + s.per_pu[1].items == N);
    } else {
      assert_int_equal(s.per_pu[0].released, 1);
      assert_non_null(
          strstr(s.per_pu[0].release_reason, "to try: once alone (0.90x a core of cpu"));
      assert_int_equal(s.per_pu[1].released, 0);
      assert_int_equal(s.per_pu[1].items, N);
      assert_int_equal(s.per_pu[0].items, 0);
    }
    hlb_exec_stats_clear(&s);
    remove_dir(slow);
  }
}

/* A trial's blocks grow (HLB_EXEC_TRIAL_MIN_GROW) though the policy asks for one item at a
 * time (greedy, chunk=1), as the `hlb` policy held PoCL's spmv trials to blocks of 1 or 8 rows:
 * judged on launches, those trials were cut. Released at 0.1x a core and judged against the
 * stored 10^6 items/s a core, the trial is still cut, after blocks that doubled. */
static void test_trial_blocks_grow(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  char dir[] = "/tmp/hlb-grow-XXXXXX";
  assert_non_null(mkdtemp(dir));
  store_mixed_run(dir, &narrowed, &host, 1e6 * 0.1 * narrowed.cores, 1e6 * host.cores, "");
  hlb_exec_stats s = {0};
  /* Three blocks or more: a first block slowed by a loaded machine (10 ms) cuts the trial on
   * its own (HLB_EXEC_FIRST_BLOCK_MAX_S), and then nothing grew; the trial is not stored, so
   * the next run tries again. */
  for (int tries = 0;; tries++) {
    if (tries == JUDGED_RUN_TRIES) fail_msg("no trial of 3 blocks in %d tries", JUDGED_RUN_TRIES);
    run_spec_with_models("cpu,opencl:0", 10, dir, 0, "chunk=1", &s);
    assert_non_null(strstr(s.per_pu[1].release_reason, "trial cut"));
    assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
    if (s.per_pu[1].blocks >= 3) break;
    hlb_exec_stats_clear(&s);
    empty_dir(dir);
    store_mixed_run(dir, &narrowed, &host, 1e6 * 0.1 * narrowed.cores, 1e6 * host.cores, "");
  }
  assert_true(trial_was_cut(s.per_pu[1].release_reason));
  /* Doubling from one item: 2^k - 1 items in k blocks. One item a block would be as many. */
  size_t blocks = s.per_pu[1].blocks, items = s.per_pu[1].items;
  if (!(items >= ((size_t)1 << (blocks - 1))))
    fail_msg("the trial's %zu blocks did %zu items: they did not grow", blocks, items);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
}

/* A trial whose block runs long is cut while it runs, once its time so far makes the cut
 * certain (watch_trial_locked in src/exec/exec.c): the parked cpu PU does not wait for the
 * block's end. The device, released at 0.1x a core and judged against the stored 10^6 items/s a
 * core, runs the trial's growing blocks (1, 4, 16, ... items, greedy's chunk = N above them); the
 * one running when the cut becomes certain is given back to the pool, its output dropped, and
 * the cpu PU does the rest on every core, every item once. Without the watch that block ran to
 * its end: 1365 items in 17 ms, the trial "cut after its first blocks". With it a finished block
 * may still settle the trial first, when it crossed the 10 ms a trial must run just before the
 * parked PU looked (the machine busy: 341 items in 10.6 ms under ctest -j4), so a run that was
 * cut so is tried again; a device that did all N items before a cut could be certain (a fast
 * machine) leaves nothing to test. */
static void test_trial_cut_while_its_block_runs(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  char dir[] = "/tmp/hlb-watch-XXXXXX", chunk[32];
  assert_non_null(mkdtemp(dir));
  snprintf(chunk, sizeof chunk, "chunk=%d", N);
  for (int tries = 0;; tries++) {
    store_mixed_run(dir, &narrowed, &host, 1e6 * 0.1 * narrowed.cores, 1e6 * host.cores, "");
    hlb_exec_stats s = {0};
    run_spec_with_models("cpu,opencl:0", 10, dir, 0, chunk, &s); /* checks every item once */
    const char *why = s.per_pu[1].release_reason;
    if (strstr(why, "trial cut while its block ran")) {
      assert_true(s.per_pu[1].items < N); /* its last block's items were done by the cpu PU */
      assert_int_equal(s.per_pu[0].released, 0);
      assert_int_equal(s.per_pu[0].cores_given, narrowed.cores);
      hlb_exec_stats_clear(&s);
      break;
    }
    if (s.per_pu[1].items == N) {
      print_message("the device did the %d items in %.4f s, before a cut could be certain\n", N,
                    s.per_pu[1].busy_s);
      hlb_exec_stats_clear(&s);
      break;
    }
    if (tries + 1 == JUDGED_RUN_TRIES)
      fail_msg("%d trials, none cut while its block ran; the last did %zu items in %.4f s: \"%s\"",
               JUDGED_RUN_TRIES, s.per_pu[1].items, s.per_pu[1].busy_s, why);
    hlb_exec_stats_clear(&s);
    empty_dir(dir);
  }
  remove_dir(dir);
}

/* Runs of one executor (the passes of k-means or spmv) act on what the runs before decided, as
 * a new process acts on the stored files: a released device is tried alone on every core in
 * the first run, its trial judged as it goes (no item cost map is stored: items taken as alike,
 * HLB_EXEC_WHOLE_TRIAL_MIN_CORE_RATIO). Against the cpu PU's
 * stored blocks of 10^6 items/s a core it is cut, and the cpu PU's blocks on every core after
 * the cut (really throttled 10x) show the second run that the device alone was the faster
 * after all: it takes the cores. Against 10 items/s a core it is kept, runs the rest alone and
 * keeps the cores. Every run does every item once.
 * run_passes_after_trial: a mixed run stored in a new model directory (the device at `fraction`
 * of the cpu PU's `core_rate` per core), then `runs` runs of one executor from it, the first
 * checked to be the trial (`cut`, or kept: the device alone); the last one's stats in *last. */
static void run_passes_after_trial(const hlb_exec_pu *host, const hlb_exec_pu *narrowed,
                                   double core_rate, double fraction, int cut, unsigned runs,
                                   hlb_exec_stats *last) {
  char dir[] = "/tmp/hlb-trial-XXXXXX";
  assert_non_null(mkdtemp(dir));
  store_mixed_run(dir, narrowed, host, core_rate * fraction * narrowed->cores,
                  core_rate * host->cores, "");
  hlb_exec_options o;
  /* The cpu PU throttled 10x, as in the runs store_mixed_run's PUs come from: the same keys. */
  hlb_executor *ex = heavy_executor("cpu,opencl:0", 10, ALONE_CHUNKS, HLB_MODELS_ON, dir, &o);
  hlb_codelet cl = heavy_codelet("heavy-affine");
  for (unsigned k = 0; k < runs; k++) {
    hlb_exec_stats s = {0};
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    check();
    assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
    if (k == 0 && cut) { /* the trial, cut: the cpu PU took every core */
      assert_int_equal(s.per_pu[0].released, 0);
      assert_true(trial_was_cut(s.per_pu[1].release_reason));
      assert_int_equal(s.pu[1].cores, host->cores + narrowed->cores);
    } else if (k == 0) { /* the trial, kept: the device alone on every core */
      assert_int_equal(s.per_pu[0].released, 1);
      assert_non_null(strstr(s.per_pu[0].release_reason, "to try: once alone"));
      assert_int_equal(s.per_pu[1].items, N);
    }
    if (k + 1 < runs)
      hlb_exec_stats_clear(&s);
    else
      *last = s;
  }
  hlb_executor_destroy(ex);
  remove_dir(dir);
}

static void test_trial_decided_within_one_executor(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  hlb_exec_stats s = {0};

  /* Cut, then faster after all; the third run keeps it so (the cut stored under the key of
   * the device on every core is no release: it once left no PU in the run). */
  run_passes_after_trial(&host, &narrowed, 1e6, 0.2, 1, 3, &s);
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "faster: alone on"));
  assert_int_equal(s.per_pu[1].released, 0);
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.pu[1].cores, host.cores + narrowed.cores);
  hlb_exec_stats_clear(&s);

  /* Released at 0.9x a core, as close to one as mandelbrot's releases, over items taken as alike
   * the trial is judged too (it once ran whole, the cpu PU left out): cut against 10^6 items/s a
   * core. */
  run_passes_after_trial(&host, &narrowed, 1e6, 0.9, 1, 1, &s);
  assert_true(s.per_pu[0].items > 0);
  hlb_exec_stats_clear(&s);

  run_passes_after_trial(&host, &narrowed, 10, 0.9, 0, 3, &s);
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "faster: alone on"));
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.pu[1].cores, host.cores + narrowed.cores);
  hlb_exec_stats_clear(&s);
}

/* The release stored in `dir` for the heavy codelet on PU p (on its cores) into why; "" when
 * none is. */
static void stored_release(const char *dir, const hlb_exec_pu *p, char *why, size_t cap) {
  hlb_codelet cl = heavy_codelet("heavy-affine");
  char codelet_key[256], key[320];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  hlb__model_pu_key(p, p->cores, key, sizeof key);
  hlb__model_set set = {0};
  assert_int_equal(hlb__model_read(dir, codelet_key, &set), 0);
  const hlb__stored_pu *stored = hlb__model_find(&set, key);
  snprintf(why, cap, "%s", stored ? stored->released : "");
  hlb__model_set_free(&set);
}

/* A takeover a mixed run judged kernel against kernel is a try, not a decision: the comparison
 * per core does not carry over to the device whole on every core (k-means' PoCL read faster per
 * core beside the cpu PU in some first runs and took 2.5x the cpu PU's time alone, in every
 * later run). The run after it gives the device the cores and the cpu PU's stored blocks (10^6
 * items/s a core, far above the device alone) undo it in the next run of the same executor,
 * which stores that release; a new process with only the device's run alone stored keeps the
 * cpu PU. Every item once. */
static void test_stored_takeover_is_tried(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  char dir[] = "/tmp/hlb-takeover-XXXXXX";
  assert_non_null(mkdtemp(dir));
  store_mixed_decision(dir, &narrowed, &host, 2e6 * narrowed.cores, 1e6 * host.cores, "", 1);
  hlb_exec_options o;
  hlb_executor *ex = heavy_executor("cpu,opencl:0", 10, ALONE_CHUNKS, HLB_MODELS_ON, dir, &o);
  hlb_codelet cl = heavy_codelet("heavy-affine");
  hlb_exec_stats s = {0};
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
  check();
  assert_int_equal(s.per_pu[0].released, 1);
  assert_non_null(strstr(s.per_pu[0].release_reason, "to try: "));
  assert_int_equal(s.per_pu[1].items, N);
  assert_int_equal(s.pu[1].cores, host.cores + narrowed.cores);
  hlb_exec_stats_clear(&s);
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
  check();
  assert_int_equal(s.per_pu[1].released, 1);
  assert_non_null(strstr(s.per_pu[1].release_reason, "its run alone was not faster"));
  assert_int_equal(s.per_pu[0].released, 0);
  assert_int_equal(s.per_pu[0].items, N);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);

  /* The hand-back is stored as a release under the key of the device's own cores (it took no
   * part in the run that made it): a new process finding no release there opened the device
   * beside the cpu PU and released it again. */
  char why[sizeof(((hlb__stored_pu *)0)->released)];
  stored_release(dir, &narrowed, why, sizeof why);
  if (!strstr(why, "its run alone was not faster"))
    fail_msg("stored for %s on %u cores: \"%s\"", narrowed.name, narrowed.cores, why);

  /* A new process: the stored takeover stands against the stored run alone, which decides. */
  char fresh[] = "/tmp/hlb-takeover-XXXXXX";
  assert_non_null(mkdtemp(fresh));
  store_mixed_decision(fresh, &narrowed, &host, 2e6 * narrowed.cores, 1e6 * host.cores, "", 1);
  run_spec_with_models("opencl:0", 1, fresh, 0, ALONE_CHUNKS, &s); /* its run alone, stored */
  hlb_exec_stats_clear(&s);
  run_spec_with_models("cpu,opencl:0", 10, fresh, 0, ALONE_CHUNKS, &s);
  assert_int_equal(s.per_pu[0].released, 0);
  assert_true(s.per_pu[0].items > 0);
  assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
  hlb_exec_stats_clear(&s);
  remove_dir(fresh);
  remove_dir(dir);
}

/* Stored as the runs of each PU alone on every core would leave them (the device doing
 * dev_rate items per second; the cpu PU, throttled 10x, n_cpu blocks of as many items at
 * cpu_rate[k] each), with `release` stored for the device narrowed beside the cpu PU (a run
 * that released it). */
static void store_runs_alone_blocks(const char *dir, const hlb_exec_pu *narrowed,
                                    const hlb_exec_pu *cpu, double dev_rate, const double *cpu_rate,
                                    size_t n_cpu, const char *release) {
  hlb_codelet cl = heavy_codelet("heavy-affine");
  unsigned all = narrowed->cores + cpu->cores;
  char codelet_key[256], narrowed_key[320], dev_key[320], cpu_key[320];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  hlb__model_pu_key(narrowed, narrowed->cores, narrowed_key, sizeof narrowed_key);
  hlb__model_pu_key(narrowed, all, dev_key, sizeof dev_key);
  hlb__model_pu_key(cpu, all, cpu_key, sizeof cpu_key);
  hlb__model_set set = {0};
  hlb_sample dev = {.block = {.count = 100}, .compute_s = 100 / dev_rate};
  assert_int_equal(hlb__model_append(&set, dev_key, &dev, 1), 0);
  for (size_t k = 0; k < n_cpu; k++) {
    hlb_sample host = {.block = {.count = 100}, .compute_s = 100 / cpu_rate[k]};
    assert_int_equal(hlb__model_append(&set, cpu_key, &host, 1), 0);
  }
  assert_int_equal(hlb__model_append(&set, narrowed_key, NULL, 0), 0);
  hlb__stored_pu *d = (hlb__stored_pu *)hlb__model_find(&set, narrowed_key);
  snprintf(d->released, sizeof d->released, "%s", release);
  assert_int_equal(hlb__model_write(dir, codelet_key, cl.name, &set), 0);
  hlb__model_set_free(&set);
}

/* A new process over stored runs alone of the device at dev_rate and of the cpu PU in blocks at
 * cpu_rate[0..n_cpu), and a stored `release`: 1 when the device took the cpu PU's cores before
 * the run. Every item once. */
static int takes_cores_over_blocks(const hlb_exec_pu *host, const hlb_exec_pu *narrowed,
                                   double dev_rate, const double *cpu_rate, size_t n_cpu,
                                   const char *release) {
  char dir[] = "/tmp/hlb-retake-XXXXXX";
  assert_non_null(mkdtemp(dir));
  store_runs_alone_blocks(dir, narrowed, host, dev_rate, cpu_rate, n_cpu, release);
  hlb_exec_stats s = {0};
  run_spec_with_models("cpu,opencl:0", 10, dir, 0, ALONE_CHUNKS, &s);
  int took = s.per_pu[0].released && strstr(s.per_pu[0].release_reason, "faster: alone on");
  assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
  assert_int_equal(took ? s.per_pu[1].items : s.per_pu[0].items, N);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
  return took;
}

/* The same with the device at `ratio` times the cpu PU's one stored block of 10^6 items/s. */
static int takes_cores_over(const hlb_exec_pu *host, const hlb_exec_pu *narrowed, double ratio,
                            const char *release) {
  const double cpu_rate[] = {1e6, 1e6};
  return takes_cores_over_blocks(host, narrowed, 1e6 * ratio, cpu_rate, 2, release);
}

/* The cpu PU's rate alone is the upper median of its stored blocks' rates: a block delayed 10x
 * (a core that woke slowly) does not make a device at half its rate look faster, which the
 * least-squares slope through them did; nor does one stored block alone, which may be the
 * first on cores a device gave back. Two blocks that agree do decide. */
static void test_rate_alone_is_robust(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  const char *mixed = "released: 0.5 items/s against 1 items/s for the 1 core it held in cpu";
  const double delayed[] = {1e6, 1e5, 1e6}, one_slow[] = {1e5}, two_slow[] = {1e5, 1e5};
  assert_false(takes_cores_over_blocks(&host, &narrowed, 5e5, delayed, 2, mixed));
  assert_false(takes_cores_over_blocks(&host, &narrowed, 5e5, delayed, 3, mixed));
  assert_false(takes_cores_over_blocks(&host, &narrowed, 5e5, one_slow, 1, mixed));
  assert_true(takes_cores_over_blocks(&host, &narrowed, 5e5, two_slow, 2, mixed));
}

/* A run too short to judge a device in (its blocks kept it busy under
 * HLB_EXEC_CORE_DEVICE_JUDGE_S): the cheap kernel in blocks of 100 items, tens of us on the cpu
 * PU throttled 5x (the run lasts a few ms, long enough for the device's second block) and a
 * launch (0.05-0.1 ms) on PoCL. The device is released after the run (the reason says so), the
 * cpu PU is given its core for the runs after, the release is stored, and a new process that
 * reads it leaves the device out from the start. Every item once.
 *
 * A loaded machine can make a run no test of this, which then runs again (SHORT_RUN_TRIES of
 * about 10 ms each): it may stall a device block past 10 ms (the run judges it as it goes), leave
 * it one block, keep the cpu PU's thread off the cores until the device has done every block, have
 * the run judge it from a block still in flight (9 blocks in 5.5 ms, a sanitised fresh-machine
 * run), or stretch the cpu PU's few blocks until its core did no more items per busy second than
 * the device (59 device blocks in 6.8 ms, kept, in a sanitised CI run): a run whose own figures
 * say the device was slower (short_run_says_release) must release it. In blocks of 40 the device
 * passed 10 ms busy in 38 tries of 44 beside a parallel sanitised test; in blocks of 100, in none
 * of 30. */
#define SHORT_RUN_TRIES 30

/* judge_short_run's rule on a run's figures: the device (PU 1) did fewer items per busy second,
 * by HLB_EXEC_SHORT_RUN_RELEASE_FACTOR, than the cores it holds did in the cpu PU (PU 0), counted
 * on the cores the cpu PU had before any release of this run. */
static int short_run_says_release(const hlb_exec_stats *s) {
  const hlb_exec_pu_stats *host = &s->per_pu[0], *dev = &s->per_pu[1];
  unsigned cores = s->pu[0].cores + host->cores_given - (dev->released ? s->pu[1].cores : 0);
  if (!(host->busy_s > 0) || !(dev->busy_s > 0) || cores == 0) return 0;
  double core_rate = (double)host->items / host->busy_s / cores;
  double dev_rate = (double)dev->items / dev->busy_s;
  return dev_rate * HLB_EXEC_SHORT_RUN_RELEASE_FACTOR < core_rate * s->pu[1].cores;
}

static void test_short_run_releases_a_slow_device(void **st) {
  (void)st;
  char dir[] = "/tmp/hlb-short-XXXXXX";
  assert_non_null(mkdtemp(dir));
  int judged = 0, no_core = 0;
  for (int t = 0; t < SHORT_RUN_TRIES && !judged && !no_core; t++) {
    hlb_exec_options o;
    hlb_executor *ex = heavy_executor("cpu,opencl:0", 5, "chunk=100", HLB_MODELS_ON, dir, &o);
    hlb_codelet cl = heavy_codelet("heavy-affine");
    cl.cpu = cpu_k, cl.opencl_kernel = "k";
    hlb_exec_stats s = {0};
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    hlb_executor_destroy(ex);
    check();
    assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
    const hlb_exec_pu_stats *d = &s.per_pu[1];
    hlb_exec_pu device = s.pu[1];
    no_core = device.cores == 0; /* not a CPU-type device: it holds no core, nothing to judge */
    if (no_core) {
      hlb_exec_stats_clear(&s);
      continue;
    }
    int judged_in_run = d->released && !strstr(d->release_reason, "after a run too short");
    judged = d->blocks >= HLB_EXEC_RELEASE_BLOCKS && d->busy_s < HLB_EXEC_CORE_DEVICE_JUDGE_S &&
             s.per_pu[0].blocks >= HLB_EXEC_RELEASE_BLOCKS && !judged_in_run;
    if (!judged || (!d->released && !short_run_says_release(&s))) {
      print_message("opencl:0 did %zu block(s) in %.3g s, the cpu PU %zu (\"%s\"): not a short "
                    "run of both with a slower device, run again\n",
                    d->blocks, d->busy_s, s.per_pu[0].blocks, d->release_reason);
      judged = 0;
      hlb_exec_stats_clear(&s);
      empty_dir(dir);
      continue;
    }
    if (!d->released || !strstr(d->release_reason, "after a run too short to judge it in"))
      fail_msg("opencl:0 (%zu blocks, %.3g ms) not released after the run: \"%s\"", d->blocks,
               d->busy_s * 1e3, d->release_reason);
    assert_int_equal(s.per_pu[0].cores_given, device.cores);
    char why[200];
    stored_release(dir, &device, why, sizeof why);
    assert_non_null(strstr(why, "after a run too short to judge it in"));
    hlb_exec_stats_clear(&s);

    ex = heavy_executor("cpu,opencl:0", 5, "chunk=100", HLB_MODELS_READ, dir, &o);
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    hlb_executor_destroy(ex);
    check();
    assert_non_null(strstr(s.per_pu[1].release_reason, "released before the run"));
    assert_int_equal(s.per_pu[1].items, 0);
    assert_int_equal(s.per_pu[0].items, N);
    hlb_exec_stats_clear(&s);
  }
  remove_dir(dir);
  if (!judged && !no_core) fail_msg("no short run in %d tries", SHORT_RUN_TRIES);
}

/* A device that gave the cores back after its run alone (hand_back_tried) takes them again only
 * when the stored runs alone show it HLB_EXEC_RETAKE_FACTOR times faster than the cpu PU: at
 * 1.07x it stays released, where a device released beside the cpu PU takes them (1.07 >=
 * HLB_EXEC_TAKE_CORES_FACTOR), and so does one handed back against a bound of the cpu PU's
 * rate (nothing measured was compared); at 1.2x it takes them. */
static void test_handed_back_device_needs_a_margin(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  const char *handed_back = "released: its run alone was not faster, alone on 2 cores 1e6 "
                            "against 1e6 items/s in cpu";
  const char *mixed = "released: 0.5 items/s against 1 items/s for the 1 core it held in cpu";
  const char *against_a_bound = "released: its run alone was not faster, alone on 2 cores 1e6 "
                                "against at most 2e6 items/s in cpu";
  assert_false(takes_cores_over(&host, &narrowed, 1.07, handed_back));
  assert_true(takes_cores_over(&host, &narrowed, 1.07, mixed));
  assert_true(takes_cores_over(&host, &narrowed, 1.07, against_a_bound));
  assert_true(takes_cores_over(&host, &narrowed, 1.2, handed_back));
}

/* An executor of the cpu PU and opencl:0 throttled 100x (`--throttle opencl:0=100`), released
 * beside the cpu PU by any run that judges it, and the options of a run with models kept in
 * `dir` under the default policy, as a user runs it. */
static hlb_executor *slow_device_executor(const char *dir, hlb_exec_options *o) {
  hlb_executor *ex = cpu_and_device(1, 100);
  hlb_exec_options_default(o);
  o->models = HLB_MODELS_ON;
  o->model_dir = dir;
  return ex;
}

/* `--throttle opencl:0=100` run three times with models kept, as a user would (hlb, the default
 * policy): the first run releases the device beside the cpu PU; the second tries it alone on
 * every core and cuts the trial after its first blocks (the cpu PU, parked meanwhile, takes
 * every core for the rest); the next run of that executor opens the device again on its own
 * cores, released, and a new process leaves it out from the start. Every run does every item
 * once, and the cut one gave the device a few of them. */
static void test_trial_of_a_slow_device_is_cut(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  char dir[] = "/tmp/hlb-cut-XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_executor *ex = NULL;
  hlb_exec_options o;
  for (int run = 0; run < 4; run++) {
    if (run != 2) /* the third run is the next pass of the second's executor */
      ex = slow_device_executor(dir, &o);
    hlb_codelet cl = heavy_codelet("heavy-affine");
    hlb_exec_stats s = {0};
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    check();
    assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
    assert_int_equal(s.per_pu[1].released, 1);
    if (run == 1) {
      assert_true(trial_was_cut(s.per_pu[1].release_reason));
      assert_int_equal(s.per_pu[0].released, 0);
      assert_true(s.per_pu[1].items > 0 && s.per_pu[1].items < N / 10);
      assert_int_equal(s.per_pu[0].cores_given, narrowed.cores);
      assert_int_equal(s.pu[1].cores, host.cores + narrowed.cores); /* opened on them all */
    }
    if (run >= 2) { /* the next pass of that executor, then a new process */
      assert_int_equal(s.per_pu[0].items, N);
      assert_int_equal(s.pu[1].cores, narrowed.cores);
      assert_int_equal(s.per_pu[0].cores_given, narrowed.cores);
    }
    if (run == 3)
      assert_non_null(strstr(s.per_pu[1].release_reason, "an earlier run on this host"));
    hlb_exec_stats_clear(&s);
    if (run != 1) hlb_executor_destroy(ex);
  }
  remove_dir(dir);
}

/* A device whose every block fails while it is tried alone (the cpu PU parked) leaves the run
 * after HLB_EXEC_MAX_FAILURES failures; the trial is cut then, and the cpu PU, woken, does
 * every item on every core: nothing is lost, nothing done twice. */
static void test_trial_device_failing_is_cut(void **st) {
  (void)st;
  hlb_exec_pu host, narrowed;
  if (!mixed_pus(&host, &narrowed)) return;
  char dir[] = "/tmp/hlb-cutfail-XXXXXX";
  assert_non_null(mkdtemp(dir));
  for (int run = 0; run < 2; run++) { /* released in the first run, tried in the second */
    hlb_exec_options o;
    hlb_executor *ex = slow_device_executor(dir, &o);
    if (run == 1) o.inject_pu = 1, o.inject_from = 1, o.inject_count = 0;
    hlb_codelet cl = heavy_codelet("heavy-affine");
    hlb_exec_stats s = {0};
    if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
    check();
    assert_int_equal(s.per_pu[1].released, 1);
    if (run == 1) {
      assert_non_null(strstr(s.per_pu[1].release_reason, "trial cut when it left the run"));
      assert_int_equal(s.per_pu[1].items, 0);
      assert_true(s.per_pu[1].failed_blocks >= 1);
      assert_int_equal(s.per_pu[0].items, N);
      assert_int_equal(s.per_pu[0].cores_given, narrowed.cores);
    }
    hlb_exec_stats_clear(&s);
    hlb_executor_destroy(ex);
  }
  remove_dir(dir);
}

/* The cpu PU's blocks granted after a device released mid-run gave it its core ran on one more
 * core: they are stored under the key of the cores it ended with, the blocks before under the
 * key of those it started with (read back from the model file). */
static void test_samples_after_release_keyed_by_cores(void **st) {
  (void)st;
  char dir[] = "/tmp/hlb-keys-XXXXXX";
  assert_non_null(mkdtemp(dir));
  /* The device (100x): its first block of one item 5 ms and more, released on it or while its
   * second block runs. Not 1000x: in the bare-root suite, two tests at once made that one item
   * take over a second, the cpu PU had granted all its blocks by then and none was left to store
   * under the cores it ended with. The cpu PU (10x): 40 blocks of 50 ms and more, most of them
   * after the release: at 4x (20 ms) a loaded ctest -j2 once let the cpu PU grant all its blocks
   * before the device's first ended. */
  hlb_executor *ex = cpu_and_device(10, 100);
  hlb_codelet cl = heavy_codelet("heavy-keys");
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "greedy";
  o.params = "chunk=100"; /* 40 cpu blocks: fewer than the 64 kept per key */
  o.models = HLB_MODELS_ON;
  o.model_dir = dir;
  hlb_exec_stats s = {0};
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
  check();
  hlb_executor_destroy(ex);
  if (s.pu[1].cores == 0) { /* a GPU: it holds no core */
    hlb_exec_stats_clear(&s);
    remove_dir(dir);
    return;
  }
  assert_int_equal(s.per_pu[1].released, 1);
  unsigned given = s.per_pu[0].cores_given;
  assert_true(given > 0);
  char codelet_key[256], before[320], after[320];
  hlb__model_codelet_key(&cl, codelet_key, sizeof codelet_key);
  hlb__model_pu_key(&s.pu[0], s.pu[0].cores, before, sizeof before);
  hlb__model_pu_key(&s.pu[0], s.pu[0].cores + given, after, sizeof after);
  hlb__model_set set = {0};
  assert_int_equal(hlb__model_read(dir, codelet_key, &set), 0);
  const hlb__stored_pu *b = hlb__model_find(&set, before), *a = hlb__model_find(&set, after);
  assert_non_null(a);
  assert_true(a->n > 0);
  assert_int_equal((b ? b->n : 0) + a->n, s.per_pu[0].blocks);
  hlb__model_set_free(&set);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
}

/* The heavy cpu kernel, whose first call of a run also waits 100 ms: a thread team started
 * on many cores, pages touched first. */
static int cpu_calls;
#define WARM_UP_S 0.1    /* the cpu PU's first block of test_cpu_warm_up_not_judged waits this */
#define WARM_UP_CHUNK 20 /* and it has this many items, as every block there */
#define STR_OF(x) #x
#define STR(x) STR_OF(x)

static int cpu_heavy_warm_up(const hlb_exec_call *c) {
  if (__atomic_fetch_add(&cpu_calls, 1, __ATOMIC_SEQ_CST) == 0) {
    struct timespec warm_up = {.tv_nsec = (long)(WARM_UP_S * 1e9)};
    nanosleep(&warm_up, NULL);
  }
  return cpu_heavy(c);
}

/* The cpu PU's first block of a run is not what the device beside it is judged against: here
 * it waits 100 ms (the warm-up a 16-core machine showed, 60x its next block), while the device,
 * throttled 4x so that it is slower per core than the cpu PU, takes the items right after it.
 * Compared with that block the device looked several times faster per core and later runs
 * gave it the cpu PU's cores. Models on, so that a takeover would be decided and said. */
/* 5x what a judge that counts the warm-up block cites, a tenth of what a fair one does. */
#define WARM_UP_RATE_MAX 2000.0
static void test_cpu_warm_up_not_judged(void **st) {
  (void)st;
  char dir[] = "/tmp/hlb-warm-XXXXXX";
  assert_non_null(mkdtemp(dir));
  hlb_executor *ex = cpu_and_device(1, 4);
  hlb_codelet cl = heavy_codelet("heavy-warm-up");
  cl.cpu = cpu_heavy_warm_up;
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "greedy";
  /* 200 blocks: each PU's first stays among its newest kept. */
  o.params = "chunk=" STR(WARM_UP_CHUNK);
  o.models = HLB_MODELS_ON;
  o.model_dir = dir;
  hlb_exec_stats s = {0};
  cpu_calls = 0;
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("%s", hlb_last_error());
  check();
  assert_int_equal(s.per_pu[0].items + s.per_pu[1].items, N);
  hlb_executor_destroy(ex);
  if (s.pu[1].cores == 0 || s.pu[0].cores == 0) { /* a GPU, or one core: nothing to give */
    hlb_exec_stats_clear(&s);
    remove_dir(dir);
    return;
  }
  assert_true(s.per_pu[0].blocks > 2);
  /* The cpu rate the judge cited: about 400 items/s when the warm-up block counts (its 100 ms
   * for 20-40 items), 1.7e4 to 2.5e4 otherwise, also beside other tests. The decision itself
   * is not checked: beside other tests (ctest -j2) the cpu PU's honest blocks were once slow
   * enough that the device, judged fairly, looked faster per core. */
  /* Nor an absolute rate alone: a sanitised run beside two other tests on 2 cores cited 1.28e3
   * items/s, every cpu block that slow. So the cited rate must also be well under the cpu PU's
   * own rate over its blocks after the warm-up block. */
  const hlb_exec_pu_stats *cpu = &s.per_pu[0];
  double after_warm_up = cpu->busy_s > WARM_UP_S
                             ? (double)(cpu->items - WARM_UP_CHUNK) / (cpu->busy_s - WARM_UP_S)
                             : 0;
  const char *cited = strstr(s.per_pu[1].release_reason, " against ");
  double cited_rate = cited ? strtod(cited + strlen(" against "), NULL) : INFINITY;
  if (cited_rate < WARM_UP_RATE_MAX && cited_rate < 0.25 * after_warm_up)
    fail_msg("judged against the cpu PU's warm-up (%.3g items/s after it): %s", after_warm_up,
             s.per_pu[1].release_reason);
  hlb_exec_stats_clear(&s);
  remove_dir(dir);
}

int main(void) {
  if (!hlb_backend_built(HLB_BACKEND_OPENCL) || hlb_backend_devices(HLB_BACKEND_OPENCL) == 0) {
    printf("no OpenCL device: skipped\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_opencl_alone),
      cmocka_unit_test(test_opencl_with_cpu),
      cmocka_unit_test(test_fission),
      cmocka_unit_test(test_small_blocks_on_every_thread),
      cmocka_unit_test(test_bad_kernel),
      cmocka_unit_test(test_bad_kernel_beside_cpu),
      cmocka_unit_test(test_judged_devices),
      cmocka_unit_test(test_first_block_released_in_flight),
      cmocka_unit_test(test_device_takes_cores),
      cmocka_unit_test(test_decision_acts_in_the_next_pass),
      cmocka_unit_test(test_device_alone_faster_takes_cores),
      cmocka_unit_test(test_released_device_tried_alone),
      cmocka_unit_test(test_trial_blocks_grow),
      cmocka_unit_test(test_trial_cut_while_its_block_runs),
      cmocka_unit_test(test_trial_decided_within_one_executor),
      cmocka_unit_test(test_stored_takeover_is_tried),
      cmocka_unit_test(test_handed_back_device_needs_a_margin),
      cmocka_unit_test(test_rate_alone_is_robust),
      cmocka_unit_test(test_short_run_releases_a_slow_device),
      cmocka_unit_test(test_trial_of_a_slow_device_is_cut),
      cmocka_unit_test(test_trial_device_failing_is_cut),
      cmocka_unit_test(test_samples_after_release_keyed_by_cores),
      cmocka_unit_test(test_cpu_warm_up_not_judged),
      cmocka_unit_test(test_session_keeps_kernel),
      cmocka_unit_test(test_session_changed_source),
      cmocka_unit_test(test_session_bad_source_later),
      cmocka_unit_test(test_session_big_shared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
