/* A run's models: where they start (the previous run of the same codelet on this executor, or
 * the stored files) and where this run's samples go (the executor's memory, and with
 * HLB_MODELS_WRITE the files). model_store.c reads and writes the files. */
#include "exec/models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/options_internal.h"
#include "exec/judge.h"
#include "hlb/model.h"
#include "hlb/policy.h"

static const char *const mode_names[] = {"off", "read", "write", "on"};

/* Copy text, cut to the destination (paths are checked for length where they are built). */
static void copy_text(char *dst, size_t cap, const char *src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

int hlb_models_mode_parse(const char *text, int *mode) {
  for (int m = 0; m < 4; m++)
    if (text && !strcmp(text, mode_names[m])) return *mode = m, 0;
  return hlb__error(HLB_EINVAL, "models: expected on, read, write or off, got '%s'",
                    text ? text : "(null)");
}

const char *hlb_models_mode_name(int mode) {
  return mode >= 0 && mode < 4 ? mode_names[mode] : "?";
}

int hlb__exec_models_default(void) {
  int mode = HLB_MODELS_OFF;
  const char *env = hlb__option_env("models");
  if (env && hlb_models_mode_parse(env, &mode) != 0) {
    fprintf(stderr, "hlb: HLB_MODELS=%s: expected on, read, write or off; models are off\n", env);
    hlb_clear_error();
    mode = HLB_MODELS_OFF;
  }
  return mode;
}

static hlb__exec_memo *memo_find(hlb_executor *ex, const char *key) {
  for (unsigned i = 0; i < ex->n_memo; i++)
    if (!strcmp(ex->memo[i].key, key)) return &ex->memo[i];
  return NULL;
}

/* The samples, the devices' decisions (released, takes_cores: the next run of the executor acts
 * on them as a new process does on the file's) and the item costs of src. */
static int copy_set(hlb__model_set *dst, const hlb__model_set *src) {
  memset(dst, 0, sizeof *dst);
  for (unsigned i = 0; i < src->n_pu; i++) {
    int rc = hlb__model_merge_pu(dst, &src->pu[i]);
    if (rc) return rc;
  }
  return hlb__model_set_item_cost(dst, src->item_cost, src->n_item_cost, src->item_cost_items,
                                  src->item_cost_trusted);
}

void hlb__exec_pu_key(const hlb_executor *ex, unsigned i, char *out, size_t cap) {
  hlb__model_pu_key(&ex->pu[i], ex->pu[i].cores + ex->cores_given[i], out, cap);
}

int hlb__exec_models_begin(hlb_executor *ex, const hlb_codelet *cl, const hlb_exec_options *opt,
                           hlb__exec_models *m) {
  memset(m, 0, sizeof *m);
  m->mode = opt->models;
  hlb__model_codelet_key(cl, m->key, sizeof m->key);
  m->pu_key = calloc(ex->n, sizeof *m->pu_key);
  if (!m->pu_key) return hlb__error(HLB_ENOMEM, "models: out of memory");
  if (m->mode && hlb__model_dir(opt->model_dir, m->dir, sizeof m->dir) != 0) {
    /* No place for files: the run goes on without them, and says why in its stats. */
    copy_text(m->error, sizeof m->error, hlb_last_error());
    hlb_clear_error();
    m->mode = HLB_MODELS_OFF;
  }
  if (m->mode) hlb__model_path(m->dir, m->key, m->path, sizeof m->path);
  const hlb__exec_memo *seen = memo_find(ex, m->key);
  if (seen) {
    m->from = HLB_MODELS_PREVIOUS_RUN;
    return copy_set(&m->priors, &seen->set);
  }
  if (!(m->mode & HLB_MODELS_READ)) return 0;
  m->from = HLB_MODELS_STORED;
  return hlb__model_read(m->dir, m->key, &m->priors);
}

/* Executor PU i's entry among the stored samples the run started from, or NULL. */
static const hlb__stored_pu *stored_pu(const hlb_executor *ex, const hlb__exec_models *m,
                                       unsigned i) {
  char key[320];
  hlb__exec_pu_key(ex, i, key, sizeof key);
  return hlb__model_find(&m->priors, key);
}

const char *hlb__exec_models_released(const hlb_executor *ex, const hlb__exec_models *m,
                                      unsigned i) {
  const hlb__stored_pu *p = stored_pu(ex, m, i);
  return p && p->released[0] ? p->released : NULL;
}

const char *hlb__exec_models_takes_cores(const hlb_executor *ex, const hlb__exec_models *m,
                                         unsigned i) {
  const hlb__stored_pu *p = stored_pu(ex, m, i);
  return p && p->takes_cores[0] ? p->takes_cores : NULL;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* 1 when stored key `stored` is `key` ("NAME|DEVICE|cores=N[|throttle=F]") but for any device
 * name: `name_len` covers "NAME|", the rest of `key` after it is the tail "|cores=N...". */
static int same_pu_any_device(const char *stored, const char *key, size_t name_len) {
  const char *tail = key + name_len;
  size_t len = strlen(stored), tail_len = strlen(tail);
  return strncmp(stored, key, name_len) == 0 && len >= name_len + tail_len &&
         strcmp(stored + len - tail_len, tail) == 0 &&
         strchr(stored + name_len, '|') == stored + len - tail_len;
}

double hlb__exec_models_rate_on(const hlb_executor *ex, const hlb__exec_models *m, unsigned i,
                                unsigned cores, size_t min_blocks) {
  /* Its key on `cores` cores with an empty device name: "NAME||cores=N[|throttle=F]"; any
   * stored key with that head and tail matches (a CPU-type OpenCL device's name says how many
   * compute units it was opened with). */
  hlb_exec_pu p = ex->pu[i];
  p.device_name[0] = '\0';
  char key[320];
  hlb__model_pu_key(&p, cores, key, sizeof key);
  size_t name_len = strlen(p.name) + 1; /* "NAME|" */
  /* Seconds per item of the robust (Theil-Sen) line through its newest stored blocks (the
   * window the judge reads), the cost per block left out (greedy's many small blocks and hlb's
   * one block a pass ran the same kernel), or the median of their seconds per item: a delay
   * only ever slows a block down, and one such block must not decide. The least-squares line
   * followed it: the cpu PU's k-means blocks of 10^5 points on both cores took 0.6-0.7 ms, and
   * 5.5 ms (or 9.2) in a pass right after PoCL had run alone on those cores; read through two
   * of them, the cpu PU did 1.1e7 points per second, and PoCL (3.7e7) was given its cores
   * again in every later run. Each pair's slope weighs as the gap between its sizes
   * (hlb__judge_gap_slope): a run alone is one large block a pass, and a trial cut after blocks
   * of 1 to 32768 points is read from its largest, not from its launches. */
  double x[HLB__JUDGE_ROBUST_POINTS], y[HLB__JUDGE_ROBUST_POINTS];
  size_t seen = 0; /* the newest overwrite the oldest: neither estimate depends on the order */
  for (unsigned k = 0; k < m->priors.n_pu; k++) {
    const hlb__stored_pu *s = &m->priors.pu[k];
    if (!same_pu_any_device(s->key, key, name_len)) continue;
    for (size_t j = 0; j < s->n; j++) {
      double t = s->s[j].compute_s + s->s[j].transfer_s;
      if (s->s[j].block.count == 0 || !(t > 0) || !isfinite(t)) continue;
      x[seen % HLB__JUDGE_ROBUST_POINTS] = (double)s->s[j].block.count;
      y[seen++ % HLB__JUDGE_ROBUST_POINTS] = t;
    }
  }
  if (seen == 0 || seen < min_blocks) return 0;
  size_t used = seen < HLB__JUDGE_ROBUST_POINTS ? seen : HLB__JUDGE_ROBUST_POINTS;
  int line = 0;
  double per_item = hlb__judge_gap_slope(x, y, used, &line);
  /* Without a line, of an even count the faster of the middle two (the judge takes their mean):
   * of two blocks, the one not delayed. */
  if (!line) {
    for (size_t j = 0; j < used; j++)
      y[j] /= x[j];
    qsort(y, used, sizeof *y, by_value);
    per_item = y[(used - 1) / 2];
  }
  return per_item > 0 ? 1.0 / per_item : 0;
}

int hlb__exec_models_priors(hlb_executor *ex, hlb__exec_models *m, const unsigned *bidx,
                            unsigned nb) {
  m->per_bpu = calloc(nb ? nb : 1, sizeof *m->per_bpu);
  m->n_per_bpu = calloc(nb ? nb : 1, sizeof *m->n_per_bpu);
  if (!m->per_bpu || !m->n_per_bpu) return hlb__error(HLB_ENOMEM, "models: out of memory");
  for (unsigned i = 0; i < ex->n; i++)
    hlb__exec_pu_key(ex, i, m->pu_key[i], sizeof m->pu_key[i]);
  size_t found = 0;
  for (unsigned j = 0; j < nb; j++) {
    const hlb__stored_pu *p = hlb__model_find(&m->priors, m->pu_key[bidx[j]]);
    m->per_bpu[j] = p ? p->s : NULL;
    m->n_per_bpu[j] = p ? p->n : 0;
    found += m->n_per_bpu[j];
  }
  if (!found) m->from = HLB_MODELS_TRAINED;
  return 0;
}

/* This run's finished blocks of balancer PU j, from the decision log. */
static int run_samples(const hlb_balancer *b, const hlb_decision *log, size_t n_log, unsigned j,
                       double from_s, double to_s, hlb_sample **out, size_t *n) {
  size_t count = 0;
  for (size_t k = 0; k < n_log; k++)
    count += log[k].pu == j && log[k].outcome == HLB_OUTCOME_DONE;
  *out = calloc(count ? count : 1, sizeof **out);
  if (!*out) return hlb__error(HLB_ENOMEM, "models: out of memory");
  *n = 0;
  for (size_t k = 0; k < n_log; k++) {
    const hlb_decision *d = &log[k];
    if (d->pu != j || d->outcome != HLB_OUTCOME_DONE) continue;
    if (!(d->time_s >= from_s && d->time_s < to_s)) continue; /* granted outside the window */
    hlb_sample s;
    if (hlb_balancer_log_sample(b, d, &s)) (*out)[(*n)++] = s; /* sized in average items */
  }
  return 0;
}

/* Stored samples that this run's blocks contradict are replaced, not added to. The policy
 * (hlb: prior_check, prior_tolerance) judges them after its first blocks while the run goes
 * on; a run too short for that is judged here, at its end, by the same rule: the median of
 * measured / predicted time over the run's blocks after the PU's first (which may hold a
 * warm-up; a run of one block is judged on it), predicted by a model fitted to the priors
 * alone, beyond this factor either way. 1.5: hlb's prior_tolerance default. Only blocks
 * within a factor PRIOR_REACH of the priors' sizes count: far outside them a model fitted to
 * small blocks says little (the priors are not wrong, they are silent there). */
#define PRIOR_REACH 2.0
#define PRIOR_TOLERANCE 1.5

static int priors_contradicted(const hlb_sample *prior, size_t n_prior, const hlb_sample *run,
                               size_t n_run) {
  double x_max = 0, x_min = INFINITY;
  for (size_t k = 0; k < n_prior; k++) {
    x_max = fmax(x_max, (double)prior[k].block.count);
    x_min = fmin(x_min, (double)prior[k].block.count);
  }
  hlb_model *m = NULL;
  if (!n_run || !(x_max >= 1) || hlb_model_create(x_max, NULL, &m) != 0) return 0;
  for (size_t k = 0; k < n_prior; k++)
    hlb_model_add(m, (double)prior[k].block.count, prior[k].compute_s, prior[k].transfer_s);
  /* Too few sizes to fit a curve: the priors' mean rate stands for them. */
  int fitted = hlb_model_fit(m, x_max) == 0;
  double items = 0, seconds = 0;
  for (size_t k = 0; k < n_prior; k++) {
    items += (double)prior[k].block.count;
    seconds += prior[k].compute_s + prior[k].transfer_s;
  }
  double *ratio = malloc(n_run * sizeof *ratio);
  size_t n = 0;
  if (ratio && (fitted || seconds > 0))
    for (size_t k = 0; k < n_run; k++) {
      double x = (double)run[k].block.count;
      if (x > PRIOR_REACH * x_max || x < x_min / PRIOR_REACH) continue;
      double t = fitted ? hlb_model_predict(m, x) : x * seconds / items;
      if (t > 0 && isfinite(t)) ratio[n++] = (run[k].compute_s + run[k].transfer_s) / t;
    }
  int wrong = 0;
  if (n) {
    qsort(ratio, n, sizeof *ratio, by_value);
    double median = n % 2 ? ratio[n / 2] : 0.5 * (ratio[n / 2 - 1] + ratio[n / 2]);
    wrong = median > PRIOR_TOLERANCE || median < 1.0 / PRIOR_TOLERANCE;
  }
  free(ratio);
  hlb_model_destroy(m);
  hlb_clear_error(); /* a prior set too small to fit is not an error of the run */
  return wrong;
}

/* Executor PU i's (balancer PU j's) blocks granted after its cores last changed, under the key
 * of the cores it ended with. */
static int append_after_change(const hlb_executor *ex, const hlb_balancer *b,
                               const hlb_decision *log, size_t n_log, unsigned i, unsigned j,
                               hlb__model_set *fresh) {
  char key[320];
  hlb__exec_pu_key(ex, i, key, sizeof key);
  hlb_sample *s = NULL;
  size_t n = 0;
  int rc = run_samples(b, log, n_log, j, ex->cores_changed_s[i][1], INFINITY, &s, &n);
  if (!rc && n) rc = hlb__model_append(fresh, key, s, n);
  free(s);
  return rc;
}

/* The samples this run adds, per PU key; a PU whose priors were forgotten replaces them. */
static int collect(hlb_executor *ex, const hlb__exec_models *m, const hlb_balancer *b,
                   const unsigned *bidx, unsigned nb, hlb__model_set *fresh, int *forgot) {
  const hlb_decision *log = NULL;
  size_t n_log = hlb_balancer_log(b, &log);
  for (unsigned j = 0; j < nb; j++) {
    size_t primed = hlb_balancer_primed(b, j);
    /* The policy forgot the priors (hlb_model_clear). (Counting the model's samples against
     * the priors missed a forgetting followed by more blocks than there were priors.) */
    forgot[j] = primed > 0 && hlb_model_clears(hlb_balancer_model(b, j)) > 0;
    hlb_sample *s = NULL;
    size_t n = 0;
    const char *key = m->pu_key[bidx[j]];
    const double *changed = ex->cores_changed_s[bidx[j]];
    /* Blocks granted once its cores changed ran on more of them: not under the key of the
     * cores it started with (hlb__exec_models_rate_on read a cpu PU given a core mid-run as
     * 1.5x faster per core than it is). */
    int rc =
        run_samples(b, log, n_log, j, -INFINITY, isnan(changed[0]) ? INFINITY : changed[0], &s, &n);
    /* Its first block left out when it did more, as the policy leaves it out of its check: it
     * may carry one-time work (a GPU library's set-up: 43 ms for an H100's first one-row
     * matmul block). A run of one block is judged on it: there is nothing else. */
    const hlb_sample *judged = n > 1 ? s + 1 : s;
    if (!rc && primed && !forgot[j])
      forgot[j] = priors_contradicted(m->per_bpu[j], m->n_per_bpu[j], judged, n > 1 ? n - 1 : n);
    if (!rc) rc = hlb__model_append(fresh, key, s, n);
    free(s);
    if (!rc && !isnan(changed[1])) rc = append_after_change(ex, b, log, n_log, bidx[j], j, fresh);
    if (rc) return rc;
    hlb__stored_pu *p = (hlb__stored_pu *)hlb__model_find(fresh, key);
    /* Samples in other units than the stored ones (item costs newly trusted, or found
     * wanting) replace them too: one curve is never fitted to counts and costs at once. */
    p->replace = forgot[j] || hlb_balancer_samples_rescaled(b);
    /* Released in this run (not before it): later runs leave the device out from the start.
     * Not a trial cut short (on trial and released: exec.c, cut_trial_locked): its key is the
     * device's on every core, where that is no release of a mixed run; its samples say how it
     * did there (read as a release, it once left a device that held every core out of the next
     * pass, and no PU in it). */
    if (ex->released[bidx[j]] && !ex->on_trial[bidx[j]])
      copy_text(p->released, sizeof p->released, ex->release_reason[bidx[j]]);
    /* Faster per core than the cpu PU in this run: later runs give it the cpu PU's cores. */
    if (ex->takes_cores[bidx[j]][0])
      copy_text(p->takes_cores, sizeof p->takes_cores, ex->takes_cores[bidx[j]]);
  }
  return 0;
}

/* The releases hand_back_tried made before this run (hlb_executor.release_unstored), into
 * `fresh` under the keys of the cores the devices hold again: they took no part in the run. */
static int store_hand_backs(hlb_executor *ex, hlb__model_set *fresh) {
  for (unsigned i = 0; i < ex->n; i++) {
    int unstored = ex->release_unstored[i];
    ex->release_unstored[i] = 0;
    if (!unstored || !ex->released[i]) continue; /* given the cores again before the run */
    char key[320];
    hlb__exec_pu_key(ex, i, key, sizeof key);
    int rc = hlb__model_append(fresh, key, NULL, 0);
    if (rc) return rc;
    hlb__stored_pu *p = (hlb__stored_pu *)hlb__model_find(fresh, key);
    copy_text(p->released, sizeof p->released, ex->release_reason[i]);
  }
  return 0;
}

/* The executor's memory of this codelet: what it started from plus this run's samples. */
static int remember(hlb_executor *ex, const hlb__exec_models *m, const hlb__model_set *fresh) {
  hlb__exec_memo *e = memo_find(ex, m->key);
  if (!e) {
    hlb__exec_memo *grown = realloc(ex->memo, (ex->n_memo + 1) * sizeof *grown);
    if (!grown) return hlb__error(HLB_ENOMEM, "models: out of memory");
    ex->memo = grown;
    e = memset(&ex->memo[ex->n_memo++], 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", m->key);
    int rc = copy_set(&e->set, &m->priors);
    if (rc) return rc;
  }
  for (unsigned i = 0; i < fresh->n_pu; i++) {
    int rc = hlb__model_merge_pu(&e->set, &fresh->pu[i]);
    if (rc) return rc;
  }
  /* The item costs this run learnt: the next run of this executor over as many items sizes
   * its blocks by them, as the next pass of an iterative code does (so does a new process,
   * from the file: hlb__model_write). A run that learnt nothing leaves the last ones. */
  if (fresh->item_cost_learnt)
    return hlb__model_set_item_cost(&e->set, fresh->item_cost, fresh->n_item_cost,
                                    fresh->item_cost_items, fresh->item_cost_trusted);
  return 0;
}

/* What the run learnt of its items' costs, into `fresh` (nothing when no block could teach it:
 * every block failed or was mistimed). */
static int learn_item_cost(const hlb_balancer *b, size_t n_items, hlb__model_set *fresh) {
  double *cost = malloc(HLB_ITEM_COST_SLICES * sizeof *cost);
  if (!cost) return hlb__error(HLB_ENOMEM, "models: out of memory");
  int rc = 0;
  if (hlb_balancer_item_cost(b, cost, HLB_ITEM_COST_SLICES) == 0) {
    rc = hlb__model_set_item_cost(fresh, cost, HLB_ITEM_COST_SLICES, n_items,
                                  hlb_balancer_item_cost_trusted(b));
    fresh->item_cost_learnt = rc == 0;
  } else {
    hlb_clear_error();
  }
  free(cost);
  return rc;
}

void hlb__exec_models_end(hlb_executor *ex, const hlb_codelet *cl, hlb__exec_models *m,
                          const hlb_balancer *b, const unsigned *bidx, unsigned nb, size_t n_items,
                          hlb_exec_stats *stats) {
  hlb__model_set fresh = {0};
  int *forgot = calloc(nb ? nb : 1, sizeof *forgot);
  int rc = forgot ? collect(ex, m, b, bidx, nb, &fresh, forgot)
                  : hlb__error(HLB_ENOMEM, "models: out of memory");
  if (!rc) rc = store_hand_backs(ex, &fresh);
  if (!rc) rc = learn_item_cost(b, n_items, &fresh);
  if (!rc) rc = remember(ex, m, &fresh);
  if (!rc && (m->mode & HLB_MODELS_WRITE)) rc = hlb__model_write(m->dir, m->key, cl->name, &fresh);
  if (rc && !m->error[0]) snprintf(m->error, sizeof m->error, "%s", hlb_last_error());
  if (stats && stats->per_pu) {
    stats->models_from = m->from;
    copy_text(stats->model_file, sizeof stats->model_file, m->path);
    copy_text(stats->model_error, sizeof stats->model_error, m->error);
    for (unsigned j = 0; j < nb && forgot; j++) {
      stats->per_pu[bidx[j]].prior_samples = hlb_balancer_primed(b, j);
      stats->per_pu[bidx[j]].priors_forgotten = forgot[j];
    }
  }
  free(forgot);
  hlb__model_set_free(&fresh);
}

void hlb__exec_models_free(hlb__exec_models *m) {
  hlb__model_set_free(&m->priors);
  free(m->pu_key);
  free(m->per_bpu);
  free(m->n_per_bpu);
  memset(m, 0, sizeof *m);
}

const double *hlb__exec_item_cost(const hlb__exec_models *m, size_t n_items, unsigned *n,
                                  int *trusted) {
  const double *c = hlb__model_item_cost(&m->priors, n_items, n);
  *trusted = c && m->priors.item_cost_trusted;
  return c;
}

void hlb__exec_memo_free(hlb_executor *ex) {
  for (unsigned i = 0; i < ex->n_memo; i++)
    hlb__model_set_free(&ex->memo[i].set);
  free(ex->memo);
  ex->memo = NULL;
  ex->n_memo = 0;
}
