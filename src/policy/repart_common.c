#include <math.h>
#include <string.h>

#include "policy/repart_common.h"

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
