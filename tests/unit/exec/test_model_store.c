/* The model files (src/exec/model_store.c): samples round-trip per PU key, only the newest
 * HLB__MODEL_KEEP stay, a replacing write drops a PU's old samples, untrusted files read as
 * empty, writers running at once (separate processes) lose nothing, and item costs are kept
 * with the samples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/model_store.h"
#include "hlb/models.h"

static char dir[256];

static int setup(void **st) {
  (void)st;
  snprintf(dir, sizeof dir, "/tmp/hlb-model-store-%ld", (long)getpid());
  return 0;
}

static int teardown(void **st) {
  (void)st;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static hlb_sample sample(size_t x, double c) {
  return (hlb_sample){.block = {.count = x}, .compute_s = c, .transfer_s = 0.001};
}

static void write_samples(const char *codelet, const char *pu, size_t first, size_t n,
                          int replace) {
  hlb__model_set add = {0};
  hlb_sample *s = calloc(n, sizeof *s);
  assert_non_null(s);
  for (size_t k = 0; k < n; k++)
    s[k] = sample(first + k, 0.01 * (double)(first + k));
  assert_int_equal(hlb__model_append(&add, pu, s, n), 0);
  add.pu[0].replace = replace;
  assert_int_equal(hlb__model_write(dir, codelet, "test", &add), 0);
  hlb__model_set_free(&add);
  free(s);
}

static size_t stored(const char *codelet, const char *pu, size_t *first) {
  hlb__model_set set;
  assert_int_equal(hlb__model_read(dir, codelet, &set), 0);
  const hlb__stored_pu *p = hlb__model_find(&set, pu);
  size_t n = p ? p->n : 0;
  if (first) *first = n ? p->s[0].block.count : 0;
  hlb__model_set_free(&set);
  return n;
}

static void round_trip_and_forgetting(void **st) {
  (void)st;
  assert_int_equal(stored("rt-1", "cpu", NULL), 0); /* no file: empty, no error */
  write_samples("rt-1", "cpu", 1, 10, 0);
  write_samples("rt-1", "gpu|dev|cores=1", 100, 5, 0);
  size_t first = 0;
  assert_int_equal(stored("rt-1", "cpu", &first), 10);
  assert_int_equal(first, 1);
  assert_int_equal(stored("rt-1", "gpu|dev|cores=1", NULL), 5);
  /* Past HLB__MODEL_KEEP the oldest go. */
  write_samples("rt-1", "cpu", 11, HLB__MODEL_KEEP, 0);
  assert_int_equal(stored("rt-1", "cpu", &first), HLB__MODEL_KEEP);
  assert_int_equal(first, 11); /* samples 1..10 were pushed out */
  /* A replacing write keeps only its own samples for that PU, the other PU untouched. */
  write_samples("rt-1", "cpu", 500, 3, 1);
  assert_int_equal(stored("rt-1", "cpu", &first), 3);
  assert_int_equal(first, 500);
  assert_int_equal(stored("rt-1", "gpu|dev|cores=1", NULL), 5);
}

static void untrusted_files_read_empty(void **st) {
  (void)st;
  write_samples("bad-1", "cpu", 1, 4, 0);
  char path[1024];
  assert_int_equal(hlb__model_path(dir, "bad-1", path, sizeof path), 0);
  const char *bodies[] = {"{\"hlb_models\": 1, \"host\": ", "[1, 2]",
                          "{\"hlb_models\": 2, \"host\": \"x\", \"pus\": []}",
                          "{\"hlb_models\": 1, \"host\": \"0000000000000000\", \"pus\": []}"};
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(bodies[i], f);
    fclose(f);
    assert_int_equal(stored("bad-1", "cpu", NULL), 0);
  }
  /* The public listing names the problem; a write replaces the file with a good one. */
  hlb_stored_models *list = NULL;
  size_t n = 0;
  assert_int_equal(hlb_models_list(dir, &list, &n), 0);
  int found = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i].key, "bad-1")) found = strstr(list[i].problem, "foreign") != NULL;
  hlb_models_list_free(list, n);
  assert_true(found);
  write_samples("bad-1", "cpu", 1, 4, 0);
  assert_int_equal(stored("bad-1", "cpu", NULL), 4);
}

/* Write item costs (n slices over `items` items: 1, 2, ... n; trusted or on trial) or, with n
 * 0, a run that learnt none, together with one sample. */
static void write_item_cost(const char *codelet, unsigned n, size_t items, int trusted) {
  hlb__model_set add = {0};
  hlb_sample s = sample(10, 0.1);
  assert_int_equal(hlb__model_append(&add, "cpu", &s, 1), 0);
  double cost[16];
  for (unsigned k = 0; k < n; k++)
    cost[k] = 1.0 + k + 1.0 / 3.0; /* not exact in four digits */
  if (n) assert_int_equal(hlb__model_set_item_cost(&add, cost, n, items, trusted), 0);
  add.item_cost_learnt = n > 0; /* as a run that learnt them (or none) writes */
  assert_int_equal(hlb__model_write(dir, codelet, "test", &add), 0);
  hlb__model_set_free(&add);
}

/* Item costs round-trip (to four significant digits, and whether they are trusted) for the
 * item count they were learnt over; a run that learnt none leaves them, a newer one replaces
 * them; the listing shows them; costs written without "trusted" are on trial; a malformed
 * "item_cost" makes the file untrusted. */
static void item_costs_round_trip(void **st) {
  (void)st;
  write_item_cost("ic-1", 4, 2048, 1);
  hlb__model_set set;
  assert_int_equal(hlb__model_read(dir, "ic-1", &set), 0);
  unsigned n = 0;
  assert_null(hlb__model_item_cost(&set, 1000, &n)); /* other items: none */
  assert_int_equal(n, 0);
  const double *c = hlb__model_item_cost(&set, 2048, &n);
  assert_non_null(c);
  assert_int_equal(n, 4);
  for (unsigned k = 0; k < 4; k++)
    assert_true(fabs(c[k] - (1.0 + k + 1.0 / 3.0)) < 1e-3 * c[k]);
  assert_int_equal(set.item_cost_learnt, 0);
  assert_int_equal(set.item_cost_trusted, 1);
  hlb__model_set_free(&set);
  write_item_cost("ic-1", 0, 0, 0); /* learnt nothing */
  assert_int_equal(hlb__model_read(dir, "ic-1", &set), 0);
  assert_int_equal(set.n_item_cost, 4);
  assert_int_equal(set.item_cost_trusted, 1);
  assert_int_equal(set.pu[0].n, 2);
  hlb__model_set_free(&set);
  write_item_cost("ic-1", 2, 512, 0);
  hlb_stored_models *list = NULL;
  size_t nl = 0;
  assert_int_equal(hlb_models_list(dir, &list, &nl), 0);
  int found = 0;
  for (size_t i = 0; i < nl; i++)
    if (!strcmp(list[i].key, "ic-1"))
      found = list[i].item_cost_items == 512 && list[i].item_cost_slices == 2 &&
              list[i].item_cost_trusted == 0;
  hlb_models_list_free(list, nl);
  assert_true(found);
  char path[1024], key[17];
  assert_int_equal(hlb__model_path(dir, "ic-1", path, sizeof path), 0);
  hlb__model_host(key, NULL, 0);
  char old[512], why_old[256] = "";
  snprintf(old, sizeof old,
           "{\"hlb_models\": 1, \"host\": \"%s\", \"item_cost\": {\"items\": 8, \"slices\": "
           "[1, 2]}, \"pus\": [{\"pu\": \"cpu\", \"samples\": [[1, 0.1, 0]]}]}",
           key);
  assert_int_equal(hlb__model_parse(old, &set, why_old, sizeof why_old), 0);
  assert_int_equal(set.n_item_cost, 2);
  assert_int_equal(set.item_cost_trusted, 0); /* written before trust was kept: on trial */
  hlb__model_set_free(&set);
  const char *bad[] = {"{\"items\": 8, \"trusted\": 1, \"slices\": [1]}",
                       "{\"items\": 0, \"slices\": [1]}",
                       "{\"items\": 2.5, \"slices\": [1]}",
                       "{\"items\": 8, \"slices\": []}",
                       "{\"items\": 8, \"slices\": [1, -2]}",
                       "{\"items\": 8, \"slices\": [1, \"x\"]}",
                       "{\"items\": 8}",
                       "7"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[512], why[256] = "";
    snprintf(text, sizeof text,
             "{\"hlb_models\": 1, \"host\": \"%s\", \"item_cost\": %s, \"pus\": "
             "[{\"pu\": \"cpu\", \"samples\": [[1, 0.1, 0]]}]}",
             key, bad[i]);
    assert_int_equal(hlb__model_parse(text, &set, why, sizeof why), 1);
    if (!strstr(why, "item_cost"))
      fail_msg("%s: the reason does not name item_cost: %s", bad[i], why);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(stored("ic-1", "cpu", NULL), 0); /* the file is ignored */
  }
}

/* Eight processes write 8 samples each for their own PU and for a shared one, at once. */
static void concurrent_writers_lose_nothing(void **st) {
  (void)st;
  enum { WRITERS = 8, EACH = 8 };
  pid_t pid[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    pid[w] = fork();
    assert_true(pid[w] >= 0);
    if (pid[w] == 0) {
      char own[32];
      snprintf(own, sizeof own, "pu%d", w);
      for (int k = 0; k < EACH; k++) {
        write_samples("race-1", own, (size_t)(100 * w + k + 1), 1, 0);
        write_samples("race-1", "shared", (size_t)(100 * w + k + 1), 1, 0);
      }
      _exit(0);
    }
  }
  for (int w = 0; w < WRITERS; w++) {
    int status = 0;
    assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  for (int w = 0; w < WRITERS; w++) {
    char own[32];
    snprintf(own, sizeof own, "pu%d", w);
    assert_int_equal(stored("race-1", own, NULL), EACH);
  }
  assert_int_equal(stored("race-1", "shared", NULL), WRITERS * EACH);
}

static void clear_removes_files(void **st) {
  (void)st;
  write_samples("clear-1", "cpu", 1, 2, 0);
  size_t removed = 0;
  assert_int_equal(hlb_models_clear(dir, "nothing-of-that-name", &removed), 0);
  assert_int_equal(removed, 0);
  assert_int_equal(hlb_models_clear(dir, "test", &removed), 0); /* every file's codelet */
  assert_true(removed >= 1);
  assert_int_equal(stored("clear-1", "cpu", NULL), 0);
}

/* A device's decisions round-trip, and the newest of the two contradicting ones stands. */
static void write_decision(const char *released, const char *takes) {
  hlb__model_set add = {0};
  hlb_sample s = sample(4, 0.01);
  assert_int_equal(hlb__model_append(&add, "opencl:0|dev|cores=1", &s, 1), 0);
  snprintf(add.pu[0].released, sizeof add.pu[0].released, "%s", released);
  snprintf(add.pu[0].takes_cores, sizeof add.pu[0].takes_cores, "%s", takes);
  assert_int_equal(hlb__model_write(dir, "dec-1", "test", &add), 0);
  hlb__model_set_free(&add);
}

static void decisions_newest_stands(void **st) {
  (void)st;
  hlb__model_set set;
  write_decision("released: slow", "");
  write_decision("", ""); /* a run that decided nothing keeps the decision */
  assert_int_equal(hlb__model_read(dir, "dec-1", &set), 0);
  assert_string_equal(hlb__model_find(&set, "opencl:0|dev|cores=1")->released, "released: slow");
  hlb__model_set_free(&set);
  write_decision("", "2 against 1 items/s in cpu");
  assert_int_equal(hlb__model_read(dir, "dec-1", &set), 0);
  const hlb__stored_pu *p = hlb__model_find(&set, "opencl:0|dev|cores=1");
  assert_string_equal(p->takes_cores, "2 against 1 items/s in cpu");
  assert_string_equal(p->released, "");
  hlb__model_set_free(&set);
  write_decision("released: slow again", "");
  assert_int_equal(hlb__model_read(dir, "dec-1", &set), 0);
  p = hlb__model_find(&set, "opencl:0|dev|cores=1");
  assert_string_equal(p->released, "released: slow again");
  assert_string_equal(p->takes_cores, "");
  hlb__model_set_free(&set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_and_forgetting),
      cmocka_unit_test(untrusted_files_read_empty),
      cmocka_unit_test(concurrent_writers_lose_nothing),
      cmocka_unit_test(clear_removes_files),
      cmocka_unit_test(decisions_newest_stands),
      cmocka_unit_test(item_costs_round_trip),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
