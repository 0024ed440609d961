/* JSON reading helpers: every error names the file, the path and the value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/error_internal.h"
#include "common/json.h"

static cJSON *parse(const char *text) {
  cJSON *root = NULL;
  assert_int_equal(hlb__json_parse("t.json", text, &root), 0);
  return root;
}

static void syntax_error_names_line_and_column(void **state) {
  (void)state;
  cJSON *root = NULL;
  assert_int_equal(hlb__json_parse("t.json", "{\n  \"a\": 1,\n  oops\n}", &root), HLB_EPARSE);
  assert_null(root);
  assert_non_null(strstr(hlb_last_error(), "t.json:3:"));
}

static void missing_file_is_io_error(void **state) {
  (void)state;
  cJSON *root = NULL;
  assert_int_equal(hlb__json_load_file("/nonexistent/x.json", &root), HLB_EIO);
  assert_non_null(strstr(hlb_last_error(), "/nonexistent/x.json"));
}

static void numbers_are_checked(void **state) {
  (void)state;
  cJSON *root = parse("{\"link\": {\"bw\": -3, \"lat\": 1e-6, \"s\": \"x\"}}");
  hlb__jctx c = {"t.json"};
  const cJSON *link = NULL;
  assert_int_equal(hlb__json_object(&c, root, "", "link", 1, &link), 0);
  double v = 0;
  assert_int_equal(hlb__json_number(&c, link, "link", "bw", 1, 0, 1e-300, INFINITY, &v),
                   HLB_EPARSE);
  assert_string_equal(hlb_last_error(), "t.json: link.bw: must be in [1e-300, inf], got -3");
  assert_int_equal(hlb__json_number(&c, link, "link", "lat", 1, 0, 0, 1, &v), 0);
  assert_true(v == 1e-6);
  assert_int_equal(hlb__json_number(&c, link, "link", "s", 1, 0, 0, 1, &v), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "link.s: must be a number"));
  assert_int_equal(hlb__json_number(&c, link, "link", "absent", 0, 7, 0, 10, &v), 0);
  assert_true(v == 7);
  assert_int_equal(hlb__json_number(&c, link, "link", "absent", 1, 7, 0, 10, &v), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "link.absent: required member is missing"));
  cJSON_Delete(root);
}

static void sizes_reject_fractions_and_negatives(void **state) {
  (void)state;
  cJSON *root = parse("{\"a\": 2.5, \"b\": -1, \"c\": 12}");
  hlb__jctx c = {"t.json"};
  size_t v = 0;
  assert_int_equal(hlb__json_size(&c, root, "", "a", 1, 0, SIZE_MAX, &v), HLB_EPARSE);
  assert_int_equal(hlb__json_size(&c, root, "", "b", 1, 0, SIZE_MAX, &v), HLB_EPARSE);
  assert_int_equal(hlb__json_size(&c, root, "", "c", 1, 0, SIZE_MAX, &v), 0);
  assert_int_equal(v, 12);
  assert_int_equal(hlb__json_size(&c, root, "", "c", 1, 0, 10, &v), HLB_EPARSE);
  cJSON_Delete(root);
}

static void unknown_keys_are_named(void **state) {
  (void)state;
  cJSON *root = parse("{\"latency_s\": 1, \"latency\": 2}");
  hlb__jctx c = {"t.json"};
  static const char *const known[] = {"latency_s", "bandwidth_Bps", NULL};
  assert_int_equal(hlb__json_only_keys(&c, root, "nodes[0].link", known), HLB_EPARSE);
  assert_string_equal(hlb_last_error(), "t.json: nodes[0].link.latency: unknown member");
  cJSON_Delete(root);
}

static void strings_and_bools(void **state) {
  (void)state;
  cJSON *root = parse("{\"name\": \"gpu0\", \"empty\": \"\", \"f\": true}");
  hlb__jctx c = {"t.json"};
  const char *s = NULL;
  assert_int_equal(hlb__json_string(&c, root, "pus[0]", "name", 1, NULL, &s), 0);
  assert_string_equal(s, "gpu0");
  assert_int_equal(hlb__json_string(&c, root, "pus[0]", "empty", 1, NULL, &s), HLB_EPARSE);
  int b = 0;
  assert_int_equal(hlb__json_bool(&c, root, "", "f", 1, 0, &b), 0);
  assert_true(b);
  assert_int_equal(hlb__json_bool(&c, root, "", "name", 1, 0, &b), HLB_EPARSE);
  cJSON_Delete(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(syntax_error_names_line_and_column),
      cmocka_unit_test(missing_file_is_io_error),
      cmocka_unit_test(numbers_are_checked),
      cmocka_unit_test(sizes_reject_fractions_and_negatives),
      cmocka_unit_test(unknown_keys_are_named),
      cmocka_unit_test(strings_and_bools),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
