/* Per-block dispatch overhead of the executor: an empty kernel on one cpu PU, blocks of one
 * item (policy greedy, chunk=1), so each block's cycle is all overhead: balancer next/done
 * under the mutex, timing, the kernel call. Side by side with StarPU's per-task overhead
 * (empty codelet, one CPU worker) when libstarpu-dev is installed. Prints a table; never
 * passes or fails on time. Usage: bench_dispatch [--quick] [--blocks N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlb/error.h"
#include "hlb/exec.h"

#ifdef HLB_HAVE_STARPU
/* The pkg-config file asks for StarPU's deprecated names; this file uses the current ones. */
#undef STARPU_USE_DEPRECATED_API
#undef STARPU_USE_DEPRECATED_ONE_ZERO_API
#include <starpu.h>
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int empty(const hlb_exec_call *c) {
  (void)c;
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and mean of the gaps between consecutive block ends on the PU: one block's cycle. */
static void hlb_overhead(size_t n, double *median_us, double *mean_us) {
  hlb_exec_pu pu;
  unsigned np;
  hlb_executor *ex = NULL;
  if (hlb_exec_parse_pus("cpu:1", &pu, 1, &np) || hlb_executor_create(&pu, 1, &ex)) {
    fprintf(stderr, "bench_dispatch: %s\n", hlb_last_error());
    exit(1);
  }
  hlb_codelet cl = {.name = "empty", .cpu = empty};
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "greedy";
  o.params = "chunk=1";
  hlb_exec_stats st = {0};
  double t0 = now();
  if (hlb_executor_run(ex, &cl, n, &o, &st)) {
    fprintf(stderr, "bench_dispatch: %s\n", hlb_last_error());
    exit(1);
  }
  double wall = now() - t0;
  double *gap = malloc(st.n_log * sizeof *gap);
  size_t g = 0;
  for (size_t k = 1; k < st.n_log; k++)
    gap[g++] = st.log[k].end_s - st.log[k - 1].end_s;
  qsort(gap, g, sizeof *gap, cmp);
  *median_us = g ? 1e6 * gap[g / 2] : 0;
  *mean_us = 1e6 * wall / (double)n;
  free(gap);
  hlb_exec_stats_clear(&st);
  hlb_executor_destroy(ex);
}

#ifdef HLB_HAVE_STARPU
static void starpu_empty(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
}

/* Mean per task: submit n empty tasks, wait for all, divide (StarPU's tasks_overhead test). */
static int starpu_overhead(size_t n, double *mean_us) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 1;
  conf.ncuda = 0;
  conf.nopencl = 0;
  if (starpu_init(&conf) != 0) return -1;
  static struct starpu_codelet cl;
  memset(&cl, 0, sizeof cl);
  cl.cpu_funcs[0] = starpu_empty;
  cl.nbuffers = 0;
  double t0 = now();
  for (size_t i = 0; i < n; i++) {
    struct starpu_task *t = starpu_task_create();
    t->cl = &cl;
    if (starpu_task_submit(t) != 0) return -1;
  }
  starpu_task_wait_for_all();
  *mean_us = 1e6 * (now() - t0) / (double)n;
  starpu_shutdown();
  return 0;
}
#endif

int main(int argc, char **argv) {
  size_t n = 100000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      n = 2000;
    else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
  }
  double med = 0, mean = 0;
  hlb_overhead(n, &med, &mean);
  printf("per-block dispatch overhead, empty kernel, one cpu PU of one core, %zu blocks\n", n);
  printf("%-34s %14s %14s\n", "runtime", "median us", "mean us");
  printf("%-34s %14.3f %14.3f\n", "hlb executor (greedy, chunk=1)", med, mean);
#ifdef HLB_HAVE_STARPU
  double sp = 0;
  if (starpu_overhead(n, &sp) == 0)
    printf("%-34s %14s %14.3f   (ratio StarPU/hlb mean: %.1fx)\n", "StarPU 1.3 (1 CPU worker)", "-",
           sp, sp / mean);
  else
    printf("%-34s %14s %14s\n", "StarPU 1.3 (1 CPU worker)", "init failed", "-");
#else
  printf("%-34s %14s %14s\n", "StarPU", "not installed", "(apt-get install libstarpu-dev)");
#endif
  return 0;
}
