/* hlb_mpi_run() across 2-3 ranks: y[i] = c0 * x[i]^2 + c1 * x[i] + i, with (c0, c1) in a
 * shared buffer that only rank 0 fills (so a wrong broadcast gives wrong results), input
 * read from rank 0's array, output written through unpack (which counts how often each item
 * arrives, so a block delivered twice or never is caught besides the balancer's own check).
 *
 *   test_dexec cpu      every rank offers one 1-core cpu PU
 *   test_dexec opencl   rank 0 a cpu PU, the others an OpenCL device (PoCL); 77 without one
 *   test_dexec inject   rank 1's PU fails every block: it is retired, the result still right
 *   test_dexec pack     input through pack (counting packs), output straight into rank 0's array
 *   test_dexec die      rank 1's process exits inside its second block: the job must end
 *                       (non-zero) instead of hanging; CTest runs it with WILL_FAIL
 *   test_dexec badargs  n_items = 0: every rank gets HLB_EINVAL
 *   test_dexec hier     hlb_mpi_run_hier, nodes of 2 ranks (run with 4: 2 nodes)
 *   test_dexec hier-pack  the same with the input through pack (each item packed once: rank 0
 *                       packs a share once, whatever the node does with it)
 *   test_dexec hier0    hlb_mpi_run_hier, nodes of 1 rank, rank 0 offers no PU: its node takes
 *                       no part and rank 0 only deals the shares
 *   test_dexec crowd    rank 0 offers no PU, every other rank CROWD PUs (policy greedy, blocks
 *                       of 1024 items, 8 KiB of input: above Open MPI's eager limit, so that
 *                       a grant's send completes only once its rank receives it): more grants
 *                       to one rank than its window of sends, the rest queued in order
 * A second argument names the policy (default: the balancer's default).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlb/mpi.h"

#define N_ITEMS 200000u
#define CROWD 48u
#define WORK 1024
#define STR(x) #x
#define XSTR(x) STR(x)

#include "mpi/check.h"

typedef struct work {
  double *x, *y;
  unsigned *arrivals;
  double coef[2];
} work;

static const char poly_cl[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#define WORK " XSTR(
        WORK) "\n"
              "kernel void poly(global const uchar *in, global uchar *out, ulong begin, ulong "
              "count,\n"
              "                 global const uchar *s0, global const uchar *s1,\n"
              "                 global const uchar *s2, global const uchar *s3) {\n"
              "  ulong i = get_global_id(0);\n"
              "  if (i >= count) return;\n"
              "  global const double *x = (global const double *)in;\n"
              "  global const double *c = (global const double *)s0;\n"
              "  double v = 0.0;\n"
              "  for (int k = 0; k < WORK; k++) v = v * 0.5 + x[i];\n"
              "  ((global double *)out)[i] = c[0] * v * v + c[1] * v + (double)(begin + i);\n"
              "}\n";

/* Some work per item, so that computing, not only moving data, takes time. Halving is exact,
 * so the loop gives the same bits on every device. */
static double poly(const double *c, double x, size_t i) {
  double v = 0.0;
  for (int k = 0; k < WORK; k++)
    v = v * 0.5 + x;
  return c[0] * v * v + c[1] * v + (double)i;
}

static int die_after = 0; /* "die": blocks this rank runs before its process exits */

static int poly_cpu(const hlb_exec_call *c) {
  if (die_after && --die_after == 0) _exit(3);
  const double *x = c->in, *coef = c->shared[0];
  double *y = c->out;
  for (size_t i = 0; i < c->count; i++)
    y[i] = poly(coef, x[i], c->begin + i);
  return 0;
}

static void unpack(void *user, size_t begin, size_t count, const void *src) {
  work *w = user;
  memcpy(w->y + begin, src, count * sizeof(double));
  for (size_t i = begin; i < begin + count; i++)
    __atomic_add_fetch(&w->arrivals[i], 1u, __ATOMIC_RELAXED);
}

/* Counts in `arrivals` too: with no failures each item is packed exactly once. */
static void pack(void *user, size_t begin, size_t count, void *dst) {
  work *w = user;
  memcpy(dst, w->x + begin, count * sizeof(double));
  for (size_t i = begin; i < begin + count; i++)
    __atomic_add_fetch(&w->arrivals[i], 1u, __ATOMIC_RELAXED);
}

static int rank, size;

/* first: the rank of the first PU (1 when rank 0 offers none); `per` PUs on every rank after. */
static void check_result(const work *w, const hlb_mpi_run_stats *st, int inject_g, int first,
                         unsigned per, int remote) {
  size_t bad = 0, twice = 0, items = 0;
  for (size_t i = 0; i < N_ITEMS; i++) {
    /* The OpenCL compiler may contract to fma: allow rounding, nothing more. */
    double want = poly(w->coef, w->x[i], i);
    if (!(fabs(w->y[i] - want) <= 1e-12 * fabs(want) + 1e-12) && bad++ == 0)
      fprintf(stderr, "rank 0: first wrong output: item %zu: %.17g, expected %.17g\n", i, w->y[i],
              want);
    twice += w->arrivals[i] != 1;
  }
  CHECK(bad == 0, "%zu outputs differ from the sequential result", bad);
  CHECK(twice == 0, "%zu items did not arrive exactly once", twice);
  CHECK(st->exec.n_pus == (unsigned)(size - first) * per, "stats: %u PUs for %d ranks",
        st->exec.n_pus, size - first);
  for (unsigned g = 0; g < st->exec.n_pus; g++) {
    items += st->exec.per_pu[g].items;
    CHECK(st->rank[g] == (int)(g / per) + first, "stats: pu %u on rank %d, expected %d", g,
          st->rank[g], (int)(g / per) + first);
    if ((int)g == inject_g)
      CHECK(st->exec.per_pu[g].retired && st->exec.per_pu[g].items == 0 &&
                st->exec.per_pu[g].failed_blocks > 0,
            "stats: injected pu %u: retired %d, items %zu, failed %zu", g,
            st->exec.per_pu[g].retired, st->exec.per_pu[g].items, st->exec.per_pu[g].failed_blocks);
    else
      CHECK(!st->exec.per_pu[g].retired, "stats: pu %u retired", g);
  }
  CHECK(items == N_ITEMS, "stats: %zu items processed, expected %u", items, N_ITEMS);
  CHECK(!remote || (st->remote_blocks > 0 && st->bytes_from_ranks > 0),
        "stats: no block ran on another rank (%zu blocks, %zu bytes back)", st->remote_blocks,
        st->bytes_from_ranks);
  CHECK(st->n_ranks == size, "stats: %d ranks, expected %d", st->n_ranks, size);
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argc > 1 ? argv[1] : "cpu";
  int use_cl = !strcmp(mode, "opencl");
  if (use_cl &&
      (!hlb_backend_built(HLB_BACKEND_OPENCL) || hlb_backend_devices(HLB_BACKEND_OPENCL) == 0)) {
    if (rank == 0) printf("no OpenCL device: skipped\n");
    MPI_Finalize();
    return 77;
  }
  work w = {.coef = {0.25, -3.0}};
  if (rank == 0) {
    w.x = malloc(N_ITEMS * sizeof *w.x);
    w.y = malloc(N_ITEMS * sizeof *w.y);
    w.arrivals = calloc(N_ITEMS, sizeof *w.arrivals);
    for (size_t i = 0; i < N_ITEMS; i++)
      w.x[i] = (double)(i % 1000) * 0.01 - 3.0;
  }
  /* Only rank 0's copy of the coefficients is right: the others must get it by broadcast. */
  double coef_bad[2] = {0, 0};
  hlb_codelet cl = {.name = "poly",
                    .user = &w,
                    .in_bytes_per_item = sizeof(double),
                    .out_bytes_per_item = sizeof(double),
                    .in = w.x,
                    .unpack = unpack,
                    .out = NULL,
                    .shared = {{rank == 0 ? w.coef : coef_bad, sizeof w.coef}},
                    .n_shared = 1,
                    .cpu = poly_cpu,
                    .opencl_source = poly_cl,
                    .opencl_kernel = "poly"};
  if (!strcmp(mode, "die") && rank == 1) die_after = 2;
  int hier = !strncmp(mode, "hier", 4), hier0 = !strcmp(mode, "hier0");
  if (!strcmp(mode, "pack") || !strcmp(mode, "hier-pack")) {
    cl.in = NULL;
    cl.pack = pack;
    cl.unpack = NULL;
    cl.out = w.y;
  }
  hlb_exec_pu pus[CROWD], pu;
  unsigned n = 0;
  int rc = hlb_exec_parse_pus(use_cl && rank > 0 ? "opencl:0" : "cpu:1", &pu, 1, &n);
  CHECK(rc == 0 && n == 1, "parse pus: %s", hlb_last_error());
  hlb_exec_options opt;
  hlb_exec_options_default(&opt);
  opt.policy = argc > 2 ? argv[2] : NULL;
  int crowd = !strcmp(mode, "crowd");
  unsigned n_pus = 1;
  if (crowd) {
    n_pus = rank > 0 ? CROWD : 0;
    for (unsigned k = 0; k < CROWD; k++) {
      pus[k] = pu;
      snprintf(pus[k].name, sizeof pus[k].name, "cpu.%u", k);
    }
    opt.policy = "greedy";
    opt.params = "chunk=1024";
  } else {
    pus[0] = pu;
  }
  int inject_g = -1;
  if (!strcmp(mode, "inject")) {
    inject_g = 1; /* global index: rank 1's only PU */
    opt.inject_pu = inject_g;
    opt.inject_from = 1;
    opt.inject_count = 0;
    opt.max_failures = 1; /* retired at its first failure, however few blocks it gets */
  }
  size_t n_items = !strcmp(mode, "badargs") ? 0 : N_ITEMS;
  hlb_mpi_run_stats st;
  memset(&st, 0, sizeof st);
  if (hier) {
    hlb_mpi_hier_options ho;
    hlb_mpi_hier_options_default(&ho);
    ho.node_size = hier0 ? 1 : 2;
    rc = hlb_mpi_run_hier(MPI_COMM_WORLD, &pu, hier0 && rank == 0 ? 0 : 1, &cl, n_items, &opt, &ho,
                          &st);
  } else {
    rc = hlb_mpi_run(MPI_COMM_WORLD, pus, n_pus, &cl, n_items, &opt, &st);
  }
  if (n_items == 0) {
    CHECK(rc == HLB_EINVAL, "n_items 0: rc %d (%s), expected HLB_EINVAL", rc, hlb_last_error());
    CHECK(strstr(hlb_last_error(), "n_items") != NULL, "n_items 0: message '%s'", hlb_last_error());
  } else {
    CHECK(rc == 0, "hlb_mpi_run: %s (%s)", hlb_err_name(rc), hlb_last_error());
    if (rank == 0 && rc == 0) {
      check_result(&w, &st, inject_g, hier0 || crowd, crowd ? CROWD : 1, !hier0);
      for (unsigned i = 0; i < st.n_nodes; i++)
        printf("  node %u (leader rank %d): %zu items in %u shares, planned %zu, failed %d\n", i,
               st.node_leader[i], st.node_items[i], st.node_shares[i], st.node_planned[i],
               st.node_failed[i]);
      if (hier) {
        size_t sum = 0;
        for (unsigned i = 0; i < st.n_nodes; i++)
          sum += st.node_items[i];
        CHECK(st.n_nodes == (unsigned)(hier0 ? size : size / 2) && sum == N_ITEMS,
              "hier: %u nodes with %zu items", st.n_nodes, sum);
        CHECK(!hier0 || (st.node_failed[0] && st.node_items[0] == 0),
              "hier0: rank 0's node, which offers no PU, did %zu items", st.node_items[0]);
      }
      printf("%s on %d ranks: policy %s, makespan %.4f s, setup %.4f s, %zu remote blocks, "
             "%zu bytes out, %zu back\n",
             mode, size, st.exec.policy, st.exec.makespan_s, st.setup_s, st.remote_blocks,
             st.bytes_to_ranks, st.bytes_from_ranks);
      for (unsigned g = 0; g < st.exec.n_pus; g++)
        printf("  pu %u (rank %d, %s): %zu items in %zu blocks, compute %.4f s, transfer %.4f "
               "s, failed %zu, retired %d\n",
               g, st.rank[g], st.exec.pu[g].name, st.exec.per_pu[g].items, st.exec.per_pu[g].blocks,
               st.exec.per_pu[g].compute_s, st.exec.per_pu[g].transfer_s,
               st.exec.per_pu[g].failed_blocks, st.exec.per_pu[g].retired);
    }
    if (rank != 0)
      CHECK(st.exec.n_pus == 0, "stats are rank 0's only, got %u PUs here", st.exec.n_pus);
  }
  hlb_mpi_run_stats_clear(&st);
  free(w.x);
  free(w.y);
  free(w.arrivals);
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
