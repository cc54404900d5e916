"""suite/manifest.py is the one list of the suite's steps: every step's program
is built, every step has a page and a test that name it, and no other file
holds a list of steps. Run by test_manifest.sh with the build's bin directory.

A step list is three or more distinct step names within LIST_WINDOW lines.
Only the names that are the suite's own are counted: a step named like the
program it runs (coll_sweep, tp_layer, acceptance) is the program's name too,
which every script and source using that program mentions. The places allowed
to list steps: suite/ (the manifest, and the driver that reads it), docs/ and
README.md (the pages), tests/ (the tests that check the steps)."""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
from suite import manifest  # noqa: E402

ALLOWED = ("suite/", "docs/", "dev/", "tests/", "README.md")  # docs and records quote steps
LIST_WINDOW = 8


def programs():
    return {os.path.basename(p)[:-2] for p in glob.glob(os.path.join(ROOT, "benchmarks", "*.c")) +
            glob.glob(os.path.join(ROOT, "tools", "*.c"))}


def own_names():
    return sorted({s.name for s in manifest.STEPS} - programs())


def names_pattern(names):
    return re.compile(r"(?<![\w-])(" + "|".join(sorted(names, key=len, reverse=True)) + r")(?![\w-])")


def first_list(lines, pattern):
    """(line number, names) of the first window holding three step names, or None."""
    hits = [{m.group(1) for m in pattern.finditer(line)} for line in lines]
    for i in range(len(lines)):
        found = set().union(*hits[i:i + LIST_WINDOW])
        if len(found) >= 3:
            return i + 1, sorted(found)
    return None


def mentions(path, name):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f.read()) is not None


def main(bin_dir):
    bad = []
    for s in manifest.STEPS:
        program = os.path.join(ROOT, s.binary) if s.kind == manifest.SCRIPT else os.path.join(bin_dir, s.binary)
        if not os.access(program, os.X_OK if s.kind != manifest.SCRIPT else os.R_OK):
            bad.append(f"{s.name}: its program {program} is not built")
        for what, path in (("doc", s.doc), ("test", s.test)):
            if not os.path.exists(os.path.join(ROOT, path)):
                bad.append(f"{s.name}: its {what} {path} does not exist")
            elif not mentions(path, s.name):
                bad.append(f"{s.name}: its {what} {path} does not name it")
    pattern = names_pattern(own_names())
    tracked = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True).stdout.split("\n")
    for path in tracked:
        full = os.path.join(ROOT, path)
        if not path or path.startswith(ALLOWED) or path == "README.md" or not os.path.isfile(full):
            continue
        with open(full, errors="replace") as f:
            found = first_list(f.read().splitlines(), pattern)
        if found:
            bad.append(f"{path}:{found[0]}: a list of steps ({', '.join(found[1])}); declare it in suite/manifest.py")
    for line in bad:
        print(line)
    print(f"{len(manifest.STEPS)} steps, {len(tracked)} files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scan"]:  # FILE: the lists a file holds (the test's other side)
        with open(sys.argv[2]) as f:
            found = first_list(f.read().splitlines(), names_pattern(own_names()))
        print(found or "no list")
        sys.exit(1 if found else 0)
    sys.exit(main(sys.argv[1]))
