/* The cpu backend: a PU is a group of cores of this machine. Memory is the host's, so a
 * block's input and output are used in place; the kernel parallelises over the group's
 * cores itself (OpenMP num_threads = call->threads). Cores are counted with hwloc. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <hwloc.h>

#include "common/error_internal.h"
#include "exec/backend.h"

unsigned hlb__cpu_cores(void) {
  hwloc_topology_t topo;
  unsigned n = 0;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0) {
      int c = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
      /* Count hardware threads when the machine reports no cores (some VMs). */
      if (c <= 0) c = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
      if (c > 0) n = (unsigned)c;
    }
    hwloc_topology_destroy(topo);
  }
  if (n == 0) {
    long s = sysconf(_SC_NPROCESSORS_ONLN);
    n = s > 0 ? (unsigned)s : 1u;
  }
  return n;
}

typedef struct cpu_dev {
  unsigned cores;
  const void *shared[HLB_EXEC_MAX_SHARED];
} cpu_dev;

static unsigned cpu_devices(void) {
  return 1;
}

static int cpu_open(hlb_exec_pu *pu, void **dev) {
  if (pu->device != 0)
    return hlb__error(HLB_ENOTFOUND, "pu '%s': the cpu backend has one device (0), got %u",
                      pu->name, pu->device);
  unsigned total = hlb__cpu_cores();
  if (pu->cores == 0) pu->cores = total;
  if (pu->cores > total)
    return hlb__error(HLB_EINVAL, "pu '%s': %u cores asked, this machine has %u", pu->name,
                      pu->cores, total);
  cpu_dev *d = calloc(1, sizeof *d);
  if (!d) return hlb__error(HLB_ENOMEM, "pu '%s': out of memory", pu->name);
  d->cores = pu->cores;
  snprintf(pu->device_name, sizeof pu->device_name, "%u of %u cores", pu->cores, total);
  *dev = d;
  return 0;
}

static void cpu_close(void *dev) {
  free(dev);
}

static int cpu_prepare(void *dev, const hlb_codelet *cl, const void *shared[HLB_EXEC_MAX_SHARED]) {
  (void)dev;
  /* Host memory: the shared buffers are used where they are. */
  for (unsigned i = 0; i < HLB_EXEC_MAX_SHARED; i++)
    shared[i] = i < cl->n_shared ? cl->shared[i].host : NULL;
  return 0;
}

static void cpu_unprepare(void *dev) {
  (void)dev;
}

static int cpu_alloc(void *dev, size_t bytes, void **buf) {
  (void)dev;
  *buf = NULL;
  if (bytes == 0) return 0;
  *buf = malloc(bytes);
  return *buf ? 0 : hlb__error(HLB_ENOMEM, "cpu: cannot allocate %zu bytes", bytes);
}

static void cpu_release(void *dev, void *buf) {
  (void)dev;
  free(buf);
}

static int cpu_copy(void *dev, void *dst, const void *src, size_t bytes) {
  (void)dev;
  (void)dst;
  (void)src;
  (void)bytes;
  /* Never called: host_memory tells the core to skip staging copies. */
  return 0;
}

static int cpu_run(void *dev, const hlb_codelet *cl, hlb_exec_call *call) {
  cpu_dev *d = dev;
  /* Atomic: another driver may give this PU a core mid-run (cpu_set_cores). */
  call->threads = __atomic_load_n(&d->cores, __ATOMIC_RELAXED);
  call->queue = NULL;
  call->device = 0;
  return cl->cpu(call);
}

/* Nothing is built for the cpu: the kernel is a function of the program. */
static int cpu_launch(void *dev, void *kernel, const hlb_codelet *cl, hlb_exec_call *call) {
  (void)kernel;
  return cpu_run(dev, cl, call);
}

static void cpu_set_cores(void *dev, unsigned cores) {
  __atomic_store_n(&((cpu_dev *)dev)->cores, cores, __ATOMIC_RELAXED);
}

static int cpu_has_kernel(const hlb_codelet *cl) {
  return cl->cpu != NULL;
}

const hlb__backend_ops hlb__backend_cpu = {
    .kind = HLB_BACKEND_CPU,
    .host_memory = 1,
    .devices = cpu_devices,
    .open = cpu_open,
    .close = cpu_close,
    .launch = cpu_launch,
    .prepare = cpu_prepare,
    .unprepare = cpu_unprepare,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .run = cpu_run,
    .has_kernel = cpu_has_kernel,
    .set_cores = cpu_set_cores,
};
