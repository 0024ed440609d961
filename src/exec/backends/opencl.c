/* The opencl backend: any OpenCL device, numbered across all platforms in platform order.
 * PoCL's CPU device runs in CI, so a second device kind is exercised without a GPU.
 * A codelet's program and kernel are built once (build) and kept by the caller, the session,
 * for as long as it lives; each block gets device buffers, a blocking write, the kernel
 * (waited with clFinish) and a blocking read, timed by the core. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/backend.h"
#include "exec/backends/opencl_cache.h"

#define CL_MAX_DEVICES 16

/* Every device of every platform, in order; 0 when there is no ICD or platform. */
static unsigned cl_list(cl_device_id *out, unsigned cap) {
  cl_platform_id plats[8];
  cl_uint np = 0;
  if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS) return 0;
  unsigned n = 0;
  for (cl_uint p = 0; p < np && n < cap; p++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, cap - n, out + n, &nd) == CL_SUCCESS) n += nd;
  }
  return n;
}

static unsigned cl_devices(void) {
  cl_device_id ids[CL_MAX_DEVICES];
  return cl_list(ids, CL_MAX_DEVICES);
}

/* A built kernel: what build() gives the session to keep. */
typedef struct cl_kern {
  cl_program prog;
  cl_kernel kern;
  size_t local; /* work-group size of every launch but small ones (launch_local) */
  int single;   /* small launches take work-groups of one work item (launch_local) */
} cl_kern;

typedef struct cl_dev {
  cl_device_id id;
  cl_device_id sub; /* the sub-device made by fission(), released at close; or NULL */
  cl_context ctx;
  cl_command_queue q;
  /* prepare()/run(), one codelet at a time: its kernel, the source text and kernel name it
   * was built from (copies), and its shared buffers. */
  cl_kern *one;
  char *one_src, *one_name;
  cl_mem shared[HLB_EXEC_MAX_SHARED];
  char name[32];
  unsigned cus; /* compute units of a CPU-type device, each a thread of the host; 0 for others */
} cl_dev;

/* Work-group size of every launch, when the kernel allows it. Fixed rather than left to the
 * runtime: PoCL compiles a kernel per work-group size, and a size that changed with each
 * block's size would put a compilation into the timed blocks. */
#define HLB_OPENCL_LOCAL 64

/* Boiński & Czarnul, sec. 4.3 ("device fission"): a CPU-type OpenCL device (PoCL) runs on the same
 * cores as the cpu PU. With pu->cores > 0 it is narrowed to a sub-device of that many
 * compute units, so the two PUs do not fight over cores; pu->cores ends as the compute
 * units used (0 for a non-CPU device). If the platform cannot partition, the whole device
 * is used. */
static cl_device_id fission(cl_device_id id, hlb_exec_pu *pu, cl_device_id *sub) {
  cl_device_type type = 0;
  cl_uint cus = 0;
  clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
  if (!(type & CL_DEVICE_TYPE_CPU)) {
    pu->cores = 0;
    return id;
  }
  if (pu->cores == 0 || pu->cores >= cus) {
    pu->cores = cus;
    return id;
  }
  cl_device_partition_property props[] = {CL_DEVICE_PARTITION_BY_COUNTS,
                                          (cl_device_partition_property)pu->cores,
                                          CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
  cl_uint got = 0;
  if (clCreateSubDevices(id, props, 1, sub, &got) == CL_SUCCESS && got == 1) return *sub;
  *sub = NULL;
  pu->cores = cus;
  return id;
}

static int cl_open(hlb_exec_pu *pu, void **out) {
  cl_device_id ids[CL_MAX_DEVICES];
  unsigned n = cl_list(ids, CL_MAX_DEVICES);
  if (pu->device >= n)
    return hlb__error(HLB_ENOTFOUND, "pu '%s': no OpenCL device %u (this machine has %u)", pu->name,
                      pu->device, n);
  cl_dev *d = calloc(1, sizeof *d);
  if (!d) return hlb__error(HLB_ENOMEM, "pu '%s': out of memory", pu->name);
  d->id = fission(ids[pu->device], pu, &d->sub);
  d->cus = pu->cores;
  snprintf(d->name, sizeof d->name, "%s", pu->name);
  cl_int err;
  d->ctx = clCreateContext(NULL, 1, &d->id, NULL, NULL, &err);
  if (err == CL_SUCCESS) d->q = clCreateCommandQueue(d->ctx, d->id, 0, &err);
  if (err != CL_SUCCESS) {
    if (d->ctx) clReleaseContext(d->ctx);
    if (d->sub) clReleaseDevice(d->sub);
    free(d);
    return hlb__error(HLB_EDEVICE, "pu '%s': cannot open OpenCL device %u (error %d)", pu->name,
                      pu->device, (int)err);
  }
  char name[80] = "";
  clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
  if (pu->cores)
    snprintf(pu->device_name, sizeof pu->device_name, "%s, %u CUs%s", name, pu->cores,
             d->sub ? " (fission)" : "");
  else
    snprintf(pu->device_name, sizeof pu->device_name, "%s", name);
  *out = d;
  return 0;
}

static void cl_unbuild(void *dev, void *kernel) {
  (void)dev;
  cl_kern *k = kernel;
  if (!k) return;
  if (k->kern) clReleaseKernel(k->kern);
  if (k->prog) clReleaseProgram(k->prog);
  free(k);
}

static void drop_one(cl_dev *d) {
  cl_unbuild(d, d->one);
  free(d->one_src);
  free(d->one_name);
  d->one = NULL;
  d->one_src = d->one_name = NULL;
}

/* prepare()'s shared buffers are dropped after each run; the kernel stays for the next. */
static void cl_unprepare(void *dev) {
  cl_dev *d = dev;
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++) {
    if (d->shared[i]) clReleaseMemObject(d->shared[i]);
    d->shared[i] = NULL;
  }
}

static void cl_close(void *dev) {
  cl_dev *d = dev;
  cl_unprepare(d);
  drop_one(d);
  clReleaseCommandQueue(d->q);
  clReleaseContext(d->ctx);
  if (d->sub) clReleaseDevice(d->sub);
  free(d);
}

static int set_args(cl_kern *k, const hlb_exec_call *call);

/* The work-group size of a launch of `items` work items. A CPU-type device runs each
 * work-group on one of its threads, so a launch of fewer than two groups of k->local per
 * compute unit leaves threads idle: on PoCL with two compute units a block of under 64 rows
 * ran on one thread (mandelbrot at 4096, greedy's 27-row blocks: 2.4 s for the image against
 * 1.3 s in groups of one row; docs/benchmarks.md, "PoCL's threads: small blocks, asymmetric
 * blocks"). Such launches take groups of one work item, a size the warm-up compiled too; the others
 * keep k->local, whose groups cost less to schedule (blackscholes' options in groups of one: 0.55
 * -> 0.64 s). Not for a device of one compute unit, nor a GPU (its groups are not threads),
 * nor a kernel that requires its own group size. */
static size_t launch_local(const cl_dev *d, const cl_kern *k, size_t items) {
  return k->single && items < 2 * (size_t)d->cus * k->local ? 1 : k->local;
}

static cl_int launch(cl_dev *d, cl_kern *k, size_t global, size_t local) {
  return clEnqueueNDRangeKernel(d->q, k->kern, 1, NULL, &global, &local, 0, NULL, NULL);
}

/* Launch the kernel once on an empty block (count 0: every work item returns at once), in
 * each work-group size launch_local may use, so that the device's lazy compilation (PoCL
 * compiles a kernel per group size) happens in setup, not in the first timed blocks. */
static int cl_warm_up(cl_dev *d, cl_kern *k, const hlb_codelet *cl,
                      const void *shared[HLB_EXEC_MAX_SHARED]) {
  size_t wg = 0, required[3] = {0, 0, 0};
  clGetKernelWorkGroupInfo(k->kern, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  clGetKernelWorkGroupInfo(k->kern, d->id, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof required,
                           required, NULL);
  k->local = wg && wg < HLB_OPENCL_LOCAL ? wg : HLB_OPENCL_LOCAL;
  k->single = d->cus >= 2 && k->local > 1 && required[0] == 0;
  hlb_exec_call call = {0};
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    call.shared[i] = shared[i];
  cl_int err = set_args(k, &call) ? CL_INVALID_KERNEL_ARGS : CL_SUCCESS;
  if (err == CL_SUCCESS) err = launch(d, k, k->local, k->local);
  if (err == CL_SUCCESS && k->single) err = launch(d, k, 1, 1);
  if (err == CL_SUCCESS) err = clFinish(d->q);
  if (err != CL_SUCCESS)
    return hlb__error(HLB_EDEVICE, "pu '%s': kernel '%s' failed its empty warm-up launch (%d)",
                      d->name, cl->opencl_kernel, (int)err);
  return 0;
}

/* Program, kernel, work-group size and warm-up launch of the codelet on this device. */
static int cl_build(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED],
                    void **out) {
  cl_dev *d = dev;
  *out = NULL;
  cl_kern *k = calloc(1, sizeof *k);
  if (!k) return hlb__error(HLB_ENOMEM, "pu '%s': out of memory", d->name);
  int rc = 0;
  /* From a binary kept by an earlier build, in this process or an earlier run, when there is
   * one (opencl_cache.h): 1 ms against PoCL's 27-32 ms from source. */
  cl_int err = hlb__cl_program(d->ctx, d->id, cl->opencl_source, "", &k->prog);
  if (err != CL_SUCCESS && !k->prog) {
    rc = hlb__error(HLB_EDEVICE, "pu '%s': codelet '%s': clCreateProgramWithSource: %d", d->name,
                    cl->name, (int)err);
  } else if (err != CL_SUCCESS) {
    char log[2048] = "";
    clGetProgramBuildInfo(k->prog, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    rc = hlb__error(HLB_EDEVICE, "pu '%s': codelet '%s': OpenCL build failed: %.1500s", d->name,
                    cl->name, log);
  }
  if (rc == 0) {
    k->kern = clCreateKernel(k->prog, cl->opencl_kernel, &err);
    if (err != CL_SUCCESS) {
      k->kern = NULL;
      rc = hlb__error(HLB_EDEVICE, "pu '%s': codelet '%s': no kernel '%s' (error %d)", d->name,
                      cl->name, cl->opencl_kernel ? cl->opencl_kernel : "(null)", (int)err);
    }
  }
  if (rc == 0) rc = cl_warm_up(d, k, cl, shared);
  if (rc) {
    cl_unbuild(d, k);
    return rc;
  }
  *out = k;
  return 0;
}

static int cl_launch(void *dev, void *kernel, const hlb_codelet *cl, hlb_exec_call *call) {
  cl_dev *d = dev;
  cl_kern *k = kernel;
  if (!k)
    return hlb__error(HLB_ESTATE, "pu '%s': kernel '%s' launched before it was built", d->name,
                      cl->opencl_kernel);
  if (set_args(k, call))
    return hlb__error(HLB_EDEVICE, "pu '%s': kernel '%s': setting arguments failed", d->name,
                      cl->opencl_kernel);
  size_t per = cl->opencl_work_per_item ? cl->opencl_work_per_item : 1;
  /* Rounded up to whole work groups: kernels return for ids past count * per. */
  size_t local = launch_local(d, k, call->count * per);
  size_t global = (call->count * per + local - 1) / local * local;
  call->queue = d->q;
  cl_int err = launch(d, k, global, local);
  if (err == CL_SUCCESS) err = clFinish(d->q);
  if (err != CL_SUCCESS)
    return hlb__error(HLB_EDEVICE, "pu '%s': kernel '%s' on items [%zu, +%zu) failed (error %d)",
                      d->name, cl->opencl_kernel, call->begin, call->count, (int)err);
  return 0;
}

/* One codelet at a time: its kernel is kept while the same source text and kernel name come
 * back (compared by content: a source changed in place is built again). */
static int cl_prepare(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED]) {
  cl_dev *d = dev;
  int rc = 0;
  for (unsigned i = 0; rc == 0 && i < HLB_EXEC_MAX_SHARED; i++) {
    shared[i] = NULL;
    if (i >= cl->n_shared || cl->shared[i].bytes == 0) continue;
    cl_int err;
    d->shared[i] = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  cl->shared[i].bytes, (void *)cl->shared[i].host, &err);
    if (err != CL_SUCCESS) {
      d->shared[i] = NULL;
      rc = hlb__error(HLB_EDEVICE, "pu '%s': shared buffer %u (%zu bytes): error %d", d->name, i,
                      cl->shared[i].bytes, (int)err);
    }
    shared[i] = d->shared[i];
  }
  int same = d->one && cl->opencl_source && cl->opencl_kernel &&
             !strcmp(d->one_src, cl->opencl_source) && !strcmp(d->one_name, cl->opencl_kernel);
  if (rc == 0 && !same) {
    drop_one(d);
    void *k = NULL;
    rc = cl_build(d, cl, shared, &k);
    if (rc == 0) {
      d->one = k;
      d->one_src = strdup(cl->opencl_source);
      d->one_name = strdup(cl->opencl_kernel);
      if (!d->one_src || !d->one_name) {
        drop_one(d);
        rc = hlb__error(HLB_ENOMEM, "pu '%s': out of memory", d->name);
      }
    }
  }
  if (rc == 0 && clFinish(d->q) != CL_SUCCESS)
    rc = hlb__error(HLB_EDEVICE, "pu '%s': clFinish failed after setup", d->name);
  if (rc != 0) cl_unprepare(d);
  return rc;
}

static int cl_run(void *dev, const hlb_codelet *cl, hlb_exec_call *call) {
  return cl_launch(dev, ((cl_dev *)dev)->one, cl, call);
}

static int cl_alloc(void *dev, size_t bytes, void **buf) {
  cl_dev *d = dev;
  *buf = NULL;
  if (bytes == 0) return 0;
  cl_int err;
  cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err != CL_SUCCESS)
    return hlb__error(HLB_EDEVICE, "pu '%s': cannot allocate %zu bytes (error %d)", d->name, bytes,
                      (int)err);
  *buf = m;
  return 0;
}

static void cl_release(void *dev, void *buf) {
  (void)dev;
  if (buf) clReleaseMemObject((cl_mem)buf);
}

static int cl_to_device(void *dev, void *dst, const void *src, size_t bytes) {
  cl_dev *d = dev;
  if (bytes == 0) return 0;
  cl_int err = clEnqueueWriteBuffer(d->q, (cl_mem)dst, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
  return err == CL_SUCCESS
             ? 0
             : hlb__error(HLB_EDEVICE, "pu '%s': write of %zu bytes failed (error %d)", d->name,
                          bytes, (int)err);
}

static int cl_to_host(void *dev, void *dst, const void *src, size_t bytes) {
  cl_dev *d = dev;
  if (bytes == 0) return 0;
  cl_int err =
      clEnqueueReadBuffer(d->q, (cl_mem)(void *)src, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
  return err == CL_SUCCESS ? 0
                           : hlb__error(HLB_EDEVICE, "pu '%s': read of %zu bytes failed (error %d)",
                                        d->name, bytes, (int)err);
}

/* Shared buffers below this size are made anew each run with CL_MEM_COPY_HOST_PTR, larger
 * ones written into the kept buffer. Measured on PoCL (docs/benchmarks.md, "The executor as a
 * session"): a blocking write goes through the queue to PoCL's worker thread, 25-70 us even
 * for 272 bytes and milliseconds on a loaded machine, while creating a buffer from host memory
 * copies in the calling thread (0.8 us at 272 bytes, 24 us at 1 MiB); at 32 MiB the fresh
 * allocation's page faults make the creation 4x the write. */
#define HLB_OPENCL_UPLOAD_KEEP (1u << 20)

static int cl_upload(void *dev, void **buf, size_t *cap, const void *host, size_t bytes) {
  cl_dev *d = dev;
  cl_int err;
  if (bytes >= HLB_OPENCL_UPLOAD_KEEP && *buf && *cap >= bytes) {
    err = clEnqueueWriteBuffer(d->q, (cl_mem)*buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  } else {
    if (*buf) clReleaseMemObject((cl_mem)*buf);
    *buf = NULL;
    *cap = 0;
    cl_mem m =
        clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)host, &err);
    if (err == CL_SUCCESS) {
      *buf = m;
      *cap = bytes;
    }
  }
  return err == CL_SUCCESS ? 0
                           : hlb__error(HLB_EDEVICE, "pu '%s': copy of %zu bytes failed (error %d)",
                                        d->name, bytes, (int)err);
}

static int set_args(cl_kern *k, const hlb_exec_call *call) {
  cl_ulong begin = call->begin, count = call->count;
  cl_mem args[2 + HLB_EXEC_MAX_SHARED] = {(cl_mem)(void *)call->in, (cl_mem)call->out};
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    args[2 + i] = (cl_mem)(void *)call->shared[i];
  cl_int err = CL_SUCCESS;
  /* A NULL cl_mem value passes a NULL pointer to the kernel (clSetKernelArg). */
  err |= clSetKernelArg(k->kern, 0, sizeof(cl_mem), args[0] ? &args[0] : NULL);
  err |= clSetKernelArg(k->kern, 1, sizeof(cl_mem), args[1] ? &args[1] : NULL);
  err |= clSetKernelArg(k->kern, 2, sizeof begin, &begin);
  err |= clSetKernelArg(k->kern, 3, sizeof count, &count);
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    err |= clSetKernelArg(k->kern, 4 + i, sizeof(cl_mem), args[2 + i] ? &args[2 + i] : NULL);
  return err == CL_SUCCESS ? 0 : -1;
}

static int cl_has_kernel(const hlb_codelet *cl) {
  return cl->opencl_source != NULL && cl->opencl_kernel != NULL;
}

const hlb__backend_ops hlb__backend_opencl = {
    .kind = HLB_BACKEND_OPENCL,
    .host_memory = 0,
    .devices = cl_devices,
    .open = cl_open,
    .close = cl_close,
    .build = cl_build,
    .unbuild = cl_unbuild,
    .launch = cl_launch,
    .upload = cl_upload,
    .prepare = cl_prepare,
    .unprepare = cl_unprepare,
    .alloc = cl_alloc,
    .release = cl_release,
    .to_device = cl_to_device,
    .to_host = cl_to_host,
    .run = cl_run,
    .has_kernel = cl_has_kernel,
};
