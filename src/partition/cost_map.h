/* Cost maps of cluster files (cost_map.c; docs/cluster-format.md, "cost_map"). */
#ifndef HLB_PARTITION_COST_MAP_H
#define HLB_PARTITION_COST_MAP_H

#include "hlb/cluster.h"

struct cJSON;
struct hlb__jctx;

/* Read the optional "cost_map" member of a cluster file into cl (nothing when absent). */
int hlb__cost_map_read(const struct hlb__jctx *c, const struct cJSON *root, hlb_cluster *cl);

/* Smallest and largest slice weight (both 1 without a map). */
void hlb__cost_map_extremes(const hlb_cluster *c, double *lo, double *hi);

#endif
