/* Monotonic wall clock in seconds, for measuring blocks and solver time. Thread-safe. */
#ifndef HLB_COMMON_CLOCK_H
#define HLB_COMMON_CLOCK_H

double hlb__now(void);

#endif
