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
};

#endif
