/* hlb fit: fit a performance model per PU from a CSV of measured blocks and print the chosen
 * terms, R^2, rejected rows and predictions (docs/models.md). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "cli.h"
#include "hlb/error.h"
#include "hlb/model.h"

#define CMD "fit"

const hlb_cli_command hlb_cmd_fit_spec = {
    .name = "fit",
    .operands = "SAMPLES.csv",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "fit per-PU performance models from measured samples (CSV)",
    .about = "SAMPLES.csv has the header pu,items,compute_s[,transfer_s] and one measured block "
             "per row. Per PU: the chosen terms of the basis in u = x / scale (scale = the PU's "
             "largest block), R^2, and rejected rows by reason (nan, inf, nonpositive, "
             "zero_items); docs/models.md. Exits 1 when no PU could be fitted."};

typedef struct row {
  size_t pu; /* index into the PU list */
  double items, compute_s, transfer_s;
} row;

typedef struct csv {
  const char *file;
  char **names; /* PU names, in order of first appearance */
  size_t n_pus, cap_pus;
  row *rows;
  size_t n_rows, cap_rows;
} csv;

static const char *const col_names[4] = {"pu", "items", "compute_s", "transfer_s"};

static void csv_free(csv *c) {
  for (size_t i = 0; i < c->n_pus; i++)
    free(c->names[i]);
  free(c->names);
  free(c->rows);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 16;
  void *q = realloc(*p, n * elem);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* Index of PU `name`, added at the end when new. */
static long pu_index(csv *c, const char *name) {
  for (size_t i = 0; i < c->n_pus; i++)
    if (strcmp(c->names[i], name) == 0) return (long)i;
  char *copy = malloc(strlen(name) + 1);
  if (!copy || grow((void **)&c->names, &c->cap_pus, c->n_pus + 1, sizeof *c->names)) {
    free(copy);
    return -1;
  }
  strcpy(copy, name);
  c->names[c->n_pus] = copy;
  return (long)c->n_pus++;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* Split a line at commas in place; returns the field count (at most max, +1 if more). */
static int split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (n < max) fields[n] = trim(p);
    n++;
    if (!comma || n > max) return n;
    p = comma + 1;
  }
}

/* A field that strtod reads completely: "nan", "inf" and "-1" parse (they are bad samples,
 * counted later), "abc" and "" do not (a malformed file). */
static int parse_number(const csv *c, size_t line, int col, const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (*s == '\0' || end == s || *end != '\0') {
    hlb_cli_usage_error(CMD, "%s:%zu: column '%s': expected a number, got '%s'", c->file, line,
                        col_names[col], s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_header(const csv *c, char *line, int *ncols) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", trim(line));
  if (strcmp(copy, "pu,items,compute_s") == 0)
    *ncols = 3;
  else if (strcmp(copy, "pu,items,compute_s,transfer_s") == 0)
    *ncols = 4;
  else
    return hlb_cli_usage_error(CMD,
                               "%s:1: expected the header 'pu,items,compute_s[,transfer_s]', "
                               "got '%s'",
                               c->file, copy);
  return 0;
}

static int parse_row(csv *c, char *line, size_t lineno, int ncols) {
  char *f[4];
  int n = split(line, f, 4);
  if (n != ncols)
    return hlb_cli_usage_error(CMD, "%s:%zu: expected %d columns, got %d", c->file, lineno, ncols,
                               n);
  if (f[0][0] == '\0')
    return hlb_cli_usage_error(CMD, "%s:%zu: column 'pu': empty name", c->file, lineno);
  row r = {.transfer_s = 0.0};
  if (parse_number(c, lineno, 1, f[1], &r.items) || parse_number(c, lineno, 2, f[2], &r.compute_s))
    return HLB_EXIT_USAGE;
  if (ncols == 4 && parse_number(c, lineno, 3, f[3], &r.transfer_s)) return HLB_EXIT_USAGE;
  long pu = pu_index(c, f[0]);
  if (pu < 0 || grow((void **)&c->rows, &c->cap_rows, c->n_rows + 1, sizeof *c->rows))
    return hlb_cli_usage_error(CMD, "%s:%zu: out of memory", c->file, lineno);
  r.pu = (size_t)pu;
  c->rows[c->n_rows++] = r;
  return 0;
}

static int blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}

static int read_csv(csv *c) {
  struct stat st;
  if (stat(c->file, &st) == 0 && S_ISDIR(st.st_mode))
    return hlb_cli_usage_error(CMD, "%s: is a directory", c->file);
  FILE *fp = fopen(c->file, "r");
  if (!fp) return hlb_cli_usage_error(CMD, "%s: cannot open: %s", c->file, strerror(errno));
  char *line = NULL;
  size_t cap = 0, lineno = 0;
  int ncols = 0, rc = 0;
  while (rc == 0 && getline(&line, &cap, fp) >= 0) {
    lineno++;
    if (lineno == 1)
      rc = parse_header(c, line, &ncols);
    else if (!blank(line))
      rc = parse_row(c, line, lineno, ncols);
  }
  if (rc == 0 && lineno == 0)
    rc = hlb_cli_usage_error(CMD,
                             "%s: empty file (expected the header "
                             "'pu,items,compute_s[,transfer_s]')",
                             c->file);
  free(line);
  fclose(fp);
  return rc;
}

/* ---- Fitting and output ---------------------------------------------------------------- */

typedef struct pu_fit {
  hlb_model *m;
  double scale;
  int rc;
  char error[512];
} pu_fit;

/* Scale is the largest valid block of the PU, so u = x / scale lies in (0, 1] on the data. */
static double pu_scale(const csv *c, size_t pu) {
  double s = 0.0;
  for (size_t i = 0; i < c->n_rows; i++) {
    const row *r = &c->rows[i];
    if (r->pu == pu && isfinite(r->items) && r->items > s) s = r->items;
  }
  return s > 0.0 ? s : 1.0;
}

static int fit_pu(const csv *c, size_t pu, double x_max_extra, pu_fit *out) {
  out->scale = pu_scale(c, pu);
  int rc = hlb_model_create(out->scale, NULL, &out->m);
  if (rc) return rc;
  for (size_t i = 0; i < c->n_rows; i++) {
    const row *r = &c->rows[i];
    if (r->pu == pu)
      (void)hlb_model_add(out->m, r->items, r->compute_s, r->transfer_s); /* counted if bad */
  }
  out->rc = hlb_model_fit(out->m, fmax(out->scale, x_max_extra));
  if (out->rc) snprintf(out->error, sizeof out->error, "%s", hlb_last_error());
  return 0;
}

static cJSON *json_pu(const char *name, const pu_fit *f, const double *xs, size_t nx) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddNumberToObject(o, "scale", f->scale);
  cJSON_AddNumberToObject(o, "samples", (double)hlb_model_samples(f->m));
  cJSON *rej = cJSON_AddObjectToObject(o, "rejected");
  for (int r = 0; r < HLB_REJECT_COUNT; r++)
    cJSON_AddNumberToObject(rej, hlb_reject_name((hlb_reject_reason)r),
                            (double)hlb_model_rejected(f->m, (hlb_reject_reason)r));
  if (f->rc) {
    cJSON_AddStringToObject(o, "error", f->error);
    return o;
  }
  hlb_curve cv;
  hlb_model_curve(f->m, &cv);
  cJSON *terms = cJSON_AddObjectToObject(o, "terms");
  for (int t = 0; t < HLB_TERM_COUNT; t++)
    if (hlb_model_terms(f->m) & (1u << t))
      cJSON_AddNumberToObject(terms, hlb_term_name((hlb_term)t), cv.coef[t]);
  cJSON_AddNumberToObject(o, "r2", hlb_model_r2(f->m));
  cJSON *tr = cJSON_AddObjectToObject(o, "transfer");
  cJSON_AddNumberToObject(tr, "per_item", cv.transfer_per_item);
  cJSON_AddNumberToObject(tr, "fixed", cv.transfer_fixed);
  cJSON *pr = cJSON_AddArrayToObject(o, "predict");
  for (size_t i = 0; i < nx; i++) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "items", xs[i]);
    cJSON_AddNumberToObject(p, "seconds", hlb_model_predict(f->m, xs[i]));
    cJSON_AddItemToArray(pr, p);
  }
  return o;
}

static void text_pu(const char *name, const pu_fit *f, const double *xs, size_t nx) {
  printf("pu %s: %zu samples, scale %g items", name, hlb_model_samples(f->m), f->scale);
  if (f->rc)
    printf(", cannot fit: %s\n", f->error);
  else
    printf(", r2 %.6f\n", hlb_model_r2(f->m));
  printf("  rejected:");
  for (int r = 0; r < HLB_REJECT_COUNT; r++)
    printf(" %s=%zu", hlb_reject_name((hlb_reject_reason)r),
           hlb_model_rejected(f->m, (hlb_reject_reason)r));
  printf("\n");
  if (f->rc) return;
  hlb_curve cv;
  hlb_model_curve(f->m, &cv);
  printf("  terms (u = items / %g):", f->scale);
  for (int t = 0; t < HLB_TERM_COUNT; t++)
    if (hlb_model_terms(f->m) & (1u << t))
      printf(" %s=%.6g", hlb_term_name((hlb_term)t), cv.coef[t]);
  printf("\n  transfer: %.6g s/item + %.6g s\n", cv.transfer_per_item, cv.transfer_fixed);
  for (size_t i = 0; i < nx; i++)
    printf("  predict: %g items: %.6g s\n", xs[i], hlb_model_predict(f->m, xs[i]));
}

/* --predict X[,X...]: block sizes > 0. */
static int parse_predict(const char *arg, double **xs, size_t *nx) {
  size_t cap = 0;
  char *copy = malloc(strlen(arg) + 1);
  if (!copy) return hlb_cli_usage_error(CMD, "out of memory");
  strcpy(copy, arg);
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    double x;
    if (hlb_cli_parse_double(CMD, "--predict", tok, DBL_MIN, DBL_MAX, &x))
      rc = HLB_EXIT_USAGE;
    else if (grow((void **)xs, &cap, *nx + 1, sizeof **xs))
      rc = hlb_cli_usage_error(CMD, "out of memory");
    else
      (*xs)[(*nx)++] = x;
  }
  if (rc == 0 && *nx == 0)
    rc = hlb_cli_usage_error(CMD, "--predict: expected X[,X...], got '%s'", arg);
  free(copy);
  return rc;
}

typedef struct args {
  const char *file;
  double *xs;
  size_t nx;
  int json;
} args;

static int parse_args(int argc, char **argv, args *a) {
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_fit_spec, argc, argv, &cli);
  if (rc == 0) {
    a->file = cli.operand[0];
    a->json = hlb_cli_flag(&cli, "json");
    const char *predict = hlb_cli_text(&cli, "predict");
    if (predict && parse_predict(predict, &a->xs, &a->nx)) rc = HLB_EXIT_USAGE;
  }
  hlb_cli_args_free(&cli);
  return rc;
}

static double max_of(const double *xs, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; i++)
    m = fmax(m, xs[i]);
  return m;
}

/* Fit every PU and print; exit 0 when at least one PU fitted. */
static int run(const csv *c, const args *a) {
  pu_fit *fits = calloc(c->n_pus ? c->n_pus : 1, sizeof *fits);
  if (!fits) return hlb_cli_usage_error(CMD, "out of memory");
  int fitted = 0, rc = 0;
  cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "pus");
  for (size_t p = 0; p < c->n_pus && rc == 0; p++) {
    rc = fit_pu(c, p, max_of(a->xs, a->nx), &fits[p]);
    if (rc) {
      rc = hlb_cli_lib_error(CMD, rc);
      break;
    }
    fitted += fits[p].rc == 0;
    if (a->json)
      cJSON_AddItemToArray(arr, json_pu(c->names[p], &fits[p], a->xs, a->nx));
    else
      text_pu(c->names[p], &fits[p], a->xs, a->nx);
  }
  if (rc == 0 && a->json) {
    char *s = cJSON_Print(root);
    if (s) puts(s);
    free(s);
  }
  if (rc == 0 && c->n_pus == 0)
    fprintf(stderr, "hlb %s: %s: no samples after the header\n", CMD, c->file);
  else if (rc == 0 && !fitted)
    fprintf(stderr, "hlb %s: %s: no PU could be fitted\n", CMD, c->file);
  for (size_t p = 0; p < c->n_pus; p++)
    hlb_model_destroy(fits[p].m);
  free(fits);
  cJSON_Delete(root);
  return rc ? rc : fitted ? HLB_EXIT_OK : HLB_EXIT_FAIL;
}

int hlb_cmd_fit(int argc, char **argv) {
  args a = {0};
  csv c = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc == 0) {
    c.file = a.file;
    rc = read_csv(&c);
  }
  if (rc == 0) rc = run(&c, &a);
  csv_free(&c);
  free(a.xs);
  return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
}
