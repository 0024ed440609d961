#!/usr/bin/env bash
# The policy's own cost per block at scale, in one process: `hlb sim --timing` (the policies'
# next and done calls, wall time) on a synthetic cluster of NODES x PUS PUs (one in ten a gpu
# 10x faster, cpus at 1-2 ms per item, 2 ms per block, 5 % noise), PER items per PU.
# Prints the solver seconds, the blocks and the µs per block of each of REPS runs
# (docs/mpi-executor.md, "Rank 0's cost per grant"). Wall time: on a loaded machine take the
# smallest.
# Usage: policy_cost.sh HLB [NODES] [PUS] [POLICY] [REPS] [PER]
set -euo pipefail
hlb=${1:?usage: policy_cost.sh HLB [NODES] [PUS] [POLICY] [REPS] [PER]}
nodes=${2:-100}
pus=${3:-100}
policy=${4:-hlb}
reps=${5:-3}
per=${6:-1000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$nodes" "$pus" >"$dir/cluster.json" <<'PY'
import json, sys
nodes_n, per = int(sys.argv[1]), int(sys.argv[2])
nodes = []
for n in range(nodes_n):
    pus = []
    for p in range(per):
        gpu = p % 10 == 0
        lin = (0.001 + 0.001 * ((n * per + p) % 7) / 6) / (10 if gpu else 1)
        pus.append({"name": f"n{n}p{p}", "kind": "gpu" if gpu else "cpu",
                    "time": {"const": 0.002, "linear": lin}})
    nodes.append({"name": f"n{n}", "link": {"latency_s": 2e-5, "bandwidth_Bps": 1.25e9},
                  "pus": pus})
json.dump({"comment": f"synthetic: {nodes_n} nodes x {per} PUs", "noise_sigma": 0.05,
           "item": {"in_bytes": 64, "out_bytes": 64}, "nodes": nodes}, sys.stdout)
PY
items=$((nodes * pus * per))
echo "| PUs | items | policy | blocks | solver s | µs per block |"
echo "|---|---|---|---|---|---|"
for ((r = 0; r < reps; r++)); do
  "$hlb" sim "$dir/cluster.json" --items "$items" --policy "$policy" --timing --json --quiet |
    python3 -c "
import json, sys
d = json.load(sys.stdin)
p = d['policies'][0]
print('| %d | %d | %s | %d | %.3f | %.1f |' % ($nodes * $pus, $items, p['name'], p['blocks'], p['solver_s'],
      1e6 * p['solver_s'] / p['blocks']))"
done
