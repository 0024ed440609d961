/* A PU's driver thread kept from run to run (pu_thread.h). */
#include "exec/pu_thread.h"

#include <string.h>

static void *serve(void *arg) {
  hlb__pu_thread *t = arg;
  pthread_mutex_lock(&t->mu);
  for (;;) {
    while (!t->job && !t->quit)
      pthread_cond_wait(&t->cv, &t->mu);
    if (!t->job) break; /* quit, nothing posted */
    void (*job)(void *) = t->job;
    void *job_arg = t->arg;
    pthread_mutex_unlock(&t->mu);
    job(job_arg);
    pthread_mutex_lock(&t->mu);
    t->job = NULL;
    pthread_cond_broadcast(&t->cv);
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

int hlb__pu_thread_post(hlb__pu_thread *t, void (*job)(void *), void *arg) {
  if (!t->alive) {
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->job = job;
    t->arg = arg;
    t->quit = 0;
    int rc = pthread_create(&t->th, NULL, serve, t);
    if (rc) {
      pthread_cond_destroy(&t->cv);
      pthread_mutex_destroy(&t->mu);
      memset(t, 0, sizeof *t);
      return rc;
    }
    t->alive = 1;
    return 0;
  }
  pthread_mutex_lock(&t->mu);
  t->job = job;
  t->arg = arg;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  return 0;
}

void hlb__pu_thread_wait(hlb__pu_thread *t) {
  if (!t->alive) return;
  pthread_mutex_lock(&t->mu);
  while (t->job)
    pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
}

void hlb__pu_thread_stop(hlb__pu_thread *t) {
  if (!t->alive) return;
  pthread_mutex_lock(&t->mu);
  t->quit = 1;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  pthread_join(t->th, NULL);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  memset(t, 0, sizeof *t);
}
