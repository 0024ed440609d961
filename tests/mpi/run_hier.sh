#!/usr/bin/env bash
# `hlb run APP --mpi --hierarchy node` (docs/mpi-executor.md, "Hierarchical mode"): 4 ranks
# as 2 nodes of 2 (HLB_MPI_NODE_SIZE=2) verify matmul and blackscholes like the flat mode, every
# item in some node's shares; a node whose only PU fails every block gives its shares back and
# the other node does them (the run still verifies); runs keep their models across runs in the
# model files as the flat mode does; bad values are refused on every rank.
set -euo pipefail
hlb=$1
MPIRUN=(timeout 120 mpirun --oversubscribe --allow-run-as-root)
export HLB_MODELS=off
fail=0
check() { # JSON on stdin; $1 ranks, $2 nodes, $3 items, $4 failed node or -1
  python3 -c "
import json, sys
d = json.load(sys.stdin)
np, nn, items, failed = $1, $2, $3, $4
assert d['verified'] is True, d
assert sorted(p['rank'] for p in d['pus']) == list(range(np)), d['pus']
assert sum(p['items'] for p in d['pus']) == items, [p['items'] for p in d['pus']]
nodes = d['nodes']
assert len(nodes) == nn, nodes
assert sorted(r for n in nodes for r in n['ranks']) == list(range(np)), nodes
assert sum(n['items'] for n in nodes) == items, nodes
for i, n in enumerate(nodes):
    assert n['leader'] == min(n['ranks']), n
    # a node's items are its ranks' PUs' items
    mine = sum(p['items'] for p in d['pus'] if p['rank'] in n['ranks'])
    assert mine == n['items'], (i, mine, n)
    assert n['failed'] == (i == failed), n
    if i != failed: assert n['shares'] >= 2 and n['items'] > 0, n
print('ok:', [(n['ranks'], n['items'], n['planned'], n['shares'], n['failed']) for n in nodes])
" || fail=1
}
for app in "matmul --size 512" "blackscholes --size 200000"; do
  echo "== $app: 4 ranks as 2 nodes"
  # shellcheck disable=SC2086
  HLB_MPI_NODE_SIZE=2 "${MPIRUN[@]}" -np 4 "$hlb" run $app --mpi --hierarchy node --pus cpu:1 \
    --json | check 4 2 "$(echo "$app" | awk '{print $3}')" -1
done
# 3 ranks as nodes {0, 1} and {2}; rank 2's PU fails every block from its first: node 1's PUs
# are all retired, its shares go back to rank 0 and node 0 does them.
echo "== a node whose PUs all fail"
out=$(HLB_MPI_NODE_SIZE=2 "${MPIRUN[@]}" -np 3 "$hlb" run blackscholes --size 100000 --mpi \
  --hierarchy node --pus cpu:1 --inject "cpu:1@2:1:0" --json)
echo "$out" | check 3 2 100000 1
# Models kept across runs (docs/models.md, "MPI runs"): the first run on a fresh model
# directory trains and every rank stores its PUs' blocks of all its node's shares in its host's
# file; the second starts each node's first share from them ("stored", prior_samples > 0 for
# every PU) and adds its own; --models off reads and writes nothing; a corrupt file is ignored.
echo "== models kept across runs"
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
stored() { # the model file's samples of each PU key, as JSON
  python3 -c "
import glob, json
files = glob.glob('$models/*/matmul-*.json')
assert len(files) == 1, files
d = json.load(open(files[0]))
print(json.dumps({p['pu']: p['samples'] for p in d['pus']}))
"
}
models_run() { # $1 expected models, $2 expected prior samples: some or none; more arguments
  # go to hlb run
  local want=$1 primed=$2
  shift 2
  HLB_MODEL_DIR="$models" HLB_MPI_NODE_SIZE=2 "${MPIRUN[@]}" -np 4 "$hlb" run matmul --size 512 \
    --mpi --hierarchy node --pus cpu:1 --json "$@" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['verified'] is True, d
assert d['models'] == '$want', d['models']
primed = [p['prior_samples'] for p in d['pus']]
assert len(primed) == 4 and ((min(primed) > 0) if '$primed' == 'some' else max(primed) == 0), primed
if '$want' == 'stored': assert d['model_file'].startswith('$models/'), d.get('model_file')
print('models $want ok: prior samples', primed, 'items', [p['items'] for p in d['pus']])
"
}
models_run trained none --models on || fail=1
first=$(stored) || { first='{}'; fail=1; }
models_run stored some --models on || fail=1
second=$(stored) || { second='{}'; fail=1; }
python3 -c "
import json
first, second = json.loads('$first'), json.loads('$second')
keep = 64  # HLB__MODEL_KEEP: the newest kept per PU
cpu = [k for k in first if k.startswith('cpu:1|')]
assert cpu and all(len(first[k]) > 0 for k in cpu), first
added = {}
for k in cpu:
    a, b = first[k], second[k]
    # Each run appends its samples and the file keeps the newest: b is a's newest followed by
    # the m samples the second run added (m >= 1).
    m = next((m for m in range(1, len(b) + 1)
              if len(b) == min(len(a) + m, keep) and b[:len(b) - m] == a[len(a) + m - len(b):]),
             0)
    assert m > 0 and (m < len(b) or b != a), (k, len(a), len(b))
    added[k] = m
print('stored samples per PU key: first run', {k: len(first[k]) for k in cpu},
      'second', {k: len(second[k]) for k in cpu}, 'added by the second run (at least)', added)
" || { echo "FAIL: the hierarchical runs did not store their samples"; fail=1; }
before=$(find "$models" -type f | sort | xargs md5sum)
models_run trained none --models off || fail=1
[ "$(find "$models" -type f | sort | xargs md5sum)" = "$before" ] ||
  { echo "FAIL: --models off wrote to the model directory"; fail=1; }
# A corrupt file is ignored with a warning naming it (one per rank that read it, as in the flat
# mode), the run trains, and its samples replace the file.
file=$(ls "$models"/*/matmul-*.json)
echo "not json" >"$file"
models_run trained none --models on 2>"$models/stderr" || fail=1
warned=$(grep -c "$file: ignored" "$models/stderr" || true)
[ "$warned" -ge 1 ] && [ "$warned" -le 4 ] ||
  { echo "FAIL: $warned warnings about the corrupt file: $(cat "$models/stderr")"; fail=1; }
python3 -c "import json; assert json.load(open('$file'))['pus']" ||
  { echo "FAIL: the corrupt file was not replaced by the run's samples"; fail=1; }
# Bad values: every rank exits non-zero, no hang.
set +e
err=$(HLB_MPI_NODE_SIZE=1.5 "${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi \
  --hierarchy node --pus cpu:1 2>&1 >/dev/null)
rc1=$?
"${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi --hierarchy tree --pus cpu:1 \
  > /dev/null 2>&1
rc2=$?
err3=$("${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi --hierarchy node \
  --links /nonexistent.json --pus cpu:1 2>&1 >/dev/null)
rc3=$?
set -e
[ $rc1 -ne 0 ] && echo "$err" | grep -q "HLB_MPI_NODE_SIZE" ||
  { echo "FAIL: HLB_MPI_NODE_SIZE=1.5 accepted or not named: $err"; fail=1; }
[ $rc2 -eq 2 ] || { echo "FAIL: --hierarchy tree gave status $rc2, not 2"; fail=1; }
[ $rc3 -ne 0 ] && echo "$err3" | grep -q "/nonexistent.json" ||
  { echo "FAIL: a missing --links file accepted or not named: $err3"; fail=1; }
echo "refused: $(echo "$err" | head -1)"
echo "refused: $(echo "$err3" | head -1)"
exit $fail
