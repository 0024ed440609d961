/* The options table (include/hlb/options.h; rows in options.def). Every environment variable
 * hlb reads is read here, through hlb_option_env(), so the table cannot miss one. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
