/* Every app under every registered policy on a CUDA GPU, alone and beside a cpu PU. Exit 77
 * (skipped) when this build has no CUDA or the machine no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "apps.h"
#include "hlb/error.h"
#include "hlb/policy.h"

static void run_all(const char *spec) {
  hlb_exec_pu pus[4];
  unsigned n = 0;
  hlb_executor *ex = NULL;
  if (hlb_exec_parse_pus(spec, pus, 4, &n) || hlb_executor_create(pus, n, &ex))
    fail_msg("%s: %s", spec, hlb_last_error());
  for (unsigned k = 0; k < hlb_app_count(); k++)
    for (unsigned p = 0; p < hlb_policy_count(); p++) {
      const char *app = hlb_app_info_at(k)->name, *policy = hlb_policy_at(p)->name;
      hlb_app *a = NULL;
      assert_int_equal(hlb_app_create(app, hlb_app_info_at(k)->test_size, 5, &a), 0);
      hlb_exec_options o;
      hlb_exec_options_default(&o);
      o.policy = policy;
      if (hlb_app_run(a, ex, &o, NULL) || hlb_app_verify(a))
        fail_msg("%s on %s, policy %s: %s", app, spec, policy, hlb_last_error());
      hlb_app_destroy(a);
    }
  hlb_executor_destroy(ex);
}

static void test_cuda_alone(void **st) {
  (void)st;
  run_all("cuda:0");
}

static void test_cuda_with_cpu(void **st) {
  (void)st;
  run_all("cpu:1,cuda:0");
}

int main(void) {
  if (!hlb_backend_built(HLB_BACKEND_CUDA) || hlb_backend_devices(HLB_BACKEND_CUDA) == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_alone),
      cmocka_unit_test(test_cuda_with_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
