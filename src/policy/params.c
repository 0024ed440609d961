#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "policy/params.h"

static int unknown_param(const char *who, const hlb_param_def *defs, unsigned n, const char *name,
                         size_t len) {
  char valid[512] = "";
  size_t used = 0;
  for (unsigned i = 0; i < n && used < sizeof valid; i++)
    used +=
        (size_t)snprintf(valid + used, sizeof valid - used, "%s%s", i ? ", " : "", defs[i].name);
  return hlb__error(HLB_EINVAL, "policy '%s': unknown parameter '%.*s' (valid: %s)", who, (int)len,
                    name, n ? valid : "none");
}

static int apply_one(const char *who, const hlb_param_def *defs, unsigned n, const char *item,
                     size_t len, double *values) {
  const char *eq = memchr(item, '=', len);
  if (!eq)
    return hlb__error(HLB_EINVAL, "policy '%s': parameter '%.*s' needs the form name=value", who,
                      (int)len, item);
  size_t name_len = (size_t)(eq - item);
  for (unsigned i = 0; i < n; i++) {
    if (strlen(defs[i].name) != name_len || strncmp(defs[i].name, item, name_len) != 0) continue;
    char text[64];
    size_t vlen = len - name_len - 1;
    if (vlen == 0 || vlen >= sizeof text)
      return hlb__error(HLB_EINVAL, "policy '%s': parameter '%s' has no usable value", who,
                        defs[i].name);
    memcpy(text, eq + 1, vlen);
    text[vlen] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(v))
      return hlb__error(HLB_EINVAL, "policy '%s': parameter '%s': '%s' is not a number", who,
                        defs[i].name, text);
    if (v < defs[i].lo || v > defs[i].hi)
      return hlb__error(HLB_EINVAL, "policy '%s': parameter '%s' must be in [%g, %g], got %g", who,
                        defs[i].name, defs[i].lo, defs[i].hi, v);
    values[i] = v;
    return 0;
  }
  return unknown_param(who, defs, n, item, name_len);
}

int hlb__params_parse(const char *who, const hlb_param_def *defs, unsigned n, const char *text,
                      double *values) {
  for (unsigned i = 0; i < n; i++)
    values[i] = defs[i].dflt;
  if (!text) return 0;
  const char *p = text;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len > 0) {
      int rc = apply_one(who, defs, n, p, len, values);
      if (rc) return rc;
    }
    p += len + (comma ? 1 : 0);
  }
  return 0;
}
