#!/usr/bin/env python3
"""Writes presets/*.json from the papers' tables (numbers and assumptions in each comment).

usage: python3 bench/sim/make_presets.py presets
"""
import json
import os
import sys

OUT = sys.argv[1]

FREE_NODE = {"latency_s": 0, "bandwidth_Bps": 1e15,
             "comment": "the manager's own node: no network (1e15 B/s stands for infinite)"}


def write(name, obj):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def r(x, d=6):
    return float(f"{x:.{d}g}")


# ---------------------------------------------------------------- PLB-HeC / PLB-HAC matmul
MM_N = 65536
MM_FLOP = 2.0 * MM_N * MM_N  # one row of B times A: 2 n^2 flops (single precision)
EFF = {"gpu": 0.70, "cpu": 0.60, "mic": 0.50}
CONST = {"gpu": 5e-3, "cpu": 1e-3, "mic": 10e-3}
TEN_GBE = {"latency_s": 20e-6, "bandwidth_Bps": 1.25e9,
           "comment": "ASSUMED 10 Gigabit Ethernet: the paper does not name the network"}

MM_COMMON = (
    "Matrix multiplication C = A B with n = 65536 (the largest size of the paper's Fig. 4), "
    "single precision. Item = one row of B (the paper's block granularity, 'one line'): "
    "2 n^2 = 8.59e9 flop, in 4 n = 262144 bytes (row of B), out 262144 bytes (row of C); A is "
    "broadcast once and not modelled. time.linear = 2 n^2 / (efficiency * peak SP GFLOPS); "
    "peaks are vendor figures (cores x clock x flop/cycle), NOT in the paper; ASSUMED "
    "efficiencies: GPU 70 %, CPU 60 %, Xeon Phi 50 % of peak (CUBLAS/MKL SGEMM). time.const = "
    "ASSUMED per-block cost: GPU 5 ms (launch, synchronise), CPU 1 ms (thread fork/join), "
    "Xeon Phi 10 ms (offload). One CPU PU per machine (StarPU runs the CPU codelet on all "
    "cores, one thread per virtual core, section IV/5). noise_sigma 0.02 ASSUMED (the paper: "
    "'standard deviations ... were small'). The first machine holds the manager.")


def mm_pu(name, kind, model, peak_gflops, link=None, extra=""):
    k = "mic" if kind == "mic" else kind
    pu = {
        "name": name,
        "kind": kind,
        "comment": f"{model}: peak {peak_gflops:g} GFLOPS SP (vendor){extra}",
        "time": {"const": CONST[k], "linear": r(MM_FLOP / (EFF[k] * peak_gflops * 1e9))},
    }
    if link:
        pu["link"] = link
    return pu


def pcie(gen, share=1, note=""):
    bw = {2: 6e9, 3: 11e9}[gen] / share
    c = f"PCIe {gen}.0 x16, ASSUMED {bw/1e9:g} GB/s effective, 10 us"
    if note:
        c += "; " + note
    return {"latency_s": 10e-6, "bandwidth_Bps": bw, "comment": c}


def plbhec_machines():
    # PLB-HeC Table I (machine configurations); peaks from vendor data.
    return [
        ("A", "Table I machine A: Xeon E5-2690v2 10 cores @ 3.0 GHz + Tesla K20c", [
            mm_pu("A.cpu", "cpu", "Xeon E5-2690v2, 10 cores x 3.0 GHz x 16 SP flop/cycle (AVX)", 480),
            mm_pu("A.gpu", "gpu", "Tesla K20c, 2496 cores x 0.706 GHz x 2", 3524, pcie(2)),
        ]),
        ("B", "Table I machine B: 'Intel i7 a20' (read as i7 920) 4 cores @ 2.67 GHz + GTX 295 "
              "(two GPUs, 240 cores each)", [
            mm_pu("B.cpu", "cpu", "i7 920, 4 cores x 2.67 GHz x 8 SP flop/cycle (SSE)", 85.4),
            mm_pu("B.gpu0", "gpu", "GTX 295 GPU 0, 240 cores x 1.242 GHz x 3", 894,
                  pcie(2, 2, "two GPUs of one board share it")),
            mm_pu("B.gpu1", "gpu", "GTX 295 GPU 1, 240 cores x 1.242 GHz x 3", 894,
                  pcie(2, 2, "two GPUs of one board share it")),
        ]),
        ("C", "Table I machine C: i7 4930K 6 cores @ 3.4 GHz + 'GTX 680, 2 x 1536 cores' (two "
              "GPUs, section IV)", [
            mm_pu("C.cpu", "cpu", "i7 4930K, 6 cores x 3.4 GHz x 16 SP flop/cycle (AVX)", 326.4),
            mm_pu("C.gpu0", "gpu", "GTX 680 GPU 0, 1536 cores x 1.006 GHz x 2", 3090,
                  pcie(3, 2, "two GPUs of one board share it")),
            mm_pu("C.gpu1", "gpu", "GTX 680 GPU 1, 1536 cores x 1.006 GHz x 2", 3090,
                  pcie(3, 2, "two GPUs of one board share it")),
        ]),
        ("D", "Table I machine D: 'i7 3939K' (read as i7 3930K) 6 cores @ 3.2 GHz + GTX Titan", [
            mm_pu("D.cpu", "cpu", "i7 3930K, 6 cores x 3.2 GHz x 16 SP flop/cycle (AVX)", 307.2),
            mm_pu("D.gpu", "gpu", "GTX Titan, 2688 cores x 0.837 GHz x 2", 4500, pcie(3)),
        ]),
    ]


def plbhac_machines():
    # PLB-HAC Table 1 (machine configurations); peaks from vendor data.
    cpu5930 = ("i7-5930K, 6 cores x 3.5 GHz x 32 SP flop/cycle (AVX2 FMA)", 672)
    cpu2620 = ("Xeon 'E-2620' (read as E5-2620 v2), 6 cores x 2.1 GHz x 16 SP flop/cycle", 201.6)
    phi = ("Xeon Phi 3120, 57 cores x 1.1 GHz x 32 SP flop/cycle", 2006)
    return [
        ("A", "Table 1 machine A: i7-5930K + Quadro K5200", [
            mm_pu("A.cpu", "cpu", *cpu5930),
            mm_pu("A.gpu", "gpu", "Quadro K5200, 2304 cores x 0.667 GHz x 2", 3073, pcie(3)),
        ]),
        ("B", "Table 1 machine B: i7-5930K + GTX 970 + Xeon Phi 3120", [
            mm_pu("B.cpu", "cpu", *cpu5930),
            mm_pu("B.gpu", "gpu", "GTX 970, 1664 cores x 1.05 GHz x 2", 3494, pcie(3)),
            mm_pu("B.phi", "mic", *phi, pcie(2)),
        ]),
        ("C", "Table 1 machine C: Xeon E-2620 + Quadro K620", [
            mm_pu("C.cpu", "cpu", *cpu2620),
            mm_pu("C.gpu", "gpu", "Quadro K620, 384 cores x 1.124 GHz x 2", 863, pcie(2)),
        ]),
        ("D", "Table 1 machine D: i7-4930k + GTX Titan", [
            mm_pu("D.cpu", "cpu", "i7-4930K, 6 cores x 3.4 GHz x 16 SP flop/cycle (AVX)", 326.4),
            mm_pu("D.gpu", "gpu", "GTX Titan, 2688 cores x 0.837 GHz x 2", 4500, pcie(3)),
        ]),
        ("E", "Table 1 machine E: Xeon E-2620 + Quadro K620 + Xeon Phi 3120", [
            mm_pu("E.cpu", "cpu", *cpu2620),
            mm_pu("E.gpu", "gpu", "Quadro K620, 384 cores x 1.124 GHz x 2", 863, pcie(2)),
            mm_pu("E.phi", "mic", *phi, pcie(2)),
        ]),
    ]


def mm_cluster(title, machines, n, events=None, drop_kinds=()):
    nodes = []
    for i, (mname, mcomment, pus) in enumerate(machines[:n]):
        pus = [p for p in pus if p["kind"] not in drop_kinds]
        nodes.append({"name": mname, "comment": mcomment,
                      "link": FREE_NODE if i == 0 else TEN_GBE, "pus": pus})
    c = {"comment": title + " " + MM_COMMON,
         "item": {"in_bytes": 4 * MM_N, "out_bytes": 4 * MM_N},
         "noise_sigma": 0.02, "nodes": nodes}
    if events:
        c["events"] = events
    return c


def plbhec():
    for n in range(1, 5):
        names = "ABCD"[:n]
        write(f"plbhec-{n}machine{'s' if n > 1 else ''}-matmul.json", mm_cluster(
            f"PLB-HeC (section IV, Table I): machines {', '.join(names)}.",
            plbhec_machines(), n))


def plbhac():
    for n in range(1, 6):
        names = "ABCDE"[:n]
        write(f"plbhac-{n}machine{'s' if n > 1 else ''}-matmul.json", mm_cluster(
            f"PLB-HAC (section 5, Table 1): machines {', '.join(names)}.",
            plbhac_machines(), n))
    ev = [{"at_s": 142, "pu": "A.gpu", "slowdown": 2.0,
           "comment": "PLB-HAC section 5.3: a CUDA GRN application starts on GPU A at t = 142 s; "
                      "ASSUMED factor 2 (two CUDA processes time-share the GPU)"}]
    write("plbhac-2machines-slowdown.json", mm_cluster(
        "PLB-HAC adaptation experiment (PLB-HAC, section 5.3, Fig. 6a): machines A and B "
        "with one CPU and one GPU each (B's Xeon Phi left out, as in the paper). The run must "
        "outlast 142 s: with these curves 65536 rows take about 105 s, so use --items 131072 "
        "(B twice as wide; the per-row curves do not change).",
        plbhac_machines(), 2, events=ev, drop_kinds=("mic",)))


# ---------------------------------------------------------------- Boiński & Czarnul
ITER = 1300  # section 4.4: each problem approximated with 1300 Jacobi iterations
A1 = {  # Table A.1: ms per Jacobi iteration for problem sizes 512, 1024, 2048
    "apl09(0,1)": (0.1151, 0.4140, 1.5546), "apl09(1,0)": (5.0781, 20.0501, 67.6384),
    "apl10(0,1)": (0.1162, 0.4140, 1.5539), "apl10(1,0)": (4.3065, 20.0363, 78.9142),
    "apl11(0,0)": (0.0462, 0.0964, 0.2619), "apl11(0,1)": (0.0451, 0.0933, 0.2608),
    "apl11(1,0)": (1.6276, 6.3978, 25.1866), "apl12(0,0)": (0.9917, 3.6538, 17.6083),
    "apl12(0,1)": (0.3488, 0.5697, 0.884), "apl12(0,2)": (0.3534, 0.5676, 0.8631),
}
T8 = {  # Table 8 (size 1024, CPU used as PU): initialisation, deinitialisation [s]
    "apl09(0,1)": (0.0005222, 0.0747633), "apl09(1,0)": (0.0152677, 0.2427339),
    "apl10(0,1)": (0.0005559, 0.0905048), "apl10(1,0)": (0.0153396, 0.2535768),
    "apl11(0,0)": (0.0001476, 0.3242558), "apl11(0,1)": (0.0001517, 0.3373213),
    "apl11(1,0)": (0.0060809, 0.2780281), "apl12(0,0)": (0.0036818, 0.8856008),
    "apl12(0,1)": (0.0006830, 1.5552522), "apl12(0,2)": (0.0006246, 1.6193448),
}
A4 = {  # Table A.4: two-way ping-pong node <-> PU [ms] for 1 B, 512KiB, 1, 2, 8, 16, 32 MiB
    "apl09(0,1)": (0.004, 0.176, 0.345, 0.694, 3.066, 6.139, 12.504),
    "apl09(1,0)": (0.004, 0.345, 0.729, 1.327, 3.03, 5.697, 11.95),
    "apl10(0,1)": (0.004, 0.176, 0.345, 0.695, 3.073, 6.077, 12.471),
    "apl10(1,0)": (0.004, 0.353, 0.716, 1.424, 2.93, 5.961, 12.306),
    "apl11(0,0)": (0.004, 0.172, 0.338, 0.859, 8.463, 14, 29.131),
    "apl11(0,1)": (0.004, 0.171, 0.336, 0.905, 6.264, 14.55, 31.075),
    "apl11(1,0)": (0.005, 0.581, 1.219, 2.645, 9.527, 17.504, 39.713),
    "apl12(0,0)": (0.005, 0.562, 1.143, 2.158, 11.348, 23.22, 34.723),
    "apl12(0,1)": (0.592, 1.396, 1.815, 4.505, 17.73, 30.087, 77.42),
    "apl12(0,2)": (1.059, 1.744, 2.092, 5.35, 21.024, 42.573, 80.208),
}
A5 = {  # Table A.5 (only these rows survive in our copy): a [s], mean b [B/s]
    "apl09(0,1)": (0.00000183, 5649210898), "apl09(1,0)": (0.00000207, 5056925118),
}
A3 = {  # Table A.3: a_Ni [s] and mean b_Ni [B/s] from the manager apl12
    "apl09": (0.00004929, 98929407), "apl10": (0.00002414, 120846467),
    "apl11": (0.00003422, 117412460), "apl12": (0.00000056, 3514623280),
}
KIND = {"apl09(0,1)": "gpu", "apl09(1,0)": "cpu", "apl10(0,1)": "gpu", "apl10(1,0)": "cpu",
        "apl11(0,0)": "gpu", "apl11(0,1)": "gpu", "apl11(1,0)": "cpu", "apl12(0,0)": "cpu",
        "apl12(0,1)": "mic", "apl12(0,2)": "mic"}  # section 4.1: platform/device ids
DEVICE = {"apl09(0,1)": "GeForce GTX 560 Ti", "apl09(1,0)": "Xeon W3540 (4c, HT; 2 threads kept "
          "for management)", "apl10(0,1)": "GeForce GTX 560 Ti", "apl10(1,0)": "Xeon W3540",
          "apl11(0,0)": "Tesla K20m", "apl11(0,1)": "Tesla K20m", "apl11(1,0)": "2 x Xeon "
          "E5-2640 (2 threads for management)", "apl12(0,0)": "2 x Xeon E5-2680 (32 of 40 "
          "threads compute)", "apl12(0,1)": "Xeon Phi 5100", "apl12(0,2)": "Xeon Phi 5100"}
BYTES = {512: (2101248, 4096), 1024: (8396800, 8192), 2048: (33570816, 16384)}
CAPS = {"apl09": 348, "apl10": 348, "apl11": 1000, "apl12": 2000}  # section 4.5.2, size 2048


def pu_link(key):
    if key in A5:
        a, b = A5[key]
        return {"latency_s": a, "bandwidth_Bps": b, "comment": "Table A.5"}
    t = A4[key]
    mib = 1048576
    # eq. 4 between 1 MiB and 32 MiB, one-way time = ping-pong / 2
    b = (32 * mib - mib) / ((t[6] - t[2]) / 2 / 1000)
    return {"latency_s": r(t[0] / 2 / 1000), "bandwidth_Bps": r(b, 4),
            "comment": "Table A.4: latency = 1-byte ping-pong / 2; bandwidth by eq. 4 from the "
                       "1 MiB and 32 MiB one-way times (A.5 is cut off in our copy)"}


def boinski(size):
    col = {512: 0, 1024: 1, 2048: 2}[size]
    nodes = []
    for node in ("apl12", "apl09", "apl10", "apl11"):
        a, b = A3[node]
        pus = []
        for key in sorted(k for k in A1 if k.startswith(node)):
            dev = key[len(node):]
            init, fini = T8[key]
            pus.append({
                "name": key, "kind": KIND[key],
                "comment": f"{DEVICE[key]}: linear = 1300 iterations x {A1[key][col]} ms "
                           f"(Table A.1, size {size}); const = init + deinit of Table 8 "
                           f"({init} + {fini} s, measured for size 1024, ASSUMED for all sizes)",
                "link": pu_link(key),
                "time": {"const": r(init + fini), "linear": r(ITER * A1[key][col] / 1000)},
            })
        n = {"name": node, "link": {"latency_s": a, "bandwidth_Bps": b,
                                   "comment": "Table A.3 (a_Ni, mean b_Ni)" +
                                   ("; apl12 is the manager: loopback" if node == "apl12" else "")},
             "pus": pus}
        if size == 2048:
            n["max_items"] = CAPS[node]
            n["comment"] = "max_items: section 4.5.2 limit for problems of size 2048"
        nodes.append(n)
    inb, outb = BYTES[size]
    write(f"boinski-apl09-12-jacobi{size}.json", {
        "comment": (f"Boiński & Czarnul (section 4.1, appendix A): servers apl09-apl12 "
                    f"solving Jacobi systems of size {size}. Item = one system (a 'problem'), "
                    f"1300 iterations (section 4.4); in {inb} bytes, out {outb} bytes (section "
                    f"4.2.2). The manager is apl12. Node partition/merge times are not in the "
                    f"tables and are 0. noise_sigma 0.03 ASSUMED from Tables 1-3 (real vs "
                    f"expected within a few %). The paper ran 64-2048 problems: use --items in "
                    f"that range."),
        "item": {"in_bytes": inb, "out_bytes": outb},
        "noise_sigma": 0.03,
        "nodes": nodes,
    })


# ---------------------------------------------------------------- FLEX-MPI
# Relative per-process speeds, calibrated on Table 3, HTC1-4, Jacobi: T_FLX / T_par is
# 0.642, 0.635, 0.639 for 5000, 10000, 15000 rows (mean 0.639). With an equal split T_par is
# set by the slowest class (C, the Opteron at 800 MHz); balanced, T = rows / sum(speeds); so
# sum(s) / s_C = 4 / 0.639 = 6.26. A, B, D share the remaining 5.26 in proportion to their
# clocks (2.0 : 2.4 : 1.87 GHz, Table 1).
S_C = 1.0
REST = 4 / 0.639 - 1.0
GHZ = {"A": 2.0, "B": 2.4, "D": 1.87}
SPEED = {k: REST * v / sum(GHZ.values()) for k, v in GHZ.items()}
SPEED["C"] = S_C
ROW_C = 805.0 / 1250.0  # Table 3 HTC1-4 Jacobi 5000: T_par = 805 s for 1250 rows on class C
CLASS = {"A": "Intel Xeon E5405 2.00 GHz, 1 socket x 4", "B": "Intel Xeon E5645 2.40 GHz, "
         "2 x 6", "C": "AMD Opteron 6168 800 MHz, 2 x 6", "D": "Intel Xeon E7-4807 1.87 GHz, 4 x 6"}
GBE = {"latency_s": 50e-6, "bandwidth_Bps": 1.25e8,
       "comment": "Gigabit Ethernet (section 4); ASSUMED 50 us MPI latency"}


def flex_node(cls, idx, procs, first, rows):
    pus = [{"name": f"{cls}{idx}.p{j}", "kind": f"cpu-{cls}",
            "time": {"linear": r(ROW_C * (rows / 5000) / SPEED[cls])}} for j in range(procs)]
    pus[0]["comment"] = (f"class {cls} ({CLASS[cls]}): relative speed {SPEED[cls]:.3f} of class "
                         f"C; linear = {ROW_C:.3f} s/row x ({rows}/5000) / speed")
    return {"name": f"{cls}{idx}", "link": FREE_NODE if first else GBE, "pus": pus}


FLEX_COMMON = ("Item = one matrix row of a dense Jacobi system kept for all 10,000 iterations "
               "(section 4: the row's whole compute time). Per-process speeds calibrated on "
               "Table 3 (HTC1-4 Jacobi: T_FLX/T_par = 0.639 gives sum of speeds = 6.26 x class "
               "C's; A, B, D split the rest by clock, Table 1); class C: 805 s / 1250 rows "
               "(HTC1-4, 5000 rows). One process per PU; processes of a node do not slow each "
               "other (HTC3-16 per-row time matches HTC1-4 within 4 %). in_bytes = one row of "
               "doubles, out_bytes = one solution entry; per-iteration halo exchange is not "
               "modelled. noise_sigma 0.01 ASSUMED (dedicated nodes).")


def flexmpi():
    rows = 5000
    def cluster(title, layout, rows, events=None):
        nodes, first = [], True
        for cls, count, procs in layout:
            for i in range(count):
                nodes.append(flex_node(cls, i, procs, first, rows))
                first = False
        c = {"comment": title + " " + FLEX_COMMON,
             "item": {"in_bytes": 8 * rows, "out_bytes": 8}, "noise_sigma": 0.01,
             "nodes": nodes}
        if events:
            c["events"] = events
        return c
    write("flexmpi-htc1-4-jacobi.json", cluster(
        "FLEX-MPI (Tables 1-2) configuration HTC1-4: one node of each class A-D, "
        "one process each; Jacobi with 5000 rows (use --items 5000).",
        [("A", 1, 1), ("B", 1, 1), ("C", 1, 1), ("D", 1, 1)], rows))
    write("flexmpi-htc5-64-jacobi.json", cluster(
        "FLEX-MPI (Tables 1-2) configuration HTC5-64: 4 class A nodes x 4 processes, "
        "2 nodes x 8 processes of each of B, C, D; Jacobi with 5000 rows (use --items 5000).",
        [("A", 4, 4), ("B", 2, 8), ("C", 2, 8), ("D", 2, 8)], rows))
    rows = 10000
    ev = []
    for j in range(4):
        for s, e in ((50, 80), (150, 180), (250, 280)):
            ev.append({"at_s": s, "pu": f"A0.p{j}", "slowdown": 1.5})
            ev.append({"at_s": e, "pu": f"A0.p{j}", "slowdown": 1.0})
        ev.append({"at_s": 350, "pu": f"A0.p{j}", "slowdown": 1.5})
    ev.sort(key=lambda x: x["at_s"])
    ev[0]["comment"] = ("section 4.2: two external processes on the class A node: a burst of "
                        "short intervals, then one long interval to the end. Factor 1.5 = 6 "
                        "processes on 4 cores; interval times ASSUMED (Fig. 3 shows them only "
                        "qualitatively)")
    write("flexmpi-nondedicated-jacobi.json", cluster(
        "FLEX-MPI non-dedicated experiment (FLEX-MPI, section 4.2, Table 5): 1 class A node "
        "and 1 class B node, 4 processes each; Jacobi with 10,000 rows (use --items 10000).",
        [("A", 1, 4), ("B", 1, 4)], rows, ev))


def irregular():
    # PLB-HeC's two machines on work whose items do not cost the same (issue 13): the papers'
    # cluster, with the cost maps of docs/cluster-format.md. Not from a paper: the maps stand
    # for the irregular codes hlb's users run (a fractal's rows, a power-law matrix's rows,
    # an adaptive mesh's refined region).
    maps = {
        "mandelbrot": ({"profile": "mandelbrot"},
                       "the rows of the mandelbrot app's image: the middle rows cost ~100x the top"),
        "spikes": ({"spikes": {"seed": 3, "fraction": 0.05, "height": 30}, "slices": 512},
                   "5 % of the items, at random, cost 30x the others"),
        "segments": ({"segments": [1, 1, 1, 8, 8, 1, 1, 1]},
                     "a refined region: the fourth and fifth eighths cost 8x the rest"),
    }
    for name, (cmap, what) in maps.items():
        c = mm_cluster(f"PLB-HeC (section IV, Table I): machines A, B, with a cost map ({what}).",
                       plbhec_machines(), 2)
        c["cost_map"] = cmap
        write(f"irregular-2machines-{name}.json", c)



def driver_core():
    # This 2-core machine running `hlb run matmul --size 2048 --pus all` (docs/executor.md,
    # "Devices that must pay for their core"): the cpu PU (OpenBLAS dgemm, both cores) and
    # PoCL's CPU device, which holds one of the two cores to drive it. MEASURED here
    # (2026-11-25, traces of the run): dgemm ~11,400 rows/s on two cores with ~0.5 ms per call;
    # PoCL's naive kernel ~34 rows/s (a first block of 2 rows took 58 ms). Host memory: no
    # links. The default releases the device after its first block and gives the core back.
    n = 2048
    row = 8 * n
    c = {
        "comment": ("One 2-core machine: OpenBLAS matmul rows on the cpu PU and PoCL's CPU "
                    "device driving one of its cores, n = 2048 (use --items 2048). Measured "
                    "on the development machine; the device does not pay for its core."),
        "item": {"in_bytes": row, "out_bytes": row},
        "noise_sigma": 0.05,
        "nodes": [{"name": "host", "link": FREE_NODE, "pus": [
            {"name": "cpu", "kind": "cpu", "cores": 2,
             "comment": "OpenBLAS dgemm over both cores (its curve is for all its cores)",
             "time": {"const": 5e-4, "linear": r(1 / 11400)}},
            {"name": "opencl0", "kind": "opencl", "driver_core": {"of": "cpu", "cores": 1},
             "comment": "PoCL's CPU device, one compute unit (device fission)",
             "time": {"const": 0.0, "linear": r(1 / 34)}},
        ]}],
    }
    write("driver-core-1machine-matmul.json", c)


plbhec()
plbhac()
irregular()
driver_core()
for size in (512, 1024, 2048):
    boinski(size)
flexmpi()
