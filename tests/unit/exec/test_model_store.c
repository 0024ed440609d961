/* The model files (src/exec/model_store.c): samples round-trip per PU key, only the newest
 * HLB__MODEL_KEEP stay, a replacing write drops a PU's old samples, untrusted files read as
 * empty, and writers running at once (separate processes) lose nothing. */
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
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
