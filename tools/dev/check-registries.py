#!/usr/bin/env python3
"""Backends and compute engines are chosen through their tables, checked by `make lint`.

The backend table (common/backend/backend.c) and the engine table
(common/compute/compute.c) are the only places that compare a backend's or
an engine's name: everything else (option checks, help, defaults) asks them
(docs/ARCHITECTURE.md, "Adding things"). This refuses, in any other C source
of common/, benchmarks/ and tools/, a string comparison (strcmp, strncmp,
strcasecmp) that names one of the tables' names as a literal, or that compares
a backend's or an engine's name (an argument naming be, backend, eng or engine).

usage: check-registries.py [ROOT]   (ROOT: the repository, default: this one)
exit 0 when no comparison is found, 1 with one line per comparison otherwise.
"""
import os
import re
import sys

REGISTRIES = ("common/backend/backend.c", "common/compute/compute.c")
ROW_NAME = re.compile(r'^\s*\{"([a-z0-9_-]+)",', re.M)  # a table row: {"name", (only rows begin so)
COMPARE = re.compile(r"\bstr(?:n?case|n)?cmp\s*\(")
ABOUT_A_NAME = re.compile(r"\b(be|backend|eng|engine)\b")
SOURCE = re.compile(r"\.(c|h|cu)$")


def registry_names(root):
    names = set()
    for rel in REGISTRIES:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            names.update(ROW_NAME.findall(f.read()))
    return names


def arguments(text, start):
    """The text between the parenthesis before `start` and its match."""
    depth, i = 1, start
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


def breaches(root):
    names = registry_names(root)
    literal = re.compile(r'"(%s)"' % "|".join(map(re.escape, sorted(names)))) if names else None
    out = []
    for top in ("common", "benchmarks", "tools"):
        for folder, _, files in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(folder, name), root)
                if not SOURCE.search(name) or rel in REGISTRIES:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8") as f:
                    text = f.read()
                for m in COMPARE.finditer(text):
                    args = arguments(text, m.end())
                    line = text.count("\n", 0, m.start()) + 1
                    hit = literal.search(args) if literal else None
                    if hit:
                        out.append(f'{rel}:{line}: compares with "{hit.group(1)}", a name of the backend or engine '
                                   f'table; ask the table ({", ".join(REGISTRIES)})')
                    elif ABOUT_A_NAME.search(args):
                        out.append(f"{rel}:{line}: compares a backend's or engine's name ({args.strip()}); ask the "
                                   f'table ({", ".join(REGISTRIES)})')
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = breaches(root)
    for line in found:
        print(f"check-registries: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
