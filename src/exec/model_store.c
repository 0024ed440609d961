/* Models kept across runs: the files (model_store.h, docs/models.md). */
#include "exec/model_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error_internal.h"
#include "common/files.h"
#include "common/json.h"
#include "common/options_internal.h"
#include "hlb/models.h"
#include "hlb/policy.h"

int hlb__model_dir(const char *dir, char *out, size_t cap) {
  const char *env = hlb__option_env("model-dir");
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (dir && *dir)
    n = snprintf(out, cap, "%s", dir);
  else if (env)
    n = snprintf(out, cap, "%s", env);
  else if (xdg && *xdg)
    n = snprintf(out, cap, "%s/hlb", xdg);
  else if (home && *home)
    n = snprintf(out, cap, "%s/.cache/hlb", home);
  else
    return hlb__error(HLB_EINVAL, "models: no model directory: set HLB_MODEL_DIR (neither "
                                  "XDG_CACHE_HOME nor HOME is set)");
  if (n < 0 || (size_t)n >= cap) return hlb__error(HLB_EINVAL, "models: directory name too long");
  return 0;
}

/* ---- keys --------------------------------------------------------------------------------- */

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_key[17], host_desc[256];

static void describe_host(void) {
  const char *model = NULL;
  int cores = 0;
  unsigned long long memory = 0;
  hwloc_topology_t topo;
  int loaded = hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0;
  if (loaded) {
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    memory = (unsigned long long)hwloc_get_root_obj(topo)->total_memory;
  }
  /* The key is the processor and its cores (the devices are in each PU's key). Memory is
   * only shown: on a VM whose memory is ballooned hwloc's total moved from 10 to 14 GiB within
   * an hour, and every stored model then looked like another host's. */
  char what[200];
  snprintf(what, sizeof what, "%s, %d cores", model ? model : "unknown CPU", cores);
  snprintf(host_desc, sizeof host_desc, "%s, %llu GiB", what, memory >> 30);
  uint64_t h = hlb__fnv1a(HLB__FNV_START, what, strlen(what));
  snprintf(host_key, sizeof host_key, "%016llx", (unsigned long long)h);
  if (loaded) hwloc_topology_destroy(topo);
}

void hlb__model_host(char key[17], char *desc, size_t desc_cap) {
  pthread_once(&host_once, describe_host);
  memcpy(key, host_key, sizeof host_key);
  if (desc) snprintf(desc, desc_cap, "%s", host_desc);
}

void hlb__model_codelet_key(const hlb_codelet *cl, char *out, size_t cap) {
  uint64_t f[2 + HLB_EXEC_MAX_SHARED] = {cl->in_bytes_per_item, cl->out_bytes_per_item};
  for (unsigned i = 0; i < cl->n_shared && i < HLB_EXEC_MAX_SHARED; i++)
    f[2 + i] = cl->shared[i].bytes;
  uint64_t h = hlb__fnv1a(HLB__FNV_START, f, sizeof f);
  char name[96];
  snprintf(name, sizeof name, "%s", cl->name && *cl->name ? cl->name : "unnamed");
  for (char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '.' || *c == '_' || *c == '-'))
      *c = '_';
  snprintf(out, cap, "%s-%08llx", name, (unsigned long long)(h & 0xffffffffull));
}

void hlb__model_pu_key(const hlb_exec_pu *p, unsigned cores, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s|%s|cores=%u", p->name, p->device_name, cores);
  if (p->throttle > 1 && n > 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, "|throttle=%g", p->throttle);
}

int hlb__model_path(const char *dir, const char *codelet_key, char *out, size_t cap) {
  char key[17];
  hlb__model_host(key, NULL, 0);
  int n = snprintf(out, cap, "%s/%s/%s.json", dir, key, codelet_key);
  if (n < 0 || (size_t)n >= cap) return hlb__error(HLB_EINVAL, "models: path too long in %s", dir);
  return 0;
}

/* ---- the set of samples ------------------------------------------------------------------- */

const hlb__stored_pu *hlb__model_find(const hlb__model_set *set, const char *key) {
  for (unsigned i = 0; i < set->n_pu; i++)
    if (!strcmp(set->pu[i].key, key)) return &set->pu[i];
  return NULL;
}

int hlb__model_append(hlb__model_set *set, const char *key, const hlb_sample *s, size_t n) {
  hlb__stored_pu *p = (hlb__stored_pu *)hlb__model_find(set, key);
  if (!p) {
    hlb__stored_pu *grown = realloc(set->pu, (set->n_pu + 1) * sizeof *grown);
    if (!grown) return hlb__error(HLB_ENOMEM, "models: out of memory");
    set->pu = grown;
    p = memset(&set->pu[set->n_pu++], 0, sizeof *p);
    snprintf(p->key, sizeof p->key, "%s", key);
  }
  size_t total = p->n + n, keep = total < HLB__MODEL_KEEP ? total : HLB__MODEL_KEEP;
  hlb_sample *all = malloc((total ? total : 1) * sizeof *all);
  if (!all) return hlb__error(HLB_ENOMEM, "models: out of memory");
  if (p->n) memcpy(all, p->s, p->n * sizeof *all);
  if (n) memcpy(all + p->n, s, n * sizeof *all);
  /* The newest `keep`: the oldest are forgotten, so the models follow a machine that changes. */
  memmove(all, all + (total - keep), keep * sizeof *all);
  free(p->s);
  p->s = all;
  p->n = keep;
  return 0;
}

void hlb__model_set_free(hlb__model_set *set) {
  for (unsigned i = 0; i < set->n_pu; i++)
    free(set->pu[i].s);
  free(set->pu);
  free(set->item_cost);
  memset(set, 0, sizeof *set);
}

int hlb__model_set_item_cost(hlb__model_set *set, const double *cost, unsigned n, size_t items,
                             int trusted) {
  double *copy = NULL;
  if (n) {
    copy = malloc(n * sizeof *copy);
    if (!copy) return hlb__error(HLB_ENOMEM, "models: out of memory");
    memcpy(copy, cost, n * sizeof *copy);
  }
  free(set->item_cost);
  set->item_cost = copy;
  set->n_item_cost = n;
  set->item_cost_items = n ? items : 0;
  set->item_cost_trusted = n && trusted;
  return 0;
}

const double *hlb__model_item_cost(const hlb__model_set *set, size_t n_items, unsigned *n) {
  int match = set->n_item_cost && set->item_cost_items == n_items;
  if (n) *n = match ? set->n_item_cost : 0;
  return match ? set->item_cost : NULL;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* One warning per file and process: a run of many passes must not repeat it. */
static pthread_mutex_t warned_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warned[64];
static unsigned n_warned;

__attribute__((format(printf, 2, 3))) static void warn_once(const char *path, const char *fmt,
                                                            ...) {
  uint64_t h = hlb__fnv1a(HLB__FNV_START, path, strlen(path));
  pthread_mutex_lock(&warned_mu);
  int seen = 0;
  for (unsigned i = 0; i < n_warned; i++)
    seen |= warned[i] == h;
  if (!seen && n_warned < 64) warned[n_warned++] = h;
  pthread_mutex_unlock(&warned_mu);
  if (seen) return;
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  fprintf(stderr, "hlb: models: %s: ignored (the run trains from its own blocks): %s\n", path, why);
}

static int read_samples(const cJSON *arr, hlb__model_set *set, const char *key) {
  size_t n = (size_t)cJSON_GetArraySize(arr), k = 0;
  hlb_sample *s = calloc(n ? n : 1, sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "models: out of memory");
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const cJSON *x = cJSON_GetArrayItem(e, 0), *c = cJSON_GetArrayItem(e, 1),
                *t = cJSON_GetArrayItem(e, 2);
    if (!cJSON_IsNumber(x) || !cJSON_IsNumber(c) || !cJSON_IsNumber(t)) continue;
    if (!(x->valuedouble >= 1 && x->valuedouble < 1e18)) continue; /* before the cast */
    hlb_sample one = {.block = {.count = (size_t)x->valuedouble},
                      .compute_s = c->valuedouble,
                      .transfer_s = t->valuedouble};
    if (hlb_sample_valid(&one)) s[k++] = one;
  }
  int rc = hlb__model_append(set, key, s, k);
  free(s);
  return rc;
}

/* The optional "item_cost": {"items": N, "trusted": B, "slices": [c, ...]}: 1 to
 * HLB_ITEM_COST_SLICES positive relative costs of equal slices of N items; B true when they
 * predicted a run (absent: false, on trial, as costs written before trust was kept). 0 (set
 * filled, or no such member), 1 when it is malformed (why says how), < 0 out of memory. */
static int read_item_cost(const cJSON *ic, hlb__model_set *set, char *why, size_t cap) {
  if (!ic) return 0;
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(ic, "items");
  const cJSON *slices = cJSON_GetObjectItemCaseSensitive(ic, "slices");
  const cJSON *trusted = cJSON_GetObjectItemCaseSensitive(ic, "trusted");
  if (trusted && !cJSON_IsBool(trusted))
    return snprintf(why, cap, "corrupt: \"item_cost\" \"trusted\" is not true or false"), 1;
  if (!cJSON_IsNumber(items) || !(items->valuedouble >= 1 && items->valuedouble < 1e18) ||
      items->valuedouble != floor(items->valuedouble))
    return snprintf(why, cap, "corrupt: \"item_cost\" without a whole \"items\" count >= 1"), 1;
  int n = cJSON_IsArray(slices) ? cJSON_GetArraySize(slices) : 0;
  if (n < 1 || n > (int)HLB_ITEM_COST_SLICES)
    return snprintf(why, cap, "corrupt: \"item_cost\" needs 1 to %u \"slices\", got %d",
                    HLB_ITEM_COST_SLICES, n),
           1;
  double v[HLB_ITEM_COST_SLICES];
  int k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, slices) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
      return snprintf(why, cap, "corrupt: \"item_cost\" slice %d is not a positive number", k), 1;
    v[k++] = e->valuedouble;
  }
  return hlb__model_set_item_cost(set, v, (unsigned)k, (size_t)items->valuedouble,
                                  cJSON_IsTrue(trusted));
}

/* 0 with the set filled; 1 when the file is not to be trusted (why says why); < 0 on
 * out of memory. */
static int parse_file(const cJSON *root, hlb__model_set *set, char *why, size_t cap) {
  char key[17];
  hlb__model_host(key, NULL, 0);
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "hlb_models");
  const cJSON *host = cJSON_GetObjectItemCaseSensitive(root, "host");
  const cJSON *pus = cJSON_GetObjectItemCaseSensitive(root, "pus");
  if (!cJSON_IsNumber(version))
    return snprintf(why, cap, "not an hlb model file (no \"hlb_models\" version)"), 1;
  if (version->valuedouble != HLB__MODEL_FILE_VERSION)
    return snprintf(why, cap, "stale: version %g, this hlb reads version %d", version->valuedouble,
                    HLB__MODEL_FILE_VERSION),
           1;
  if (!cJSON_IsString(host) || strcmp(host->valuestring, key))
    return snprintf(why, cap, "foreign: written on host %s, this is host %s",
                    cJSON_IsString(host) ? host->valuestring : "(none)", key),
           1;
  if (!cJSON_IsArray(pus)) return snprintf(why, cap, "corrupt: no \"pus\" array"), 1;
  int bad = read_item_cost(cJSON_GetObjectItemCaseSensitive(root, "item_cost"), set, why, cap);
  if (bad) return bad;
  const cJSON *p;
  cJSON_ArrayForEach(p, pus) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "pu");
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(p, "samples");
    if (!cJSON_IsString(name) || !cJSON_IsArray(samples))
      return snprintf(why, cap, "corrupt: a PU without \"pu\" or \"samples\""), 1;
    int rc = read_samples(samples, set, name->valuestring);
    if (rc) return rc;
    const cJSON *released = cJSON_GetObjectItemCaseSensitive(p, "released");
    hlb__stored_pu *got = (hlb__stored_pu *)hlb__model_find(set, name->valuestring);
    if (cJSON_IsString(released) && got)
      snprintf(got->released, sizeof got->released, "%s", released->valuestring);
    const cJSON *takes = cJSON_GetObjectItemCaseSensitive(p, "takes_cores");
    if (cJSON_IsString(takes) && got)
      snprintf(got->takes_cores, sizeof got->takes_cores, "%s", takes->valuestring);
  }
  return 0;
}

int hlb__model_parse(const char *text, hlb__model_set *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  cJSON *root = NULL;
  if (hlb__json_parse("model file", text, &root) != 0) {
    snprintf(why, cap, "corrupt: %s", hlb_last_error());
    hlb_clear_error();
    return 1;
  }
  int rc = parse_file(root, out, why, cap);
  cJSON_Delete(root);
  if (rc) hlb__model_set_free(out);
  return rc;
}

static int read_file(const char *path, hlb__model_set *out, int warn) {
  memset(out, 0, sizeof *out);
  struct stat st;
  if (stat(path, &st) != 0 && errno == ENOENT) return 0;
  cJSON *root = NULL;
  if (hlb__json_load_file(path, &root) != 0) {
    if (warn) warn_once(path, "corrupt: %s", hlb_last_error());
    hlb_clear_error();
    return 0;
  }
  char why[256] = "";
  int rc = parse_file(root, out, why, sizeof why);
  cJSON_Delete(root);
  if (rc < 0) {
    hlb__model_set_free(out);
    return rc;
  }
  if (rc > 0) {
    hlb__model_set_free(out);
    if (warn) warn_once(path, "%s", why);
  }
  return 0;
}

int hlb__model_read(const char *dir, const char *codelet_key, hlb__model_set *out) {
  memset(out, 0, sizeof *out);
  char path[4096];
  int rc = hlb__model_path(dir, codelet_key, path, sizeof path);
  return rc ? rc : read_file(path, out, 1);
}

/* ---- writing ------------------------------------------------------------------------------ */

static cJSON *to_json(const hlb__model_set *set, const char *codelet_name) {
  char key[17], desc[256];
  hlb__model_host(key, desc, sizeof desc);
  cJSON *root = cJSON_CreateObject(), *pus = cJSON_CreateArray();
  if (!root || !pus) {
    cJSON_Delete(root);
    cJSON_Delete(pus);
    return NULL;
  }
  cJSON_AddNumberToObject(root, "hlb_models", HLB__MODEL_FILE_VERSION);
  cJSON_AddStringToObject(root, "host", key);
  cJSON_AddStringToObject(root, "host_desc", desc);
  cJSON_AddStringToObject(root, "codelet", codelet_name ? codelet_name : "unnamed");
  cJSON_AddItemToObject(root, "pus", pus);
  if (set->n_item_cost) {
    /* Four significant digits: the costs are estimates, and the file stays a few kB. */
    double v[HLB_ITEM_COST_SLICES];
    unsigned n = set->n_item_cost < HLB_ITEM_COST_SLICES ? set->n_item_cost : HLB_ITEM_COST_SLICES;
    for (unsigned i = 0; i < n; i++) {
      char text[32];
      snprintf(text, sizeof text, "%.4g", set->item_cost[i]);
      v[i] = strtod(text, NULL);
    }
    cJSON *ic = cJSON_AddObjectToObject(root, "item_cost");
    if (ic) {
      cJSON_AddNumberToObject(ic, "items", (double)set->item_cost_items);
      cJSON_AddBoolToObject(ic, "trusted", set->item_cost_trusted);
      cJSON_AddItemToObject(ic, "slices", cJSON_CreateDoubleArray(v, (int)n));
    }
  }
  for (unsigned i = 0; i < set->n_pu; i++) {
    cJSON *p = cJSON_CreateObject(), *samples = cJSON_CreateArray();
    cJSON_AddItemToArray(pus, p);
    cJSON_AddStringToObject(p, "pu", set->pu[i].key);
    if (set->pu[i].released[0]) cJSON_AddStringToObject(p, "released", set->pu[i].released);
    if (set->pu[i].takes_cores[0])
      cJSON_AddStringToObject(p, "takes_cores", set->pu[i].takes_cores);
    cJSON_AddItemToObject(p, "samples", samples);
    for (size_t k = 0; k < set->pu[i].n; k++) {
      const hlb_sample *s = &set->pu[i].s[k];
      double v[3] = {(double)s->block.count, s->compute_s, s->transfer_s};
      cJSON_AddItemToArray(samples, cJSON_CreateDoubleArray(v, 3));
    }
  }
  return root;
}

/* Write `text` to `path` atomically (hlb__replace_file). */
static int replace_file(const char *path, const char *text) {
  if (hlb__replace_file(path, text, strlen(text)) != 0)
    return hlb__error(HLB_EIO, "models: %s: writing failed: %s", path, strerror(errno));
  return 0;
}

/* add's decisions carried into `now` (hlb__model_merge_pu). */
static void keep_decisions(hlb__stored_pu *now, const hlb__stored_pu *add) {
  /* The two contradict each other: the newest stands. */
  if (add->released[0]) {
    memcpy(now->released, add->released, sizeof now->released);
    now->takes_cores[0] = '\0';
  }
  if (add->takes_cores[0]) {
    memcpy(now->takes_cores, add->takes_cores, sizeof now->takes_cores);
    now->released[0] = '\0';
  }
}

int hlb__model_merge_pu(hlb__model_set *set, const hlb__stored_pu *add) {
  hlb__stored_pu *old = (hlb__stored_pu *)hlb__model_find(set, add->key);
  if (old && add->replace) old->n = 0;
  int rc = hlb__model_append(set, add->key, add->s, add->n);
  if (rc == 0) keep_decisions((hlb__stored_pu *)hlb__model_find(set, add->key), add);
  return rc;
}

int hlb__model_write(const char *dir, const char *codelet_key, const char *codelet_name,
                     const hlb__model_set *add) {
  char path[4096], host[17];
  int rc = hlb__model_path(dir, codelet_key, path, sizeof path);
  if (rc) return rc;
  hlb__model_host(host, NULL, 0);
  char folder[4096];
  snprintf(folder, sizeof folder, "%s/%s", dir, host);
  if (hlb__mkdir_p(folder) != 0)
    return hlb__error(HLB_EIO, "models: cannot create %s: %s", folder, strerror(errno));
  char lock_path[4200];
  snprintf(lock_path, sizeof lock_path, "%s/.lock", folder);
  int lock = open(lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    rc = hlb__error(HLB_EIO, "models: cannot lock %s: %s", lock_path, strerror(errno));
    if (lock >= 0) close(lock);
    return rc;
  }
  /* Under the lock: what is there now (another run may have written since this one read),
   * plus this run's samples. An untrusted file is replaced. */
  hlb__model_set merged;
  rc = read_file(path, &merged, 0);
  for (unsigned i = 0; rc == 0 && i < add->n_pu; i++)
    rc = hlb__model_merge_pu(&merged, &add->pu[i]);
  /* The newest item costs learnt stand (a run that learnt none leaves the stored ones). */
  if (rc == 0 && add->item_cost_learnt)
    rc = hlb__model_set_item_cost(&merged, add->item_cost, add->n_item_cost, add->item_cost_items,
                                  add->item_cost_trusted);
  cJSON *root = rc ? NULL : to_json(&merged, codelet_name);
  char *text = root ? cJSON_PrintUnformatted(root) : NULL;
  if (!rc && !text) rc = hlb__error(HLB_ENOMEM, "models: out of memory writing %s", path);
  if (!rc) rc = replace_file(path, text);
  cJSON_free(text);
  cJSON_Delete(root);
  hlb__model_set_free(&merged);
  flock(lock, LOCK_UN);
  close(lock);
  return rc;
}

/* ---- the public listing (include/hlb/models.h) -------------------------------------------- */

int hlb_models_dir(const char *dir, char *out, size_t cap) {
  return hlb__model_dir(dir, out, cap);
}

void hlb_models_host(char key[17], char *desc, size_t desc_cap) {
  hlb__model_host(key, desc, desc_cap);
}

static int ends_with_json(const char *name) {
  size_t n = strlen(name);
  return n > 5 && !strcmp(name + n - 5, ".json") && name[0] != '.';
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const hlb_stored_models *)a)->path, ((const hlb_stored_models *)b)->path);
}

/* The file's set as public per-PU arrays. */
static int export_set(const hlb__model_set *set, hlb_stored_models *m) {
  m->pus = calloc(set->n_pu ? set->n_pu : 1, sizeof *m->pus);
  if (!m->pus) return hlb__error(HLB_ENOMEM, "models: out of memory");
  m->n_pus = set->n_pu;
  m->item_cost_items = set->item_cost_items;
  m->item_cost_slices = set->n_item_cost;
  m->item_cost_trusted = set->item_cost_trusted;
  for (unsigned i = 0; i < set->n_pu; i++) {
    hlb_stored_pu *p = &m->pus[i];
    snprintf(p->pu, sizeof p->pu, "%s", set->pu[i].key);
    snprintf(p->released, sizeof p->released, "%s", set->pu[i].released);
    snprintf(p->takes_cores, sizeof p->takes_cores, "%s", set->pu[i].takes_cores);
    size_t n = set->pu[i].n ? set->pu[i].n : 1;
    p->items = malloc(n * sizeof *p->items);
    p->compute_s = malloc(n * sizeof *p->compute_s);
    p->transfer_s = malloc(n * sizeof *p->transfer_s);
    if (!p->items || !p->compute_s || !p->transfer_s)
      return hlb__error(HLB_ENOMEM, "models: out of memory");
    p->n = set->pu[i].n;
    for (size_t k = 0; k < p->n; k++) {
      p->items[k] = (double)set->pu[i].s[k].block.count;
      p->compute_s[k] = set->pu[i].s[k].compute_s;
      p->transfer_s[k] = set->pu[i].s[k].transfer_s;
    }
  }
  return 0;
}

/* Read one file for the listing: its PUs, or why runs ignore it. */
static int list_one(const char *name, hlb_stored_models *m) {
  const char *path = m->path;
  snprintf(m->key, sizeof m->key, "%.*s", (int)(strlen(name) - 5), name);
  cJSON *root = NULL;
  if (hlb__json_load_file(path, &root) != 0) {
    snprintf(m->problem, sizeof m->problem, "corrupt: %s", hlb_last_error());
    hlb_clear_error();
    return 0;
  }
  const cJSON *codelet = cJSON_GetObjectItemCaseSensitive(root, "codelet");
  snprintf(m->codelet, sizeof m->codelet, "%s",
           cJSON_IsString(codelet) ? codelet->valuestring : "?");
  hlb__model_set set = {0};
  int rc = parse_file(root, &set, m->problem, sizeof m->problem);
  cJSON_Delete(root);
  if (rc == 0) rc = export_set(&set, m);
  hlb__model_set_free(&set);
  return rc < 0 ? rc : 0;
}

int hlb_models_list(const char *dir, hlb_stored_models **out, size_t *n) {
  *out = NULL;
  *n = 0;
  char root[768], host[17], folder[1024];
  int rc = hlb__model_dir(dir, root, sizeof root);
  if (rc) return rc;
  hlb__model_host(host, NULL, 0);
  snprintf(folder, sizeof folder, "%s/%s", root, host);
  DIR *d = opendir(folder);
  if (!d)
    return errno == ENOENT ? 0 : hlb__error(HLB_EIO, "models: %s: %s", folder, strerror(errno));
  struct dirent *e;
  size_t cap = 0;
  while (rc == 0 && (e = readdir(d))) {
    if (!ends_with_json(e->d_name)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      hlb_stored_models *grown = realloc(*out, cap * sizeof *grown);
      if (!grown) {
        rc = hlb__error(HLB_ENOMEM, "models: out of memory");
        break;
      }
      *out = grown;
    }
    hlb_stored_models *m = memset(&(*out)[(*n)++], 0, sizeof **out);
    int len = snprintf(m->path, sizeof m->path, "%s/%s", folder, e->d_name);
    if (len < 0 || (size_t)len >= sizeof m->path) {
      snprintf(m->problem, sizeof m->problem, "path too long");
      continue;
    }
    rc = list_one(e->d_name, m);
  }
  closedir(d);
  if (rc) {
    hlb_models_list_free(*out, *n);
    *out = NULL;
    *n = 0;
    return rc;
  }
  if (*n) qsort(*out, *n, sizeof **out, by_path);
  return 0;
}

void hlb_models_list_free(hlb_stored_models *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) {
    for (unsigned p = 0; list[i].pus && p < list[i].n_pus; p++) {
      free(list[i].pus[p].items);
      free(list[i].pus[p].compute_s);
      free(list[i].pus[p].transfer_s);
    }
    free(list[i].pus);
  }
  free(list);
}

int hlb_models_clear(const char *dir, const char *codelet, size_t *removed) {
  if (removed) *removed = 0;
  hlb_stored_models *list = NULL;
  size_t n = 0;
  int rc = hlb_models_list(dir, &list, &n);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (codelet && strcmp(list[i].codelet, codelet)) continue;
    if (unlink(list[i].path) != 0 && errno != ENOENT)
      rc = hlb__error(HLB_EIO, "models: cannot remove %s: %s", list[i].path, strerror(errno));
    else if (removed)
      (*removed)++;
  }
  hlb_models_list_free(list, n);
  return rc;
}
