/* hlb__recv_within (src/mpi/liveness.h), the bounded receive of a block's data: a message that
 * arrives is received whole; one whose sender goes silent is given up on, so that the caller
 * can name the sender and end the job instead of hanging in PMPI_Recv (the stop of a rank in the
 * middle of a block's output, docs/reliability.md "MPI faults"). np 2. */
#include <stdlib.h>
#include <time.h>

#include "mpi/check.h"
#include "mpi/liveness.h"

/* Larger than any eager limit: the receive completes only with the sender's progress. */
#define BIG (4u << 20)

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  unsigned char *buf = malloc(BIG);
  CHECK(buf != NULL, "out of memory");
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);

  /* A large message sent late: received whole, well within the bound. */
  if (rank == 1) {
    for (unsigned i = 0; i < BIG; i++)
      buf[i] = (unsigned char)(i * 7u + 3u);
    sleep_s(0.2);
    MPI_Send(buf, (int)BIG, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
  } else {
    int rc = hlb__recv_within(buf, (int)BIG, MPI_BYTE, 1, 11, MPI_COMM_WORLD, 30.0);
    CHECK(rc == MPI_SUCCESS, "the late message: status %d", rc);
    unsigned bad = 0;
    for (unsigned i = 0; i < BIG; i++)
      bad += buf[i] != (unsigned char)(i * 7u + 3u);
    CHECK(bad == 0, "the late message: %u of %u bytes wrong", bad, BIG);
  }

  /* A sender that never sends: given up on after the timeout, not waited for for ever, and
   * the receive cancelled (buf is freed below); rank 1 waits in the barrier meanwhile. */
  if (rank == 0) {
    int rc = hlb__recv_within(buf, (int)BIG, MPI_BYTE, 1, 12, MPI_COMM_WORLD, 0.3);
    CHECK(rc == HLB_RECV_TIMED_OUT, "the silent sender: status %d, expected HLB_RECV_TIMED_OUT",
          rc);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", all ? "FAILED" : "ok");
  free(buf);
  MPI_Finalize();
  return all ? 1 : 0;
}
