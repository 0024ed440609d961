#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/version.h"

const char hlb_cmd_version_help[] = "print hlb's version";

int hlb_cmd_version(int argc, char **argv) {
  (void)argv;
  if (argc > 1) return hlb_cli_usage_error("version", "takes no arguments");
  printf("hlb %s\n", hlb_version());
  return HLB_EXIT_OK;
}
