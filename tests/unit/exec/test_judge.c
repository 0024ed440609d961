/* Comparing a device on the host's cores with the cpu PU from a decision log (exec/judge.h):
 * on items whose cost rises along the index, and with a cost per block on the device, the
 * comparison must see the kernels' speeds per core, not the items per second of blocks that
 * covered other items. Made-up logs: exact expectations. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exec/judge.h"
#include "hlb/exec.h"

#define CPU 0u
#define DEV 1u

/* Core-seconds per item of item i on the cpu PU's kernel: a ramp, 1 µs to 21 µs over 10^4. */
static double item_cost(size_t i) {
  return 1e-6 * (1.0 + 20.0 * (double)i / 1e4);
}

static double range_cost(size_t begin, size_t count) {
  double c = 0;
  for (size_t i = begin; i < begin + count; i++)
    c += item_cost(i);
  return c;
}

/* Blocks of `count` items, alternately cpu (1 core) and device, in item order from 0; the
 * device's kernel takes `speed` times the cpu's core-seconds per item plus `per_block` seconds
 * a block; the cpu's blocks are `cpu_ahead` times larger, so the cpu covers more of the cheap
 * items early (as a run's first blocks do). */
static size_t make_log(hlb_decision *log, size_t n_blocks, size_t count, double speed,
                       double per_block, size_t cpu_ahead) {
  size_t at = 0;
  for (size_t k = 0; k < n_blocks; k++) {
    int cpu = k % 2 == 0;
    size_t c = cpu ? count * cpu_ahead : count;
    double t = cpu ? range_cost(at, c) : speed * range_cost(at, c) + per_block;
    log[k] = (hlb_decision){.pu = cpu ? CPU : DEV,
                            .begin = at,
                            .count = c,
                            .compute_s = t,
                            .transfer_s = 0,
                            .outcome = HLB_OUTCOME_DONE};
    at += c;
  }
  return n_blocks;
}

/* Growing device blocks (as a ramp of training blocks): 4, 8, 16, ... items; the cpu's blocks
 * cost cpu_fixed seconds each besides their items. */
static size_t make_growing_log_fixed(hlb_decision *log, double speed, double per_block,
                                     double cpu_fixed) {
  size_t at = 0, n = 0;
  for (size_t dev_count = 4; dev_count <= 256; dev_count *= 2) {
    size_t cpu_count = 2 * dev_count;
    log[n++] = (hlb_decision){.pu = CPU,
                              .begin = at,
                              .count = cpu_count,
                              .compute_s = range_cost(at, cpu_count) + cpu_fixed,
                              .outcome = HLB_OUTCOME_DONE};
    at += cpu_count;
    log[n++] = (hlb_decision){.pu = DEV,
                              .begin = at,
                              .count = dev_count,
                              .compute_s = speed * range_cost(at, dev_count) + per_block,
                              .outcome = HLB_OUTCOME_DONE};
    at += dev_count;
  }
  log[n++] = (hlb_decision){.pu = CPU,
                            .begin = at,
                            .count = 512,
                            .compute_s = range_cost(at, 512) + cpu_fixed,
                            .outcome = HLB_OUTCOME_DONE};
  return n;
}

static size_t make_growing_log(hlb_decision *log, double speed, double per_block) {
  return make_growing_log_fixed(log, speed, per_block, 0);
}

/* The cpu PU's rate is measured next to the device's items, not over its own cheaper ones. */
static void test_rate_near_the_devices_items(void **st) {
  (void)st;
  hlb_decision log[40];
  size_t n = make_log(log, 40, 100, 1.0, 0.0, 3);
  double near = hlb__judge_cpu_rate_near(log, n, CPU, DEV, 1, 0);
  /* Items per core-second of the cpu's kernel over the device's items. */
  double dev_items = 0, dev_cost = 0, cpu_items = 0, cpu_cost = 0;
  for (size_t k = 0; k < n; k++) {
    double *items = log[k].pu == DEV ? &dev_items : &cpu_items;
    double *cost = log[k].pu == DEV ? &dev_cost : &cpu_cost;
    *items += (double)log[k].count;
    *cost += range_cost(log[k].begin, log[k].count);
  }
  double truth = dev_items / dev_cost;
  assert_true(fabs(near / truth - 1.0) < 0.03);
  /* With the cpu on two cores, a core's rate is half its blocks' rate. */
  assert_true(fabs(hlb__judge_cpu_rate_near(log, n, CPU, DEV, 2, 0) / (truth / 2) - 1.0) < 0.03);
}

/* A device whose kernel takes half a core's time per item, but pays 2 ms a block: items per
 * second say it is slower than a core, the slope says 0.5. */
static void test_ratio_leaves_out_the_cost_per_block(void **st) {
  (void)st;
  hlb_decision log[32];
  size_t n = make_growing_log(log, 0.5, 2e-3);
  double ratio = hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, NULL);
  assert_true(fabs(ratio - 0.5) < 0.05);
  /* The naive comparison would have released it: device items per second under the core's. */
  double items = 0, secs = 0;
  for (size_t k = 0; k < n; k++)
    if (log[k].pu == DEV) items += (double)log[k].count, secs += log[k].compute_s;
  assert_true(items / secs < hlb__judge_cpu_rate_near(log, n, CPU, DEV, 1, 0));
  /* A device holding two cores spends twice the core-seconds for the same time. */
  assert_true(fabs(hlb__judge_core_ratio(log, n, CPU, DEV, 1, 2, NULL) - 1.0) < 0.1);
  /* A slower kernel: 3x a core's time per item. */
  n = make_growing_log(log, 3.0, 2e-3);
  assert_true(fabs(hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, NULL) - 3.0) < 0.3);
}

/* The judge says whether it read the device's kernel (a line, per-block costs left out) or only
 * its blocks' times (through the origin): blocks whose time does not rise with their items'
 * cost, as PoCL's launches of a few spmv rows, tell nothing of the kernel, however slow they
 * read. */
static void test_kernel_read_or_not(void **st) {
  (void)st;
  hlb_decision log[40];
  int read = -1;
  size_t n = make_growing_log(log, 0.5, 2e-3);
  assert_true(fabs(hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, &read) - 0.5) < 0.05);
  assert_int_equal(read, 1);
  /* 0.1 ms a block whatever its 16 items cost (16-336 microseconds of a core): the figure is
   * the blocks' time over the cpu's, the kernel unread. */
  n = make_log(log, 40, 16, 0.0, 1e-4, 3);
  read = -1;
  double ratio = hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, &read);
  assert_int_equal(read, 0);
  assert_true(ratio > 0.2 && ratio < 7.0);
  /* Too few blocks: no figure, nothing read. */
  read = -1;
  assert_true(isnan(hlb__judge_core_ratio(log, 2, CPU, DEV, 1, 1, &read)));
  assert_int_equal(read, 0);
}

/* The cpu PU's cost per block (a thread team's start) is left out of its cost per item as the
 * device's is: kernels of the same speed per core compare as 1 whatever each pays a block. */
static void test_cpu_cost_per_block_left_out(void **st) {
  (void)st;
  hlb_decision log[32];
  size_t n = make_growing_log_fixed(log, 1.0, 1e-3, 3e-3);
  assert_true(fabs(hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, NULL) - 1.0) < 0.1);
}

/* A cpu block of fewer items than cores keeps only that many cores busy: one-item blocks of
 * 1 ms each on 14 cores are 1 ms of one core per item, not 14; 28 items in 2 ms are two rounds
 * of 14, again 1 ms a core per item. */
static void test_small_cpu_blocks_use_few_cores(void **st) {
  (void)st;
  hlb_decision log[8];
  size_t n = 0, at = 0;
  const size_t counts[4] = {1, 1, 28, 1};
  const double secs[4] = {1e-3, 1e-3, 2e-3, 1e-3};
  for (int k = 0; k < 4; k++) {
    log[n++] = (hlb_decision){.pu = CPU,
                              .begin = at,
                              .count = counts[k],
                              .compute_s = secs[k],
                              .outcome = HLB_OUTCOME_DONE};
    at += counts[k];
    log[n++] = (hlb_decision){
        .pu = DEV, .begin = at, .count = 4, .compute_s = 1e-3, .outcome = HLB_OUTCOME_DONE};
    at += 4;
  }
  double near = hlb__judge_cpu_rate_near(log, n, CPU, DEV, 14, 0);
  if (!(fabs(near / 1000.0 - 1.0) < 0.05)) fail_msg("cpu rate per core %g, expected 1000", near);
}

/* A log entry: PU pu's block of `count` items from `begin`, `secs` of compute. */
static hlb_decision entry(unsigned pu, size_t begin, size_t count, double secs,
                          hlb_outcome outcome) {
  return (hlb_decision){
      .pu = pu, .begin = begin, .count = count, .compute_s = secs, .outcome = outcome};
}

/* Nothing to go by: no cpu block, one device block, a block still running. */
static void test_ratio_unknown(void **st) {
  (void)st;
  hlb_decision log[4] = {entry(DEV, 0, 10, 1e-3, HLB_OUTCOME_DONE),
                         entry(DEV, 10, 20, 2e-3, HLB_OUTCOME_DONE)};
  assert_true(isnan(hlb__judge_core_ratio(log, 2, CPU, DEV, 1, 1, NULL)));
  assert_true(hlb__judge_cpu_rate_near(log, 2, CPU, DEV, 1, 1) == 0);
  log[2] = entry(CPU, 30, 10, 1e-3, HLB_OUTCOME_DONE);
  log[3] = entry(DEV, 40, 10, 0, HLB_OUTCOME_PENDING);
  assert_true(isnan(hlb__judge_core_ratio(log, 2, CPU, DEV, 1, 1, NULL)));
  /* Pending blocks count only when asked: 30 items against 40 at the cpu's 1e4 items/s. */
  assert_true(fabs(hlb__judge_cpu_rate_near(log, 4, CPU, DEV, 1, 0) - 1e4) < 1e-6);
  assert_true(fabs(hlb__judge_cpu_rate_near(log, 4, CPU, DEV, 1, 1) - 1e4) < 1e-6);
  /* Equal sizes: the line through the origin. */
  assert_true(fabs(hlb__judge_core_ratio(log, 3, CPU, DEV, 1, 1, NULL) - 1.0) < 0.6);
}

/* One device block delayed by a lost time slice (20x its kernel's time) among a dozen does not
 * decide: the kernel's speed per core is still read within 10 %. A least-squares line through
 * them read 16x (checked when this was written). */
static void test_one_late_block_does_not_decide(void **st) {
  (void)st;
  hlb_decision log[32];
  size_t n = make_growing_log(log, 0.9, 1e-5);
  for (size_t k = 0; k < n; k++)
    if (log[k].pu == DEV && log[k].count == 256) log[k].compute_s *= 20.0;
  double ratio = hlb__judge_core_ratio(log, n, CPU, DEV, 1, 1, NULL);
  if (!(fabs(ratio / 0.9 - 1.0) < 0.1)) fail_msg("core ratio %g, expected 0.9", ratio);
}

/* The cpu PU's block still running between a device's items and its nearest finished block
 * says the items there cost at least what it has taken so far: 40 us an item against the
 * finished block's 1-3 us. Just started, it says nothing and lowers nothing. */
static void test_running_cpu_block_raises_the_near_cost(void **st) {
  (void)st;
  hlb_decision log[4] = {
      entry(CPU, 0, 100, 2e-4, HLB_OUTCOME_DONE), entry(CPU, 100, 100, 4e-3, HLB_OUTCOME_PENDING),
      entry(DEV, 200, 10, 5e-4, HLB_OUTCOME_DONE), entry(DEV, 210, 20, 1e-3, HLB_OUTCOME_DONE)};
  /* 40 us an item, 25 000 items per second; the finished block alone: 500 000. */
  double near = hlb__judge_cpu_rate_near(log, 4, CPU, DEV, 1, 0);
  if (!(fabs(near / 25000.0 - 1.0) < 1e-6)) fail_msg("cpu rate %g, expected 25000", near);
  /* The device's 50 us an item over the cpu's 40: 1.25, not 25. */
  double ratio = hlb__judge_core_ratio(log, 4, CPU, DEV, 1, 1, NULL);
  if (!(fabs(ratio - 1.25) < 1e-6)) fail_msg("core ratio %g, expected 1.25", ratio);
  log[1].compute_s = 1e-6; /* just started */
  near = hlb__judge_cpu_rate_near(log, 4, CPU, DEV, 1, 0);
  if (!(fabs(near / 500000.0 - 1.0) < 1e-6)) fail_msg("cpu rate %g, expected 500000", near);
  /* Alone, with no finished cpu block beyond it, it tells nothing. */
  assert_true(hlb__judge_cpu_rate_near(log + 1, 3, CPU, DEV, 1, 0) == 0);
}

/* Released on its kernel's speed: never within the comparison's spread, at once when much
 * slower, and when a little slower only after enough busy time. */
static void test_release_on_ratio(void **st) {
  (void)st;
  assert_false(hlb__judge_release_on_ratio(0.8, 1.0));
  assert_false(hlb__judge_release_on_ratio(HLB_EXEC_RELEASE_MIN_FACTOR, 1.0));
  assert_false(hlb__judge_release_on_ratio(1.2, HLB_EXEC_CORE_DEVICE_JUDGE_S));
  assert_true(hlb__judge_release_on_ratio(1.2, HLB_EXEC_MARGINAL_JUDGE_S));
  assert_true(hlb__judge_release_on_ratio(HLB_EXEC_MARGINAL_FACTOR, HLB_EXEC_CORE_DEVICE_JUDGE_S));
  assert_true(hlb__judge_release_on_ratio(100.0, HLB_EXEC_CORE_DEVICE_JUDGE_S));
  assert_false(hlb__judge_release_on_ratio(NAN, 1.0));
}

/* A driver-thread device's best block: warm-up blocks (an H100's first matmul blocks: 1 row in
 * 43 ms, 64 in 61 ms) do not lower it; other PUs' blocks, failed ones and the launch allowance
 * are accounted for. */
static void test_best_rate_ignores_warm_up(void **st) {
  (void)st;
  hlb_decision log[5] = {
      {.pu = DEV, .begin = 0, .count = 1, .compute_s = 0.043, .outcome = HLB_OUTCOME_DONE},
      {.pu = CPU, .begin = 1, .count = 1000, .compute_s = 1e-4, .outcome = HLB_OUTCOME_DONE},
      {.pu = DEV, .begin = 1001, .count = 64, .compute_s = 0.061, .outcome = HLB_OUTCOME_DONE},
      {.pu = DEV,
       .begin = 1065,
       .count = 27,
       .compute_s = 1e-4,
       .transfer_s = 2.5e-4,
       .outcome = HLB_OUTCOME_DONE},
      {.pu = DEV, .begin = 1092, .count = 1000, .compute_s = 1e-6, .outcome = HLB_OUTCOME_FAILED},
  };
  /* 27 rows in 0.35 ms: 77 143 rows/s; items over busy time would say 92 / 0.10435 = 882. */
  assert_true(fabs(hlb__judge_best_rate(log, 5, DEV, 0) - 27 / 3.5e-4) < 1e-6 * 27 / 3.5e-4);
  /* Less a launch allowance of 0.1 ms per block. */
  assert_true(fabs(hlb__judge_best_rate(log, 5, DEV, 1e-4) - 27 / 2.5e-4) < 1);
  /* A block no longer than the allowance: nothing can be told, +inf. */
  assert_true(isinf(hlb__judge_best_rate(log, 5, DEV, 1e-3)));
  /* Warm-up alone: its blocks are all there is. */
  assert_true(fabs(hlb__judge_best_rate(log, 3, DEV, 0) - 64 / 0.061) < 1e-6);
  assert_true(hlb__judge_best_rate(log, 2, CPU + DEV + 1, 0) == 0);
}

/* A driver-thread device is released only when clearly weaker than the cores it holds: the H100
 * of the sixteenth session's third call, its one-row matmul blocks slowed by a host with every
 * core busy (2.0e3 rows/s against 3.27e3 for a core), is kept; a device a fifth of a core, or
 * on two held cores a third of them, goes; nothing is released against an unknown core rate. */
static void test_driver_device_released_only_when_clearly_weaker(void **st) {
  (void)st;
  assert_false(hlb__judge_release_driver(2.0e3, 3.27e3, 1));
  assert_false(hlb__judge_release_driver(3.27e3 / HLB_EXEC_RELEASE_CLEAR_FACTOR, 3.27e3, 1));
  assert_true(hlb__judge_release_driver(3.27e3 / 5, 3.27e3, 1));
  assert_false(hlb__judge_release_driver(3.27e3 / 3, 3.27e3, 1));
  assert_true(hlb__judge_release_driver(3.27e3 / 3, 3.27e3, 2));
  assert_false(hlb__judge_release_driver(1.0, 0.0, 1));
  assert_false(hlb__judge_release_driver(INFINITY, 3.27e3, 1));
}

/* PoCL's k-means trial from a fresh model directory, cut while its block of 65536 points ran:
 * its blocks of 1, 2, 4, ... 32768 points and their seconds (launch and copies included). */
static const double trial_points[16] = {1,   2,   4,    8,    16,   32,   64,    128,
                                        256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
static const double trial_seconds[16] = {3.30e-4, 2.23e-4, 2.27e-4,  1.08e-4, 3.08e-4, 1.36e-4,
                                         2.77e-4, 1.30e-4, 1.02e-4,  1.84e-4, 8.5e-5,  1.16e-4,
                                         1.62e-4, 3.14e-4, 1.512e-3, 3.625e-3};

/* The median of all pairs' slopes reads the launches: 1.6e8 points per second, more than the
 * cpu PU's 9.7e7 on the same cores, and the next pass gave PoCL the cores (0.28 s for a pass
 * of 0.013). Weighed by the gaps between their sizes, the pairs read what its largest blocks
 * did: about 1e7. */
static void test_gap_slope_reads_the_largest_blocks(void **st) {
  (void)st;
  int line = 0;
  double plain = hlb__judge_robust_slope(trial_points, trial_seconds, 16, &line);
  assert_true(line);
  assert_true(1.0 / plain > 1e8);
  double gap = hlb__judge_gap_slope(trial_points, trial_seconds, 16, &line);
  assert_true(line);
  assert_true(1.0 / gap > 5e6 && 1.0 / gap < 2e7);
  /* Its rate in a trial, from the same blocks as a decision log. */
  hlb_decision log[16];
  size_t at = 0;
  for (size_t k = 0; k < 16; k++) {
    log[k] = (hlb_decision){.pu = DEV,
                            .begin = at,
                            .count = (size_t)trial_points[k],
                            .compute_s = trial_seconds[k],
                            .outcome = HLB_OUTCOME_DONE};
    at += log[k].count;
  }
  double rate = hlb__judge_trial_rate(log, 16, DEV);
  assert_true(rate > 5e6 && rate < 2e7);
}

/* On points that lie on a line both read it exactly; with the largest point delayed the
 * gap-weighted slope still holds while fewer than half the weight of the pairs is delayed. */
static void test_gap_slope_on_a_line(void **st) {
  (void)st;
  double x[8], y[8];
  for (int i = 0; i < 8; i++)
    x[i] = 100.0 * (i + 1), y[i] = 1e-4 + 2e-6 * x[i];
  int line = 0;
  assert_true(fabs(hlb__judge_gap_slope(x, y, 8, &line) - 2e-6) < 1e-12);
  assert_true(line);
  assert_true(fabs(hlb__judge_robust_slope(x, y, 8, &line) - 2e-6) < 1e-12);
  y[7] *= 10; /* one delayed block of the largest size */
  assert_true(fabs(hlb__judge_gap_slope(x, y, 8, &line) - 2e-6) < 1e-12);
  assert_true(line);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rate_near_the_devices_items),
      cmocka_unit_test(test_ratio_leaves_out_the_cost_per_block),
      cmocka_unit_test(test_kernel_read_or_not),
      cmocka_unit_test(test_cpu_cost_per_block_left_out),
      cmocka_unit_test(test_small_cpu_blocks_use_few_cores),
      cmocka_unit_test(test_ratio_unknown),
      cmocka_unit_test(test_best_rate_ignores_warm_up),
      cmocka_unit_test(test_one_late_block_does_not_decide),
      cmocka_unit_test(test_running_cpu_block_raises_the_near_cost),
      cmocka_unit_test(test_release_on_ratio),
      cmocka_unit_test(test_driver_device_released_only_when_clearly_weaker),
      cmocka_unit_test(test_gap_slope_reads_the_largest_blocks),
      cmocka_unit_test(test_gap_slope_on_a_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
