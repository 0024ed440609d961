/* Symbol visibility for the public API. libhlb is built with hidden visibility; only
 * declarations marked HLB_EXTERN are exported from the shared library. */
#ifndef HLB_EXPORT_H
#define HLB_EXPORT_H

#if defined(__GNUC__)
#define HLB_EXTERN __attribute__((visibility("default")))
#else
#define HLB_EXTERN
#endif

#ifdef __cplusplus
#define HLB_BEGIN_DECLS extern "C" {
#define HLB_END_DECLS }
#else
#define HLB_BEGIN_DECLS
#define HLB_END_DECLS
#endif

#endif
