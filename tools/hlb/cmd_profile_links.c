/* hlb profile-links: measure the ranks' links and PUs into a cluster file (run under mpirun).
 * Built only when libhlb_mpi is (tools/hlb/CMakeLists.txt lists it in HLB_MPI_COMMANDS);
 * MPI is initialised here, not in main, so the other subcommands never need mpirun. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/mpi.h"

const hlb_cli_command hlb_cmd_profile_links_spec = {
    .name = "profile-links",
    .operands = "",
    .summary = "measure links and PUs into a cluster file (under mpirun)",
    .about = "Run as: mpirun -np N hlb profile-links -o CLUSTER.json. Writes a cluster file "
             "(docs/cluster-format.md) for `hlb plan` and `hlb sim`: one node per rank with the "
             "rank 0 <-> rank ping-pong link (Boiński & Czarnul eq. 4: latency from the empty "
             "message, bandwidth by least squares over K sizes up to B bytes, best of R), and "
             "one PU per local PU with its host <-> device link and the const + linear time of "
             "hlb's built-in kernel on blocks up to X items. Docs: docs/mpi-executor.md"};

typedef struct pl_args {
  const char *out, *pus;
  hlb_mpi_profile_options opt;
} pl_args;

static int parse_item_bytes(const char *v, hlb_mpi_profile_options *o) {
  char in[64];
  const char *comma = strchr(v, ',');
  if (!comma || (size_t)(comma - v) >= sizeof in)
    return hlb_cli_usage_error("profile-links", "--item-bytes: expected IN,OUT, got '%s'", v);
  memcpy(in, v, (size_t)(comma - v));
  in[comma - v] = '\0';
  if (hlb_cli_parse_double("profile-links", "--item-bytes", in, 0, 1e15, &o->item_in_bytes) ||
      hlb_cli_parse_double("profile-links", "--item-bytes", comma + 1, 0, 1e15, &o->item_out_bytes))
    return HLB_EXIT_USAGE;
  return 0;
}

static int parse_args(int argc, char **argv, pl_args *a) {
  memset(a, 0, sizeof *a);
  hlb_mpi_profile_options_default(&a->opt);
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_profile_links_spec, argc, argv, &cli);
  if (rc == 0) {
    a->out = hlb_cli_text(&cli, "links.output");
    a->pus = hlb_cli_given(&cli, "pus") ? hlb_cli_text(&cli, "pus") : NULL;
    a->opt.max_bytes = hlb_cli_size(&cli, "max-bytes");
    a->opt.n_sizes = (unsigned)hlb_cli_size(&cli, "sizes");
    a->opt.reps = (unsigned)hlb_cli_size(&cli, "links.reps");
    a->opt.kernel_items = hlb_cli_size(&cli, "kernel-items");
    rc = parse_item_bytes(hlb_cli_text(&cli, "item-bytes"), &a->opt);
  }
  hlb_cli_args_free(&cli);
  if (rc) return rc;
  if (!a->out) return hlb_cli_usage_error("profile-links", "missing -o CLUSTER.json");
  if (a->opt.max_bytes < ((size_t)1 << a->opt.n_sizes))
    return hlb_cli_usage_error("profile-links",
                               "--max-bytes %zu is too small for %u sizes (>= %zu)",
                               a->opt.max_bytes, a->opt.n_sizes, (size_t)1 << a->opt.n_sizes);
  return 0;
}

static int local_pus(const char *spec, hlb_exec_pu *pus, unsigned *n) {
  return spec ? hlb_exec_parse_pus(spec, pus, HLB_EXEC_MAX_LOCAL_PUS, n)
              : hlb_exec_discover(pus, HLB_EXEC_MAX_LOCAL_PUS, n);
}

int hlb_cmd_profile_links(int argc, char **argv) {
  pl_args a;
  /* Usage errors are the same on every rank, so every rank exits before MPI_Init alike. */
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
  unsigned n = 0;
  rc = local_pus(a.pus, pus, &n);
  if (rc) {
    /* A rank that cannot describe its PUs offers none; the collective then names it. */
    fprintf(stderr, "hlb profile-links: rank %d: %s\n", rank, hlb_last_error());
    n = 0;
  }
  int lrc = hlb_mpi_profile_links(MPI_COMM_WORLD, pus, n, &a.opt, a.out);
  if (rank == 0 && lrc == 0) printf("wrote %s\n", a.out);
  /* Rank 0 prints the one line; every rank exits with the same status. */
  int status = 0;
  if (lrc && rank == 0)
    status = hlb_cli_lib_error("profile-links", lrc);
  else if (lrc)
    status = lrc == HLB_EPARSE || lrc == HLB_EINVAL || lrc == HLB_ENOTFOUND || lrc == HLB_EIO ||
                     lrc == HLB_ERANGE
                 ? HLB_EXIT_USAGE
                 : HLB_EXIT_FAIL;
  if (rc && !lrc) status = hlb_cli_lib_error("profile-links", rc);
  MPI_Finalize();
  return status;
}
