/* Models kept across runs (docs/models.md): the samples that runs of the executor store per
 * host, codelet and PU (hlb_exec_options.models), for tools that list, show or clear them.
 *
 * Thread safety: these functions touch only files; writers of the same directory are
 * serialised by a lock file, so they may run while a run stores its samples.
 */
#ifndef HLB_MODELS_H
#define HLB_MODELS_H

#include <stddef.h>

#include "hlb/export.h"

HLB_BEGIN_DECLS

/* One PU's stored samples: block size (items), compute and transfer seconds of each. */
typedef struct hlb_stored_pu {
  char pu[320];       /* "NAME|DEVICE|cores=N[|throttle=F]" */
  char released[200]; /* why a run released this device (not worth its host core); "" */
  /* why later runs give this device the cpu PU's cores (a run found it faster per core); "" */
  char takes_cores[200];
  size_t n;
  double *items, *compute_s, *transfer_s;
} hlb_stored_pu;

/* One file: a codelet (name and data footprint) on this host. */
typedef struct hlb_stored_models {
  char path[1024];
  char codelet[96];  /* the codelet's name */
  char key[128];     /* NAME-FOOTPRINT, the file's name without .json */
  char problem[320]; /* why the file is ignored by runs (corrupt, stale, foreign); "" */
  unsigned n_pus;
  hlb_stored_pu *pus;
  /* Item costs stored with the models (docs/models.md, "Item costs"): relative costs of
   * item_cost_slices equal slices of item_cost_items items, which a later run over as many
   * items sizes its blocks by; 0 and 0 when none are stored. */
  size_t item_cost_items;
  unsigned item_cost_slices;
  /* 1 when they predicted the run that stored them better than item counts (a later run
   * sizes its blocks by them); 0 when they are on trial (a later run sizes by count and
   * scores them: docs/executor.md, "Items that do not cost the same"). */
  int item_cost_trusted;
} hlb_stored_models;

/* The model directory in use: `dir`, else $HLB_MODEL_DIR, $XDG_CACHE_HOME/hlb, ~/.cache/hlb. */
HLB_EXTERN int hlb_models_dir(const char *dir, char *out, size_t cap);

/* This host's key (the folder under the model directory) and a description of the machine. */
HLB_EXTERN void hlb_models_host(char key[17], char *desc, size_t desc_cap);

/* Every model file of this host, sorted by name; files runs would ignore are listed with
 * their problem. *out is NULL and *n 0 when there are none. */
HLB_EXTERN int hlb_models_list(const char *dir, hlb_stored_models **out, size_t *n);
HLB_EXTERN void hlb_models_list_free(hlb_stored_models *list, size_t n);

/* Remove this host's model files, or only those of codelet `codelet` (its name); *removed
 * (may be NULL) counts them. HLB_EIO naming the file that could not be removed. */
HLB_EXTERN int hlb_models_clear(const char *dir, const char *codelet, size_t *removed);

HLB_END_DECLS

#endif
