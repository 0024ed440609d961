#include "hlb/version.h"

const char *hlb_version(void) {
  return HLB_VERSION_STRING;
}
