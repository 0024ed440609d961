#!/usr/bin/env bash
# No fixed limit on ranks or PUs: 64 ranks with one PU each (more than the 32 that used to be
# the limit) verify, every rank's PU takes part, and every item is counted once.
# Usage: run_many_ranks.sh HLB [RANKS]
set -euo pipefail
hlb=$1
np=${2:-64}
out=$(mpirun --oversubscribe --allow-run-as-root -np "$np" "$hlb" run matmul --mpi --size 256 \
  --pus cpu:1 --json)
echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['verified'] is True, 'not verified'
ranks = sorted(p['rank'] for p in d['pus'])
assert ranks == list(range($np)), f'ranks {ranks}'
assert sum(p['items'] for p in d['pus']) == 256, 'items do not add up to 256'
print('np=$np ok: %d PUs, %d items' % (len(d['pus']), sum(p['items'] for p in d['pus'])))
"
