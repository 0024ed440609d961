/* Soft assertions for the MPI tests: a failed CHECK prints its message (after check_who, e.g.
 * "rank 1: ") and counts, and the test carries on, because every rank must still reach the
 * collectives; each test sums check_failures over the ranks at the end. */
#ifndef HLB_TESTS_MPI_CHECK_H
#define HLB_TESTS_MPI_CHECK_H

#include <stdio.h>

static int check_failures = 0;
static char check_who[32] = "";

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fputs(check_who, stderr);                                                                    \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      check_failures++;                                                                            \
    }                                                                                              \
  } while (0)

#endif
