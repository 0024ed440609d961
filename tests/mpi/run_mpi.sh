#!/usr/bin/env bash
# `mpirun -np N hlb run APP --mpi`: the same output and result check as `hlb run`, every PU
# naming its rank, every item processed on some rank, and clear usage errors.
set -euo pipefail
hlb=$1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
fail=0
for np in 2 3; do
  out=$("${MPIRUN[@]}" -np $np "$hlb" run matmul --mpi --size 384 --pus cpu:1 --json \
    --throttle "cpu:1@1=2")
  echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['verified'] is True, d
ranks = sorted(p['rank'] for p in d['pus'])
assert ranks == list(range($np)), ranks
assert sum(p['items'] for p in d['pus']) == 384, d['pus']
assert any(p['throttle_emulated'] for p in d['pus'] if p['rank'] == 1)
print('np=$np ok:', [(p['name'], p['rank'], p['items']) for p in d['pus']])
" || fail=1
done
# A failing PU on rank 1 is retired after repeated failures; the result is still right.
# (greedy hands every idle PU a chunk, and rank 0's PU is throttled x50 so that the run lasts
# long enough for rank 1 to fail three times before the pool is empty.)
out=$("${MPIRUN[@]}" -np 2 "$hlb" run blackscholes --mpi --size 20000 --pus cpu:1 --policy greedy \
  --throttle "cpu:1@0=50" --inject "cpu:1@1:1:0")
echo "$out" | grep -q "retired" || { echo "FAIL: injected PU not retired"; fail=1; }
echo "$out" | grep -q "verified against the reference" || { echo "FAIL: not verified"; fail=1; }
# Models kept across MPI runs (docs/models.md, "MPI runs"): the first run trains and each rank
# stores its PUs' samples in its host's file; the next starts every PU from them.
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
for want in trained stored; do
  out=$(HLB_MODELS=on HLB_MODEL_DIR="$models" "${MPIRUN[@]}" -np 2 "$hlb" run matmul --mpi \
    --size 256 --pus cpu:1 --json)
  echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['verified'] is True, d
assert d['models'] == '$want', d['models']
assert d['model_file'].startswith('$models/'), d.get('model_file')
primed = [p['prior_samples'] for p in d['pus']]
assert (min(primed) > 0) == ('$want' == 'stored'), primed
print('models $want ok:', primed)
" || fail=1
done
"$hlb" models show --model-dir "$models" --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
pus = [p for f in d['files'] for p in f['pus']]
assert any(p['pu'].startswith('cpu:1|') and p['samples'] > 0 for p in pus), d
" || { echo "FAIL: the MPI runs stored no samples"; fail=1; }
# --models read reads and writes nothing.
before=$(cat "$models"/*/matmul-*.json | md5sum)
HLB_MODEL_DIR="$models" "${MPIRUN[@]}" -np 2 "$hlb" run matmul --mpi --size 256 --pus cpu:1 \
  --models read >/dev/null
[ "$(cat "$models"/*/matmul-*.json | md5sum)" = "$before" ] || { echo "FAIL: --models read wrote"; fail=1; }
# Usage errors exit 2 on every rank, never hang.
set +e
"${MPIRUN[@]}" -np 2 "$hlb" run matmul --mpi --pus cpu:1 --throttle cpu:1=3 >/dev/null 2>&1
rc=$?
"${MPIRUN[@]}" -np 2 "$hlb" run kmeans --mpi --pus cpu:1 >/dev/null 2>&1
rc2=$?
set -e
[ $rc -ne 0 ] || { echo "FAIL: a throttle without @RANK was accepted"; fail=1; }
[ $rc2 -ne 0 ] || { echo "FAIL: kmeans --mpi was accepted"; fail=1; }
exit $fail
