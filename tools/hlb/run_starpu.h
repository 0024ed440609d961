/* hlb run --runtime starpu: the StarPU side of `hlb run` (run_starpu.c, built only with
 * libhlb_starpu), kept out of cmd_run.c so that file needs no StarPU header. */
#ifndef HLB_CLI_RUN_STARPU_H
#define HLB_CLI_RUN_STARPU_H

#include <stddef.h>

#include "apps.h"
#include "hlb/exec.h"

typedef struct hlb__cli_starpu {
  const char *sched; /* NULL: hlb places (policy, params); else StarPU's scheduler does */
  size_t blocks;     /* equal blocks under sched; 0 = the library's default */
  const char *policy, *params;
  const char **throttle; /* "cpu:1=4" entries */
  unsigned n_throttle;
  int models;            /* hlb_models_mode (--models): hlb places; read/write the model files */
  const char *model_dir; /* --model-dir; NULL: the default directory */
} hlb__cli_starpu;

/* What a run gave beyond the executor's stats. */
typedef struct hlb__cli_starpu_result {
  char placement[32];
  size_t blocks;
  double adapter_s;
} hlb__cli_starpu_result;

/* starpu_init with the scheduler (NULL: StarPU's default, or $STARPU_SCHED). Returns 0, or
 * prints why and returns an exit status. */
int hlb__cli_starpu_start(const char *sched);
void hlb__cli_starpu_stop(void);
/* The names of StarPU's cpu and OpenCL workers ("cpu:0", "opencl:0") into names, up to cap;
 * returns how many there are. */
unsigned hlb__cli_starpu_workers(char (*names)[32], unsigned cap);
/* Run the app: each of its balanced passes (one, or several with the host's step between them)
 * on StarPU's workers, the buffers registered once, later passes starting from what the
 * earlier learnt. stats (summed over the passes) and res are filled when it ran. Returns 0, a
 * negative HLB_E* from the library, or HLB_EXIT_USAGE (already printed) for a bad --throttle. */
int hlb__cli_starpu_run(hlb_app *app, const hlb__cli_starpu *a, hlb_exec_stats *stats,
                        hlb__cli_starpu_result *res);

#endif
