/* Comparing a device that computes on the host's cores with the cpu PU beside it (exec.c:
 * should_release, judge_takeover), from a run's decision log. Pure functions, so that the
 * comparison is tested on made-up logs (tests/unit/exec/test_judge.c).
 *
 * Items need not cost the same (a fractal's rows, a power-law matrix's bands), and a run hands
 * them out in order, so the cpu PU's first blocks are other items than the device's: on
 * mandelbrot its cheap top rows made PoCL look 3x slower per core than a core. Neighbouring
 * items cost alike on such maps, so a device's block is compared with what the cpu PU's blocks
 * next to it took per item. And a device launched in the small blocks of a run's start pays a
 * launch and copies per block (PoCL on a loaded machine: about 0.5 ms), which alone on the
 * cores, in one large block, it does not: its kernel is judged by the slope of its time over
 * the cpu PU's time for the same items, not by the ratio. */
#ifndef HLB_EXEC_JUDGE_H
#define HLB_EXEC_JUDGE_H

#include <stddef.h>

#include "hlb/balancer.h"

/* Sums over points (x, y) for a least-squares line y = fixed + slope x. */
typedef struct hlb__line_sums {
  double n, sx, sy, sxx, sxy;
} hlb__line_sums;

static inline void hlb__line_add(hlb__line_sums *l, double x, double y) {
  l->n += 1, l->sx += x, l->sy += y, l->sxx += x * x, l->sxy += x * y;
}

/* The cost per x of the points, a block's cost per block left out: the slope of their
 * least-squares line when it rises and its intercept (*fixed, may be NULL) is not negative,
 * else the slope of the line through the origin (*fixed 0): too few points, no spread in x, or
 * a line that does not fit. 0 without points. */
double hlb__line_slope(const hlb__line_sums *l, double *fixed);

/* What a device's release reason says (exec.c, release_locked) when the judge could not read
 * its kernel apart from its per-block costs: the next run whose samples are kept tries it alone
 * on every core, whatever its figures (exec.c, explore_device). */
#define HLB__KERNEL_UNREAD_MARK "its blocks too short to read its kernel"

/* Log entries looked at: the newest this many, so that a judgement after every block of a long
 * run stays cheap. */
#define HLB__JUDGE_WINDOW 256
/* Newest finished blocks kept of each PU for it (the executor's window is the cpu PU's and the
 * device's: the two PUs' blocks, one less each for their blocks in flight). */
#define HLB__JUDGE_RECENT (HLB__JUDGE_WINDOW / 2 - 1)

/* The cpu PU's (balancer PU cpu_b, on cpu_cores cores) items per second per core on items like
 * those of device dev_b's finished blocks (and its pending ones with with_pending): for each,
 * the core-seconds per item the cpu PU's nearest finished blocks on either side of it took,
 * raised to what a pending cpu block between (its compute_s: the time it has run so far) has
 * taken. 0 when no finished cpu block is on either side of any of them. */
double hlb__judge_cpu_rate_near(const hlb_decision *log, size_t n_log, unsigned cpu_b,
                                unsigned dev_b, unsigned cpu_cores, int with_pending);

/* Device blocks the core ratio is read from, the newest: a median over their pairs of at most
 * 496 slopes, a few microseconds under the executor's lock after each device block. */
#define HLB__JUDGE_ROBUST_POINTS 32
/* Seconds per item of the Theil-Sen line through the newest HLB__JUDGE_ROBUST_POINTS of the n
 * points (items, seconds), *line 1; or, when that line does not hold (no two points apart by
 * more than 10 %, a slope or intercept below 0), the median of seconds over items, *line 0
 * (judge.c says why). */
double hlb__judge_robust_slope(const double *x, const double *y, size_t n, int *line);
/* The same line with each pair's slope weighted by the gap between its two x (the weighted
 * median of the slopes): the slope of blocks whose times carry a per-block cost and its noise,
 * read from the pairs far enough apart for their items to show (judge.c says why). */
double hlb__judge_gap_slope(const double *x, const double *y, size_t n, int *line);

/* Core-seconds device dev_b (holding `held` cores) spends per core-second the cpu PU spends on
 * the same items: the slope of the Theil-Sen line (medians, so that a block delayed by a lost
 * time slice does not decide) through its newest HLB__JUDGE_ROBUST_POINTS finished blocks, each
 * its time times `held` against the cpu core-seconds for its items as above; through the origin
 * when the sizes do not spread or the line has a negative part. < 1: its kernel is faster per
 * core. NAN with fewer than two such blocks. *kernel_read (may be NULL) is 1 for a line, its
 * per-block costs left out, and 0 through the origin: the device's per-block costs are then
 * part of the figure, and blocks whose time does not rise with their items' (PoCL's 46-row spmv
 * blocks: 0.07-0.11 ms each, of which its kernel is about 2 microseconds) make it any multiple
 * of its kernel's. */
double hlb__judge_core_ratio(const hlb_decision *log, size_t n_log, unsigned cpu_b, unsigned dev_b,
                             unsigned cpu_cores, unsigned held, int *kernel_read);

/* 1 when a device computing on the host's cores whose kernel takes `ratio` core-seconds per
 * core-second of the cpu PU's (hlb__judge_core_ratio, > 1: slower), after its blocks kept it
 * busy busy_s seconds, should be released; 0 to keep it, for now: not within
 * HLB_EXEC_RELEASE_MIN_FACTOR, and below HLB_EXEC_MARGINAL_FACTOR only after
 * HLB_EXEC_MARGINAL_JUDGE_S (include/hlb/exec.h says why). */
int hlb__judge_release_on_ratio(double ratio, double busy_s);

/* Items per second of device dev_b at its best: the largest of count / (seconds - launch_s)
 * over its finished blocks, +inf when a block took no more than launch_s, 0 without finished
 * blocks. For a device that holds only a driver thread (a GPU) this bounds from above what it
 * does in large blocks, the work it is kept for: a one-time warm-up slows only the blocks it
 * falls in. Measured on an H100 (cuBLAS's handle and lazily loaded kernels): matmul's first two
 * blocks of 1 and 64 rows took 43 and 61 ms, the next ones 0.35 ms for 27 rows; the run's
 * items over its busy time then read 105 rows/s, below one core's 123, and the GPU that does
 * 77 000 rows/s was released. */
double hlb__judge_best_rate(const hlb_decision *log, size_t n_log, unsigned dev_b, double launch_s);

/* Items per second of device dev_b tried alone on every core (exec.c, "A trial cut short"), at
 * the most its finished blocks allow: the better of its items over their time and the rate
 * of its kernel, the inverse slope of the robust line through its blocks' (items, seconds),
 * their per-block costs left out (a trial's first blocks are the small ones of a ramp, and
 * PoCL's launches of 0.05-0.1 ms are most of them on spmv), each pair weighed by the gap
 * between its sizes (hlb__judge_gap_slope: the launches' noise does not make the kernel).
 * 0 without finished blocks. */
double hlb__judge_trial_rate(const hlb_decision *log, size_t n_log, unsigned dev_b);

/* 1 when a device that holds only a driver thread (a GPU), doing at best `best_rate` items per
 * second (hlb__judge_best_rate), should give its `held` cores back to a cpu PU doing
 * `core_rate` items per second per core: only when it is HLB_EXEC_RELEASE_CLEAR_FACTOR times
 * slower than them. The two mistakes do not cost alike: keeping a GPU weaker than its driver
 * core costs the cpu PU that core (a fourteenth of it on a 16-core H100 machine), releasing a
 * strong one costs the GPU, in that run and in every later run that starts from the stored
 * decision. Its best block is not its kernel when the host's cores are all busy: on that
 * machine (the cpu PU's 14 threads, PoCL and the driver on 16 cores) an H100 given one-row
 * matmul blocks, each over 1.5 ms of scheduling delays, read 2.0e3 rows/s against 3.27e3 for a
 * core; it does 2.5e4 rows/s alone, and the later runs, without it, took 1.02 s instead of
 * 0.06 s (docs/benchmarks.md, "On an NVIDIA H100, third time"). */
int hlb__judge_release_driver(double best_rate, double core_rate, unsigned held);

#endif
