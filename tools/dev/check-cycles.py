#!/usr/bin/env python3
"""No cycles between the source files of common/ (docs/ARCHITECTURE.md), checked by `make lint`.

File a uses file b when a names a function or variable that b defines (a
call, or a pointer put in a table). Two files that use each other, or any
longer loop of uses, cannot be read, tested or replaced one at a time: the
shared code belongs in one of them, or in a small file of its own that both
use. check-layers.py keeps the layers in order; this keeps the files inside
a layer in order too.

The graph is read from the sources, so no build is needed: a definition is a
non-static pb_* function body or initialised variable at file scope (inside
`extern "C"` too), a use any other pb_* name outside comments and strings,
in the file or in the macros and inline functions of the headers it
includes (PB_CHECK's pb_error_fail_at is a use of error.c). Names pasted by
macros (##) are not seen.

usage: check-cycles.py [ROOT]   (ROOT: the repository, default: this one)
exit 0 when no file reaches itself, 1 with one line per cycle.
"""
import glob
import os
import re
import sys

# Comments become a space and strings empty, in one pass, so a quote inside a
# comment or a comment marker inside a string is read as what it is.
LEXEMES = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
NAME = re.compile(r"\bpb_[a-z0-9_]+\b")
EXTERN_C = re.compile(r'\bextern\s*"C?"\s*\{')  # "C" or, in plain text, ""
FIRST_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
ASSIGNED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*=")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MACRO = re.compile(r"^\s*#\s*define\b(?:[^\n]*\\\n)*[^\n]*", re.M)


def plain(text):
    return LEXEMES.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


def top_level(text):
    """Statements at file scope, each with a flag: it ends in a brace block."""
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    text = EXTERN_C.sub("\0", text)  # C++ linkage for nvcc: no scope of its own
    stmts, cur, opened = [], [], []
    for ch in text:
        if ch in "{\0":
            if ch == "{" and "{" not in opened:
                stmts.append(("".join(cur), True))
                cur = []
            opened.append(ch)
        elif ch == "}":
            if opened:
                opened.pop()
        elif "{" in opened:
            continue
        elif ch == ";":
            stmts.append(("".join(cur), False))
            cur = []
        else:
            cur.append(ch)
    return stmts


def definitions(text):
    """The pb_* names the file defines: (exported, static)."""
    names, local = set(), set()
    for stmt, block in top_level(text):
        if re.search(r"\btypedef\b", stmt):
            continue
        if "=" in stmt:
            m = ASSIGNED.search(stmt)
        elif block:
            m = FIRST_CALL.search(stmt)
        else:
            continue
        if m and m.group(1).startswith("pb_"):
            (local if re.search(r"\bstatic\b", stmt) else names).add(m.group(1))
    return names, local


def bodies(text):
    """What a header's macros and brace blocks (inline functions) name: the
    uses it hands to every file that includes it. Its declarations are not
    uses: a header may declare the functions of several files."""
    names = set()
    for m in MACRO.finditer(text):
        names.update(NAME.findall(m.group(0)))
    depth, cur = 0, []
    for ch in EXTERN_C.sub(" ", text):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif depth:
            cur.append(ch)
    names.update(NAME.findall("".join(cur)))
    return names


def included(rel, texts, root, seen):
    """The headers of common/ that rel includes, directly or through others."""
    for target in INCLUDE.findall(texts[rel]):
        h = os.path.join("common", target)
        if h in seen or not os.path.isfile(os.path.join(root, h)):
            continue
        seen.add(h)
        if h not in texts:
            with open(os.path.join(root, h), encoding="utf-8") as f:
                texts[h] = f.read()
        included(h, texts, root, seen)
    return seen


def graph(root):
    """{file: {used file: [names]}} over the .c and .cu files of common/."""
    files = sorted(glob.glob(os.path.join(root, "common", "*", "*.c")) +
                   glob.glob(os.path.join(root, "common", "*", "*.cu")))
    raw, texts, defined_in, static = {}, {}, {}, {}
    for path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            raw[rel] = f.read()
        texts[rel] = plain(raw[rel])
        exported, static[rel] = definitions(texts[rel])
        for name in exported:
            defined_in.setdefault(name, set()).add(rel)
    headers = {}
    uses = {}
    for rel in list(texts):
        names = set(NAME.findall(texts[rel]))
        for h in included(rel, raw, root, set()):
            if h not in headers:
                headers[h] = bodies(plain(raw[h]))
            names |= headers[h]
        edges = uses.setdefault(rel, {})
        for name in sorted(names - static[rel]):
            for other in defined_in.get(name, ()):
                if other != rel:
                    edges.setdefault(other, []).append(name)
    return uses


def components(uses):
    """Strongly connected components (Tarjan), each sorted, in file order."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(uses[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(uses):
        if v not in index:
            visit(v)
    return sorted(out)


def cycle_in(comp, uses):
    """One loop through comp's first file, as [(file, names it uses of the next)]."""
    start, members = comp[0], set(comp)
    path, seen = [start], {start}

    def walk(v):
        for w in sorted(uses[v]):
            if w == start and len(path) > 1:
                return True
            if w in members and w not in seen:
                path.append(w)
                seen.add(w)
                if walk(w):
                    return True
                path.pop()
        return False

    walk(start)
    return [(v, uses[v][path[(i + 1) % len(path)]]) for i, v in enumerate(path)]


def breaches(root):
    uses = graph(root)
    out = []
    for comp in components(uses):
        if len(comp) < 2:
            continue
        loop = cycle_in(comp, uses)
        steps = " -> ".join(f"{f} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})" for f, names in loop)
        out.append(f"{steps} -> {loop[0][0]}: files that use each other; move what they share into one of them "
                   f"or a file of its own")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = breaches(root)
    for line in found:
        print(f"check-cycles: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
