/* Imbalance metrics of Issakhov et al. section 1 (after Böhme, Issakhov et al.'s reference [15]).
 */
#include <math.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"

int hlb_imbalance_compute(const double *t, unsigned n, hlb_imbalance *out) {
  if (n == 0) return hlb__error(HLB_EINVAL, "imbalance: number of processes must be > 0");
  if (!t || !out) return hlb__error(HLB_EINVAL, "imbalance: times and output must not be NULL");
  double max = 0.0, sum = 0.0;
  for (unsigned i = 0; i < n; i++) {
    if (!isfinite(t[i]) || t[i] < 0)
      return hlb__error(HLB_EINVAL, "imbalance: time t[%u] must be finite and >= 0, got %g", i,
                        t[i]);
    if (t[i] > max) max = t[i];
    sum += t[i];
  }
  if (!isfinite(sum)) return hlb__error(HLB_ERANGE, "imbalance: sum of %u times overflows", n);
  double avg = sum / n;
  /* The mean of finite values can round a hair above their maximum; clamp so that a perfectly
   * balanced run reads exactly 0. */
  if (avg > max) avg = max;
  out->t_max = max;
  out->t_avg = avg;
  out->time = max - avg;              /* I_t */
  out->total = (double)n * out->time; /* I_T = N * I_t */
  /* I% = (t_max - t_avg) / t_max * N / (N - 1); by definition 0 for one process, and 0 when
   * nothing took any time. */
  out->percent = (n > 1 && max > 0) ? 100.0 * out->time / max * n / (n - 1) : 0.0;
  return 0;
}
