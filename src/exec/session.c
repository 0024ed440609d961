/* The executor as a session (docs/executor.md, "A session"): what it keeps from one run to the
 * next besides the models (exec/models.c): each PU's prepared codelets (the built kernel and
 * the device copies of the shared buffers) and its staging buffers, all released when the
 * executor is destroyed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error_internal.h"
#include "exec/exec_internal.h"

static const char *name_of(const hlb_codelet *cl) {
  return cl->name ? cl->name : "";
}

static int same_text(const char *kept, const char *now) {
  return kept && now && !strcmp(kept, now);
}

static void forget_kernel(hlb_executor *ex, unsigned i, hlb__kept *k) {
  if (k->kernel && ex->ops[i]->unbuild) ex->ops[i]->unbuild(ex->dev[i], k->kernel);
  k->kernel = NULL;
  k->built = 0;
  free(k->source);
  free(k->kern);
  k->source = k->kern = NULL;
}

static void free_kept(hlb_executor *ex, unsigned i, hlb__kept *k) {
  forget_kernel(ex, i, k);
  for (unsigned s = 0; s < HLB_EXEC_MAX_SHARED; s++)
    if (k->shared[s]) ex->ops[i]->release(ex->dev[i], k->shared[s]);
  free(k->name);
}

/* PU i's entry for the codelet's name, made when there is none. */
static int find_kept(hlb_executor *ex, unsigned i, const hlb_codelet *cl, hlb__kept **out) {
  const char *name = name_of(cl);
  for (unsigned j = 0; j < ex->n_kept[i]; j++)
    if (!strcmp(ex->kept[i][j].name, name)) {
      *out = &ex->kept[i][j];
      return 0;
    }
  hlb__kept *grown = realloc(ex->kept[i], (ex->n_kept[i] + 1) * sizeof *grown);
  if (!grown)
    return hlb__error(HLB_ENOMEM, "pu '%s': codelet '%s': out of memory for the session",
                      ex->pu[i].name, name);
  ex->kept[i] = grown;
  hlb__kept *k = memset(&grown[ex->n_kept[i]], 0, sizeof *k);
  if (!(k->name = strdup(name)))
    return hlb__error(HLB_ENOMEM, "pu '%s': codelet '%s': out of memory for the session",
                      ex->pu[i].name, name);
  ex->n_kept[i]++;
  *out = k;
  return 0;
}

/* Copy the shared buffers into the entry's device buffers (grown as needed). */
static int upload(hlb_executor *ex, unsigned i, const hlb_codelet *cl, hlb__kept *k,
                  const void *shared[HLB_EXEC_MAX_SHARED]) {
  const hlb__backend_ops *ops = ex->ops[i];
  for (unsigned s = 0; s < HLB_EXEC_MAX_SHARED; s++) {
    shared[s] = NULL;
    if (s >= cl->n_shared || cl->shared[s].bytes == 0) continue;
    size_t bytes = cl->shared[s].bytes;
    int rc;
    if (ops->upload) {
      rc = ops->upload(ex->dev[i], &k->shared[s], &k->shared_cap[s], cl->shared[s].host, bytes);
    } else {
      rc = hlb__staging_grow_device(ops, ex->dev[i], &k->shared[s], &k->shared_cap[s], bytes);
      if (!rc) rc = ops->to_device(ex->dev[i], k->shared[s], cl->shared[s].host, bytes);
    }
    if (rc)
      return hlb__error_prefix(rc, "pu '%s': codelet '%s': shared buffer %u (%zu bytes): ",
                               ex->pu[i].name, name_of(cl), s, bytes);
    shared[s] = k->shared[s];
  }
  return 0;
}

int hlb__session_prepare(hlb_executor *ex, unsigned i, const hlb_codelet *cl,
                         const void *shared[HLB_EXEC_MAX_SHARED], void **kernel,
                         hlb_exec_pu_stats *st) {
  const hlb__backend_ops *ops = ex->ops[i];
  double t0 = hlb__now();
  *kernel = NULL;
  st->kernel_builds = 0;
  st->build_s = st->upload_s = 0;
  if (ops->host_memory && !ops->build) {
    /* The cpu: the shared buffers are used where they are, and nothing is built. */
    for (unsigned s = 0; s < HLB_EXEC_MAX_SHARED; s++)
      shared[s] = s < cl->n_shared ? cl->shared[s].host : NULL;
    st->setup_s = hlb__now() - t0;
    return 0;
  }
  hlb__kept *k = NULL;
  int rc = find_kept(ex, i, cl, &k);
  if (!rc && !ops->host_memory) rc = upload(ex, i, cl, k, shared);
  double t1 = hlb__now();
  st->upload_s = t1 - t0;
  if (!rc && ops->build &&
      !(k->built && same_text(k->source, cl->opencl_source) &&
        same_text(k->kern, cl->opencl_kernel))) {
    /* First run of this codelet here, or its source or kernel name changed: build again. */
    forget_kernel(ex, i, k);
    st->kernel_builds = 1;
    rc = ops->build(ex->dev[i], cl, shared, &k->kernel);
    if (!rc && ((cl->opencl_source && !(k->source = strdup(cl->opencl_source))) ||
                (cl->opencl_kernel && !(k->kern = strdup(cl->opencl_kernel)))))
      rc = hlb__error(HLB_ENOMEM, "pu '%s': codelet '%s': out of memory for the session",
                      ex->pu[i].name, name_of(cl));
    if (rc)
      forget_kernel(ex, i, k);
    else
      k->built = 1;
  } else if (!rc && !ops->build) {
    k->built = 1;
  }
  double t2 = hlb__now();
  st->build_s = t2 - t1;
  st->setup_s = t2 - t0;
  if (!rc) *kernel = k->kernel;
  return rc;
}

unsigned hlb__session_kernels(const hlb_executor *ex) {
  unsigned n = 0;
  for (unsigned i = 0; ex->kept && i < ex->n; i++)
    for (unsigned j = 0; j < ex->n_kept[i]; j++)
      n += ex->kept[i][j].kernel != NULL;
  return n;
}

/* What the session keeps for PU i: its kernels, shared copies and staging buffers. */
static void free_pu(hlb_executor *ex, unsigned i) {
  if (ex->kept && ex->kept[i]) {
    for (unsigned j = 0; j < ex->n_kept[i]; j++)
      free_kept(ex, i, &ex->kept[i][j]);
    free(ex->kept[i]);
    ex->kept[i] = NULL;
    ex->n_kept[i] = 0;
  }
  if (ex->stage) {
    hlb__stage *s = &ex->stage[i];
    ex->ops[i]->release(ex->dev[i], s->dev_in);
    ex->ops[i]->release(ex->dev[i], s->dev_out);
    free(s->host_in);
    free(s->host_out);
    memset(s, 0, sizeof *s);
  }
}

void hlb__session_free(hlb_executor *ex) {
  for (unsigned i = 0; i < ex->n; i++)
    free_pu(ex, i);
  free(ex->kept);
  free(ex->n_kept);
  free(ex->stage);
  ex->kept = NULL;
  ex->n_kept = NULL;
  ex->stage = NULL;
}

int hlb__session_reopen(hlb_executor *ex, unsigned i, unsigned cores) {
  hlb_exec_pu *p = &ex->pu[i];
  unsigned before = p->cores;
  void *dev = NULL;
  free_pu(ex, i);
  ex->ops[i]->close(ex->dev[i]);
  ex->dev[i] = NULL;
  p->cores = cores;
  int rc = ex->ops[i]->open(p, &dev);
  if (rc == 0) {
    ex->dev[i] = dev;
    return 0;
  }
  char why[256];
  snprintf(why, sizeof why, "%s", hlb_last_error());
  p->cores = before;
  if (ex->ops[i]->open(p, &ex->dev[i]) != 0)
    return hlb__error(HLB_EDEVICE,
                      "pu '%s': opening it on %u cores failed (%s), and so did "
                      "opening it again as before: %s",
                      p->name, cores, why, hlb_last_error());
  return hlb__error(HLB_EDEVICE, "pu '%s': opening it on %u cores failed: %s", p->name, cores, why);
}
