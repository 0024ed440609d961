/* Every app gives the right result under every registered policy on every backend present:
 * cpu alone, opencl alone (PoCL in CI), and both together (cuda: test_apps_cuda.c).
 * The check is the app's own comparison with a serial reference, and a wrong result must
 * be caught (a corrupted output fails verification). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "apps.h"
#include "hlb/error.h"
#include "hlb/policy.h"

static hlb_executor *open_pus(const char *spec) {
  hlb_exec_pu pus[8];
  unsigned n = 0;
  if (hlb_exec_parse_pus(spec, pus, 8, &n)) return NULL;
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, n, &ex)) fail_msg("%s: %s", spec, hlb_last_error());
  return ex;
}

static void run_app(hlb_executor *ex, const char *spec, const char *app, const char *policy) {
  const hlb_app_info *info = hlb_app_find(app);
  hlb_app *a = NULL;
  assert_int_equal(hlb_app_create(app, info->test_size, 7, &a), 0);
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = policy;
  hlb_exec_stats s = {0};
  if (hlb_app_run(a, ex, &o, &s))
    fail_msg("%s on %s, policy %s: %s", app, spec, policy, hlb_last_error());
  if (hlb_app_verify(a)) fail_msg("%s on %s, policy %s: %s", app, spec, policy, hlb_last_error());
  size_t items = 0;
  for (unsigned i = 0; i < s.n_pus; i++)
    items += s.per_pu[i].items;
  assert_int_equal(items, s.n_items);
  hlb_exec_stats_clear(&s);
  hlb_app_destroy(a);
}

/* Every app under every policy on the PUs of `spec`; skipped when a backend is missing. */
static void all_apps_all_policies(const char *spec) {
  hlb_executor *ex = open_pus(spec);
  if (!ex) {
    printf("  (%s not present: skipped)\n", spec);
    return;
  }
  for (unsigned k = 0; k < hlb_app_count(); k++)
    for (unsigned p = 0; p < hlb_policy_count(); p++)
      run_app(ex, spec, hlb_app_info_at(k)->name, hlb_policy_at(p)->name);
  hlb_executor_destroy(ex);
}

static void test_cpu(void **st) {
  (void)st;
  all_apps_all_policies("cpu");
}

static void test_cpu_and_opencl(void **st) {
  (void)st;
  all_apps_all_policies("cpu:1,opencl:0");
}

static void test_opencl_alone(void **st) {
  (void)st;
  hlb_executor *ex = open_pus("opencl:0");
  if (!ex) skip();
  for (unsigned k = 0; k < hlb_app_count(); k++)
    run_app(ex, "opencl:0", hlb_app_info_at(k)->name, "greedy");
  hlb_executor_destroy(ex);
}

/* The checks are not vacuous: one wrong value in the output is found. */
/* 1 when a shared library whose path contains `name` is mapped into this process. */
static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

/* The CUDA kernels' library (and cuBLAS with it) is loaded when first asked for, not at the
 * program's start (apps/cuda_lazy.c), and loads from the build tree without a GPU. Runs first:
 * no other test here drives a GPU. */
static void test_cuda_kernels_load_on_demand(void **st) {
  (void)st;
  if (!hlb__cuda_matmul) { /* a build without CUDA */
    assert_int_equal(hlb__apps_cuda_load(), HLB_EUNSUPPORTED);
    skip();
  }
  if (mapped("libhlb_apps_cuda") < 0) skip(); /* no /proc */
  assert_int_equal(mapped("libhlb_apps_cuda"), 0);
  assert_int_equal(mapped("libcublas"), 0);
  if (hlb__apps_cuda_load()) fail_msg("%s", hlb_last_error());
  assert_int_equal(mapped("libhlb_apps_cuda"), 1);
  assert_int_equal(hlb__apps_cuda_load(), 0); /* once */
}

/* A pass on the executor that notes whether every codelet it was given says its items vary
 * (said 1), none does (0), or they disagree (-1); 2 before the first pass. */
typedef struct noting_pass {
  hlb_executor *ex;
  int said;
} noting_pass;

static int note_items_vary(void *ctx, const hlb_codelet *cl, size_t n_items, unsigned changed,
                           hlb_exec_stats *st) {
  (void)changed;
  noting_pass *np = ctx;
  int v = cl->items_vary != 0;
  np->said = np->said == 2 ? v : np->said == v ? v : -1;
  return hlb_executor_run(np->ex, cl, n_items, NULL, st); /* the host's step reads the output */
}

/* spmv says in every pass's codelet that its items vary (hlb_codelet.items_vary: its long rows
 * fall at random, and the default policy holds a first pass's blocks short); the others do not
 * (mandelbrot's dear rows are one region the guard follows; the rest cost the same). */
static void test_apps_say_whether_items_vary(void **st) {
  (void)st;
  noting_pass np = {.ex = open_pus("cpu")};
  for (unsigned k = 0; k < hlb_app_count(); k++) {
    const char *name = hlb_app_info_at(k)->name;
    hlb_app *a = NULL;
    assert_int_equal(hlb_app_create(name, hlb_app_info_at(k)->test_size, 1, &a), 0);
    np.said = 2;
    assert_int_equal(hlb_app_run_passes(a, note_items_vary, &np, NULL), 0);
    assert_int_equal(hlb_app_verify(a), 0);
    if (np.said != !strcmp(name, "spmv"))
      fail_msg("%s: items_vary %d in its passes", name, np.said);
    hlb_app_destroy(a);
  }
  hlb_executor_destroy(np.ex);
}

static void test_verify_catches_errors(void **st) {
  (void)st;
  hlb_executor *ex = open_pus("cpu");
  for (unsigned k = 0; k < hlb_app_count(); k++) {
    const char *name = hlb_app_info_at(k)->name;
    hlb_app *a = NULL;
    assert_int_equal(hlb_app_create(name, hlb_app_info_at(k)->test_size, 3, &a), 0);
    /* A correct run verifies ... */
    assert_int_equal(hlb_app_run(a, ex, NULL, NULL), 0);
    assert_int_equal(hlb_app_verify(a), 0);
    const hlb_codelet *cl = hlb_app_codelet(a);
    if (cl && cl->out) {
      /* ... and the same output with one item corrupted does not. */
      memset(cl->out, 0x7f, cl->out_bytes_per_item);
      if (hlb_app_verify(a) != HLB_EVERIFY)
        fail_msg("%s: a corrupted result passed the check", name);
    }
    hlb_app_destroy(a);
  }
  hlb_app *a = NULL;
  assert_int_equal(hlb_app_create("nope", 10, 1, &a), HLB_ENOTFOUND);
  assert_int_equal(hlb_app_create("matmul", 1, 1, &a), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "matmul"));
  hlb_executor_destroy(ex);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_kernels_load_on_demand),
      cmocka_unit_test(test_verify_catches_errors),
      cmocka_unit_test(test_apps_say_whether_items_vary),
      cmocka_unit_test(test_cpu),
      cmocka_unit_test(test_opencl_alone),
      cmocka_unit_test(test_cpu_and_opencl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
