#!/usr/bin/env python3
"""The naming rule of common/ (docs/ARCHITECTURE.md), checked by `make lint`.

A header x.h exports functions and types named pb_x or pb_x_*, so that a name
tells which file declares it. Upper-case constants (enum values, macros) are
vocabulary shared across modules (PB_OK, PB_FLOAT32) and are not checked.

usage: check-names.py [ROOT]   (ROOT: the repository, default: this one)
exit 0 when every exported name follows the rule, 1 with one line per breach.
"""
import glob
import os
import re
import sys

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# A function declared or defined at file scope: `... pb_name(` outside braces.
FUNCTION = re.compile(r"\b(pb_[a-z0-9_]+)\s*\(")
# A type: `typedef ... pb_name;`, `} pb_name;` or `typedef ret (*pb_name)(`.
TYPEDEF = re.compile(r"\btypedef\b[^;]*?\b(pb_[a-z0-9_]+)\s*[;\)\[]", re.S)
EXTERN_C = re.compile(r'\bextern\s*"C"\s*\{')
STRUCT_END = re.compile(r"\}\s*(pb_[a-z0-9_]+)\s*;")


def file_scope(text):
    """The text outside braces and outside preprocessor lines (with continuations)."""
    text = COMMENT.sub(" ", text)
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    # `extern "C" {` (C++ linkage for a header nvcc reads too) opens no scope:
    # what it wraps is at file scope and exported like the rest.
    text = EXTERN_C.sub("\0", text)
    out, opened = [], []
    for ch in text:
        if ch in "{\0":
            opened.append(ch)
            continue
        if ch == "}":
            if opened and opened.pop() == "\0":
                continue
            if "{" not in opened:
                out.append(ch)
            continue
        if "{" not in opened:
            out.append(ch)
    return "".join(out)


def exported(text):
    scope = file_scope(text)
    names = set()
    for stmt in re.split(r"[;}]", scope):
        if re.search(r"\btypedef\b", stmt):
            continue
        m = FUNCTION.search(stmt)
        if m:
            names.add(m.group(1))
    plain = COMMENT.sub(" ", text)
    names.update(TYPEDEF.findall(plain))
    names.update(STRUCT_END.findall(plain))
    return names


def breaches(root):
    out = []
    for header in sorted(glob.glob(os.path.join(root, "common", "*", "*.h"))):
        module = os.path.basename(header)[:-2]
        with open(header, encoding="utf-8") as f:
            names = exported(f.read())
        rel = os.path.relpath(header, root)
        for name in sorted(names):
            if name != f"pb_{module}" and not name.startswith(f"pb_{module}_"):
                out.append(f"{rel}: exports {name}, not pb_{module} or pb_{module}_*")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = breaches(root)
    for line in found:
        print(f"check-names: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
