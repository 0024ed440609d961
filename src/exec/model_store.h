/* Models kept across runs (docs/models.md): per host, per codelet, per PU, the samples of
 * earlier runs in a versioned JSON file under the model directory
 *
 *   DIR/HOST/CODELET-FOOTPRINT.json      DIR: hlb_exec_options.model_dir, $HLB_MODEL_DIR,
 *                                         $XDG_CACHE_HOME/hlb or ~/.cache/hlb
 *
 * HOST is a hash of what hwloc says about the machine (CPU model, cores, memory), so identical
 * nodes share their models; the device names go into each PU's key. FOOTPRINT is a hash of
 * the codelet's data sizes (bytes per item, shared buffers), as StarPU keys its models by a
 * symbol and a data footprint: matmul at n = 2048 and at n = 4096 are different files.
 * Samples, not coefficients, are stored, so a later run refits and the oldest are forgotten
 * (HLB__MODEL_KEEP per PU). A file that cannot be trusted (corrupt, another version, another
 * host) is ignored with one warning on stderr naming it. Writers merge under a lock and
 * replace the file by rename, so two runs writing at once lose nothing. */
#ifndef HLB_EXEC_MODEL_STORE_H
#define HLB_EXEC_MODEL_STORE_H

#include <stddef.h>

#include "hlb/balancer.h"
#include "hlb/exec.h"

#define HLB__MODEL_FILE_VERSION 1
/* Newest samples kept per PU: enough for the model's term selection (it scores subsets on
 * up to 256 samples) and small enough that old behaviour is forgotten within a few runs. */
#define HLB__MODEL_KEEP 64

typedef struct hlb__stored_pu {
  char key[320]; /* hlb__model_pu_key() */
  hlb_sample *s;
  size_t n;
  int replace; /* hlb__model_write: these samples replace the stored ones of this PU (the run
                  found them wrong), rather than being added to them */
  /* A device that a run released for not paying for the host core it holds: the reason, so
   * later runs leave it out from the start; "" otherwise. */
  char released[200];
  /* A device computing on the host's cores that a run found faster per core than the cpu PU
   * beside it: the reason, so later runs give it the cpu PU's cores and leave the cpu PU out
   * (exec.c, judge_takeover); "" otherwise. */
  char takes_cores[200];
} hlb__stored_pu;

typedef struct hlb__model_set {
  hlb__stored_pu *pu;
  unsigned n_pu;
  /* How the cost of an item varies along the item index, as the newest run that learnt it
   * found (docs/models.md, "Item costs"): n_item_cost relative costs of equal slices of
   * item_cost_items items; n_item_cost 0 when none is known. */
  double *item_cost;
  unsigned n_item_cost;
  size_t item_cost_items;
  /* 1 when the run that learnt them found the costs before them predictive (its balancer's
   * hlb_balancer_item_cost_trusted): a later run sizes by them; 0: they go on trial. */
  int item_cost_trusted;
  /* In hlb__model_write's `add`: 1 when the run learnt its item costs (they replace the
   * file's), 0 when it learnt nothing of them (the file's stay). */
  int item_cost_learnt;
} hlb__model_set;

/* Keep (a copy of) n relative costs of equal slices of `items` items in set, trusted or on
 * trial (item_cost_trusted); n 0: none. HLB_ENOMEM or 0. */
int hlb__model_set_item_cost(hlb__model_set *set, const double *cost, unsigned n, size_t items,
                             int trusted);

/* The set's item costs when they are of n_items items (*n their count), else NULL. */
const double *hlb__model_item_cost(const hlb__model_set *set, size_t n_items, unsigned *n);

/* The model directory: `dir` when given, else $HLB_MODEL_DIR, $XDG_CACHE_HOME/hlb or
 * $HOME/.cache/hlb. HLB_EINVAL when none can be found (no HOME). */
int hlb__model_dir(const char *dir, char *out, size_t cap);

/* This machine's key (16 hex digits) and a line describing it. */
void hlb__model_host(char key[17], char *desc, size_t desc_cap);

/* "NAME-FOOTPRINT" of a codelet: a file name (characters outside [A-Za-z0-9._-] become '_'). */
void hlb__model_codelet_key(const hlb_codelet *cl, char *out, size_t cap);

/* "NAME|DEVICE|cores=N[|throttle=F]": what makes a PU's speed its own. `cores`: the cores it
 * runs on (a cpu PU given a released device's cores runs on more than it was opened with). */
void hlb__model_pu_key(const hlb_exec_pu *p, unsigned cores, char *out, size_t cap);

/* The file's path: DIR/HOST/CODELET_KEY.json. */
int hlb__model_path(const char *dir, const char *codelet_key, char *out, size_t cap);

/* Read the stored samples of a codelet on this host. A missing file gives an empty set and 0;
 * a file that cannot be trusted gives an empty set, one warning on stderr and 0. Only out of
 * memory is an error. */
int hlb__model_read(const char *dir, const char *codelet_key, hlb__model_set *out);

/* Parse a model file's text: 0 with *out filled; 1 when runs would ignore it (why says why,
 * *out empty); < 0 out of memory. For the fuzzer and the listing. */
int hlb__model_parse(const char *text, hlb__model_set *out, char *why, size_t cap);

/* Add `add`'s samples to the stored ones (per PU key, newest HLB__MODEL_KEEP kept) under the
 * directory's lock; creates the directories. HLB_EIO with the path when it cannot. */
int hlb__model_write(const char *dir, const char *codelet_key, const char *codelet_name,
                     const hlb__model_set *add);

/* Entry `add` merged into `set`: its samples appended to those of its key (which they replace
 * when add->replace), and its decisions about the PU (released, takes_cores) kept: a decision
 * made stays until `hlb models clear` or a run decides the other way (the newest stands); an
 * entry without one keeps the old. */
int hlb__model_merge_pu(hlb__model_set *set, const hlb__stored_pu *add);

/* The samples of PU key `key`, or NULL. */
const hlb__stored_pu *hlb__model_find(const hlb__model_set *set, const char *key);

/* Append samples to PU `key` of the set (creating it), keeping the newest HLB__MODEL_KEEP. */
int hlb__model_append(hlb__model_set *set, const char *key, const hlb_sample *s, size_t n);

void hlb__model_set_free(hlb__model_set *set);

#endif
