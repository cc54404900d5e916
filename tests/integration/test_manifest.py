"""suite/manifest.py is the one list of the suite's steps: every step's program
is built, every step has a page and a test that name it, no other file
holds a list of steps, and suite/ and scripts/ name no step (they find a
step's output by its role). Run by test_manifest.sh with the build's bin directory.

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


# One name per step: suite/ (outside the manifest) and scripts/ find a step's output by its role
# (manifest.by_role, manifest.output), never by its name, quoted or as an output file's name.
NAMED_BY_ROLE = ("suite/", "scripts/")
# Not tools/dev/: development scripts, not the suite's readers of a run; reproduce-runs.sh, in shell,
# reads repro_dp's files of many runs and would need Python to ask the manifest for a role.
# Step names that are ordinary words too (a logger's label, an option, an anchor): matched only as a
# quoted whole string, which is how a step name is compared or looked up.
WORDS = {"report", "acceptance", "calibrate"}
# (file, name): the quoted word means something that is not the step there (its output files stay
# found). Keep it short.
NOT_THE_STEP = {
    ("scripts/compare-osu-table.py", "coll_sweep"),  # the binary whose figures are set beside OSU's
    ("scripts/compare-osu-table.py", "p2p_sweep"),   # likewise
    ("scripts/report.py", "p2p_matrix"),  # the figure plots/p2p_matrix.gp draws (FIGURES)
    ("scripts/report.py", "plan_fit"),    # the figure plots/plan_fit.gp draws (FIGURES)
    ("scripts/report.py", "report"),      # the reader results_csv names in its warnings
    ("scripts/report.py", "acceptance"),  # the page's section anchor, id='acceptance'
}


def name_pattern(path, name):
    """Where NAME is a step name in the file PATH: quoted whole, or an output file's name."""
    quoted = rf"""(["']){re.escape(name)}\1"""
    as_file = rf"(?<![\w-]){re.escape(name)}(\.csv|\.json|-)"
    if name in WORDS:
        return None if (path, name) in NOT_THE_STEP else re.compile(quoted)
    return re.compile(as_file if (path, name) in NOT_THE_STEP else f"{quoted}|{as_file}")


def names_outside(path, text, names):
    """[file:line: ...] for every step name in TEXT (the file PATH) that is not allowed there."""
    found, role = [], {s.name: s.role for s in manifest.STEPS}
    for name in names:
        pattern = name_pattern(path, name)
        for i, line in enumerate(text.splitlines(), 1):
            if pattern and pattern.search(line):
                found.append(f"{path}:{i}: names the step {name!r}; find it by its role "
                             f"({role[name]!r}: manifest.by_role, manifest.output)")
    return found


def mentions(path, name):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f.read()) is not None


def source_files():
    """The tree's files: git's list, or where the tree is not a checkout (a scratch copy: tests/mutate.py)
    every file outside build folders."""
    git = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True)
    if git.returncode == 0 and git.stdout.strip():
        return [p for p in git.stdout.split("\n") if p]
    found = []
    for d, subdirs, files in os.walk(ROOT):
        subdirs[:] = [s for s in subdirs if not s.startswith((".", "build"))]
        found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return sorted(found)


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
    tracked = source_files()
    for path in tracked:
        full = os.path.join(ROOT, path)
        if not path or path.startswith(ALLOWED) or path == "README.md" or not os.path.isfile(full):
            continue
        with open(full, errors="replace") as f:
            found = first_list(f.read().splitlines(), pattern)
        if found:
            bad.append(f"{path}:{found[0]}: a list of steps ({', '.join(found[1])}); declare it in suite/manifest.py")
    names = [s.name for s in manifest.STEPS]
    for path in tracked:
        if path.startswith(NAMED_BY_ROLE) and path != "suite/manifest.py" and os.path.isfile(os.path.join(ROOT, path)):
            with open(os.path.join(ROOT, path), errors="replace") as f:
                bad += names_outside(path, f.read(), names)
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
    if sys.argv[1:2] == ["--scan-names"]:  # PATH FILE: the step names FILE holds, read as if it were PATH
        with open(sys.argv[3]) as f:
            found = names_outside(sys.argv[2], f.read(), [s.name for s in manifest.STEPS])
        print("\n".join(found) or "no step name")
        sys.exit(1 if found else 0)
    sys.exit(main(sys.argv[1]))
