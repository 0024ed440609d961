/* The simulator's event queue: a binary min-heap of fixed capacity, ordered by time, then by
 * the sequence number given at push, so events at equal times pop in the order they were
 * pushed and every run is deterministic. No allocation after hlb__evq_init().
 *
 * Thread safety: one owner; no locking. */
#ifndef HLB_SIM_EVQ_H
#define HLB_SIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct hlb__event {
  double t;     /* simulated seconds */
  uint64_t seq; /* push order: the tie-breaker */
  unsigned pu;
  uint32_t gen; /* the PU's generation at push; a stale event has an older one */
  int kind;
} hlb__event;

typedef struct hlb__evq {
  hlb__event *a;
  size_t n, cap;
  uint64_t next_seq;
} hlb__evq;

/* Room for `cap` events at once. HLB_ENOMEM. */
int hlb__evq_init(hlb__evq *q, size_t cap);
void hlb__evq_fini(hlb__evq *q);

/* Push an event (its seq is assigned here). HLB_ERANGE when full: the caller sized the queue
 * from an invariant, so that is a bug, reported rather than overrunning memory. */
int hlb__evq_push(hlb__evq *q, double t, unsigned pu, uint32_t gen, int kind);

/* Pop the earliest event into *out; 0 when empty, 1 otherwise. */
int hlb__evq_pop(hlb__evq *q, hlb__event *out);

/* The earliest event without removing it; NULL when empty. */
static inline const hlb__event *hlb__evq_top(const hlb__evq *q) {
  return q->n ? &q->a[0] : NULL;
}

#endif
