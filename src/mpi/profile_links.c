/* hlb_mpi_profile_links(): measure the two-level model of Boiński & Czarnul on
 * the running job and write it as a cluster file (docs/cluster-format.md):
 *   - manager -> node links: ping-pong between rank 0 and every other rank (sec. 4.3, eq. 4);
 *     rank 0's own node link is a memory copy, the cost of handing itself a block;
 *   - node -> PU links: the backend's host-to-device and device-to-host copies;
 *   - PU time curves: a built-in kernel timed on blocks of several sizes, fitted as
 *     const + linear x (eq. 3's kernel start plus per-packet time).
 * Latency is half the round trip of the empty message (sec. 4.3: "average values for sending
 * empty message"); bandwidth is the least-squares slope of the one-way time over the sized
 * messages, the fit that eq. 4's averaged pairwise slopes approximate. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "exec/backend.h"
#include "hlb/cluster.h"
#include "hlb/mpi.h"

#define PL_TAG 0x4c10
#define PL_MAX_SIZES 24
/* Iterations of the built-in kernel per item: enough that a block's time grows with its
 * size well above the clock's resolution, little enough to profile in a second. */
#define PL_KERNEL_WORK 64
#define PL_KERNEL_BLOCKS 3 /* blocks of kernel_items / 16, / 4, / 1 */

void hlb_mpi_profile_options_default(hlb_mpi_profile_options *o) {
  memset(o, 0, sizeof *o);
  o->max_bytes = (size_t)4 << 20;
  o->n_sizes = 5;
  o->reps = 5;
  o->kernel_items = (size_t)1 << 18;
  o->item_in_bytes = 4;
  o->item_out_bytes = 4;
}

/* What one PU measured, sent to rank 0. */
typedef struct pu_profile {
  char name[64], kind[16], device[96];
  int32_t has_link, ok;
  hlb_link link;
  double c0, c1; /* time = c0 + c1 x */
  char why[200];
} pu_profile;

typedef struct pl {
  MPI_Comm comm;
  int rank, size;
  hlb_mpi_profile_options o;
  double bytes[PL_MAX_SIZES + 1]; /* [0] = the empty message (1 byte) */
  unsigned n;                     /* entries in bytes */
} pl;

static void pl_check(const pl *p, int mrc, const char *what, int peer) {
  if (mrc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mrc, s, &len);
  fprintf(stderr, "hlb profile-links: rank %d: %s (peer rank %d) failed: %s; aborting the job\n",
          p->rank, what, peer, s);
  fflush(stderr);
  MPI_Abort(p->comm, 1);
  abort();
}

/* Every rank learns whether every rank is fine, and the first failing rank's message. */
static int pl_agree(pl *p, int rc) {
  int in[2] = {rc, p->rank}, out[2];
  pl_check(p, MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, p->comm), "MPI_Allreduce", -1);
  if (out[0] >= 0) return 0;
  char text[512] = "";
  if (p->rank == out[1]) snprintf(text, sizeof text, "%s", hlb_last_error());
  pl_check(p, MPI_Bcast(text, (int)sizeof text, MPI_CHAR, out[1], p->comm), "MPI_Bcast", out[1]);
  return p->rank == out[1] ? rc : hlb__error(out[0], "%s", text);
}

static int check_options(const hlb_mpi_profile_options *o) {
  if (o->n_sizes < 2 || o->n_sizes > PL_MAX_SIZES)
    return hlb__error(HLB_EINVAL, "profile-links: sizes must be 2 to %d, got %u", PL_MAX_SIZES,
                      o->n_sizes);
  if (o->max_bytes < ((size_t)1 << o->n_sizes) || o->max_bytes > ((size_t)1 << 30))
    return hlb__error(HLB_EINVAL,
                      "profile-links: max bytes must be 2^sizes (%zu) to 1 GiB, got %zu",
                      (size_t)1 << o->n_sizes, o->max_bytes);
  if (o->reps < 1 || o->reps > 1000)
    return hlb__error(HLB_EINVAL, "profile-links: reps must be 1 to 1000, got %u", o->reps);
  if (o->kernel_items < 16 * PL_KERNEL_BLOCKS || o->kernel_items > ((size_t)1 << 28))
    return hlb__error(HLB_EINVAL, "profile-links: kernel items must be %d to 2^28, got %zu",
                      16 * PL_KERNEL_BLOCKS, o->kernel_items);
  if (!(o->item_in_bytes >= 0) || !(o->item_out_bytes >= 0) || !isfinite(o->item_in_bytes) ||
      !isfinite(o->item_out_bytes))
    return hlb__error(HLB_EINVAL, "profile-links: item bytes must be finite and >= 0, got %g, %g",
                      o->item_in_bytes, o->item_out_bytes);
  return 0;
}

/* The empty message, then max_bytes halved n_sizes - 1 times, smallest first. */
static void message_sizes(pl *p) {
  p->bytes[0] = 1;
  for (unsigned k = 0; k < p->o.n_sizes; k++)
    p->bytes[p->o.n_sizes - k] = (double)(p->o.max_bytes >> k);
  p->n = p->o.n_sizes + 1;
}

/* a from the empty message, b from the least-squares slope of one-way time over size. */
static int fit_link(const double *bytes, const double *rtt, unsigned n, const char *what,
                    hlb_link *out) {
  double mb = 0, mt = 0;
  for (unsigned k = 1; k < n; k++) {
    mb += bytes[k];
    mt += rtt[k] / 2;
  }
  mb /= n - 1;
  mt /= n - 1;
  double sbt = 0, sbb = 0;
  for (unsigned k = 1; k < n; k++) {
    sbt += (bytes[k] - mb) * (rtt[k] / 2 - mt);
    sbb += (bytes[k] - mb) * (bytes[k] - mb);
  }
  double slope = sbb > 0 ? sbt / sbb : 0;
  double one_way_max = rtt[n - 1] / 2;
  out->latency_s = rtt[0] / 2;
  if (slope > 0 && isfinite(slope) && 1 / slope > 0 && isfinite(1 / slope)) {
    out->bandwidth_Bps = 1 / slope;
    return 0;
  }
  /* The times did not grow with the size: on a busy or oversubscribed machine the noise of
   * the fastest round trips can be larger than the bytes' share. The bytes of the largest
   * message crossed in at most its one-way time, so that gives a bandwidth the link has at
   * least (a lower bound, never zero). */
  if (one_way_max > 0 && isfinite(one_way_max)) {
    out->bandwidth_Bps = bytes[n - 1] / one_way_max;
    return 0;
  }
  return hlb__error(HLB_ENUMERIC,
                    "profile-links: %s: no usable round trip (%g s for %g B); use larger "
                    "--max-bytes or more --reps",
                    what, rtt[n - 1] / 2, bytes[n - 1]);
}

/* ---- Manager -> node links ----------------------------------------------------------------- */

/* Rank 0 side of the ping-pong with `peer`; fastest round trip per size. */
static void ping(const pl *p, int peer, char *buf, double *rtt) {
  for (unsigned k = 0; k < p->n; k++) {
    int len = (int)p->bytes[k];
    rtt[k] = INFINITY;
    /* One untimed exchange first: the first message of a pair sets up the connection. */
    for (unsigned r = 0; r <= p->o.reps; r++) {
      double t = hlb__now();
      pl_check(p, MPI_Send(buf, len, MPI_BYTE, peer, PL_TAG, p->comm), "MPI_Send", peer);
      pl_check(p, MPI_Recv(buf, len, MPI_BYTE, peer, PL_TAG, p->comm, MPI_STATUS_IGNORE),
               "MPI_Recv", peer);
      t = hlb__now() - t;
      if (r > 0 && t < rtt[k]) rtt[k] = t;
    }
  }
}

static void pong(const pl *p, char *buf) {
  for (unsigned k = 0; k < p->n; k++)
    for (unsigned r = 0; r <= p->o.reps; r++) {
      int len = (int)p->bytes[k];
      pl_check(p, MPI_Recv(buf, len, MPI_BYTE, 0, PL_TAG, p->comm, MPI_STATUS_IGNORE), "MPI_Recv",
               0);
      pl_check(p, MPI_Send(buf, len, MPI_BYTE, 0, PL_TAG, p->comm), "MPI_Send", 0);
    }
}

/* Rank 0's link to itself: a block handed over in memory, there and back. */
static void self_copy(const pl *p, char *a, char *b, double *rtt) {
  for (unsigned k = 0; k < p->n; k++) {
    size_t len = (size_t)p->bytes[k];
    rtt[k] = INFINITY;
    for (unsigned r = 0; r <= p->o.reps; r++) {
      double t = hlb__now();
      memcpy(b, a, len);
      memcpy(a, b, len);
      t = hlb__now() - t;
      if (r > 0 && t < rtt[k]) rtt[k] = t;
    }
  }
}

/* Collective: rank 0 gets every node's link in links[rank]. One peer at a time, so the
 * measurements do not share the network. */
static int node_links(pl *p, hlb_link *links) {
  char *buf = malloc(p->o.max_bytes), *other = p->rank == 0 ? malloc(p->o.max_bytes) : NULL;
  int rc = buf && (p->rank != 0 || other)
               ? 0
               : hlb__error(HLB_ENOMEM, "profile-links: rank %d: no memory for %zu bytes", p->rank,
                            p->o.max_bytes);
  if ((rc = pl_agree(p, rc))) {
    free(buf);
    free(other);
    return rc;
  }
  memset(buf, 0x5a, p->o.max_bytes);
  double rtt[PL_MAX_SIZES + 1];
  for (int peer = 0; peer < p->size; peer++) {
    if (p->rank == 0 && peer == 0) {
      memset(other, 0, p->o.max_bytes);
      self_copy(p, buf, other, rtt);
    } else if (p->rank == 0) {
      ping(p, peer, buf, rtt);
    } else if (p->rank == peer) {
      pong(p, buf);
    }
    if (p->rank == 0 && !rc) {
      char what[48];
      snprintf(what, sizeof what, "link rank 0 -> rank %d", peer);
      rc = fit_link(p->bytes, rtt, p->n, what, &links[peer]);
    }
  }
  free(buf);
  free(other);
  return rc;
}

/* ---- PUs: device links and the built-in kernel ------------------------------------------- */

static const char kernel_cl[] =
    "kernel void hlb_profile(global const uchar *in, global uchar *out, ulong begin, ulong count,\n"
    "                        global const uchar *s0, global const uchar *s1,\n"
    "                        global const uchar *s2, global const uchar *s3) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= count) return;\n"
    "  float x = ((global const float *)in)[i], v = 0.0f;\n"
    "  for (int k = 0; k < WORK; k++) v = v * 0.5f + x;\n"
    "  ((global float *)out)[i] = v;\n"
    "}\n";

typedef struct cpu_part {
  const hlb_exec_call *c;
  size_t from, to;
} cpu_part;

static void *cpu_part_run(void *arg) {
  const cpu_part *w = arg;
  const float *x = w->c->in;
  float *y = w->c->out;
  for (size_t i = w->from; i < w->to; i++) {
    float v = 0.0f;
    for (int k = 0; k < PL_KERNEL_WORK; k++)
      v = v * 0.5f + x[i];
    y[i] = v;
  }
  return NULL;
}

/* The cpu version over the PU's cores (threads here, so the MPI library needs no OpenMP). */
static int kernel_cpu(const hlb_exec_call *c) {
  enum { MAX_T = 256 };
  unsigned nt = c->threads ? c->threads : 1;
  nt = nt > MAX_T ? MAX_T : nt;
  pthread_t th[MAX_T];
  cpu_part part[MAX_T];
  int started[MAX_T] = {0};
  for (unsigned t = 0; t < nt; t++) {
    part[t] = (cpu_part){c, c->count * t / nt, c->count * (t + 1) / nt};
    started[t] = t > 0 && pthread_create(&th[t], NULL, cpu_part_run, &part[t]) == 0;
    if (t > 0 && !started[t]) cpu_part_run(&part[t]);
  }
  cpu_part_run(&part[0]);
  for (unsigned t = 1; t < nt; t++)
    if (started[t]) pthread_join(th[t], NULL);
  return 0;
}

static const hlb_codelet *builtin_codelet(void) {
  static char src[sizeof kernel_cl + 32];
  static hlb_codelet cl;
  if (!cl.name) {
    snprintf(src, sizeof src, "#define WORK %d\n%s", PL_KERNEL_WORK, kernel_cl);
    cl = (hlb_codelet){.name = "profile-links",
                       .in_bytes_per_item = sizeof(float),
                       .out_bytes_per_item = sizeof(float),
                       .cpu = kernel_cpu,
                       .opencl_source = src,
                       .opencl_kernel = "hlb_profile"};
  }
  return &cl;
}

/* Device buffers of one PU for the profile. */
typedef struct pu_bufs {
  const hlb__backend_ops *ops;
  void *dev, *d_in, *d_out;
  float *h_in, *h_out;
} pu_bufs;

/* Round trips host -> device -> host of each message size. */
static int device_link(const pl *p, pu_bufs *b, const char *name, hlb_link *out) {
  double rtt[PL_MAX_SIZES + 1];
  for (unsigned k = 0; k < p->n; k++) {
    size_t len = (size_t)p->bytes[k];
    rtt[k] = INFINITY;
    for (unsigned r = 0; r <= p->o.reps; r++) {
      double t = hlb__now();
      int rc = b->ops->to_device(b->dev, b->d_in, b->h_in, len);
      if (rc == 0) rc = b->ops->to_host(b->dev, b->h_out, b->d_in, len);
      if (rc) return rc;
      t = hlb__now() - t;
      if (r > 0 && t < rtt[k]) rtt[k] = t;
    }
  }
  char what[64];
  snprintf(what, sizeof what, "rank %d pu '%s' host <-> device", p->rank, name);
  return fit_link(p->bytes, rtt, p->n, what, out);
}

/* Fastest kernel time of a block of `count` items (compute only, data already there). */
static int kernel_time(const pl *p, pu_bufs *b, const void *const *shared, size_t count,
                       double *t_out) {
  const hlb_codelet *cl = builtin_codelet();
  hlb_exec_call call = {.begin = 0, .count = count};
  memcpy((void *)call.shared, shared, sizeof call.shared);
  int host = b->ops->host_memory;
  call.in = host ? (const void *)b->h_in : b->d_in;
  call.out = host ? (void *)b->h_out : b->d_out;
  *t_out = INFINITY;
  for (unsigned r = 0; r <= p->o.reps; r++) {
    double t = hlb__now();
    int rc = b->ops->run(b->dev, cl, &call);
    if (rc) return rc;
    t = hlb__now() - t;
    if (r > 0 && t < *t_out) *t_out = t;
  }
  return 0;
}

/* const + linear x by least squares over three block sizes. */
static int time_curve(const pl *p, pu_bufs *b, const void *const *shared, pu_profile *pp) {
  double xs[PL_KERNEL_BLOCKS], ts[PL_KERNEL_BLOCKS], mx = 0, mt = 0;
  for (unsigned k = 0; k < PL_KERNEL_BLOCKS; k++) {
    xs[k] = (double)(p->o.kernel_items >> (2 * (PL_KERNEL_BLOCKS - 1 - k)));
    int rc = kernel_time(p, b, shared, (size_t)xs[k], &ts[k]);
    if (rc) return rc;
    mx += xs[k] / PL_KERNEL_BLOCKS;
    mt += ts[k] / PL_KERNEL_BLOCKS;
  }
  double sxt = 0, sxx = 0;
  for (unsigned k = 0; k < PL_KERNEL_BLOCKS; k++) {
    sxt += (xs[k] - mx) * (ts[k] - mt);
    sxx += (xs[k] - mx) * (xs[k] - mx);
  }
  pp->c1 = sxt / sxx;
  if (!(pp->c1 > 0))
    return hlb__error(HLB_ENUMERIC,
                      "profile-links: rank %d pu '%s': kernel time does not grow with the block "
                      "(%g s for %g items, %g s for %g); use larger --kernel-items",
                      p->rank, pp->name, ts[0], xs[0], ts[PL_KERNEL_BLOCKS - 1],
                      xs[PL_KERNEL_BLOCKS - 1]);
  /* A negative intercept is noise; the file needs a non-negative curve from x = 1. */
  pp->c0 = fmax(0.0, mt - pp->c1 * mx);
  return 0;
}

static int alloc_bufs(const pl *p, pu_bufs *b) {
  size_t items = p->o.kernel_items;
  size_t need = p->o.max_bytes > items * sizeof(float) ? p->o.max_bytes : items * sizeof(float);
  b->h_in = malloc(need);
  b->h_out = malloc(need);
  if (!b->h_in || !b->h_out)
    return hlb__error(HLB_ENOMEM, "profile-links: rank %d: no memory for %zu bytes", p->rank, need);
  for (size_t i = 0; i < need / sizeof(float); i++)
    b->h_in[i] = (float)(i % 97) * 0.25f;
  if (b->ops->host_memory) return 0;
  int rc = b->ops->alloc(b->dev, need, &b->d_in);
  return rc ? rc : b->ops->alloc(b->dev, need, &b->d_out);
}

static void free_bufs(pu_bufs *b) {
  if (b->ops && b->dev) {
    b->ops->release(b->dev, b->d_in);
    b->ops->release(b->dev, b->d_out);
  }
  free(b->h_in);
  free(b->h_out);
}

static int profile_pu_open(const pl *p, pu_bufs *b, hlb_exec_pu *pu, pu_profile *pp) {
  const hlb_codelet *cl = builtin_codelet();
  const void *shared[HLB_EXEC_MAX_SHARED] = {0};
  if (!b->ops->has_kernel(cl))
    return hlb__error(HLB_EUNSUPPORTED,
                      "profile-links: rank %d pu '%s': no built-in %s kernel to time; leave "
                      "this PU out (--pus)",
                      p->rank, pu->name, hlb_backend_name(pu->backend));
  int rc = b->ops->prepare(b->dev, cl, shared);
  if (rc) return rc;
  rc = alloc_bufs(p, b);
  if (rc == 0 && !b->ops->host_memory) {
    pp->has_link = 1;
    rc = device_link(p, b, pu->name, &pp->link);
  }
  if (rc == 0) rc = time_curve(p, b, shared, pp);
  b->ops->unprepare(b->dev);
  return rc;
}

/* Measure one local PU; its error text goes into pp->why. */
static void profile_pu(const pl *p, const hlb_exec_pu *in, unsigned l, int dup, pu_profile *pp) {
  hlb_exec_pu pu = *in;
  memset(pp, 0, sizeof *pp);
  /* PU names are unique in a cluster file: the rank, and the local index for a repeated name. */
  if (dup)
    snprintf(pp->name, sizeof pp->name, "r%d-%s#%u", p->rank, pu.name, l);
  else
    snprintf(pp->name, sizeof pp->name, "r%d-%s", p->rank, pu.name);
  snprintf(pp->kind, sizeof pp->kind, "%s", hlb_backend_name(pu.backend));
  pu_bufs b = {.ops = hlb__backend_get(pu.backend)};
  int rc = b.ops ? b.ops->open(&pu, &b.dev)
                 : hlb__error(HLB_EUNSUPPORTED, "profile-links: pu '%s': backend %s not built",
                              pu.name, hlb_backend_name(pu.backend));
  if (rc == 0) {
    snprintf(pp->device, sizeof pp->device, "%s", pu.device_name);
    rc = profile_pu_open(p, &b, &pu, pp);
  }
  free_bufs(&b);
  if (b.dev) b.ops->close(b.dev);
  pp->ok = rc == 0;
  if (rc) snprintf(pp->why, sizeof pp->why, "%s", hlb_last_error());
}

/* ---- Writing the file ------------------------------------------------------------------ */

/* Free text as a JSON string body: quotes, backslashes and control characters become blanks. */
static const char *json_text(const char *in, char *out, size_t cap) {
  size_t k = 0;
  for (; in[k] && k + 1 < cap; k++)
    out[k] = in[k] == '"' || in[k] == '\\' || (unsigned char)in[k] < 0x20 ? ' ' : in[k];
  out[k] = '\0';
  return out;
}

static void write_link(FILE *f, const hlb_link *l) {
  fprintf(f, "{\"latency_s\": %.9g, \"bandwidth_Bps\": %.9g}", l->latency_s, l->bandwidth_Bps);
}

static void write_pu(FILE *f, const pu_profile *q, int last) {
  char t[3][sizeof q->device];
  fprintf(f, "        {\"name\": \"%s\", \"kind\": \"%s\", \"comment\": \"%s\",\n",
          json_text(q->name, t[0], sizeof t[0]), json_text(q->kind, t[1], sizeof t[1]),
          json_text(q->device, t[2], sizeof t[2]));
  if (q->has_link) {
    fprintf(f, "         \"link\": ");
    write_link(f, &q->link);
    fprintf(f, ",\n");
  }
  fprintf(f, "         \"time\": {\"const\": %.9g, \"linear\": %.9g}}%s\n", q->c0, q->c1,
          last ? "" : ",");
}

static int write_file(const pl *p, const char *path, const hlb_link *links, const int *counts,
                      const pu_profile *pus, char (*hosts)[MPI_MAX_PROCESSOR_NAME]) {
  FILE *f = fopen(path, "w");
  if (!f) return hlb__error(HLB_EIO, "profile-links: %s: cannot write", path);
  fprintf(f,
          "{\n  \"comment\": \"measured by hlb profile-links on %d ranks: ping-pong of 1 B and "
          "%u sizes up to %zu B, best of %u; PU time is the built-in kernel (%d flops an item), "
          "const + linear fitted on blocks up to %zu items\",\n",
          p->size, p->o.n_sizes, p->o.max_bytes, p->o.reps, 2 * PL_KERNEL_WORK, p->o.kernel_items);
  fprintf(f, "  \"item\": {\"in_bytes\": %.17g, \"out_bytes\": %.17g},\n  \"nodes\": [\n",
          p->o.item_in_bytes, p->o.item_out_bytes);
  unsigned g = 0;
  for (int r = 0; r < p->size; r++) {
    char host[MPI_MAX_PROCESSOR_NAME];
    fprintf(f, "    {\"name\": \"rank%d\", \"comment\": \"%s\", \"link\": ", r,
            json_text(hosts[r], host, sizeof host));
    write_link(f, &links[r]);
    fprintf(f, ",\n      \"pus\": [\n");
    for (int k = 0; k < counts[r]; k++, g++)
      write_pu(f, &pus[g], k + 1 == counts[r]);
    fprintf(f, "      ]}%s\n", r + 1 == p->size ? "" : ",");
  }
  fprintf(f, "  ]\n}\n");
  if (fclose(f) != 0) return hlb__error(HLB_EIO, "profile-links: %s: write failed", path);
  /* The file must be one hlb plan and hlb sim accept: read it back with their loader. */
  hlb_cluster *c = NULL;
  int rc = hlb_cluster_load(path, &c);
  hlb_cluster_free(c);
  return rc;
}

/* ---- The collective ------------------------------------------------------------------- */

static int gather_and_write(pl *p, const pu_profile *mine, unsigned n_local, const char *path,
                            const hlb_link *links) {
  int n = (int)n_local, *counts = NULL, *displs = NULL;
  if (p->rank == 0)
    counts = calloc((size_t)p->size, sizeof *counts),
    displs = calloc((size_t)p->size, sizeof *displs);
  pl_check(p, MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, p->comm), "MPI_Gather", 0);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int hl = 0;
  MPI_Get_processor_name(host, &hl);
  char(*hosts)[MPI_MAX_PROCESSOR_NAME] =
      p->rank == 0 ? calloc((size_t)p->size, sizeof *hosts) : NULL;
  pl_check(p,
           MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
                      MPI_CHAR, 0, p->comm),
           "MPI_Gather", 0);
  int total = 0, *bc = NULL;
  pu_profile *all = NULL;
  if (p->rank == 0) {
    bc = calloc((size_t)p->size, sizeof *bc);
    for (int r = 0; r < p->size; r++) {
      displs[r] = total * (int)sizeof(pu_profile);
      bc[r] = counts[r] * (int)sizeof(pu_profile);
      total += counts[r];
    }
    all = calloc(total ? (size_t)total : 1, sizeof *all);
    if (!counts || !displs || !hosts || !bc || !all) {
      fprintf(stderr, "hlb profile-links: rank 0: out of memory\n");
      MPI_Abort(p->comm, 1);
    }
  }
  pl_check(p,
           MPI_Gatherv(mine, n * (int)sizeof(pu_profile), MPI_BYTE, all, bc, displs, MPI_BYTE, 0,
                       p->comm),
           "MPI_Gatherv", 0);
  int rc = 0;
  if (p->rank == 0) {
    for (int r = 0; r < p->size && !rc; r++)
      if (counts[r] == 0) rc = hlb__error(HLB_EINVAL, "profile-links: rank %d offers no PU", r);
    for (int g = 0; g < total && !rc; g++)
      if (!all[g].ok) rc = hlb__error(HLB_EDEVICE, "%s", all[g].why);
    if (!rc) rc = write_file(p, path, links, counts, all, hosts);
  }
  free(counts);
  free(displs);
  free(bc);
  free(all);
  free(hosts);
  return rc;
}

/* 1 when an earlier local PU has the same name as PU l. */
static int repeated(const hlb_exec_pu *pus, unsigned l) {
  for (unsigned k = 0; k < l; k++)
    if (!strcmp(pus[k].name, pus[l].name)) return 1;
  return 0;
}

static int share_verdict(pl *p, int rc) {
  struct {
    int32_t rc, pad;
    char text[512];
  } v = {.rc = rc};
  if (rc) snprintf(v.text, sizeof v.text, "%s", hlb_last_error());
  pl_check(p, MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, 0, p->comm), "MPI_Bcast", 0);
  if (p->rank != 0 && v.rc) return hlb__error(v.rc, "%s", v.text);
  return v.rc;
}

int hlb_mpi_profile_links(MPI_Comm comm, const hlb_exec_pu *local_pus, unsigned n_local,
                          const hlb_mpi_profile_options *opt, const char *path) {
  pl p = {0};
  if (opt)
    p.o = *opt;
  else
    hlb_mpi_profile_options_default(&p.o);
  int mrc = MPI_Comm_dup(comm, &p.comm);
  if (mrc != MPI_SUCCESS)
    return hlb__error(HLB_EMPI, "profile-links: MPI_Comm_dup failed (%d)", mrc);
  MPI_Comm_set_errhandler(p.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(p.comm, &p.rank);
  MPI_Comm_size(p.comm, &p.size);
  /* Every rank checks the same rank-0 options; a bad one fails everywhere alike. */
  pl_check(&p, MPI_Bcast(&p.o, (int)sizeof p.o, MPI_BYTE, 0, p.comm), "MPI_Bcast", 0);
  int rc = check_options(&p.o);
  if (rc == 0 && p.rank == 0 && (!path || !*path))
    rc = hlb__error(HLB_EINVAL, "profile-links: an output path is required");
  if (rc == 0 && n_local && !local_pus)
    rc = hlb__error(HLB_EINVAL, "profile-links: rank %d: %u PUs but no array", p.rank, n_local);
  if ((rc = pl_agree(&p, rc))) {
    MPI_Comm_free(&p.comm);
    return rc;
  }
  message_sizes(&p);
  hlb_link *links = calloc((size_t)p.size, sizeof *links);
  pu_profile *mine = calloc(n_local ? n_local : 1, sizeof *mine);
  if (!links || !mine) {
    fprintf(stderr, "hlb profile-links: rank %d: out of memory\n", p.rank);
    MPI_Abort(p.comm, 1);
  }
  rc = node_links(&p, links);
  /* A link that could not be measured stops the job here, with its own message, before a
   * file with an unmeasured link is written. */
  if ((rc = pl_agree(&p, rc))) {
    free(links);
    free(mine);
    MPI_Comm_free(&p.comm);
    return rc;
  }
  /* PUs one rank after another: ranks sharing a machine would otherwise time each other. */
  for (int r = 0; r < p.size; r++) {
    if (r == p.rank)
      for (unsigned l = 0; l < n_local; l++)
        profile_pu(&p, &local_pus[l], l, repeated(local_pus, l), &mine[l]);
    pl_check(&p, MPI_Barrier(p.comm), "MPI_Barrier", -1);
  }
  int grc = gather_and_write(&p, mine, n_local, path, links);
  rc = share_verdict(&p, rc ? rc : grc);
  free(links);
  free(mine);
  MPI_Comm_free(&p.comm);
  return rc;
}
