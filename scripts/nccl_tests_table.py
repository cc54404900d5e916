"""nccl-tests' output read, and parabench's figures set beside it: the comparison
a user makes first on a new GPU node (scripts/gpu-check.sh --node, through
scripts/gpu-check-judge.py's nccl-tests and vs-nccl-tests commands).

nccl-tests (all_reduce_perf, sendrecv_perf, ...) prints one row per size after
'#' header lines:

  size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
                               out-of-place              in-place

times in us, bandwidths in GB/s, #wrong a count or N/A (not checked: -c 0, or
sendrecv's in-place half). Other lines (NCCL's INFO/WARN, launcher notices)
are not rows; a line that starts with a size but does not parse is reported
as malformed, never read as figures. Standard library only."""
import csv
import math
import os
import re

ROW_FIELDS = 13   # 5 + out-of-place 4 + in-place 4; a timestamp (-T) may follow
WITHIN = 0.10     # parabench within 10 % of nccl-tests at the largest size, else a finding


def number(text):
    """A finite float nccl-tests printed ('17.85', '1.2e+03'), or None ('nan', '-', 'N/A')."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def wrong_count(text):
    """#wrong: a count, or None for N/A (not checked)."""
    if text == "N/A":
        return None
    v = number(text)
    if v is None or v < 0 or v != int(v):
        raise ValueError(text)
    return int(v)


def parse_row(fields):
    """One row's figures, or None when it is not a well-formed row."""
    if len(fields) < ROW_FIELDS or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    vals = [number(f) for f in (fields[5], fields[6], fields[7], fields[9], fields[10], fields[11])]
    if any(v is None or v < 0 for v in vals):
        return None
    try:
        wrong, ip_wrong = wrong_count(fields[8]), wrong_count(fields[12])
    except ValueError:
        return None
    return {"bytes": int(fields[0]), "count": int(fields[1]), "type": fields[2], "redop": fields[3],
            "time_us": vals[0], "algbw": vals[1], "busbw": vals[2], "wrong": wrong,
            "ip_time_us": vals[3], "ip_algbw": vals[4], "ip_busbw": vals[5], "ip_wrong": ip_wrong}


HEADER_FACTS = (
    ("test", re.compile(r"#\s*Collective test starting:\s*(\S+)")),
    ("version", re.compile(r"#\s*nccl-tests version\s+(\S+)\s+nccl-headers=(\d+)\s+nccl-library=(\d+)")),
    ("avg_busbw", re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")),
    ("out_of_bounds", re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)")),
    ("ranks", re.compile(r"#\s*Rank\s+(\d+)\s")),
)


def parse(text):
    """(rows, malformed, facts) of one nccl-tests output: rows in order, one per
    size (a size printed again is malformed: one test, one type, one op);
    malformed as (line number, line); facts from the '#' lines."""
    rows, bad, facts, seen = [], [], {"ranks": 0}, set()
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#"):
            for key, pat in HEADER_FACTS:
                m = pat.match(s)
                if not m:
                    continue
                if key == "ranks":
                    facts["ranks"] += 1
                elif key == "version":
                    facts["version"] = f"nccl-tests {m.group(1)}, NCCL {nccl_version(m.group(3))}"
                else:
                    facts[key] = m.group(1)
            continue
        fields = s.split()
        if not fields or not fields[0].isdigit():
            continue   # not a row: NCCL's messages, the launcher's, blank lines
        row = parse_row(fields)
        if row is None or row["bytes"] in seen:
            bad.append((n, s))
        else:
            seen.add(row["bytes"])
            rows.append(row)
    return rows, bad, facts


def nccl_version(code):
    """NCCL's version code (22803) as 2.28.3."""
    c = int(code)
    return f"{c // 10000}.{c // 100 % 100}.{c % 100}" if c >= 10000 else f"{c // 1000}.{c // 100 % 10}.{c % 100}"


def read(path):
    with open(path, errors="replace") as f:
        return parse(f.read())


def headline(path):
    """One line for gpu-check's step: FAIL when there is no row or a wrong value."""
    rows, bad, facts = read(path)
    name = facts.get("test", os.path.basename(path))
    if not rows:
        why = f"; {len(bad)} malformed (line {bad[0][0]}: '{bad[0][1][:60]}')" if bad else ""
        return f"FAIL: no result row in {os.path.basename(path)}{why}"
    wrong = sum(r["wrong"] or 0 for r in rows) + sum(r["ip_wrong"] or 0 for r in rows)
    big = rows[-1]
    text = (f"{name}: {len(rows)} sizes, {facts['ranks'] or '?'} ranks, busbw {big['busbw']:g} GB/s at "
            f"{big['bytes']} B (out of place), avg bus bandwidth {facts.get('avg_busbw', '?')} GB/s"
            f"{'; ' + facts['version'] if 'version' in facts else ''}")
    if bad:
        text += f"; {len(bad)} malformed lines left out (line {bad[0][0]})"
    if wrong or int(facts.get("out_of_bounds", 0)):
        return f"FAIL: {text}; {wrong} wrong values"
    return text + "; 0 wrong"


def parabench_rows(path, collective):
    """{bytes: (time_us, busbw)} of one collective in a coll_sweep CSV."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r.get("collective") != collective:
                continue
            t, bw = number(r.get("time_us", "")), number(r.get("busbw_GBps", ""))
            if t is not None and bw is not None and (r.get("bytes") or "").isdigit():
                out.setdefault(int(r["bytes"]), (t, bw))
    return out


def ratio(nt, pb):
    """parabench against nccl-tests, 1.0 equal, below 1 parabench slower: by busbw, or by
    time (nccl-tests time / parabench time) where busbw is 0 (one rank crosses no link)."""
    if nt["busbw"] > 0 and pb[1] > 0:
        return pb[1] / nt["busbw"], ""
    if nt["time_us"] > 0 and pb[0] > 0:
        return nt["time_us"] / pb[0], "t"
    return None, ""


def human(b):
    """8M, 512K, 8: suite/units.py's size_text(b, compact=True), repeated here because this file
    travels alone into a GPU bundle (scripts/gpu-bundle.sh), without the suite."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def table(collective, nt_rows, pb):
    """The side-by-side lines of one collective, and (size, ratio) at the largest size both measured."""
    lines = [f"## {collective}: nccl-tests (out of place) and parabench coll_sweep, per size",
             f"{'size':>8}  {'nccl-tests_us':>13}  {'parabench_us':>12}  {'nccl-tests_busbw':>16}  "
             f"{'parabench_busbw':>15}  {'ratio':>7}"]
    last = None
    for r in nt_rows:
        p = pb.get(r["bytes"])
        if p is None:
            lines.append(f"{human(r['bytes']):>8}  {r['time_us']:>13.2f}  {'-':>12}  {r['busbw']:>16.2f}  {'-':>15}  {'-':>7}")
            continue
        q, how = ratio(r, p)
        cell = f"{q:.3f}{how}" if q is not None else "-"
        lines.append(f"{human(r['bytes']):>8}  {r['time_us']:>13.2f}  {p[0]:>12.2f}  {r['busbw']:>16.2f}  "
                     f"{p[1]:>15.2f}  {cell:>7}")
        if q is not None:
            last = (r["bytes"], q, how)
    for size in sorted(set(pb) - {r["bytes"] for r in nt_rows}):
        lines.append(f"{human(size):>8}  {'-':>13}  {pb[size][0]:>12.2f}  {'-':>16}  {pb[size][1]:>15.2f}  {'-':>7}")
    return lines, last


def compare(pb_csv, pairs, out_txt):
    """Write OUT_TXT: a table per (collective, nccl-tests output); return (headline, findings):
    findings name the collectives whose ratio at the largest common size is outside 1 +- WITHIN."""
    lines = ["# parabench against nccl-tests, per size (ratio: parabench busbw / nccl-tests busbw;",
             "# 't': by time, nccl-tests us / parabench us, where busbw is 0 at one rank)"]
    parts, findings = [], []
    for collective, nt_path in pairs:
        nt_rows, bad, facts = read(nt_path)
        if not nt_rows:
            raise ValueError(f"no result row in {os.path.basename(nt_path)}")
        pb = parabench_rows(pb_csv, collective)
        if not pb:
            raise ValueError(f"no {collective} row in {os.path.basename(pb_csv)}")
        t, last = table(collective, nt_rows, pb)
        lines += [""] + t
        if bad:
            lines.append(f"# {len(bad)} malformed lines of {os.path.basename(nt_path)} left out (line {bad[0][0]})")
        if last is None:
            raise ValueError(f"{collective}: no size measured by both")
        size, q, how = last
        parts.append(f"{collective} {q:.2f}{' by time' if how else ''} of nccl-tests at {human(size)}")
        if abs(q - 1) > WITHIN:
            findings.append(collective)
    with open(out_txt, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "parabench vs nccl-tests: " + ", ".join(parts), findings
