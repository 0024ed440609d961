/* The work pool: carves contiguous ranges out of [0, n_items), takes failed ranges back and
 * remembers what was completed so exactly-once can be proven at the end.
 *
 * Invariant that keeps granularity cheap: every range handed out begins at a multiple of
 * the granularity g, and its length is a multiple of g unless it ends at n_items. Ranges
 * given back by failures therefore have the same shape, and splitting them at multiples of
 * g from their front preserves it.
 *
 * Thread safety: none; the balancer owning the pool serialises every call.
 */
#ifndef HLB_BALANCER_POOL_H
#define HLB_BALANCER_POOL_H

#include <stddef.h>

typedef struct hlb__range {
  size_t begin, count;
} hlb__range;

typedef struct hlb__pool {
  size_t n_items, granularity;
  size_t cursor;    /* items never granted start here */
  hlb__range *back; /* ranges given back by failures, served first (LIFO) */
  size_t n_back, cap_back, back_items;
  hlb__range *done; /* completed ranges; adjacent ones merged on arrival */
  size_t n_done, cap_done, done_items;
} hlb__pool;

int hlb__pool_init(hlb__pool *p, size_t n_items, size_t granularity);
void hlb__pool_fini(hlb__pool *p);

/* Items never granted plus items given back. */
size_t hlb__pool_remaining(const hlb__pool *p);

/* Carve at most `want` items (want > 0, a multiple of g) into *out. A partial tail shorter
 * than g that would be left behind is absorbed when the block stays <= max. Returns 0, or
 * HLB_ESTATE when the pool is empty. */
int hlb__pool_take(hlb__pool *p, size_t want, size_t max, hlb__range *out);

/* A granted range was lost: it will be granted again. 0 or HLB_ENOMEM. */
int hlb__pool_give_back(hlb__pool *p, hlb__range r);

/* A granted range was processed. 0 or HLB_ENOMEM. */
int hlb__pool_complete(hlb__pool *p, hlb__range r);

/* 0 when the completed ranges tile [0, n_items) exactly; HLB_EVERIFY naming the first
 * range missed or processed twice otherwise (HLB_ENOMEM if the sort copy cannot be made). */
int hlb__pool_check(const hlb__pool *p);

#endif
