/* hlb report TRACE.json -o report.html: the page a person opens after a slow run (report/):
 * what ran, per-PU figures, "where the time went", and the charts, in one self-contained file
 * from a trace of `hlb run --trace` or `hlb sim --trace`. */
#include "cli.h"
#include "report/report.h"

const hlb_cli_command hlb_cmd_report_spec = {
    .name = "report",
    .operands = "TRACE.json",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "HTML report of a run's or a simulation's trace: why it took as long as it did",
    .about = "Writes one self-contained HTML page from a trace of `hlb run --trace` or `hlb sim "
             "--trace`: what ran, per-PU items, times and models, where the time went and what "
             "to change, and charts (Gantt, block sizes, predicted vs actual time, fitted "
             "curves, items over time, tail idle). Docs: docs/report.md"};

int hlb_cmd_report(int argc, char **argv) {
  hlb_cli_args cli;
  int rc = hlb_cli_parse(&hlb_cmd_report_spec, argc, argv, &cli);
  const char *in = rc == 0 ? cli.operand[0] : NULL;
  const char *out = rc == 0 ? hlb_cli_text(&cli, "report.output") : NULL;
  hlb_cli_args_free(&cli);
  if (rc) return rc == HLB_CLI_HELP_SHOWN ? HLB_EXIT_OK : rc;
  /* The default page name is checked here; a given -o was checked by the parser. */
  if (!out) out = hlb_option_find("report.output")->def;
  if (hlb_cli_check_writable("report", "-o", out)) return HLB_EXIT_USAGE;
  return hlb__report_run(in, out);
}
