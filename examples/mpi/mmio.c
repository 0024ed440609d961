#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mmio.h"

typedef struct header {
  int symmetric, pattern;
  size_t rows, cols, entries;
  long data_line; /* line number of the first entry, for messages */
} header;

static int read_header(FILE *f, const char *path, header *h) {
  char line[1024];
  long lineno = 1;
  if (!fgets(line, sizeof line, f) || strncasecmp(line, "%%MatrixMarket", 14) != 0) {
    fprintf(stderr, "%s:1: not a Matrix Market file (no %%%%MatrixMarket header)\n", path);
    return -1;
  }
  char object[64], format[64], field[64], symmetry[64];
  if (sscanf(line, "%%%%MatrixMarket %63s %63s %63s %63s", object, format, field, symmetry) != 4 ||
      strcasecmp(object, "matrix") || strcasecmp(format, "coordinate")) {
    fprintf(stderr, "%s:1: only 'matrix coordinate' files are supported\n", path);
    return -1;
  }
  h->pattern = !strcasecmp(field, "pattern");
  if (!h->pattern && strcasecmp(field, "real") && strcasecmp(field, "integer")) {
    fprintf(stderr, "%s:1: field '%s' is not supported (real, integer, pattern)\n", path, field);
    return -1;
  }
  h->symmetric = !strcasecmp(symmetry, "symmetric");
  if (!h->symmetric && strcasecmp(symmetry, "general")) {
    fprintf(stderr, "%s:1: symmetry '%s' is not supported (general, symmetric)\n", path, symmetry);
    return -1;
  }
  do {
    lineno++;
    if (!fgets(line, sizeof line, f)) {
      fprintf(stderr, "%s:%ld: missing size line\n", path, lineno);
      return -1;
    }
  } while (line[0] == '%');
  if (sscanf(line, "%zu %zu %zu", &h->rows, &h->cols, &h->entries) != 3 || !h->rows || !h->cols) {
    fprintf(stderr, "%s:%ld: expected 'rows cols entries'\n", path, lineno);
    return -1;
  }
  h->data_line = lineno + 1;
  return 0;
}

/* Open the file and read its header; NULL (message printed) on failure. */
static FILE *open_matrix(const char *path, header *h) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return NULL;
  }
  if (read_header(f, path, h)) {
    fclose(f);
    return NULL;
  }
  return f;
}

int mm_read_size(const char *path, size_t *rows, size_t *cols, size_t *entries) {
  header h;
  FILE *f = open_matrix(path, &h);
  if (!f) return -1;
  fclose(f);
  *rows = h.rows;
  *cols = h.cols;
  *entries = h.entries;
  return 0;
}

typedef struct triple {
  size_t row, col;
  double val;
} triple;

static int by_row_col(const void *a, const void *b) {
  const triple *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->col < y->col ? -1 : (x->col > y->col);
}

static int push(triple **t, size_t *n, size_t *cap, size_t row, size_t col, double val) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 1024;
    triple *g = realloc(*t, *cap * sizeof **t);
    if (!g) return -1;
    *t = g;
  }
  (*t)[(*n)++] = (triple){row, col, val};
  return 0;
}

static int to_csr(triple *t, size_t n, size_t first, size_t count, hlb_csr *m) {
  if (n) qsort(t, n, sizeof *t, by_row_col); /* no entries: t may be NULL, which qsort forbids */
  m->row_ptr = calloc(count + 1, sizeof *m->row_ptr);
  m->col = malloc((n ? n : 1) * sizeof *m->col);
  m->val = malloc((n ? n : 1) * sizeof *m->val);
  if (!m->row_ptr || !m->col || !m->val) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && t[i].row == t[i - 1].row && t[i].col == t[i - 1].col) {
      m->val[k - 1] += t[i].val; /* repeated position: sum */
      continue;
    }
    m->col[k] = (int64_t)t[i].col;
    m->val[k] = t[i].val;
    m->row_ptr[t[i].row - first + 1]++;
    k++;
  }
  for (size_t r = 0; r < count; r++)
    m->row_ptr[r + 1] += m->row_ptr[r];
  return 0;
}

int mm_read_rows(const char *path, size_t first, size_t count, hlb_csr *m) {
  header h;
  FILE *f = open_matrix(path, &h);
  if (!f) return -1;
  int rc = 0;
  triple *t = NULL;
  size_t n = 0, cap = 0;
  char line[1024];
  for (size_t e = 0; !rc && e < h.entries; e++) {
    size_t i, j;
    double v = 1.0;
    int got = fgets(line, sizeof line, f) ? sscanf(line, "%zu %zu %lf", &i, &j, &v) : 0;
    if (got < (h.pattern ? 2 : 3) || i < 1 || j < 1 || i > h.rows || j > h.cols) {
      fprintf(stderr, "%s:%ld: bad entry (expected 'row col%s' within %zux%zu)\n", path,
              h.data_line + (long)e, h.pattern ? "" : " value", h.rows, h.cols);
      rc = -1;
      break;
    }
    i--, j--;
    if (i >= first && i < first + count) rc = push(&t, &n, &cap, i, j, v);
    if (!rc && h.symmetric && i != j && j >= first && j < first + count)
      rc = push(&t, &n, &cap, j, i, v);
  }
  fclose(f);
  if (!rc) rc = to_csr(t, n, first, count, m);
  free(t);
  return rc;
}
