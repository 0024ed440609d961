/* hdss: Belviranli, Bhuyan and Gupta's Heterogeneous Dynamic Self-Scheduler, as PLB-HeC II/IV
 * and PLB-HAC 2/4 describe it.
 *
 * Adaptive phase: synchronised rounds ("synchronizations in the adaptive phase", PLB-HAC 2) in
 * which every PU gets the same block size, growing from the initial block size shared by all
 * algorithms (PLB-HeC, section V.A) by doubling, so each PU's throughput (items per second) is
 * measured at several sizes. A logarithmic fit throughput(x) = a + b ln x per PU, by least squares
 * (PLB-HeC, section IV: "minimum square estimation to estimate the weights"), gives its weight,
 * evaluated at the completion phase's first block size, where throughput "stabilizes with larger
 * tasks" (PLB-HeC, section II). The weights are then fixed (PLB-HeC II: "once determined, these
 * weights are not changed").
 *
 * Completion phase: weighted factoring after Hummel et al. (PLB-HeC, [20]): a request from PU p
 * gets remaining * w_p / (factor * W), W the weight of the live PUs, so blocks start large
 * and decrease as the run progresses, ending with small blocks that fill idle PUs.
 */
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"
#include "policy/common.h"

enum { P_ROUNDS, P_FACTOR, P_MIN, P_FRACTION, P_COUNT };

static const hlb_param_def hdss_params[P_COUNT] = {
    [P_ROUNDS] = {"rounds", 4, 1, 30,
                  "adaptive-phase rounds, block sizes x_init * 2^r; 4 as PLB-HeC's 1, 2, 4, 8 "
                  "initial phase, the same budget for all algorithms (PLB-HeC, section V.A)"},
    [P_FACTOR] = {"factor", 2, 1, 100,
                  "completion phase: each block is remaining * w_p / (factor * W); 2 = "
                  "Hummel's factoring, half the remaining work per batch (PLB-HeC, [20])"},
    [P_MIN] = {"min_chunk", 1, 1, 1e15, "smallest completion-phase block, items"},
    [P_FRACTION] = {"initial_fraction", HLB__INITIAL_FRACTION, 1e-9, 1,
                    "initial block size x_init = fraction * n / (15 P) (PLB-HeC, section V.A)"},
};

typedef struct hdss_state {
  const hlb_policy_ctx *ctx;
  unsigned n_rounds;
  double x0;
  hlb__rounds rounds;
  int adaptive;   /* 1 during the adaptive phase */
  double *lx, *y; /* per round and PU: ln(items) and items/s of valid samples; NaN if none */
  double *w;      /* weights, set when the adaptive phase ends */
  double alive_w;
} hdss_state;

static void hdss_fini(void *state) {
  hdss_state *s = state;
  hlb__rounds_fini(&s->rounds);
  free(s->lx);
  free(s->y);
  free(s->w);
  free(s);
}

static int hdss_init(const hlb_policy_ctx *ctx, void **state) {
  hdss_state *s = calloc(1, sizeof *s);
  unsigned n = ctx->n_pus, r = (unsigned)ctx->param[P_ROUNDS];
  size_t cells = (size_t)n * r;
  if (!s || !(s->lx = malloc(cells * sizeof(double))) || !(s->y = malloc(cells * sizeof(double))) ||
      !(s->w = malloc(n * sizeof(double))) || hlb__rounds_init(&s->rounds, n)) {
    if (s) hdss_fini(s);
    return hlb__error(HLB_ENOMEM, "hdss: cannot allocate state for %u PUs", n);
  }
  for (size_t i = 0; i < cells; i++)
    s->lx[i] = s->y[i] = NAN;
  s->ctx = ctx;
  s->n_rounds = r;
  s->x0 = (double)hlb__initial_block(ctx, ctx->param[P_FRACTION]);
  s->adaptive = 1;
  *state = s;
  return 0;
}

/* Least-squares fit y = a + b lx over the PU's valid samples, evaluated at ln(x). Falls
 * back to the mean throughput with one sample, or when the fit is not positive there. */
static double fitted_rate(const hdss_state *s, unsigned pu, double x) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (unsigned r = 0; r < s->n_rounds; r++) {
    size_t i = (size_t)r * s->ctx->n_pus + pu;
    if (isnan(s->y[i])) continue;
    n++, sx += s->lx[i], sy += s->y[i], sxx += s->lx[i] * s->lx[i], sxy += s->lx[i] * s->y[i];
  }
  if (n == 0) return NAN;
  double mean = sy / n, den = n * sxx - sx * sx;
  if (n < 2 || !(fabs(den) > 1e-12 * n * sxx)) return mean;
  double b = (n * sxy - sx * sy) / den, a = (sy - b * sx) / n;
  double v = a + b * log(x);
  return v > 0 && isfinite(v) ? v : mean;
}

/* End of the adaptive phase: weights at the first completion block size; PUs without a
 * valid sample get the mean weight of the others. */
static void set_weights(hdss_state *s) {
  const hlb_policy_ctx *c = s->ctx;
  unsigned alive = hlb_balancer_alive(c->balancer);
  double x =
      (double)hlb_balancer_remaining(c->balancer) / (c->param[P_FACTOR] * (alive ? alive : 1));
  double sum = 0;
  unsigned known = 0;
  for (unsigned p = 0; p < c->n_pus; p++) {
    s->w[p] = fitted_rate(s, p, x > 1 ? x : 1);
    if (!isnan(s->w[p])) sum += s->w[p], known++;
  }
  double fill = known ? sum / known : 1.0;
  s->alive_w = 0;
  for (unsigned p = 0; p < c->n_pus; p++) {
    if (isnan(s->w[p])) s->w[p] = fill;
    if (hlb_balancer_pu_alive(c->balancer, p)) s->alive_w += s->w[p];
  }
  s->adaptive = 0;
}

static void close_round(hdss_state *s) {
  if (++s->rounds.round >= s->n_rounds) set_weights(s);
}

static int adaptive_next(hdss_state *s, unsigned pu, size_t *count) {
  if (hlb__rounds_served(&s->rounds, pu)) {
    if (s->rounds.outstanding) return HLB_WAIT;
    close_round(s);
    if (!s->adaptive) return 0;
  }
  hlb__rounds_grant(&s->rounds, pu);
  *count = (size_t)ldexp(s->x0, (int)s->rounds.round);
  return HLB_GRANT;
}

static int hdss_next(void *state, unsigned pu, double now, size_t *count) {
  (void)now;
  hdss_state *s = state;
  if (s->adaptive) {
    int rc = adaptive_next(s, pu, count);
    if (rc) return rc;
  }
  const hlb_policy_ctx *c = s->ctx;
  size_t chunk =
      hlb__share(hlb_balancer_remaining(c->balancer), s->w[pu], c->param[P_FACTOR] * s->alive_w);
  size_t lo = (size_t)c->param[P_MIN];
  *count = chunk < lo ? lo : chunk;
  return HLB_GRANT;
}

static void hdss_back(hdss_state *s) {
  if (hlb__rounds_back(&s->rounds) && s->adaptive) close_round(s);
}

static void hdss_done(void *state, unsigned pu, const hlb_sample *smp) {
  hdss_state *s = state;
  double t = hlb__sample_seconds(smp);
  unsigned r = s->rounds.round_of[pu];
  if (s->adaptive && r < s->n_rounds && !isnan(t)) {
    size_t i = (size_t)r * s->ctx->n_pus + pu;
    s->lx[i] = log((double)smp->block.count);
    s->y[i] = (double)smp->block.count / t;
  }
  hdss_back(s);
}

static void hdss_failed(void *state, unsigned pu, const hlb_block *blk) {
  (void)pu, (void)blk;
  hdss_back(state);
}

static void hdss_retired(void *state, unsigned pu) {
  hdss_state *s = state;
  if (!s->adaptive) s->alive_w -= s->w[pu];
}

const hlb_policy_ops hlb__policy_hdss = {
    .abi_version = HLB_POLICY_ABI_VERSION,
    .struct_size = sizeof(hlb_policy_ops),
    .name = "hdss",
    .description = "HDSS (Belviranli et al.): adaptive phase with log fits of throughput, "
                   "then weighted decreasing blocks (PLB-HeC, section II)",
    .params = hdss_params,
    .n_params = P_COUNT,
    .init = hdss_init,
    .next = hdss_next,
    .done = hdss_done,
    .failed = hdss_failed,
    .retired = hdss_retired,
    .fini = hdss_fini,
};
