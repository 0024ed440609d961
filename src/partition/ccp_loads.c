/* Measured loads of Issakhov et al. section 1: r_i as the truncated mean of recent per-step compute
 * times (filters out disturbances from outside the program), and l_i = r_i / r_bar (eq. 1-2).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "hlb/ccp.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int check_times(const double *x, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i]) || x[i] < 0)
      return hlb__error(HLB_EINVAL, "%s: time [%zu] must be finite and >= 0, got %g", what, i,
                        x[i]);
  return 0;
}

int hlb_truncated_mean(const double *x, size_t n, double trim, double *work, double *mean_out) {
  if (n == 0) return hlb__error(HLB_EINVAL, "truncated mean: window must hold at least 1 timing");
  if (!x || !mean_out)
    return hlb__error(HLB_EINVAL, "truncated mean: timings and output must not be NULL");
  if (!(trim >= 0.0 && trim < 0.5))
    return hlb__error(HLB_EINVAL, "truncated mean: trim must be in [0, 0.5), got %g", trim);
  int rc = check_times(x, n, "truncated mean");
  if (rc) return rc;
  double *buf = work ? work : malloc(n * sizeof *buf);
  if (!buf) return hlb__error(HLB_ENOMEM, "truncated mean: cannot allocate %zu timings", n);
  memcpy(buf, x, n * sizeof *buf);
  qsort(buf, n, sizeof *buf, cmp_double);
  /* floor(trim * n) from each end; trim < 0.5 leaves at least one value. */
  size_t cut = (size_t)floor(trim * (double)n);
  double sum = 0.0;
  for (size_t i = cut; i < n - cut; i++)
    sum += buf[i];
  *mean_out = sum / (double)(n - 2 * cut);
  if (!work) free(buf);
  return 0;
}

int hlb_ccp_loads(const double *r, unsigned n, double *l_out) {
  if (n == 0) return hlb__error(HLB_EINVAL, "loads: number of ranks must be > 0");
  if (!r || !l_out) return hlb__error(HLB_EINVAL, "loads: times and output must not be NULL");
  int rc = check_times(r, n, "loads");
  if (rc) return rc;
  double sum = 0.0;
  for (unsigned i = 0; i < n; i++)
    sum += r[i];
  if (!(sum > 0) || !isfinite(sum))
    return hlb__error(HLB_EINVAL, "loads: times must not all be 0 (sum %g)", sum);
  double mean = sum / n; /* Issakhov et al. eq. 1 */
  for (unsigned i = 0; i < n; i++)
    l_out[i] = r[i] / mean; /* Issakhov et al. eq. 2 */
  return 0;
}
