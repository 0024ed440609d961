/* Describing PUs (discovery, "cpu,opencl:0" lists) and opening them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "exec/exec_internal.h"
#include "exec/models.h"

static void pu_init(hlb_exec_pu *p, hlb_backend kind, unsigned device, unsigned cores) {
  memset(p, 0, sizeof *p);
  p->backend = kind;
  p->device = device;
  p->cores = cores;
  p->throttle = 1.0;
  if (kind == HLB_BACKEND_CPU)
    snprintf(p->name, sizeof p->name, "cpu");
  else
    snprintf(p->name, sizeof p->name, "%s:%u", hlb_backend_name(kind), device);
}

/* Cores left for the cpu PU once each device has its driving core (Boiński & Czarnul, sec. 4.3). */
static unsigned cpu_share(unsigned n_devices) {
  unsigned total = hlb__cpu_cores();
  unsigned kept = n_devices * HLB_EXEC_CORES_PER_DEVICE;
  return total > kept ? total - kept : 1u;
}

/* A cpu entry without a core count shares the cores with the devices listed; a CPU-type
 * OpenCL device then gets the cores the cpu PU leaves, as a sub-device (Boiński & Czarnul, sec.
 * 4.3 "device fission"; applied by the opencl backend, ignored by GPUs). */
static void fix_cpu_cores(hlb_exec_pu *pus, unsigned n) {
  unsigned devices = 0, cpu_cores = 0;
  for (unsigned i = 0; i < n; i++)
    devices += pus[i].backend != HLB_BACKEND_CPU;
  for (unsigned i = 0; i < n; i++)
    if (pus[i].backend == HLB_BACKEND_CPU) {
      if (pus[i].cores == 0) pus[i].cores = cpu_share(devices);
      cpu_cores += pus[i].cores;
    }
  /* The other devices' driving cores are not the OpenCL device's either: on 16 cores with
   * PoCL and a GPU, cpu 14, PoCL 1, the GPU's driver 1 (PoCL had 2, and the cpu PU that got
   * every core back ran 17 threads on 16 cores). */
  unsigned total = hlb__cpu_cores();
  unsigned others = devices > 0 ? (devices - 1) * HLB_EXEC_CORES_PER_DEVICE : 0;
  for (unsigned i = 0; i < n; i++)
    if (pus[i].backend == HLB_BACKEND_OPENCL && cpu_cores > 0)
      pus[i].cores = total > cpu_cores + others ? total - cpu_cores - others : 1u;
}

int hlb_exec_discover(hlb_exec_pu *pus, unsigned cap, unsigned *n) {
  if (!pus || !n || cap == 0)
    return hlb__error(HLB_EINVAL, "hlb_exec_discover: need an array and a capacity > 0");
  unsigned ncl = hlb_backend_devices(HLB_BACKEND_OPENCL);
  unsigned ncu = hlb_backend_devices(HLB_BACKEND_CUDA);
  unsigned k = 0;
  pu_init(&pus[k++], HLB_BACKEND_CPU, 0, 0);
  for (unsigned i = 0; i < ncl && k < cap; i++)
    pu_init(&pus[k++], HLB_BACKEND_OPENCL, i, 0);
  for (unsigned i = 0; i < ncu && k < cap; i++)
    pu_init(&pus[k++], HLB_BACKEND_CUDA, i, 0);
  fix_cpu_cores(pus, k);
  *n = k;
  return 0;
}

static int parse_kind(const char *s, size_t len, size_t entry_len, hlb_backend *kind) {
  for (unsigned b = 0; b < HLB_BACKEND_COUNT; b++) {
    const char *name = hlb_backend_name((hlb_backend)b);
    if (strlen(name) == len && !strncmp(s, name, len)) {
      *kind = (hlb_backend)b;
      return 0;
    }
  }
  return hlb__error(HLB_EINVAL, "pu '%.*s': unknown backend '%.*s' (expected cpu, opencl or cuda)",
                    (int)entry_len, s, (int)len, s);
}

/* One entry "kind" or "kind:N" (N = device, or cores for cpu). */
static int parse_one(const char *s, size_t len, hlb_exec_pu *p) {
  const char *colon = memchr(s, ':', len);
  size_t klen = colon ? (size_t)(colon - s) : len;
  hlb_backend kind = HLB_BACKEND_CPU;
  int rc = parse_kind(s, klen, len, &kind);
  if (rc) return rc;
  unsigned long num = 0;
  if (colon) {
    char buf[32];
    size_t nlen = len - klen - 1;
    char *end;
    if (nlen == 0 || nlen >= sizeof buf)
      return hlb__error(HLB_EINVAL, "pu '%.*s': expected a number after ':'", (int)len, s);
    memcpy(buf, colon + 1, nlen);
    buf[nlen] = '\0';
    errno = 0;
    num = strtoul(buf, &end, 10);
    if (*end || errno || buf[0] == '-' || num > 4096)
      return hlb__error(HLB_EINVAL, "pu '%.*s': '%s' is not a device number", (int)len, s, buf);
  }
  if (!hlb_backend_built(kind))
    return hlb__error(HLB_EUNSUPPORTED, "pu '%.*s': this hlb was built without %s", (int)len, s,
                      hlb_backend_name(kind));
  if (kind == HLB_BACKEND_CPU) {
    /* "cpu" alone means every core not kept for a device; "cpu:0" asks for no core at all. */
    if (colon && num == 0)
      return hlb__error(HLB_EINVAL,
                        "pu '%.*s': a cpu PU needs at least 1 core, got 0 (write "
                        "'cpu' for every core)",
                        (int)len, s);
    pu_init(p, kind, 0, (unsigned)num);
    if (num) snprintf(p->name, sizeof p->name, "cpu:%lu", num);
    return 0;
  }
  unsigned have = hlb_backend_devices(kind);
  if (num >= have)
    return hlb__error(HLB_ENOTFOUND, "pu '%.*s': no %s device %lu (this machine has %u)", (int)len,
                      s, hlb_backend_name(kind), num, have);
  pu_init(p, kind, (unsigned)num, 0);
  return 0;
}

int hlb_exec_parse_pus(const char *spec, hlb_exec_pu *pus, unsigned cap, unsigned *n) {
  if (!spec || !pus || !n || cap == 0)
    return hlb__error(HLB_EINVAL, "hlb_exec_parse_pus: need a list, an array and a capacity");
  if (!strcmp(spec, "all")) return hlb_exec_discover(pus, cap, n);
  unsigned k = 0;
  const char *s = spec;
  while (*s) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len == 0) return hlb__error(HLB_EINVAL, "pu list '%s': empty entry", spec);
    if (k == cap) return hlb__error(HLB_EINVAL, "pu list '%s': more than %u PUs", spec, cap);
    int rc = parse_one(s, len, &pus[k]);
    if (rc) return rc;
    for (unsigned j = 0; j < k; j++)
      if (!strcmp(pus[j].name, pus[k].name))
        return hlb__error(HLB_EINVAL, "pu list '%s': '%s' is listed twice", spec, pus[k].name);
    k++;
    s += len + (comma != NULL);
    if (comma && *s == '\0')
      return hlb__error(HLB_EINVAL, "pu list '%s': empty entry at the end", spec);
  }
  if (k == 0) return hlb__error(HLB_EINVAL, "pu list is empty");
  fix_cpu_cores(pus, k);
  *n = k;
  return 0;
}

int hlb_executor_create(const hlb_exec_pu *pus, unsigned n, hlb_executor **out) {
  if (!pus || !out || n == 0)
    return hlb__error(HLB_EINVAL, "hlb_executor_create: need a list of at least 1 PU, got %u", n);
  hlb_executor *ex = calloc(1, sizeof *ex);
  if (ex) {
    ex->pu = calloc(n, sizeof *ex->pu);
    ex->ops = calloc(n, sizeof *ex->ops);
    ex->dev = calloc(n, sizeof *ex->dev);
    ex->rate = calloc(n, sizeof *ex->rate);
    ex->released = calloc(n, sizeof *ex->released);
    ex->release_reason = calloc(n, sizeof *ex->release_reason);
    ex->cores_given = calloc(n, sizeof *ex->cores_given);
    ex->cores_changed_s = calloc(n, sizeof *ex->cores_changed_s);
    ex->takes_cores = calloc(n, sizeof *ex->takes_cores);
    ex->on_trial = calloc(n, sizeof *ex->on_trial);
    ex->release_unstored = calloc(n, sizeof *ex->release_unstored);
    ex->handed_back = calloc(n, sizeof *ex->handed_back);
    ex->kept = calloc(n, sizeof *ex->kept);
    ex->n_kept = calloc(n, sizeof *ex->n_kept);
    ex->stage = calloc(n, sizeof *ex->stage);
    ex->thread = calloc(n, sizeof *ex->thread);
  }
  if (!ex || !ex->pu || !ex->ops || !ex->dev || !ex->rate || !ex->released || !ex->release_reason ||
      !ex->cores_given || !ex->cores_changed_s || !ex->takes_cores || !ex->on_trial ||
      !ex->release_unstored || !ex->handed_back || !ex->kept || !ex->n_kept || !ex->stage ||
      !ex->thread) {
    hlb_executor_destroy(ex);
    return hlb__error(HLB_ENOMEM, "hlb_executor_create: out of memory for %u PUs", n);
  }
  int rc = 0;
  for (unsigned i = 0; i < n && rc == 0; i++) {
    ex->pu[i] = pus[i];
    hlb_exec_pu *p = &ex->pu[i];
    if (!(p->throttle == 0 || (p->throttle >= 1 && p->throttle <= 1e6)))
      rc = hlb__error(HLB_EINVAL, "pu '%s': throttle must be >= 1, got %g", p->name, p->throttle);
    else if (!(ex->ops[i] = hlb__backend_get(p->backend)))
      rc = hlb__error(HLB_EUNSUPPORTED, "pu '%s': backend %s is not in this build", p->name,
                      hlb_backend_name(p->backend));
    else if ((rc = ex->ops[i]->open(p, &ex->dev[i])) == 0)
      ex->n = i + 1;
    if (p->throttle == 0) p->throttle = 1;
  }
  if (rc) {
    hlb_executor_destroy(ex);
    return rc;
  }
  *out = ex;
  return 0;
}

void hlb_executor_destroy(hlb_executor *ex) {
  if (!ex) return;
  /* The driver threads first: they may hold per-thread state of a device's library. */
  for (unsigned i = 0; ex->thread && i < ex->n; i++)
    hlb__pu_thread_stop(&ex->thread[i]);
  free(ex->thread);
  /* The session's kernels and buffers live in the devices: released before they close. */
  hlb__session_free(ex);
  for (unsigned i = 0; i < ex->n; i++)
    if (ex->dev[i]) ex->ops[i]->close(ex->dev[i]); /* NULL: a reopen failed twice */
  free(ex->pu);
  free(ex->ops);
  free(ex->dev);
  free(ex->rate);
  free(ex->released);
  free(ex->release_reason);
  free(ex->cores_given);
  free(ex->cores_changed_s);
  free(ex->takes_cores);
  free(ex->on_trial);
  free(ex->release_unstored);
  free(ex->handed_back);
  hlb__exec_memo_free(ex);
  free(ex);
}

unsigned hlb_executor_pu_count(const hlb_executor *ex) {
  return ex ? ex->n : 0;
}

const hlb_exec_pu *hlb_executor_pu(const hlb_executor *ex, unsigned i) {
  return ex && i < ex->n ? &ex->pu[i] : NULL;
}
