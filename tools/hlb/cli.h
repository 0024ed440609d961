/* Shared helpers of the hlb subcommands: the table-driven option parser, usage errors, number
 * parsing, reading files, JSON output.
 *
 * Exit statuses, the same in every command: 0 success; 1 the run itself failed (a wrong
 * result, a device that failed, nothing fitted); 2 bad usage or bad input (unknown option,
 * value out of range, malformed or unreadable file, output that cannot be written), with one
 * line on stderr:  hlb CMD: FILE[:LINE:COL]: PLACE: what is wrong, got VALUE
 *
 * Flags come from the options table (include/hlb/options.h): a command takes the rows whose
 * `commands` name it, parsed with getopt_long. A value comes from the flag, else the row's
 * environment variable, else its default; each is checked against the row's type and range. */
#ifndef HLB_TOOLS_CLI_H
#define HLB_TOOLS_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "hlb/options.h"

#define HLB_EXIT_OK 0
#define HLB_EXIT_FAIL 1
#define HLB_EXIT_USAGE 2
/* hlb_cli_parse's return when it printed the help: the command exits 0. */
#define HLB_CLI_HELP_SHOWN (-1)

/* A subcommand as the parser and the help see it. */
typedef struct hlb_cli_command {
  const char *name;     /* "sim" */
  const char *operands; /* the operands in the usage line, e.g. "CLUSTER.json" */
  unsigned min_operands, max_operands;
  const char *summary;         /* one line for `hlb --help` */
  const char *about;           /* what the command does, printed after the usage line */
  void (*more_help)(FILE *to); /* optional: printed after the options (e.g. the apps) */
} hlb_cli_command;

/* Where a value came from. */
typedef enum hlb_cli_origin {
  HLB_CLI_UNSET = 0,
  HLB_CLI_DEFAULT,
  HLB_CLI_ENV,
  HLB_CLI_FLAG
} hlb_cli_origin;

typedef struct hlb_cli_value {
  hlb_cli_origin from;
  const char *text;  /* the value as written (BOOL: "1"/"0") */
  double number;     /* SIZE and NUMBER: the checked value; BOOL: 0 or 1 */
  const char **list; /* LIST: every value given, in order */
  unsigned n_list;
} hlb_cli_value;

typedef struct hlb_cli_args {
  const hlb_cli_command *cmd;
  hlb_cli_value *value; /* one per row of the options table */
  char **operand;
  unsigned n_operands;
} hlb_cli_args;

/* Parse argv (argv[0] is the command's name) for `cmd`. 0 on success; HLB_CLI_HELP_SHOWN when
 * -h/--help printed the help; HLB_EXIT_USAGE with the message printed otherwise. Free with
 * hlb_cli_args_free() in every case. */
int hlb_cli_parse(const hlb_cli_command *cmd, int argc, char **argv, hlb_cli_args *a);
void hlb_cli_args_free(hlb_cli_args *a);
/* Print `hlb CMD --help`, generated from cmd and the table. */
void hlb_cli_print_help(const hlb_cli_command *cmd, FILE *to);

/* The value of the row named `name` (a row the command takes). */
const hlb_cli_value *hlb_cli_get(const hlb_cli_args *a, const char *name);
int hlb_cli_given(const hlb_cli_args *a, const char *name);        /* set by flag or environment */
const char *hlb_cli_text(const hlb_cli_args *a, const char *name); /* NULL when unset */
size_t hlb_cli_size(const hlb_cli_args *a, const char *name);      /* 0 when unset */
double hlb_cli_number(const hlb_cli_args *a, const char *name);
int hlb_cli_flag(const hlb_cli_args *a, const char *name);

/* 1 when a progress line should be drawn: stderr is a terminal and neither --json nor --quiet
 * was given. */
int hlb_cli_show_progress(const hlb_cli_args *a);

/* OMP_WAIT_POLICY as this process's OpenMP kernels run under it (NULL when unset: libgomp's
 * default), and in *set_by_hlb whether hlb set it (main.c: hlb run, when the user set nothing,
 * runs itself again with OMP_WAIT_POLICY=passive; docs/executor.md). */
const char *hlb_cli_omp_wait_policy(int *set_by_hlb);

/* Print "hlb CMD: message" to stderr and return HLB_EXIT_USAGE. */
int hlb_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "hlb CMD: <hlb_last_error()>" (or the code's text when empty) to stderr, without a
 * repeated command prefix or an internal function name; return HLB_EXIT_USAGE for input errors
 * (HLB_EPARSE, HLB_EINVAL, HLB_ENOTFOUND, HLB_EIO, HLB_ERANGE) and HLB_EXIT_FAIL otherwise. */
int hlb_cli_lib_error(const char *cmd, int code);
/* The exit status hlb_cli_lib_error would return for `code`, printing nothing. */
int hlb_cli_exit_for(int code);

/* Parse a whole string as a number; 0 on success, -1 with a usage error printed otherwise. */
int hlb_cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                         double *out);
int hlb_cli_parse_size(const char *cmd, const char *opt, const char *s, size_t lo, size_t hi,
                       size_t *out);

/* Read a whole file into a NUL-terminated buffer (free it). On failure print
 * "hlb CMD: PATH: is a directory" or the system's reason, and return HLB_EXIT_USAGE. */
int hlb_cli_read_file(const char *cmd, const char *path, char **text, size_t *len);

/* Parse JSON text read from `name`; on failure print "hlb CMD: NAME:LINE:COL: not valid JSON"
 * and return HLB_EXIT_USAGE. *root is a cJSON tree (cJSON_Delete it). */
struct cJSON;
int hlb_cli_json_parse(const char *cmd, const char *name, const char *text, struct cJSON **root);

/* Check before any work that `path` can be written ("-" is stdout): not a directory, and the
 * file or its folder writable. 0, or HLB_EXIT_USAGE with "hlb CMD: FLAG PATH: reason". */
int hlb_cli_check_writable(const char *cmd, const char *flag, const char *path);

/* Add `facts` to the trace at `path` (as a writer of the library just closed it) as its
 * top-level "hlb" object: what the command printed with --json, read by `hlb report`. Chrome
 * trace viewers ignore unknown top-level keys. 0, or HLB_EXIT_FAIL with "hlb CMD: PATH: why". */
int hlb_cli_trace_add_facts(const char *cmd, const char *path, const struct cJSON *facts);

/* Print s to stdout as a JSON string literal, escaping quotes, backslashes and control bytes
 * (names come from the user's files). */
void hlb_cli_json_string(const char *s);

#endif
