/* The generic Chrome trace writer (src/common/trace.h): valid JSON whatever the names, args
 * of both types, non-finite numbers as null, bad durations refused, write errors reported. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "common/trace.h"
#include "hlb/error.h"

static cJSON *read_json(FILE *f) {
  static char buf[1 << 16];
  rewind(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  cJSON *root = cJSON_Parse(buf);
  if (!root) fail_msg("not JSON: %s", buf);
  return root;
}

static const cJSON *member(const cJSON *o, const char *k) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!m) fail_msg("no member '%s'", k);
  return m;
}

static void writes_metadata_and_slices(void **state) {
  (void)state;
  FILE *f = tmpfile();
  assert_non_null(f);
  hlb__trace *t = NULL;
  assert_int_equal(hlb__trace_open_stream(f, &t), 0);
  assert_int_equal(hlb__trace_process(t, 3, "node \"A\"\n\\", 1), 0);
  assert_int_equal(hlb__trace_thread(t, 3, 7, "gpu\t0", 0), 0);
  hlb__trace_arg args[3] = {{"items", 128, NULL}, {"who", 0, "x\"y"}, {"nan", NAN, NULL}};
  assert_int_equal(hlb__trace_slice(t, 3, 7, "compute", "c", 1.5, 0.25, args, 3), 0);
  assert_int_equal(hlb__trace_slice(t, 3, 7, "in", NULL, 0, 0, NULL, 0), 0);
  assert_int_equal(hlb__trace_slice(t, 3, 7, "bad", NULL, 0, -1, NULL, 0), HLB_EINVAL);
  assert_int_equal(hlb__trace_slice(t, 3, 7, "bad", NULL, 0, NAN, NULL, 0), HLB_EINVAL);
  assert_int_equal(hlb__trace_close(t), 0);

  cJSON *root = read_json(f);
  fclose(f);
  const cJSON *ev = member(root, "traceEvents");
  assert_int_equal(cJSON_GetArraySize(ev), 6); /* 2 process, 2 thread metadata, 2 slices */
  const cJSON *pname = cJSON_GetArrayItem(ev, 0);
  assert_string_equal(member(pname, "ph")->valuestring, "M");
  assert_string_equal(member(member(pname, "args"), "name")->valuestring, "node \"A\"\n\\");
  const cJSON *thread = cJSON_GetArrayItem(ev, 2);
  assert_int_equal(member(thread, "tid")->valueint, 7);
  assert_string_equal(member(member(thread, "args"), "name")->valuestring, "gpu\t0");
  const cJSON *x = cJSON_GetArrayItem(ev, 4);
  assert_string_equal(member(x, "ph")->valuestring, "X");
  assert_true(fabs(member(x, "ts")->valuedouble - 1.5e6) < 1e-6); /* microseconds */
  assert_true(fabs(member(x, "dur")->valuedouble - 2.5e5) < 1e-6);
  const cJSON *a = member(x, "args");
  assert_int_equal(member(a, "items")->valueint, 128);
  assert_string_equal(member(a, "who")->valuestring, "x\"y");
  assert_true(cJSON_IsNull(member(a, "nan")));
  assert_false(cJSON_HasObjectItem(cJSON_GetArrayItem(ev, 5), "cat"));
  cJSON_Delete(root);
}

static void empty_trace_is_valid(void **state) {
  (void)state;
  FILE *f = tmpfile();
  hlb__trace *t = NULL;
  assert_int_equal(hlb__trace_open_stream(f, &t), 0);
  assert_int_equal(hlb__trace_close(t), 0);
  cJSON *root = read_json(f);
  fclose(f);
  assert_int_equal(cJSON_GetArraySize(member(root, "traceEvents")), 0);
  cJSON_Delete(root);
}

static void unwritable_path_is_io_error(void **state) {
  (void)state;
  hlb__trace *t = NULL;
  assert_int_equal(hlb__trace_open("/nonexistent/dir/trace.json", &t), HLB_EIO);
  assert_null(t);
  assert_non_null(strstr(hlb_last_error(), "/nonexistent/dir/trace.json"));
  assert_int_equal(hlb__trace_open_stream(NULL, &t), HLB_EINVAL);
}

static void full_device_is_reported_at_close(void **state) {
  (void)state;
  hlb__trace *t = NULL;
  int rc = hlb__trace_open("/dev/full", &t);
  if (rc == HLB_EIO) skip(); /* no /dev/full here */
  assert_int_equal(rc, 0);
  for (int i = 0; i < 10000; i++)
    hlb__trace_slice(t, 0, 0, "s", NULL, i, 1, NULL, 0);
  assert_int_equal(hlb__trace_close(t), HLB_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(writes_metadata_and_slices),
      cmocka_unit_test(empty_trace_is_valid),
      cmocka_unit_test(unwritable_path_is_io_error),
      cmocka_unit_test(full_device_is_reported_at_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
