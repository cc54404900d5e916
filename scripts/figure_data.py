"""The figures' data that needs the run's hosts, for scripts/report.py.

    figure_data.write(RESULTS_DIR)

Two files, written before gnuplot draws plots/*.gp:

  - MATRIX-{latency,bw}-nodes.csv, above NODE_GRID_ABOVE ranks (MATRIX: the
    step whose role is "every pair of ranks", suite/manifest.py): the
    all-pairs matrix as nodes x nodes, each cell the median of that node
    pair's rank pairs (the diagonal: the pairs inside the node; empty for a
    node of one rank), rows and columns named by host. plots/p2p_matrix.gp
    draws it in place of the per-rank grid, which stays in
    MATRIX-{latency,bw}.csv. At or below NODE_GRID_ABOVE ranks, or when
    the run does not name the host of every rank, there is none.
  - groups-hosts.csv beside the figures (group,host): the host of each node group
    (nodeK) of the concurrent-groups sweep that plots/groups.gp draws, so
    that its legend names the slowest group's host.

Ranks map to hosts through suspects.hosts_of. Standard library only.
"""
import csv
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from suite import atomic_file  # noqa: E402  (whole files or none)
from suite import manifest  # noqa: E402  (a step's output found by its role)

import suspects  # noqa: E402

NODE_GRID_ABOVE = 32  # ranks; above this the heat map's cells are nodes
MATRIX = "every pair of ranks"  # the all-pairs matrix's role (suite/manifest.py)


def read_matrix(path):
    """{(a, b): value} from a per-rank matrix CSV (header `rank,0,1,...`); empty cells left out."""
    cells = {}
    try:
        with open(path, newline="") as f:
            body = list(csv.reader(l for l in f if l.strip() and not l.startswith("#")))
    except (OSError, csv.Error):
        return None, {}
    if not body:
        return None, {}
    ranks = [int(c) for c in body[0][1:]]
    for row in body[1:]:
        for b, v in zip(ranks, row[1:]):
            try:
                x = float(v)
            except ValueError:
                continue
            if not math.isnan(x):
                cells[int(row[0]), b] = x
    return ranks, cells


def node_grid(hosts, cells):
    """[[median or None]] over hosts x hosts: each node pair's rank pairs, each pair once."""
    grid = []
    for i, (_, ra) in enumerate(hosts):
        line = []
        for j, (_, rb) in enumerate(hosts):
            vals = [cells[a, b] for a in ra for b in rb if (i != j or a < b) and (a, b) in cells]
            line.append(statistics.median(vals) if vals else None)
        grid.append(line)
    return grid


def node_matrix_path(out, which):
    """Where the node-level matrix of WHICH (latency or bw) goes: MATRIX-WHICH-nodes.csv."""
    return manifest.output(out, MATRIX, f"-{which}-nodes.csv")


def write_node_matrix(out, which):
    """MATRIX-WHICH-nodes.csv (WHICH: latency or bw); its path, or None when the heat map stays per rank."""
    path = node_matrix_path(out, which)
    if os.path.exists(path):
        os.remove(path)  # from an earlier report of a different world
    per_rank = manifest.output(out, MATRIX, f"-{which}.csv")
    ranks, cells = read_matrix(per_rank)
    if not ranks or len(ranks) <= NODE_GRID_ABOVE:
        return None
    hosts = suspects.hosts_of(out, MATRIX)
    if sorted(r for _, rs in hosts for r in rs) != sorted(ranks):
        return None
    grid = node_grid(hosts, cells)
    with atomic_file.replace(path, newline="") as f:
        f.write(f"# {which}: the median of each pair of nodes' rank pairs (diagonal: the pairs inside the node); "
                f"every rank pair: {os.path.basename(per_rank)}\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["node"] + [h for h, _ in hosts])
        for (h, _), line in zip(hosts, grid):
            w.writerow([h] + ["" if v is None else f"{v:.6g}" for v in line])
    return path


def column(path, name):
    """One column of a CSV, '#' lines skipped; [] without the file."""
    try:
        with open(path, newline="") as f:
            return [r.get(name) or "" for r in csv.DictReader(l for l in f if l.strip() and not l.startswith("#"))]
    except (OSError, csv.Error):
        return []


def write_group_hosts(out):
    """groups-hosts.csv beside the figures: nodeK -> its host, for the sweep plots/groups.gp draws (the first with two groups)."""
    path = os.path.join(out, "plots", "groups-hosts.csv")
    if os.path.exists(path):
        os.remove(path)
    for role in ("collectives inside each node", "collectives over all ranks"):
        groups = set(column(manifest.output(out, role), "group")) - {""}
        if len(groups) > 1:
            break
    else:
        return None
    hosts = suspects.hosts_of(out, role)
    with atomic_file.replace(path) as f:
        f.write("group,host\n")
        for k, (h, _) in enumerate(hosts):
            if f"node{k}" in groups:
                f.write(f"node{k},{h}\n")
    return path


def write(out):
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    for which in ("latency", "bw"):
        write_node_matrix(out, which)
    write_group_hosts(out)
