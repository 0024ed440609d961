/* Bounded waits of SPMD codes (docs/reliability.md, "MPI faults"). While an hlb_spmd object
 * exists, the PMPI wrappers of the blocking collectives an SPMD code and hlb's own layer wait in
 * start the non-blocking form and wait here: a wait longer than 3/4 of HLB_MPI_TIMEOUT pings
 * every rank, ranks that wait in such a call answer, and after the last quarter the ranks that
 * did not answer are named and the job aborted. A stopped or hung rank then ends the job
 * within HLB_MPI_TIMEOUT instead of hanging it. */
#ifndef HLB_MPI_LIVENESS_H
#define HLB_MPI_LIVENESS_H

#include <mpi.h>

/* 1 while waits are bounded (between hlb__live_start and hlb__live_stop). */
extern int hlb__live_on;

/* Collective over comm: rank 0's HLB_MPI_TIMEOUT for all, and a private communicator for the
 * pings. Nested starts (several hlb_spmd objects) share the first. */
int hlb__live_start(MPI_Comm comm);
void hlb__live_stop(void);

/* Wait for *rq like PMPI_Wait, answering pings; aborts the job when the wait outlives the
 * timeout and names the ranks that did not answer. `call` names the MPI call for the message. */
int hlb__live_wait(MPI_Request *rq, const char *call);

/* A point-to-point receive that gives up: PMPI_Irecv, then tests (spinning 10 ms, then napping)
 * until the message is complete or timeout_s has passed. Returns the MPI status code when it
 * completed, HLB_RECV_TIMED_OUT when it did not (the receive is then cancelled). Used for a
 * block's data, whose header has arrived: a sender stopped in the middle of a large
 * (rendezvous) message would otherwise hang the receiver in PMPI_Recv, out of reach of its
 * silence checks. Works whether or not hlb__live_on. */
#define HLB_RECV_TIMED_OUT (-1)
int hlb__recv_within(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                     double timeout_s);

/* After HLB_RECV_TIMED_OUT: "`me`: `who` sent nothing for ... in the middle of `len` bytes
 * (`what`) ...", then MPI_Abort of comm. Does not return. */
void hlb__abort_silent_sender(const char *me, const char *who, double timeout_s, size_t len,
                              const char *what, MPI_Comm comm);

#endif
