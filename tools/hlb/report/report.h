/* The page of `hlb report`: a trace of `hlb run` or `hlb sim` read into runs of blocks per PU
 * (load.c), the figures a person needs to see why the run took as long as it did (analyze.c),
 * and one self-contained HTML file with the tables, the "where the time went" list and the
 * charts, drawn in the browser by the inlined Chart.js (html.c, page.js). */
#ifndef HLB_TOOLS_REPORT_H
#define HLB_TOOLS_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "hlb/model.h"

#define HLB__REPORT_MAX_PUS 64

typedef enum hlb__report_kind {
  HLB__REPORT_EXEC = 0, /* `hlb run --trace` (also under --mpi): one run, blocks with predictions */
  HLB__REPORT_SIM,      /* `hlb sim --trace`: one run per policy, the same PUs in each */
  HLB__REPORT_SPMD      /* HLB_SPMD_TRACE of an SPMD code: sampling intervals per rank */
} hlb__report_kind;

/* One block as the PU saw it: compute_s includes the emulated throttle sleep, as traced. */
typedef struct hlb__rblock {
  unsigned pu;
  double start_s, end_s;
  double begin, count; /* item range */
  double transfer_s, compute_s;
  double predicted_s; /* < 0: the policy had no prediction (training) */
  int failed;         /* failed or lost: its items went back to the pool; 2: dropped because
                         its PU was released while it ran (a release, not a failure) */
} hlb__rblock;

typedef struct hlb__rpu {
  char name[128];  /* "cpu", "opencl:0", "A.gpu" */
  char label[160]; /* what the page calls it: the name, "NAME@RANK" under MPI (names repeat) */
  char kind[32];   /* backend or the cluster's PU kind */
  char where[64];  /* node (simulator) or "rank N" (MPI, from the run's facts) */
  char device[160];
  double throttle;   /* > 1: emulated slowdown */
  char stopped[320]; /* released or retired, with the reason; "" when it worked to the end */
  int stopped_known; /* 1: the reason comes from the run's facts; 0: inferred from the trace */

  /* Figures (analyze.c) */
  double items, failed_items, dropped_items, dropped_s; /* dropped: failed == 2 */
  size_t blocks, failed_blocks;
  double busy_s, transfer_s, throttle_s, failed_s, idle_s, tail_idle_s, gaps_s;
  double first_start_s, last_end_s;
  double max_count;
  int fitted;        /* 1: curve holds a model */
  int fit_from_run;  /* 1: the run's own model (its facts); 0: fitted here from the blocks */
  int rate_only;     /* 1: the curve is its items per busy second: its blocks were of one size,
                        or (refused[0]) the curve fitted to them cannot be solved */
  char refused[160]; /* why the fitted curve was not used */
  hlb_curve curve;
  double r2;
  double scaled;      /* the curve was multiplied by this to add up to the busy time of the
                         PU's blocks; 1 when it did within CURVE_BAND (analyze.c) */
  double curve_sum_s; /* what the curve, as fitted, gave for the PU's blocks together */
  unsigned terms;
  double ideal_items; /* the fitted-ideal split's share */
  double without_s;   /* the fitted-ideal makespan without this PU; NaN when not computed */
  size_t predicted, mispredicted;
  double median_ratio;      /* median actual / predicted time of its predicted blocks */
  double first_predicted_s; /* start of its first predicted block; NaN if none */
} hlb__rpu;

typedef struct hlb__rrun {
  char name[96]; /* policy */
  char params[256];
  hlb__rpu pu[HLB__REPORT_MAX_PUS];
  unsigned n_pus;
  hlb__rblock *b;
  size_t n, cap;
  double makespan_s;
  double items;    /* items done */
  double bound_s;  /* the simulator's lower bound; NaN when the trace does not record it */
  double policy_s; /* the policy's decision time in all (the run's facts); NaN when unknown */
  double ideal_s;  /* the fitted-ideal split's makespan; NaN when not enough fits */
  unsigned ideal_pus;
  char ideal_why[256]; /* why the ideal split was not computed, when it was not */
} hlb__rrun;

/* One sampling interval of an SPMD trace (src/mpi/spmd_trace.c): what each rank measured and
 * what the repartition policy decided. The per-rank arrays point into hlb__rspmd.values. */
typedef struct hlb__rspmd_interval {
  double iteration, t_start_s, t_end_s;
  double imbalance, gain_s; /* the policy's (max - min) / max and predicted gain */
  int rebalance, dedicated, long_term;
  int redistributed;
  double rows_moved, redistribute_s;
  double *rows, *real_s, *cpu_s, *comm_s, *work;
  /* Figures (spmd.c): the slowest rank's compute time less the mean, and which rank it was. */
  double waited_s;
  unsigned slowest;
} hlb__rspmd_interval;

typedef struct hlb__rspmd {
  char policy[96], params[256], work_unit[32];
  double rows, iterations, interval;
  unsigned ranks;
  hlb__rspmd_interval *iv;
  size_t n;
  double *values;
} hlb__rspmd;

typedef struct hlb__report {
  hlb__report_kind kind;
  char source[512];
  char title[256];
  char what[512]; /* app/cluster, size, items, from the title or the run's facts */
  int ranks;      /* MPI ranks from the run's facts; 0 when not an MPI run or unknown */
  int has_facts;  /* the trace carries the run's facts (top-level "hlb" object) */
  hlb__rrun *runs;
  unsigned n_runs;
  hlb__rspmd *spmd; /* kind HLB__REPORT_SPMD: the intervals; runs is empty then */
} hlb__report;

/* Read the trace at `path`. On bad input prints "hlb report: FILE: what, got VALUE" and
 * returns HLB_EXIT_USAGE; HLB_EXIT_FAIL when out of memory. */
int hlb__report_load(const char *path, hlb__report *r);
void hlb__report_free(hlb__report *r);

/* Fill the figures of every run (per-PU times, fits, the fitted-ideal split). */
void hlb__report_analyze(hlb__report *r);

/* One finding of "where the time went". */
typedef struct hlb__finding {
  char key[24];     /* machine-readable kind: "training", "tail", "mispredicted", ... */
  char pu[128];     /* the PU it is about, "" for the whole run */
  double cost_s;    /* time it stands for, to order the list */
  char text[512];   /* what happened, with its figure */
  char change[512]; /* what a user could change */
} hlb__finding;

/* The findings of one run, most costly first; returns how many (at most max). */
size_t hlb__report_findings(const hlb__report *r, const hlb__rrun *run, hlb__finding *out,
                            size_t max);

/* An SPMD trace's "hlb_spmd" object (spmd.c): same error convention as hlb__report_load. */
struct cJSON;
int hlb__report_load_spmd(const char *path, const struct cJSON *o, hlb__report *r);
size_t hlb__report_spmd_findings(const hlb__rspmd *s, hlb__finding *out, size_t max);
int hlb__report_write_spmd_html(const hlb__report *r, FILE *f);

/* HTML and JSON helpers shared by the pages (html.c). */
void hlb__report_esc(FILE *f, const char *s);
void hlb__report_json_str(FILE *f, const char *s);
void hlb__report_json_num(FILE *f, double x);
const char *hlb__report_color(unsigned i);
void hlb__report_findings_html(FILE *f, const hlb__finding *list, size_t n);

/* Write the page. Blocks beyond the drawing limits are merged or thinned (the page says so). */
int hlb__report_write_html(const hlb__report *r, FILE *f);

/* The whole command after its options: returns the exit status (0, 1 or 2). */
int hlb__report_run(const char *trace_path, const char *page_path);

/* The inlined assets (generated at build time by embed.cmake). */
extern const char hlb__report_chartjs[];
extern const char hlb__report_page_js[];
extern const char hlb__report_page_css[];
extern const int hlb__report_have_chartjs;

#endif
