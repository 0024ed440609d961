/* Blocks in flight: found by id in O(1) (open addressing), and listed per PU in grant order
 * so a policy can ask for a PU's oldest block in O(1).
 *
 * Records live in one growing array reused through a free list, so granting and finishing
 * blocks allocates nothing once the table has reached the run's peak number in flight.
 *
 * Thread safety: none; the balancer serialises every call.
 */
#ifndef HLB_BALANCER_FLIGHT_H
#define HLB_BALANCER_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#define HLB__NIL UINT32_MAX

typedef struct hlb__flight {
  uint64_t id;
  size_t begin, count;
  double granted_s;
  double predicted_s;
  double cost; /* the block's cost in average items at grant time (its count without a density) */
  size_t log_index; /* entry in the decision log, or SIZE_MAX without a log */
  /* Its compute time's factor to the PU's capacity now: 1, or less when the PU grew
   * (hlb_balancer_resize) while the block ran on what it had before. */
  double time_scale;
  unsigned pu;
  uint32_t prev, next; /* the PU's list, in grant order; next also links the free list */
} hlb__flight;

/* Head and tail of one PU's list. */
typedef struct hlb__flight_list {
  uint32_t head, tail;
  unsigned count;
} hlb__flight_list;

typedef struct hlb__flights {
  hlb__flight *rec;
  uint32_t cap, used, free_head;
  uint32_t *slot; /* record index + 1, 0 = empty; size mask + 1, a power of two */
  uint32_t mask;
} hlb__flights;

int hlb__flights_init(hlb__flights *f);
void hlb__flights_fini(hlb__flights *f);
void hlb__flight_list_init(hlb__flight_list *l);

/* A new record appended to list `l` (its fields left for the caller except prev/next);
 * *idx receives its index. 0 or HLB_ENOMEM. */
int hlb__flights_add(hlb__flights *f, hlb__flight_list *l, uint64_t id, uint32_t *idx);

/* Index of the record with this id, or HLB__NIL. */
uint32_t hlb__flights_find(const hlb__flights *f, uint64_t id);

/* Remove record idx (found with hlb__flights_find) from the table and from list `l`. */
void hlb__flights_remove(hlb__flights *f, hlb__flight_list *l, uint32_t idx);

#endif
