/* Built OpenCL program binaries kept across builds and runs (opencl_cache.c).
 *
 * Building a codelet's program from source costs PoCL 27-32 ms each time even when its own
 * kernel cache holds the result (a 1-CU sub-device or the whole 2-CU device of this machine's
 * CPU, the k-means kernel); from the binary of an earlier build it costs 1 ms. The executor
 * builds again whenever it reopens a device with other cores (a released cpu PU's core given
 * to PoCL, a takeover tried): inside the run, in its makespan. So every program built here is
 * kept as a binary, in memory for the process and in a file for later runs, keyed by what the
 * binary depends on (platform, device name, vendor, driver and OpenCL versions, build options
 * and source); a device of the same name takes the binary whatever its cores (PoCL's 1-CU
 * sub-device runs the whole device's binary and the other way round). A binary the platform
 * refuses, or a file that is not whole, is rebuilt from source and replaced. */
#ifndef HLB_EXEC_OPENCL_CACHE_H
#define HLB_EXEC_OPENCL_CACHE_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* Create and build `source` for device `dev` in `ctx` with `options`, from a kept binary when
 * there is one. CL_SUCCESS and *out, or the error of the build from source (*out then NULL
 * when the program could not even be created; else the failed program, for its build log). */
cl_int hlb__cl_program(cl_context ctx, cl_device_id dev, const char *source, const char *options,
                       cl_program *out);

/* Where binaries came from since the process started (or the last forget), for tests. */
typedef struct hlb__cl_cache_stats {
  unsigned memory;  /* builds from a binary kept in memory */
  unsigned file;    /* builds from a binary read from the cache directory */
  unsigned source;  /* builds from source (nothing kept, or a binary the platform refused) */
  unsigned refused; /* kept binaries the platform refused (then built from source) */
} hlb__cl_cache_stats;
void hlb__cl_cache_stats_get(hlb__cl_cache_stats *out);

/* Drop the binaries kept in memory and zero the counts (the files stay): for tests, as a new
 * process would start. */
void hlb__cl_cache_forget(void);

#endif
