/* The SPMD interface (include/hlb/mpi.h): FLEX-MPI's monitor / load-balance / redistribute
 * loop (FLEX-MPI, section 3) over hlb's repartition policies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_internal.h"
#include "common/options_internal.h"
#include "mpi/spmd_internal.h"
#include "policy/lookup.h"
#include "mpi/liveness.h"
#include "mpi/monitor.h"
#include "mpi/redistribute.h"
#include "mpi/spmd_trace.h"
#include "policy/repart_common.h"

#define HLB_SPMD_MAX_ARRAYS 32
#define HLB_SPMD_MAX_CSR 8
#define HLB_SPMD_DEFAULT_INTERVAL 100 /* iterations per sampling interval (FLEX-MPI, section 4) */
#define HLB_SPMD_MAX_PARAMS 16

struct hlb_spmd {
  MPI_Comm comm; /* a duplicate: hlb's collectives never match the application's */
  int rank, size;
  int live; /* hlb__live_start succeeded: destroy stops it */
  size_t rows;
  size_t *counts, *displs, *new_counts, *new_displs;
  hlb_spmd_options opt;
  const hlb_repart_ops *policy;
  void *policy_state;
  double param[HLB_SPMD_MAX_PARAMS];
  double *row_weights; /* global, NULL for uniform */
  hlb__dense_array arrays[HLB_SPMD_MAX_ARRAYS];
  unsigned n_arrays;
  hlb_csr *csr[HLB_SPMD_MAX_CSR];
  unsigned n_csr;
  hlb__monitor monitor;
  hlb_rank_interval *gathered;
  /* Rank 0's decision as broadcast, and this rank's own, for agree_on_decision (n + 2 each). */
  unsigned long long *decision_msg, *decision_mine;
  hlb_spmd_stats stats;
  long *redistributed_at; /* iteration of each redistribution */
  int log;                /* HLB_SPMD_LOG set: log every interval on rank 0 */
  hlb__spmd_trace trace;  /* rank 0, HLB_SPMD_TRACE set: every interval, written at the end */
  unsigned redistributed_cap;
};

void hlb_spmd_options_default(hlb_spmd_options *o) {
  memset(o, 0, sizeof *o);
  o->policy = hlb__option_env("repart-policy");
  if (!o->policy) o->policy = HLB_REPART_DEFAULT;
  o->interval = HLB_SPMD_DEFAULT_INTERVAL;
  o->use_papi = 1;
  o->min_rows = 1;
  o->trace = hlb__option_env("spmd-trace");
}

/* Each rank's first row: the rows of the ranks before it. */
static void displs_from_counts(const size_t *counts, int size, size_t *displs) {
  size_t at = 0;
  for (int r = 0; r < size; r++) {
    displs[r] = at;
    at += counts[r];
  }
}

static void even_counts(size_t rows, int size, size_t *counts) {
  size_t base = rows / (size_t)size, extra = rows % (size_t)size;
  for (int r = 0; r < size; r++)
    counts[r] = base + ((size_t)r < extra);
}

/* Collective: the first split, the even one or opt.initial_counts. Every rank takes part
 * whatever its own state (`local_rc`: an error it met while setting up), and all reach the
 * same verdict, so no rank goes on into a collective that the others have left. */
static int start_split(hlb_spmd *s, int local_rc) {
  const size_t *want = s->opt.initial_counts;
  size_t n = (size_t)s->size;
  /* Per rank, as uint64 for MPI: its counts, and UINT64_MAX minus them (a MAX of those is the
   * MIN of the counts), so one reduction tells whether all ranks gave the same. */
  uint64_t *extremes = want && !local_rc ? calloc(2 * n, sizeof *extremes) : NULL;
  int mine[3] = {want != NULL, want == NULL, local_rc || (want && !extremes)}, all[3];
  MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, s->comm);
  int rc = local_rc;
  if (!rc && want && !extremes)
    rc = hlb__error(HLB_ENOMEM, "spmd: out of memory for %d initial counts", s->size);
  if (!rc && all[2]) rc = hlb__error(HLB_EINVAL, "spmd: another rank failed to set up");
  if (!rc && all[0] && all[1])
    rc = hlb__error(HLB_EINVAL, "spmd: initial_counts given on some ranks and NULL on others");
  if (rc || !want) {
    free(extremes);
    if (!rc) {
      even_counts(s->rows, s->size, s->counts);
      displs_from_counts(s->counts, s->size, s->displs);
    }
    return rc;
  }
  for (size_t r = 0; r < n; r++) {
    extremes[r] = (uint64_t)want[r];
    extremes[n + r] = UINT64_MAX - (uint64_t)want[r];
  }
  MPI_Allreduce(MPI_IN_PLACE, extremes, 2 * (int)n, MPI_UINT64_T, MPI_MAX, s->comm);
  size_t min_rows = s->opt.min_rows ? s->opt.min_rows : 1, sum = 0;
  for (size_t r = 0; r < n && !rc; r++) {
    uint64_t most = extremes[r], least = UINT64_MAX - extremes[n + r];
    if (most != least)
      rc = hlb__error(HLB_EINVAL, "spmd: initial_counts[%zu] differs between ranks (%llu..%llu)", r,
                      (unsigned long long)least, (unsigned long long)most);
    else if (want[r] < min_rows)
      rc = hlb__error(HLB_EINVAL, "spmd: initial_counts[%zu] = %zu is below min_rows %zu", r,
                      want[r], min_rows);
    sum += want[r];
  }
  if (!rc && sum != s->rows)
    rc = hlb__error(HLB_EINVAL, "spmd: initial_counts sum to %zu rows, not %zu", sum, s->rows);
  if (!rc) {
    memcpy(s->counts, want, n * sizeof *want);
    displs_from_counts(s->counts, s->size, s->displs);
  }
  free(extremes);
  return rc;
}

static int resolve_policy(hlb_spmd *s) {
  unsigned i = 0;
  int rc = hlb__registry_lookup(&hlb__repart_policies, s->opt.policy, &i);
  if (rc) return hlb__error_prefix(rc, "spmd: ");
  s->policy = hlb_repart_at(i);
  if (s->policy->n_params > HLB_SPMD_MAX_PARAMS)
    return hlb__error(HLB_EINVAL, "spmd: policy '%s' has too many parameters", s->policy->name);
  return hlb_repart_params(s->policy, s->opt.params, s->param);
}

int hlb_spmd_create(MPI_Comm comm, size_t rows, const hlb_spmd_options *opt, hlb_spmd **out) {
  *out = NULL;
  hlb_spmd *s = calloc(1, sizeof *s);
  if (!s) return hlb__error(HLB_ENOMEM, "spmd: out of memory");
  s->monitor.papi_eventset = -1; /* no PAPI set yet: an error below must not stop one */
  if (opt)
    s->opt = *opt;
  else
    hlb_spmd_options_default(&s->opt);
  if (!s->opt.policy) s->opt.policy = HLB_REPART_DEFAULT;
  if (!s->opt.interval) s->opt.interval = HLB_SPMD_DEFAULT_INTERVAL;
  MPI_Comm_dup(comm, &s->comm);
  MPI_Comm_rank(s->comm, &s->rank);
  MPI_Comm_size(s->comm, &s->size);
  int rc = 0;
  if (rows < (size_t)s->size * (s->opt.min_rows ? s->opt.min_rows : 1))
    rc = hlb__error(HLB_EINVAL, "spmd: %zu rows cannot give each of %d ranks %zu rows", rows,
                    s->size, s->opt.min_rows ? s->opt.min_rows : (size_t)1);
  size_t n = (size_t)s->size;
  s->rows = rows;
  s->counts = calloc(n, sizeof(size_t));
  s->displs = calloc(n, sizeof(size_t));
  s->new_counts = calloc(n, sizeof(size_t));
  s->new_displs = calloc(n, sizeof(size_t));
  s->gathered = calloc(n, sizeof *s->gathered);
  s->decision_msg = calloc(n + 2, sizeof *s->decision_msg);
  s->decision_mine = calloc(n + 2, sizeof *s->decision_mine);
  if (!rc && (!s->counts || !s->displs || !s->new_counts || !s->new_displs || !s->gathered ||
              !s->decision_msg || !s->decision_mine))
    rc = hlb__error(HLB_ENOMEM, "spmd: out of memory for %d ranks", s->size);
  if (!rc) rc = resolve_policy(s);
  if (!rc && s->rank == 0) rc = hlb__spmd_trace_open(&s->trace, s->opt.trace, s->size, MPI_Wtime());
  rc = start_split(s, rc);
  s->opt.initial_counts = NULL; /* the caller's array; read only here */
  s->opt.trace = NULL;          /* the caller's string; copied by the trace */
  if (rc) {
    hlb__spmd_trace_free(&s->trace); /* nothing ran: no trace to write */
    hlb_spmd_destroy(s);
    return rc;
  }
  /* From here a stopped or hung rank ends the job within HLB_MPI_TIMEOUT (liveness.h). */
  rc = hlb__live_start(s->comm);
  if (rc) {
    hlb_spmd_destroy(s);
    return rc;
  }
  s->live = 1;
  s->log = hlb__option_env_bool("spmd-log");
  hlb__monitor_init(&s->monitor, s->opt.use_papi);
  s->stats.papi = hlb__monitor_has_papi(&s->monitor);
  *out = s;
  return 0;
}

/* The trace is written here, at the end, on rank 0; destroy returns nothing, so a failure is
 * said on stderr. */
static void write_trace(hlb_spmd *s) {
  if (!s->trace.path || !s->policy) return;
  if (hlb__spmd_trace_write(&s->trace, s->policy->name, s->opt.params, s->rows, s->opt.interval,
                            s->stats.iterations, s->stats.papi))
    fprintf(stderr, "hlb %s\n", hlb_last_error());
}

void hlb_spmd_destroy(hlb_spmd *s) {
  if (!s) return;
  write_trace(s);
  hlb__spmd_trace_free(&s->trace);
  if (s->policy && s->policy_state) s->policy->fini(s->policy_state);
  hlb__monitor_fini(&s->monitor);
  if (s->live) hlb__live_stop();
  if (s->comm != MPI_COMM_NULL && s->comm) MPI_Comm_free(&s->comm);
  free(s->counts);
  free(s->displs);
  free(s->new_counts);
  free(s->decision_msg);
  free(s->decision_mine);
  free(s->new_displs);
  free(s->gathered);
  free(s->row_weights);
  free(s->redistributed_at);
  free(s);
}

void hlb_spmd_range(const hlb_spmd *s, size_t *first, size_t *count) {
  *first = s->displs[s->rank];
  *count = s->counts[s->rank];
}

void hlb_spmd_layout(const hlb_spmd *s, const size_t **counts, const size_t **displs) {
  if (counts) *counts = s->counts;
  if (displs) *displs = s->displs;
}

int hlb_spmd_register_dense(hlb_spmd *s, void **data, size_t row_bytes) {
  if (!data || row_bytes == 0)
    return hlb__error(HLB_EINVAL, "spmd: register_dense needs a pointer and row_bytes > 0");
  if (s->n_arrays == HLB_SPMD_MAX_ARRAYS)
    return hlb__error(HLB_ERANGE, "spmd: at most %d dense arrays", HLB_SPMD_MAX_ARRAYS);
  s->arrays[s->n_arrays++] = (hlb__dense_array){data, row_bytes};
  return 0;
}

int hlb_spmd_register_csr(hlb_spmd *s, hlb_csr *m) {
  if (!m || !m->row_ptr)
    return hlb__error(HLB_EINVAL, "spmd: register_csr needs a matrix with row_ptr");
  if (m->row_ptr[0] != 0)
    return hlb__error(HLB_EINVAL, "spmd: register_csr: row_ptr[0] must be 0, got %lld",
                      (long long)m->row_ptr[0]);
  if (s->n_csr == HLB_SPMD_MAX_CSR)
    return hlb__error(HLB_ERANGE, "spmd: at most %d CSR matrices", HLB_SPMD_MAX_CSR);
  s->csr[s->n_csr++] = m;
  return 0;
}

int hlb_spmd_set_row_weights(hlb_spmd *s, const double *local) {
  size_t n = (size_t)s->size;
  int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
  double *global = malloc(s->rows * sizeof(double));
  int rc = 0;
  if (!counts || !displs || !global)
    rc = hlb__error(HLB_ENOMEM, "spmd: out of memory for %zu row weights", s->rows);
  for (size_t r = 0; !rc && r < n; r++) {
    counts[r] = (int)s->counts[r];
    displs[r] = (int)s->displs[r];
  }
  for (size_t i = 0; !rc && i < s->counts[s->rank]; i++)
    if (!(local[i] >= 0.0) || local[i] > 1e300)
      rc = hlb__error(HLB_EINVAL, "spmd: row weight of row %zu must be finite and >= 0, got %g",
                      s->displs[s->rank] + i, local[i]);
  /* Every rank must take part in the collective even after a local error. */
  int any_error = rc != 0, global_error = 0;
  MPI_Allreduce(&any_error, &global_error, 1, MPI_INT, MPI_LOR, s->comm);
  if (!global_error)
    MPI_Allgatherv(local, counts[s->rank], MPI_DOUBLE, global, counts, displs, MPI_DOUBLE, s->comm);
  free(counts);
  free(displs);
  if (global_error) {
    free(global);
    return rc ? rc : hlb__error(HLB_EINVAL, "spmd: another rank gave invalid row weights");
  }
  free(s->row_weights);
  s->row_weights = global;
  /* The policy was set up with the old weights: set it up again with the new ones at the next
   * decision (every rank does the same, so the decisions stay alike). */
  if (s->policy_state) {
    s->policy->fini(s->policy_state);
    s->policy_state = NULL;
  }
  return 0;
}

int hlb_spmd_begin(hlb_spmd *s) {
  hlb__monitor_begin(&s->monitor);
  return 0;
}

static double local_row_work(const hlb_spmd *s) {
  size_t first = s->displs[s->rank], count = s->counts[s->rank];
  if (!s->row_weights) return (double)count;
  double w = 0.0;
  for (size_t i = 0; i < count; i++)
    w += s->row_weights[first + i];
  return w;
}

/* Keep every rank at min_rows or more, taking from the largest counts. */
static void enforce_min_rows(hlb_spmd *s) {
  size_t min_rows = s->opt.min_rows ? s->opt.min_rows : 1;
  for (int r = 0; r < s->size; r++) {
    while (s->new_counts[r] < min_rows) {
      int big = 0;
      for (int q = 1; q < s->size; q++)
        big = s->new_counts[q] > s->new_counts[big] ? q : big;
      s->new_counts[big]--;
      s->new_counts[r]++;
    }
  }
}

static int init_policy_once(hlb_spmd *s) {
  if (s->policy_state) return 0;
  hlb_repart_ctx ctx = {(unsigned)s->size, s->rows, s->row_weights, s->param};
  return s->policy->init(&ctx, &s->policy_state);
}

static int record_redistribution(hlb_spmd *s) {
  if (s->stats.redistributions == s->redistributed_cap) {
    unsigned cap = s->redistributed_cap ? 2 * s->redistributed_cap : 16;
    long *grown = realloc(s->redistributed_at, cap * sizeof *grown);
    if (!grown) return hlb__error(HLB_ENOMEM, "spmd: out of memory for the redistribution log");
    s->redistributed_at = grown;
    s->redistributed_cap = cap;
  }
  s->redistributed_at[s->stats.redistributions++] = (long)s->stats.iterations - 1;
  return 0;
}

static int redistribute_all(hlb_spmd *s) {
  displs_from_counts(s->new_counts, s->size, s->new_displs);
  hlb__layout l = {s->counts, s->displs, s->new_counts, s->new_displs, s->rank, s->size};
  double t0 = MPI_Wtime();
  /* All or nothing: on failure every rank keeps its rows and the old split stands. */
  int rc = hlb__redistribute(s->comm, &l, s->arrays, s->n_arrays, s->csr, s->n_csr);
  if (rc) return rc;
  double took = MPI_Wtime() - t0, slowest = 0.0;
  MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, s->comm);
  for (int r = 0; r < s->size; r++) {
    size_t first, n;
    hlb__overlap(&l, r, r, &first, &n);
    s->stats.rows_moved += s->counts[r] - n;
  }
  memcpy(s->counts, s->new_counts, (size_t)s->size * sizeof(size_t));
  memcpy(s->displs, s->new_displs, (size_t)s->size * sizeof(size_t));
  s->stats.redistribute_s += slowest;
  if (s->policy->rebalanced) s->policy->rebalanced(s->policy_state, slowest);
  return record_redistribution(s);
}

/* HLB_SPMD_LOG=1: rank 0 prints what every rank measured and what the policy decided, one line
 * per sampling interval on stderr, so a user can see why a run was (not) rebalanced. */
static void log_interval(const hlb_spmd *s, const hlb_repart_decision *d) {
  if (s->rank != 0) return;
  fprintf(stderr, "hlb spmd: interval %u iter %u", s->stats.intervals, s->stats.iterations);
  for (int r = 0; r < s->size; r++) {
    const hlb_rank_interval *iv = &s->gathered[r];
    fprintf(stderr, " | r%d rows %zu real %.4f cpu %.4f mpi %.4f work %.4g", r, iv->rows,
            iv->real_s, iv->cpu_s, iv->comm_s, iv->work);
  }
  fprintf(stderr, " | imbalance %.3f gain %.4f s%s\n", d->imbalance, d->predicted_gain_s,
          d->rebalance ? " -> rebalance" : "");
}

int hlb__spmd_skew_rank = -1;

/* Every rank runs the policy on the same gathered measurements (so each policy state follows
 * the run), but the ranks act on rank 0's decision only: on a cluster of mixed CPUs a
 * LAPACK fit can differ in its last bit and ranks could disagree on the new counts, which
 * would corrupt the redistribution. A rank whose own decision differed counts it
 * (stats.decision_mismatches) and says so once on stderr. The policy's error code travels
 * too, so no rank goes on into the redistribution while another stopped. */
static int agree_on_decision(hlb_spmd *s, int rc, hlb_repart_decision *d) {
  size_t n = (size_t)s->size;
  if (s->rank == hlb__spmd_skew_rank && rc == 0 && d->rebalance && n > 1 && s->new_counts[0] > 0) {
    s->new_counts[0]--;
    s->new_counts[n - 1]++;
  }
  /* [rc, rebalance, counts...] as unsigned long long, the same layout on every rank. */
  unsigned long long *msg = s->decision_msg;
  msg[0] = (unsigned long long)(long long)rc;
  msg[1] = rc == 0 && d->rebalance;
  for (size_t r = 0; r < n; r++)
    msg[2 + r] = s->new_counts[r];
  int mine_rebalance = (int)msg[1];
  memcpy(s->decision_mine, msg, (n + 2) * sizeof *msg);
  MPI_Bcast(msg, (int)(n + 2), MPI_UNSIGNED_LONG_LONG, 0, s->comm);
  if (memcmp(s->decision_mine, msg, (n + 2) * sizeof *msg)) {
    if (s->stats.decision_mismatches++ == 0)
      fprintf(stderr,
              "hlb spmd: rank %d decided differently from rank 0 (%s); rank 0's "
              "decision is used on every rank\n",
              s->rank, mine_rebalance != (int)msg[1] ? "rebalance or not" : "new counts");
  }
  int rc0 = (int)(long long)msg[0];
  if (rc0) return rc ? rc : hlb__error(rc0, "spmd: rank 0's repartition policy failed");
  d->rebalance = (int)msg[1];
  for (size_t r = 0; r < n; r++)
    s->new_counts[r] = (size_t)msg[2 + r];
  return 0;
}

/* A rejected interval (a rank measured NaN, a negative or a zero time: include/hlb/
 * repartition.h) is not a reason to stop the computation: the split stands, the policy counted
 * it (stats.policy.rejected) and rank 0 says so the first time. Every rank rejects the same
 * gathered interval, so all go on alike. */
static int tolerate_rejected(hlb_spmd *s, int rc) {
  if (rc != HLB_ESAMPLE) return rc;
  size_t before = 0;
  for (unsigned k = 0; k < HLB_REPART_REJECT_COUNT; k++)
    before += s->stats.policy.rejected[k];
  if (s->rank == 0 && before == 0)
    fprintf(stderr, "hlb spmd: interval %u: %s (further ones are only counted)\n",
            s->stats.intervals, hlb_last_error());
  s->policy->stats(s->policy_state, &s->stats.policy);
  return 0;
}

static int end_of_interval(hlb_spmd *s, int *changed) {
  hlb_rank_interval mine = hlb__monitor_take(&s->monitor, s->counts[s->rank]);
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, s->gathered, (int)sizeof mine, MPI_BYTE,
                s->comm);
  s->stats.intervals++;
  /* FLEX-MPI's TH1 test, whatever the policy: did some rank share its core? */
  for (int r = 0; r < s->size; r++) {
    if (!hlb__repart_dedicated(&s->gathered[r], HLB_REPART_TH1)) {
      s->stats.shared_intervals++;
      break;
    }
  }
  int rc = init_policy_once(s);
  if (rc) return rc;
  hlb_repart_decision d = {0};
  rc = s->policy->decide(s->policy_state, s->gathered, s->counts, s->new_counts, &d);
  rc = tolerate_rejected(s, rc);
  rc = agree_on_decision(s, rc, &d);
  if (rc) return rc;
  s->policy->stats(s->policy_state, &s->stats.policy);
  s->stats.last = d;
  if (s->log) log_interval(s, &d);
  if (s->rank == 0) {
    rc = hlb__spmd_trace_interval_add(&s->trace, s->stats.iterations, MPI_Wtime(), s->gathered, &d);
    if (rc) { /* tracing must not stop the computation: stop the trace instead */
      fprintf(stderr, "hlb %s; the trace stops here\n", hlb_last_error());
      rc = 0;
    }
  }
  if (!d.rebalance) return 0;
  enforce_min_rows(s);
  if (!memcmp(s->counts, s->new_counts, (size_t)s->size * sizeof(size_t))) return 0;
  size_t moved_before = s->stats.rows_moved;
  double cost_before = s->stats.redistribute_s;
  rc = redistribute_all(s);
  if (!rc && s->rank == 0)
    hlb__spmd_trace_moved(&s->trace, s->stats.rows_moved - moved_before,
                          s->stats.redistribute_s - cost_before);
  if (!rc && changed) *changed = 1;
  return rc;
}

int hlb_spmd_end(hlb_spmd *s, double work, int *changed) {
  if (changed) *changed = 0;
  if (!hlb__mpi_window_open)
    return hlb__error(HLB_ESTATE, "spmd: hlb_spmd_end without hlb_spmd_begin");
  hlb__monitor_end(&s->monitor, work, local_row_work(s));
  s->stats.iterations++;
  if (s->stats.iterations % s->opt.interval) return 0;
  return end_of_interval(s, changed);
}

void hlb_spmd_stats_get(const hlb_spmd *s, hlb_spmd_stats *out) {
  *out = s->stats;
}

long hlb_spmd_redistribution_iteration(const hlb_spmd *s, unsigned k) {
  return k < s->stats.redistributions ? s->redistributed_at[k] : -1;
}
