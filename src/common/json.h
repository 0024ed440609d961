/* Reading JSON input files with errors that name the file, the JSON path and the problem,
 * e.g. "cluster.json: nodes[1].pus[0].link.bandwidth_Bps: must be > 0, got -3".
 *
 * A hlb__jctx carries the file name for messages; paths are built by the caller as it
 * descends ("nodes[1].pus[0]"). Every getter returns 0 or HLB_EPARSE with the detail set. */
#ifndef HLB_COMMON_JSON_H
#define HLB_COMMON_JSON_H

#include <stddef.h>

#include <cJSON.h>

typedef struct hlb__jctx {
  const char *file; /* shown first in every message */
} hlb__jctx;

/* Read and parse a whole file. On a syntax error the message gives line and column. */
int hlb__json_load_file(const char *path, cJSON **root_out);

/* Parse text already in memory; `name` stands for the file in messages. */
int hlb__json_parse(const char *name, const char *text, cJSON **root_out);

/* Object member `key` of `obj` (at JSON path `path`) as an object/array; required or not.
 * When optional and absent, *out is NULL and 0 is returned. */
int hlb__json_object(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, const cJSON **out);
int hlb__json_array(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                    int required, const cJSON **out);

/* A finite number member within [lo, hi]; when optional and absent, *out = dflt. */
int hlb__json_number(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, double dflt, double lo, double hi, double *out);

/* A non-negative integer member (no fraction) <= hi; when optional and absent, *out = dflt. */
int hlb__json_size(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                   int required, size_t dflt, size_t hi, size_t *out);

/* A non-empty string member; when optional and absent, *out = dflt. The pointer stays valid as
 * long as the cJSON tree. */
int hlb__json_string(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, const char *dflt, const char **out);

/* A boolean member; when optional and absent, *out = dflt. */
int hlb__json_bool(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                   int required, int dflt, int *out);

/* Reject members of `obj` whose names are not in the NULL-terminated list `known`, so a typo
 * ("latency" for "latency_s") is an error rather than a silently ignored field. */
int hlb__json_only_keys(const hlb__jctx *c, const cJSON *obj, const char *path,
                        const char *const *known);

#endif
