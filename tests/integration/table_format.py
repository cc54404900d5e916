#!/usr/bin/env python3
"""The benchmarks' printed tables look as the docs show them.

usage: table_format.py OUTPUT MARKDOWN...

A table is a title line and a units line (both starting with `#`, the units
all in parentheses), then rows. The docs' fenced examples give, per title,
its units line and example rows. Every table OUTPUT prints must have a title
the docs show, the same units line, and rows of the same shape as the docs'
rows: each value ending in the same column (values are right-aligned in
fixed widths) with the same number of decimals. So a column's width or
precision changed in the code, and not in the docs, fails here.
Exit: 0 every table matched, 1 a mismatch, 2 usage."""
import re
import sys

UNITS = re.compile(r"^#(\s+\([^()]*\))+\s*$")


def is_units(line):
    return bool(UNITS.match(line))


def shape(row):
    """(end column, decimals) of each value: "-" and words have no decimals."""
    out = []
    for m in re.finditer(r"\S+", row):
        tok = m.group(0)
        dec = len(tok) - tok.index(".") - 1 if re.fullmatch(r"-?\d+\.\d+", tok) else 0
        out.append((m.end(), dec))
    return out


def doc_tables(paths):
    """title -> [(units line or None, [rows])], from the fenced blocks of the docs."""
    tables = {}
    for path in paths:
        fenced, lines = False, []
        for line in open(path, encoding="utf-8"):
            line = line.rstrip("\n")
            if line.startswith("```"):
                if fenced:
                    for title, units, rows in tables_in(lines):
                        tables.setdefault(title, []).append((units, rows))
                fenced, lines = not fenced, []
            elif fenced:
                lines.append(line)
    return tables


def tables_in(lines):
    """(title, units, rows) of each table in a block: a title is the `#` line
    above a units line; a doc may leave the units out (title right above rows)."""
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("#") or i + 1 >= len(lines):
            continue
        nxt = lines[i + 1]
        if is_units(nxt):
            units, j = nxt.rstrip(), i + 2
        elif nxt and not nxt.startswith(("#", "$")) and len(shape(nxt)) >= 4 and len(line.split()) >= 5:
            units, j = None, i + 1
        else:
            continue
        rows = []
        while j < len(lines) and not lines[j].startswith("$"):
            if not lines[j].startswith("#") and lines[j].strip():
                rows.append(lines[j])
            elif rows or is_units(lines[j]):
                break
            j += 1
        if rows:
            out.append((line.rstrip(), units, rows))
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    docs = doc_tables(argv[2:])
    lines = [l.rstrip("\n") for l in open(argv[1], encoding="utf-8", errors="replace")]
    problems, seen, current = [], 0, None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and line.startswith("#") and is_units(lines[i + 1]):
            title = line.rstrip()
            if title not in docs:
                problems.append(f"line {i + 1}: a table no doc shows: {title!r}")
                current = None
                continue
            seen += 1
            current = docs[title]
            for units, _ in current:
                if units is not None and units != lines[i + 1].rstrip():
                    problems.append(f"line {i + 2}: units {lines[i + 1].rstrip()!r}, the docs {units!r}")
        elif line and not line.startswith("#") and current is not None:
            for _, rows in current:
                want = shape(rows[0])
                if shape(line) != want:
                    problems.append(f"line {i + 1}: {line!r} has the shape (end column, decimals) "
                                    f"{shape(line)}, the docs' {rows[0]!r} {want}")
    if not seen and not problems:
        problems.append("no table found")
    for p in problems:
        print(f"table_format: {argv[1]}: {p}")
    if not problems:
        print(f"table_format: {argv[1]}: {seen} tables as the docs show them")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
