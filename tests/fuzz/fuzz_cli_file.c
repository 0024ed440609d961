/* The `hlb` commands that read a user's file, each given the input as that file, in-process:
 * `hlb fit SAMPLES.csv`, `hlb partition MODELS.json`, `hlb plan CLUSTER.json`. The first byte
 * chooses the command, so one corpus covers all three. */
#include <getopt.h>
#include <stddef.h>

#include "fuzz.h"

int hlb_cmd_fit(int argc, char **argv);
int hlb_cmd_partition(int argc, char **argv);
int hlb_cmd_plan(int argc, char **argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *path = fuzz_file(data + 1, size - 1, data[0] % 3 == 0 ? ".csv" : ".json");
  optind = 0; /* getopt_long starts afresh for every command */
  switch (data[0] % 3) {
  case 0: {
    char *argv[] = {"fit", (char *)path, "--predict", "1,100", NULL};
    hlb_cmd_fit(4, argv);
    break;
  }
  case 1: {
    char *argv[] = {"partition", (char *)path, "--items", "1000", NULL};
    hlb_cmd_partition(4, argv);
    break;
  }
  default: {
    char *argv[] = {"plan", (char *)path, "--items", "1000", "--time-limit", "1", NULL};
    hlb_cmd_plan(6, argv);
    break;
  }
  }
  return 0;
}
