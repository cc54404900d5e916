#!/usr/bin/env python3
"""Invariants every parabench result file must satisfy, whatever was measured.

usage: invariants.py PATH...   (result files, or folders searched for them)

Each CSV that a benchmark wrote (its first line is '# parabench NAME', then its
metadata) is checked against itself and, where the JSON document of the same run
sits beside it, against that document; a JSON document written alone is checked
on its rows. The rules hold for any correct run, so a failure is a bug in the
writer, not noise:
  - statistics in order: min <= median <= p99 <= max, the mean within [min, max]
    (coll_sweep: the sample pass's mean, time_us_sample_mean, whose samples min and
    max are; its time_us is the whole loop's, which may fall outside them), and a
    coll_sweep row's sample pass of 1 to iters iterations;
    over a file of 3+ rows of 3+ samples, p99 below max somewhere and median !=
    mean somewhere (a column holding the wrong statistic would equal its
    neighbour in every row);
  - no duration, byte count, rate or count below zero (but the DP step's exposed
    time and overhead, differences that noise may take below zero);
  - derived columns equal their definitions (docs/METRICS.md), computed here
    independently: algbw = bytes / time (alltoallv: / the slowest rank's time), busbw = algbw x the nccl-tests factor of
    the collective at that rank count, p2p bandwidth from bytes, window and time,
    the DP exposed time and overhead, the PP efficiency, bubble and m/(m+p-1);
    a TP layer's compute and communication time no more than its step, its
    compute time positive and its communication time positive exactly where
    it moves bytes;
  - the load note's shares of CPU time within 0-100%;
  - link classes consistent with the hosts: intra when the ranks share a node,
    inter when each is on its own node, mixed otherwise;
  - meta (in the JSON) has every key docs/METRICS.md promises, and the sweeps their
    buffer mode, p2p_sweep its iteration policy for each mode it measured;
    meta.hosts names every node once and puts each rank on one of them;
    meta.topology has a package, a core and no fewer hardware threads than cores;
  - CSV and JSON agree row for row, every number to within cJSON's rounding
    (1e-15 relative), and on completeness ('# complete' and "complete": true);
    a run stopped midway may leave one a few rows behind the other.
Exit 0 when every file holds, 1 naming each broken rule (file, row, values)."""
import csv
import json
import math
import os
import re
import sys

REL = 1e-6  # derived columns are computed in double precision; this only absorbs their rounding


# busbw = algbw x FACTOR(n ranks): the nccl-tests definitions (docs/METRICS.md), one per collective.
# The test's own oracle, kept apart from the collective table: a collective added there must be
# added here too (docs/ARCHITECTURE.md, "A collective"), or its rows are refused.
BUSBW_FACTORS = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    "alltoallv": lambda n: (n - 1) / n,  # alltoall's, on the mean block
}


def busbw_factor(coll, n):
    """busbw = algbw x this; None for a collective BUSBW_FACTORS does not know."""
    f = BUSBW_FACTORS.get(coll)
    return f(n) if f else None


def link_of(nodes, ranks):
    """The class of a group of `ranks` ranks spread over `nodes` nodes."""
    if nodes <= 1:
        return "intra"
    return "inter" if nodes == ranks else "mixed"


def close(a, b, rel=REL):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


class Checker:
    def __init__(self, path):
        self.path = path
        self.errors = []

    def bad(self, i, msg):
        where = f"{self.path}: row {i + 1}" if i is not None else self.path
        self.errors.append(f"{where}: {msg}")


def read_csv(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    comments = [l for l in lines if l.startswith("#")]
    body = [l for l in lines if l and not l.startswith("#")]
    rows = list(csv.DictReader(body)) if body else []
    return comments, rows


def meta_value(comments, key):
    for c in comments:
        if c.startswith(f"# {key}: "):
            return c[len(key) + 4:]
    return None


def num(row, key):
    """A numeric cell as float; None when absent or empty (not measured)."""
    v = row.get(key)
    if v is None or v == "":
        return None
    try:
        return float(v)
    except ValueError:
        return None


def check_stats(ck, rows):
    """Every PREFIX_min/_max family: order within a row, distinctness over the file."""
    if not rows:
        return
    prefixes = [k[:-4] for k in rows[0] if k.endswith("_min") and k[:-4] + "_max" in rows[0]]
    for p in prefixes:
        distinct_p99 = distinct_median = qualifying = 0
        for i, r in enumerate(rows):
            lo, hi = num(r, p + "_min"), num(r, p + "_max")
            mean_key = p + "_sample_mean" if p + "_sample_mean" in r else p
            med, p99, mean = num(r, p + "_median"), num(r, p + "_p99"), num(r, mean_key)
            if lo is None or hi is None:
                continue
            tol = REL * max(abs(hi), 1e-9)
            if lo > hi + tol:
                ck.bad(i, f"{p}_min {lo} > {p}_max {hi}")
            if mean is not None and not lo - tol <= mean <= hi + tol:
                ck.bad(i, f"mean {p} {mean} outside [{lo}, {hi}]")
            if med is not None and not lo - tol <= med <= hi + tol:
                ck.bad(i, f"{p}_median {med} outside [{lo}, {hi}]")
            if p99 is not None and med is not None and not med - tol <= p99 <= hi + tol:
                ck.bad(i, f"{p}_p99 {p99} outside [median {med}, max {hi}]")
            # p99 interpolates between the two largest samples, so it equals the max only
            # when they tie; a median of 3+ samples equals their mean only by coincidence.
            iters = num(r, "sample_iters" if "sample_iters" in r else "iters") or 0
            if hi > lo and iters >= 3:
                qualifying += 1
                distinct_p99 += p99 is not None and p99 < hi
                distinct_median += med is not None and mean is not None and r[p + "_median"] != r[mean_key]
        if qualifying >= 3 and f"{p}_p99" in rows[0] and distinct_p99 == 0:
            ck.bad(None, f"{p}_p99 equals {p}_max in all {qualifying} rows of 3+ samples: not a percentile")
        if qualifying >= 3 and f"{p}_median" in rows[0] and p in rows[0] and distinct_median == 0:
            ck.bad(None, f"{p}_median equals the mean {p} in all {qualifying} rows of 3+ samples")


def check_coll_sweep(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        n, nodes, b = int(r["nranks"]), int(r["nnodes"]), int(r["bytes"])
        # alltoallv's bandwidths are on the slowest rank's time, which the heaviest receiver sets
        t = num(r, "time_us_rankmax" if r["collective"] == "alltoallv" else "time_us")
        if r["link_class"] != link_of(nodes, n):
            ck.bad(i, f"link_class {r['link_class']} for {n} ranks on {nodes} nodes; expected {link_of(nodes, n)}")
        if nodes > min(n, run_nodes):
            ck.bad(i, f"a group of {n} ranks on {nodes} nodes, in a run on {run_nodes}")
        algbw, busbw, f = num(r, "algbw_GBps"), num(r, "busbw_GBps"), busbw_factor(r["collective"], n)
        if t and t > 0 and algbw is not None and not close(algbw, b / (t * 1e3)):
            ck.bad(i, f"algbw {algbw} GB/s != bytes {b} / time {t} us = {b / (t * 1e3)}")
        if f is None:
            ck.bad(i, f"collective {r['collective']!r} has no nccl-tests busbw factor to check its busbw against "
                      f"(BUSBW_FACTORS in tests/integration/invariants.py)")
        elif algbw is not None and busbw is not None and not close(busbw, algbw * f):
            ck.bad(i, f"busbw {busbw} != algbw {algbw} x {f:.6g} ({r['collective']}, n={n})")
        samples, iters = num(r, "sample_iters"), num(r, "iters")
        if samples is not None and iters is not None and not 1 <= samples <= iters:
            ck.bad(i, f"sample_iters {samples} outside 1..iters {iters}: no sample pass, or one longer than the loop")
        rankmax = num(r, "time_us_rankmax")
        if t is not None and rankmax is not None and rankmax < t * (1 - REL):
            ck.bad(i, f"time_us_rankmax {rankmax} < the mean over ranks {t}")


def check_p2p_sweep(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        want = "intra" if r["host_a"] == r["host_b"] else "inter"
        if r["link_class"] != want:
            ck.bad(i, f"pair on hosts {r['host_a']},{r['host_b']} classified {r['link_class']}, expected {want}")
        t, bw = num(r, "time_us"), num(r, "bw_GBps")
        if not t or bw is None:
            continue
        moved = int(r["bytes"]) * int(r["window"]) * (2 if r["mode"] == "bibw" else 1)
        if not close(bw, moved / (t * 1e3)):
            ck.bad(i, f"{r['mode']} bw {bw} GB/s != {moved} B / {t} us = {moved / (t * 1e3)}")


def check_dp_allreduce(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        comp, step, exp, ovh = (num(r, k) for k in ("compute_us", "step_us", "exposed_us", "overhead"))
        if None in (comp, step, exp, ovh):
            continue
        if not close(exp, step - comp, 1e-5) and abs(exp - (step - comp)) > 1e-3:
            ck.bad(i, f"exposed_us {exp} != step_us {step} - compute_us {comp}")
        if comp > 0 and not close(ovh, exp / comp, 1e-5):
            ck.bad(i, f"overhead {ovh} != exposed/compute = {exp / comp}")
        slowest = num(r, "compute_us_slowest")
        if slowest is not None and slowest < comp * (1 - 1e-9) - 1e-6:
            ck.bad(i, f"compute_us_slowest {slowest} < compute_us {comp}: a mean of per-iteration maxima is at least "
                      "the largest mean")
        if slowest is not None and (r.get("iters") == "1" or r["nranks"] == "1") and not close(slowest, comp, 1e-9):
            ck.bad(i, f"compute_us_slowest {slowest} != compute_us {comp} with {r['iters']} iteration(s) on "
                      f"{r['nranks']} rank(s): each iteration's slowest rank is then the slowest rank's mean")
        if "overhead_paired" in r and num(r, "overhead_paired") is None:
            ck.bad(i, f"overhead_paired {r['overhead_paired']!r} is not a number")
        if "overhead_instep" in r:  # each iteration's slowest step minus its slowest compute up to the all-reduce
            ins = num(r, "overhead_instep")
            if ins is None or ins < 0:
                ck.bad(i, f"overhead_instep {r['overhead_instep']!r}: a step is never shorter than its own compute")
        hf = num(r, "hidden_fraction")
        if hf is not None and not -REL <= hf <= 1 + REL:
            ck.bad(i, f"hidden_fraction {hf} outside [0, 1]")
        n = int(r["nranks"])
        if run_nodes == 1 and r["link_class"] != "intra":
            ck.bad(i, f"link_class {r['link_class']} in a one-node run")
        elif n > 1 and r["link_class"] != link_of(run_nodes, n):
            ck.bad(i, f"link_class {r['link_class']} for {n} ranks on {run_nodes} nodes")


def check_pp_pipeline(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        step, ideal, eff, bub = (num(r, k) for k in ("step_us", "ideal_us", "efficiency", "bubble_fraction"))
        m, p, v = int(r["micro_batches"]), int(r["stages"]), int(r["virtual_stages"] or 1)
        theory = num(r, "efficiency_theory")
        want = m / (m + (p - 1) / v)
        if theory is not None and not close(theory, want):
            ck.bad(i, f"efficiency_theory {theory} != m/(m+(p-1)/v) = {want} ({r['schedule']}, m={m} p={p} v={v})")
        if step and ideal is not None and eff is not None and not close(eff, ideal / step):
            ck.bad(i, f"efficiency {eff} != ideal {ideal} / step {step}")
        if eff is not None and bub is not None and not close(bub, 1 - eff, 1e-5) and abs(bub - (1 - eff)) > 1e-8:
            ck.bad(i, f"bubble_fraction {bub} != 1 - efficiency {eff}")
        if run_nodes == 1 and r["link_class"] != "intra":
            ck.bad(i, f"link_class {r['link_class']} in a one-node run")
        # every stage's list holds one figure per stage; the row's wait is the longest stage's,
        # and with 2+ stages each waits on a receive (stage 0 for its gradients) for some time
        waits = [float(x) for x in r.get("stage_wait_us", "").split(";") if x]
        wait = num(r, "p2p_wait_us")
        if waits and wait is not None:
            if len(waits) != p or abs(wait - max(waits)) > 0.05 + 1e-9 * wait:
                ck.bad(i, f"p2p_wait_us {wait} is not the largest of {p} stage_wait_us {r['stage_wait_us']}")
            if p > 1 and wait <= 0:
                ck.bad(i, f"p2p_wait_us {wait}: {p} stages never waited on a message")


def check_tp_layer(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        t, nodes = int(r["tp"]), int(r["nnodes"])
        if t == 1:  # no tensor parallelism: no TP link
            if r["link_class"] != "none":
                ck.bad(i, f"t = 1 classified {r['link_class']}, expected none")
        elif int(r["groups"]) == 1 and r["link_class"] != link_of(nodes, t):
            ck.bad(i, f"one TP group of {t} ranks on {nodes} nodes classified {r['link_class']}")
        elif nodes == 1 and r["link_class"] != "intra":
            ck.bad(i, f"link_class {r['link_class']} in a one-node run")
        got, want = num(r, "comm_bytes_per_rank"), num(r, "expected_bytes_per_rank")
        if got is not None and want is not None and got != want:
            ck.bad(i, f"comm_bytes_per_rank {got:.0f} != expected_bytes_per_rank {want:.0f}")
        # communication takes time exactly where bytes move (t > 1), and every layer computes
        comm, moved = num(r, "comm_us"), num(r, "comm_bytes_per_rank")
        if comm is not None and moved is not None and (comm > 0) != (moved > 0):
            ck.bad(i, f"comm_us {comm} with comm_bytes_per_rank {moved:.0f}: time without bytes or bytes without time")
        if (num(r, "compute_us") or 0) <= 0:
            ck.bad(i, f"compute_us {r.get('compute_us')} is not positive")
        # the TP groups run at once: the step is the slowest group's, and no group is slower
        step, slow, med = num(r, "step_us"), num(r, "slowest_group_step_us"), num(r, "median_group_step_us")
        # a rank's compute and communication are timed inside its step, one after the other:
        # their means over ranks fit in the slowest rank's step
        busy = (num(r, "compute_us") or 0) + (num(r, "comm_us") or 0)
        if step is not None and busy > step * (1 + 1e-3):
            ck.bad(i, f"compute_us + comm_us = {busy} is more than the step, {step} us")
        if "slowest_group" in r:
            if not 0 <= int(r["slowest_group"]) < int(r["groups"]):
                ck.bad(i, f"slowest_group {r['slowest_group']} outside the {r['groups']} groups")
            if step is not None and slow is not None and not close(slow, step):
                ck.bad(i, f"slowest_group_step_us {slow} != step_us {step} (the step is the slowest group's)")
            if med is not None and slow is not None and med > slow * (1 + REL):
                ck.bad(i, f"median_group_step_us {med} > slowest_group_step_us {slow}")
            if int(r["groups"]) == 1 and med is not None and slow is not None and not close(med, slow):
                ck.bad(i, f"one group: median {med} != slowest {slow}")
            if not r.get("slowest_group_hosts"):
                ck.bad(i, "slowest_group_hosts is empty")


def check_hybrid_3d(ck, rows, run_nodes):
    for i, r in enumerate(rows):
        if int(r["tp"]) * int(r["pp"]) * int(r["dp"]) != int(r["nranks"]):
            ck.bad(i, f"tp {r['tp']} x pp {r['pp']} x dp {r['dp']} != nranks {r['nranks']}")
        step, worst = num(r, "step_us"), num(r, "step_us_max")
        if step is not None and worst is not None and worst < step * (1 - REL):
            ck.bad(i, f"step_us_max {worst} < step_us {step}")
        for k in ("tp_link", "pp_link", "dp_link"):
            if run_nodes == 1 and r[k] not in ("intra", "none", ""):
                ck.bad(i, f"{k} {r[k]} in a one-node run")


CHECKS = {"coll_sweep": check_coll_sweep, "p2p_sweep": check_p2p_sweep, "dp_allreduce": check_dp_allreduce,
          "pp_pipeline": check_pp_pipeline, "tp_layer": check_tp_layer, "hybrid_3d": check_hybrid_3d}


def csv_cell(value):
    """A JSON value as a CSV cell: null is empty, a float its shortest exact form."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def check_against_json(ck, comments, rows, json_path):
    with open(json_path) as f:
        doc = json.load(f)
    jrows = doc.get("rows", [])
    check_meta(ck, doc.get("meta", {}), doc.get("benchmark"), jrows)
    check_notes(ck, doc.get("notes", []))
    csv_done, json_done = "# complete" in comments, doc.get("complete") is True
    # A run stopped midway leaves both files incomplete, one maybe a few rows behind the other
    # (each is written as rows come): then the shorter must be a prefix of the longer.
    if len(jrows) != len(rows) and (csv_done or json_done):
        ck.bad(None, f"{len(rows)} CSV rows, {len(jrows)} in {json_path}")
    for i, (r, j) in enumerate(zip(rows, jrows)):
        if list(r) != list(j):
            ck.bad(i, f"CSV columns {list(r)} differ from JSON keys {list(j)}")
            continue
        for k, v in j.items():
            # The CSV holds the exact double; cJSON keeps 15 digits when they read back
            # within its epsilon, so the JSON may be an ulp or two away, never more.
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                same = r[k] != "" and math.isclose(float(r[k]), v, rel_tol=1e-15, abs_tol=0)
            else:
                same = r[k] == csv_cell(v)
            if not same:
                ck.bad(i, f"{k}: CSV '{r[k]}', JSON {v!r}")
    if csv_done != json_done:
        ck.bad(None, f"completeness differs: CSV {'has' if csv_done else 'lacks'} '# complete', JSON complete is "
               f"{doc.get('complete')}")


# The metadata every benchmark writes (docs/METRICS.md, "Metadata"), and what some add: the
# buffer mode of the sweeps that OSU and nccl-tests compare with, the groups of coll_sweep.
META_KEYS = ("command", "date", "parabench_version", "git_revision", "backend", "backend_library", "nranks",
             "nnodes", "hosts", "ranks_per_node", "rank_node", "binding", "topology", "oversubscribed")
META_KEYS_OF = {"coll_sweep": ("buffers", "groups", "iterations"), "p2p_sweep": ("buffers", "iterations")}


LOAD_NOTE = re.compile(r"load: other processes used (-?[0-9.]+)% .*, steal (-?[0-9.]+)%")


def check_notes(ck, notes):
    """The load note (dp_allreduce) gives two shares of CPU time, each 0 to 100%: "-0" is a
    negative share that rounded to 0 (or a rank with nothing to say that won the maximum)."""
    for n in notes:
        m = LOAD_NOTE.search(n)
        if m and not all(0 <= float(x) <= 100 and not x.startswith("-") for x in m.groups()):
            ck.bad(None, f"a load note with a share outside 0-100%: {n!r}")


def check_meta(ck, meta, bench=None, rows=()):
    check_hosts(ck, meta)
    check_topology(ck, meta)
    # One node: oversubscribed says whether its ranks outnumber its cores (hwloc's count).
    cores = (meta.get("topology") or {}).get("cores")
    if meta.get("nnodes") == 1 and isinstance(cores, int) and cores > 0 and "oversubscribed" in meta and \
            meta["oversubscribed"] != (int(meta["nranks"]) > cores):
        ck.bad(None, f"meta.oversubscribed {meta['oversubscribed']} for {meta['nranks']} ranks on one node of "
                     f"{cores} cores")
    if "parabench_version" in meta:  # written by a benchmark, not a hand-made fixture
        missing = [k for k in META_KEYS + META_KEYS_OF.get(bench, ()) if k not in meta]
        if missing:
            ck.bad(None, f"meta lacks {', '.join(missing)}")
    # p2p_sweep's iteration policy differs by mode (OSU's): each mode measured states its own
    if bench == "p2p_sweep" and isinstance(meta.get("iterations"), dict):
        stated = meta["iterations"]
        for mode in sorted({r.get("mode") for r in rows if r.get("mode")}):
            if not stated.get(mode):
                ck.bad(None, f"meta.iterations says nothing of mode {mode}, which the rows measure")


def check_hosts(ck, meta):
    """meta.hosts, where a run records it: one entry per node, each named, the ranks of the
    run each on exactly one of them (the report's node grid and slowest groups read it)."""
    hosts = meta.get("hosts")
    if hosts is None:
        return
    ranks = []
    for h in hosts:
        if not isinstance(h, dict) or not h.get("name") or not isinstance(h.get("ranks"), list):
            ck.bad(None, f"meta.hosts: an entry without a name and a list of ranks: {h!r}")
            return
        ranks += h["ranks"]
    if sorted(ranks) != list(range(int(meta.get("nranks", len(ranks))))):
        ck.bad(None, f"meta.hosts: ranks {sorted(ranks)} are not each of the run's {meta.get('nranks')} ranks once")
    if "nnodes" in meta and len(hosts) != int(meta["nnodes"]):
        ck.bad(None, f"meta.hosts: {len(hosts)} hosts for nnodes {meta['nnodes']}")
    want = ",".join(str(len(h["ranks"])) for h in hosts)  # the ranks of each node, in the hosts' order
    if "ranks_per_node" in meta and str(meta["ranks_per_node"]) != want:
        ck.bad(None, f"meta.ranks_per_node {meta['ranks_per_node']!r}: the hosts hold {want!r}")


def check_topology(ck, meta):
    """meta.topology, where a run records it: hwloc read this node, so it has at least one
    package and one core, and as many hardware threads as cores or more."""
    t = meta.get("topology")
    if t is None:
        return
    if not (t.get("packages", 0) >= 1 and t.get("cores", 0) >= 1 and t.get("pus", 0) >= t.get("cores", 0)):
        ck.bad(None, f"meta.topology: not a node hwloc read ({t!r})")


# Durations, byte counts, rates and counts cannot be negative. The exceptions are differences
# that noise may take below zero: the DP step's exposed time (step - compute) and its share.
SIGNED = {"exposed_us", "overhead", "predicted_overhead"}


def check_signs(ck, rows):
    for i, r in enumerate(rows):
        for k in r:
            if k in SIGNED or not (k.endswith(("_us", "bytes", "_GBps", "iters")) or "_us_" in k):
                continue
            cells = [x for x in (r[k] or "").split(";") if x]  # a per-stage list: each figure
            if any(num({k: x}, k) is not None and float(x) < 0 for x in cells):
                ck.bad(i, f"{k} {r[k]} is negative")


def check_rows(ck, bench, rows, run_nodes):
    check_stats(ck, rows)
    check_signs(ck, rows)
    if bench in CHECKS and rows:
        try:
            CHECKS[bench](ck, rows, run_nodes)
        except (KeyError, ValueError) as e:
            ck.bad(None, f"{bench}: a column the invariants need is missing or not a number ({e})")


def check_csv(csv_path):
    ck = Checker(csv_path)
    comments, rows = read_csv(csv_path)
    nodes = meta_value(comments, "nnodes")
    check_rows(ck, comments[0].split()[2], rows, int(nodes) if nodes and nodes.isdigit() else 1)
    check_notes(ck, comments)
    json_path = os.path.splitext(csv_path)[0] + ".json"
    if same_run(comments, json_path):
        try:
            check_against_json(ck, comments, rows, json_path)
        except (OSError, ValueError) as e:
            ck.bad(None, f"{json_path}: unreadable ({e})")
    return ck.errors


def same_run(comments, json_path):
    """True when the JSON beside a CSV was written by the same run (same command and date):
    a later run may rewrite one of the two and leave the other."""
    doc = load_result_json(json_path)
    meta = doc.get("meta", {}) if doc else {}
    return bool(meta) and (meta.get("command"), meta.get("date")) == (meta_value(comments, "command"),
                                                                      meta_value(comments, "date"))


def check_json(json_path):
    """A JSON document written without a CSV: its rows, as the CSV would print them."""
    ck = Checker(json_path)
    doc = load_result_json(json_path)
    rows = [{k: csv_cell(v) for k, v in r.items()} for r in doc["rows"]]
    check_meta(ck, doc.get("meta", {}), doc["benchmark"], doc["rows"])
    check_notes(ck, doc.get("notes", []))
    check_rows(ck, doc["benchmark"], rows, int(doc.get("meta", {}).get("nnodes") or 1))
    return ck.errors


def load_result_json(path):
    """The document if PATH is a benchmark's JSON result (benchmark, meta, rows), else None."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("benchmark"), str) and isinstance(doc.get("rows"), list)
    return doc if ok and all(isinstance(r, dict) for r in doc["rows"]) else None


def is_result(path):
    """A benchmark's CSV (first line '# parabench NAME', then its metadata: a hand-made
    fixture has no '# command:' line), or its JSON without a CSV beside it."""
    stem, ext = os.path.splitext(path)
    if ext == ".json":  # checked with its CSV when both come from one run
        return load_result_json(path) is not None and not (is_result(stem + ".csv") and
                                                           same_run(read_csv(stem + ".csv")[0], path))
    try:
        with open(path, errors="replace") as f:
            head = [f.readline() for _ in range(8)]
    except OSError:
        return False
    return head[0].startswith("# parabench ") and any(l.startswith("# command: ") for l in head)


def check_file(path):
    return check_json(path) if path.endswith(".json") else check_csv(path)


def result_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for d, _, names in sorted(os.walk(p)):
                for n in sorted(names):
                    if n.endswith((".csv", ".json")) and is_result(os.path.join(d, n)):
                        yield os.path.join(d, n)
        elif is_result(p):  # a CSV no benchmark wrote (a fixture, a matrix grid) has no invariants here
            yield p


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    errors, files = [], 0
    for path in result_files(argv):
        files += 1
        errors += check_file(path)
    for e in errors:
        print(f"invariants: {e}", file=sys.stderr)
    if not errors:
        print(f"invariants: {files} result file(s) hold")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
