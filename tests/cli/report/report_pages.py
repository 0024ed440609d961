#!/usr/bin/env python3
"""Pages of `hlb report`, rendered in headless Chromium (--dump-dom), checked on the DOM the
page's script computed: the traces carry the command's --json ("hlb") and the header says what
ran from it (app, size, devices, the policy's parameters), per-PU items equal the run's --json, every drawn chart has axis ticks
and a legend (as Chart.js computed them), "where the time went" names the throttled PU and the
released device, a simulator page has one section per policy, an MPI page shows its ranks.

An SPMD page (a trace written by the SPMD layer, HLB_SPMD_TRACE) shows each redistribution with
the rows it moved, as the code's own output counts them.

usage: report_pages.py HLB SCRATCH_DIR PRESETS_DIR KIND [HLB_JACOBI]
       KIND: exec, release, sim, mpi, spmd, model, errors; spmd needs examples/mpi's hlb_jacobi
Exit 77 (skipped) only when no headless Chromium is installed (scripts/install-deps.sh)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

HLB, SCRATCH, PRESETS, KIND = sys.argv[1:5]
os.makedirs(SCRATCH, exist_ok=True)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def path(name):
    return os.path.join(SCRATCH, name)


def hlb(*args, rc=0, stdout=None):
    p = subprocess.run([HLB, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != rc:
        sys.exit(f"FAIL: hlb {' '.join(args)}: exit {p.returncode}, expected {rc}\n{p.stdout}{p.stderr}")
    if stdout:
        with open(path(stdout), "w") as f:
            f.write(p.stdout)
    return p


def check_facts(trace, out_json):
    """The writer put the command's --json into the trace as its top-level "hlb" object: a user
    who only passes --trace gets a page that says what ran."""
    t = json.load(open(path(trace)))
    out = json.load(open(path(out_json)))
    if t.get("hlb") != out:
        fail(f"{trace}: its \"hlb\" object is not what --json printed: {str(t.get('hlb'))[:300]}")


def without_facts(trace, out):
    """The trace as an older hlb wrote it, blocks only: the page must degrade, not break."""
    t = json.load(open(path(trace)))
    t.pop("hlb", None)
    json.dump(t, open(path(out), "w"))


def check_header(page, dom, want):
    """Each (fact, text) in want: the header's fact contains the text."""
    for fact, text in want:
        if text not in dom.header.get(fact, ""):
            fail(f"{page}: header '{fact}' is '{dom.header.get(fact)}', expected it to contain '{text}'")


class Dom(HTMLParser):
    """Sections, their PU rows, findings and charts, from Chromium's serialised DOM."""

    def __init__(self):
        super().__init__()
        self.sections, self.body, self.ranks = [], {}, None
        self.row, self.cell, self.text_of = None, None, None
        # The header's facts ("what ran", "PUs", ...): dt text -> dd text, before any section.
        self.header, self.dt, self.in_dt, self.dd = {}, "", False, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        sec = self.sections[-1] if self.sections else None
        if tag == "body":
            self.body = a
        elif tag == "dt" and not self.sections:
            self.dt, self.in_dt = "", True
        elif tag == "dd" and not self.sections:
            self.dd = self.dt
            self.header[self.dd] = ""
            if "data-ranks" in a:
                self.ranks = int(a["data-ranks"])
        elif tag == "dd" and "data-ranks" in a:
            self.ranks = int(a["data-ranks"])
        elif tag == "section" and "data-run" in a:
            self.sections.append({"run": a["data-run"], "hidden": "hidden" in a, "pus": [],
                                  "findings": [], "charts": [], "bound": None, "ideal": None, "policy": None,
                                  "moves": [], "moves_dd": None, "links": {}})
        elif sec is None:
            return
        elif tag == "tr" and "data-pu" in a:
            sec["pus"].append({"name": a["data-pu"], "items": float(a["data-items"]),
                               "blocks": int(a["data-blocks"]), "cells": []})
            self.row = sec["pus"][-1]["cells"]
        elif tag == "tr" and "data-rank" in a:
            sec["links"][int(a["data-rank"])] = float(a["data-transfer-s"])
        elif tag == "tr" and a.get("class") == "move":
            sec["moves"].append([])
            self.row = sec["moves"][-1]
        elif tag == "td" and self.row is not None:
            self.cell = self.row
            self.cell.append("")
            if "data-rate" in a and sec["pus"]:
                sec["pus"][-1]["rate"] = float(a["data-rate"])
        elif tag == "span" and "data-scaled" in a and sec["pus"]:
            sec["pus"][-1]["scaled"] = float(a["data-scaled"])
        elif tag == "dd" and a.get("class") == "moves":
            sec["moves_dd"] = (int(a["data-moves"]), float(a["data-rows"]))
        elif tag == "li" and "data-finding" in a:
            sec["findings"].append({"key": a["data-finding"], "pu": a.get("data-pu", ""), "text": ""})
            self.text_of = sec["findings"][-1]
        elif tag == "figure" and "data-chart" in a:
            sec["charts"].append(a)
        elif tag == "dd" and a.get("class") in ("bound", "ideal", "policy"):
            sec[a["class"]] = float(a["data-s"])
        elif tag == "span" and "data-param" in a:
            sec.setdefault("params", {})[a["data-param"]] = a.get("class") == "given"

    def handle_endtag(self, tag):
        if tag == "dt":
            self.in_dt = False
        if tag == "dd":
            self.dd = None
        if tag == "td":
            self.cell = None
        if tag == "tr":
            self.row = None
        if tag == "li":
            self.text_of = None

    def handle_data(self, data):
        if self.in_dt:
            self.dt += data
        elif self.dd is not None:
            self.header[self.dd] += data
        if self.cell is not None:
            self.cell[-1] += data
        if self.text_of is not None:
            self.text_of["text"] += data


def render(page, fragment=""):
    profile = tempfile.mkdtemp()
    try:
        p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--dump-dom",
                            "file://" + os.path.abspath(path(page)) + fragment],
                           capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    d = Dom()
    d.feed(p.stdout)
    if not d.sections:
        sys.exit(f"FAIL: {page}: no section in the rendered DOM\n{p.stderr[-2000:]}")
    return d


def check_charts(page, sec, expect_drawn):
    drawn = [c["data-chart"] for c in sec["charts"] if c.get("data-drawn") == "yes"]
    for name in expect_drawn:
        if name not in drawn:
            fail(f"{page} [{sec['run']}]: chart '{name}' was not drawn (drawn: {drawn})")
    for c in sec["charts"]:
        if c.get("data-drawn") != "yes":
            continue
        for attr in ("data-ticks-x", "data-ticks-y", "data-legend", "data-title-x", "data-title-y"):
            if not c.get(attr):
                fail(f"{page} [{sec['run']}]: chart '{c['data-chart']}' has no {attr}")
        if len(c.get("data-ticks-x", "").split("|")) < 2 or len(c.get("data-ticks-y", "").split("|")) < 2:
            fail(f"{page} [{sec['run']}]: chart '{c['data-chart']}' has fewer than two ticks on an axis")
        for axis in ("data-ticks-x", "data-ticks-y"):
            ticks = [t for t in c.get(axis, "").split("|") if t]
            if len(set(ticks)) != len(ticks):
                fail(f"{page} [{sec['run']}]: chart '{c['data-chart']}' repeats a tick label on {axis}: {ticks}")


def check_items(page, sec, json_pus):
    """json_pus: [(name, items, blocks or None)] in the run's order."""
    if len(sec["pus"]) != len(json_pus):
        fail(f"{page}: {len(sec['pus'])} PU rows, --json has {len(json_pus)}")
    for row, (n, i, b) in zip(sec["pus"], json_pus):
        if row["name"] != n or row["items"] != i or (b is not None and row["blocks"] != b):
            fail(f"{page}: PU row {row['name']}: {row['items']:.0f} items {row['blocks']} blocks, "
                 f"--json says {n}: {i} items {b} blocks")
        if row["cells"][2].strip() != f"{i:.0f}":
            fail(f"{page}: {n}'s items cell shows '{row['cells'][2]}', expected {i:.0f}")


def finding(sec, key, pu):
    return next((f for f in sec["findings"] if f["key"] == key and f["pu"] == pu), None)


ALL_CHARTS = ["gantt", "sizes", "predicted", "fit", "done", "tail"]


def exec_page():
    # The run: a throttled cpu PU next to whatever else is there, policy hlb.
    hlb("run", "matmul", "--pus", "all", "--throttle", "cpu=4", "--trace", path("t.json"), "--json",
        stdout="t.out.json")
    hlb("report", path("t.json"), "-o", path("t.html"))
    run = json.load(open(path("t.out.json")))
    check_facts("t.json", "t.out.json")
    # One self-contained file: nothing loaded from elsewhere (the charts being drawn, checked
    # below, shows Chart.js is inlined).
    import re
    external = re.findall(r"<(?:script|link|img|iframe|object|embed)\b[^>]*\b(?:src|href)=[^>]*>",
                          open(path("t.html")).read(), re.I)
    if external:
        fail(f"t.html loads other files: {external[:3]}")
    dom = render("t.html")
    sec = dom.sections[0]
    check_header("t.html", dom, [("what ran", f"app matmul, size {run['size']}, {run['items']} items")] +
                 [("PUs", f"{p['name']} ({p['kind']}, {p['device']})") for p in run["pus"]])
    # The policy's decision time, as the run measured it.
    if sec["policy"] is None or abs(sec["policy"] - run["policy_s"]) > 1e-9 + 1e-6 * run["policy_s"]:
        fail(f"t.html: policy decisions {sec['policy']} s, --json policy_s {run['policy_s']}")
    # Every parameter of the policy with its value, none given here.
    params = sec.get("params", {})
    if "tail_idle" not in params or "probe_fraction" not in params or any(params.values()):
        fail(f"t.html: the hlb policy's parameters (defaults) are not all shown: {params}")
    check_items("t.html", sec, [(p["name"], p["items"], p["blocks"]) for p in run["pus"]])
    # Blocks the policy predicted, from the trace itself: how often the run got that far varies.
    blocks = [e for e in json.load(open(path("t.json")))["traceEvents"] if e.get("cat") == "block"]
    missed = [e for e in blocks if e["tid"] == 0 and e["args"]["predicted_s"] > 0
              and not 1 / 1.5 <= e["dur"] * 1e-6 / e["args"]["predicted_s"] <= 1.5]
    check_charts("t.html", sec, ALL_CHARTS if any(e["args"]["predicted_s"] > 0 for e in blocks)
                 else [c for c in ALL_CHARTS if c != "predicted"])
    f = finding(sec, "throttle", "cpu")
    if not f or "x4" not in f["text"]:
        fail(f"t.html: 'where the time went' does not name the throttled cpu PU: {sec['findings']}")
    f = finding(sec, "mispredicted", "cpu")
    if missed and (not f or f"{len(missed)} of cpu" not in f["text"]):
        fail(f"t.html: {len(missed)} of the throttled PU's blocks took over 1.5x or under 1/1.5 of their prediction; "
             f"the list says {f}")
    # hlb's misprediction guard is the knob that bounds what a mispredicted block costs.
    if f and "tail_idle" not in f["text"]:
        fail(f"t.html: the mispredicted line does not name tail_idle: {f['text']}")


def release_page():
    # opencl:0 made 20x slower is released (as in tests/cli/run/run_release.sh).
    cl = subprocess.run([HLB, "run", "matmul", "--size", "8", "--pus", "opencl:0"], capture_output=True).returncode == 0
    if not cl:
        print("no OpenCL device: the release page needs one (scripts/install-deps.sh installs PoCL)")
        sys.exit(77)
    hlb("run", "blackscholes", "--size", "2000000", "--pus", "all", "--throttle", "cpu=2", "--throttle", "opencl:0=20",
        "--policy", "greedy", "--params", "chunk=4000", "--trace", path("rel.json"), "--json",
        stdout="rel.out.json")
    run = json.load(open(path("rel.out.json")))
    released = [p for p in run["pus"] if p["released"]]
    if [p["name"] for p in released] != ["opencl:0"]:
        sys.exit(f"FAIL: expected opencl:0 to be released: {run['pus']}")
    check_facts("rel.json", "rel.out.json")
    for trace, page in (("rel-blocks.json", "rel-blocks.html"), ("rel.json", "rel.html")):
        if trace == "rel-blocks.json":
            without_facts("rel.json", trace)
        hlb("report", path(trace), "-o", path(page))
        sec = render(page).sections[0]
        # Given and default parameters from the run's facts; none claimed from blocks alone.
        want = {"chunk": True, "initial_fraction": False} if trace == "rel.json" else {}
        if sec.get("params", {}) != want:
            fail(f"{page}: greedy's parameters {sec.get('params')}, expected {want} (chunk=4000 given)")
        check_items(page, sec, [(p["name"], p["items"], p["blocks"]) for p in run["pus"]])
        check_charts(page, sec, ["gantt", "sizes", "fit", "done", "tail"])
        if not finding(sec, "released", "opencl:0"):
            fail(f"{page}: 'where the time went' does not name the released opencl:0: {sec['findings']}")
        if not finding(sec, "throttle", "cpu"):
            fail(f"{page}: the throttled cpu PU is not named")
    # With the run's facts (as hlb run --trace writes them) the reason is the executor's own.
    row = next(p for p in sec["pus"] if p["name"] == "opencl:0")
    if released[0]["release_reason"] not in row["cells"][-1]:
        fail(f"rel.html: opencl:0's status '{row['cells'][-1]}' lacks the run's reason")
    # The block opencl:0 had in flight when released was dropped, not failed: the page counts
    # failed blocks as --json does, and the Gantt names the dropped one apart. (That the run
    # had one in flight depends on timing: the trace says.)
    dropped = [e for e in json.load(open(path("rel.json")))["traceEvents"]
               if e.get("cat") == "failed" and e["tid"] == run["pus"].index(released[0])]
    failed_cell = row["cells"][8]
    if not failed_cell.startswith(f"{released[0]['failed_blocks']} blocks"):
        fail(f"rel.html: opencl:0's failed cell '{failed_cell}', --json failed_blocks {released[0]['failed_blocks']}")
    gantt = next(c for c in sec["charts"] if c["data-chart"] == "gantt")
    if dropped and ("dropped at its release" not in failed_cell or
                    "dropped at release" not in gantt.get("data-legend", "")):
        fail(f"rel.html: the block dropped at opencl:0's release is not told apart: cell '{failed_cell}', "
             f"Gantt legend '{gantt.get('data-legend')}'")


def sim_page():
    preset = os.path.join(PRESETS, "plbhec-2machines-matmul.json")
    hlb("sim", preset, "--items", "20000", "--policy", "all", "--trace", path("s.json"), "--json",
        stdout="s.out.json")
    check_facts("s.json", "s.out.json")
    hlb("report", path("s.json"), "-o", path("s.html"))
    sim = json.load(open(path("s.out.json")))
    names = [p["name"] for p in sim["policies"]]
    for fragment, shown in (("", names[0]), ("#run=hlb", "hlb")):
        dom = render("s.html", fragment)
        check_header("s.html", dom, [("what ran", f"cluster {preset}, 20000 items, seed 1")])
        if [s["run"] for s in dom.sections] != names:
            fail(f"s.html: sections {[s['run'] for s in dom.sections]}, --json has policies {names}")
        # Every policy gets a fitted-ideal split over all its PUs, static's one block per PU and
        # greedy's equal chunks included (a PU with one block size is taken at its rate). The
        # cluster's PUs are linear, so for those two, whose PUs are all taken at their rates,
        # the split lands on the simulator's bound. (Curves fitted to small blocks and
        # extrapolated to the whole run, as plb-hec's, may not: docs/report.md.)
        for sec in dom.sections:
            if sec["ideal"] is None:
                fail(f"s.html [{sec['run']}]: no fitted-ideal split")
            elif sec["run"] in ("static", "greedy") and abs(sec["ideal"] / sim["lower_bound_s"] - 1) > 0.05:
                fail(f"s.html [{sec['run']}]: fitted-ideal split {sec['ideal']}, the bound is {sim['lower_bound_s']}")
        visible = [s for s in dom.sections if not s["hidden"]]
        if [s["run"] for s in visible] != [shown]:
            fail(f"s.html{fragment}: visible sections {[s['run'] for s in visible]}, expected [{shown}]")
            continue
        sec = visible[0]
        pol = sim["policies"][names.index(shown)]
        check_items("s.html", sec, [(n, i, None) for n, i in pol["items_per_pu"].items()])
        check_charts("s.html", sec, ["gantt", "sizes", "fit", "done", "tail"])
        if shown == "hlb" and "tail_idle" not in sec.get("params", {}):
            fail(f"s.html#run=hlb: the hlb policy's parameters are not shown: {sec.get('params')}")
        if sec["bound"] is None or abs(sec["bound"] / sim["lower_bound_s"] - 1) > 1e-6:
            fail(f"s.html: bound {sec['bound']}, --json lower_bound_s {sim['lower_bound_s']}")


def mpi_page():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("FAIL: no mpirun (scripts/install-deps.sh installs openmpi-bin)")
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "2", HLB, "run", "matmul",
                        "--mpi", "--size", "384", "--pus", "cpu:1", "--trace", path("m.json"), "--json"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        if "without MPI" in p.stderr:
            print("this hlb was built without MPI")
            sys.exit(77)
        sys.exit(f"FAIL: mpirun hlb run --mpi: exit {p.returncode}\n{p.stderr}")
    open(path("m.out.json"), "w").write(p.stdout)
    check_facts("m.json", "m.out.json")
    hlb("report", path("m.json"), "-o", path("m.html"))
    run = json.load(open(path("m.out.json")))
    dom = render("m.html")
    sec = dom.sections[0]
    check_items("m.html", sec, [(p["name"], p["items"], p["blocks"]) for p in run["pus"]])
    check_charts("m.html", sec, ["gantt", "sizes", "done", "tail"])
    if dom.ranks != 2:
        fail(f"m.html: ranks {dom.ranks}, expected 2")
    gantt = next(c for c in sec["charts"] if c["data-chart"] == "gantt")
    want = [f"{p['name']}@{p['rank']}" for p in run["pus"]]
    if gantt.get("data-ticks-y", "").split("|") != want:
        fail(f"m.html: the Gantt's rows are {gantt.get('data-ticks-y')}, expected {want} (NAME@RANK)")
    # The links table: each rank's transfer time is the sum over its PUs' blocks in the trace.
    per_rank = {}
    for e in json.load(open(path("m.json")))["traceEvents"]:
        if e.get("cat") == "block":
            rank = run["pus"][e["tid"]]["rank"]
            per_rank[rank] = per_rank.get(rank, 0) + e["args"].get("transfer_s", 0)
    if sorted(sec["links"]) != [0, 1] or any(abs(sec["links"][k] - v) > 1e-6 + 1e-6 * v for k, v in per_rank.items()):
        fail(f"m.html: links table {sec['links']}, the trace's transfer time per rank {per_rank}")
    wheres = [p["cells"][1].strip() for p in sec["pus"]]
    if wheres != [f"rank {p['rank']}" for p in run["pus"]]:
        fail(f"m.html: PU ranks {wheres}, --json {[p['rank'] for p in run['pus']]}")


def spmd_page():
    jacobi = sys.argv[5] if len(sys.argv) > 5 else ""
    mpirun = shutil.which("mpirun")
    if not mpirun or not os.access(jacobi, os.X_OK):
        print("this hlb was built without MPI: no hlb_jacobi")
        sys.exit(77)
    # Rank 2 is made 3x slower from iteration 40, and the policy is made eager, so rows move.
    env = dict(os.environ, HLB_SPMD_TRACE=path("sp.json"))
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "3", jacobi, "--rows", "600",
                        "--iters", "200", "--interval", "10", "--policy", "hlb", "--params", "persist=1,threshold=0",
                        "--inject-rank", "2", "--inject-from", "40", "--inject-frac", "3"],
                       capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        sys.exit(f"FAIL: mpirun hlb_jacobi: exit {p.returncode}\n{p.stderr}")
    out = json.loads(p.stdout.splitlines()[0])
    trace = json.load(open(path("sp.json")))["hlb_spmd"]
    ivs = trace["intervals"]
    if len(ivs) != out["iterations"] // 10 or trace["ranks"] != 3:
        fail(f"sp.json: {len(ivs)} intervals over {trace['ranks']} ranks, expected {out['iterations'] // 10} over 3")
    for k, iv in enumerate(ivs):
        if sum(iv["rows"]) != 600:
            fail(f"sp.json: interval {k}: the ranks' rows sum to {sum(iv['rows'])}, not 600")
    hlb("report", path("sp.json"), "-o", path("sp.html"))
    dom = render("sp.html")
    sec = dom.sections[0]
    if dom.ranks != 3:
        fail(f"sp.html: ranks {dom.ranks}, expected 3")
    want = [(f"rank {r}", ivs[-1]["rows"][r], len(ivs)) for r in range(3)]
    got = [(u["name"], u["items"], u["blocks"]) for u in sec["pus"]]
    if got != want:
        fail(f"sp.html: rank rows {got}, the trace's last interval says {want}")
    if out["redistributions"] == 0:
        fail("hlb_jacobi moved no rows: the eager policy should have (rank 2 was made 3x slower)")
    if sec["moves_dd"] != (out["redistributions"], out["rows_moved"]):
        fail(f"sp.html: redistributions and rows moved {sec['moves_dd']}, hlb_jacobi says "
             f"{(out['redistributions'], out['rows_moved'])}")
    moved = sum(int(m[4]) for m in sec["moves"])
    if len(sec["moves"]) != out["redistributions"] or moved != out["rows_moved"]:
        fail(f"sp.html: the redistributions table has {len(sec['moves'])} rows moving {moved} rows, "
             f"hlb_jacobi says {out['redistributions']} moving {out['rows_moved']}")
    f = finding(sec, "redistribute", "")
    n = out["redistributions"]
    if not f or f"{n} redistribution{'s' if n > 1 else ''} moved {out['rows_moved']} rows" not in f["text"]:
        fail(f"sp.html: 'where the time went' lacks the redistributions: {sec['findings']}")
    check_charts("sp.html", sec, ["imbalance", "ranktime", "rows", "moves"])


def model_page():
    """The fitted-ideal split from curves that describe the blocks. A written trace (blocks of
    known cost) whose facts carry a model 10x too fast for PU a (as the run's model can be under
    MPI noise), PU b without a model, and PU c whose blocks are all of one size: the page must
    scale a's curve to its blocks, fit b, take c at its rate, and split over all three."""
    rate = {"a": 1000.0, "b": 500.0, "c": 500.0}  # items per second
    sizes = {"a": [10, 20, 40, 80, 160], "b": [10, 20, 40, 80, 160], "c": [50, 50, 50]}
    items = sum(sum(v) for v in sizes.values())
    events, begin = [], 0
    for tid, pu in enumerate(rate):
        events.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": f"{pu} (cpu)"}})
        t = 0.0
        for n in sizes[pu]:
            d = n / rate[pu]
            events.append({"ph": "X", "cat": "block", "name": f"[{begin},+{n})", "pid": 1, "tid": tid,
                           "ts": t * 1e6, "dur": d * 1e6,
                           "args": {"begin": begin, "count": n, "predicted_s": -1, "compute_s": d, "transfer_s": 0}})
            begin += n
            t += d
    makespan = max(sum(v) / rate[p] for p, v in sizes.items())
    events.insert(0, {"ph": "M", "pid": 1, "name": "process_name",
                      "args": {"name": f"hlb run: policy hlb, {items} items, makespan {makespan} s"}})
    model = {"terms": {"u": 0.1 * items / rate["a"]}, "scale": items, "r2": 0.9,
             "transfer": {"per_item_s": 0, "fixed_s": 0}}
    facts = {"app": "synthetic", "size": items, "items": items, "policy": "hlb",
             "pus": [{"name": p, "kind": "cpu", "device": "test", "items": sum(sizes[p]), "blocks": len(sizes[p]),
                      "released": False, "retired": False, "model": model if p == "a" else None} for p in rate]}
    json.dump({"traceEvents": events, "hlb": facts}, open(path("syn.json"), "w"))
    hlb("report", path("syn.json"), "-o", path("syn.html"))
    sec = render("syn.html").sections[0]
    want = items / sum(rate.values())
    if sec["ideal"] is None or abs(sec["ideal"] / want - 1) > 0.05:
        fail(f"syn.html: fitted-ideal split {sec['ideal']} s, expected {want:.4g} s (items over the PUs' summed rates)")
    pus = {u["name"]: u for u in sec["pus"]}
    if abs(pus["a"].get("scaled", 1) / 10 - 1) > 0.02:
        fail(f"syn.html: a's run model (10x too fast) was not scaled to its blocks: {pus['a']}")
    if "scaled" in pus["b"]:
        fail(f"syn.html: b's curve, fitted to its own blocks, was scaled: {pus['b']}")
    if abs(pus["c"].get("rate", 0) / rate["c"] - 1) > 1e-6:
        fail(f"syn.html: c (one block size) is not taken at its rate of {rate['c']} items/s: {pus['c']}")


def errors():
    """Not an hlb trace, or a broken one: exit 2, the reason with the place, no page written."""
    cases = {
        "other.json": ({"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "Browser"}},
                                        {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "name": "x"}]},
                       "not an hlb trace"),
        "noevents.json": ({"foo": 1}, "no \"traceEvents\" array"),
        "badts.json": ({"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name",
                                         "args": {"name": "hlb run: policy hlb, 4 items, makespan 1 s"}},
                                        {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "cpu (cpu)"}},
                                        {"ph": "X", "cat": "block", "name": "[0,+4)", "pid": 1, "tid": 0, "ts": -5,
                                         "dur": 1, "args": {"count": 4}}]},
                       "traceEvents[2]: \"ts\" and \"dur\" must be numbers >= 0, got ts -5"),
        "badfacts.json": ({"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name",
                                            "args": {"name": "hlb run: policy hlb, 4 items, makespan 1 s"}},
                                           {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "cpu (cpu)"}},
                                           {"ph": "X", "cat": "block", "name": "[0,+4)", "pid": 1, "tid": 0, "ts": 0,
                                            "dur": 1, "args": {"count": 4}}], "hlb": [1]},
                          "\"hlb\" must be an object"),
        "badspmd.json": ({"hlb_spmd": {"version": 1, "ranks": 2, "rows": 10, "iterations": 10, "interval": 10,
                                       "intervals": [{"iteration": 10, "t_start_s": 0, "t_end_s": 1, "imbalance": 0,
                                                      "predicted_gain_s": 0, "rows": [5, 5], "real_s": [1],
                                                      "cpu_s": [1, 1], "comm_s": [0, 0], "work": [1, 1]}]}},
                         "hlb_spmd.intervals[0].real_s: must be an array of 2 numbers"),
        "negspmd.json": ({"hlb_spmd": {"version": 1, "ranks": 1, "rows": 10, "iterations": 10, "interval": 10,
                                       "intervals": [{"iteration": 10, "t_start_s": 0, "t_end_s": 1, "imbalance": 0,
                                                      "predicted_gain_s": 0, "rows": [10], "real_s": [-2],
                                                      "cpu_s": [1], "comm_s": [0], "work": [1]}]}},
                         "hlb_spmd.intervals[0].real_s[0]: must be a number >= 0, got -2"),
    }
    for name, (doc, why) in cases.items():
        json.dump(doc, open(path(name), "w"))
        page = path(name + ".html")
        p = hlb("report", path(name), "-o", page, rc=2)
        if why not in p.stderr or path(name) not in p.stderr:
            fail(f"{name}: stderr '{p.stderr.strip()}' lacks the file and '{why}'")
        if os.path.exists(page) or os.path.exists(page + ".tmp"):
            fail(f"{name}: a page was written for a bad trace")


if KIND != "errors" and not CHROMIUM:
    print("no headless Chromium (scripts/install-deps.sh installs the chromium package)")
    sys.exit(77)
{"exec": exec_page, "release": release_page, "sim": sim_page, "mpi": mpi_page, "spmd": spmd_page,
 "model": model_page, "errors": errors}[KIND]()
print("FAILED" if FAILS else "ok")
sys.exit(1 if FAILS else 0)
