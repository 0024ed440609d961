/* Small file and hashing helpers shared by the stores that keep things across runs (the
 * model store, the OpenCL program cache). */
#ifndef HLB_COMMON_FILES_H
#define HLB_COMMON_FILES_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a, 64 bits: h is HLB__FNV_START or an earlier result, to hash several pieces in turn. */
#define HLB__FNV_START 0xcbf29ce484222325ull
uint64_t hlb__fnv1a(uint64_t h, const void *data, size_t n);

/* Create `path` and its missing parents (mode 0755). path is modified during the call and
 * restored. 0, or -1 with errno. */
int hlb__mkdir_p(char *path);

/* Write n bytes to `path` through a temporary file in the same directory and a rename, so a
 * reader sees the old file or the new one, never half of one (mode 0644). 0, or -1 with errno. */
int hlb__replace_file(const char *path, const void *data, size_t n);

#endif
