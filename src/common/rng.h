/* Deterministic random numbers (xoshiro256** seeded by splitmix64): the same seed gives the
 * same sequence on every machine, which the simulator's byte-for-byte promise relies on.
 * A hlb__rng is owned by one thread; there is no shared state. */
#ifndef HLB_COMMON_RNG_H
#define HLB_COMMON_RNG_H

#include <stdint.h>

typedef struct hlb__rng {
  uint64_t s[4];
} hlb__rng;

void hlb__rng_seed(hlb__rng *r, uint64_t seed);
uint64_t hlb__rng_u64(hlb__rng *r);
/* Uniform in [0, 1). */
double hlb__rng_uniform(hlb__rng *r);
/* Standard normal (Box-Muller, no cached second value so the stream stays simple). */
double hlb__rng_normal(hlb__rng *r);
/* Uniform integer in [0, n); n > 0. */
uint64_t hlb__rng_below(hlb__rng *r, uint64_t n);

#endif
