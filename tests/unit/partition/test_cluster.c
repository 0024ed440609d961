/* Cluster files: the example loads with the values written in it, every malformed variant is
 * refused with the file, the JSON path and the value, and eq. 4 reproduces the paper's
 * Table A.3 from its Table A.2. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlb/cluster.h"
#include "hlb/error.h"

static void example_file_loads(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  assert_int_equal(hlb_cluster_load(HLB_SOURCE_DIR "/docs/examples/cluster-small.json", &c), 0);
  assert_int_equal(c->n_nodes, 4);
  assert_int_equal(c->n_pus, 10);
  assert_int_equal(c->n_events, 0);
  assert_string_equal(c->nodes[2].name, "apl11");
  assert_int_equal(c->nodes[2].first_pu, 4);
  assert_int_equal(c->nodes[2].n_pus, 3);
  assert_true(c->nodes[0].link.latency_s == 4.929e-5);
  assert_true(c->nodes[0].link.bandwidth_Bps == 98929407);
  assert_true(c->nodes[0].max_items == SIZE_MAX);
  assert_true(c->nodes[0].partition_s == 0 && c->nodes[0].merge_s == 0);
  const hlb_cluster_pu *g = &c->pus[hlb_cluster_find_pu(c, "apl11-gpu1")];
  assert_string_equal(g->kind, "gpu");
  assert_int_equal(g->node, 2);
  assert_true(g->poly[0] == 0 && g->poly[1] == 0.4114494 && g->poly[2] == 0);
  assert_true(g->max_items == SIZE_MAX);
  /* The curve is the file's polynomial: 10 items take 10 * linear. */
  assert_true(fabs(hlb_curve_time(&g->time, 10) - 4.114494) < 1e-12);
  assert_true(c->item_in_bytes == 8396800 && c->item_out_bytes == 8192);
  assert_true(c->noise_sigma == 0);
  assert_int_equal(hlb_cluster_find_node(c, "apl12"), 3);
  assert_int_equal(hlb_cluster_find_node(c, "nope"), -1);
  assert_int_equal(hlb_cluster_find_pu(c, "nope"), -1);
  hlb_cluster_free(c);
}

static const char *const full_text =
    "{\"comment\": \"x\", \"item\": {\"in_bytes\": 8, \"out_bytes\": 0}, \"noise_sigma\": 0.1,\n"
    " \"nodes\": [\n"
    "  {\"name\": \"a\", \"link\": {\"latency_s\": 1e-3, \"bandwidth_Bps\": 1e9}, "
    "\"partition_s\": 0.5, \"merge_s\": 0.25, \"max_items\": 100,\n"
    "   \"pus\": [{\"name\": \"a0\", \"kind\": \"cpu\", \"time\": {\"const\": 1, \"linear\": 2, "
    "\"quadratic\": 3, \"cubic\": 4, \"xlogx\": 5, \"comment\": \"c\"}, \"max_items\": 7}]},\n"
    "  {\"name\": \"b\", \"comment\": \"n\", \"link\": {\"latency_s\": 0, \"bandwidth_Bps\": 5}, "
    "\"pus\": [\n"
    "    {\"name\": \"b0\", \"kind\": \"gpu\", \"link\": {\"latency_s\": 2e-6, \"bandwidth_Bps\": "
    "6e9}, \"time\": {\"linear\": 1}},\n"
    "    {\"name\": \"b1\", \"kind\": \"gpu\", \"time\": {\"linear\": 1}}]}],\n"
    " \"events\": [{\"at_s\": 5, \"pu\": \"b1\", \"fail\": true},\n"
    "            {\"at_s\": 2, \"pu\": \"b0\", \"slowdown\": 3},\n"
    "            {\"at_s\": 5, \"pu\": \"a0\", \"slowdown\": 1, \"comment\": \"end\"}]}";

static void every_field_is_read(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  assert_int_equal(hlb_cluster_parse("t.json", full_text, &c), 0);
  assert_int_equal(c->n_nodes, 2);
  assert_int_equal(c->n_pus, 3);
  assert_true(c->nodes[0].partition_s == 0.5 && c->nodes[0].merge_s == 0.25);
  assert_true(c->nodes[0].max_items == 100 && c->pus[0].max_items == 7);
  for (int k = 0; k < 5; k++)
    assert_true(c->pus[0].poly[k] == k + 1);
  /* x ln x term: at x = e, 1 + 2e + 3e^2 + 4e^3 + 5e. */
  double e = exp(1.0);
  assert_true(fabs(hlb_curve_time(&c->pus[0].time, e) -
                   (1 + 2 * e + 3 * e * e + 4 * e * e * e + 5 * e)) < 1e-9);
  /* A PU without a link is free. */
  assert_true(c->pus[2].link.latency_s == 0 && isinf(c->pus[2].link.bandwidth_Bps));
  assert_true(c->pus[1].node == 1 && c->pus[2].node == 1);
  assert_true(c->noise_sigma == 0.1);
  assert_true(c->host_jitter_s == 0); /* not given: no host delays */
  /* Events sorted by time, ties in file order. */
  assert_int_equal(c->n_events, 3);
  assert_true(c->events[0].at_s == 2 && c->events[0].pu == 1);
  assert_int_equal(c->events[0].kind, HLB_EVENT_SLOWDOWN);
  assert_true(c->events[0].slowdown == 3);
  assert_int_equal(c->events[1].kind, HLB_EVENT_FAIL);
  assert_int_equal(c->events[1].pu, 2);
  assert_int_equal(c->events[2].pu, 0);
  assert_true(c->events[2].slowdown == 1);
  hlb_cluster_free(c);
}

/* One malformed variant: a replacement applied to full_text, and the message expected. */
typedef struct bad_case {
  const char *from, *to; /* first occurrence of `from` in full_text becomes `to` */
  const char *msg;       /* expected substring of hlb_last_error() */
} bad_case;

static const bad_case bad_cases[] = {
    {"\"bandwidth_Bps\": 6e9", "\"bandwidth_Bps\": -3",
     "t.json: nodes[1].pus[0].link.bandwidth_Bps: must be > 0, got -3"},
    {"\"bandwidth_Bps\": 6e9", "\"bandwidth_Bps\": 0",
     "nodes[1].pus[0].link.bandwidth_Bps: must be > 0, got 0"},
    {"\"latency_s\": 1e-3", "\"latency\": 1e-3", "t.json: nodes[0].link.latency: unknown member"},
    {"\"latency_s\": 1e-3", "\"latency_s\": -1e-3", "nodes[0].link.latency_s: must be in [0,"},
    {"\"latency_s\": 1e-3", "\"latency_s\": \"fast\"", "nodes[0].link.latency_s: must be a number"},
    {"\"name\": \"b\"", "\"name\": \"a\"", "nodes[1].name: \"a\" is already the name of nodes[0]"},
    {"\"name\": \"b1\"", "\"name\": \"a0\"",
     "nodes[1].pus[1].name: \"a0\" is already the name of nodes[0].pus[0]"},
    {"{\"linear\": 1}}]}]", "{\"linear\": -1, \"quadratic\": 0.25}}]}]",
     "nodes[1].pus[1].time: decreases at x = 1 items"},
    {"\"cubic\": 4", "\"cubic\": -1e-11", "nodes[0].pus[0].time: decreases at x = 1e+12 items"},
    {"{\"linear\": 1}}]}]", "{\"linear\": 10, \"xlogx\": -1}}]}]",
     "nodes[1].pus[1].time: decreases at x = 1e+12 items"},
    {"\"const\": 1,", "\"const\": -100,",
     "nodes[0].pus[0].time: time of a 1-item block is negative"},
    {"\"cubic\": 4", "\"cubic\": 1e300",
     "nodes[0].pus[0].time: time of a 1e+12-item block overflows"},
    {"\"quadratic\": 3", "\"quadratic\": 3, \"quartic\": 1",
     "nodes[0].pus[0].time.quartic: unknown member"},
    {"\"max_items\": 7", "\"max_items\": 0", "nodes[0].pus[0].max_items: must be >= 1, got 0"},
    {"\"max_items\": 7", "\"max_items\": 2.5", "nodes[0].pus[0].max_items: must be an integer"},
    {"\"max_items\": 100", "\"max_items\": -1", "nodes[0].max_items: must be an integer"},
    {"\"partition_s\": 0.5", "\"partition_s\": -0.5", "nodes[0].partition_s: must be in [0,"},
    {"\"merge_s\": 0.25", "\"merge_s\": null", "nodes[0].merge_s: must be a number"},
    {"\"kind\": \"cpu\", ", "", "nodes[0].pus[0].kind: required member is missing"},
    {"\"kind\": \"cpu\"", "\"kind\": \"\"", "nodes[0].pus[0].kind: must be a non-empty string"},
    {"\"time\": {\"linear\": 1}}]", "\"tme\": {\"linear\": 1}}]",
     "nodes[1].pus[1].tme: unknown member"},
    {"\"name\": \"a\", \"link\": {\"latency_s\": 1e-3, \"bandwidth_Bps\": 1e9}, ",
     "\"name\": \"a\", \"link\": 5, ", "nodes[0].link: must be an object"},
    {"\"pus\": [{", "\"pus\": [], \"x\": [{", "nodes[0].pus: must hold at least one PU"},
    {"\"pus\": [{\"name\": \"a0\"", "\"pus\": [7, {\"name\": \"a0\"",
     "nodes[0].pus[0]: must be an object"},
    {"\"item\": {\"in_bytes\": 8, \"out_bytes\": 0}, ", "",
     "t.json: item: required member is missing"},
    {"\"out_bytes\": 0", "\"out_bytes\": -1", "item.out_bytes: must be in [0,"},
    {"\"noise_sigma\": 0.1", "\"noise_sigma\": -0.1", "t.json: noise_sigma: must be in [0,"},
    {"\"noise_sigma\": 0.1", "\"noise_sigma\": 0.1, \"host_jitter_s\": -1e-3",
     "t.json: host_jitter_s: must be in [0,"},
    {"\"noise_sigma\": 0.1", "\"noise_sigma\": 0.1, \"host_jitter_s\": \"busy\"",
     "t.json: host_jitter_s: must be a number"},
    {"\"comment\": \"x\"", "\"comment\": 3", "t.json: comment: must be a non-empty string"},
    {"\"comment\": \"n\"", "\"comment\": [\"n\"]", "nodes[1].comment: must be a non-empty string"},
    {"\"comment\": \"x\"", "\"colour\": \"x\"", "t.json: colour: unknown member"},
    {"\"noise_sigma\": 0.1", "\"noise_sigma\": 0.1, \"noise_sigma\": 0",
     "t.json: noise_sigma: member appears twice"},
    {"\"pu\": \"b1\"", "\"pu\": \"b9\"", "t.json: events[0].pu: no PU is named \"b9\""},
    {"\"slowdown\": 3", "\"slowdown\": 0", "events[1].slowdown: must be > 0, got 0"},
    {"\"fail\": true", "\"fail\": false", "events[0].fail: must be true"},
    {"\"fail\": true", "\"fail\": true, \"slowdown\": 2", "events[0]: needs exactly one of"},
    {", \"fail\": true", "", "events[0]: needs exactly one of"},
    {"\"at_s\": 2", "\"at_s\": -2", "events[1].at_s: must be in [0,"},

    {"\"kind\": \"cpu\"", "\"kind\": \"cpu\",,", "t.json:4:"},
};

static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  assert_non_null(at);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n + 16); /* room for small edits by the caller */
  size_t pre = (size_t)(at - text);
  memcpy(out, text, pre);
  strcpy(out + pre, to);
  strcat(out, at + strlen(from));
  return out;
}

static void malformed_files_are_refused(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
    const bad_case *b = &bad_cases[k];
    char *text = replaced(full_text, b->from, b->to);
    hlb_cluster *c = (hlb_cluster *)1;
    hlb_clear_error();
    int rc = hlb_cluster_parse("t.json", text, &c);
    if (rc != HLB_EPARSE || !strstr(hlb_last_error(), b->msg))
      fail_msg("case %zu (%s -> %s): rc %d, message '%s', expected '%s'", k, b->from, b->to, rc,
               hlb_last_error(), b->msg);
    assert_null(c);
    free(text);
  }
}

static void root_and_file_errors(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  assert_int_equal(hlb_cluster_parse("t.json", "[1, 2]", &c), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "t.json: (root): must be an object"));
  assert_int_equal(hlb_cluster_parse("t.json", "{\"item\": {}}", &c), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "t.json: nodes: required member is missing"));
  assert_int_equal(hlb_cluster_parse("t.json", "{\"item\": {}, \"nodes\": []}", &c), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "t.json: nodes: must hold at least one node"));
  assert_int_equal(hlb_cluster_parse("t.json", "{\"nodes\": {}}", &c), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "t.json: nodes: must be an array"));
  char *text = replaced(full_text, "\"events\": [", "\"events\": {\"a\": [");
  strcpy(strrchr(text, ']'), "]}}");
  assert_int_equal(hlb_cluster_parse("t.json", text, &c), HLB_EPARSE);
  assert_non_null(strstr(hlb_last_error(), "t.json: events: must be an array"));
  free(text);
  assert_int_equal(hlb_cluster_load("/nonexistent/c.json", &c), HLB_EIO);
  assert_non_null(strstr(hlb_last_error(), "/nonexistent/c.json"));
  assert_int_equal(hlb_cluster_parse("t.json", NULL, &c), HLB_EINVAL);
  assert_int_equal(hlb_cluster_load(NULL, &c), HLB_EINVAL);
  hlb_cluster_free(NULL);
}

/* The manager's own node needs no network: an absent node link, like an absent PU link, is
 * free (latency 0, infinite bandwidth). */
static void absent_links_are_free(void **state) {
  (void)state;
  hlb_cluster *c = NULL;
  const char *text =
      "{\"item\": {\"in_bytes\": 8, \"out_bytes\": 8}, \"nodes\": [{\"name\": \"m\", "
      "\"pus\": [{\"name\": \"cpu\", \"kind\": \"cpu\", \"time\": {\"linear\": 1}}]}]}";
  assert_int_equal(hlb_cluster_parse("t.json", text, &c), 0);
  assert_true(c->nodes[0].link.latency_s == 0);
  assert_true(isinf(c->nodes[0].link.bandwidth_Bps));
  assert_true(isinf(c->pus[0].link.bandwidth_Bps));
  hlb_cluster_free(c);
}

/* Table A.2 of Boinski & Czarnul (ping-pong, ms) for apl09 and apl11, and the b_Ni of their
 * Table A.3 computed from it with eq. 4. */
static void pingpong_reproduces_table_a3(void **state) {
  (void)state;
  const double MiB = 1048576.0;
  double bytes[] = {1, 0.5 * MiB, MiB, 2 * MiB, 8 * MiB, 16 * MiB, 32 * MiB};
  double apl09_ms[] = {0.099, 10.858, 20.184, 38.721, 151.064, 300.724, 1047.023};
  double apl11_ms[] = {0.068, 9.38, 18.246, 36.175, 151.187, 285.692, 570.819};
  double rt[7];
  hlb_link l;
  for (int k = 0; k < 7; k++)
    rt[k] = apl09_ms[k] / 1000;
  assert_int_equal(hlb_link_from_pingpong(bytes, rt, 7, &l), 0);
  /* The table rounds the ms values it was computed from; 0.1 % covers that. */
  assert_true(fabs(l.bandwidth_Bps / 98929407 - 1) < 1e-3);
  assert_true(fabs(l.latency_s - 0.099e-3 / 2) < 1e-12); /* table A.3 prints 4.929e-5 */
  for (int k = 0; k < 7; k++)
    rt[k] = apl11_ms[k] / 1000;
  assert_int_equal(hlb_link_from_pingpong(bytes, rt, 7, &l), 0);
  assert_true(fabs(l.bandwidth_Bps / 117412460 - 1) < 1e-3);
  assert_true(fabs(hlb_link_time(&l, 0) - l.latency_s) == 0);
  /* Not enough sizes, and a time that does not grow. */
  assert_int_equal(hlb_link_from_pingpong(bytes, rt, 2, &l), HLB_EINVAL);
  rt[3] = rt[2];
  assert_int_equal(hlb_link_from_pingpong(bytes, rt, 7, &l), HLB_EINVAL);
  assert_non_null(strstr(hlb_last_error(), "entry 3"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(example_file_loads),           cmocka_unit_test(every_field_is_read),
      cmocka_unit_test(malformed_files_are_refused),  cmocka_unit_test(root_and_file_errors),
      cmocka_unit_test(pingpong_reproduces_table_a3), cmocka_unit_test(absent_links_are_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
