#include "balancer/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"

int hlb__pool_init(hlb__pool *p, size_t n_items, size_t granularity) {
  memset(p, 0, sizeof *p);
  p->n_items = n_items;
  p->granularity = granularity ? granularity : 1;
  return 0;
}

void hlb__pool_fini(hlb__pool *p) {
  free(p->back);
  free(p->done);
  memset(p, 0, sizeof *p);
}

size_t hlb__pool_remaining(const hlb__pool *p) {
  return (p->n_items - p->cursor) + p->back_items;
}

/* Grow a range array geometrically so appends stay amortised O(1) with no per-call malloc. */
static int grow(hlb__range **a, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need)
    n *= 2;
  hlb__range *r = realloc(*a, n * sizeof *r);
  if (!r) return hlb__error(HLB_ENOMEM, "pool: cannot grow a range list to %zu entries", n);
  *a = r;
  *cap = n;
  return 0;
}

/* Take from the front of the most recently returned range. */
static void take_back(hlb__pool *p, size_t want, size_t max, hlb__range *out) {
  hlb__range *r = &p->back[p->n_back - 1];
  size_t c = want < r->count ? want : r->count;
  /* A leftover shorter than g can only be the pool's tail: keep it with this block. */
  if (r->count - c < p->granularity && r->count <= max) c = r->count;
  out->begin = r->begin;
  out->count = c;
  r->begin += c;
  r->count -= c;
  p->back_items -= c;
  if (r->count == 0) p->n_back--;
}

int hlb__pool_take(hlb__pool *p, size_t want, size_t max, hlb__range *out) {
  if (p->n_back) {
    take_back(p, want, max, out);
    return 0;
  }
  size_t left = p->n_items - p->cursor;
  if (left == 0) return hlb__error(HLB_ESTATE, "pool: no items left to grant");
  size_t c = want < left ? want : left;
  if (left - c < p->granularity && left <= max) c = left;
  out->begin = p->cursor;
  out->count = c;
  p->cursor += c;
  return 0;
}

int hlb__pool_give_back(hlb__pool *p, hlb__range r) {
  int rc = grow(&p->back, &p->cap_back, p->n_back + 1);
  if (rc) return rc;
  p->back[p->n_back++] = r;
  p->back_items += r.count;
  return 0;
}

int hlb__pool_complete(hlb__pool *p, hlb__range r) {
  p->done_items += r.count;
  /* Blocks mostly finish in grant order on one PU; merging touching ranges keeps the list
   * (and the final sort) short without hiding an overlap, since only exact contact merges. */
  if (p->n_done && p->done[p->n_done - 1].begin + p->done[p->n_done - 1].count == r.begin) {
    p->done[p->n_done - 1].count += r.count;
    return 0;
  }
  int rc = grow(&p->done, &p->cap_done, p->n_done + 1);
  if (rc) return rc;
  p->done[p->n_done++] = r;
  return 0;
}

static int by_begin(const void *a, const void *b) {
  const hlb__range *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->count > y->count) - (x->count < y->count);
}

static int check_sorted(const hlb__range *r, size_t n, size_t n_items) {
  size_t expect = 0; /* every item below `expect` is covered exactly once so far */
  for (size_t i = 0; i < n; i++) {
    size_t end = r[i].begin + r[i].count;
    if (r[i].begin > expect)
      return hlb__error(HLB_EVERIFY, "items [%zu, %zu) were never processed", expect, r[i].begin);
    if (r[i].begin < expect) {
      size_t hi = end < expect ? end : expect;
      return hlb__error(HLB_EVERIFY, "items [%zu, %zu) were processed more than once", r[i].begin,
                        hi);
    }
    expect = end;
  }
  if (expect < n_items)
    return hlb__error(HLB_EVERIFY, "items [%zu, %zu) were never processed", expect, n_items);
  if (expect > n_items)
    return hlb__error(HLB_EVERIFY, "items [%zu, %zu) lie beyond the %zu items of the pool", n_items,
                      expect, n_items);
  return 0;
}

int hlb__pool_check(const hlb__pool *p) {
  if (p->n_done == 0) return check_sorted(NULL, 0, p->n_items);
  hlb__range *copy = malloc(p->n_done * sizeof *copy);
  if (!copy)
    return hlb__error(HLB_ENOMEM, "pool: cannot copy %zu completed ranges to check them",
                      p->n_done);
  memcpy(copy, p->done, p->n_done * sizeof *copy);
  qsort(copy, p->n_done, sizeof *copy, by_begin);
  int rc = check_sorted(copy, p->n_done, p->n_items);
  free(copy);
  return rc;
}
