#include "policy/common.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "common/error_internal.h"

size_t hlb__initial_block(const hlb_policy_ctx *ctx, double fraction) {
  double x = fraction * (double)ctx->n_items / (15.0 * (double)ctx->n_pus);
  size_t g = ctx->granularity ? ctx->granularity : 1;
  size_t c = x < (double)g ? g : (size_t)x;
  return c > ctx->n_items ? ctx->n_items : c;
}

size_t hlb__share(size_t total, double w, double wsum) {
  if (!(wsum > 0) || !(w >= 0)) return total ? total : 1;
  double x = ceil((double)total * (w / wsum));
  if (x < 1) return 1;
  return x >= (double)total ? total : (size_t)x;
}

double hlb__sample_seconds(const hlb_sample *s) {
  return hlb_sample_valid(s) ? s->compute_s + s->transfer_s : NAN;
}

int hlb__rounds_init(hlb__rounds *r, unsigned n_pus) {
  r->round = 0;
  r->outstanding = 0;
  r->round_of = malloc(n_pus * sizeof *r->round_of);
  if (!r->round_of)
    return hlb__error(HLB_ENOMEM, "policy: cannot allocate rounds for %u PUs", n_pus);
  for (unsigned p = 0; p < n_pus; p++)
    r->round_of[p] = UINT_MAX;
  return 0;
}

void hlb__rounds_fini(hlb__rounds *r) {
  free(r->round_of);
  r->round_of = NULL;
}

int hlb__rounds_served(const hlb__rounds *r, unsigned pu) {
  return r->round_of[pu] == r->round;
}

void hlb__rounds_grant(hlb__rounds *r, unsigned pu) {
  r->round_of[pu] = r->round;
  r->outstanding++;
}

int hlb__rounds_back(hlb__rounds *r) {
  if (r->outstanding) r->outstanding--;
  return r->outstanding == 0;
}

int hlb__split_init(hlb__split *s, const hlb_policy_ctx *ctx, const double *weights) {
  unsigned n = ctx->n_pus;
  *s = (hlb__split){.ctx = ctx};
  s->w = malloc(n * sizeof *s->w);
  s->share = malloc(n * sizeof *s->share);
  s->served = calloc(n, 1);
  if (!s->w || !s->share || !s->served) {
    hlb__split_fini(s);
    return hlb__error(HLB_ENOMEM, "policy: cannot allocate a split of %u PUs", n);
  }
  for (unsigned p = 0; p < n; p++) {
    s->w[p] = weights ? weights[p] : 1.0;
    s->total_w += s->w[p];
  }
  s->alive_w = s->total_w;
  for (unsigned p = 0; p < n; p++) {
    s->share[p] = hlb__share(ctx->n_items, s->w[p], s->total_w);
    s->reserved += s->share[p];
  }
  return 0;
}

void hlb__split_fini(hlb__split *s) {
  free(s->w);
  free(s->share);
  free(s->served);
  s->w = NULL;
  s->share = NULL;
  s->served = NULL;
}

int hlb__split_next(hlb__split *s, unsigned pu, size_t *count) {
  const hlb_balancer *b = s->ctx->balancer;
  if (!s->served[pu]) {
    s->served[pu] = 1;
    s->reserved -= s->share[pu];
    s->served_w += s->w[pu];
    *count = s->share[pu];
    return HLB_GRANT;
  }
  size_t left = hlb_balancer_remaining(b);
  size_t free_items = left > s->reserved ? left - s->reserved : 0;
  if (free_items) {
    *count = hlb__share(free_items, s->w[pu], s->served_w);
    return HLB_GRANT;
  }
  if (hlb_balancer_in_flight(b, pu)) return HLB_WAIT;
  /* Idle with everything owed to PUs that have not asked: better to take some than idle. */
  *count = hlb__share(left, s->w[pu], s->alive_w);
  return HLB_GRANT;
}

void hlb__split_retired(hlb__split *s, unsigned pu) {
  s->alive_w -= s->w[pu];
  if (s->served[pu])
    s->served_w -= s->w[pu];
  else
    s->reserved -= s->share[pu];
  s->served[pu] = 1; /* nothing more is owed to it */
}
