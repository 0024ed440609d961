#include <stdio.h>

#include "cli.h"
#include "hlb/version.h"

const hlb_cli_command hlb_cmd_version_spec = {
    .name = "version",
    .operands = "",
    .summary = "print hlb's version (also hlb --version)",
    .about = "Prints the version of the hlb library this command is linked with."};

int hlb_cmd_version(int argc, char **argv) {
  hlb_cli_args a;
  int rc = hlb_cli_parse(&hlb_cmd_version_spec, argc, argv, &a);
  hlb_cli_args_free(&a);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  printf("hlb %s\n", hlb_version());
  return HLB_EXIT_OK;
}
