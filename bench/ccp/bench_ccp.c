/* Exact chains-on-chains partitioning (hlb_ccp_solve) on large cell sequences, the size the
 * brief asks for being m = 10^6 cells on P = 1024 ranks of random speed, plus one diffusive
 * step (hlb_diffusive_step) on the same input.
 *
 * Per row: the time of the prefix sums and of the exact solve on them (best of a few runs),
 * the optimum against the continuous lower bound total / sum(speed) and against the
 * proportional split (each rank's share of the weight by its speed, rounded to cells), and
 * the time of one diffusive step. Weights: "uniform" U(0.5, 1.5); "skewed" ten times heavier
 * cells in a quarter of the domain and a third of the cells empty. Never fails on time.
 * Usage: bench_ccp [--quick]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/rng.h"
#include "hlb/ccp.h"
#include "hlb/error.h"

static void fill(hlb__rng *g, int skewed, double *w, size_t m) {
  for (size_t k = 0; k < m; k++) {
    double base = 0.5 + hlb__rng_uniform(g);
    if (skewed)
      w[k] = hlb__rng_below(g, 3) == 0 ? 0.0 : (k > m / 2 && k < 3 * m / 4 ? 10.0 : 1.0) * base;
    else
      w[k] = base;
  }
}

/* Rank p gets the cells up to where the prefix reaches its speed share of the total. */
static void proportional(const double *prefix, size_t m, const double *speed, unsigned P,
                         size_t *off) {
  double ssum = 0, acc = 0;
  for (unsigned p = 0; p < P; p++)
    ssum += speed[p];
  size_t k = 0;
  off[0] = 0;
  for (unsigned p = 0; p < P; p++) {
    acc += speed[p];
    double target = prefix[m] * acc / ssum;
    while (k < m && prefix[k + 1] <= target)
      k++;
    off[p + 1] = p + 1 == P ? m : k;
  }
}

static double bottleneck(const double *prefix, const double *speed, unsigned P, const size_t *off) {
  double worst = 0;
  for (unsigned p = 0; p < P; p++) {
    double c = (prefix[off[p + 1]] - prefix[off[p]]) / speed[p];
    worst = c > worst ? c : worst;
  }
  return worst;
}

static int row(hlb__rng *g, size_t m, unsigned P, int skewed, int reps) {
  double *w = malloc(m * sizeof *w), *prefix = malloc((m + 1) * sizeof *prefix);
  double *speed = malloc(P * sizeof *speed), *t = malloc(P * sizeof *t);
  size_t *off = malloc((P + 1) * sizeof *off), *prop = malloc((P + 1) * sizeof *prop);
  size_t *next = malloc((P + 1) * sizeof *next);
  if (!w || !prefix || !speed || !t || !off || !prop || !next) {
    fprintf(stderr, "bench_ccp: out of memory\n");
    return 1;
  }
  fill(g, skewed, w, m);
  double ssum = 0;
  for (unsigned p = 0; p < P; p++) {
    speed[p] = 0.5 + 3.5 * hlb__rng_uniform(g);
    ssum += speed[p];
  }
  double t_prefix = 1e30, t_solve = 1e30, t_diff = 1e30, best = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = hlb__now();
    int rc = hlb_ccp_prefix(w, m, prefix);
    double t1 = hlb__now();
    if (rc == 0) rc = hlb_ccp_solve_prefix(prefix, m, speed, P, off, &best);
    double t2 = hlb__now();
    if (rc) {
      fprintf(stderr, "bench_ccp: %s: %s\n", hlb_err_name(rc), hlb_last_error());
      return 1;
    }
    t_prefix = t1 - t0 < t_prefix ? t1 - t0 : t_prefix;
    t_solve = t2 - t1 < t_solve ? t2 - t1 : t_solve;
  }
  proportional(prefix, m, speed, P, prop);
  double prop_b = bottleneck(prefix, speed, P, prop);
  /* One diffusive step from the proportional split, with its measured times. */
  for (unsigned p = 0; p < P; p++)
    t[p] = (prefix[prop[p + 1]] - prefix[prop[p]]) / speed[p];
  hlb_diffusive_options opt;
  hlb_diffusive_options_default(&opt);
  for (int r = 0; r < reps; r++) {
    double t0 = hlb__now();
    int rc = hlb_diffusive_step(w, m, t, P, prop, &opt, next, NULL);
    double t1 = hlb__now();
    if (rc) {
      fprintf(stderr, "bench_ccp: %s: %s\n", hlb_err_name(rc), hlb_last_error());
      return 1;
    }
    t_diff = t1 - t0 < t_diff ? t1 - t0 : t_diff;
  }
  printf("%9zu %6u %-8s %10.3f %10.3f %10.6f %10.4f %10.3f\n", m, P, skewed ? "skewed" : "uniform",
         t_prefix * 1e3, t_solve * 1e3, best / (prefix[m] / ssum), prop_b / best, t_diff * 1e3);
  free(w);
  free(prefix);
  free(speed);
  free(t);
  free(off);
  free(prop);
  free(next);
  return 0;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  if (argc > 1 && !quick) {
    fprintf(stderr, "usage: bench_ccp [--quick]\n");
    return 2;
  }
  static const struct {
    size_t m;
    unsigned P;
  } sizes[] = {{10000, 16}, {100000, 128}, {1000000, 16}, {1000000, 1024}, {10000000, 1024}};
  size_t n = quick ? 2 : sizeof sizes / sizeof sizes[0];
  hlb__rng g;
  hlb__rng_seed(&g, 2021);
  printf("# exact CCP (hlb_ccp_prefix + hlb_ccp_solve_prefix) and one hlb_diffusive_step;"
         " best of %d runs, ms\n",
         quick ? 1 : 5);
  printf("%9s %6s %-8s %10s %10s %10s %10s %10s\n", "m", "P", "weights", "prefix_ms", "solve_ms",
         "opt/bound", "prop/opt", "diffuse_ms");
  for (size_t i = 0; i < n; i++)
    for (int skewed = 0; skewed < 2; skewed++)
      if (row(&g, sizes[i].m, sizes[i].P, skewed, quick ? 1 : 5)) return 1;
  return 0;
}
