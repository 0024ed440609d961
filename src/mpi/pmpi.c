/* PMPI wrappers: the MPI calls an SPMD code makes inside a measurement window are timed so
 * that compute time = real time - MPI time (FLEX-MPI, section 3.2: without this split a fast
 * rank waiting in communication looks slow). Outside a window they cost one branch. These
 * definitions take precedence over libmpi's because libhlb_mpi is linked before it.
 *
 * Every C call in which a rank can wait is wrapped: point-to-point (blocking sends and
 * receives, Sendrecv and Sendrecv_replace, Probe and matched probe/receive), completion (the
 * Wait and Test families, where non-blocking point-to-point and non-blocking collectives
 * complete), and every blocking collective, the neighbourhood ones included. Calls that only
 * start an operation (Isend, Iallreduce, ...) return at once and are not timed. Fortran
 * bindings are not wrapped. Another PMPI tool (mpiP, Score-P) defines the same symbols: build
 * with -DHLB_PMPI_WRAPPERS=OFF to leave them to it (then MPI time counts as compute time, as
 * docs/mpi.md says). */
#include <mpi.h>

#include "hlb/export.h"
#include "mpi/liveness.h"
#include "mpi/monitor.h"

#define TIMED(call)                                                                                \
  do {                                                                                             \
    if (!hlb__mpi_window_open) return call;                                                        \
    double t0_ = PMPI_Wtime();                                                                     \
    int rc_ = call;                                                                                \
    hlb__mpi_comm_s += PMPI_Wtime() - t0_;                                                         \
    return rc_;                                                                                    \
  } while (0)

/* While an hlb_spmd exists, a blocking collective is its non-blocking form and a bounded wait
 * (liveness.h), so a stopped rank cannot hang the others in it. */
#define BOUNDED(name, start)                                                                       \
  do {                                                                                             \
    if (hlb__live_on) {                                                                            \
      MPI_Request rq_;                                                                             \
      int src_ = start;                                                                            \
      if (src_ != MPI_SUCCESS) return src_;                                                        \
      TIMED(hlb__live_wait(&rq_, name));                                                           \
    }                                                                                              \
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
  BOUNDED("MPI_Allreduce", PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, &rq_));
  TIMED(PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm));
}

HLB_EXTERN int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          int root, MPI_Comm comm) {
  TIMED(PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
}

HLB_EXTERN int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  BOUNDED("MPI_Bcast", PMPI_Ibcast(buf, count, dt, root, comm, &rq_));
  TIMED(PMPI_Bcast(buf, count, dt, root, comm));
}

HLB_EXTERN int MPI_Barrier(MPI_Comm comm) {
  BOUNDED("MPI_Barrier", PMPI_Ibarrier(comm, &rq_));
  TIMED(PMPI_Barrier(comm));
}

HLB_EXTERN int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                             MPI_Datatype rdt, MPI_Comm comm) {
  BOUNDED("MPI_Allgather", PMPI_Iallgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, &rq_));
  TIMED(PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                              const int rcounts[], const int displs[], MPI_Datatype rdt,
                              MPI_Comm comm) {
  BOUNDED("MPI_Allgatherv",
          PMPI_Iallgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, &rq_));
  TIMED(PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
}

HLB_EXTERN int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                            MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                             MPI_Datatype sdt, void *rbuf, const int rcounts[], const int rdispls[],
                             MPI_Datatype rdt, MPI_Comm comm) {
  BOUNDED("MPI_Alltoallv",
          PMPI_Ialltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, &rq_));
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

/* ---- the rest of the calls a rank can wait in ---- */

HLB_EXTERN int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                         MPI_Comm comm) {
  TIMED(PMPI_Ssend(buf, count, dt, dest, tag, comm));
}

HLB_EXTERN int MPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                         MPI_Comm comm) {
  TIMED(PMPI_Bsend(buf, count, dt, dest, tag, comm));
}

HLB_EXTERN int MPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                         MPI_Comm comm) {
  TIMED(PMPI_Rsend(buf, count, dt, dest, tag, comm));
}

HLB_EXTERN int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag,
                                    int source, int rtag, MPI_Comm comm, MPI_Status *status) {
  TIMED(PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status));
}

HLB_EXTERN int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  TIMED(PMPI_Probe(source, tag, comm, status));
}

HLB_EXTERN int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  TIMED(PMPI_Iprobe(source, tag, comm, flag, status));
}

HLB_EXTERN int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                          MPI_Status *status) {
  TIMED(PMPI_Mprobe(source, tag, comm, message, status));
}

HLB_EXTERN int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                         MPI_Status *status) {
  TIMED(PMPI_Mrecv(buf, count, dt, message, status));
}

HLB_EXTERN int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  TIMED(PMPI_Waitany(count, requests, index, status));
}

HLB_EXTERN int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]) {
  TIMED(PMPI_Waitsome(incount, requests, outcount, indices, statuses));
}

HLB_EXTERN int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  TIMED(PMPI_Test(request, flag, status));
}

HLB_EXTERN int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status) {
  TIMED(PMPI_Testany(count, requests, index, flag, status));
}

HLB_EXTERN int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  TIMED(PMPI_Testall(count, requests, flag, statuses));
}

HLB_EXTERN int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]) {
  TIMED(PMPI_Testsome(incount, requests, outcount, indices, statuses));
}

HLB_EXTERN int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                           MPI_Datatype rdt, int root, MPI_Comm comm) {
  TIMED(PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

HLB_EXTERN int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
                             const MPI_Datatype sdts[], void *rbuf, const int rcounts[],
                             const int rdispls[], const MPI_Datatype rdts[], MPI_Comm comm) {
  TIMED(PMPI_Alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm));
}

HLB_EXTERN int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                                  MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  TIMED(PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm));
}

HLB_EXTERN int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                                        MPI_Op op, MPI_Comm comm) {
  TIMED(PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm));
}

HLB_EXTERN int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm) {
  TIMED(PMPI_Scan(sbuf, rbuf, count, dt, op, comm));
}

HLB_EXTERN int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm) {
  TIMED(PMPI_Exscan(sbuf, rbuf, count, dt, op, comm));
}

HLB_EXTERN int MPI_Neighbor_allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                      int rcount, MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Neighbor_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Neighbor_allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                       const int rcounts[], const int displs[], MPI_Datatype rdt,
                                       MPI_Comm comm) {
  TIMED(PMPI_Neighbor_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
}

HLB_EXTERN int MPI_Neighbor_alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                     int rcount, MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Neighbor_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

HLB_EXTERN int MPI_Neighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                                      MPI_Datatype sdt, void *rbuf, const int rcounts[],
                                      const int rdispls[], MPI_Datatype rdt, MPI_Comm comm) {
  TIMED(PMPI_Neighbor_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm));
}

HLB_EXTERN int MPI_Neighbor_alltoallw(const void *sbuf, const int scounts[],
                                      const MPI_Aint sdispls[], const MPI_Datatype sdts[],
                                      void *rbuf, const int rcounts[], const MPI_Aint rdispls[],
                                      const MPI_Datatype rdts[], MPI_Comm comm) {
  TIMED(PMPI_Neighbor_alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm));
}
