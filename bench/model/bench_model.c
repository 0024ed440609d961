/* Cost of hlb_model: hlb_model_add (O(1) sufficient statistics) and hlb_model_fit (every
 * subset of up to 8 terms solved from them, ranked, monotone-checked) for AICc and
 * leave-one-out, with and without forgetting, after n samples. The last column is what a
 * balancer with 1000 PUs pays per round when every PU refits after its block.
 *
 * Samples come from a cubic-plus-linear curve with 2 % noise over 40 distinct sizes. Prints
 * a table; never fails on time. Usage: bench_model [--quick]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/rng.h"
#include "hlb/error.h"
#include "hlb/model.h"

static double truth(double x) {
  return 1e-3 + 2e-4 * x + 3e-10 * x * x * x;
}

typedef struct config {
  const char *name;
  hlb_select crit;
  double forgetting;
} config;

/* Mean seconds per add and per fit over `reps` repetitions of n samples. */
static int measure(const config *c, int n, int reps, double *t_add, double *t_fit,
                   unsigned *terms) {
  hlb_model_options o;
  hlb_model_options_default(&o);
  o.criterion = c->crit;
  o.forgetting = c->forgetting;
  hlb__rng g;
  hlb__rng_seed(&g, 1);
  double add = 0.0, fit = 0.0;
  for (int r = 0; r < reps; r++) {
    hlb_model *m = NULL;
    int rc = hlb_model_create(1000.0, &o, &m);
    if (rc) return rc;
    double t0 = hlb__now();
    for (int i = 0; i < n; i++) {
      double x = 25.0 * (1 + i % 40);
      hlb_model_add(m, x, truth(x) * (1.0 + 0.02 * hlb__rng_normal(&g)), 0.0);
    }
    double t1 = hlb__now();
    rc = hlb_model_fit(m, 1000.0);
    double t2 = hlb__now();
    *terms = hlb_model_terms(m);
    hlb_model_destroy(m);
    if (rc) return rc;
    add += (t1 - t0) / n;
    fit += t2 - t1;
  }
  *t_add = add / reps;
  *t_fit = fit / reps;
  return 0;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const config cfgs[] = {
      {"aicc", HLB_SELECT_AICC, 1.0},
      {"aicc+forget0.95", HLB_SELECT_AICC, 0.95},
      {"loocv", HLB_SELECT_LOOCV, 1.0},
      {"loocv+forget0.95", HLB_SELECT_LOOCV, 0.95},
  };
  const int ns[] = {20, 200, 2000};
  int reps = quick ? 2 : 50;
  printf("%-18s %6s %10s %10s %6s %16s\n", "criterion", "n", "add_ns", "fit_us", "terms",
         "1000pu_round_ms");
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
      double ta, tf;
      unsigned terms;
      int rc = measure(&cfgs[c], ns[k], reps, &ta, &tf, &terms);
      if (rc) {
        fprintf(stderr, "bench_model: %s n=%d: %s\n", cfgs[c].name, ns[k], hlb_last_error());
        return 1;
      }
      printf("%-18s %6d %10.1f %10.1f %#6x %16.1f\n", cfgs[c].name, ns[k], ta * 1e9, tf * 1e6,
             terms, 1000.0 * (ta + tf) * 1e3);
    }
  return 0;
}
