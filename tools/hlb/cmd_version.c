#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlb/version.h"

const char hlb_cmd_version_help[] = "print hlb's version";

int hlb_cmd_version(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    puts("usage: hlb version   (prints the version of the hlb library linked)");
    return HLB_EXIT_OK;
  }
  if (argc > 1) return hlb_cli_usage_error("version", "takes no arguments");
  printf("hlb %s\n", hlb_version());
  return HLB_EXIT_OK;
}
