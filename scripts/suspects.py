"""Which hosts a run's results point at, for scripts/report.py.

    suspects.judge(RESULTS_DIR) -> Verdict (and writes suspects.csv, good-hosts.txt)

At cluster scale the figure an operator acts on is one host, not one more
bandwidth: this module turns the per-group and per-pair results into a
ranking of hosts by the evidence against them. Each piece of evidence adds a
weight to every host it names, with a sentence saying why:

  - the slowest node group of a concurrent-groups sweep (coll_sweep --groups
    node: the collectives inside each node, else over all ranks; groups nodeK), per
    collective at its largest size, when below 0.9 x the median group:
    5 x the shortfall (0.8 x the median weighs 1.0), at most 2;
  - the all-pairs matrix (its -pairs.csv, column slow): 2 x the share
    of the host's pairs that are slow, so a host whose every off-node pair is
    slow weighs nearly 2 while its partners, each slow with it alone, weigh
    little;
  - the slowest pipeline replica (pp_trace.csv, replicas of pp_pipeline at
    the traced configuration), when its step is above 1.1 x the median
    replica's: 5 x the excess, at most 2, on every host of the replica.

  - the slowest TP group of tp_layer (columns slowest_group_hosts,
    slowest_group_step_us, median_group_step_us), per mode at the largest
    hidden size, when above 1.1 x the median group: 5 x the excess, at most
    2, on every host of the group.

A rail group spans every node and names no host, and acceptance rules name a
link class, not a host, so neither adds evidence. A host whose score is above THRESHOLD is a suspect.
Rank -> host comes from each step's own metadata (<step>.json meta.hosts,
else the CSV's `# hosts` line), else from meta.json's machine.hosts. Steps are
found by their roles in suite/manifest.py, never by name.
Standard library only.
"""
import csv
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from suite import atomic_file  # noqa: E402  (whole files or none)
from suite import manifest  # noqa: E402  (a step's output found by its role)
from suite import results_csv  # noqa: E402  (a garbled row is left out, named FILE:LINE)
from suite.meta import is_run  # noqa: E402
from suite.units import size_text  # noqa: E402  (bytes in words)

THRESHOLD = 1.0
GROUP_RATIO = 0.9   # a slowest node group below this x the median is evidence
REPLICA_RATIO = 1.1  # a slowest replica's step above this x the median is evidence


class Verdict:
    def __init__(self, hosts, ranked):
        self.hosts = hosts      # [(host, ranks)] in node order
        self.ranked = ranked    # [(host, score, [reasons])], most suspect first
        self.suspects = [h for h, s, _ in ranked if s > THRESHOLD]


def _csv_rows(path):
    return results_csv.rows(path, "suspects")


def _num(r, key):
    """A finite number, else nan (nan and inf are never evidence: every comparison with nan fails)."""
    try:
        x = float(r.get(key, ""))
    except (TypeError, ValueError):
        return float("nan")
    return x if math.isfinite(x) else float("nan")


def _finite(*xs):
    return all(math.isfinite(x) for x in xs)


# A host name as a hostfile takes it: no blank or control character (good-hosts.txt is reused as one),
# and not starting as a spreadsheet formula does (=, +, -, @: suspects.csv is opened in one).
HOST_NAME = re.compile(r"[^\s\x00-\x1f\x7f=+@-][^\s\x00-\x1f\x7f]*")


def _parse_hosts(value):
    """[(name, [ranks])] from meta.hosts ([{name, ranks}]); [] when it is not that, or a name is not
    one a hostfile can hold (said on stderr)."""
    try:
        hosts = [(str(h["name"]), [int(r) for r in h["ranks"]]) for h in value]
    except (TypeError, KeyError, ValueError):
        return []
    bad = [h for h, _ in hosts if not HOST_NAME.fullmatch(h)]
    if bad:
        print(f"suspects: host name {bad[0]!r} holds a blank or a control character, or starts with =, +, - "
              "or @; the run's hosts are not used", file=sys.stderr)
        return []
    return hosts


def hosts_of(out, role):
    """The hosts of the world of the step playing ROLE: its JSON's meta.hosts, its CSV's `# hosts` line,
    else meta.json's."""
    try:
        with open(manifest.output(out, role, ".json")) as f:
            found = _parse_hosts(json.load(f).get("meta", {}).get("hosts"))
        if found:
            return found
    except (OSError, ValueError, AttributeError):
        pass
    try:
        with open(manifest.output(out, role)) as f:
            for line in f:
                m = re.match(r"^# hosts:?\s+(\[.*\])\s*$", line)
                if m:
                    found = _parse_hosts(json.loads(m.group(1)))
                    if found:
                        return found
    except (OSError, ValueError):
        pass
    return run_hosts(out)


def run_hosts(out):
    try:
        with open(os.path.join(out, "meta.json")) as f:
            return _parse_hosts(json.load(f).get("machine", {}).get("hosts"))
    except (OSError, ValueError, AttributeError):
        return []


def group_evidence(out):
    """[(host, weight, reason)]: the slowest node group per collective at its largest size."""
    found = []
    for role in ("collectives inside each node", "collectives over all ranks"):
        step = manifest.by_role(role).name
        rs = [r for r in _csv_rows(manifest.output(out, role))
              if re.fullmatch(r"node\d+", r.get("group", "")) and _finite(_num(r, "bytes"), _num(r, "busbw_GBps"))]
        if len({r["group"] for r in rs}) < 2:
            continue
        hosts = hosts_of(out, role)
        for coll in dict.fromkeys(r["collective"] for r in rs):
            cr = [r for r in rs if r["collective"] == coll]
            big = max(_num(r, "bytes") for r in cr)
            at = {r["group"]: _num(r, "busbw_GBps") for r in cr if _num(r, "bytes") == big}
            slow = min(at, key=at.get)
            med = statistics.median(at.values())
            node = int(slow[4:])
            if med > 0 and at[slow] < GROUP_RATIO * med and node < len(hosts):
                ratio = at[slow] / med
                found.append((hosts[node][0], min(2.0, 5 * (1 - ratio)),
                              f"slowest node group for {coll} at {size_text(big)}: {ratio:.2f}x the median ({step})"))
        break  # one sweep on node groups is enough; the second would count the same links twice
    return found


def matrix_evidence(out):
    """[(host, weight, reason)]: each host's share of slow pairs in the all-pairs matrix."""
    pairs = _csv_rows(manifest.output(out, "every pair of ranks", "-pairs.csv"))
    hosts = hosts_of(out, "every pair of ranks")
    node = {r: h for h, ranks in hosts for r in ranks}
    total, slow = {}, {}
    for p in pairs:
        try:
            a, b = node[int(p["a"])], node[int(p["b"])]
        except (KeyError, ValueError):
            continue
        if not _finite(_num(p, "latency_us"), _num(p, "bw_GBps")):
            continue  # a garbled row is no evidence, whatever its slow column says
        for h in {a, b}:
            total[h] = total.get(h, 0) + 1
            slow[h] = slow.get(h, 0) + (p.get("slow", "0").strip() not in ("", "0"))
    return [(h, 2.0 * slow[h] / total[h], f"{slow[h]} of {total[h]} matrix pairs slow")
            for h in total if slow[h]]


def replica_evidence(out):
    """[(host, weight, reason)]: the slowest pipeline replica's hosts, at the traced configuration."""
    rs = _csv_rows(os.path.join(out, "pp_trace.csv"))
    span = {}  # replica -> (first start, last end, ranks)
    for r in rs:
        try:
            k, rank = int(r["replica"]), int(r["rank"])
        except (KeyError, ValueError):
            continue
        if not _finite(_num(r, "start_us"), _num(r, "end_us")):
            continue
        lo, hi, ranks = span.get(k, (float("inf"), float("-inf"), set()))
        span[k] = (min(lo, _num(r, "start_us")), max(hi, _num(r, "end_us")), ranks | {rank})
    if len(span) < 2:
        return []
    step = {k: hi - lo for k, (lo, hi, _) in span.items()}
    slow = max(step, key=step.get)
    med = statistics.median(step.values())
    if not med > 0 or step[slow] <= REPLICA_RATIO * med:
        return []
    excess = step[slow] / med
    node = {r: h for h, ranks in hosts_of(out, "pipeline parallel") for r in ranks}
    what = f"{rs[0].get('schedule', '?')} m={rs[0].get('micro_batches', '?')}"
    return [(h, min(2.0, 5 * (excess - 1)),
             f"slowest pipeline replica ({slow} of {len(span)}) for {what}: {excess:.2f}x the median step")
            for h in dict.fromkeys(node[r] for r in sorted(span[slow][2]) if r in node)]


def tp_evidence(out):
    """[(host, weight, reason)]: the slowest TP group's hosts, per mode at the largest hidden size."""
    rs = [r for r in _csv_rows(manifest.output(out, "tensor parallel"))
          if _num(r, "groups") >= 2 and r.get("slowest_group_hosts") and _finite(_num(r, "hidden"))]
    if not rs:
        return []
    big = max(_num(r, "hidden") for r in rs)
    found = []
    for r in rs:
        slow, med = _num(r, "slowest_group_step_us"), _num(r, "median_group_step_us")
        if _num(r, "hidden") != big or not med > 0 or not slow > REPLICA_RATIO * med:
            continue
        excess = slow / med
        for h in dict.fromkeys(r["slowest_group_hosts"].split("+")):
            found.append((h, min(2.0, 5 * (excess - 1)),
                          f"slowest TP group ({r['slowest_group']} of {r['groups']}) for {r.get('mode', '?')} at "
                          f"h={big:.0f}: {excess:.2f}x the median group's layer"))
    return found


def rank(out):
    """The run's hosts ranked by the evidence against them, writing nothing (scripts/history.py reads
    finished runs); None when the run names no hosts."""
    hosts = run_hosts(out) or hosts_of(out, "collectives inside each node") or hosts_of(out, "every pair of ranks")
    if not hosts:
        return None
    score = {h: 0.0 for h, _ in hosts}
    reasons = {h: [] for h, _ in hosts}
    for h, weight, why in group_evidence(out) + matrix_evidence(out) + replica_evidence(out) + tp_evidence(out):
        score[h] = score.get(h, 0.0) + weight
        reasons.setdefault(h, []).append(why)
    ranked = sorted(((h, score[h], reasons[h]) for h in score), key=lambda t: (-t[1], t[0]))
    return Verdict(hosts, ranked)


def judge(out):
    """Rank the run's hosts, write suspects.csv and good-hosts.txt; None when the run names no hosts."""
    if not is_run(out):  # never writes into a folder that is not a run's (the page writer refuses it first)
        print(f"suspects: '{out}' is not a run's results folder (no meta.json or steps.tsv)", file=sys.stderr)
        return None
    v = rank(out)
    if v is None:
        return None
    hosts, ranked = v.hosts, v.ranked
    with atomic_file.replace(os.path.join(out, "suspects.csv"), newline="") as f:
        f.write(f"# a host is a suspect when its score is above {THRESHOLD} (scripts/suspects.py)\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["host", "score", "evidence", "reasons"])
        for h, s, why in ranked:
            w.writerow([h, f"{s:.2f}", len(why), "; ".join(why)])
    # An Open MPI hostfile for the next job: every host of the run but the suspects, with its slots.
    with atomic_file.replace(os.path.join(out, "good-hosts.txt")) as f:
        for h, ranks in hosts:
            if h not in v.suspects:
                f.write(f"{h} slots={len(ranks)}\n")
    return v
