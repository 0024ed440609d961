#include "balancer/flight.h"

#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"

/* Fibonacci hashing: ids are consecutive, and the multiply spreads them over the table. */
static uint32_t home(const hlb__flights *f, uint64_t id) {
  return (uint32_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & f->mask;
}

void hlb__flight_list_init(hlb__flight_list *l) {
  l->head = l->tail = HLB__NIL;
  l->count = 0;
}

int hlb__flights_init(hlb__flights *f) {
  memset(f, 0, sizeof *f);
  f->free_head = HLB__NIL;
  return 0;
}

void hlb__flights_fini(hlb__flights *f) {
  free(f->rec);
  free(f->slot);
  memset(f, 0, sizeof *f);
}

static void insert_slot(hlb__flights *f, uint32_t idx) {
  uint32_t h = home(f, f->rec[idx].id);
  while (f->slot[h])
    h = (h + 1) & f->mask;
  f->slot[h] = idx + 1;
}

/* Double the records and rebuild the slots at twice the record capacity, so the table is
 * at most half full and probes stay short. */
static int grow(hlb__flights *f) {
  uint32_t cap = f->cap ? f->cap * 2 : 256;
  if (cap > UINT32_MAX / 4)
    return hlb__error(HLB_ENOMEM, "balancer: more than %u blocks in flight", f->cap);
  hlb__flight *rec = realloc(f->rec, (size_t)cap * sizeof *rec);
  if (!rec) return hlb__error(HLB_ENOMEM, "balancer: cannot track %u blocks in flight", cap);
  f->rec = rec;
  uint32_t *slot = calloc((size_t)cap * 2, sizeof *slot);
  if (!slot) return hlb__error(HLB_ENOMEM, "balancer: cannot index %u blocks in flight", cap);
  uint32_t *old = f->slot;
  uint32_t old_n = f->slot ? f->mask + 1 : 0;
  f->slot = slot;
  f->mask = cap * 2 - 1;
  f->cap = cap;
  for (uint32_t i = 0; i < old_n; i++)
    if (old[i]) insert_slot(f, old[i] - 1);
  free(old);
  return 0;
}

static uint32_t alloc_record(hlb__flights *f) {
  if (f->free_head != HLB__NIL) {
    uint32_t i = f->free_head;
    f->free_head = f->rec[i].next;
    return i;
  }
  return f->used++;
}

int hlb__flights_add(hlb__flights *f, hlb__flight_list *l, uint64_t id, uint32_t *idx) {
  if (f->free_head == HLB__NIL && f->used == f->cap) {
    int rc = grow(f);
    if (rc) return rc;
  }
  uint32_t i = alloc_record(f);
  hlb__flight *r = &f->rec[i];
  r->id = id;
  r->prev = l->tail;
  r->next = HLB__NIL;
  if (l->tail != HLB__NIL)
    f->rec[l->tail].next = i;
  else
    l->head = i;
  l->tail = i;
  l->count++;
  insert_slot(f, i);
  *idx = i;
  return 0;
}

static uint32_t find_slot(const hlb__flights *f, uint64_t id) {
  if (!f->slot) return HLB__NIL;
  for (uint32_t h = home(f, id);; h = (h + 1) & f->mask) {
    uint32_t s = f->slot[h];
    if (!s) return HLB__NIL;
    if (f->rec[s - 1].id == id) return h;
  }
}

uint32_t hlb__flights_find(const hlb__flights *f, uint64_t id) {
  uint32_t h = find_slot(f, id);
  return h == HLB__NIL ? HLB__NIL : f->slot[h] - 1;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
static void erase_slot(hlb__flights *f, uint32_t h) {
  uint32_t hole = h;
  for (uint32_t j = (h + 1) & f->mask; f->slot[j]; j = (j + 1) & f->mask) {
    uint32_t want = home(f, f->rec[f->slot[j] - 1].id);
    /* Move entry j into the hole unless its home lies cyclically in (hole, j]. */
    int stays = hole <= j ? (want > hole && want <= j) : (want > hole || want <= j);
    if (!stays) {
      f->slot[hole] = f->slot[j];
      hole = j;
    }
  }
  f->slot[hole] = 0;
}

void hlb__flights_remove(hlb__flights *f, hlb__flight_list *l, uint32_t idx) {
  hlb__flight *r = &f->rec[idx];
  erase_slot(f, find_slot(f, r->id));
  if (r->prev != HLB__NIL)
    f->rec[r->prev].next = r->next;
  else
    l->head = r->next;
  if (r->next != HLB__NIL)
    f->rec[r->next].prev = r->prev;
  else
    l->tail = r->prev;
  l->count--;
  r->next = f->free_head;
  f->free_head = idx;
}
