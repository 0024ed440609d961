/* hlb: heterogeneous load balancing. Include this one header for the whole public API of
 * libhlb. (The MPI layer, libhlb_mpi, has its own header: hlb/mpi.h.) */
#ifndef HLB_H
#define HLB_H

#include "hlb/error.h"
#include "hlb/version.h"
#include "hlb/model.h"
#include "hlb/partition.h"
#include "hlb/plan.h"
#include "hlb/ccp.h"
#include "hlb/cluster.h"
#include "hlb/balancer.h"
#include "hlb/policy.h"
#include "hlb/repartition.h"
#include "hlb/sim.h"
#include "hlb/exec.h"
#include "hlb/models.h"
#include "hlb/options.h"

#endif
