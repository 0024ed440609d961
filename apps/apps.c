/* The app registry and what every app shares. */
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "common/error_internal.h"

extern const hlb__app_ops hlb__app_matmul, hlb__app_blackscholes, hlb__app_kmeans,
    hlb__app_mandelbrot, hlb__app_spmv;

static const hlb__app_ops *const apps[] = {&hlb__app_matmul, &hlb__app_blackscholes,
                                           &hlb__app_kmeans, &hlb__app_mandelbrot, &hlb__app_spmv};
#define N_APPS (sizeof apps / sizeof apps[0])

struct hlb_app {
  const hlb__app_ops *ops;
  void *state;
};

unsigned hlb_app_count(void) {
  return (unsigned)N_APPS;
}

const hlb_app_info *hlb_app_info_at(unsigned i) {
  return i < N_APPS ? &apps[i]->info : NULL;
}

static const hlb__app_ops *find(const char *name) {
  for (unsigned i = 0; name && i < N_APPS; i++)
    if (!strcmp(apps[i]->info.name, name)) return apps[i];
  return NULL;
}

const hlb_app_info *hlb_app_find(const char *name) {
  const hlb__app_ops *o = find(name);
  return o ? &o->info : NULL;
}

int hlb_app_create(const char *name, size_t size, uint64_t seed, hlb_app **out) {
  const hlb__app_ops *o = find(name);
  if (!o)
    return hlb__error(HLB_ENOTFOUND,
                      "app '%s': unknown (apps: matmul, blackscholes, kmeans, mandelbrot, spmv)",
                      name ? name : "(null)");
  if (size == 0) size = o->info.default_size;
  size_t min_size = o->info.min_size ? o->info.min_size : 2;
  if (size < min_size || size > o->info.max_size)
    return hlb__error(HLB_EINVAL, "app '%s': size (%s) must be in [%zu, %zu], got %zu", name,
                      o->info.size_meaning, min_size, o->info.max_size, size);
  hlb_app *a = calloc(1, sizeof *a);
  if (!a) return hlb__error(HLB_ENOMEM, "app '%s': out of memory", name);
  a->ops = o;
  int rc = o->create(size, seed, &a->state);
  if (rc) {
    free(a);
    return rc;
  }
  *out = a;
  return 0;
}

void hlb_app_destroy(hlb_app *a) {
  if (!a) return;
  a->ops->destroy(a->state);
  free(a);
}

const hlb_app_info *hlb_app_info_of(const hlb_app *a) {
  return &a->ops->info;
}

size_t hlb_app_items(const hlb_app *a) {
  return a->ops->items(a->state);
}

int hlb_app_run_passes(hlb_app *a, hlb_app_pass_fn pass, void *ctx, hlb_exec_stats *st) {
  a->ops->clear(a->state);
  if (a->ops->run) return a->ops->run(a->state, pass, ctx, st);
  return pass(ctx, a->ops->codelet(a->state), a->ops->items(a->state), HLB_APP_ALL_SHARED, st);
}

typedef struct exec_ctx {
  hlb_executor *ex;
  const hlb_exec_options *opt;
} exec_ctx;

/* The executor copies shared buffers to its devices at every run: `changed` needs no care. */
static int exec_pass(void *ctx, const hlb_codelet *cl, size_t n_items, unsigned changed,
                     hlb_exec_stats *st) {
  const exec_ctx *e = ctx;
  (void)changed;
  return hlb_executor_run(e->ex, cl, n_items, e->opt, st);
}

int hlb_app_run(hlb_app *a, hlb_executor *ex, const hlb_exec_options *opt, hlb_exec_stats *st) {
  exec_ctx e = {ex, opt};
  return hlb_app_run_passes(a, exec_pass, &e, st);
}

int hlb_app_verify(hlb_app *a) {
  return a->ops->verify(a->state);
}

const hlb_codelet *hlb_app_codelet(hlb_app *a) {
  return a->ops->codelet ? a->ops->codelet(a->state) : NULL;
}

static void add_pu(hlb_exec_pu_stats *t, const hlb_exec_pu_stats *p, double shift) {
  t->items += p->items;
  t->blocks += p->blocks;
  t->failed_blocks += p->failed_blocks;
  t->retired |= p->retired;
  t->busy_s += p->busy_s;
  t->compute_s += p->compute_s;
  t->transfer_s += p->transfer_s;
  t->throttle_s += p->throttle_s;
  t->setup_s += p->setup_s;
  t->build_s += p->build_s;
  t->upload_s += p->upload_s;
  t->kernel_builds += p->kernel_builds;
  if (p->blocks) t->finish_s = p->finish_s + shift;
  /* The models of the last pass are the most informed. */
  if (p->fitted) {
    t->fitted = 1;
    t->model = p->model;
    t->model_terms = p->model_terms;
  }
  /* The PUs as the last pass left them: a device released in one pass stays so in the next,
   * but one may also take the cpu PU's cores in a later pass, or be tried alone on them and
   * released again (docs/executor.md), and the run says where it ended. */
  t->released = p->released;
  memcpy(t->release_reason, p->release_reason, sizeof t->release_reason);
  t->cores_given = p->cores_given;
}

int hlb__app_stats_append(hlb_exec_stats *t, hlb_exec_stats *p) {
  if (t->n_pus == 0) {
    *t = *p;
    memset(p, 0, sizeof *p);
    return 0;
  }
  double shift = t->makespan_s;
  hlb_decision *log = realloc(t->log, (t->n_log + p->n_log) * sizeof *log + 1);
  if (!log) return hlb__error(HLB_ENOMEM, "stats: out of memory for the decision log");
  for (size_t k = 0; k < p->n_log; k++) {
    hlb_decision d = p->log[k];
    d.time_s += shift;
    d.end_s += shift;
    log[t->n_log + k] = d;
  }
  t->log = log;
  t->n_log += p->n_log;
  for (unsigned i = 0; i < t->n_pus; i++)
    add_pu(&t->per_pu[i], &p->per_pu[i], shift);
  if (t->pu && p->pu) memcpy(t->pu, p->pu, t->n_pus * sizeof *t->pu); /* cores as they ended */
  t->n_items += p->n_items;
  t->makespan_s += p->makespan_s;
  t->solver_s += p->solver_s;
  t->setup_s += p->setup_s;
  t->wrapup_s += p->wrapup_s;
  t->kept_kernels = p->kept_kernels;
  hlb_exec_stats_clear(p);
  return 0;
}

double hlb__app_uniform(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}
