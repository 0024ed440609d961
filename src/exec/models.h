/* A run's models (exec/models.c): the priors it starts from and where its samples go. */
#ifndef HLB_EXEC_MODELS_H
#define HLB_EXEC_MODELS_H

#include "exec/exec_internal.h"
#include "exec/model_store.h"

typedef struct hlb__exec_models {
  int mode;        /* hlb_models_mode, OFF when no model directory could be found */
  int from;        /* hlb_models_from */
  char key[128];   /* hlb__model_codelet_key() */
  char dir[768];   /* the model directory (mode != OFF) */
  char path[1024]; /* the codelet's file (mode != OFF) */
  char error[512]; /* why the files could not be used or written */
  hlb__model_set priors;
  /* Per executor PU: its key as the run starts (hlb__exec_models_priors). */
  char (*pu_key)[320];
  /* Per balancer PU: its priors (pointers into `priors`), for hlb_balancer_config.prior. */
  const hlb_sample **per_bpu;
  size_t *n_per_bpu;
} hlb__exec_models;

/* hlb_exec_options_default's models: $HLB_MODELS, else off (a bad value is said on stderr). */
int hlb__exec_models_default(void);

/* Before the PUs are prepared: what is known of the codelet, from this executor's previous
 * run of it, else (READ) from the stored file. */
int hlb__exec_models_begin(hlb_executor *ex, const hlb_codelet *cl, const hlb_exec_options *opt,
                           hlb__exec_models *m);

/* The key of executor PU i with the cores it runs on now. */
void hlb__exec_pu_key(const hlb_executor *ex, unsigned i, char *out, size_t cap);

/* Why an earlier run found executor PU i (a device computing on the host's cores) faster per
 * core than the cpu PU, so that it takes the cpu PU's cores, or NULL. */
const char *hlb__exec_models_takes_cores(const hlb_executor *ex, const hlb__exec_models *m,
                                         unsigned i);
/* Items per second of executor PU i opened alone on `cores` cores (whatever its device name
 * then: a sub-device's name differs), from the robust line through its newest stored blocks
 * (the cost per block left out, each pair weighed by the gap between its sizes:
 * hlb__judge_gap_slope); 0 when fewer than min_blocks (and at
 * least one) are stored. */
double hlb__exec_models_rate_on(const hlb_executor *ex, const hlb__exec_models *m, unsigned i,
                                unsigned cores, size_t min_blocks);
/* Why an earlier run released executor PU i (a device not worth its host core), or NULL. */
const char *hlb__exec_models_released(const hlb_executor *ex, const hlb__exec_models *m,
                                      unsigned i);

/* Before the balancer: the priors of the nb PUs that take part (bidx: their executor index). */
int hlb__exec_models_priors(hlb_executor *ex, hlb__exec_models *m, const unsigned *bidx,
                            unsigned nb);

/* After the run: its samples into the executor's memory and (WRITE) the file; the stats
 * (when given, after they were filled) say where the models came from and what was forgotten.
 * A failure to store is kept in stats->model_error and hlb_last_error(), never the run's. */
void hlb__exec_models_end(hlb_executor *ex, const hlb_codelet *cl, hlb__exec_models *m,
                          const hlb_balancer *b, const unsigned *bidx, unsigned nb, size_t n_items,
                          hlb_exec_stats *stats);

/* The item cost density the run starts from: what the executor's last run of this codelet
 * learnt, else (READ) what the stored file keeps, when it was of n_items items too (*n values),
 * else NULL; *trusted: whether they predicted the run that learnt them (else on trial). */
const double *hlb__exec_item_cost(const hlb__exec_models *m, size_t n_items, unsigned *n,
                                  int *trusted);

void hlb__exec_models_free(hlb__exec_models *m);
void hlb__exec_memo_free(hlb_executor *ex);

#endif
