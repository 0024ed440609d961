/* Bounded waits of SPMD codes (liveness.h). Only PMPI_ calls here: the wrappers call in. */
#include "mpi/liveness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/error_internal.h"
#include "common/options_internal.h"

enum { TAG_PING = 0x4c11, TAG_PONG = 0x4c12 };
/* Spin this long before sleeping between tests: a collective's usual wait stays as fast as
 * PMPI_Wait's own spinning, a long one leaves the core to others. */
#define LIVE_SPIN_S 0.01
#define LIVE_NAP_S 100e-6

int hlb__live_on = 0;
static int users;
static MPI_Comm live_comm = MPI_COMM_NULL;
static int live_rank, live_size;
static double timeout_s;
static int round_no; /* the ping round this rank started; stale pongs carry an older one */

int hlb__live_start(MPI_Comm comm) {
  if (users++) return 0;
  double t = 0.0;
  int rc = 0;
  PMPI_Comm_rank(comm, &live_rank);
  if (live_rank == 0) rc = hlb__option_env_number("mpi-timeout", &t);
  int bad = rc != 0;
  /* Every rank learns rank 0's verdict, so none goes on alone. */
  PMPI_Bcast(&bad, 1, MPI_INT, 0, comm);
  if (bad) {
    users--;
    return rc ? rc : hlb__error(HLB_EINVAL, "spmd: rank 0 rejected HLB_MPI_TIMEOUT");
  }
  PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm);
  if (PMPI_Comm_dup(comm, &live_comm) != MPI_SUCCESS) {
    users--;
    return hlb__error(HLB_EMPI, "spmd: MPI_Comm_dup for the liveness pings failed");
  }
  PMPI_Comm_size(live_comm, &live_size);
  timeout_s = t;
  hlb__live_on = 1;
  return 0;
}

void hlb__live_stop(void) {
  if (users == 0 || --users) return;
  hlb__live_on = 0;
  PMPI_Comm_free(&live_comm);
}

static void nap(void) {
  struct timespec ts = {0, (long)(LIVE_NAP_S * 1e9)};
  nanosleep(&ts, NULL);
}

/* Answer every ping that arrived (its round comes back in the pong); drop stale pongs. */
static void answer_pings(void) {
  for (;;) {
    int flag = 0, round;
    MPI_Status st;
    PMPI_Iprobe(MPI_ANY_SOURCE, TAG_PING, live_comm, &flag, &st);
    if (!flag) return;
    PMPI_Recv(&round, 1, MPI_INT, st.MPI_SOURCE, TAG_PING, live_comm, MPI_STATUS_IGNORE);
    MPI_Request rq;
    PMPI_Isend(&round, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, live_comm, &rq);
    PMPI_Request_free(&rq); /* one int: sent eagerly, nothing to wait for */
  }
}

/* Take the pongs of this round; answered[r] = 1 for each rank that answered. */
static void take_pongs(char *answered) {
  for (;;) {
    int flag = 0, round;
    MPI_Status st;
    PMPI_Iprobe(MPI_ANY_SOURCE, TAG_PONG, live_comm, &flag, &st);
    if (!flag) return;
    PMPI_Recv(&round, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, live_comm, MPI_STATUS_IGNORE);
    if (round == round_no) answered[st.MPI_SOURCE] = 1;
  }
}

static void ping_all(void) {
  round_no++;
  for (int r = 0; r < live_size; r++) {
    if (r == live_rank) continue;
    MPI_Request rq;
    PMPI_Isend(&round_no, 1, MPI_INT, r, TAG_PING, live_comm, &rq);
    PMPI_Request_free(&rq);
  }
}

/* The wait outlived the timeout: say who did not answer, and end the job. */
static void abort_naming(const char *call, double waited, const char *answered) {
  char list[256] = "";
  size_t at = 0;
  for (int r = 0; r < live_size && at + 16 < sizeof list; r++)
    if (r != live_rank && !answered[r])
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", at ? ", " : "", r);
  fprintf(stderr,
          "hlb spmd: rank %d waited %.1f s in %s (HLB_MPI_TIMEOUT=%g s); rank %s did not answer: "
          "stopped, hung or unreachable; aborting the job\n",
          live_rank, waited, call, timeout_s, at ? list : "(every rank answered: a deadlock?)");
  fflush(stderr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
}

int hlb__live_wait(MPI_Request *rq, const char *call) {
  double t0 = PMPI_Wtime(), ping_at = 0.75 * timeout_s;
  char *answered = NULL;
  for (;;) {
    int done = 0;
    int rc = PMPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) {
      free(answered);
      return rc;
    }
    answer_pings();
    double waited = PMPI_Wtime() - t0;
    if (waited > ping_at && !answered) {
      answered = calloc((size_t)live_size, 1);
      if (!answered) abort_naming(call, waited, "");
      ping_all();
    }
    if (answered) take_pongs(answered);
    if (waited > timeout_s) abort_naming(call, waited, answered);
    if (waited > LIVE_SPIN_S) nap();
  }
}

int hlb__recv_within(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                     double timeout_s) {
  MPI_Request rq;
  int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, &rq);
  if (rc != MPI_SUCCESS) return rc;
  double t0 = PMPI_Wtime();
  for (;;) {
    int done = 0;
    rc = PMPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    double waited = PMPI_Wtime() - t0;
    if (waited > timeout_s) {
      /* Nothing may land in buf after the return (a test frees it): an unmatched receive is
       * cancelled; a matched one that cannot be is let go, its caller ends the job. */
      PMPI_Cancel(&rq);
      PMPI_Request_free(&rq);
      return HLB_RECV_TIMED_OUT;
    }
    if (waited > LIVE_SPIN_S) nap();
  }
}

void hlb__abort_silent_sender(const char *me, const char *who, double timeout_s, size_t len,
                              const char *what, MPI_Comm comm) {
  fprintf(stderr,
          "%s: %s sent nothing for %.1f s (HLB_MPI_TIMEOUT=%g s) in the middle of %zu bytes "
          "(%s): it is stopped, hung or unreachable; aborting the job\n",
          me, who, timeout_s, timeout_s, len, what);
  fflush(stderr);
  PMPI_Abort(comm, 1);
  abort();
}
