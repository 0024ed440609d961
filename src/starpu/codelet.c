/* hlb_starpu_run_codelet: an executor codelet (include/hlb/exec.h) run by StarPU's workers.
 * Its in and out arrays become vectors of items (one element = one item's bytes) cut into
 * blocks, its shared buffers vectors of bytes given whole to every task; each task calls the
 * codelet's cpu kernel, or launches its OpenCL kernel, with the block's hlb_exec_call, as
 * hlb's executor would. */
/* OpenCL 1.2, the version hlb's OpenCL backend targets (src/exec/backends/opencl.c). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/backend.h"
#include "internal.h"

/* Work-group size of every launch, as hlb's OpenCL backend uses (or less when the kernel
 * allows less on that device). */
#define BRIDGE_LOCAL 64u

typedef struct bridge {
  const hlb_codelet *hc;
  unsigned has_in, has_out;
  struct starpu_opencl_program prog;
  int prog_loaded;
} bridge;

static void fail_block(const bridge *br, int rc, size_t begin, size_t count) {
  hlb__sp_block *k = hlb__sp_current();
  if (!k) return;
  k->failed = rc;
  snprintf(k->failure, sizeof k->failure, "codelet '%s' on items [%zu, +%zu): %s", br->hc->name,
           begin, count, hlb_last_error());
}

static void bridge_cpu(void *buffers[], void *arg) {
  const bridge *br = arg;
  hlb_exec_call c = {.user = br->hc->user, .threads = 1};
  hlb_starpu_current_block(&c.begin, &c.count);
  unsigned k = 0;
  if (br->has_in) c.in = (const void *)STARPU_VECTOR_GET_PTR(buffers[k++]);
  if (br->has_out) c.out = (void *)STARPU_VECTOR_GET_PTR(buffers[k++]);
  for (unsigned i = 0; i < br->hc->n_shared; i++)
    c.shared[i] = (const void *)STARPU_VECTOR_GET_PTR(buffers[k++]);
  int rc = br->hc->cpu(&c);
  if (rc) fail_block(br, rc, c.begin, c.count);
}

/* The buffer's cl_mem; StarPU gives a block its own allocation on a device, so its offset is
 * 0 and hlb's kernels, which take no offset, read it from the start. */
static int dev_mem(void *buf, cl_mem *out) {
  *out = (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buf);
  return STARPU_VECTOR_GET_OFFSET(buf) == 0 ? 0 : -1;
}

static cl_int set_args(cl_kernel kern, void *buffers[], const bridge *br, cl_ulong begin,
                       cl_ulong count) {
  cl_mem m[2 + HLB_EXEC_MAX_SHARED] = {0};
  unsigned k = 0;
  int off = 0;
  if (br->has_in) off |= dev_mem(buffers[k++], &m[0]);
  if (br->has_out) off |= dev_mem(buffers[k++], &m[1]);
  for (unsigned i = 0; i < br->hc->n_shared; i++)
    off |= dev_mem(buffers[k++], &m[2 + i]);
  if (off) return CL_INVALID_MEM_OBJECT;
  cl_int err = CL_SUCCESS;
  for (unsigned i = 0; i < 2 + HLB_EXEC_MAX_SHARED; i++) {
    unsigned idx = i < 2 ? i : i + 2; /* in, out, begin, count, s0..s3 */
    /* A NULL value passes a NULL pointer (clSetKernelArg), as the executor does. */
    err |= clSetKernelArg(kern, idx, sizeof(cl_mem), m[i] ? &m[i] : NULL);
  }
  err |= clSetKernelArg(kern, 2, sizeof begin, &begin);
  err |= clSetKernelArg(kern, 3, sizeof count, &count);
  return err;
}

static cl_int launch(cl_kernel kern, cl_command_queue q, int devid, size_t work) {
  cl_device_id dev;
  starpu_opencl_get_device(devid, &dev);
  size_t wg = 0, local = BRIDGE_LOCAL;
  clGetKernelWorkGroupInfo(kern, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  if (wg && wg < local) local = wg;
  size_t global = (work + local - 1) / local * local; /* kernels return past the end */
  cl_int err = clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, &local, 0, NULL, NULL);
  return err == CL_SUCCESS ? clFinish(q) : err;
}

static void bridge_opencl(void *buffers[], void *arg) {
  bridge *br = arg;
  size_t begin = 0, count = 0;
  hlb_starpu_current_block(&begin, &count);
  int devid = starpu_worker_get_devid(starpu_worker_get_id());
  cl_kernel kern;
  cl_command_queue q;
  cl_int err = starpu_opencl_load_kernel(&kern, &q, &br->prog, br->hc->opencl_kernel, devid);
  if (err != CL_SUCCESS) {
    fail_block(br,
               hlb__error(HLB_EDEVICE, "OpenCL device %d: kernel '%s' not found (%d)", devid,
                          br->hc->opencl_kernel, (int)err),
               begin, count);
    return;
  }
  size_t per = br->hc->opencl_work_per_item ? br->hc->opencl_work_per_item : 1;
  err = set_args(kern, buffers, br, begin, count);
  if (err == CL_SUCCESS) err = launch(kern, q, devid, count * per);
  starpu_opencl_release_kernel(kern);
  if (err != CL_SUCCESS)
    fail_block(br,
               hlb__error(HLB_EDEVICE, "OpenCL device %d: kernel '%s' failed (%d)", devid,
                          br->hc->opencl_kernel, (int)err),
               begin, count);
}

/* StarPU keeps every perfmodel it has seen until starpu_shutdown (and saves it then), so the
 * models of the codelets live as long as the process: one per codelet name. */
#define BRIDGE_MODELS 32
static struct starpu_perfmodel models[BRIDGE_MODELS];
static char model_symbols[BRIDGE_MODELS][64];
static pthread_mutex_t models_mu = PTHREAD_MUTEX_INITIALIZER;

static struct starpu_perfmodel *model_for(const char *name) {
  char sym[64];
  snprintf(sym, sizeof sym, "hlb_%s", name ? name : "codelet");
  struct starpu_perfmodel *m = NULL;
  pthread_mutex_lock(&models_mu);
  for (unsigned i = 0; i < BRIDGE_MODELS && !m; i++) {
    if (!model_symbols[i][0]) {
      memcpy(model_symbols[i], sym, sizeof sym);
      models[i].type = STARPU_HISTORY_BASED;
      models[i].symbol = model_symbols[i];
    }
    if (!strcmp(model_symbols[i], sym)) m = &models[i];
  }
  pthread_mutex_unlock(&models_mu);
  return m;
}

/* The StarPU codelet: in (R), out (W), shared (R), in that order, for the kernels it has. */
static void make_codelet(const bridge *br, const hlb_starpu_options *o, struct starpu_codelet *cl) {
  starpu_codelet_init(cl);
  cl->name = br->hc->name;
  if (br->hc->cpu) cl->cpu_funcs[0] = bridge_cpu;
  if (br->prog_loaded) cl->opencl_funcs[0] = bridge_opencl;
  unsigned k = 0;
  if (br->has_in) cl->modes[k++] = STARPU_R;
  if (br->has_out) cl->modes[k++] = STARPU_W;
  for (unsigned i = 0; i < br->hc->n_shared; i++)
    cl->modes[k++] = STARPU_R;
  cl->nbuffers = (int)k;
  /* StarPU's model-driven schedulers (dmda) need a performance model; hlb fits its own. */
  if (o->scheduler_places) cl->model = model_for(br->hc->name);
}

static int any_opencl_worker(void) {
  return starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER) > 0;
}

static int check_codelet(const hlb_codelet *hc, size_t n_items) {
  int rc = hlb__codelet_check(hc, n_items);
  if (rc) return rc;
  if (hc->pack || hc->unpack)
    return hlb__error(HLB_EUNSUPPORTED,
                      "hlb_starpu_run_codelet: codelet '%s' packs its input or unpacks its "
                      "output; StarPU blocks are cut from the in and out arrays",
                      hc->name);
  if (!hc->in_bytes_per_item && !hc->out_bytes_per_item)
    return hlb__error(HLB_EUNSUPPORTED,
                      "hlb_starpu_run_codelet: codelet '%s' has no per-item input or output to "
                      "cut into blocks",
                      hc->name);
  return 0;
}

static int register_all(const hlb_codelet *hc, size_t n, starpu_data_handle_t *split,
                        unsigned *n_split, starpu_data_handle_t *whole) {
  *n_split = 0;
  if (hc->in_bytes_per_item)
    starpu_vector_data_register(&split[(*n_split)++], STARPU_MAIN_RAM, (uintptr_t)hc->in,
                                (uint32_t)n, hc->in_bytes_per_item);
  if (hc->out_bytes_per_item)
    starpu_vector_data_register(&split[(*n_split)++], STARPU_MAIN_RAM, (uintptr_t)hc->out,
                                (uint32_t)n, hc->out_bytes_per_item);
  for (unsigned i = 0; i < hc->n_shared; i++)
    starpu_vector_data_register(&whole[i], STARPU_MAIN_RAM, (uintptr_t)hc->shared[i].host,
                                (uint32_t)hc->shared[i].bytes, 1);
  return 0;
}

static int load_program(bridge *br) {
  if (!br->hc->opencl_source || !br->hc->opencl_kernel || !any_opencl_worker()) return 0;
  int err = starpu_opencl_load_opencl_from_string(br->hc->opencl_source, &br->prog, "");
  if (err)
    return hlb__error(HLB_EDEVICE,
                      "hlb_starpu_run_codelet: building '%s''s OpenCL source for "
                      "StarPU's OpenCL devices failed (%d)",
                      br->hc->name, err);
  br->prog_loaded = 1;
  return 0;
}

struct hlb_starpu_passes {
  bridge br;
  hlb_starpu_options o;
  struct starpu_codelet cl;
  size_t n_items;
  starpu_data_handle_t split[2], whole[HLB_EXEC_MAX_SHARED];
  unsigned n_split;
  hlb_starpu_memory *own; /* the passes' memory when opt gave none (hlb places) */
};

void hlb_starpu_passes_close(hlb_starpu_passes *p) {
  if (!p) return;
  for (unsigned i = 0; i < p->n_split; i++)
    starpu_data_unregister(p->split[i]);
  /* The host owns the shared buffers' contents: no copy comes back from a device. */
  for (unsigned i = 0; i < p->br.hc->n_shared; i++)
    starpu_data_unregister_no_coherency(p->whole[i]);
  if (p->br.prog_loaded) starpu_opencl_unload_opencl(&p->br.prog);
  hlb_starpu_memory_destroy(p->own);
  free(p);
}

int hlb_starpu_passes_open(const hlb_codelet *hc, size_t n_items, const hlb_starpu_options *opt,
                           hlb_starpu_passes **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_starpu_passes_open: out must not be NULL");
  *out = NULL;
  int rc = check_codelet(hc, n_items);
  if (rc) return rc;
  if (n_items > UINT32_MAX)
    return hlb__error(HLB_EINVAL,
                      "hlb_starpu_run_codelet: %zu items; StarPU vectors hold at most "
                      "2^32-1",
                      n_items);
  hlb_starpu_passes *p = calloc(1, sizeof *p);
  if (!p) return hlb__error(HLB_ENOMEM, "hlb_starpu_passes_open: out of memory");
  if (opt)
    p->o = *opt;
  else
    hlb_starpu_options_default(&p->o);
  if (hc->items_vary) p->o.items_vary = 1; /* the codelet says so for every runtime */
  p->n_items = n_items;
  p->br = (bridge){
      .hc = hc, .has_in = hc->in_bytes_per_item > 0, .has_out = hc->out_bytes_per_item > 0};
  if ((rc = load_program(&p->br))) {
    free(p);
    return rc;
  }
  if (!p->o.memory && !p->o.scheduler_places) {
    if ((rc = hlb_starpu_memory_create(&p->own))) {
      hlb_starpu_passes_close(p);
      return rc;
    }
    p->o.memory = p->own;
  }
  p->o.cl_arg = &p->br;
  make_codelet(&p->br, &p->o, &p->cl);
  register_all(hc, n_items, p->split, &p->n_split, p->whole);
  *out = p;
  return 0;
}

int hlb_starpu_passes_run(hlb_starpu_passes *p, unsigned changed, hlb_starpu_stats *stats) {
  if (!p) return hlb__error(HLB_EINVAL, "hlb_starpu_passes_run: passes must not be NULL");
  /* The host wrote these in main memory: acquiring for writing there makes main memory's
   * copy the only valid one, so the next task on a device fetches it again. */
  for (unsigned i = 0; i < p->br.hc->n_shared; i++) {
    if (!(changed & (1u << i))) continue;
    int err = starpu_data_acquire(p->whole[i], STARPU_W);
    if (err)
      return hlb__error(HLB_EDEVICE,
                        "hlb_starpu_passes_run: codelet '%s': acquiring shared buffer %u to mark "
                        "it changed failed (%d)",
                        p->br.hc->name, i, err);
    starpu_data_release(p->whole[i]);
  }
  return hlb_starpu_run_handles(&p->cl, p->split, p->n_split, p->whole, p->br.hc->n_shared, &p->o,
                                stats);
}

int hlb_starpu_run_codelet(const hlb_codelet *hc, size_t n_items, const hlb_starpu_options *opt,
                           hlb_starpu_stats *stats) {
  hlb_starpu_options o;
  if (opt)
    o = *opt;
  else
    hlb_starpu_options_default(&o);
  hlb_starpu_passes *p = NULL;
  int rc = hlb_starpu_passes_open(hc, n_items, &o, &p);
  if (rc) return rc;
  /* A single run: without the caller's memory, what it learns would serve nobody. */
  if (!o.memory) p->o.memory = NULL;
  rc = hlb_starpu_passes_run(p, 0, stats);
  hlb_starpu_passes_close(p);
  return rc;
}
