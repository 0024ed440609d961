/* hlb: command-line front end. Each subcommand lives in its own cmd_<name>.c, which defines
 * `int hlb_cmd_<name>(int argc, char **argv)` and `const hlb_cli_command hlb_cmd_<name>_spec`
 * (its usage, summary and help; its flags are the rows of the options table that name it). */
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv) {
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
