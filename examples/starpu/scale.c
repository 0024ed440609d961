/* Scaling a vector with StarPU, with hlb choosing how many elements each worker's task gets.
 *
 * A StarPU program usually partitions its data into equal blocks up front and lets a
 * scheduler place them. Here one call does the whole vector: every time a worker is idle,
 * hlb's balancer gives it a block sized from what that worker measured so far, StarPU moves
 * the block and runs the task on that worker, and at the end every element has been
 * processed exactly once.
 *
 *   ./hlb_starpu_scale [N] [POLICY]      e.g. STARPU_NCPU=2 ./hlb_starpu_scale 1000000 hlb
 *
 * Build: see Makefile (pkg-config hlb_starpu) or CMakeLists.txt (find_package(hlb)). */
#include <stdio.h>
#include <stdlib.h>

#include <hlb/error.h>
#include <hlb/starpu.h>

/* The kernel sees only its block: a vector of the block's size, as with any StarPU filter. */
static void scale_cpu(void *buffers[], void *cl_arg) {
  float factor = *(const float *)cl_arg;
  float *v = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned i = 0; i < n; i++)
    v[i] *= factor;
}

/* An ordinary StarPU codelet; hlb uses its first cpu (and OpenCL) function. */
static struct starpu_codelet scale_cl = {
    .name = "scale",
    .cpu_funcs = {scale_cpu},
    .nbuffers = 1,
    .modes = {STARPU_RW},
};

int main(int argc, char **argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000000u;
  const char *policy = argc > 2 ? argv[2] : "hlb";
  if (n == 0) {
    fprintf(stderr, "usage: %s [N > 0] [POLICY]\n", argv[0]);
    return 2;
  }
  if (starpu_init(NULL) != 0) {
    fprintf(stderr, "starpu_init failed: no worker\n");
    return 1;
  }
  float *v = malloc(n * sizeof *v);
  for (unsigned i = 0; i < n; i++)
    v[i] = (float)i;

  /* Register the whole vector once, as usual; hlb cuts the blocks from it. */
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)v, n, sizeof *v);

  float factor = 3.0f;
  hlb_starpu_options opt;
  hlb_starpu_options_default(&opt);
  opt.policy = policy;  /* any policy `hlb policies` lists */
  opt.cl_arg = &factor; /* every task's cl_arg */
  hlb_starpu_stats st = {0};
  int rc = hlb_starpu_run(&scale_cl, h, &opt, &st);
  starpu_data_unregister(h); /* the vector is up to date in v */
  if (rc) {
    fprintf(stderr, "hlb_starpu_run: %s: %s\n", hlb_err_name(rc), hlb_last_error());
    starpu_shutdown();
    free(v);
    return 1;
  }

  /* What each worker did: the stats have the same per-PU figures as hlb's executor. */
  for (unsigned p = 0; p < st.exec.n_pus; p++)
    printf("%-10s %10zu elements in %3zu blocks, busy %.4f s\n", st.exec.pu[p].name,
           st.exec.per_pu[p].items, st.exec.per_pu[p].blocks, st.exec.per_pu[p].busy_s);
  printf("policy %s, makespan %.4f s, %zu blocks\n", st.exec.policy, st.exec.makespan_s, st.blocks);
  hlb_starpu_stats_clear(&st);

  unsigned bad = 0;
  for (unsigned i = 0; i < n; i++)
    bad += v[i] != 3.0f * (float)i;
  printf("%s\n", bad ? "wrong result" : "every element scaled once");
  free(v);
  starpu_shutdown();
  return bad ? 1 : 0;
}
