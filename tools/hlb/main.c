/* hlb: command-line front end. Each subcommand lives in its own cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define HLB_COMMAND(ident, cli_name)                                                               \
  int hlb_cmd_##ident(int argc, char **argv);                                                      \
  extern const char hlb_cmd_##ident##_help[];
#include "commands.inc"
#undef HLB_COMMAND

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} command;

static const command commands[] = {
#define HLB_COMMAND(ident, cli_name) {cli_name, hlb_cmd_##ident, hlb_cmd_##ident##_help},
#include "commands.inc"
#undef HLB_COMMAND
    {NULL, NULL, NULL}};

static void usage(FILE *to) {
  fprintf(to, "usage: hlb COMMAND [ARGS]\n\ncommands:\n");
  for (const command *c = commands; c->name; c++)
    fprintf(to, "  %-14s %s\n", c->name, c->help);
  fprintf(to, "\n'hlb COMMAND --help' describes one command; every option: docs/options.md\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return HLB_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return HLB_EXIT_OK;
  }
  for (const command *c = commands; c->name; c++)
    if (!strcmp(argv[1], c->name)) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "hlb: unknown command '%s' (try 'hlb --help')\n", argv[1]);
  return HLB_EXIT_USAGE;
}
