/* What every fuzz target shares (docs/reliability.md): libFuzzer's entry points, and a way to
 * hand the input to a parser that reads a file. */
#ifndef HLB_TESTS_FUZZ_H
#define HLB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a NUL-terminated string (freed by the caller). */
char *fuzz_text(const uint8_t *data, size_t size);

/* The input written to this process's scratch file (in /dev/shm when there is one): its path,
 * valid until the next call. */
const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix);

/* stdout and stderr to /dev/null: the commands print their results and their errors. */
void fuzz_quiet(void);

#endif
