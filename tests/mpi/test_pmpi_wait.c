/* Time a rank spends waiting in MPI calls other than the old sixteen (MPI_Waitany, the Test
 * family, MPI_Sendrecv_replace, MPI_Probe) counts as communication, not compute: rank 1 sends
 * 0.2 s late, rank 0 waits for it inside a measurement window in each of those calls. np 2. */
#include <time.h>

#include "hlb/mpi.h"
#include "mpi/check.h"
#include "mpi/monitor.h"

#define LATE_S 0.2

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Rank 0's MPI time in a window where it waits with `how` for a message rank 1 sends late. */
static double comm_time_of(int how, int rank) {
  hlb__monitor m;
  hlb__monitor_init(&m, 0);
  double value = rank, got = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  hlb__monitor_begin(&m);
  if (rank == 1) {
    sleep_s(LATE_S);
    if (how == 3)
      MPI_Sendrecv_replace(&value, 1, MPI_DOUBLE, 0, 7, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(&value, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
  } else if (how == 3) {
    got = value;
    MPI_Sendrecv_replace(&got, 1, MPI_DOUBLE, 1, 7, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (how == 2) {
    MPI_Status st;
    MPI_Probe(1, 7, MPI_COMM_WORLD, &st);
    MPI_Recv(&got, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Request req;
    MPI_Irecv(&got, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &req);
    int index = -1, flag = 0;
    if (how == 0)
      MPI_Waitany(1, &req, &index, MPI_STATUS_IGNORE);
    else
      while (!flag)
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
  }
  hlb__monitor_end(&m, 1, 1);
  hlb_rank_interval iv = hlb__monitor_take(&m, 1);
  hlb__monitor_fini(&m);
  if (rank == 0) CHECK(got == 1.0, "method %d: received %g", how, got);
  return iv.comm_s;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(check_who, sizeof check_who, "rank %d: ", rank);
  static const char *const names[] = {"MPI_Waitany", "MPI_Test", "MPI_Probe",
                                      "MPI_Sendrecv_replace"};
  for (int how = 0; how < 4; how++) {
    double c = comm_time_of(how, rank);
    /* A polling loop of MPI_Test spends part of its time between the calls (the loop and the
     * wrapper's own clock reads), so only most of the wait is inside them. Without the
     * wrappers each figure is 0. */
    double least = how == 1 ? 0.3 * LATE_S : 0.8 * LATE_S;
    if (rank == 0)
      CHECK(c >= least, "%s: %.3f s of waiting counted as MPI time, expected at least %.2f s",
            names[how], c, least);
  }
  int all = 0;
  MPI_Allreduce(&check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", all ? "FAILED" : "ok");
  MPI_Finalize();
  return all ? 1 : 0;
}
