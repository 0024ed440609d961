#include "sim/evq.h"

#include <stdlib.h>

#include "common/error_internal.h"

int hlb__evq_init(hlb__evq *q, size_t cap) {
  q->n = 0;
  q->next_seq = 0;
  q->cap = cap ? cap : 1;
  q->a = malloc(q->cap * sizeof *q->a);
  if (!q->a) return hlb__error(HLB_ENOMEM, "sim: event queue of %zu events: out of memory", q->cap);
  return 0;
}

void hlb__evq_fini(hlb__evq *q) {
  free(q->a);
  q->a = NULL;
  q->n = q->cap = 0;
}

static int before(const hlb__event *x, const hlb__event *y) {
  return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

int hlb__evq_push(hlb__evq *q, double t, unsigned pu, uint32_t gen, int kind) {
  if (q->n == q->cap)
    return hlb__error(HLB_ERANGE, "sim: event queue full (%zu events): internal error", q->cap);
  hlb__event e = {t, q->next_seq++, pu, gen, kind};
  size_t i = q->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&e, &q->a[parent])) break;
    q->a[i] = q->a[parent];
    i = parent;
  }
  q->a[i] = e;
  return 0;
}

int hlb__evq_pop(hlb__evq *q, hlb__event *out) {
  if (!q->n) return 0;
  *out = q->a[0];
  hlb__event last = q->a[--q->n];
  size_t i = 0, n = q->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&q->a[c + 1], &q->a[c])) c++;
    if (!before(&q->a[c], &last)) break;
    q->a[i] = q->a[c];
    i = c;
  }
  if (n) q->a[i] = last;
  return 1;
}
