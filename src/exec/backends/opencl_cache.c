/* Built OpenCL program binaries kept across builds and runs (opencl_cache.h). */
#include "exec/backends/opencl_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/files.h"
#include "common/options_internal.h"
#include "exec/model_store.h"

/* A binary file: this magic, the key and the length (8 bytes each, host order), the bytes. */
static const char FILE_MAGIC[8] = {'H', 'L', 'B', 'C', 'L', 'B', 'I', '1'};
#define HEADER_BYTES 24
/* No OpenCL binary of a kernel is this large; a length beyond it is a damaged file. */
#define BINARY_MAX ((size_t)1 << 30)

typedef struct kept {
  uint64_t key;
  unsigned char *bin;
  size_t len;
  struct kept *next;
} kept;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept *kept_list;
static hlb__cl_cache_stats stats;

static void count(unsigned *field) {
  pthread_mutex_lock(&lock);
  (*field)++;
  pthread_mutex_unlock(&lock);
}

void hlb__cl_cache_stats_get(hlb__cl_cache_stats *out) {
  pthread_mutex_lock(&lock);
  *out = stats;
  pthread_mutex_unlock(&lock);
}

void hlb__cl_cache_forget(void) {
  pthread_mutex_lock(&lock);
  while (kept_list) {
    kept *k = kept_list;
    kept_list = k->next;
    free(k->bin);
    free(k);
  }
  memset(&stats, 0, sizeof stats);
  pthread_mutex_unlock(&lock);
}

/* The directory of the binary files (HLB_OPENCL_CACHE, else the model directory's opencl/), or
 * "" when files are off (HLB_OPENCL_CACHE=off, or no directory can be found). */
static void cache_dir(char *out, size_t cap) {
  out[0] = '\0';
  const char *env = hlb__option_env("opencl-cache");
  if (env && strcmp(env, "off") == 0) return;
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return;
  }
  char root[4096];
  if (hlb__model_dir(NULL, root, sizeof root) != 0) {
    hlb_clear_error(); /* no HOME: binaries are kept in memory only */
    return;
  }
  int n = snprintf(out, cap, "%s/opencl", root);
  if (n < 0 || (size_t)n >= cap) out[0] = '\0';
}

/* ---- the key ------------------------------------------------------------------------------ */

static uint64_t hash_text(uint64_t h, const char *text) {
  /* The terminating zero separates the pieces: "ab"+"c" and "a"+"bc" hash apart. */
  return hlb__fnv1a(h, text, strlen(text) + 1);
}

static uint64_t hash_device_info(uint64_t h, cl_device_id dev, cl_device_info what) {
  char text[512] = "";
  clGetDeviceInfo(dev, what, sizeof text - 1, text, NULL);
  return hash_text(h, text);
}

/* What a binary depends on: the platform and its version, the device's name, vendor, driver
 * and OpenCL versions, the build options and the source. Not the device's compute units. */
static uint64_t binary_key(cl_device_id dev, const char *source, const char *options) {
  uint64_t h = hash_text(HLB__FNV_START, "hlb opencl program binary 1");
  cl_platform_id plat = NULL;
  char text[512] = "";
  if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS) {
    clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof text - 1, text, NULL);
    h = hash_text(h, text);
    memset(text, 0, sizeof text);
    clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof text - 1, text, NULL);
    h = hash_text(h, text);
  }
  h = hash_device_info(h, dev, CL_DEVICE_NAME);
  h = hash_device_info(h, dev, CL_DEVICE_VENDOR);
  h = hash_device_info(h, dev, CL_DRIVER_VERSION);
  h = hash_device_info(h, dev, CL_DEVICE_VERSION);
  h = hash_text(h, options);
  return hash_text(h, source);
}

/* ---- memory and files --------------------------------------------------------------------- */

/* A copy of the binary kept in memory under key, or NULL. */
static unsigned char *memory_find(uint64_t key, size_t *len) {
  unsigned char *copy = NULL;
  pthread_mutex_lock(&lock);
  for (kept *k = kept_list; k; k = k->next)
    if (k->key == key) {
      copy = malloc(k->len);
      if (copy) memcpy(copy, k->bin, k->len), *len = k->len;
      break;
    }
  pthread_mutex_unlock(&lock);
  return copy;
}

/* Keep a copy of bin under key (replacing one kept before). */
static void memory_keep(uint64_t key, const unsigned char *bin, size_t len) {
  unsigned char *copy = malloc(len);
  if (!copy) return;
  memcpy(copy, bin, len);
  pthread_mutex_lock(&lock);
  kept *k = kept_list;
  while (k && k->key != key)
    k = k->next;
  if (!k && (k = calloc(1, sizeof *k)) != NULL) {
    k->key = key;
    k->next = kept_list;
    kept_list = k;
  }
  if (k) {
    free(k->bin);
    k->bin = copy, k->len = len;
  } else {
    free(copy);
  }
  pthread_mutex_unlock(&lock);
}

static void file_path(const char *dir, uint64_t key, char *out, size_t cap) {
  snprintf(out, cap, "%s/%016llx.clbin", dir, (unsigned long long)key);
}

/* The binary of the file for key in dir, or NULL (none, another key's, or not whole). */
static unsigned char *file_read(const char *dir, uint64_t key, size_t *len) {
  char path[4200];
  file_path(dir, key, path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char header[HEADER_BYTES], *bin = NULL;
  uint64_t file_key = 0, n = 0;
  if (fread(header, 1, sizeof header, f) == sizeof header &&
      memcmp(header, FILE_MAGIC, sizeof FILE_MAGIC) == 0) {
    memcpy(&file_key, header + 8, 8);
    memcpy(&n, header + 16, 8);
  }
  if (file_key == key && n > 0 && n <= BINARY_MAX && (bin = malloc((size_t)n)) != NULL) {
    int extra = 0;
    if (fread(bin, 1, (size_t)n, f) != (size_t)n || fread(&extra, 1, 1, f) != 0) {
      free(bin); /* short, or longer than it says: not whole */
      bin = NULL;
    }
  }
  fclose(f);
  if (bin) *len = (size_t)n;
  return bin;
}

/* Write the binary's file for key in dir (creating dir). A cache: failing to write only
 * costs a later run a build from source. */
static void file_write(const char *dir, uint64_t key, const unsigned char *bin, size_t len) {
  char folder[4096], path[4200];
  snprintf(folder, sizeof folder, "%s", dir);
  if (hlb__mkdir_p(folder) != 0) return;
  unsigned char *data = malloc(HEADER_BYTES + len);
  if (!data) return;
  uint64_t n = len;
  memcpy(data, FILE_MAGIC, 8);
  memcpy(data + 8, &key, 8);
  memcpy(data + 16, &n, 8);
  memcpy(data + HEADER_BYTES, bin, len);
  file_path(dir, key, path, sizeof path);
  hlb__replace_file(path, data, HEADER_BYTES + len);
  free(data);
}

/* ---- building ----------------------------------------------------------------------------- */

/* The built program's binary for its one device, or NULL. */
static unsigned char *program_binary(cl_program prog, size_t *len) {
  size_t n = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0)
    return NULL;
  unsigned char *bin = malloc(n);
  if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    bin = NULL;
  }
  if (bin) *len = n;
  return bin;
}

/* Build from a binary: the program, or NULL when the platform refuses it. */
static cl_program from_binary(cl_context ctx, cl_device_id dev, const unsigned char *bin,
                              size_t len, const char *options) {
  cl_int status = CL_SUCCESS, err;
  cl_program prog = clCreateProgramWithBinary(ctx, 1, &dev, &len, &bin, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (err == CL_SUCCESS) clReleaseProgram(prog);
    return NULL;
  }
  if (clBuildProgram(prog, 1, &dev, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return NULL;
  }
  return prog;
}

cl_int hlb__cl_program(cl_context ctx, cl_device_id dev, const char *source, const char *options,
                       cl_program *out) {
  *out = NULL;
  if (!source || !options) return CL_INVALID_VALUE;
  uint64_t key = binary_key(dev, source, options);
  char dir[4096];
  cache_dir(dir, sizeof dir);
  size_t len = 0;
  unsigned char *bin = memory_find(key, &len);
  unsigned *where = &stats.memory;
  if (!bin && dir[0]) bin = file_read(dir, key, &len), where = &stats.file;
  if (bin) {
    *out = from_binary(ctx, dev, bin, len, options);
    if (*out) {
      count(where);
      if (where == &stats.file) memory_keep(key, bin, len); /* for the rest of the process */
      free(bin);
      return CL_SUCCESS;
    }
    free(bin);
    count(&stats.refused);
  }
  cl_int err;
  *out = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  if (err != CL_SUCCESS) {
    *out = NULL;
    return err;
  }
  err = clBuildProgram(*out, 1, &dev, options, NULL, NULL);
  if (err != CL_SUCCESS) return err;
  count(&stats.source);
  bin = program_binary(*out, &len);
  if (bin) {
    memory_keep(key, bin, len);
    if (dir[0]) file_write(dir, key, bin, len);
  }
  free(bin);
  return CL_SUCCESS;
}
