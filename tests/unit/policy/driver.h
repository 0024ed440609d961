/* A small deterministic event-driven driver for policy tests: PUs with known linear time
 * curves (fixed + per-item seconds), optional speed changes at a given time, lost blocks and
 * bad measurements, driven through the real balancer. Every grant and every HLB_WAIT is
 * recorded so tests can check what the policy decided and when.
 */
#ifndef HLB_TESTS_POLICY_DRIVER_H
#define HLB_TESTS_POLICY_DRIVER_H

#include <stddef.h>

#include "hlb/balancer.h"

typedef struct tpu {
  double fixed_s;      /* seconds per block */
  double per_item_s;   /* seconds per item */
  double change_at;    /* from this time on (block start), times are multiplied by factor */
  double factor;       /* 0 or 1: no change */
  unsigned nan_every;  /* every k-th block of this PU reports a NaN compute time; 0 = never */
  unsigned fail_every; /* every k-th block of this PU is lost; 0 = never */
  double noise;        /* relative amplitude of a deterministic pseudo-random jitter; 0 = none */
} tpu;

typedef struct tev {
  int kind; /* 0 grant, 1 wait */
  unsigned pu;
  double t;
  size_t count;
} tev;

typedef struct trun {
  double makespan;
  size_t n_ev;
  tev *ev;
  int exactly_once; /* hlb_balancer_check_exactly_once() == 0 */
  int rc;           /* 0, or the first negative code from the balancer */
  size_t blocks;
  double solver_s; /* wall time inside the policy (informative only) */
} trun;

/* Run `policy` with `params` over n items on the PUs. Returns 0 (r filled; free r->ev) or
 * the balancer's error. */
int tdrive(const char *policy, const char *params, const tpu *pus, unsigned n, size_t items,
           size_t granularity, trun *r);

/* Block time of PU p for x items starting at t. */
double tpu_time(const tpu *p, double x, double t);

/* The equal-finish-time lower bound of the PUs' true (unchanged) curves. */
double tbound(const tpu *pus, unsigned n, size_t items);

#endif
