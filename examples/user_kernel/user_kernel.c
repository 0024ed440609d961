/* user_kernel.c: balance your own kernel over this machine's PUs with hlb.
 *
 * The kernel is SAXPY, z[i] = a * x[i] + y[i], over n items. hlb hands out blocks of items
 * to every PU (a group of CPU cores, each OpenCL device, each CUDA GPU), measures how long
 * each block takes (compute and data transfer apart), and sizes the next blocks so that
 * all PUs finish together.
 *
 * Build against an installed hlb:
 *   cc user_kernel.c $(pkg-config --cflags --libs hlb) -o user_kernel      (see Makefile)
 *   or CMake: find_package(hlb) and link hlb::hlb                          (CMakeLists.txt)
 * Run: ./user_kernel [n] [pus]   e.g. ./user_kernel 10000000 cpu,opencl:0
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <hlb/error.h>
#include <hlb/exec.h>

typedef struct saxpy {
  float a;
  const float *x, *y; /* the two inputs */
} saxpy;

/* 1. A block's input: x and y of items [begin, begin + count), interleaved, so one copy
 *    moves it to a device. (With a single input array, set hlb_codelet.in instead.) */
static void pack(void *user, size_t begin, size_t count, void *dst) {
  const saxpy *s = user;
  float *d = dst;
  for (size_t i = 0; i < count; i++) {
    d[2 * i] = s->x[begin + i];
    d[2 * i + 1] = s->y[begin + i];
  }
}

/* 2. The cpu kernel: c->in is the packed block, c->out the block's part of z. */
static int saxpy_cpu(const hlb_exec_call *c) {
  const float *xy = c->in, *a = c->shared[0];
  float *z = c->out;
  for (size_t i = 0; i < c->count; i++)
    z[i] = a[0] * xy[2 * i] + xy[2 * i + 1];
  return 0; /* a negative HLB_E* code would send the block to another PU */
}

/* 3. The same kernel in OpenCL C. hlb fixes the arguments: in, out, begin, count, then the
 *    four shared buffers (s0 holds a). Work items past the block must return. */
static const char saxpy_cl[] =
    "kernel void saxpy(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "                  global const uchar *s0, global const uchar *s1,\n"
    "                  global const uchar *s2, global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  global const float *xy = (global const float *)in;\n"
    "  ((global float *)out)[i] = ((global const float *)s0)[0] * xy[2 * i] + xy[2 * i + 1];\n"
    "}\n";

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
  const char *spec = argc > 2 ? argv[2] : "all";
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
  if (!x || !y || !z || n == 0) return 1;
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1000);
    y[i] = 1.0f;
  }
  saxpy s = {.a = 2.0f, .x = x, .y = y};

  /* 4. The PUs: "all" takes every local one; a list such as "cpu,opencl:0" picks some. */
  hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
  unsigned n_pus = 0;
  hlb_executor *ex = NULL;
  int rc = hlb_exec_parse_pus(spec, pus, HLB_EXEC_MAX_LOCAL_PUS, &n_pus);
  if (rc == 0) rc = hlb_executor_create(pus, n_pus, &ex);
  if (rc) {
    fprintf(stderr, "user_kernel: %s\n", hlb_last_error());
    return 1;
  }

  /* 5. The codelet: the kernels and where a block's data lives. */
  hlb_codelet cl = {
      .name = "saxpy",
      .user = &s,
      .in_bytes_per_item = 2 * sizeof(float),
      .out_bytes_per_item = sizeof(float),
      .pack = pack,
      .out = z,                       /* block [b, b+c) is written to z + b */
      .shared = {{&s.a, sizeof s.a}}, /* copied once per run to every device */
      .n_shared = 1,
      .cpu = saxpy_cpu,
      .opencl_source = saxpy_cl,
      .opencl_kernel = "saxpy",
  };

  /* 6. Run with the default policy, keeping the stats. */
  hlb_exec_options opt;
  hlb_exec_options_default(&opt);
  hlb_exec_stats st = {0};
  rc = hlb_executor_run(ex, &cl, n, &opt, &st);
  if (rc) {
    fprintf(stderr, "user_kernel: run failed: %s\n", hlb_last_error());
    return 1;
  }

  /* 7. Check the result and read the stats. */
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++)
    wrong += fabsf(z[i] - (2.0f * x[i] + y[i])) > 1e-3f;
  printf("saxpy over %zu items, policy %s: makespan %.4f s, %s\n", n, st.policy, st.makespan_s,
         wrong ? "WRONG RESULT" : "result correct");
  for (unsigned i = 0; i < st.n_pus; i++)
    printf("  %-10s %-40s %10zu items %5zu blocks  busy %5.1f %%\n", st.pu[i].name,
           st.pu[i].device_name, st.per_pu[i].items, st.per_pu[i].blocks,
           hlb_exec_busy_pct(&st, i));
  printf("  decision log: %zu blocks granted\n", st.n_log);

  hlb_exec_stats_clear(&st);
  hlb_executor_destroy(ex);
  free(x);
  free(y);
  free(z);
  return wrong ? 1 : 0;
}
