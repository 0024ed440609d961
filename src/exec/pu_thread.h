/* A PU's driver thread, kept by the executor from run to run.
 *
 * A run used to start one thread per PU and join it at the end. A cpu PU's kernel
 * parallelises with OpenMP, whose team of threads belongs to the thread that opens the
 * parallel region: a new driver thread per run made a new team per run. On a 16-core machine
 * (an H100 host, 2026-11-26) every pass of spmv then began with a cpu block of about 2 ms
 * however small (26 rows: 1.7 ms; its later blocks 0.1-0.2 ms for thousands), eight times a
 * run, and that block misled the judge of the devices beside it. A driver thread that lives as
 * long as the executor keeps its team, and a library's per-thread state (the apps' cuBLAS
 * handle), for every run of the session. */
#ifndef HLB_EXEC_PU_THREAD_H
#define HLB_EXEC_PU_THREAD_H

#include <pthread.h>

typedef struct hlb__pu_thread {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  void (*job)(void *); /* posted and not finished yet; NULL when idle */
  void *arg;
  int quit;
  int alive; /* the thread was started (and mu, cv made) */
} hlb__pu_thread;

/* Run job(arg) on t's thread, starting the thread on first use. t must be idle (zeroed, or
 * every job waited for). 0, or the error of pthread_create (the job is then not run). */
int hlb__pu_thread_post(hlb__pu_thread *t, void (*job)(void *), void *arg);
/* Wait until the job posted on t has returned. */
void hlb__pu_thread_wait(hlb__pu_thread *t);
/* End t's thread (after its job) and free what it holds; t is zeroed, ready for a new post. */
void hlb__pu_thread_stop(hlb__pu_thread *t);

#endif
