/* Error codes and error text.
 *
 * Every fallible hlb function returns int: 0 on success or a negative HLB_E* code. The code
 * says what kind of failure it was; hlb_last_error() says where and with which value
 * ("cluster.json: nodes[1].pus[0].link.bandwidth_Bps: must be > 0, got -3").
 *
 * Thread safety: the last-error text is kept per thread, so every function here is safe to
 * call from any thread.
 */
#ifndef HLB_ERROR_H
#define HLB_ERROR_H

#include <stdarg.h>

#include "hlb/export.h"

HLB_BEGIN_DECLS

/* The one list of error codes: X(name, value, message). The enum, hlb_err_name() and
 * hlb_strerror() are all generated from it, and tests/unit/common checks they agree. */
#define HLB_ERROR_LIST(X)                                                                          \
  X(HLB_OK, 0, "success")                                                                          \
  X(HLB_EINVAL, -1, "invalid argument")                                                            \
  X(HLB_ENOMEM, -2, "out of memory")                                                               \
  X(HLB_EIO, -3, "input/output error")                                                             \
  X(HLB_EPARSE, -4, "malformed input")                                                             \
  X(HLB_ERANGE, -5, "value out of range")                                                          \
  X(HLB_ENOTFOUND, -6, "no such name")                                                             \
  X(HLB_EINFEASIBLE, -7, "problem has no feasible solution")                                       \
  X(HLB_ENUMERIC, -8, "numerical failure")                                                         \
  X(HLB_ETIMEOUT, -9, "time limit reached")                                                        \
  X(HLB_EUNSUPPORTED, -10, "not supported by this build")                                          \
  X(HLB_EDEVICE, -11, "device failure")                                                            \
  X(HLB_ESTATE, -12, "call not valid in the current state")                                        \
  X(HLB_EMPI, -13, "MPI failure")                                                                  \
  X(HLB_EVERIFY, -14, "result verification failed")                                                \
  X(HLB_ESAMPLE, -15, "sample rejected")

typedef enum hlb_error {
#define HLB_X_ENUM(name, value, msg) name = value,
  HLB_ERROR_LIST(HLB_X_ENUM)
#undef HLB_X_ENUM
} hlb_error;

/* Number of codes in HLB_ERROR_LIST; codes run from 0 down to -(HLB_ERROR_COUNT - 1). */
#define HLB_ERROR_COUNT 16

/* Symbolic name of a code ("HLB_EINVAL"), or "HLB_E?" for a value not in the list. */
HLB_EXTERN const char *hlb_err_name(int code);

/* One-line description of a code ("invalid argument"). Never NULL. */
HLB_EXTERN const char *hlb_strerror(int code);

/* Detail of the last error raised on this thread: where and with which value. Empty string
 * when no error was raised since the last hlb_clear_error(). Never NULL. */
HLB_EXTERN const char *hlb_last_error(void);

/* Forget the last error of this thread. */
HLB_EXTERN void hlb_clear_error(void);

HLB_END_DECLS

#endif
