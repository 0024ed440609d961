#!/usr/bin/env python3
"""What a first pass's ramp costs even with perfect knowledge after it (issue 13).

A policy that does not know its PUs' curves learns them from its first blocks: hlb probes each
PU with probe_fraction * n_items / n_pus items, then grows by `grow` (3, 12, 48, 192 items on
`bench_sim superlinear`'s 64-PU clusters at 10^5 items). This prints, per cluster, the makespan
of the best split when every PU must first run the ramp's first S blocks (S = 1..4) and may cut
the rest of its share into any number of equal blocks, over the same bound without the ramp
(S = 0): no policy that runs those blocks can end below it. Blocks cost their compute curve plus
one uncontended transfer (docs/simulator.md, the bound's c_p); noise and shared links are left
out. The S = 0 figure is hlb_sim_lower_bound to within the bisections.

usage: python3 bench/sim/ramp_bound.py [--items N] [--probe F] [--grow G] CLUSTER.json...
       build/bench/sim/bench_sim superlinear-cluster 64 1 > c64_1.json   (the table's clusters)
Pure Python: about a minute and a half per cluster of 16-64 PUs.
"""
import argparse
import json
import math


def block_curve(cluster, node, pu):
    """c(y): one block of y items, its compute plus its transfer in and out (uncontended)."""
    t = pu["time"]
    item = cluster.get("item", {})
    nbytes = item.get("in_bytes", 0) + item.get("out_bytes", 0)
    per_byte = 0.0
    fixed = 0.0
    for link in (node.get("link", {}), pu.get("link", {})):
        bw = link.get("bandwidth_Bps", math.inf)
        per_byte += 0.0 if math.isinf(bw) else 1.0 / bw
        fixed += 2.0 * link.get("latency_s", 0.0)

    def c(y):
        if y <= 0:
            return 0.0
        return (t.get("const", 0.0) + t.get("linear", 0.0) * y + t.get("quadratic", 0.0) * y * y
                + t.get("cubic", 0.0) * y ** 3 + t.get("xlogx", 0.0) * y * math.log(max(y, 1.0))
                + nbytes * per_byte * y + fixed)
    return c


def best_split(c, x):
    """Least busy time for x items in k >= 1 equal blocks (k scanned densely, then by 5 %)."""
    if x <= 0:
        return 0.0
    best = c(x)
    k = 2
    while k <= x:
        best = min(best, k * c(x / k))
        k = k + 1 if k < 256 else int(k * 1.05) + 1
    return best


def busy(c, x, ramp):
    """Busy time for x items whose first blocks are `ramp` (cut short if x ends inside it)."""
    t, left = 0.0, x
    for s in ramp:
        if left <= 0:
            return t
        b = min(s, left)
        t += c(b)
        left -= b
    return t + best_split(c, left)


def most_items(c, T, ramp, n):
    lo, hi = 0.0, float(n)
    if busy(c, hi, ramp) <= T:
        return hi
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if busy(c, mid, ramp) <= T:
            lo = mid
        else:
            hi = mid
    return lo


def makespan(curves, ramp, n):
    lo, hi = 0.0, 1.0
    while sum(most_items(c, hi, ramp, n) for c in curves) < n:
        hi *= 2.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if sum(most_items(c, mid, ramp, n) for c in curves) >= n:
            hi = mid
        else:
            lo = mid
    return hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=float, default=1e5)
    ap.add_argument("--probe", type=float, default=0.002, help="hlb's probe_fraction")
    ap.add_argument("--grow", type=float, default=4.0, help="hlb's grow")
    ap.add_argument("clusters", nargs="+")
    a = ap.parse_args()
    n = a.items
    print("cluster                      bound_s  ramp of 1, 2, 3, 4 blocks: makespan / bound")
    for path in a.clusters:
        with open(path) as f:
            cl = json.load(f)
        curves = [block_curve(cl, node, pu) for node in cl["nodes"] for pu in node["pus"]]
        probe = max(1.0, round(a.probe * n / len(curves)))
        sizes = [probe * a.grow ** i for i in range(4)]
        base = makespan(curves, [], n)
        ratios = [makespan(curves, sizes[:s], n) / base for s in range(1, 5)]
        print("%-26s %9.4g  %s   (blocks of %s items)" % (
            path, base, "  ".join("%.3f" % r for r in ratios),
            ", ".join("%g" % s for s in sizes)))


if __name__ == "__main__":
    main()
