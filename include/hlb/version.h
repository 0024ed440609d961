/* Library version. Thread-safe. */
#ifndef HLB_VERSION_H
#define HLB_VERSION_H

#include "hlb/export.h"

HLB_BEGIN_DECLS

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
HLB_EXTERN const char *hlb_version(void);

HLB_END_DECLS

#endif
