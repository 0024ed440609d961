/* Shared by the SPMD examples (jacobi.c, cg.c): option parsing, load injection for tests and
 * benchmarks, and the one-line JSON report. Not part of the library. */
#ifndef HLB_EXAMPLES_SPMD_COMMON_H
#define HLB_EXAMPLES_SPMD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "hlb/mpi.h"

#define SPMD_MAX_COUNTS 256 /* ranks a --counts list may name */

typedef struct spmd_args {
  size_t rows; /* problem size (Jacobi: matrix order; CG: grid side or file) */
  unsigned iterations;
  const char *policy; /* repartition policy */
  const char *params;
  unsigned interval; /* iterations per sampling interval */
  const char *mtx;   /* CG: Matrix Market file */
  /* --counts: rows per rank to start from (e.g. a previous run's final_counts); 0 entries:
   * the even split. */
  size_t counts[SPMD_MAX_COUNTS];
  unsigned n_counts;
  /* Emulated external load for tests: rank `inject_rank` sleeps `inject_frac` of its compute
   * time in iterations [inject_from, inject_to). Sleeping inside the window is what a
   * competing process does to us: real time passes without CPU time. */
  int inject_rank;
  unsigned inject_from, inject_to;
  double inject_frac;
} spmd_args;

/* Parse argv; on a bad option print one line to stderr and return 2 (the exit status). */
int spmd_parse_args(int argc, char **argv, spmd_args *a, const char *usage);

/* Sleep to emulate external load after `compute_s` seconds of work in iteration `it`. */
void spmd_inject_load(const spmd_args *a, int rank, unsigned it, double compute_s);

/* FNV-1a hash of bytes: the examples print it so runs can be compared bit for bit. */
uint64_t spmd_hash(const void *data, size_t bytes);

/* hlb_spmd_create with the options of the command line; prints the error on rank 0. */
int spmd_create(const spmd_args *a, const char *app, size_t rows, hlb_spmd **out);

/* The current split as MPI int counts and displacements (for MPI_Allgatherv). */
void spmd_layout_ints(const hlb_spmd *s, int size, int *counts, int *displs);

/* hlb_spmd_end for iteration `it`: notes a redistribution, aborts the job on an error. */
void spmd_end_iteration(hlb_spmd *s, const char *app, double work, unsigned it);

/* Remember that rows moved after iteration `it` (for the report's redistributions_at). */
void spmd_note_redistribution(unsigned it);

/* Mark the start of the timed loop (wall clock, for the report's start_epoch). */
void spmd_start_clock(void);

/* Print the report line on rank 0. */
void spmd_report(const char *app, const spmd_args *a, hlb_spmd *s, double time_s, double error,
                 uint64_t checksum, int rank);

#endif
