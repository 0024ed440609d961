/* hlb: command-line front end. Each subcommand lives in its own cmd_<name>.c, which defines
 * `int hlb_cmd_<name>(int argc, char **argv)` and `const hlb_cli_command hlb_cmd_<name>_spec`
 * (its usage, summary and help; its flags are the rows of the options table that name it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define HLB_COMMAND(ident, cli_name)                                                               \
  int hlb_cmd_##ident(int argc, char **argv);                                                      \
  extern const hlb_cli_command hlb_cmd_##ident##_spec;
#include "commands.inc"
#undef HLB_COMMAND

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const hlb_cli_command *spec;
} command;

static const command commands[] = {
#define HLB_COMMAND(ident, cli_name) {cli_name, hlb_cmd_##ident, &hlb_cmd_##ident##_spec},
#include "commands.inc"
#undef HLB_COMMAND
    {NULL, NULL, NULL}};

static void usage(FILE *to) {
  fprintf(to, "usage: hlb COMMAND [ARGS]\n\ncommands:\n");
  for (const command *c = commands; c->name; c++)
    fprintf(to, "  %-14s %s\n", c->name, c->spec->summary);
  fprintf(to, "\n'hlb COMMAND --help' (or 'hlb help COMMAND') describes one command;\n"
              "'hlb --version' prints the version. Every option and environment variable:\n"
              "docs/options.md ('hlb options').\n");
}

static const command *find(const char *name) {
  for (const command *c = commands; c->name; c++)
    if (!strcmp(name, c->name)) return c;
  return NULL;
}

/* The commands whose kernels run in this process through OpenMP: hlb run (hlb's apps' cpu
 * kernels are OpenMP loops). hlb profile-links times its cpu kernel on threads of its own
 * (src/mpi/profile_links.c); the other commands run no kernels. */
static int runs_openmp_kernels(const char *command) {
  return !strcmp(command, "run");
}

/* The process that rerun_with_passive_omp_wait_policy set OMP_WAIT_POLICY for: its pid (kept by
 * execv), so that a value left by another process is not taken for this one's. */
#define OMP_WAIT_POLICY_SETTER "HLB_OMP_WAIT_POLICY_SET_IN"
static int omp_wait_policy_set_by_hlb;

/* With libgomp's default OMP_WAIT_POLICY (spinning at barriers), short runs of hlb's OpenMP cpu
 * kernels took 12x as long in about 1 process of 7 on a 2-core VM: `hlb run kmeans --size 100000
 * --pus cpu --models off` took 0.0044 s usually but 0.053-0.058 s in 2 of 14 processes, and
 * every one of 14 took 0.0045-0.0058 s with OMP_WAIT_POLICY=passive; such a process stores slow
 * runs alone (docs/benchmarks.md, "Runs too short to judge a device in, released after the
 * run"). libgomp reads the variable once, when it is loaded, before main, so setting it here is
 * too late for this process: set it to passive and exec this same binary again with the same
 * argv (argv[0] included). The pid, the open files (stdin, stdout, stderr) and the rest of the
 * environment are kept, and nothing has been started yet: this runs first in main, before any
 * MPI_Init (hlb run --mpi calls it in cmd_run.c), so mpirun's ranks re-exec alike. A value the
 * user set, any value including empty (libgomp then warns and keeps its default), is left as it
 * is; that is also why the exec happens once. Should the exec fail (no /proc), the variables
 * are removed again and the command runs under libgomp's default, with no error. */
static void rerun_with_passive_omp_wait_policy(const char *command, char **argv) {
  char pid[24];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *setter = getenv(OMP_WAIT_POLICY_SETTER);
  if (setter) {
    /* This is the exec'd process, or the name was left by someone else: never passed on. */
    omp_wait_policy_set_by_hlb = !strcmp(setter, pid);
    unsetenv(OMP_WAIT_POLICY_SETTER);
    if (omp_wait_policy_set_by_hlb) return;
  }
  if (!runs_openmp_kernels(command) || getenv("OMP_WAIT_POLICY")) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) == 0 && setenv(OMP_WAIT_POLICY_SETTER, pid, 1) == 0)
    execv("/proc/self/exe", argv); /* returns only on failure */
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(OMP_WAIT_POLICY_SETTER);
}

const char *hlb_cli_omp_wait_policy(int *set_by_hlb) {
  *set_by_hlb = omp_wait_policy_set_by_hlb;
  return getenv("OMP_WAIT_POLICY");
}

int main(int argc, char **argv) {
  if (argc >= 2) rerun_with_passive_omp_wait_policy(argv[1], argv);
  if (argc < 2) {
    usage(stderr);
    return HLB_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || (!strcmp(name, "help") && argc == 2)) {
    usage(stdout);
    return HLB_EXIT_OK;
  }
  if (!strcmp(name, "--version") || !strcmp(name, "-V")) name = "version";
  if (!strcmp(name, "help")) {
    /* hlb help CMD: the same as hlb CMD --help. */
    const command *c = find(argv[2]);
    if (!c || argc > 3) {
      fprintf(stderr, "hlb help: unknown command '%s' (try 'hlb --help')\n", argv[2]);
      return HLB_EXIT_USAGE;
    }
    hlb_cli_print_help(c->spec, stdout);
    return HLB_EXIT_OK;
  }
  const command *c = find(name);
  if (c) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "hlb: unknown command '%s' (try 'hlb --help')\n", name);
  return HLB_EXIT_USAGE;
}
