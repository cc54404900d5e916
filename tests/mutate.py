#!/usr/bin/env python3
"""`make mutate`: apply each mutation of tests/mutations.txt to a scratch copy
of the tree, build it, run only the tests named for it, and fail if any
mutation survives (every named test passes) or no longer applies.

A mutation is found by pattern, never by line number: `find` (a literal; \\n
and \\t are escapes) or `find-re` (a Python regex) must match exactly once in
its file, so the list survives refactoring and says when it no longer fits.
Tests: tests/integration/test_X.sh scripts and tests/unit/test_X binaries
(by name). See dev/mutations.md.

usage: tests/mutate.py [--list FILE] [--only NAME,...] [--keep]
Exit: 0 every mutation killed, 1 one survived or failed to apply/build,
2 usage (a malformed list), 3 environment (the unmutated tree fails)."""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = ("name", "file", "find", "find-re", "replace", "tests", "why")


def die(code, msg):
    print(f"mutate: {msg}", file=sys.stderr)
    sys.exit(code)


def parse(path):
    """Stanzas of 'key: value' lines separated by blank lines; '#' comments."""
    muts, cur = [], {}
    with open(path) as f:
        for n, line in enumerate(f.read().splitlines() + [""], 1):
            if line.startswith("#"):
                continue
            if not line.strip():
                if cur:
                    muts.append(cur)
                    cur = {}
                continue
            key, sep, val = line.partition(":")
            if not sep or key not in KEYS:
                die(2, f"{path}:{n}: expected 'KEY: value' with KEY one of {', '.join(KEYS)}")
            cur[key] = val[1:] if val.startswith(" ") else val
            cur.setdefault("line", n)
    for m in muts:
        missing = [k for k in ("name", "file", "replace", "tests") if k not in m]
        if missing or ("find" in m) == ("find-re" in m):
            die(2, f"{path}:{m['line']}: mutation needs name, file, tests, replace and one of find/find-re")
    names = [m["name"] for m in muts]
    if len(set(names)) != len(names):
        die(2, f"{path}: duplicate mutation names")
    return muts


def unescape(s):
    return s.replace("\\n", "\n").replace("\\t", "\t")


def apply(src, m):
    """The mutated text, or an error saying how the pattern fails to match once."""
    if "find" in m:
        pat = unescape(m["find"])
        n = src.count(pat)
        return (src.replace(pat, unescape(m["replace"])), None) if n == 1 else (None, f"pattern matches {n} times")
    rx = re.compile(m["find-re"], re.M)
    n = len(rx.findall(src))
    return (rx.sub(unescape(m["replace"]), src), None) if n == 1 else (None, f"regex matches {n} times")


def kill_session(sid):
    """SIGKILL every process of session sid: the command's process group, and the
    groups its children made (timeout(1) puts its command in a group of its own,
    which killpg misses: a hung test's `timeout ... mpirun` outlived it, holding
    the emulated cluster's lock, and every later cluster test timed out)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[3]) == sid:  # state ppid pgrp session
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def run(cmd, cwd, log, timeout=900, env=None):
    """Exit status of cmd, output to log; 124 past timeout. The command runs in
    its own session, and a timeout ends the whole session: a hung test's
    mpirun and ranks do not outlive it."""
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(p.pid)
            p.wait()
            return 124
        finally:
            if p.returncode is None:  # interrupted (SIGTERM, Ctrl-C): take the command's session along
                kill_session(p.pid)


def build(tree, tests, log):
    units = [f"build/tests/{t}" for t in tests if not t.endswith(".sh")]
    return run(["make", "-j2", "CUDA=0", "BUILD=build", "all"] + units, tree, log)


def run_test(tree, t, log, timeout=900):
    # CUDA=0: a test that runs run_all.sh has it check the build with these
    # flags, rather than rebuild the folder for CUDA where nvcc is installed.
    env = dict(os.environ, BUILD="build", CUDA="0")
    env.pop("CI", None)  # a skip is reported as such below, not turned into a failure
    if t.endswith(".sh"):
        cmd, cwd = ["bash", t], os.path.join(tree, "tests", "integration")
    else:
        cmd, cwd = [os.path.join(tree, "build", "tests", t)], tree
    return run(cmd, cwd, log, timeout, env)


def tree_files():
    """The working tree as it is (tracked and untracked, not ignored): build outputs stay behind."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    return [f for f in files if f and os.path.isfile(os.path.join(ROOT, f))]


def copy_tree(tree):
    for f in tree_files():
        os.makedirs(os.path.dirname(os.path.join(tree, f)) or tree, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(tree, f))


def on_sigterm(*_):
    sys.exit(143)  # unwinds through run()'s cleanup, which ends the running test's group


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    # No bytecode in the scratch copy: a restored .py of the same size, rewritten within the
    # same second as its mutant, could otherwise run the mutant's cached .pyc (tests inherit this).
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", default=os.path.join(ROOT, "tests", "mutations.txt"))
    ap.add_argument("--only", help="comma-separated mutation names")
    ap.add_argument("--keep", action="store_true", help="keep the scratch tree and logs")
    a = ap.parse_args()
    muts = parse(a.list)
    if a.only:
        want = a.only.split(",")
        unknown = [w for w in want if w not in {m["name"] for m in muts}]
        if unknown:
            die(2, f"--only: no mutation named {unknown}")
        muts = [m for m in muts if m["name"] in want]
    t0 = time.time()
    scratch = tempfile.mkdtemp(prefix="parabench-mutate.")
    tree, logs = os.path.join(scratch, "tree"), os.path.join(scratch, "logs")
    os.makedirs(logs)
    copy_tree(tree)
    print(f"mutate: {len(muts)} mutations; scratch copy in {scratch}", flush=True)

    # Every pattern first: a stale list fails fast, before any build.
    stale = []
    for m in muts:
        path = os.path.join(tree, m["file"])
        if not os.path.isfile(path):
            stale.append(f"{m['name']}: no file {m['file']}")
            continue
        _, err = apply(open(path).read(), m)
        if err:
            stale.append(f"{m['name']}: {m['file']}: {err}")
    for s in stale:
        print(f"STALE  {s}", flush=True)

    # The unmutated tree must pass every named test, or a "kill" means nothing.
    tests = sorted({t for m in muts for t in m["tests"].split()})
    if build(tree, tests, os.path.join(logs, "baseline-build.log")) != 0:
        die(3, f"the unmutated tree does not build; see {logs}/baseline-build.log")
    for t in tests:
        rc = run_test(tree, t, os.path.join(logs, f"baseline-{t}.log"))
        if rc != 0:
            die(3, f"{t} fails on the unmutated tree (exit {rc}); see {logs}/baseline-{t}.log")
    print(f"mutate: baseline built and {len(tests)} tests pass ({time.time() - t0:.0f} s)", flush=True)

    killed, bad = 0, list(stale)
    for m in muts:
        if any(s.startswith(m["name"] + ":") for s in stale):
            continue
        path = os.path.join(tree, m["file"])
        orig = open(path).read()
        mutated, _ = apply(orig, m)
        start = time.time()
        try:
            with open(path, "w") as f:
                f.write(mutated)
            if build(tree, m["tests"].split(), os.path.join(logs, f"{m['name']}-build.log")) != 0:
                bad.append(f"{m['name']}: does not build (a mutation must compile to mean anything)")
                print(f"BUILD  {m['name']}", flush=True)
                continue
            by = None
            for t in m["tests"].split():
                rc = run_test(tree, t, os.path.join(logs, f"{m['name']}-{t}.log"))
                if rc == 77:
                    bad.append(f"{m['name']}: {t} skipped, so it cannot judge")
                    break
                if rc != 0:
                    by = f"{t} (exit {rc})"
                    break
            if by:
                killed += 1
                print(f"killed {m['name']}: by {by}, {time.time() - start:.0f} s", flush=True)
            elif not any(b.startswith(m["name"] + ":") for b in bad):
                bad.append(f"{m['name']}: SURVIVED {m['tests']}")
                print(f"SURVIVED {m['name']}: {m['tests']} all pass", flush=True)
        finally:
            with open(path, "w") as f:
                f.write(orig)
    for b in bad:
        print(f"mutate: {b}", file=sys.stderr)
    print(f"mutate: {len(muts)} mutations, {killed} killed, {len(bad)} not ({time.time() - t0:.0f} s)")
    if a.keep or bad:
        print(f"mutate: logs in {logs}")
    else:
        shutil.rmtree(scratch)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
