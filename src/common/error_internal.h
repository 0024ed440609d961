/* Internal error helpers: raise an error with the detail a person needs. */
#ifndef HLB_COMMON_ERROR_INTERNAL_H
#define HLB_COMMON_ERROR_INTERNAL_H

#include "hlb/error.h"

/* Record a printf-style detail for the current thread and return code, so a failing
 * function can end with `return hlb__error(HLB_EINVAL, "pu %u: time %g", p, t);`. */
int hlb__error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the current detail with more context ("cluster.json: " + "nodes[0]: ..."). Returns code.
 */
int hlb__error_prefix(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
