/* What users type: a policy's --params (every block and repartition policy, the first byte
 * chooses which), a --pus list, a --models mode. */
#include <stdlib.h>

#include "fuzz.h"
#include "hlb/error.h"
#include "hlb/exec.h"
#include "hlb/policy.h"
#include "hlb/repartition.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

static void block_policy_params(unsigned which, const char *text) {
  const hlb_policy_ops *ops = hlb_policy_at(which % hlb_policy_count());
  hlb_pu_desc pus[2] = {{"a", "cpu", 1, 0, 0, 0}, {"b", "gpu", 2, 0, 0, 0}};
  hlb_balancer_config c = {
      .n_items = 1000, .n_pus = 2, .pus = pus, .policy = ops->name, .params = text};
  hlb_balancer *b = NULL;
  if (hlb_balancer_create(&c, &b) == 0) hlb_balancer_destroy(b);
}

static void repart_policy_params(unsigned which, const char *text) {
  const hlb_repart_ops *ops = hlb_repart_at(which % hlb_repart_count());
  double values[64];
  if (ops->n_params <= 64) hlb_repart_params(ops, text, values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char *text = fuzz_text(data + 1, size - 1);
  switch (data[0] % 4) {
  case 0:
    block_policy_params(data[0] / 4u, text);
    break;
  case 1:
    repart_policy_params(data[0] / 4u, text);
    break;
  case 2: {
    hlb_exec_pu pus[HLB_EXEC_MAX_LOCAL_PUS];
    unsigned n = 0;
    hlb_exec_parse_pus(text, pus, HLB_EXEC_MAX_LOCAL_PUS, &n);
    break;
  }
  default: {
    int mode = 0;
    hlb_models_mode_parse(text, &mode);
  }
  }
  free(text);
  return 0;
}
