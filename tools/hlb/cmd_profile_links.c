/* hlb profile-links: measure the ranks' links and PUs into a cluster file (run under mpirun).
 * Built only when libhlb_mpi is (tools/hlb/CMakeLists.txt lists it in HLB_MPI_COMMANDS);
 * MPI is initialised here, not in main, so the other subcommands never need mpirun. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/mpi.h"

const char hlb_cmd_profile_links_help[] =
    "measure MPI links, device links and PU speeds into a cluster file (under mpirun)";

static const char usage_text[] =
    "usage: mpirun -np N hlb profile-links -o CLUSTER.json [--pus SPEC] [--max-bytes B]\n"
    "                                     [--sizes K] [--reps R] [--kernel-items X]\n"
    "                                     [--item-bytes IN,OUT]\n"
    "\n"
    "Writes a cluster file (docs/cluster-format.md) for `hlb plan` and `hlb sim`: one node per\n"
    "rank with the rank 0 <-> rank ping-pong link (Boinski & Czarnul eq. 4: latency from the\n"
    "empty message, bandwidth by least squares over K sizes up to B bytes, best of R), and one\n"
    "PU per local PU with its host <-> device link and the const + linear time of hlb's\n"
    "built-in kernel on blocks up to X items. Docs: docs/mpi-executor.md\n"
    "  -o FILE            output file (written by rank 0)\n"
    "  --pus SPEC         this rank's PUs, e.g. cpu:2,opencl:0 (default: all, as discovered)\n"
    "  --max-bytes B      largest message (default 4 MiB)\n"
    "  --sizes K          message sizes besides the empty one, halving from B (default 5)\n"
    "  --reps R           round trips per size, fastest kept (default 5)\n"
    "  --kernel-items X   largest block of the built-in kernel (default 262144)\n"
    "  --item-bytes I,O   the file's bytes in and out per item (default 4,4: the built-in "
    "kernel's)\n";

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

/* One option at argv[*i]; 0 when handled, else the exit status. */
static int parse_option(int argc, char **argv, int *i, pl_args *a) {
  const char *v = NULL;
  int m;
  size_t z = 0;
  const char *cmd = "profile-links";
  if ((m = hlb_cli_option(cmd, argc, argv, i, "-o", &v)) != 0) {
    if (m < 0) return HLB_EXIT_USAGE;
    a->out = v;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--pus", &v)) != 0) {
    if (m < 0) return HLB_EXIT_USAGE;
    a->pus = v;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--max-bytes", &v)) != 0) {
    if (m < 0 || hlb_cli_parse_size(cmd, "--max-bytes", v, 4, (size_t)1 << 30, &a->opt.max_bytes))
      return HLB_EXIT_USAGE;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--sizes", &v)) != 0) {
    if (m < 0 || hlb_cli_parse_size(cmd, "--sizes", v, 2, 24, &z)) return HLB_EXIT_USAGE;
    a->opt.n_sizes = (unsigned)z;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--reps", &v)) != 0) {
    if (m < 0 || hlb_cli_parse_size(cmd, "--reps", v, 1, 1000, &z)) return HLB_EXIT_USAGE;
    a->opt.reps = (unsigned)z;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--kernel-items", &v)) != 0) {
    if (m < 0 ||
        hlb_cli_parse_size(cmd, "--kernel-items", v, 48, (size_t)1 << 28, &a->opt.kernel_items))
      return HLB_EXIT_USAGE;
  } else if ((m = hlb_cli_option(cmd, argc, argv, i, "--item-bytes", &v)) != 0) {
    if (m < 0) return HLB_EXIT_USAGE;
    return parse_item_bytes(v, &a->opt);
  } else {
    return hlb_cli_usage_error(cmd, "unknown argument '%s' (try 'hlb profile-links --help')",
                               argv[*i]);
  }
  return 0;
}

static int parse_args(int argc, char **argv, pl_args *a) {
  memset(a, 0, sizeof *a);
  hlb_mpi_profile_options_default(&a->opt);
  for (int i = 1; i < argc; i++) {
    int rc = parse_option(argc, argv, &i, a);
    if (rc) return rc;
  }
  if (!a->out) return hlb_cli_usage_error("profile-links", "missing -o CLUSTER.json");
  if (a->opt.max_bytes < ((size_t)1 << a->opt.n_sizes))
    return hlb_cli_usage_error("profile-links",
                               "--max-bytes %zu is too small for %u sizes (>= %zu)",
                               a->opt.max_bytes, a->opt.n_sizes, (size_t)1 << a->opt.n_sizes);
  return 0;
}

static int local_pus(const char *spec, hlb_exec_pu *pus, unsigned *n) {
  return spec ? hlb_exec_parse_pus(spec, pus, HLB_EXEC_MAX_PUS, n)
              : hlb_exec_discover(pus, HLB_EXEC_MAX_PUS, n);
}

int hlb_cmd_profile_links(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage_text, stdout);
      return HLB_EXIT_OK;
    }
  pl_args a;
  /* Usage errors are the same on every rank, so every rank exits before MPI_Init alike. */
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hlb_exec_pu pus[HLB_EXEC_MAX_PUS];
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
