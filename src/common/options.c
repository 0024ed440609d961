/* The options table (include/hlb/options.h; rows in options.def). Every environment variable
 * hlb reads is read here, through hlb_option_env(), so the table cannot miss one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error_internal.h"
#include "common/options_internal.h"
#include "hlb/options.h"

static const hlb_option_def table[] = {
#define HLB_OPTION(name, env, flag, type, arg, def, lo, hi, commands, help, source)                \
  {name, env, flag, HLB_OPTION_##type, arg, def, lo, hi, commands, help, source},
#include "common/options.def"
#undef HLB_OPTION
};
#define N_OPTIONS (sizeof table / sizeof table[0])

unsigned hlb_option_count(void) {
  return (unsigned)N_OPTIONS;
}

const hlb_option_def *hlb_option_at(unsigned i) {
  return i < N_OPTIONS ? &table[i] : NULL;
}

const hlb_option_def *hlb_option_find(const char *name) {
  for (size_t i = 0; name && i < N_OPTIONS; i++)
    if (!strcmp(table[i].name, name)) return &table[i];
  return NULL;
}

int hlb_option_for_command(const hlb_option_def *o, const char *command) {
  if (!o || !command || !*command) return 0;
  size_t n = strlen(command);
  for (const char *p = o->commands; (p = strstr(p, command)) != NULL; p += n)
    if ((p == o->commands || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  return 0;
}

const char *hlb_option_env(const hlb_option_def *o) {
  if (!o || !o->env) return NULL;
  const char *v = getenv(o->env);
  return v && *v ? v : NULL;
}

const char *hlb__option_env(const char *name) {
  return hlb_option_env(hlb_option_find(name));
}

int hlb__option_env_bool(const char *name) {
  const char *v = hlb__option_env(name);
  return v && strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "false") &&
         strcasecmp(v, "off");
}

int hlb__option_env_number(const char *name, double *out) {
  const hlb_option_def *o = hlb_option_find(name);
  if (!o) return hlb__error(HLB_EINVAL, "options: no option named %s", name);
  const char *v = hlb_option_env(o), *text = v ? v : o->def;
  char *end = NULL;
  double d = text ? strtod(text, &end) : NAN;
  if (!text || end == text || *end || !(d >= o->lo && d <= o->hi))
    return hlb__error(HLB_EINVAL, "%s=%s: expected a number of %s in [%g, %g]",
                      o->env ? o->env : o->name, text ? text : "(unset)", o->arg, o->lo, o->hi);
  *out = d;
  return 0;
}
