/* Traces given to `hlb report` (executor, simulator, MPI and SPMD traces): read, analysed and
 * written as a page, as the command does (the page goes to /dev/null). */
#include <stdio.h>

#include "fuzz.h"
#include "report/report.h"

/* The page's assets: the real ones are generated into the hlb binary's build; the fuzzer
 * checks the code that reads traces and writes pages, not Chart.js. */
const char hlb__report_chartjs[] = "/* chart.js */";
const char hlb__report_page_js[] = "/* page.js */";
const char hlb__report_page_css[] = "";
const int hlb__report_have_chartjs = 1;

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_quiet();
  sink = fopen("/dev/null", "w");
  return sink ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, ".json");
  hlb__report r;
  if (hlb__report_load(path, &r) == 0) {
    hlb__report_analyze(&r);
    hlb__report_write_html(&r, sink);
  }
  hlb__report_free(&r);
  return 0;
}
