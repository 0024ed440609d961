/* `hlb report TRACE -o PAGE`: read, analyse, write. The page is written to PAGE.tmp and renamed
 * over PAGE only when complete, so a failed run never leaves half a page over a good one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/report.h"

static int write_to(const hlb__report *r, const char *out) {
  if (!strcmp(out, "-"))
    return hlb__report_write_html(r, stdout) || fflush(stdout) ? HLB_EXIT_FAIL : 0;
  size_t n = strlen(out) + 8;
  char *tmp = malloc(n);
  if (!tmp) return HLB_EXIT_FAIL;
  snprintf(tmp, n, "%s.tmp", out);
  FILE *f = fopen(tmp, "w");
  int rc = 0;
  if (!f) {
    fprintf(stderr, "hlb report: %s: cannot write the page: %s\n", tmp, strerror(errno));
    rc = HLB_EXIT_USAGE;
  } else {
    int bad = hlb__report_write_html(r, f);
    if (fclose(f) || bad || rename(tmp, out)) {
      fprintf(stderr, "hlb report: %s: writing the page failed: %s\n", out, strerror(errno));
      remove(tmp);
      rc = HLB_EXIT_FAIL;
    }
  }
  free(tmp);
  return rc;
}

int hlb__report_run(const char *in, const char *out) {
  if (!hlb__report_have_chartjs) {
    fprintf(stderr, "hlb report: this hlb was built without Chart.js (Debian package "
                    "libjs-chart.js); install it and rebuild\n");
    return HLB_EXIT_FAIL;
  }
  hlb__report r;
  int rc = hlb__report_load(in, &r);
  if (rc == 0) {
    hlb__report_analyze(&r);
    rc = write_to(&r, out);
  }
  hlb__report_free(&r);
  return rc;
}
