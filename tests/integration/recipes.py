#!/usr/bin/env python3
"""Apply one recipe of docs/ARCHITECTURE.md to a copy of the tree (test_recipes.sh).

A recipe is the code blocks of the doc that follow a comment
    <!-- recipe KEY FILE new -->                 the block is a new file
    (anything after a "; " is a note: "refs: example" for tools/dev/check-refs.py)
    <!-- recipe KEY FILE before|after "ANCHOR" --> the block goes before or after
                                                   the one line of FILE that starts
                                                   (after blanks) with ANCHOR
A block is fenced as ```c, ```python, ```sh or ```markdown (the language of
FILE), and is inserted as the doc shows it, less the list's indentation; a
new file whose block starts with "#!" is made executable. RENAME (old=new,
comma-separated) is applied to the blocks first.

usage: recipes.py DOC KEY TREE [RENAME]
       recipes.py --count DOC KEY   prints "FILES LINES" as the recipe's prose states them
                                    ("touches N files [and M lines]"; "-": no line count)
"""
import os
import re
import sys

RECIPE = re.compile(r'^( *)<!-- recipe (\S+) (\S+) (new|before|after)(?: "((?:[^"\\]|\\.)*)")?(?:; [^\n]*)? -->\n'
                    r'\1```(?:c|python|sh|markdown)\n(.*?)^\1```\n', re.M | re.S)


def blocks(doc, key):
    for m in RECIPE.finditer(doc):
        indent, k, path, where, anchor, body = m.groups()
        if k != key:
            continue
        lines = [l[len(indent):] if l.startswith(indent) else l.lstrip(" ") for l in body.splitlines(True)]
        anchor = anchor.replace('\\"', '"') if anchor is not None else None
        yield path, where, anchor, "".join(lines)


def apply(doc, key, tree, renames):
    found = 0
    for path, where, anchor, body in blocks(doc, key):
        found += 1
        for old, new in renames:
            body = body.replace(old, new)
        full = f"{tree}/{path}"
        if where == "new":
            open(full, "x").write(body)
            if body.startswith("#!"):
                os.chmod(full, 0o755)
            continue
        text = open(full).read().splitlines(True)
        at = [i for i, l in enumerate(text) if l.strip().startswith(anchor)]
        if len(at) != 1:
            sys.exit(f"recipes.py: {path}: anchor {anchor!r} matches {len(at)} lines, not one")
        i = at[0] + (1 if where == "after" else 0)
        text[i:i] = [body]
        open(full, "w").write("".join(text))
    if not found:
        sys.exit(f"recipes.py: no recipe {key} in the doc")


def stated_count(doc, key):
    """The files and lines the prose before the recipe's first block states."""
    first = next(m for m in RECIPE.finditer(doc) if m.group(2) == key)
    heading = doc.rfind("\n#", 0, first.start())
    m = re.search(r"touches (\d+) files?(?: and (\d+) lines?)?", doc[heading:first.start()])
    if not m:
        sys.exit(f"recipes.py: the doc states no count for {key}")
    return m.group(1), m.group(2) or "-"


def main():
    if sys.argv[1] == "--count":
        doc = open(sys.argv[2]).read()
        print(*stated_count(doc, sys.argv[3]))
        return
    doc, key, tree = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
    renames = [r.split("=", 1) for r in sys.argv[4].split(",")] if len(sys.argv) > 4 and sys.argv[4] else []
    apply(doc, key, tree, renames)


if __name__ == "__main__":
    main()
