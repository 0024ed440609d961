/* Cluster description files (docs/cluster-format.md): parse, validate, free.
 *
 * Every rule of the format is checked here so that `hlb plan`, `hlb sim` and the library
 * can trust a loaded hlb_cluster: a malformed file fails with the file name, the JSON path
 * and the offending value, never later with a strange plan. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/json.h"
#include "hlb/cluster.h"
#include "partition/cost_map.h"

/* JSON paths are short ("nodes[12].pus[3].link.bandwidth_Bps"); this leaves ample room. */
#define PATH_MAX_LEN 160

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static int oom(const hlb__jctx *c) {
  return hlb__error(HLB_ENOMEM, "%s: out of memory while loading", c->file);
}

/* cJSON keeps both members of {"a":1,"a":2} and reads the first; a repeated key is almost
 * always an editing mistake, so it is an error rather than a silent choice. */
static int check_unique_keys(const hlb__jctx *c, const cJSON *obj, const char *path) {
  for (const cJSON *a = obj->child; a; a = a->next)
    for (const cJSON *b = a->next; b; b = b->next)
      if (a->string && b->string && strcmp(a->string, b->string) == 0)
        return hlb__error(HLB_EPARSE, "%s: %s%s%s: member appears twice", c->file, path,
                          *path ? "." : "", a->string);
  return 0;
}

/* Common checks of every object of the format: known members only, no repeats, and an
 * optional "comment" that must be a string when present. */
static int check_object(const hlb__jctx *c, const cJSON *obj, const char *path,
                        const char *const *known) {
  if (!cJSON_IsObject(obj))
    return hlb__error(HLB_EPARSE, "%s: %s: must be an object", c->file, *path ? path : "(root)");
  int rc = hlb__json_only_keys(c, obj, path, known);
  if (!rc) rc = check_unique_keys(c, obj, path);
  const char *comment = NULL;
  if (!rc && cJSON_GetObjectItemCaseSensitive(obj, "comment"))
    rc = hlb__json_string(c, obj, path, "comment", 0, NULL, &comment);
  return rc;
}

/* A number that must be strictly positive (bandwidths, slowdowns). */
static int positive_number(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                           double *out) {
  int rc = hlb__json_number(c, obj, path, key, 1, 0, -DBL_MAX, DBL_MAX, out);
  if (!rc && !(*out > 0))
    rc = hlb__error(HLB_EPARSE, "%s: %s.%s: must be > 0, got %g", c->file, path, key, *out);
  return rc;
}

static int read_link(const hlb__jctx *c, const cJSON *parent, const char *ppath, int required,
                     hlb_link *out) {
  static const char *const known[] = {"latency_s", "bandwidth_Bps", "comment", NULL};
  const cJSON *obj = NULL;
  int rc = hlb__json_object(c, parent, ppath, "link", required, &obj);
  if (rc) return rc;
  if (!obj) { /* an absent link is free: host cores share the node's memory, and the
               * manager's own node needs no network */
    out->latency_s = 0;
    out->bandwidth_Bps = INFINITY;
    return 0;
  }
  char path[PATH_MAX_LEN];
  snprintf(path, sizeof path, "%.120s.link", ppath);
  rc = check_object(c, obj, path, known);
  if (!rc) rc = hlb__json_number(c, obj, path, "latency_s", 1, 0, 0, DBL_MAX, &out->latency_s);
  if (!rc) rc = positive_number(c, obj, path, "bandwidth_Bps", &out->bandwidth_Bps);
  return rc;
}

/* Slope of c0 + c1 x + c2 x^2 + c3 x^3 + c4 x ln x, and a magnitude to judge it against. */
static double poly_slope(const double *k, double x, double *mag) {
  double lx = log(x);
  *mag = fabs(k[1]) + 2 * fabs(k[2]) * x + 3 * fabs(k[3]) * x * x + fabs(k[4]) * (fabs(lx) + 1);
  return k[1] + 2 * k[2] * x + 3 * k[3] * x * x + k[4] * (lx + 1);
}

/* The curve must be non-negative and non-decreasing on [1, HLB_CLUSTER_CURVE_MAX_X]: every
 * block holds at least one item, and the solvers (inverse by search) and the simulator rely
 * on "more items never take less time". The slope g(x) = c1 + 2 c2 x + 3 c3 x^2 + c4 (ln x + 1)
 * has g'(x) = 0 where 6 c3 x^2 + 2 c2 x + c4 = 0, so its minimum over the range is at an end
 * or at one of at most two such roots: checking those points is exact, not sampling. */
static int check_curve(const hlb__jctx *c, const char *path, const double *k) {
  const double X = HLB_CLUSTER_CURVE_MAX_X;
  double pts[4] = {1.0, X, NAN, NAN};
  double qa = 6 * k[3], qb = 2 * k[2], qc = k[4];
  if (qa != 0) {
    double disc = qb * qb - 4 * qa * qc;
    if (disc >= 0) {
      pts[2] = (-qb + sqrt(disc)) / (2 * qa);
      pts[3] = (-qb - sqrt(disc)) / (2 * qa);
    }
  } else if (qb != 0) {
    pts[2] = -qc / qb;
  }
  for (int i = 0; i < 4; i++) {
    double x = pts[i];
    if (!(x >= 1.0 && x <= X)) continue;
    double mag, g = poly_slope(k, x, &mag);
    if (g < -1e-12 * mag)
      return hlb__error(HLB_EPARSE,
                        "%s: %s: decreases at x = %g items (slope %g); a time curve must be "
                        "non-decreasing for blocks of 1 to %g items",
                        c->file, path, x, g, X);
  }
  double f1 = k[0] + k[1] + k[2] + k[3];
  double scale1 = fabs(k[0]) + fabs(k[1]) + fabs(k[2]) + fabs(k[3]);
  if (f1 < -1e-12 * scale1)
    return hlb__error(HLB_EPARSE, "%s: %s: time of a 1-item block is negative (%g s)", c->file,
                      path, f1);
  double fX = k[0] + X * (k[1] + X * (k[2] + X * k[3])) + k[4] * X * log(X);
  if (!isfinite(fX))
    return hlb__error(HLB_EPARSE, "%s: %s: time of a %g-item block overflows a double", c->file,
                      path, X);
  return 0;
}

static int read_time(const hlb__jctx *c, const cJSON *pu_obj, const char *ppath,
                     hlb_cluster_pu *pu) {
  static const char *const terms[] = {"const", "linear", "quadratic", "cubic", "xlogx", NULL};
  static const char *const known[] = {"const", "linear",  "quadratic", "cubic",
                                      "xlogx", "comment", NULL};
  const cJSON *obj = NULL;
  int rc = hlb__json_object(c, pu_obj, ppath, "time", 1, &obj);
  if (rc) return rc;
  char path[PATH_MAX_LEN];
  snprintf(path, sizeof path, "%.120s.time", ppath);
  rc = check_object(c, obj, path, known);
  for (int i = 0; !rc && terms[i]; i++)
    rc = hlb__json_number(c, obj, path, terms[i], 0, 0.0, -DBL_MAX, DBL_MAX, &pu->poly[i]);
  if (!rc) rc = check_curve(c, path, pu->poly);
  if (!rc)
    hlb_curve_from_poly(&pu->time, pu->poly[0], pu->poly[1], pu->poly[2], pu->poly[3], pu->poly[4]);
  return rc;
}

/* A cap of 0 would silently switch a PU or node off; say so instead. */
static int read_cap(const hlb__jctx *c, const cJSON *obj, const char *path, size_t *out) {
  int rc = hlb__json_size(c, obj, path, "max_items", 0, SIZE_MAX, SIZE_MAX, out);
  if (!rc && *out == 0)
    rc = hlb__error(HLB_EPARSE,
                    "%s: %s.max_items: must be >= 1, got 0 (leave the PU out "
                    "instead)",
                    c->file, path);
  return rc;
}

/* A count of cores: an integer >= 1 (a JSON number, so the message can show a bad value). */
static int read_cores(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                      int required, unsigned *out) {
  double v = 0;
  int rc = hlb__json_number(c, obj, path, key, required, 0.0, -DBL_MAX, DBL_MAX, &v);
  if (rc || (!required && !cJSON_GetObjectItemCaseSensitive(obj, key))) return rc;
  if (!(v >= 1) || v != floor(v) || v > 1e6)
    return hlb__error(HLB_EPARSE, "%s: %s.%s: must be a whole number of cores >= 1, got %g",
                      c->file, path, key, v);
  *out = (unsigned)v;
  return 0;
}

static int read_pu(const hlb__jctx *c, const cJSON *obj, const char *path, hlb_cluster_pu *pu) {
  static const char *const known[] = {"name",  "kind",        "link",    "time", "max_items",
                                      "cores", "driver_core", "comment", NULL};
  int rc = check_object(c, obj, path, known);
  const char *name = NULL, *kind = NULL;
  if (!rc) rc = hlb__json_string(c, obj, path, "name", 1, NULL, &name);
  if (!rc) rc = hlb__json_string(c, obj, path, "kind", 1, NULL, &kind);
  if (!rc) rc = read_link(c, obj, path, 0, &pu->link);
  if (!rc) rc = read_time(c, obj, path, pu);
  if (!rc) rc = read_cap(c, obj, path, &pu->max_items);
  if (!rc) rc = read_cores(c, obj, path, "cores", 0, &pu->cores);
  pu->driver_of = -1; /* driver_core is resolved once every PU has its name */
  if (rc) return rc;
  pu->name = dup_str(name);
  pu->kind = dup_str(kind);
  return (pu->name && pu->kind) ? 0 : oom(c);
}

static int read_node(const hlb__jctx *c, const cJSON *obj, const char *path, hlb_cluster *cl,
                     unsigned ni) {
  static const char *const known[] = {"name",      "link", "partition_s", "merge_s",
                                      "max_items", "pus",  "comment",     NULL};
  hlb_cluster_node *n = &cl->nodes[ni];
  int rc = check_object(c, obj, path, known);
  const char *name = NULL;
  const cJSON *pus = NULL;
  if (!rc) rc = hlb__json_string(c, obj, path, "name", 1, NULL, &name);
  if (!rc) rc = read_link(c, obj, path, 0, &n->link);
  if (!rc) rc = hlb__json_number(c, obj, path, "partition_s", 0, 0.0, 0, DBL_MAX, &n->partition_s);
  if (!rc) rc = hlb__json_number(c, obj, path, "merge_s", 0, 0.0, 0, DBL_MAX, &n->merge_s);
  if (!rc) rc = read_cap(c, obj, path, &n->max_items);
  if (!rc) rc = hlb__json_array(c, obj, path, "pus", 1, &pus);
  if (rc) return rc;
  n->name = dup_str(name);
  if (!n->name) return oom(c);
  unsigned j = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, pus) {
    char ppath[PATH_MAX_LEN];
    snprintf(ppath, sizeof ppath, "%.120s.pus[%u]", path, j);
    hlb_cluster_pu *pu = &cl->pus[n->first_pu + j];
    pu->node = ni;
    if ((rc = read_pu(c, p, ppath, pu))) return rc;
    j++;
  }
  return 0;
}

/* Names are how people, events and reports refer to nodes and PUs, so each must be unique
 * within its kind. */
static int check_names(const hlb__jctx *c, const hlb_cluster *cl) {
  for (unsigned a = 0; a < cl->n_nodes; a++)
    for (unsigned b = a + 1; b < cl->n_nodes; b++)
      if (strcmp(cl->nodes[a].name, cl->nodes[b].name) == 0)
        return hlb__error(HLB_EPARSE, "%s: nodes[%u].name: \"%s\" is already the name of nodes[%u]",
                          c->file, b, cl->nodes[b].name, a);
  for (unsigned a = 0; a < cl->n_pus; a++)
    for (unsigned b = a + 1; b < cl->n_pus; b++)
      if (strcmp(cl->pus[a].name, cl->pus[b].name) == 0) {
        const hlb_cluster_pu *pb = &cl->pus[b], *pa = &cl->pus[a];
        return hlb__error(HLB_EPARSE,
                          "%s: nodes[%u].pus[%u].name: \"%s\" is already the name of "
                          "nodes[%u].pus[%u]",
                          c->file, pb->node, b - cl->nodes[pb->node].first_pu, pb->name, pa->node,
                          a - cl->nodes[pa->node].first_pu);
      }
  return 0;
}

/* One PU's "driver_core": {"of": NAME, "cores": K}: it holds K cores of the cpu PU NAME of its
 * own node (docs/cluster-format.md, "Driver cores"). Needs every PU's name. */
static int read_driver_core(const hlb__jctx *c, const cJSON *pu_obj, const char *ppath,
                            hlb_cluster *cl, unsigned p) {
  static const char *const known[] = {"of", "cores", "comment", NULL};
  const cJSON *obj = NULL;
  int rc = hlb__json_object(c, pu_obj, ppath, "driver_core", 0, &obj);
  if (rc || !obj) return rc;
  char path[PATH_MAX_LEN];
  snprintf(path, sizeof path, "%.120s.driver_core", ppath);
  const char *of = NULL;
  hlb_cluster_pu *pu = &cl->pus[p];
  unsigned k = 1;
  rc = check_object(c, obj, path, known);
  if (!rc) rc = hlb__json_string(c, obj, path, "of", 1, NULL, &of);
  if (!rc) rc = read_cores(c, obj, path, "cores", 0, &k);
  if (rc) return rc;
  int host = hlb_cluster_find_pu(cl, of);
  if (host < 0)
    return hlb__error(HLB_EPARSE, "%s: %s.of: no PU is named \"%s\"", c->file, path, of);
  const hlb_cluster_pu *h = &cl->pus[host];
  if ((unsigned)host == p)
    return hlb__error(HLB_EPARSE,
                      "%s: %s.of: \"%s\" is this PU itself: a PU cannot hold its own cores (a "
                      "cycle)",
                      c->file, path, of);
  if (h->node != pu->node)
    return hlb__error(HLB_EPARSE,
                      "%s: %s.of: \"%s\" is a PU of node \"%s\", not of this PU's node \"%s\": "
                      "driver cores are the host cores of the PU's own node",
                      c->file, path, of, cl->nodes[h->node].name, cl->nodes[pu->node].name);
  if (h->cores == 0)
    return hlb__error(HLB_EPARSE,
                      "%s: %s.of: \"%s\" gives no \"cores\": a PU whose cores are held must say "
                      "how many it has (its time curve is for all of them)",
                      c->file, path, of);
  pu->driver_of = host;
  pu->driver_cores = k;
  return 0;
}

/* After every PU is read: driver_core entries, then the rules that span PUs. A PU that holds
 * cores cannot give any (no chains or cycles: a cpu PU's speed depends on its own cores only),
 * and the PUs holding cores of one cpu PU leave it at least one. */
static int read_driver_cores(const hlb__jctx *c, const cJSON *nodes, hlb_cluster *cl) {
  unsigned ni = 0;
  const cJSON *node;
  cJSON_ArrayForEach(node, nodes) {
    const cJSON *pus = cJSON_GetObjectItemCaseSensitive(node, "pus"), *p;
    unsigned j = 0;
    cJSON_ArrayForEach(p, pus) {
      char path[PATH_MAX_LEN];
      snprintf(path, sizeof path, "nodes[%u].pus[%u]", ni, j);
      int rc = read_driver_core(c, p, path, cl, cl->nodes[ni].first_pu + j);
      if (rc) return rc;
      j++;
    }
    ni++;
  }
  for (unsigned p = 0; p < cl->n_pus; p++) {
    const hlb_cluster_pu *pu = &cl->pus[p];
    if (pu->driver_of < 0) continue;
    const hlb_cluster_pu *h = &cl->pus[pu->driver_of];
    unsigned jp = p - cl->nodes[pu->node].first_pu;
    if (h->driver_of >= 0)
      return hlb__error(HLB_EPARSE,
                        "%s: nodes[%u].pus[%u].driver_core.of: \"%s\" holds cores of \"%s\" "
                        "itself: driver cores cannot be chained%s",
                        c->file, pu->node, jp, h->name, cl->pus[h->driver_of].name,
                        h->driver_of == (int)p ? " (a cycle)" : "");
    unsigned held = 0;
    for (unsigned q = 0; q < cl->n_pus; q++)
      if (cl->pus[q].driver_of == pu->driver_of) held += cl->pus[q].driver_cores;
    if (held >= h->cores)
      return hlb__error(HLB_EPARSE,
                        "%s: nodes[%u].pus[%u].driver_core.cores: the PUs holding cores of "
                        "\"%s\" hold %u of its %u cores; it must keep at least one",
                        c->file, pu->node, jp, h->name, held, h->cores);
  }
  return 0;
}

static int read_event(const hlb__jctx *c, const cJSON *obj, const char *path, hlb_cluster *cl,
                      hlb_cluster_event *ev) {
  static const char *const known[] = {"at_s", "pu", "slowdown", "fail", "comment", NULL};
  int rc = check_object(c, obj, path, known);
  const char *pu = NULL;
  if (!rc) rc = hlb__json_number(c, obj, path, "at_s", 1, 0, 0, DBL_MAX, &ev->at_s);
  if (!rc) rc = hlb__json_string(c, obj, path, "pu", 1, NULL, &pu);
  if (rc) return rc;
  int idx = hlb_cluster_find_pu(cl, pu);
  if (idx < 0) return hlb__error(HLB_EPARSE, "%s: %s.pu: no PU is named \"%s\"", c->file, path, pu);
  ev->pu = (unsigned)idx;
  int has_slow = cJSON_GetObjectItemCaseSensitive(obj, "slowdown") != NULL;
  int has_fail = cJSON_GetObjectItemCaseSensitive(obj, "fail") != NULL;
  if (has_slow == has_fail)
    return hlb__error(HLB_EPARSE, "%s: %s: needs exactly one of \"slowdown\" and \"fail\"", c->file,
                      path);
  if (has_slow) {
    ev->kind = HLB_EVENT_SLOWDOWN;
    return positive_number(c, obj, path, "slowdown", &ev->slowdown);
  }
  int fail = 0;
  if ((rc = hlb__json_bool(c, obj, path, "fail", 1, 0, &fail))) return rc;
  if (!fail)
    return hlb__error(HLB_EPARSE, "%s: %s.fail: must be true (leave the event out instead)",
                      c->file, path);
  ev->kind = HLB_EVENT_FAIL;
  ev->slowdown = 1.0;
  return 0;
}

/* Stable by at_s, so two events at the same time apply in file order. */
static void sort_events(hlb_cluster_event *ev, unsigned n) {
  for (unsigned i = 1; i < n; i++) {
    hlb_cluster_event e = ev[i];
    unsigned j = i;
    while (j > 0 && ev[j - 1].at_s > e.at_s) {
      ev[j] = ev[j - 1];
      j--;
    }
    ev[j] = e;
  }
}

static int read_events(const hlb__jctx *c, const cJSON *root, hlb_cluster *cl) {
  const cJSON *arr = NULL;
  int rc = hlb__json_array(c, root, "", "events", 0, &arr);
  if (rc || !arr) return rc;
  unsigned n = (unsigned)cJSON_GetArraySize(arr);
  if (n == 0) return 0;
  cl->events = calloc(n, sizeof *cl->events);
  if (!cl->events) return oom(c);
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof path, "events[%u]", cl->n_events);
    if ((rc = read_event(c, e, path, cl, &cl->events[cl->n_events]))) return rc;
    cl->n_events++;
  }
  sort_events(cl->events, cl->n_events);
  return 0;
}

static int read_item(const hlb__jctx *c, const cJSON *root, hlb_cluster *cl) {
  static const char *const known[] = {"in_bytes", "out_bytes", "comment", NULL};
  const cJSON *obj = NULL;
  int rc = hlb__json_object(c, root, "", "item", 1, &obj);
  if (!rc) rc = check_object(c, obj, "item", known);
  if (!rc) rc = hlb__json_number(c, obj, "item", "in_bytes", 1, 0, 0, DBL_MAX, &cl->item_in_bytes);
  if (!rc)
    rc = hlb__json_number(c, obj, "item", "out_bytes", 1, 0, 0, DBL_MAX, &cl->item_out_bytes);
  return rc;
}

/* First pass over nodes[]: count PUs so both arrays are allocated once. */
static int size_nodes(const hlb__jctx *c, const cJSON *nodes, hlb_cluster *cl) {
  unsigned n = (unsigned)cJSON_GetArraySize(nodes);
  if (n == 0) return hlb__error(HLB_EPARSE, "%s: nodes: must hold at least one node", c->file);
  cl->nodes = calloc(n, sizeof *cl->nodes);
  if (!cl->nodes) return oom(c);
  cl->n_nodes = n;
  unsigned i = 0, total = 0;
  const cJSON *node;
  cJSON_ArrayForEach(node, nodes) {
    const cJSON *pus = cJSON_GetObjectItemCaseSensitive(node, "pus");
    unsigned k = cJSON_IsArray(pus) ? (unsigned)cJSON_GetArraySize(pus) : 0;
    if (cJSON_IsArray(pus) && k == 0)
      return hlb__error(HLB_EPARSE, "%s: nodes[%u].pus: must hold at least one PU", c->file, i);
    cl->nodes[i].first_pu = total;
    cl->nodes[i].n_pus = k;
    total += k;
    i++;
  }
  cl->pus = calloc(total ? total : 1, sizeof *cl->pus);
  if (!cl->pus) return oom(c);
  cl->n_pus = total;
  return 0;
}

static int read_cluster(const hlb__jctx *c, const cJSON *root, hlb_cluster *cl) {
  static const char *const known[] = {"comment", "nodes",    "item",          "noise_sigma",
                                      "events",  "cost_map", "host_jitter_s", NULL};
  int rc = check_object(c, root, "", known);
  const cJSON *nodes = NULL;
  if (!rc) rc = hlb__json_array(c, root, "", "nodes", 1, &nodes);
  if (!rc) rc = size_nodes(c, nodes, cl);
  unsigned i = 0;
  const cJSON *node;
  if (!rc) {
    cJSON_ArrayForEach(node, nodes) {
      char path[PATH_MAX_LEN];
      snprintf(path, sizeof path, "nodes[%u]", i);
      if ((rc = read_node(c, node, path, cl, i))) break;
      i++;
    }
  }
  if (!rc) rc = check_names(c, cl);
  if (!rc) rc = read_driver_cores(c, nodes, cl);
  if (!rc) rc = read_item(c, root, cl);
  if (!rc) rc = hlb__json_number(c, root, "", "noise_sigma", 0, 0.0, 0, DBL_MAX, &cl->noise_sigma);
  if (!rc)
    rc = hlb__json_number(c, root, "", "host_jitter_s", 0, 0.0, 0, DBL_MAX, &cl->host_jitter_s);
  if (!rc) rc = read_events(c, root, cl);
  if (!rc) rc = hlb__cost_map_read(c, root, cl);
  return rc;
}

static int parse_tree(const char *name, const cJSON *root, hlb_cluster **out) {
  *out = NULL;
  hlb__jctx c = {name};
  hlb_cluster *cl = calloc(1, sizeof *cl);
  if (!cl) return oom(&c);
  int rc = read_cluster(&c, root, cl);
  if (rc) {
    hlb_cluster_free(cl);
    return rc;
  }
  *out = cl;
  return 0;
}

int hlb_cluster_parse(const char *name, const char *json_text, hlb_cluster **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_cluster_parse: out is NULL");
  *out = NULL;
  if (!json_text) return hlb__error(HLB_EINVAL, "hlb_cluster_parse: json_text is NULL");
  if (!name) name = "(cluster)";
  cJSON *root = NULL;
  int rc = hlb__json_parse(name, json_text, &root);
  if (rc) return rc;
  rc = parse_tree(name, root, out);
  cJSON_Delete(root);
  return rc;
}

int hlb_cluster_load(const char *path, hlb_cluster **out) {
  if (!out) return hlb__error(HLB_EINVAL, "hlb_cluster_load: out is NULL");
  *out = NULL;
  if (!path) return hlb__error(HLB_EINVAL, "hlb_cluster_load: path is NULL");
  cJSON *root = NULL;
  int rc = hlb__json_load_file(path, &root);
  if (rc) return rc;
  rc = parse_tree(path, root, out);
  cJSON_Delete(root);
  return rc;
}

void hlb_cluster_free(hlb_cluster *c) {
  if (!c) return;
  for (unsigned i = 0; c->nodes && i < c->n_nodes; i++)
    free(c->nodes[i].name);
  for (unsigned i = 0; c->pus && i < c->n_pus; i++) {
    free(c->pus[i].name);
    free(c->pus[i].kind);
  }
  free(c->nodes);
  free(c->pus);
  free(c->events);
  free(c->cost_weight);
  free(c->cost_prefix);
  free(c);
}

int hlb_cluster_find_pu(const hlb_cluster *c, const char *name) {
  for (unsigned i = 0; c && name && i < c->n_pus; i++)
    if (c->pus[i].name && strcmp(c->pus[i].name, name) == 0) return (int)i;
  return -1;
}

int hlb_cluster_find_node(const hlb_cluster *c, const char *name) {
  for (unsigned i = 0; c && name && i < c->n_nodes; i++)
    if (c->nodes[i].name && strcmp(c->nodes[i].name, name) == 0) return (int)i;
  return -1;
}

double hlb_link_time(const hlb_link *l, double bytes) {
  return l->latency_s + bytes / l->bandwidth_Bps;
}

int hlb_link_from_pingpong(const double *bytes, const double *roundtrip_s, unsigned n,
                           hlb_link *out) {
  if (!bytes || !roundtrip_s || !out)
    return hlb__error(HLB_EINVAL, "hlb_link_from_pingpong: NULL argument");
  if (n < 3)
    return hlb__error(HLB_EINVAL,
                      "hlb_link_from_pingpong: need the empty message and at least two sizes, "
                      "got %u entries",
                      n);
  for (unsigned k = 0; k < n; k++)
    if (!isfinite(bytes[k]) || bytes[k] < 0 || !isfinite(roundtrip_s[k]) || roundtrip_s[k] < 0)
      return hlb__error(HLB_EINVAL,
                        "hlb_link_from_pingpong: entry %u: bytes %g, time %g s "
                        "must be finite and >= 0",
                        k, bytes[k], roundtrip_s[k]);
  double sum = 0;
  for (unsigned k = 2; k < n; k++) {
    double ds = bytes[k] - bytes[k - 1];
    double dt = (roundtrip_s[k] - roundtrip_s[k - 1]) / 2; /* one direction */
    if (!(ds > 0) || !(dt > 0))
      return hlb__error(HLB_EINVAL,
                        "hlb_link_from_pingpong: entry %u: size %g B, round trip %g s must both "
                        "exceed entry %u's (%g B, %g s)",
                        k, bytes[k], roundtrip_s[k], k - 1, bytes[k - 1], roundtrip_s[k - 1]);
    sum += ds / dt; /* eq. 4 */
  }
  out->latency_s = roundtrip_s[0] / 2;
  out->bandwidth_Bps = sum / (n - 2);
  return 0;
}
