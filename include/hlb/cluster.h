/* Cluster description files: one format for `hlb plan` and `hlb sim` (docs/cluster-format.md).
 *
 * A cluster is nodes reached by the manager over a link, each holding PUs reached over their
 * own link; each PU has a time curve for a block of x items. For `hlb sim` the curve is the
 * PU's true compute time; for `hlb plan` the `linear` term is the per-item time and `const`
 * a once-per-PU setup. The file may also carry simulation noise and events.
 *
 * Thread safety: a loaded hlb_cluster is read-only and may be shared between threads.
 */
#ifndef HLB_CLUSTER_H
#define HLB_CLUSTER_H

#include <stddef.h>

#include "hlb/export.h"
#include "hlb/model.h"

HLB_BEGIN_DECLS

/* A link: sending n bytes takes latency_s + n / bandwidth_Bps seconds. */
typedef struct hlb_link {
  double latency_s;
  double bandwidth_Bps; /* > 0; INFINITY for a link that costs nothing */
} hlb_link;

typedef struct hlb_cluster_pu {
  char *name;
  char *kind;       /* "cpu", "gpu", "opencl", ... free text used for grouping in reports */
  unsigned node;    /* index into hlb_cluster.nodes */
  hlb_link link;    /* node -> PU link (PCIe, or free for host cores) */
  hlb_curve time;   /* time for a block of x items (scale 1, no transfer part) */
  double poly[5];   /* the file's terms: const, linear, quadratic, cubic, xlogx */
  size_t max_items; /* cap on items this PU may receive in total; SIZE_MAX when none */
  /* Driver cores (simulator; docs/cluster-format.md): a cpu PU's `cores` (0 when the file gives
   * none; its time curve is for all of them), and, for a PU that holds cores of a cpu PU of its
   * node (a CPU-type OpenCL device, a device's driver thread), that PU's index and how many. */
  unsigned cores;
  int driver_of;         /* index into hlb_cluster.pus, or -1 */
  unsigned driver_cores; /* cores held; 0 when driver_of is -1 */
} hlb_cluster_pu;

typedef struct hlb_cluster_node {
  char *name;
  hlb_link link;      /* manager -> node link */
  double partition_s; /* time to split the node's share among its PUs */
  double merge_s;     /* time to merge the node's results */
  size_t max_items;   /* cap on the node's items (memory); SIZE_MAX when none */
  unsigned first_pu;  /* the node's PUs are pus[first_pu .. first_pu + n_pus) */
  unsigned n_pus;
} hlb_cluster_node;

typedef enum hlb_event_kind {
  HLB_EVENT_SLOWDOWN = 0, /* from at_s on, the PU's compute time is multiplied by `slowdown` */
  HLB_EVENT_FAIL = 1      /* at at_s the PU dies; its block in flight is lost */
} hlb_event_kind;

typedef struct hlb_cluster_event {
  double at_s;
  unsigned pu; /* index into hlb_cluster.pus */
  hlb_event_kind kind;
  double slowdown; /* for HLB_EVENT_SLOWDOWN; 1.0 ends an earlier slowdown */
} hlb_cluster_event;

typedef struct hlb_cluster {
  unsigned n_nodes, n_pus, n_events;
  hlb_cluster_node *nodes;
  hlb_cluster_pu *pus;                  /* grouped by node, in file order */
  hlb_cluster_event *events;            /* sorted by at_s (stable) */
  double item_in_bytes, item_out_bytes; /* bytes sent to and from a PU per item */
  double noise_sigma; /* lognormal sigma of per-block compute noise in the simulator; 0 = none */
  /* Mean of an exponential delay added to every block's compute in the simulator, whatever its
   * size: a busy host's scheduling delays (threads waiting for a core), which a 10 us block
   * meets as often as a 10 ms one. 0 = none. */
  double host_jitter_s;
  /* How an item's cost varies along the index ("cost_map"): weight of each of cost_slices
   * equal slices of the items, mean 1; cost_prefix[k] = sum of the first k weights.
   * cost_slices 0: every item costs the same. Use hlb_cluster_range_cost(). */
  unsigned cost_slices;
  double *cost_weight;
  double *cost_prefix;
  /* cost_map.declared: the simulated app says its items vary (hlb_codelet.items_vary), so
   * the balancer is told so (hlb_balancer_config.items_vary). */
  int cost_declared;
} hlb_cluster;

/* Load and validate a cluster file. On error returns HLB_EIO or HLB_EPARSE and
 * hlb_last_error() names the file, the JSON path and what is wrong. */
HLB_EXTERN int hlb_cluster_load(const char *path, hlb_cluster **out);

/* The same from JSON text; `name` stands for the file in messages. */
HLB_EXTERN int hlb_cluster_parse(const char *name, const char *json_text, hlb_cluster **out);

HLB_EXTERN void hlb_cluster_free(hlb_cluster *c);

/* The cost of items [begin, begin + count) of a run of n_items, in average items: what a PU's
 * curve is applied to in the simulator. `count` when the cluster has no cost map; over the
 * whole run it is always n_items. */
HLB_EXTERN double hlb_cluster_range_cost(const hlb_cluster *c, size_t n_items, size_t begin,
                                         size_t count);

/* Index of the PU called `name`, or -1. */
HLB_EXTERN int hlb_cluster_find_pu(const hlb_cluster *c, const char *name);

/* Index of the node called `name`, or -1. */
HLB_EXTERN int hlb_cluster_find_node(const hlb_cluster *c, const char *name);

/* Largest block size for which the file guarantees a PU time curve is non-negative and
 * non-decreasing: curves are checked on x in [1, HLB_CLUSTER_CURVE_MAX_X]. */
#define HLB_CLUSTER_CURVE_MAX_X 1e12

/* Time of one message of `bytes` over a link: latency_s + bytes / bandwidth_Bps. */
HLB_EXTERN double hlb_link_time(const hlb_link *l, double bytes);

/* A link from ping-pong measurements (Boinski & Czarnul, section 4.3 and eq. 4).
 * bytes[0] is the tiny "empty" message: its one-way time (roundtrip_s[0] / 2) is the
 * latency. For each consecutive pair k-1, k with k >= 2, eq. 4 gives
 * b = (S_k - S_{k-1}) / (T_k - T_{k-1}) with T the one-way times; the bandwidth is the mean
 * of those (their Table A.3 averages 1, 2, 8, 16, 32 MiB against the next smaller size).
 * Needs n >= 3, sizes strictly increasing and one-way times strictly increasing over
 * bytes[1..]; HLB_EINVAL otherwise, naming the offending entry. */
HLB_EXTERN int hlb_link_from_pingpong(const double *bytes, const double *roundtrip_s, unsigned n,
                                      hlb_link *out);

HLB_END_DECLS

#endif
