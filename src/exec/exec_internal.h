/* Internal state of the executor, shared by exec.c (runs) and pus.c (creation). */
#ifndef HLB_EXEC_INTERNAL_H
#define HLB_EXEC_INTERNAL_H

#include "exec/backend.h"
#include "hlb/exec.h"

struct hlb_executor {
  unsigned n;
  hlb_exec_pu pu[HLB_EXEC_MAX_PUS];
  const hlb__backend_ops *ops[HLB_EXEC_MAX_PUS];
  void *dev[HLB_EXEC_MAX_PUS];
  /* Items per second of busy time each PU reached in the previous run (0 = not known):
   * the next run's speed hints, so knowledge carries over between iterations. */
  double rate[HLB_EXEC_MAX_PUS];
  /* PUs released because they did not pay for the host core they hold (exec.c,
   * release_if_weak_locked), with the reason; later runs leave them out, and the cpu PU keeps
   * the cores it was given back. */
  int released[HLB_EXEC_MAX_PUS];
  char release_reason[HLB_EXEC_MAX_PUS][160];
  unsigned cores_given[HLB_EXEC_MAX_PUS]; /* cpu PU: cores it got back from released PUs */
};

#endif
