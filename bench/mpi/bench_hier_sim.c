/* Flat against hierarchical MPI mode at many PUs, in simulation (docs/mpi-executor.md,
 * "When the hierarchical mode pays"; figures in docs/benchmarks.md).
 *
 * A discrete-event model of the two protocols of hlb run --mpi, with the one quantity that
 * separates them: the CPU time a serving rank spends per request. Every PU keeps one request
 * ahead (it asks for block k+1 as it starts block k, as src/mpi/dexec.c's remote drivers do).
 * A serving rank is a FIFO server: a request arriving at t is answered at
 * max(t, server free) + cost, plus the network latency each way.
 *
 *   flat:          rank 0 serves every PU's request (grant_s each).
 *   hierarchical:  each node's leader serves its node's PUs (grant_s each) from its current
 *                  share; rank 0 serves the leaders' share requests (grant_s each) AND, being
 *                  node 0's leader, node 0's PUs. Shares as src/mpi/hier.c deals them: a probe
 *                  of probe_fraction split by PU count, then plan_fraction of the rest split by
 *                  the nodes' measured speeds (eq. 3 of Boiński & Czarnul with free links: in
 *                  proportion to speed), then chunks of remaining x w_i / (2 sum w), at least a
 *                  probe; a leader asks for its next share once its current one is all granted.
 *
 * Blocks are one unit of work each; PU p takes block_s / speed_p per block, speeds uniform in
 * [1 - spread, 1 + spread] (seeded). Data movement is the same in both modes and left out.
 * The output is a markdown table: makespan, the ideal (work / total speed), and the serving
 * ranks' utilisation (busy CPU time / makespan).
 *
 *   bench_hier_sim [--pus 10000] [--blocks-per-pu 50] [--nodes 10,100,1000]
 *                  [--block-s 0.01,0.1,1] [--grant-us 3,15] [--latency-us 5] [--seed 1]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ev {
  double t;
  int kind, who;
} ev;
enum { EV_REQ_ARRIVE = 1, EV_GRANT_ARRIVE, EV_BLOCK_END, EV_SHARE_REQ_ARRIVE, EV_SHARE_ARRIVE };

typedef struct heap {
  ev *v;
  size_t n, cap;
} heap;

static void die(const char *what) {
  fprintf(stderr, "bench_hier_sim: %s\n", what);
  exit(2);
}

static void push(heap *h, ev e) {
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 1024;
    h->v = realloc(h->v, h->cap * sizeof *h->v);
    if (!h->v) die("out of memory");
  }
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->v[p].t <= e.t) break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = e;
}

static ev pop(heap *h) {
  ev top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1].t < h->v[c].t) c++;
    if (h->v[c].t >= last.t) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

static uint64_t rng_state;
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct server {
  double free_t, busy_s;
} server;

/* Answer at: FIFO with `cost` CPU seconds per request. */
static double serve(server *s, double t, double cost) {
  double start = t > s->free_t ? t : s->free_t;
  s->free_t = start + cost;
  s->busy_s += cost;
  return s->free_t;
}

typedef struct pu {
  int node, computing, has_ahead, asked;
  double speed;
} pu;

typedef struct node {
  size_t share_left; /* blocks of the current share not yet granted */
  size_t probe, done, granted_total;
  double first_t, last_t;
  int asked, plan_given, shares;
  size_t planned;
  int *pending; /* PUs whose request waits for a share */
  size_t n_pending;
  size_t out_blocks; /* blocks granted, not finished (for the share's end) */
  int cur_share_open;
} node;

typedef struct cfg {
  size_t n_pus, blocks_per_pu;
  unsigned n_nodes;
  double block_s, grant_s, lat_s, spread, probe_fraction, plan_fraction;
  uint64_t seed;
} cfg;

typedef struct result {
  double makespan, ideal, rank0_util, leader_util_max;
  size_t shares;
} result;

static void run(const cfg *c, int hier, result *r) {
  size_t P = c->n_pus, B = c->n_pus * c->blocks_per_pu;
  unsigned N = hier ? c->n_nodes : 1;
  pu *pus = calloc(P, sizeof *pus);
  node *nodes = calloc(N, sizeof *nodes);
  server *srv = calloc(N, sizeof *srv); /* srv[0] is rank 0 */
  if (!pus || !nodes || !srv) die("out of memory");
  rng_state = c->seed * 0x9e3779b97f4a7c15ull + 1;
  double total_speed = 0;
  for (size_t p = 0; p < P; p++) {
    pus[p].node = (int)(p * N / P);
    pus[p].speed = 1 - c->spread + 2 * c->spread * uniform();
    total_speed += pus[p].speed;
  }
  for (unsigned i = 0; i < N; i++) {
    nodes[i].pending = malloc((P / N + 2) * sizeof(int));
    if (!nodes[i].pending) die("out of memory");
  }
  size_t remaining = B; /* blocks rank 0 has not yet given out (flat: not granted) */
  size_t finished = 0;
  int planned = 0;
  size_t reserved = 0; /* planned blocks of nodes that have not yet had their planned share */
  heap h = {0};
  for (size_t p = 0; p < P; p++) {
    push(&h, (ev){c->lat_s, EV_REQ_ARRIVE, (int)p});
    pus[p].asked = 1;
  }
  if (hier)
    for (unsigned i = 0; i < N; i++) {
      nodes[i].probe = (size_t)ceil((double)B * c->probe_fraction / N);
      push(&h, (ev){c->lat_s, EV_SHARE_REQ_ARRIVE, (int)i});
      nodes[i].asked = 1;
    }
  double end = 0;
  size_t shares = 0;
  while (h.n) {
    ev e = pop(&h);
    if (e.kind == EV_REQ_ARRIVE) {
      pu *u = &pus[e.who];
      node *nd = &nodes[u->node];
      int s = hier ? u->node : 0;
      size_t *pool = hier ? &nd->share_left : &remaining;
      if (*pool > 0) {
        (*pool)--;
        nd->out_blocks++;
        push(&h, (ev){serve(&srv[s], e.t, c->grant_s) + c->lat_s, EV_GRANT_ARRIVE, e.who});
        /* A leader asks for its next share once the current one is all granted. */
        if (hier && *pool == 0 && !nd->asked && remaining > 0) {
          nd->asked = 1;
          push(&h, (ev){e.t + c->lat_s, EV_SHARE_REQ_ARRIVE, u->node});
        }
      } else if (hier && (remaining > 0 || nd->asked)) {
        nd->pending[nd->n_pending++] = e.who; /* waits for the next share */
      } else {
        serve(&srv[s], e.t, c->grant_s); /* the stop */
        u->asked = 0;
      }
    } else if (e.kind == EV_GRANT_ARRIVE) {
      pu *u = &pus[e.who];
      u->asked = 0;
      if (!u->computing) {
        u->computing = 1;
        push(&h, (ev){e.t + c->block_s / u->speed, EV_BLOCK_END, e.who});
        u->asked = 1;
        push(&h, (ev){e.t + c->lat_s, EV_REQ_ARRIVE, e.who}); /* one ahead */
      } else {
        u->has_ahead = 1;
      }
    } else if (e.kind == EV_BLOCK_END) {
      pu *u = &pus[e.who];
      node *nd = &nodes[u->node];
      finished++;
      nd->done++;
      nd->out_blocks--;
      nd->last_t = e.t;
      end = e.t;
      u->computing = 0;
      if (u->has_ahead) {
        u->has_ahead = 0;
        u->computing = 1;
        push(&h, (ev){e.t + c->block_s / u->speed, EV_BLOCK_END, e.who});
        if (!u->asked) {
          u->asked = 1;
          push(&h, (ev){e.t + c->lat_s, EV_REQ_ARRIVE, e.who});
        }
      }
    } else if (e.kind == EV_SHARE_REQ_ARRIVE) {
      node *nd = &nodes[e.who];
      size_t want;
      if (!nd->shares) {
        want = nd->probe;
      } else if (!planned) {
        int all = 1;
        for (unsigned i = 0; i < N; i++)
          if (!nodes[i].done) all = 0;
        if (all) {
          /* eq. 3 with free links and linear times: shares in proportion to speed, as measured
           * (blocks done per second since the first share). */
          double sum = 0;
          for (unsigned i = 0; i < N; i++)
            sum += (double)nodes[i].done / (e.t - nodes[i].first_t);
          size_t items = (size_t)floor(c->plan_fraction * (double)remaining);
          for (unsigned i = 0; i < N; i++)
            nodes[i].planned =
                (size_t)((double)items * ((double)nodes[i].done / (e.t - nodes[i].first_t)) / sum);
          for (unsigned i = 0; i < N; i++)
            reserved += nodes[i].planned;
          planned = 1;
        }
        want = nd->probe;
      }
      if (nd->shares && planned && !nd->plan_given) {
        nd->plan_given = 1;
        reserved -= nd->planned;
        want = nd->planned ? nd->planned : nd->probe;
      } else if (nd->shares && planned) {
        double sum = 0, wi = 0;
        for (unsigned i = 0; i < N; i++) {
          double w = nodes[i].last_t > nodes[i].first_t
                         ? (double)nodes[i].done / (nodes[i].last_t - nodes[i].first_t)
                         : 0;
          sum += w;
          if (i == (unsigned)e.who) wi = w;
        }
        size_t left = remaining > reserved ? remaining - reserved : 0;
        want = sum > 0 ? (size_t)ceil((double)left * wi / (2 * sum)) : nd->probe;
        if (want < nd->probe) want = nd->probe;
      }
      if (want > remaining) want = remaining;
      double at = serve(&srv[0], e.t, c->grant_s) + c->lat_s;
      if (want == 0) {
        nd->asked = 0; /* nothing left: its PUs' waiting requests get their stop */
        push(&h, (ev){at, EV_SHARE_ARRIVE, e.who});
        continue;
      }
      remaining -= want;
      if (!nd->shares) nd->first_t = e.t;
      nd->shares++;
      shares++;
      nd->granted_total += want;
      nd->cur_share_open += (int)want; /* blocks arriving with the share */
      push(&h, (ev){at, EV_SHARE_ARRIVE, e.who});
    } else if (e.kind == EV_SHARE_ARRIVE) {
      node *nd = &nodes[e.who];
      nd->share_left += (size_t)nd->cur_share_open;
      nd->cur_share_open = 0;
      nd->asked = 0;
      /* Serve the PUs that waited (in their order), then ask again if all granted. */
      size_t n = nd->n_pending;
      nd->n_pending = 0;
      for (size_t k = 0; k < n; k++)
        push(&h, (ev){e.t, EV_REQ_ARRIVE, nd->pending[k]});
      if (nd->share_left == 0 && remaining > 0 && !nd->asked) {
        nd->asked = 1;
        push(&h, (ev){e.t + c->lat_s, EV_SHARE_REQ_ARRIVE, e.who});
      }
    }
  }
  if (finished != B) {
    fprintf(stderr, "bench_hier_sim: %s run finished %zu of %zu blocks\n", hier ? "hier" : "flat",
            finished, B);
    exit(1);
  }
  r->makespan = end;
  r->ideal = (double)B * c->block_s / total_speed;
  r->rank0_util = srv[0].busy_s / end;
  r->leader_util_max = 0;
  for (unsigned i = 1; i < N; i++)
    if (srv[i].busy_s / end > r->leader_util_max) r->leader_util_max = srv[i].busy_s / end;
  r->shares = shares;
  for (unsigned i = 0; i < N; i++)
    free(nodes[i].pending);
  free(h.v);
  free(pus);
  free(nodes);
  free(srv);
}

static size_t parse_list(const char *s, double *v, size_t max) {
  size_t n = 0;
  char *end;
  while (*s && n < max) {
    v[n++] = strtod(s, &end);
    if (end == s) die("bad number in a list");
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  cfg c = {.n_pus = 10000,
           .blocks_per_pu = 50,
           .lat_s = 5e-6,
           .spread = 0.3,
           .probe_fraction = 0.02,
           .plan_fraction = 0.7,
           .seed = 1};
  double nodes[16] = {10, 100, 1000}, blocks[16] = {0.01, 0.1, 1}, grants[16] = {3, 15};
  size_t n_nodes = 3, n_blocks = 3, n_grants = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) die("every option takes a value");
    if (!strcmp(a, "--pus"))
      c.n_pus = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--blocks-per-pu"))
      c.blocks_per_pu = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--nodes"))
      n_nodes = parse_list(v, nodes, 16);
    else if (!strcmp(a, "--block-s"))
      n_blocks = parse_list(v, blocks, 16);
    else if (!strcmp(a, "--grant-us"))
      n_grants = parse_list(v, grants, 16);
    else if (!strcmp(a, "--latency-us"))
      c.lat_s = strtod(v, NULL) * 1e-6;
    else if (!strcmp(a, "--seed"))
      c.seed = strtoull(v, NULL, 10);
    else
      die("unknown option (see the comment at the top of bench/mpi/bench_hier_sim.c)");
    i++;
  }
  if (!c.n_pus || !c.blocks_per_pu) die("--pus and --blocks-per-pu must be > 0");
  printf("%zu PUs, %zu blocks each, speeds uniform in [%.1f, %.1f], latency %.1f us each way\n\n",
         c.n_pus, c.blocks_per_pu, 1 - c.spread, 1 + c.spread, c.lat_s * 1e6);
  printf(
      "| grant us | block s | nodes | ideal s | flat makespan | flat rank-0 util | hier makespan "
      "| hier rank-0 util | hier max leader util | shares | hier / flat |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t g = 0; g < n_grants; g++)
    for (size_t b = 0; b < n_blocks; b++) {
      c.grant_s = grants[g] * 1e-6;
      c.block_s = blocks[b];
      result flat;
      run(&c, 0, &flat);
      for (size_t k = 0; k < n_nodes; k++) {
        c.n_nodes = (unsigned)nodes[k];
        if (c.n_nodes == 0 || c.n_nodes > c.n_pus) die("--nodes must be in [1, PUs]");
        result hr;
        run(&c, 1, &hr);
        printf("| %g | %g | %u | %.3f | %.3f | %.1f %% | %.3f | %.1f %% | %.1f %% | %zu | %.3f |\n",
               grants[g], blocks[b], c.n_nodes, flat.ideal, flat.makespan, 100 * flat.rank0_util,
               hr.makespan, 100 * hr.rank0_util, 100 * hr.leader_util_max, hr.shares,
               hr.makespan / flat.makespan);
      }
    }
  return 0;
}
