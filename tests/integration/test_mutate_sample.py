#!/usr/bin/env python3
"""Checks of the mutant generator of tests/mutate_sample.py (run by
test_mutate_sample.sh): reproducible samples, one compiling mutant per
operator class, comments and strings never mutated, skipped lines skipped,
and equivalent mutants out of the score. Exit 1 if a check fails."""
import os
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mutate_sample as S  # noqa: E402

FAILS = 0


def check(cond, what):
    global FAILS
    if not cond:
        FAILS += 1
        print(f"FAIL: {what}")


C_SNIPPET = r'''#include <stdio.h>
#define TWICE(x) ((x) + (x))
/* a + b < 3 && c || 4 */
int f(int a, int b) {
    int unused;
    int s = a + b; // s - 1 > 0 || 7
    const char *msg = "x - 1 && y < 2";
    if (a < b && b > 0) s = s * 2;
    s++;
    fprintf(stderr, "bad %d\n", a + 1);
    return s + msg[0] + TWICE(a) + (int)unused;
}
'''

PY_SNIPPET = '''import sys
# a + 1 < 2 and 3
def f(a, b):
    """a - b > 0 or 1"""
    s = a + b  # s * 2
    if a < b and b > 0:
        s = s - 1
    print("a + 1", file=sys.stderr)
    return s
'''


def sites_of(name, text):
    fn = S.py_sites if name.endswith(".py") else S.c_sites
    return [S.Mutant(name, text, s) for s in fn(name, text)]


def c_compiles(text):
    r = subprocess.run(["cc", "-std=c11", "-fsyntax-only", "-x", "c", "-"], input=text, text=True,
                       capture_output=True)
    return r.returncode == 0


def main():
    # Every operator class on the C snippet, and each mutant of it compiles.
    cs = sites_of("x.c", C_SNIPPET)
    for op in ("arithmetic", "relational", "constant", "logical", "delete"):
        ms = [m for m in cs if m.op == op]
        check(ms, f"C: no {op} site in the snippet")
        for m in ms:
            check(c_compiles(m.apply(C_SNIPPET)), f"C: {op} mutant does not compile: {m.mut_line!r}")
    ps = sites_of("x.py", PY_SNIPPET)
    for op in ("arithmetic", "relational", "constant", "logical", "delete"):
        ms = [m for m in ps if m.op == op]
        check(ms, f"Python: no {op} site in the snippet")
        for m in ms:
            try:
                compile(m.apply(PY_SNIPPET), "x.py", "exec")
            except SyntaxError:
                check(False, f"Python: {op} mutant does not compile: {m.mut_line!r}")

    # Comments, strings, preprocessor, declarations and messages are never mutated.
    c_lines = C_SNIPPET.split("\n")
    for m in cs:
        text = c_lines[m.line - 1]
        check(not text.lstrip().startswith(("#", "/*")), f"C: mutated a preprocessor or comment line: {text!r}")
        check("int unused;" not in text, "C: mutated a declaration without an initializer")
        check("fprintf(stderr" not in text, "C: mutated a message-only line")
        for marker in ("//", '"'):
            if marker in text and m.col is not None:
                check(m.col < text.index(marker), f"C: mutated inside a comment or string: {m.mut_line!r}")
    py_lines = PY_SNIPPET.split("\n")
    for m in ps:
        text = py_lines[m.line - 1]
        check(not text.lstrip().startswith(("#", '"""', "import")), f"Python: mutated {text!r}")
        check("file=sys.stderr" not in text, "Python: mutated a message-only line")
        if "#" in text and m.col is not None:
            check(m.col < text.index("#"), f"Python: mutated inside a comment: {m.mut_line!r}")

    # PB_CHECK(condition, status, message...): the condition is mutated and the line may be deleted;
    # the message's arguments, on its line and the next, never are.
    chk = "int g(int a, int n) {\n    PB_CHECK(a > 0, PB_ERR_ENV, \"need %d of %d\", a + 1,\n             n - 1);\n    return a;\n}\n"
    ms = sites_of("y.c", chk)
    on2 = [m for m in ms if m.line == 2]
    check(any(m.op == "relational" for m in on2) and not [m for m in ms if m.line == 3],
          f"PB_CHECK: the condition is not a site, or the message's continuation is: {[m.mut_line for m in ms]}")
    check(all(m.col is None or m.col < chk.split("\n")[1].index('"') for m in on2),
          f"PB_CHECK: mutated its message: {[m.mut_line for m in on2 if m.col is not None]}")
    one = sites_of("y.c", "void h(int a) {\n    PB_CHECK(a > 0, PB_ERR_ENV, \"need %d\", a + 1);\n}\n")
    check(any(m.op == "delete" for m in one), "PB_CHECK on one line: no deletion site")

    # An array's element count: the index inside sizeof is never a site (any index has
    # the same size), the divisions and the constant outside it are.
    arr = "int n(int v) {\n    static const int t[] = {1, 2};\n    return (int)(sizeof t / sizeof t[0]) + v * 3;\n}\n"
    consts = [m.mut_line.strip() for m in sites_of("z.c", arr) if m.op == "constant" and m.line == 3]
    check(consts == ["return (int)(sizeof t / sizeof t[0]) + v * 4;"],
          f"sizeof t[0]: constant sites {consts}, expected only the 3")

    # The same seed draws the same sample over the real tree; another seed another.
    sites = S.all_sites()
    check(len(sites) > 1000, f"only {len(sites)} sites in the tree")
    a = [m.key() + (m.line,) for m in S.draw(sites, 7)[:50]]
    b = [m.key() + (m.line,) for m in S.draw(S.all_sites(), 7)[:50]]
    c = [m.key() + (m.line,) for m in S.draw(sites, 8)[:50]]
    check(a == b, "seed 7 twice gives two samples")
    check(a != c, "seeds 7 and 8 give the same sample")
    check(not any(S.GPU_FILE.search(m.file) for m in sites), "a GPU-only file has sites")
    where = {m.file.split("/")[0] for m in sites}
    check(where == {"common", "benchmarks", "tools", "scripts", "suite"}, f"sites drawn from {sorted(where)}")

    # An entry of the equivalents file leaves the score; the others count.
    m1, m2, m3 = [m for m in cs if m.op == "relational"][:1] + [m for m in cs if m.op == "constant"][:2]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(f"# test\nfile: x.c\norig: {m2.orig_line.strip()}\nmutant: {m2.mut_line.strip()}\nwhy: a test\n")
    eq = S.parse_equivalents(f.name)
    os.unlink(f.name)
    check(m2.key() in eq and m1.key() not in eq, "the equivalents file does not key by file and line texts")
    md = [m for m in cs if m.op == "delete"][0]  # a deleted C line, written as the report shows it
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(f"file: x.c\norig: {md.orig_line.strip()}\nmutant: (deleted)\nwhy: a test\n")
    check(md.key() in S.parse_equivalents(f.name), "an equivalent '(deleted)' line does not key a deletion")
    os.unlink(f.name)
    killed, counted, survivors = S.score([(m1, "killed"), (m2, "survived (3 tests)"), (m3, "not covered")], eq)
    check((killed, counted) == (1, 2), f"score {killed}/{counted}, expected 1/2 with one equivalent left out")
    check([m for m, _ in survivors] == [m3], "the survivors are not the uncovered, non-equivalent mutant")
    # A listed equivalent is out of the score whatever its tests say: none of them is run for it.
    ran, run_test_real = [], S.mutate.run_test
    S.mutate.run_test = lambda tree, t, log, timeout: ran.append(t) or 1
    cov = {S.CODE_LINES: {"rc": 0, "seconds": 0, "lines": {m.file: [m.line] for m in (m1, m2)}},
           "test_x": {"rc": 0, "seconds": 1, "lines": {m.file: [m.line] for m in (m1, m2)}}}
    try:
        with tempfile.TemporaryDirectory() as d:
            got = [S.judge(d, d, m, 1, cov, 60, eq) for m in (m2, m1)]
    finally:
        S.mutate.run_test = run_test_real
    check(got == [("not judged (listed equivalent)", "-"), ("killed", "test_x")] and ran == ["test_x"],
          f"judge: {got}, tests run {ran}; expected the equivalent not run, the other killed by test_x")

    # A report row reads back as the same mutant (--rescore marks equivalents without a rerun).
    for m in (m1, [m for m in cs if m.op == "delete"][0]):
        row = S.ROW.match(S.fmt_row(3, m, "survived (2 tests)", "-") + "  (4 s)")
        check(row and S.Row(row).key() == m.key() and S.Row(row).verdict == "survived (2 tests)",
              f"report row does not read back: {S.fmt_row(3, m, 'survived (2 tests)', '-')!r}")

    # A C line only integration tests cover: the binaries they run are rebuilt with the mutant
    # (a build of the object alone left them unmutated, and its mutants "survived").
    calls = []
    run_real = S.mutate.run
    S.mutate.build = lambda tree, tests, log: calls.append(("all", list(tests))) or 0
    S.mutate.run = lambda cmd, cwd, log, **kw: calls.append(("run", cmd)) or 0
    cov = {"test_x.sh": {"rc": 0, "seconds": 3, "lines": {"common/core/parse.c": [7]}},
           "test_u": {"rc": 0, "seconds": 1, "lines": {"common/core/parse.c": [7]}},
           S.CODE_LINES: {"rc": 0, "seconds": 0, "lines": {"common/core/parse.c": [7, 9]}}}
    m = [m for m in cs if m.op == "delete"][0]
    m.file, m.line = "common/core/parse.c", 7
    S.build_mutant("/nonexistent", m, {k: v for k, v in cov.items() if k != "test_u"}, os.devnull)
    check(calls == [("all", ["test_x.sh"])], f"an integration-only line built {calls}, not every binary")
    calls.clear()
    S.build_mutant("/nonexistent", m, cov, os.devnull)
    check(calls == [("all", ["test_u", "test_x.sh"])], f"a line with both kinds of test built {calls}")
    calls.clear()
    m.line = 9
    S.build_mutant("/nonexistent", m, cov, os.devnull)
    check(len(calls) == 1 and calls[0][0] == "run", f"an uncovered line built {calls}, not its object alone")

    # A header's declaration (no code for gcov) is judged by the tests of its source file.
    hcov = {"test_r": {"rc": 0, "seconds": 1, "lines": {"common/core/report.c": [40]}},
            "test_p": {"rc": 0, "seconds": 1, "lines": {"common/core/parse.c": [7]}},
            S.CODE_LINES: {"rc": 0, "seconds": 0, "lines": {"common/core/report.c": [40]}}}
    m.file, m.line = "common/core/report.h", 14
    check(S.covering(hcov, m) == ["test_r"], f"a header's enum line is judged by {S.covering(hcov, m)}, not report.c's tests")
    m.file = "common/core/timing.h"  # a header with no timing.c
    check(S.covering(hcov, m) == [], f"a header without a source of its name took {S.covering(hcov, m)}")

    # The tests run by kills per second: a test mutations.txt names for the mutant's
    # file counts one kill, each kill in the file in the recorded runs one more, and
    # any covering test PRIOR_KILLS; its seconds are at least 1.
    S.KNOWN_KILLERS = {"common/core/parse.c": {"test_slow.sh", "test_named"}}
    S.LINE_KILLERS, S.KILL_HISTORY = {}, {}
    ocov = {"test_fast.sh": {"rc": 0, "seconds": 1, "lines": {"common/core/parse.c": [7]}},
            "test_slow": {"rc": 0, "seconds": 50, "lines": {"common/core/parse.c": [7]}},
            "test_slow.sh": {"rc": 0, "seconds": 40, "lines": {"common/core/parse.c": [7]}},
            "test_named": {"rc": 0, "seconds": 30, "lines": {"common/core/parse.c": [7]}},
            S.CODE_LINES: {"rc": 0, "seconds": 0, "lines": {"common/core/parse.c": [7]}}}
    m.file, m.line = "common/core/parse.c", 7
    m.op, m.orig_line, m.mut_line = "constant", "    int x = 1;", "    int x = 2;"
    got = S.covering(ocov, m)
    check(got == ["test_fast.sh", "test_named", "test_slow.sh", "test_slow"],
          f"covering tests in order {got}: by (kills + {S.PRIOR_KILLS}) per second, a named test as one kill")
    S.KILL_HISTORY = {"common/core/parse.c": {"test_slow": 20, "test_fast.sh": 0}, "common/core/lines.c": {"test_named": 99}}
    got = S.covering(ocov, m)
    check(got == ["test_slow", "test_fast.sh", "test_named", "test_slow.sh"],
          f"covering tests in order {got}: 20 recorded kills in the file put a 50 s test first")
    S.KILL_HISTORY = {}
    # The history: each killed mutant of a record once, a rescore's copy of a row not again.
    with tempfile.TemporaryDirectory() as d:
        row = "M001  common/core/parse.c:7  constant  `int x = 1;` -> `int x = 2;`  killed  test_parse  (3 s)\n"
        with open(os.path.join(d, "mutate-sample-seed3.txt"), "w") as f:
            f.write(row + row + "M002  common/core/parse.c:9  delete  `n++;` -> `(deleted)`  survived (2 tests)  -\n")
        with open(os.path.join(d, "mutate-sample-seed4.txt"), "w") as f:
            f.write(row + "M007  tools/plan.c:5  constant  `a = 1;` -> `a = 0;`  killed (timeout)  test_plan.sh  (60 s)\n")
        got = S.kill_history(d)
        check(got == {"common/core/parse.c": {"test_parse": 2}, "tools/plan.c": {"test_plan.sh": 1}},
              f"the kill history of two records: {got}")
    def routed_first(test, seconds, cases):
        """Each (op, original, mutated, first): whether `test` runs before the others."""
        ocov[test] = {"rc": 0, "seconds": seconds, "lines": {"common/core/parse.c": [7]}}
        for op, orig, mut, first in cases:
            m.op, m.orig_line, m.mut_line = op, orig, mut
            got = S.covering(ocov, m)
            check((got[0] == test) == first,
                  f"`{orig.strip()}` -> `{mut.strip()}`: {test} {'first' if first else 'by its kills per second'} ({got})")
        del ocov[test]

    # A fault only the sanitizers see: the sanitized test runs among the line's own.
    routed_first("test_unit_sanitized.sh", 44, [
        ("delete", "    free(buf);", "", True), ("delete", "    pb_plan_destroy(p);", "", True),
        ("delete", "    n++;", "", False),
        ("relational", "for (int i = 0; i < n; i++)", "for (int i = 0; i <= n; i++)", True),
        ("relational", "for (int i = 0; i < n; i++)", "for (int i = 0; i > n; i++)", False),
        ("relational", "if (i < n)", "if (i <= n)", False)])
    # An out-of-memory path: the fault-injection test runs among the line's own.
    oom = '    if (status == PB_OK && !have) status = pb_fail(PB_ERR_ENV, "validation: out of host memory");'
    routed_first("test_failmalloc.sh", 134, [
        ("delete", '    PB_CHECK(p, PB_ERR_ENV, "out of memory for %s", option);', "", True),
        ("relational", oom, oom.replace("status == PB_OK", "status != PB_OK"), True),
        ("delete", '    PB_CHECK(n > 0, PB_ERR_USAGE, "no layers");', "", False)])
    m.op, m.orig_line, m.mut_line = "constant", "    int x = 1;", "    int x = 2;"
    # A test named for a mutation of that very line comes before the file's others,
    # however slow: the budget may not leave room for it after them.
    S.LINE_KILLERS = {("common/core/parse.c", "int x = 1;"): {"test_slow.sh"}}
    saved, m.orig_line = m.orig_line, "    int x = 1;"
    got = S.covering(ocov, m)
    check(got == ["test_slow.sh", "test_fast.sh", "test_named", "test_slow"],
          f"covering tests in order {got}: the line's own test first, then the rest by kills per second")
    S.KNOWN_KILLERS = S.LINE_KILLERS = S.KILL_HISTORY = None
    m.orig_line = saved
    check("test_parse" in S.known_killers().get("common/core/parse.c", ()),
          "mutations.txt names test_parse for common/core/parse.c")
    lk = S.line_killers()
    check("test_failmalloc.sh" in lk.get(("common/harness/meta.c",
          "int status = bind && cores ? PB_OK : pb_fail(PB_ERR_ENV, \"out of memory for the metadata of %d ranks\", w->size);"), ()),
          "mutations.txt names test_failmalloc.sh for meta.c's out-of-memory line")

    # The killing tests run once more on the unmutated copy, rebuilt; one that fails there
    # (test_recipes.sh once needed git, which the copy lacks) has its kills left uncounted.
    calls.clear()
    S.mutate.run_test = lambda tree, t, log, timeout=900: calls.append(("test", t)) or (1 if t == "test_git.sh" else 0)
    bad = S.failing_unmutated("/nonexistent", os.devnull, {"test_git.sh", "test_u"}, cov | {"test_git.sh": cov["test_x.sh"]},
                              ["test_u"])
    check(bad == {"test_git.sh"}, f"a killer failing unmutated was not found: {bad}")
    check(calls == [("all", ["test_u"]), ("test", "test_git.sh"), ("test", "test_u")],
          f"the copy was not rebuilt before the killers ran: {calls}")
    calls.clear()
    check(S.failing_unmutated("/nonexistent", os.devnull, set(), cov, ["test_u"]) == set() and calls == [],
          f"with no kills, something was built or run: {calls}")

    # A cluster a stopped test left up is taken down before the next test, and only then.
    with tempfile.TemporaryDirectory() as d:
        S.EMU_STATE = os.path.join(d, "state")
        calls.clear()
        S.take_down_cluster("/nonexistent", os.devnull)
        check(calls == [], f"no cluster up, yet the run took one down: {calls}")
        open(S.EMU_STATE, "w").close()
        check(S.cluster_up(), "a cluster's state file is not seen as a cluster up")
        S.take_down_cluster("/nonexistent", os.devnull)
        check(calls == [("run", ["scripts/emulate-cluster.sh", "down"])], f"a cluster left up was not taken down: {calls}")

    # A command past its time limit ends with everything it started, even under timeout(1),
    # which moves its child to a process group of its own.
    with tempfile.TemporaryDirectory() as d:
        pidfile = os.path.join(d, "pid")
        rc = run_real(["bash", "-c", f"timeout 60 sleep 60 & echo $! > {pidfile}; sleep 60"], d,
                      os.path.join(d, "log"), timeout=1)
        pid = int(open(pidfile).read())
        for _ in range(50):  # SIGKILL is delivered at once; the zombie is reaped by init
            if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z":
                break
            time.sleep(0.1)
        alive = os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"
        check(rc == 124 and not alive, f"timeout: exit {rc}, its timeout(1) child {pid} still running: {alive}")

    # A Python mutant's compile check writes no bytecode: seed 5's restored suite/manifest.py
    # (same size, same second as its mutant) kept running the mutant's .pyc, and three tests
    # then failed "unmutated". The source here is restored with the mutant's exact mtime.
    S.mutate.run = run_real
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "mod.py")
        with open(src, "w") as f:
            f.write("X = 2\n")
        stamp = os.stat(src).st_mtime_ns
        ok = S.compiles(d, types.SimpleNamespace(file="mod.py"), [], os.path.join(d, "log"))
        with open(src, "w") as f:
            f.write("X = 1\n")
        os.utime(src, ns=(stamp, stamp))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        got = subprocess.run([sys.executable, "-c", "import mod; print(mod.X)"], cwd=d, env=env,
                             capture_output=True, text=True).stdout.strip()
        check(ok and got == "1", f"compile check: {ok}; the restored source imports as X = {got!r}, not 1")
        with open(src, "w") as f:
            f.write("X = (\n")
        check(not S.compiles(d, types.SimpleNamespace(file="mod.py"), [], os.path.join(d, "log")),
              "a Python mutant with a syntax error compiles")

    # Python coverage of the installed suite (test_install runs it) counts for the
    # checkout's file it is a copy of, and only for an identical copy.
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "suite"))
        os.makedirs(os.path.join(d, "prefix", "share", "parabench", "suite"))
        for where, text in (("suite", "X = 1\n"), ("prefix/share/parabench/suite", "X = 1\n")):
            with open(os.path.join(d, where, "version.py"), "w") as f:
                f.write(text)
        installed = os.path.join(d, "prefix", "share", "parabench", "suite", "version.py")
        got = (S.checkout_path(os.path.join(d, "suite", "version.py"), d), S.checkout_path(installed, d))
        with open(installed, "w") as f:
            f.write("X = 2\n")
        got += (S.checkout_path(installed, d), S.checkout_path(os.path.join(d, "elsewhere.py"), d))
        check(got == ("suite/version.py", "suite/version.py", None, None),
              f"coverage paths to checkout files: {got}, expected the file, its copy, then none for others")

    # Without Python's coverage module every Python mutant would read "not
    # covered": the sampler refuses to start, exit 3, before building anything.
    hide = ("import runpy, sys; sys.modules['coverage'] = None; "
            "sys.argv = ['mutate_sample.py', '--n', '1', '--seed', '1']; "
            f"runpy.run_path({S.__file__!r}, run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=120)
    check(r.returncode == 3 and "coverage module is missing" in r.stderr,
          f"no coverage module: exit {r.returncode}, {r.stderr.strip()[-200:]!r}")

    # Every stanza of tests/mutations.txt still applies exactly once and names tests that exist:
    # code that changed under a stanza would otherwise be noticed only by a `make mutate` run.
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    stanzas = S.mutate.parse(os.path.join(root, "tests", "mutations.txt"))
    for m in stanzas:
        with open(os.path.join(root, m["file"])) as f:
            _, err = S.mutate.apply(f.read(), m)
        check(err is None, f"tests/mutations.txt {m['name']} ({m['file']}): {err}")
        for t in m["tests"].split():
            path = os.path.join(root, "tests", "integration", t) if t.endswith(".sh") else \
                os.path.join(root, "tests", "unit", t + ".c")
            check(os.path.exists(path), f"tests/mutations.txt {m['name']}: no test {t}")
    check(len(stanzas) > 100, f"tests/mutations.txt: only {len(stanzas)} stanzas read")

    if FAILS:
        print(f"test_mutate_sample: {FAILS} checks failed")
        sys.exit(1)
    print("test_mutate_sample: generator checks passed")


if __name__ == "__main__":
    main()
