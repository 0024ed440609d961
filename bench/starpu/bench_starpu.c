/* hlb inside StarPU against StarPU's own schedulers and against hlb's executor, on the same
 * cpu workers, with and without one worker throttled (emulated, sleeping) 4x.
 *
 *   bench_starpu [--reps N] [--workers W] [--throttle F] [--apps a,b,c] [--quick]
 *
 * Methods, each a fresh StarPU (starpu_init with that scheduler) or executor per run:
 *   hlb-starpu  libhlb_starpu, policy hlb: hlb sizes the blocks and pins them to workers
 *   hlb-starpu-cal  the same, calibrated as dmda is, the way `hlb run --runtime starpu` is by
 *               default: each run reads the model files the runs before it wrote
 *               (hlb_starpu_memory_load) and adds its own (hlb_starpu_memory_save), in a
 *               model directory of the row's own, after three runs that are not counted
 *   dmda, eager, ws   StarPU's scheduler places 8 equal blocks per worker; dmda's history
 *               perfmodel is calibrated first (STARPU_CALIBRATE=1 runs, not counted); the
 *               workers keep polling at the run's end, as StarPU leaves them
 *   dmda-paused  dmda with the adapter's pause at the run's end (pause_at_end, which the
 *               hlb-starpu methods use): how much of a difference is that pause
 *   hlb-sched   the same equal blocks as independent tasks placed by hlb's StarPU scheduler
 *               (hlb_starpu_sched_policy), its per-worker models calibrated first the same way
 *               (forgotten before each row, so a row's throttle is the only one they saw)
 *   hlb-exec    hlb's threaded executor, W cpu PUs of one core each, policy hlb
 * The iterative apps (kmeans, spmv) run every pass through StarPU (hlb_starpu_passes: buffers
 * registered once, later passes starting from what earlier ones learnt), as hlb run does.
 * Every run is checked against the app's reference. Repetitions are interleaved (each
 * repetition runs every method once, in an order rotated by the repetition) so a slow minute
 * falls on different methods; the table gives each method's median makespan (first grant to
 * last block end) and its ratio to hlb-starpu's. A second table gives the cost of one block:
 * an empty kernel on one worker, blocks of one item (greedy, chunk=1), median gap between
 * consecutive block ends, for the adapter and for the executor. Prints tables; never passes
 * or fails on time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_median.h"
#include "apps.h"
#include "hlb/error.h"
#include "hlb/starpu.h"

enum { M_HLB_STARPU, M_HLB_MEM, M_DMDA, M_DMDA_PAUSED, M_EAGER, M_WS, M_SCHED, M_EXEC, M_COUNT };
static const char *method_name[M_COUNT] = {
    "hlb-starpu", "hlb-starpu-cal", "dmda", "dmda-paused", "eager", "ws", "hlb-sched", "hlb-exec"};
static const char *sched_of[M_COUNT] = {"eager", "eager", "dmda", "dmda",
                                        "eager", "ws",    "hlb",  NULL};
/* hlb-starpu-cal's model directory: made for each row, filled by its calibration runs, then
 * read and added to by each run, as dmda's history model is. */
static char row_dir[64];

typedef struct cfg {
  unsigned reps, workers;
  double throttle;
  const char *apps;
  int quick;
} cfg;

static void die(const char *what) {
  fprintf(stderr, "bench_starpu: %s: %s\n", what, hlb_last_error());
  exit(1);
}

static void start_starpu(const char *sched, unsigned workers, int calibrate) {
  /* StarPU reads STARPU_CALIBRATE at init: 1 keeps measuring even a calibrated model. */
  setenv("STARPU_CALIBRATE", calibrate ? "1" : "0", 1);
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  if (!strcmp(sched, "hlb"))
    conf.sched_policy = hlb_starpu_sched_policy();
  else
    conf.sched_policy_name = sched;
  conf.ncpus = (int)workers;
  conf.nopencl = 0;
  conf.ncuda = 0;
  if (starpu_init(&conf) != 0) {
    fprintf(stderr, "bench_starpu: starpu_init(%s) failed\n", sched);
    exit(1);
  }
}

/* The app's passes through StarPU: one hlb_starpu_passes over them; with a model directory,
 * their memory starts from its files (the codelet is known at the first pass). */
typedef struct pass_ctx {
  hlb_starpu_options *o;
  hlb_starpu_passes *p;
  const char *model_dir;
  const hlb_codelet *cl;
} pass_ctx;

static int starpu_pass(void *ctx, const hlb_codelet *cl, size_t n, unsigned changed,
                       hlb_exec_stats *st) {
  pass_ctx *c = ctx;
  if (!c->p && c->model_dir) {
    c->cl = cl;
    if (hlb_starpu_memory_create(&c->o->memory) ||
        hlb_starpu_memory_load(c->o->memory, cl, c->o, c->model_dir))
      return -1;
  }
  if (!c->p && hlb_starpu_passes_open(cl, n, c->o, &c->p)) return -1;
  hlb_starpu_stats s = {0};
  int rc = hlb_starpu_passes_run(c->p, changed, &s);
  *st = s.exec;
  s.exec = (hlb_exec_stats){0};
  hlb_starpu_stats_clear(&s);
  return rc;
}

/* One run of app (fresh input, so the check sees this run's output): its makespan, the sum
 * of its passes'. */
static double run_starpu(const char *app, size_t size, int m, const cfg *c, int calibrate) {
  hlb_app *a = NULL;
  if (hlb_app_create(app, size, 1, &a)) die(app);
  start_starpu(sched_of[m], c->workers, calibrate);
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "hlb";
  o.scheduler_places = m != M_HLB_STARPU && m != M_HLB_MEM;
  o.pause_at_end = !o.scheduler_places || m == M_DMDA_PAUSED;
  if (c->throttle > 1) o.throttle[c->workers - 1] = c->throttle; /* the last cpu worker */
  hlb_exec_stats st = {0};
  pass_ctx pc = {.o = &o, .model_dir = m == M_HLB_MEM ? row_dir : NULL};
  int rc = hlb_app_run_passes(a, starpu_pass, &pc, &st);
  hlb_starpu_passes_close(pc.p);
  if (!rc && o.memory && hlb_starpu_memory_save(o.memory, pc.cl, &o, row_dir)) die("saving");
  hlb_starpu_memory_destroy(o.memory);
  starpu_shutdown();
  if (rc) die(method_name[m]);
  if (hlb_app_verify(a)) die(method_name[m]);
  double t = st.makespan_s;
  hlb_exec_stats_clear(&st);
  hlb_app_destroy(a);
  return t;
}

static hlb_executor *open_exec(unsigned workers, double throttle) {
  hlb_exec_pu pus[STARPU_NMAXWORKERS];
  memset(pus, 0, sizeof pus);
  for (unsigned i = 0; i < workers; i++) {
    /* One core each, like StarPU's cpu workers (the CLI's cpu:N is one PU of N cores). */
    snprintf(pus[i].name, sizeof pus[i].name, "cpu:%u", i);
    pus[i].backend = HLB_BACKEND_CPU;
    pus[i].cores = 1;
  }
  if (throttle > 1) pus[workers - 1].throttle = throttle;
  hlb_executor *ex = NULL;
  if (hlb_executor_create(pus, workers, &ex)) die("hlb_executor_create");
  return ex;
}

static double run_exec(const char *app, size_t size, const cfg *c) {
  hlb_app *a = NULL;
  if (hlb_app_create(app, size, 1, &a)) die(app);
  hlb_executor *ex = open_exec(c->workers, c->throttle);
  hlb_exec_options o;
  hlb_exec_options_default(&o);
  o.policy = "hlb";
  o.models = HLB_MODELS_OFF;
  hlb_exec_stats st = {0};
  if (hlb_app_run(a, ex, &o, &st) || hlb_app_verify(a)) die("hlb-exec");
  double t = st.makespan_s;
  hlb_exec_stats_clear(&st);
  hlb_executor_destroy(ex);
  hlb_app_destroy(a);
  return t;
}

static size_t size_of(const char *app, const cfg *c) {
  const hlb_app_info *i = hlb_app_find(app);
  if (!i) {
    fprintf(stderr, "bench_starpu: unknown app '%s'\n", app);
    exit(2);
  }
  return c->quick ? i->test_size : i->default_size;
}

/* The model directory of the last row, and what its runs wrote. */
static void remove_row_dir(void) {
  if (!row_dir[0]) return;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", row_dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_starpu: could not remove %s\n", row_dir);
  row_dir[0] = 0;
}

/* dmda's perfmodel must know the block size before its runs count; so must hlb's scheduler's
 * models, which start from nothing for each row. */
static void calibrate(const char *app, size_t size, const cfg *c) {
  hlb_starpu_sched_forget();
  remove_row_dir();
  snprintf(row_dir, sizeof row_dir, "/tmp/hlb_bench_starpu_XXXXXX");
  if (!mkdtemp(row_dir)) die("mkdtemp");
  for (int k = 0; k < (c->quick ? 1 : 3); k++) {
    run_starpu(app, size, M_DMDA, c, 1);
    run_starpu(app, size, M_SCHED, c, 0);
    run_starpu(app, size, M_HLB_MEM, c, 0);
  }
}

static void bench_app(const char *app, const cfg *c) {
  size_t size = size_of(app, c);
  calibrate(app, size, c);
  double t[M_COUNT][64];
  for (unsigned r = 0; r < c->reps; r++)
    for (int k = 0; k < M_COUNT; k++) {
      int m = (k + (int)r) % M_COUNT;
      t[m][r] = m == M_EXEC ? run_exec(app, size, c) : run_starpu(app, size, m, c, 0);
    }
  double med[M_COUNT];
  for (int m = 0; m < M_COUNT; m++)
    med[m] = bench_median(t[m], c->reps);
  printf("| %-12s | %5zu | %4g |", app, size, c->throttle > 1 ? c->throttle : 1);
  for (int m = 0; m < M_COUNT; m++)
    printf(" %8.4f (%.2f) |", med[m], med[m] / med[M_HLB_STARPU]);
  /* The targets are against dmda: hlb's three ways in StarPU over dmda, then the
   * calibrated one over dmda with the same pause at the end. */
  printf(" %.2f / %.2f / %.2f | %.2f |\n", med[M_HLB_STARPU] / med[M_DMDA],
         med[M_HLB_MEM] / med[M_DMDA], med[M_SCHED] / med[M_DMDA],
         med[M_HLB_MEM] / med[M_DMDA_PAUSED]);
  fflush(stdout);
}

/* ---- the cost of one block ---- */
static int empty(const hlb_exec_call *call) {
  (void)call;
  return 0;
}

static double median_gap(const hlb_decision *log, size_t n) {
  double *gap = malloc((n ? n : 1) * sizeof *gap), *end = malloc((n ? n : 1) * sizeof *end);
  for (size_t k = 0; k < n; k++)
    end[k] = log[k].end_s;
  /* The log is in grant order; the gaps are between ends. */
  qsort(end, n, sizeof *end, bench_cmp_double);
  unsigned g = 0;
  for (size_t k = 1; k < n; k++)
    gap[g++] = end[k] - end[k - 1];
  double m = g ? bench_median(gap, g) : NAN;
  free(gap);
  free(end);
  return m;
}

static void bench_block_cost(const cfg *c) {
  size_t n = c->quick ? 500 : 20000;
  unsigned char *out = calloc(n, 1);
  hlb_codelet cl = {.name = "empty", .cpu = empty, .out_bytes_per_item = 1, .out = out};
  hlb_starpu_options o;
  hlb_starpu_options_default(&o);
  o.policy = "greedy";
  o.params = "chunk=1";
  o.workers[0] = 0;
  o.n_workers = 1;
  start_starpu("eager", 1, 0);
  hlb_starpu_stats st = {0};
  if (hlb_starpu_run_codelet(&cl, n, &o, &st)) die("block cost (StarPU)");
  starpu_shutdown();
  double sp_gap = median_gap(st.exec.log, st.exec.n_log),
         sp_adapter = st.adapter_s / (double)st.blocks;
  hlb_starpu_stats_clear(&st);
  hlb_executor *ex = open_exec(1, 1);
  hlb_exec_options eo;
  hlb_exec_options_default(&eo);
  eo.policy = "greedy";
  eo.params = "chunk=1";
  eo.models = HLB_MODELS_OFF;
  hlb_exec_stats es = {0};
  if (hlb_executor_run(ex, &cl, n, &eo, &es)) die("block cost (executor)");
  double ex_gap = median_gap(es.log, es.n_log);
  hlb_exec_stats_clear(&es);
  hlb_executor_destroy(ex);
  free(out);
  printf(
      "\ncost of one block: empty kernel, one worker, %zu blocks of one item (greedy chunk=1)\n\n",
      n);
  printf("| runtime | median gap between block ends, us | of which the adapter's own work, us |\n");
  printf("|---|---:|---:|\n");
  printf("| hlb in StarPU (libhlb_starpu) | %.1f | %.1f |\n", sp_gap * 1e6, sp_adapter * 1e6);
  printf("| hlb's executor | %.1f | - |\n", ex_gap * 1e6);
  printf("\nratio StarPU adapter / executor: %.1fx\n", sp_gap / ex_gap);
}

static void parse(int argc, char **argv, cfg *c) {
  *c = (cfg){
      .reps = 5, .workers = 2, .throttle = 4, .apps = "matmul,blackscholes,mandelbrot,kmeans,spmv"};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--quick")) {
      c->quick = 1;
      c->reps = 1;
    } else if (!strcmp(argv[i], "--reps") && v) {
      c->reps = (unsigned)atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--workers") && v) {
      c->workers = (unsigned)atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--throttle") && v) {
      c->throttle = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--apps") && v) {
      c->apps = argv[++i];
    } else {
      fprintf(stderr, "usage: bench_starpu [--reps N] [--workers W] [--throttle F] [--apps a,b] "
                      "[--quick]\n");
      exit(2);
    }
  }
  if (c->reps < 1 || c->reps > 64 || c->workers < 1 || c->workers > 16 || !(c->throttle >= 1)) {
    fprintf(stderr, "bench_starpu: --reps 1..64, --workers 1..16, --throttle >= 1\n");
    exit(2);
  }
}

int main(int argc, char **argv) {
  cfg c;
  parse(argc, argv, &c);
  /* No banner or calibration notes between the table's lines. */
  setenv("STARPU_SILENT", "1", 0);
  printf("median makespan in s over %u interleaved runs (ratio to hlb-starpu), %u cpu workers; "
         "throttle: the last worker sleeps to look that many times slower (EMULATED)\n\n",
         c.reps, c.workers);
  printf("| app | size | throttle |");
  for (int m = 0; m < M_COUNT; m++)
    printf(" %s |", method_name[m]);
  printf(" hlb-starpu / -cal / hlb-sched over dmda | -cal over dmda-paused |\n|---|");
  for (int col = 0; col < M_COUNT + 4; col++) /* size, throttle, the methods, two ratios */
    printf("---:|");
  printf("\n");
  char *apps = strdup(c.apps);
  double throttle = c.throttle;
  for (int pass = 0; pass < 2; pass++) {
    c.throttle = pass ? throttle : 1;
    char *save = NULL;
    char *list = strdup(apps);
    for (char *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save))
      bench_app(a, &c);
    free(list);
  }
  free(apps);
  remove_row_dir();
  bench_block_cost(&c);
  return 0;
}
