/* PMPI wrappers: the MPI calls an SPMD code makes inside a measurement window are timed so
 * that compute time = real time - MPI time (FLEX-MPI 3.2: without this split a fast rank
 * waiting in communication looks slow). Outside a window they cost one branch. These
 * definitions take precedence over libmpi's because libhlb_mpi is linked before it. */
#include <mpi.h>

#include "hlb/export.h"
#include "mpi/monitor.h"

double hlb__mpi_comm_s = 0.0;
int hlb__mpi_window_open = 0;

#define TIMED(call)                                                                                \
  do {                                                                                             \
    if (!hlb__mpi_window_open) return call;                                                        \
    double t0_ = PMPI_Wtime();                                                                     \
    int rc_ = call;                                                                                \
    hlb__mpi_comm_s += PMPI_Wtime() - t0_;                                                         \
    return rc_;                                                                                    \
  } while (0)

HLB_EXTERN int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                        MPI_Comm comm) {
  TIMED(PMPI_Send(buf, count, dt, dest, tag, comm));
}

HLB_EXTERN int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                        MPI_Status *status) {
  TIMED(PMPI_Recv(buf, count, dt, source, tag, comm, status));
}

HLB_EXTERN int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag,
                            void *rbuf, int rcount, MPI_Datatype rdt, int source, int rtag,
                            MPI_Comm comm, MPI_Status *status) {
  TIMED(
      PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, status));
}

HLB_EXTERN int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  TIMED(PMPI_Wait(request, status));
}

HLB_EXTERN int MPI_Waitall(int count, MPI_Request requests[], MPI_Status *statuses) {
  TIMED(PMPI_Waitall(count, requests, statuses));
}

HLB_EXTERN int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm) {
  TIMED(PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm));
}

HLB_EXTERN int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          int root, MPI_Comm comm) {
  TIMED(PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
}

HLB_EXTERN int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  TIMED(PMPI_Bcast(buf, count, dt, root, comm));
}

HLB_EXTERN int MPI_Barrier(MPI_Comm comm) {
  TIMED(PMPI_Barrier(comm));
}

HLB_EXTERN int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                             MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                              const int rcounts[], const int displs[], MPI_Datatype rdt,
                              MPI_Comm comm) {
  TIMED(PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
}

HLB_EXTERN int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                            MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                             MPI_Datatype sdt, void *rbuf, const int rcounts[], const int rdispls[],
                             MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm));
}

HLB_EXTERN int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                          MPI_Datatype rdt, int root, MPI_Comm comm) {
  TIMED(PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

HLB_EXTERN int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                           const int rcounts[], const int displs[], MPI_Datatype rdt, int root,
                           MPI_Comm comm) {
  TIMED(PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm));
}

HLB_EXTERN int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
                            MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
                            MPI_Comm comm) {
  TIMED(PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm));
}
