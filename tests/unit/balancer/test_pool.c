/* The work pool: granularity, returned ranges served first and split, the tail, and the
 * exactly-once proof catching a range processed twice or never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "balancer/pool.h"
#include "hlb/error.h"

static void takes_multiples_of_granularity(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 103, 10);
  hlb__range r;
  size_t total = 0;
  while (hlb__pool_remaining(&p)) {
    assert_int_equal(hlb__pool_take(&p, 20, SIZE_MAX, &r), 0);
    assert_int_equal(r.begin % 10, 0);
    assert_true(r.count % 10 == 0 || r.begin + r.count == 103);
    total += r.count;
  }
  /* 100 is reached with blocks of 20; the 3-item tail is absorbed by the last block. */
  assert_int_equal(r.begin, 80);
  assert_int_equal(r.count, 23);
  assert_int_equal(total, 103);
  assert_int_equal(hlb__pool_take(&p, 10, SIZE_MAX, &r), HLB_ESTATE);
  hlb__pool_fini(&p);
}

static void tail_not_absorbed_beyond_max(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 25, 10);
  hlb__range r;
  assert_int_equal(hlb__pool_take(&p, 20, 20, &r), 0);
  assert_int_equal(r.count, 20);
  assert_int_equal(hlb__pool_take(&p, 20, 20, &r), 0);
  assert_int_equal(r.begin, 20);
  assert_int_equal(r.count, 5);
  hlb__pool_fini(&p);
}

static void returned_ranges_first_and_split(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 1000, 1);
  hlb__range a, b, r;
  assert_int_equal(hlb__pool_take(&p, 100, SIZE_MAX, &a), 0);
  assert_int_equal(hlb__pool_take(&p, 100, SIZE_MAX, &b), 0);
  assert_int_equal(hlb__pool_give_back(&p, a), 0);
  assert_int_equal(hlb__pool_remaining(&p), 900);
  /* The returned [0, 100) is served before fresh items, split as asked. */
  assert_int_equal(hlb__pool_take(&p, 30, SIZE_MAX, &r), 0);
  assert_int_equal(r.begin, 0);
  assert_int_equal(r.count, 30);
  assert_int_equal(hlb__pool_take(&p, 500, SIZE_MAX, &r), 0);
  assert_int_equal(r.begin, 30);
  assert_int_equal(r.count, 70);
  assert_int_equal(hlb__pool_take(&p, 50, SIZE_MAX, &r), 0);
  assert_int_equal(r.begin, 200);
  hlb__pool_fini(&p);
}

static void check_accepts_exact_tiling(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 100, 1);
  hlb__pool_complete(&p, (hlb__range){50, 50});
  hlb__pool_complete(&p, (hlb__range){0, 20});
  hlb__pool_complete(&p, (hlb__range){20, 30});
  assert_int_equal(hlb__pool_check(&p), 0);
  hlb__pool_fini(&p);
}

static void check_finds_missing(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 100, 1);
  hlb__pool_complete(&p, (hlb__range){0, 20});
  hlb__pool_complete(&p, (hlb__range){30, 70});
  assert_int_equal(hlb__pool_check(&p), HLB_EVERIFY);
  assert_non_null(strstr(hlb_last_error(), "[20, 30) were never processed"));
  hlb__pool_fini(&p);
  hlb__pool_init(&p, 100, 1);
  hlb__pool_complete(&p, (hlb__range){0, 99});
  assert_int_equal(hlb__pool_check(&p), HLB_EVERIFY);
  assert_non_null(strstr(hlb_last_error(), "[99, 100) were never processed"));
  hlb__pool_fini(&p);
}

static void check_finds_double(void **state) {
  (void)state;
  hlb__pool p;
  hlb__pool_init(&p, 100, 1);
  hlb__pool_complete(&p, (hlb__range){0, 60});
  hlb__pool_complete(&p, (hlb__range){40, 60});
  assert_int_equal(hlb__pool_check(&p), HLB_EVERIFY);
  assert_non_null(strstr(hlb_last_error(), "[40, 60) were processed more than once"));
  hlb__pool_fini(&p);
}

static void check_scales_to_a_million_ranges(void **state) {
  (void)state;
  hlb__pool p;
  const size_t n = 1000000;
  hlb__pool_init(&p, n * 100, 1);
  /* Interleaved completion order, so nothing merges and the sort does the work. */
  for (size_t i = 0; i < n; i += 2)
    hlb__pool_complete(&p, (hlb__range){i * 100, 100});
  for (size_t i = 1; i < n; i += 2)
    hlb__pool_complete(&p, (hlb__range){i * 100, 100});
  assert_true(p.n_done > n / 2);
  assert_int_equal(hlb__pool_check(&p), 0);
  hlb__pool_complete(&p, (hlb__range){123456 * 100 + 7, 1});
  assert_int_equal(hlb__pool_check(&p), HLB_EVERIFY);
  hlb__pool_fini(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(takes_multiples_of_granularity),
      cmocka_unit_test(tail_not_absorbed_beyond_max),
      cmocka_unit_test(returned_ranges_first_and_split),
      cmocka_unit_test(check_accepts_exact_tiling),
      cmocka_unit_test(check_finds_missing),
      cmocka_unit_test(check_finds_double),
      cmocka_unit_test(check_scales_to_a_million_ranges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
