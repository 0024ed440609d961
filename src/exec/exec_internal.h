/* Internal state of the executor, shared by exec.c (runs) and pus.c (creation). */
#ifndef HLB_EXEC_INTERNAL_H
#define HLB_EXEC_INTERNAL_H

#include "exec/backend.h"
#include "exec/model_store.h"
#include "hlb/exec.h"

/* What earlier runs of an executor measured, per codelet (exec/models.c). */
typedef struct hlb__exec_memo {
  char key[128];
  hlb__model_set set;
  /* The item cost density the last run of this codelet learnt (docs/executor.md, "Items that
   * do not cost the same"), for the next run over as many items: HLB_ITEM_COST_SLICES values,
   * or NULL. */
  double *item_cost;
  size_t item_cost_items;
} hlb__exec_memo;

struct hlb_executor {
  unsigned n;
  /* Each array has n entries, allocated by hlb_executor_create: no fixed limit on PUs. */
  hlb_exec_pu *pu;
  const hlb__backend_ops **ops;
  void **dev;
  /* Items per second of busy time each PU reached in the previous run (0 = not known):
   * the next run's speed hints, so knowledge carries over between iterations. */
  double *rate;
  /* PUs released because they did not pay for the host core they hold (exec.c,
   * release_if_weak_locked), with the reason; later runs leave them out, and the cpu PU keeps
   * the cores it was given back. */
  int *released;
  char (*release_reason)[160];
  unsigned *cores_given; /* cpu PU: cores it got back from released PUs */
  hlb__exec_memo *memo;  /* per codelet: the samples of this executor's runs */
  unsigned n_memo;
};

#endif
