#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/repart_common.h"

const char *hlb_repart_reject_name(hlb_repart_reject r) {
  static const char *const names[HLB_REPART_REJECT_COUNT] = {"nan", "inf", "negative", "zero"};
  return (unsigned)r < HLB_REPART_REJECT_COUNT ? names[r] : "?";
}

int hlb__repart_base_init(hlb__repart_base *b, const hlb_repart_ops *ops, const hlb_repart_ctx *ctx,
                          int keep_weights) {
  memset(b, 0, sizeof *b);
  b->name = ops->name;
  b->ctx = *ctx;
  b->ctx.row_weights = NULL;
  b->ctx.param = NULL;
  if (ops->n_params) {
    b->param = malloc(ops->n_params * sizeof *b->param);
    if (!b->param)
      return hlb__error(HLB_ENOMEM, "%s repartition: out of memory for %u parameters", ops->name,
                        ops->n_params);
    memcpy(b->param, ctx->param, ops->n_params * sizeof *b->param);
    b->ctx.param = b->param;
  }
  if (keep_weights && ctx->row_weights) {
    b->weights = malloc(ctx->total_rows * sizeof *b->weights);
    if (!b->weights) {
      hlb__repart_base_fini(b);
      return hlb__error(HLB_ENOMEM, "%s repartition: out of memory for %zu row weights", ops->name,
                        ctx->total_rows);
    }
    memcpy(b->weights, ctx->row_weights, ctx->total_rows * sizeof *b->weights);
    b->ctx.row_weights = b->weights;
  }
  return 0;
}

void hlb__repart_base_fini(hlb__repart_base *b) {
  free(b->param);
  free(b->weights);
  b->param = b->weights = NULL;
}

void hlb__repart_base_stats(const void *state, hlb_repart_stats *out) {
  *out = ((const hlb__repart_base *)state)->stats;
}

/* The reason a measured value is unusable, or -1 when it is fine. A zero value is fine here
 * (a rank may spend no time in MPI); the wall time is checked for zero by the caller. */
static int bad_value(double v) {
  if (isnan(v)) return HLB_REPART_REJECT_NAN;
  if (isinf(v)) return HLB_REPART_REJECT_INF;
  return v < 0.0 ? HLB_REPART_REJECT_NEGATIVE : -1;
}

/* The first unusable value of one rank's interval: its reason, and the field's name. */
static int bad_interval(const hlb_rank_interval *iv, const char **field, double *value) {
  const double v[4] = {iv->real_s, iv->cpu_s, iv->comm_s, iv->work};
  static const char *const names[4] = {"real_s", "cpu_s", "comm_s", "work"};
  for (unsigned i = 0; i < 4; i++) {
    int why = bad_value(v[i]);
    if (why >= 0) {
      *field = names[i];
      *value = v[i];
      return why;
    }
  }
  *field = iv->real_s == 0.0 ? "real_s" : "iterations";
  *value = iv->real_s == 0.0 ? 0.0 : (double)iv->iterations;
  return iv->real_s == 0.0 || iv->iterations == 0 ? HLB_REPART_REJECT_ZERO : -1;
}

static int check_counts(const hlb__repart_base *b, const size_t *counts) {
  size_t sum = 0;
  for (unsigned r = 0; r < b->ctx.n_ranks; r++)
    sum += counts[r];
  if (sum != b->ctx.total_rows)
    return hlb__error(HLB_EINVAL, "%s repartition: current counts sum to %zu, not the %zu rows",
                      b->name, sum, b->ctx.total_rows);
  return 0;
}

int hlb__repart_admit(hlb__repart_base *b, const hlb_rank_interval *iv, const size_t *counts,
                      size_t *new_counts, hlb_repart_decision *d) {
  unsigned n = b->ctx.n_ranks;
  memset(d, 0, sizeof *d);
  int rc = check_counts(b, counts);
  if (rc) return rc;
  memcpy(new_counts, counts, n * sizeof *counts);
  for (unsigned r = 0; r < n; r++) {
    const char *field;
    double value;
    int why = bad_interval(&iv[r], &field, &value);
    if (why < 0) continue;
    b->stats.rejected[why]++;
    return hlb__error(HLB_ESAMPLE,
                      "%s repartition: rank %u's %s = %g rejected (%s); the split is kept", b->name,
                      r, field, value, hlb_repart_reject_name((hlb_repart_reject)why));
  }
  b->stats.decisions++;
  d->dedicated = 1;
  for (unsigned r = 0; r < n; r++)
    d->dedicated &= hlb__repart_dedicated(&iv[r], HLB_REPART_TH1);
  d->imbalance = hlb__repart_imbalance(iv, n);
  return 0;
}

double hlb__repart_compute_s(const hlb_rank_interval *iv) {
  double c = iv->real_s - iv->comm_s;
  double floor_s = 0.01 * iv->real_s;
  return c > floor_s ? c : floor_s;
}

double hlb__repart_imbalance(const hlb_rank_interval *iv, unsigned n) {
  double lo = INFINITY, hi = 0.0;
  for (unsigned r = 0; r < n; r++) {
    double c = hlb__repart_compute_s(&iv[r]);
    lo = c < lo ? c : lo;
    hi = c > hi ? c : hi;
  }
  return hi > 0.0 ? (hi - lo) / hi : 0.0;
}

int hlb__repart_dedicated(const hlb_rank_interval *iv, double th1) {
  if (!(iv->real_s > 0.0)) return 1;
  return (iv->real_s - iv->cpu_s) / iv->real_s < th1;
}

void hlb__repart_fill_unknown_speeds(double *speed, unsigned n) {
  double sum = 0.0;
  unsigned known = 0;
  for (unsigned r = 0; r < n; r++)
    if (speed[r] > 0.0) {
      sum += speed[r];
      known++;
    }
  double mean = known ? sum / known : 1.0;
  for (unsigned r = 0; r < n; r++)
    if (!(speed[r] > 0.0)) speed[r] = mean;
}

void hlb__repart_speeds(const hlb_rank_interval *iv, unsigned n, double *speed) {
  for (unsigned r = 0; r < n; r++) {
    double c = hlb__repart_compute_s(&iv[r]);
    speed[r] = (iv[r].work > 0.0 && c > 0.0) ? iv[r].work / c : 0.0;
  }
  hlb__repart_fill_unknown_speeds(speed, n);
}

int hlb__repart_same(const size_t *a, const size_t *b, unsigned n) {
  return memcmp(a, b, n * sizeof *a) == 0;
}
