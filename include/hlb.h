/* hlb: heterogeneous load balancing. Include this one header for the whole public API. */
#ifndef HLB_H
#define HLB_H

#include "hlb/error.h"
#include "hlb/version.h"
#include "hlb/model.h"
#include "hlb/cluster.h"
#include "hlb/balancer.h"
#include "hlb/policy.h"

#endif
