/* Which StarPU workers take blocks and what they run: worker selection and names, the
 * wrapper codelet (timing and emulated throttle), and the handles blocks are cut from. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "internal.h"

const char *hlb_starpu_worker_name(int id, char *buf, size_t cap) {
  if (!buf || !cap) return "";
  buf[0] = '\0';
  if (id < 0 || (unsigned)id >= starpu_worker_get_count()) return buf;
  enum starpu_worker_archtype t = starpu_worker_get_type(id);
  if (t != STARPU_CPU_WORKER && t != STARPU_OPENCL_WORKER) return buf;
  /* K counts the workers of the same kind before this one: StarPU's worker ids interleave
   * kinds, and a person names "the second cpu", not "worker 3". */
  unsigned k = 0;
  for (int i = 0; i < id; i++)
    if (starpu_worker_get_type(i) == t) k++;
  snprintf(buf, cap, "%s:%u", t == STARPU_CPU_WORKER ? "cpu" : "opencl", k);
  return buf;
}

static int worker_can_run(const struct starpu_codelet *cl, int id) {
  enum starpu_worker_archtype t = starpu_worker_get_type(id);
  if (t == STARPU_CPU_WORKER)
    return cl->cpu_funcs[0] != NULL && (!cl->where || cl->where & STARPU_CPU);
  if (t == STARPU_OPENCL_WORKER)
    return cl->opencl_funcs[0] != NULL && (!cl->where || cl->where & STARPU_OPENCL);
  return 0;
}

int hlb__sp_select_workers(const struct starpu_codelet *cl, const hlb_starpu_options *o, int *ids,
                           unsigned *n) {
  unsigned count = starpu_worker_get_count();
  *n = 0;
  if (o->n_workers > STARPU_NMAXWORKERS)
    return hlb__error(HLB_EINVAL, "hlb_starpu: n_workers %u is more than STARPU_NMAXWORKERS (%d)",
                      o->n_workers, STARPU_NMAXWORKERS);
  if (!o->n_workers) {
    for (unsigned i = 0; i < count; i++)
      if (worker_can_run(cl, (int)i)) ids[(*n)++] = (int)i;
  }
  for (unsigned k = 0; k < o->n_workers; k++) {
    int id = o->workers[k];
    if (id < 0 || (unsigned)id >= count)
      return hlb__error(HLB_EINVAL, "hlb_starpu: workers[%u] = %d: StarPU has workers 0 to %u", k,
                        id, count - 1);
    if (!worker_can_run(cl, id))
      return hlb__error(HLB_EINVAL,
                        "hlb_starpu: workers[%u] = %d: codelet '%s' has no cpu or OpenCL "
                        "function for that worker's kind",
                        k, id, cl->name ? cl->name : "?");
    ids[(*n)++] = id;
  }
  if (!*n)
    return hlb__error(HLB_EDEVICE,
                      "hlb_starpu: none of StarPU's %u workers can run codelet '%s' (it needs a "
                      "cpu or OpenCL function, and StarPU cpu or OpenCL workers)",
                      count, cl->name ? cl->name : "?");
  return 0;
}

static void sleep_s(double s) {
  if (!(s > 0)) return;
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

hlb__sp_block *hlb__sp_current(void) {
  struct starpu_task *t = starpu_task_get_current();
  return t && t->callback_func == hlb__sp_task_done ? t->callback_arg : NULL;
}

/* Emulated slowdown, as hlb's executor does for --throttle: sleep, not spin, so the other
 * workers keep their cores; the task's measured time then includes the sleep. */
static void after_kernel(double t0) {
  struct starpu_task *t = starpu_task_get_current();
  const hlb__sp_wrap *w = (const hlb__sp_wrap *)t->cl;
  int id = starpu_worker_get_id();
  double f = id >= 0 ? w->throttle[id] : 0;
  if (!(f > 1)) return;
  double s = (hlb__now() - t0) * (f - 1);
  sleep_s(s);
  hlb__sp_block *b = hlb__sp_current();
  if (b) b->throttle_s = s;
}

static void cpu_wrapper(void *buffers[], void *arg) {
  const hlb__sp_wrap *w = (const hlb__sp_wrap *)starpu_task_get_current()->cl;
  double t0 = hlb__now();
  w->cpu(buffers, arg);
  after_kernel(t0);
}

static void opencl_wrapper(void *buffers[], void *arg) {
  const hlb__sp_wrap *w = (const hlb__sp_wrap *)starpu_task_get_current()->cl;
  double t0 = hlb__now();
  w->opencl(buffers, arg);
  after_kernel(t0);
}

int hlb__sp_wrap_init(hlb__sp_wrap *w, const struct starpu_codelet *cl,
                      const hlb_starpu_options *o) {
  memset(w, 0, sizeof *w);
  w->cl = *cl;
  w->cpu = cl->cpu_funcs[0];
  w->opencl = cl->opencl_funcs[0];
  /* Only the first implementation of each kind: the wrapper must know which one runs. */
  memset(w->cl.cpu_funcs, 0, sizeof w->cl.cpu_funcs);
  memset(w->cl.cpu_funcs_name, 0, sizeof w->cl.cpu_funcs_name);
  memset(w->cl.opencl_funcs, 0, sizeof w->cl.opencl_funcs);
  memset(w->cl.cuda_funcs, 0, sizeof w->cl.cuda_funcs);
  w->cl.cpu_funcs[0] = w->cpu ? cpu_wrapper : NULL;
  w->cl.opencl_funcs[0] = w->opencl ? opencl_wrapper : NULL;
  if (cl->where) w->cl.where = cl->where & (STARPU_CPU | STARPU_OPENCL);
  for (unsigned i = 0; i < STARPU_NMAXWORKERS; i++) {
    double f = o->throttle[i];
    if (f != 0 && !(f >= 1 && isfinite(f)))
      return hlb__error(HLB_EINVAL, "hlb_starpu: throttle[%u] = %g: must be 0 (none) or >= 1", i,
                        f);
    w->throttle[i] = f;
  }
  return 0;
}

static int split_shape(hlb__sp_split *s, unsigned index) {
  int id = starpu_data_get_interface_id(s->h);
  if (id == STARPU_VECTOR_INTERFACE_ID) {
    s->elemsize = starpu_vector_get_elemsize(s->h);
    s->stride = s->elemsize;
    s->items = starpu_vector_get_nx(s->h);
    return 0;
  }
  if (id == STARPU_MATRIX_INTERFACE_ID) {
    s->matrix = 1;
    s->elemsize = starpu_matrix_get_elemsize(s->h);
    s->nx = starpu_matrix_get_nx(s->h);
    s->items = starpu_matrix_get_ny(s->h);
    return 0; /* ld is known once the handle is held in main memory */
  }
  return hlb__error(HLB_EINVAL,
                    "hlb_starpu: split handle %u has StarPU interface id %d; only vectors (%d) and "
                    "matrices (%d) are cut into blocks",
                    index, id, STARPU_VECTOR_INTERFACE_ID, STARPU_MATRIX_INTERFACE_ID);
}

int hlb__sp_split_open(hlb__sp_split *s, starpu_data_handle_t h, enum starpu_data_access_mode m,
                       unsigned index) {
  memset(s, 0, sizeof *s);
  s->h = h;
  /* A block only ever writes its own items, so a W buffer is held RW: the items of blocks
   * not yet run must keep their values. */
  s->mode = (m & STARPU_W) ? STARPU_RW : STARPU_R;
  int rc = split_shape(s, index);
  if (rc) return rc;
  if (starpu_data_get_home_node(h) != STARPU_MAIN_RAM)
    return hlb__error(HLB_EINVAL,
                      "hlb_starpu: split handle %u is registered on memory node %d; blocks are cut "
                      "from main memory (STARPU_MAIN_RAM)",
                      index, starpu_data_get_home_node(h));
  int err = starpu_data_acquire(h, s->mode);
  if (err)
    return hlb__error(HLB_EINVAL, "hlb_starpu: split handle %u: starpu_data_acquire failed (%d)",
                      index, err);
  if (s->matrix) {
    s->ptr = (char *)starpu_matrix_get_local_ptr(h);
    s->ld = starpu_matrix_get_local_ld(h);
    s->stride = (size_t)s->ld * s->elemsize;
  } else {
    s->ptr = (char *)starpu_vector_get_local_ptr(h);
  }
  return 0;
}

void hlb__sp_split_close(hlb__sp_split *s) {
  if (s->h && s->ptr) starpu_data_release(s->h);
  s->ptr = NULL;
}

void hlb__sp_split_block(const hlb__sp_split *s, size_t begin, size_t count,
                         starpu_data_handle_t *out) {
  uintptr_t p = (uintptr_t)(s->ptr + begin * s->stride);
  if (s->matrix)
    starpu_matrix_data_register(out, STARPU_MAIN_RAM, p, s->ld, s->nx, (uint32_t)count,
                                s->elemsize);
  else
    starpu_vector_data_register(out, STARPU_MAIN_RAM, p, (uint32_t)count, s->elemsize);
}
