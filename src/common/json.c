#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error_internal.h"
#include "common/json.h"

/* Refuse input files larger than this: hlb's files are descriptions, not data. */
#define HLB_JSON_MAX_BYTES (64u << 20)

static int read_whole_file(const char *path, char **text_out) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return hlb__error(HLB_EIO, "%s: is a directory", path);
  FILE *f = fopen(path, "rb");
  if (!f) return hlb__error(HLB_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *grown = realloc(text, cap);
      if (!grown) {
        free(text);
        fclose(f);
        return hlb__error(HLB_ENOMEM, "%s: out of memory reading file", path);
      }
      text = grown;
    }
    size_t got = fread(text + len, 1, cap - len - 1, f);
    len += got;
    if (len > HLB_JSON_MAX_BYTES) {
      free(text);
      fclose(f);
      return hlb__error(HLB_EPARSE, "%s: larger than %u bytes", path, HLB_JSON_MAX_BYTES);
    }
    if (got == 0) break;
  }
  int read_failed = ferror(f) ? errno : 0;
  fclose(f);
  if (read_failed) {
    free(text);
    return hlb__error(HLB_EIO, "%s: cannot read: %s", path, strerror(read_failed));
  }
  text[len] = '\0';
  *text_out = text;
  return 0;
}

int hlb__json_parse(const char *name, const char *text, cJSON **root_out) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  if (!root) {
    /* cJSON reports where it stopped; turn that into line:column for a person. */
    const char *at = end ? end : cJSON_GetErrorPtr();
    unsigned line = 1, col = 1;
    for (const char *p = text; at && p < at && *p; p++) {
      if (*p == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    return hlb__error(HLB_EPARSE, "%s:%u:%u: not valid JSON", name, line, col);
  }
  *root_out = root;
  return 0;
}

int hlb__json_load_file(const char *path, cJSON **root_out) {
  char *text = NULL;
  int rc = read_whole_file(path, &text);
  if (rc) return rc;
  rc = hlb__json_parse(path, text, root_out);
  free(text);
  return rc;
}

static const char *sep(const char *path) {
  return (path && *path) ? "." : "";
}
static const char *p0(const char *path) {
  return path ? path : "";
}

static int missing(const hlb__jctx *c, const char *path, const char *key) {
  return hlb__error(HLB_EPARSE, "%s: %s%s%s: required member is missing", c->file, p0(path),
                    sep(path), key);
}

static int wrong_type(const hlb__jctx *c, const char *path, const char *key, const char *want) {
  return hlb__error(HLB_EPARSE, "%s: %s%s%s: must be %s", c->file, p0(path), sep(path), key, want);
}

int hlb__json_object(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, const cJSON **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = NULL;
  if (!v) return required ? missing(c, path, key) : 0;
  if (!cJSON_IsObject(v)) return wrong_type(c, path, key, "an object");
  *out = v;
  return 0;
}

int hlb__json_array(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                    int required, const cJSON **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = NULL;
  if (!v) return required ? missing(c, path, key) : 0;
  if (!cJSON_IsArray(v)) return wrong_type(c, path, key, "an array");
  *out = v;
  return 0;
}

int hlb__json_number(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, double dflt, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = dflt;
    return required ? missing(c, path, key) : 0;
  }
  if (!cJSON_IsNumber(v)) return wrong_type(c, path, key, "a number");
  double x = v->valuedouble;
  if (!isfinite(x))
    return hlb__error(HLB_EPARSE, "%s: %s%s%s: must be finite, got %g", c->file, p0(path),
                      sep(path), key, x);
  if (x < lo || x > hi)
    return hlb__error(HLB_EPARSE, "%s: %s%s%s: must be in [%g, %g], got %g", c->file, p0(path),
                      sep(path), key, lo, hi, x);
  *out = x;
  return 0;
}

int hlb__json_size(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                   int required, size_t dflt, size_t hi, size_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = dflt;
    return required ? missing(c, path, key) : 0;
  }
  if (!cJSON_IsNumber(v)) return wrong_type(c, path, key, "a number");
  double x = v->valuedouble;
  /* 2^53: beyond it a double no longer holds every integer exactly. */
  if (!isfinite(x) || x < 0 || x != floor(x) || x > 9007199254740992.0 || x > (double)hi)
    return hlb__error(HLB_EPARSE, "%s: %s%s%s: must be an integer in [0, %zu], got %g", c->file,
                      p0(path), sep(path), key, hi, x);
  *out = (size_t)x;
  return 0;
}

int hlb__json_string(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                     int required, const char *dflt, const char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = dflt;
    return required ? missing(c, path, key) : 0;
  }
  if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring)
    return wrong_type(c, path, key, "a non-empty string");
  *out = v->valuestring;
  return 0;
}

int hlb__json_bool(const hlb__jctx *c, const cJSON *obj, const char *path, const char *key,
                   int required, int dflt, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = dflt;
    return required ? missing(c, path, key) : 0;
  }
  if (!cJSON_IsBool(v)) return wrong_type(c, path, key, "true or false");
  *out = cJSON_IsTrue(v);
  return 0;
}

int hlb__json_only_keys(const hlb__jctx *c, const cJSON *obj, const char *path,
                        const char *const *known) {
  const cJSON *m;
  cJSON_ArrayForEach(m, obj) {
    int ok = 0;
    for (const char *const *k = known; *k && !ok; k++)
      ok = m->string && strcmp(m->string, *k) == 0;
    if (!ok)
      return hlb__error(HLB_EPARSE, "%s: %s%s%s: unknown member", c->file, p0(path), sep(path),
                        m->string ? m->string : "?");
  }
  return 0;
}
