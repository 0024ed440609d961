#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hlb/error.h"

int hlb_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hlb %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return HLB_EXIT_USAGE;
}

int hlb_cli_lib_error(const char *cmd, int code) {
  const char *detail = hlb_last_error();
  fprintf(stderr, "hlb %s: %s\n", cmd, *detail ? detail : hlb_strerror(code));
  switch (code) {
  case HLB_EPARSE:
  case HLB_EINVAL:
  case HLB_ENOTFOUND:
  case HLB_EIO:
  case HLB_ERANGE:
    return HLB_EXIT_USAGE;
  default:
    return HLB_EXIT_FAIL;
  }
}

int hlb_cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                         double *out) {
  char *end = NULL;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE || !isfinite(x) || x < lo || x > hi) {
    hlb_cli_usage_error(cmd, "%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, s);
    return -1;
  }
  *out = x;
  return 0;
}

int hlb_cli_parse_size(const char *cmd, const char *opt, const char *s, size_t lo, size_t hi,
                       size_t *out) {
  char *end = NULL;
  errno = 0;
  /* Accept 1e6-style sizes too: people write them for item counts. */
  double x = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE || !isfinite(x) || x != floor(x) ||
      x < (double)lo || x > (double)hi) {
    hlb_cli_usage_error(cmd, "%s: expected an integer in [%zu, %zu], got '%s'", opt, lo, hi, s);
    return -1;
  }
  *out = (size_t)x;
  return 0;
}

int hlb_cli_option(const char *cmd, int argc, char **argv, int *i, const char *name,
                   const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    hlb_cli_usage_error(cmd, "%s needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

void hlb_cli_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      printf("\\%c", ch);
    else if (ch < 0x20)
      printf("\\u%04x", ch);
    else
      putchar(ch);
  }
  putchar('"');
}
