/* The OpenCL program binaries kept across builds and runs (src/exec/backends/opencl_cache.c),
 * through the executor on PoCL's CPU device: a second build in a process and a build in a later
 * process (the memory forgotten) come from the binary and compute the same; a file cut short
 * or holding a binary the platform refuses is rebuilt from source and replaced; `off` keeps no
 * files. Skipped (77) without a device. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/backends/opencl_cache.h"
#include "hlb/error.h"
#include "hlb/exec.h"

#define N 3000

/* out[i] = 2 in[i] + begin + i, in doubles. */
static const char src[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "kernel void twice(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "  global const uchar *s0, global const uchar *s1, global const uchar *s2,\n"
    "  global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  ((global double *)out)[i] = 2.0 * ((global const double *)in)[i] + (double)(begin + i);\n"
    "}\n";

static double in[N], out[N];

static int cpu_twice(const hlb_exec_call *c) {
  const double *x = c->in;
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = 2.0 * x[i] + (double)(c->begin + i);
  return 0;
}

/* One run of the codelet on opencl:0 alone, in a new executor (a new context and build), its
 * result checked item by item. */
static void run_once(void) {
  for (size_t i = 0; i < N; i++)
    in[i] = (double)i * 0.25, out[i] = -1.0;
  hlb_codelet cl = {.name = "twice",
                    .in_bytes_per_item = sizeof(double),
                    .out_bytes_per_item = sizeof(double),
                    .in = in,
                    .out = out,
                    .cpu = cpu_twice,
                    .opencl_source = src,
                    .opencl_kernel = "twice"};
  hlb_exec_pu pu;
  unsigned n = 0;
  assert_int_equal(hlb_exec_parse_pus("opencl:0", &pu, 1, &n), 0);
  hlb_executor *ex = NULL;
  if (hlb_executor_create(&pu, 1, &ex)) fail_msg("opencl:0: %s", hlb_last_error());
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.models = HLB_MODELS_OFF;
  hlb_exec_stats s = {0};
  if (hlb_executor_run(ex, &cl, N, &o, &s)) fail_msg("run: %s", hlb_last_error());
  for (size_t i = 0; i < N; i++)
    if (out[i] != 2.0 * in[i] + (double)i)
      fail_msg("out[%zu] = %g, expected %g", i, out[i], 2.0 * in[i] + (double)i);
  hlb_exec_stats_clear(&s);
  hlb_executor_destroy(ex);
}

static hlb__cl_cache_stats stats(void) {
  hlb__cl_cache_stats s;
  hlb__cl_cache_stats_get(&s);
  return s;
}

/* A fresh directory for the binaries, set as HLB_OPENCL_CACHE; the memory forgotten. */
static char dir[64];

static void use_fresh_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/hlb-clcache-XXXXXX");
  assert_non_null(mkdtemp(dir));
  setenv("HLB_OPENCL_CACHE", dir, 1);
  hlb__cl_cache_forget();
}

static void remove_dir(const char *path) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", path);
  assert_int_equal(system(cmd), 0);
}

/* The one binary file in dir (its path in `path`); fails unless there is exactly one. */
static void the_file(char *path, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  unsigned found = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".clbin")) {
      snprintf(path, cap, "%s/%.200s", dir, e->d_name);
      found++;
    }
  closedir(d);
  if (found != 1) fail_msg("%u binary files in %s, expected 1", found, dir);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void a_second_build_in_a_process_uses_the_binary(void **state) {
  (void)state;
  setenv("HLB_OPENCL_CACHE", "off", 1);
  hlb__cl_cache_forget();
  run_once();
  run_once();
  hlb__cl_cache_stats s = stats();
  assert_int_equal(s.source, 1);
  assert_int_equal(s.memory, 1);
  assert_int_equal(s.file, 0);
}

/* A later process: the memory forgotten, the file read. */
static void binaries_are_kept_in_files_for_later_runs(void **state) {
  (void)state;
  use_fresh_dir();
  run_once();
  char path[300];
  the_file(path, sizeof path);
  hlb__cl_cache_forget();
  run_once();
  hlb__cl_cache_stats s = stats();
  assert_int_equal(s.file, 1);
  assert_int_equal(s.source, 0);
  remove_dir(dir);
}

/* Cut short (a write that did not finish), then whole but holding bytes no platform takes: each
 * time the program is built from source, the run computes the same, and the file is replaced
 * by a whole one. */
static void a_damaged_file_is_rebuilt_and_replaced(void **state) {
  (void)state;
  use_fresh_dir();
  run_once();
  char path[300];
  the_file(path, sizeof path);
  long whole = file_size(path);
  assert_true(whole > 24);
  assert_int_equal(truncate(path, whole / 2), 0);
  hlb__cl_cache_forget();
  run_once();
  hlb__cl_cache_stats s = stats();
  assert_int_equal(s.file, 0);
  assert_int_equal(s.refused, 0); /* not whole: not even offered to the platform */
  assert_int_equal(s.source, 1);
  assert_int_equal(file_size(path), whole);

  /* The header kept (magic, key, length), the binary zeroed. */
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, 24, SEEK_SET), 0);
  for (long i = 24; i < whole; i++)
    fputc(0, f);
  assert_int_equal(fclose(f), 0);
  hlb__cl_cache_forget();
  run_once();
  s = stats();
  assert_int_equal(s.refused, 1);
  assert_int_equal(s.source, 1);
  hlb__cl_cache_forget();
  run_once(); /* the replaced file is taken again */
  assert_int_equal(stats().file, 1);
  remove_dir(dir);
}

/* `off`: nothing written under the model directory (the default's parent). */
static void off_keeps_no_files(void **state) {
  (void)state;
  char models[64];
  snprintf(models, sizeof models, "/tmp/hlb-models-XXXXXX");
  assert_non_null(mkdtemp(models));
  setenv("HLB_MODEL_DIR", models, 1);
  setenv("HLB_OPENCL_CACHE", "off", 1);
  hlb__cl_cache_forget();
  run_once();
  char opencl[96];
  snprintf(opencl, sizeof opencl, "%s/opencl", models);
  assert_int_equal(file_size(opencl), -1);
  /* Unset, the default is the model directory's opencl/. */
  unsetenv("HLB_OPENCL_CACHE");
  hlb__cl_cache_forget();
  run_once();
  assert_true(file_size(opencl) >= 0);
  unsetenv("HLB_MODEL_DIR");
  remove_dir(models);
}

int main(void) {
  if (!hlb_backend_built(HLB_BACKEND_OPENCL) || hlb_backend_devices(HLB_BACKEND_OPENCL) == 0) {
    printf("no OpenCL device: skipped\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_second_build_in_a_process_uses_the_binary),
      cmocka_unit_test(binaries_are_kept_in_files_for_later_runs),
      cmocka_unit_test(a_damaged_file_is_rebuilt_and_replaced),
      cmocka_unit_test(off_keeps_no_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
