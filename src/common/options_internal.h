/* The library's reads of the options table: every environment variable goes through these. */
#ifndef HLB_COMMON_OPTIONS_INTERNAL_H
#define HLB_COMMON_OPTIONS_INTERNAL_H

#include "hlb/options.h"

/* The environment variable of the option named `name` (a row of options.def), when set and not
 * empty; else NULL. */
const char *hlb__option_env(const char *name);
/* 1 when that variable is set to anything but 0/no/false/off. */
int hlb__option_env_bool(const char *name);
/* The NUMBER option `name`: its variable's value, else the table's default, in *out. HLB_EINVAL
 * naming the variable and the value when it is not a number within the row's [lo, hi]. */
int hlb__option_env_number(const char *name, double *out);

#endif
