#include <math.h>
#include <string.h>

#include "hlb/model.h"

const char *hlb_term_name(hlb_term t) {
  static const char *const names[HLB_TERM_COUNT] = {"const", "u",   "u2",   "u3",
                                                    "exp",   "log", "uexp", "ulog"};
  return (unsigned)t < HLB_TERM_COUNT ? names[t] : "?";
}

double hlb_curve_compute(const hlb_curve *c, double x) {
  const double *k = c->coef;
  double u = x / c->scale;
  double t = k[HLB_TERM_CONST] + u * (k[HLB_TERM_U] + u * (k[HLB_TERM_U2] + u * k[HLB_TERM_U3]));
  /* Skip the transcendental terms when unused: most curves are polynomials and this is the
   * inner loop of every partition solve. */
  if (k[HLB_TERM_EXP] != 0.0 || k[HLB_TERM_UEXP] != 0.0)
    t += exp(u) * (k[HLB_TERM_EXP] + u * k[HLB_TERM_UEXP]);
  if (k[HLB_TERM_LOG] != 0.0 || k[HLB_TERM_ULOG] != 0.0)
    t += log(u) * (k[HLB_TERM_LOG] + u * k[HLB_TERM_ULOG]);
  return t;
}

double hlb_curve_transfer(const hlb_curve *c, double x) {
  return x > 0 ? c->transfer_per_item * x + c->transfer_fixed : 0.0;
}

double hlb_curve_time(const hlb_curve *c, double x) {
  if (!(x > 0)) return 0.0;
  return hlb_curve_compute(c, x) + c->transfer_per_item * x + c->transfer_fixed;
}

double hlb_curve_slope(const hlb_curve *c, double x) {
  const double *k = c->coef;
  double u = x / c->scale;
  double d = k[HLB_TERM_U] + u * (2.0 * k[HLB_TERM_U2] + 3.0 * u * k[HLB_TERM_U3]);
  if (k[HLB_TERM_EXP] != 0.0 || k[HLB_TERM_UEXP] != 0.0)
    d += exp(u) * (k[HLB_TERM_EXP] + k[HLB_TERM_UEXP] * (1.0 + u));
  if (k[HLB_TERM_LOG] != 0.0 || k[HLB_TERM_ULOG] != 0.0)
    d += k[HLB_TERM_LOG] / u + k[HLB_TERM_ULOG] * (log(u) + 1.0);
  return d / c->scale + c->transfer_per_item;
}

void hlb_curve_from_poly(hlb_curve *out, double c0, double c1, double c2, double c3,
                         double cxlogx) {
  memset(out, 0, sizeof *out);
  out->scale = 1.0;
  out->coef[HLB_TERM_CONST] = c0;
  out->coef[HLB_TERM_U] = c1;
  out->coef[HLB_TERM_U2] = c2;
  out->coef[HLB_TERM_U3] = c3;
  out->coef[HLB_TERM_ULOG] = cxlogx;
}
