/* Parsing "name=value,name=value" policy parameters against an hlb_param_def table.
 * Shared by the block policies (balancer) and the repartition policies (SPMD). Pure. */
#ifndef HLB_POLICY_PARAMS_H
#define HLB_POLICY_PARAMS_H

#include "hlb/policy.h"

/* Fill values[0..n) with the defaults, then apply `text` (may be NULL or empty).
 * HLB_EINVAL naming `who`, the parameter and the problem for an unknown name, a value that
 * is not a number, or one outside [lo, hi]; the message lists the valid names. */
int hlb__params_parse(const char *who, const hlb_param_def *defs, unsigned n, const char *text,
                      double *values);

#endif
