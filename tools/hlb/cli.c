#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/error.h"

/* getopt_long's value for row i of the table: above any character. */
#define ROW_VAL(i) (1000 + (int)(i))

int hlb_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hlb %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return HLB_EXIT_USAGE;
}

int hlb_cli_exit_for(int code) {
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

/* The library's message without what the command's own prefix already says: a leading
 * "CMD: " (the library names its module, e.g. "plan: ") or an internal function name
 * ("hlb_eft_solve_int: "), which mean nothing to a person at the command line. */
static const char *without_prefixes(const char *cmd, const char *msg) {
  for (;;) {
    size_t n = strlen(cmd);
    if (!strncmp(msg, cmd, n) && msg[n] == ':' && msg[n + 1] == ' ') {
      msg += n + 2;
      continue;
    }
    if (!strncmp(msg, "hlb_", 4)) {
      size_t k = strspn(msg, "abcdefghijklmnopqrstuvwxyz0123456789_");
      if (msg[k] == ':' && msg[k + 1] == ' ') {
        msg += k + 2;
        continue;
      }
    }
    return msg;
  }
}

int hlb_cli_lib_error(const char *cmd, int code) {
  const char *detail = hlb_last_error();
  fprintf(stderr, "hlb %s: %s\n", cmd,
          *detail ? without_prefixes(cmd, detail) : hlb_strerror(code));
  return hlb_cli_exit_for(code);
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

int hlb_cli_read_file(const char *cmd, const char *path, char **text, size_t *len) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return hlb_cli_usage_error(cmd, "%s: is a directory", path);
  FILE *f = fopen(path, "rb");
  if (!f) return hlb_cli_usage_error(cmd, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (size_t got = 1; buf && got > 0;) {
    if (n + 1 >= cap) {
      char *grown = realloc(buf, cap *= 2);
      if (!grown) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = grown;
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
  }
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (!buf) return hlb_cli_usage_error(cmd, "%s: out of memory reading it", path);
  if (err) {
    free(buf);
    return hlb_cli_usage_error(cmd, "%s: cannot read: %s", path, strerror(err));
  }
  buf[n] = '\0';
  *text = buf;
  if (len) *len = n;
  return 0;
}

int hlb_cli_json_parse(const char *cmd, const char *name, const char *text, cJSON **root) {
  const char *end = NULL;
  *root = cJSON_ParseWithOpts(text, &end, 1);
  if (*root) return 0;
  /* Where cJSON stopped, as line:column for a person. */
  const char *at = end ? end : cJSON_GetErrorPtr();
  unsigned line = 1, col = 1;
  for (const char *p = text; at && p < at && *p; p++) {
    col = *p == '\n' ? 1 : col + 1;
    line += *p == '\n';
  }
  return hlb_cli_usage_error(cmd, "%s:%u:%u: not valid JSON", name, line, col);
}

int hlb_cli_check_writable(const char *cmd, const char *flag, const char *path) {
  if (!strcmp(path, "-")) return 0;
  if (!*path) return hlb_cli_usage_error(cmd, "%s: needs a file name", flag);
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return hlb_cli_usage_error(cmd, "%s %s: is a directory", flag, path);
    if (access(path, W_OK) != 0)
      return hlb_cli_usage_error(cmd, "%s %s: cannot be written: %s", flag, path, strerror(errno));
    return 0;
  }
  /* A new file: its folder must exist and take it. */
  char *dir = strdup(path);
  if (!dir) return hlb_cli_usage_error(cmd, "out of memory");
  char *slash = strrchr(dir, '/');
  const char *folder = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
  int rc = 0;
  if (access(folder, W_OK | X_OK) != 0)
    rc = hlb_cli_usage_error(cmd, "%s %s: cannot be written: %s (folder %s)", flag, path,
                             strerror(errno), folder);
  free(dir);
  return rc;
}

int hlb_cli_trace_add_facts(const char *cmd, const char *path, const struct cJSON *facts) {
  /* The library's writers end a trace with "]}\n": the last '}' closes the top-level object,
   * and the facts go in front of it. What is written is longer than the "}\n" it replaces, so
   * nothing of the old end is left behind. */
  char *text = cJSON_Print(facts);
  FILE *f = fopen(path, "r+b");
  char tail[16];
  long end = -1, back = 0, at = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) > 0) {
    back = end < (long)sizeof tail ? end : (long)sizeof tail;
    if (fseek(f, end - back, SEEK_SET) == 0 && fread(tail, 1, (size_t)back, f) == (size_t)back)
      for (long i = back - 1; i >= 0 && at < 0; i--)
        if (tail[i] == '}') at = end - back + i;
  }
  int ok = text && f && at >= 0 && fseek(f, at, SEEK_SET) == 0 &&
           fprintf(f, ",\n\"hlb\":%s}\n", text) > 0;
  int err = errno;
  if (f && fclose(f) != 0) ok = 0, err = errno;
  cJSON_free(text);
  if (ok) return 0;
  fprintf(stderr, "hlb %s: %s: cannot add the run's facts to the trace: %s\n", cmd, path,
          !text         ? "out of memory"
          : f && at < 0 ? "it does not end with '}'"
                        : strerror(err));
  return HLB_EXIT_FAIL;
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

/* ---- help ---- */

/* Print `text` wrapped at `width` columns, every line after the first indented by `indent`
 * (the first continues where the caller left it, at column `col`). */
static void print_wrapped(FILE *to, const char *text, unsigned col, unsigned indent,
                          unsigned width) {
  const char *p = text;
  while (*p) {
    size_t word = strcspn(p, " ");
    if (col > indent && col + 1 + word > width) {
      fprintf(to, "\n%*s", (int)indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', to);
      col++;
    }
    fprintf(to, "%.*s", (int)word, p);
    col += (unsigned)word;
    p += word;
    while (*p == ' ')
      p++;
  }
  fputc('\n', to);
}

static void option_label(const hlb_option_def *o, char *buf, size_t n) {
  if (o->type == HLB_OPTION_BOOL || !o->arg)
    snprintf(buf, n, "%s", o->flag);
  else
    snprintf(buf, n, "%s %s", o->flag, o->arg);
}

/* "(default X; env VAR; range [lo, hi]; from SOURCE)" for an option's help. */
static void option_facts(const hlb_option_def *o, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
#define ADD(...) used += (size_t)snprintf(buf + used, used < n ? n - used : 0, __VA_ARGS__)
  if (o->def && o->type != HLB_OPTION_BOOL) ADD("%sdefault %s", used ? "; " : "", o->def);
  if (o->env) ADD("%senv %s", used ? "; " : "", o->env);
  if (o->type == HLB_OPTION_SIZE || o->type == HLB_OPTION_NUMBER)
    ADD("%s%.15g..%.15g", used ? "; " : "", o->lo, o->hi);
  if (o->source) ADD("%s%s", used ? "; " : "", o->source);
#undef ADD
}

void hlb_cli_print_help(const hlb_cli_command *cmd, FILE *to) {
  fprintf(to, "usage: hlb %s%s%s [options]\n\n", cmd->name, *cmd->operands ? " " : "",
          cmd->operands);
  if (cmd->about) print_wrapped(to, cmd->about, 0, 0, 96);
  fprintf(to, "\noptions:\n");
  for (unsigned i = 0; i < hlb_option_count(); i++) {
    const hlb_option_def *o = hlb_option_at(i);
    if (!hlb_option_for_command(o, cmd->name)) continue;
    char label[64], facts[256], line[640];
    option_label(o, label, sizeof label);
    option_facts(o, facts, sizeof facts);
    snprintf(line, sizeof line, "%s%s%s%s", o->help, *facts ? " (" : "", facts, *facts ? ")" : "");
    fprintf(to, "  %-20s ", label);
    print_wrapped(to, line, 23, 23, 96);
  }
  fprintf(to, "  %-20s show this help\n", "-h, --help");
  if (cmd->more_help) cmd->more_help(to);
  fprintf(to, "\nExit status: 0 success, 1 the run failed, 2 bad usage or bad input.\n"
              "Every option and environment variable: docs/options.md (`hlb options`).\n");
}

/* ---- parsing ---- */

static int row_index(const char *name) {
  for (unsigned i = 0; i < hlb_option_count(); i++)
    if (!strcmp(hlb_option_at(i)->name, name)) return (int)i;
  return -1;
}

static int parse_bool(const char *s, double *out) {
  static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                              "off"};
  for (unsigned k = 0; k < 4; k++) {
    if (!strcasecmp(s, yes[k])) return *out = 1, 0;
    if (!strcasecmp(s, no[k])) return *out = 0, 0;
  }
  return -1;
}

/* Check `text` against row o and store it; `where` names it in messages ("--items" or
 * "$HLB_POLICY"). 0, or HLB_EXIT_USAGE with the message printed. */
static int set_value(const char *cmd, const hlb_option_def *o, const char *where, const char *text,
                     hlb_cli_origin from, hlb_cli_value *v) {
  double x = 0;
  size_t z = 0;
  switch (o->type) {
  case HLB_OPTION_BOOL:
    if (from == HLB_CLI_FLAG)
      x = 1;
    else if (parse_bool(text, &x))
      return hlb_cli_usage_error(cmd, "%s: expected 1/0, yes/no, true/false or on/off, got '%s'",
                                 where, text);
    text = x ? "1" : "0";
    break;
  case HLB_OPTION_SIZE:
    if (hlb_cli_parse_size(cmd, where, text, (size_t)o->lo, (size_t)o->hi, &z))
      return HLB_EXIT_USAGE;
    x = (double)z;
    break;
  case HLB_OPTION_NUMBER:
    if (hlb_cli_parse_double(cmd, where, text, o->lo, o->hi, &x)) return HLB_EXIT_USAGE;
    break;
  case HLB_OPTION_OUTPUT:
    if (hlb_cli_check_writable(cmd, where, text)) return HLB_EXIT_USAGE;
    break;
  case HLB_OPTION_LIST: {
    const char **grown = realloc(v->list, (v->n_list + 1) * sizeof *grown);
    if (!grown) return hlb_cli_usage_error(cmd, "out of memory");
    v->list = grown;
    v->list[v->n_list++] = text;
    break;
  }
  default:
    if (!*text) return hlb_cli_usage_error(cmd, "%s: needs a value, got ''", where);
    break;
  }
  v->from = from;
  v->text = text;
  v->number = x;
  return 0;
}

/* getopt_long's tables for the rows `cmd` takes. */
typedef struct opt_tables {
  struct option *longopts;
  char shortopts[64];
  int short_row[128];
} opt_tables;

static int build_tables(const hlb_cli_command *cmd, opt_tables *t) {
  unsigned n = hlb_option_count(), k = 0;
  t->longopts = calloc(n + 2, sizeof *t->longopts);
  if (!t->longopts) return hlb_cli_usage_error(cmd->name, "out of memory");
  /* ':' first: a missing value is reported as ':' rather than '?'. */
  size_t s = (size_t)snprintf(t->shortopts, sizeof t->shortopts, ":h");
  for (unsigned i = 0; i < 128; i++)
    t->short_row[i] = -1;
  for (unsigned i = 0; i < n; i++) {
    const hlb_option_def *o = hlb_option_at(i);
    if (!hlb_option_for_command(o, cmd->name) || !o->flag) continue;
    int has_arg = o->type == HLB_OPTION_BOOL ? no_argument : required_argument;
    if (o->flag[1] == '-') {
      t->longopts[k++] = (struct option){o->flag + 2, has_arg, NULL, ROW_VAL(i)};
    } else if (s + 3 < sizeof t->shortopts) {
      unsigned char c = (unsigned char)o->flag[1];
      t->shortopts[s++] = (char)c;
      if (has_arg) t->shortopts[s++] = ':';
      t->shortopts[s] = '\0';
      t->short_row[c & 127] = (int)i;
    }
  }
  t->longopts[k] = (struct option){"help", no_argument, NULL, 'h'};
  return 0;
}

/* The flag (for messages) of getopt's value `val`. */
static const char *flag_of(const opt_tables *t, int val, char *buf, size_t n) {
  if (val >= ROW_VAL(0)) return hlb_option_at((unsigned)(val - ROW_VAL(0)))->flag;
  if (val > 0 && val < 128 && t->short_row[val] >= 0)
    return hlb_option_at((unsigned)t->short_row[val])->flag;
  snprintf(buf, n, "-%c", val > 0 && val < 128 ? val : '?');
  return buf;
}

static int parse_flags(const hlb_cli_command *cmd, int argc, char **argv, hlb_cli_args *a,
                       const opt_tables *t) {
  optind = 0; /* glibc: a full re-initialisation, so parsing twice in one process works */
  opterr = 0;
  for (;;) {
    int c = getopt_long(argc, argv, t->shortopts, t->longopts, NULL);
    if (c == -1) return 0;
    char buf[8];
    if (c == 'h') {
      hlb_cli_print_help(cmd, stdout);
      return HLB_CLI_HELP_SHOWN;
    }
    if (c == ':')
      return hlb_cli_usage_error(cmd->name, "%s needs a value (see hlb %s --help)",
                                 flag_of(t, optopt, buf, sizeof buf), cmd->name);
    if (c == '?') {
      /* An unknown short option is in optopt; an unknown long one is the argument getopt
       * just stepped over. */
      const char *bad = optopt && optopt < 128 ? (snprintf(buf, sizeof buf, "-%c", optopt), buf)
                                               : argv[optind > 1 ? optind - 1 : 1];
      return hlb_cli_usage_error(cmd->name, "unknown option '%s' (see hlb %s --help)", bad,
                                 cmd->name);
    }
    int row = c >= ROW_VAL(0) ? c - ROW_VAL(0) : (c > 0 && c < 128 ? t->short_row[c] : -1);
    if (row < 0)
      return hlb_cli_usage_error(cmd->name, "unknown option (see hlb %s --help)", cmd->name);
    const hlb_option_def *o = hlb_option_at((unsigned)row);
    hlb_cli_value *v = &a->value[row];
    if (v->from == HLB_CLI_FLAG && o->type != HLB_OPTION_LIST && o->type != HLB_OPTION_BOOL)
      return hlb_cli_usage_error(cmd->name, "%s given twice ('%s' and '%s')", o->flag, v->text,
                                 optarg);
    int rc = set_value(cmd->name, o, o->flag, o->type == HLB_OPTION_BOOL ? "1" : optarg,
                       HLB_CLI_FLAG, v);
    if (rc) return rc;
  }
}

/* Rows the flags did not set: the environment, then the default. */
static int fill_unset(const hlb_cli_command *cmd, hlb_cli_args *a) {
  for (unsigned i = 0; i < hlb_option_count(); i++) {
    const hlb_option_def *o = hlb_option_at(i);
    hlb_cli_value *v = &a->value[i];
    if (!hlb_option_for_command(o, cmd->name) || v->from != HLB_CLI_UNSET) continue;
    const char *env = hlb_option_env(o);
    char where[64];
    snprintf(where, sizeof where, "$%s", o->env ? o->env : "");
    if (env && set_value(cmd->name, o, where, env, HLB_CLI_ENV, v)) return HLB_EXIT_USAGE;
    /* A default needs no check, but is stored the same way (an output file's default is
     * checked when it is used). */
    if (!env && o->def && o->type != HLB_OPTION_OUTPUT &&
        set_value(cmd->name, o, o->flag ? o->flag : o->name, o->def, HLB_CLI_DEFAULT, v))
      return HLB_EXIT_USAGE;
  }
  return 0;
}

static int take_operands(const hlb_cli_command *cmd, int argc, char **argv, hlb_cli_args *a) {
  a->operand = argv + optind;
  a->n_operands = (unsigned)(argc - optind);
  if (a->n_operands < cmd->min_operands)
    return hlb_cli_usage_error(cmd->name, "missing %s (see hlb %s --help)", cmd->operands,
                               cmd->name);
  if (a->n_operands > cmd->max_operands)
    return hlb_cli_usage_error(cmd->name, "unexpected argument '%s'",
                               a->operand[cmd->max_operands]);
  return 0;
}

int hlb_cli_parse(const hlb_cli_command *cmd, int argc, char **argv, hlb_cli_args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  a->value = calloc(hlb_option_count(), sizeof *a->value);
  if (!a->value) return hlb_cli_usage_error(cmd->name, "out of memory");
  opt_tables t;
  int rc = build_tables(cmd, &t);
  if (rc == 0) rc = parse_flags(cmd, argc, argv, a, &t);
  free(t.longopts);
  if (rc == 0) rc = take_operands(cmd, argc, argv, a);
  if (rc == 0) rc = fill_unset(cmd, a);
  return rc;
}

void hlb_cli_args_free(hlb_cli_args *a) {
  for (unsigned i = 0; a->value && i < hlb_option_count(); i++)
    free(a->value[i].list);
  free(a->value);
  a->value = NULL;
}

const hlb_cli_value *hlb_cli_get(const hlb_cli_args *a, const char *name) {
  static const hlb_cli_value unset = {0};
  int i = row_index(name);
  if (i < 0 || !hlb_option_for_command(hlb_option_at((unsigned)i), a->cmd->name)) {
    /* A command asking for a row it does not take is a bug in the command: say so loudly. */
    fprintf(stderr, "hlb %s: internal: option '%s' is not in this command's table rows\n",
            a->cmd->name, name);
    abort();
  }
  return a->value ? &a->value[i] : &unset;
}

int hlb_cli_given(const hlb_cli_args *a, const char *name) {
  hlb_cli_origin f = hlb_cli_get(a, name)->from;
  return f == HLB_CLI_FLAG || f == HLB_CLI_ENV;
}

const char *hlb_cli_text(const hlb_cli_args *a, const char *name) {
  return hlb_cli_get(a, name)->text;
}

size_t hlb_cli_size(const hlb_cli_args *a, const char *name) {
  return (size_t)hlb_cli_get(a, name)->number;
}

double hlb_cli_number(const hlb_cli_args *a, const char *name) {
  return hlb_cli_get(a, name)->number;
}

int hlb_cli_flag(const hlb_cli_args *a, const char *name) {
  return hlb_cli_get(a, name)->number != 0;
}

int hlb_cli_show_progress(const hlb_cli_args *a) {
  const hlb_option_def *json = hlb_option_find("json"), *quiet = hlb_option_find("quiet");
  if (hlb_option_for_command(json, a->cmd->name) && hlb_cli_flag(a, "json")) return 0;
  if (hlb_option_for_command(quiet, a->cmd->name) && hlb_cli_flag(a, "quiet")) return 0;
  return isatty(STDERR_FILENO);
}
