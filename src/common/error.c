#include <stdio.h>
#include <string.h>

#include "common/error_internal.h"

/* Long enough for a file name, a JSON path and a value; longer text is truncated. */
#define HLB_ERROR_TEXT_MAX 1024

static _Thread_local char last_error_text[HLB_ERROR_TEXT_MAX];

const char *hlb_err_name(int code) {
  switch (code) {
#define HLB_X_NAME(name, value, msg)                                                               \
  case value:                                                                                      \
    return #name;
    HLB_ERROR_LIST(HLB_X_NAME)
#undef HLB_X_NAME
  default:
    return "HLB_E?";
  }
}

const char *hlb_strerror(int code) {
  switch (code) {
#define HLB_X_MSG(name, value, msg)                                                                \
  case value:                                                                                      \
    return msg;
    HLB_ERROR_LIST(HLB_X_MSG)
#undef HLB_X_MSG
  default:
    return "unknown error code";
  }
}

const char *hlb_last_error(void) {
  return last_error_text;
}

void hlb_clear_error(void) {
  last_error_text[0] = '\0';
}

int hlb__error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error_text, sizeof last_error_text, fmt, ap);
  va_end(ap);
  return code;
}

int hlb__error_prefix(int code, const char *fmt, ...) {
  char prefix[HLB_ERROR_TEXT_MAX];
  char old[HLB_ERROR_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_error_text, sizeof old);
  /* Truncation is acceptable here: the text is for a person and stays terminated. */
  size_t n = strlen(prefix);
  memcpy(last_error_text, prefix, n + 1);
  size_t room = sizeof last_error_text - 1 - n;
  size_t m = strnlen(old, room);
  memcpy(last_error_text + n, old, m);
  last_error_text[n + m] = '\0';
  return code;
}
