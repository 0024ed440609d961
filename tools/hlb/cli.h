/* Shared helpers of the hlb subcommands: usage errors, number parsing, JSON output.
 * Exit statuses: 0 success, 1 the run itself failed (e.g. a wrong result), 2 bad usage or
 * malformed input, with one line on stderr naming the problem. */
#ifndef HLB_TOOLS_CLI_H
#define HLB_TOOLS_CLI_H

#include <stddef.h>

#define HLB_EXIT_OK 0
#define HLB_EXIT_FAIL 1
#define HLB_EXIT_USAGE 2

/* Print "hlb CMD: message" to stderr and return HLB_EXIT_USAGE. */
int hlb_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "hlb CMD: <hlb_last_error()>" (or the code's text when empty) to stderr; return
 * HLB_EXIT_USAGE for input errors (HLB_EPARSE, HLB_EINVAL, HLB_ENOTFOUND, HLB_EIO, HLB_ERANGE)
 * and HLB_EXIT_FAIL otherwise. */
int hlb_cli_lib_error(const char *cmd, int code);

/* Parse a whole string as a number; 0 on success, -1 with a usage error printed otherwise. */
int hlb_cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                         double *out);
int hlb_cli_parse_size(const char *cmd, const char *opt, const char *s, size_t lo, size_t hi,
                       size_t *out);

/* For option parsing loops: if argv[*i] is `name`, take its value from argv[*i + 1] (advancing
 * *i) or from "name=value"; returns 1 when matched, 0 when not, -1 (usage error printed) when
 * the value is missing. */
int hlb_cli_option(const char *cmd, int argc, char **argv, int *i, const char *name,
                   const char **value);

/* Print s to stdout as a JSON string literal, escaping quotes, backslashes and control bytes
 * (names come from the user's files). */
void hlb_cli_json_string(const char *s);

#endif
