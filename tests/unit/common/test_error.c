/* The error enum, hlb_err_name() and hlb_strerror() come from one X-macro; these tests keep
 * them in sync and check the last-error text is per thread. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/error_internal.h"

static void codes_are_dense_and_named(void **state) {
  (void)state;
  int seen = 0;
#define CHECK(name, value, msg)                                                                    \
  assert_int_equal(value, -seen);                                                                  \
  assert_string_equal(hlb_err_name(value), #name);                                                 \
  assert_string_equal(hlb_strerror(value), msg);                                                   \
  seen++;
  HLB_ERROR_LIST(CHECK)
#undef CHECK
  assert_int_equal(seen, HLB_ERROR_COUNT);
}

static void unknown_codes_have_text(void **state) {
  (void)state;
  assert_string_equal(hlb_err_name(-HLB_ERROR_COUNT), "HLB_E?");
  assert_string_equal(hlb_err_name(1), "HLB_E?");
  assert_non_null(hlb_strerror(-1000));
}

static void detail_is_formatted_and_prefixed(void **state) {
  (void)state;
  hlb_clear_error();
  assert_string_equal(hlb_last_error(), "");
  assert_int_equal(hlb__error(HLB_EINVAL, "pu %u: time %g", 3u, -1.5), HLB_EINVAL);
  assert_string_equal(hlb_last_error(), "pu 3: time -1.5");
  assert_int_equal(hlb__error_prefix(HLB_EPARSE, "%s: ", "f.json"), HLB_EPARSE);
  assert_string_equal(hlb_last_error(), "f.json: pu 3: time -1.5");
}

static void *raise_in_thread(void *arg) {
  (void)arg;
  hlb__error(HLB_EIO, "from the other thread");
  return NULL;
}

static void detail_is_per_thread(void **state) {
  (void)state;
  hlb__error(HLB_EINVAL, "mine");
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, raise_in_thread, NULL), 0);
  pthread_join(t, NULL);
  assert_string_equal(hlb_last_error(), "mine");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(codes_are_dense_and_named),
      cmocka_unit_test(unknown_codes_have_text),
      cmocka_unit_test(detail_is_formatted_and_prefixed),
      cmocka_unit_test(detail_is_per_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
