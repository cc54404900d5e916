#!/usr/bin/env python3
"""The test cases behind each class of docs/reliability.md, counted from the tests
themselves (recorded as docs/measured/reliability-cases.txt by tools/dev/record.sh,
so that the page quotes counts the tests really have). What counts as one case:
a row of the bad-input table tests/bad_input (in the named sections), a cmocka
test of a unit test (the named functions, or all of a file), and a check of an
integration test (a line calling expect_rc, expect_in, pass, or the test's own
check helpers; a check inside a loop counts once), or of a Python test run by
one (a call to its check function, an assert)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# class -> sources: ("table", section substring), ("unit", file, [functions] or None),
# ("script", file): every check of an integration (or Python) test.
CLASSES = [
    ("exit codes", [("script", "tests/integration/test_run_all_exit.sh")]),
    ("numbers", [("table", "numbers through the one parser"), ("table", "the common options"),
                 ("unit", "tests/unit/test_parse.c", None)]),
    ("paths", [("table", "outputs, sweeps, numbers"), ("table", "an output never overwrites an input"),
               ("unit", "tests/unit/test_outpath.c", None)]),
    ("line-oriented input files", [("table", "line-oriented input files"),
                                   ("unit", "tests/unit/test_csv.c", None),
                                   ("unit", "tests/unit/test_thresholds.c", ["line_forms", "odd_input"]),
                                   ("unit", "tests/unit/test_cluster_file.c", ["test_lines"]),
                                   ("unit", "tests/unit/test_placement.c", ["rankmaps"])]),
    ("temporaries", [("script", "tests/integration/test_atomic_file.py"),
                     ("unit", "tests/unit/test_outpath.c", ["atomic_write_cleans_up"])]),
    ("writes agreed", [("script", "tests/integration/test_agreement.sh")]),
    ("signals", [("script", "tests/integration/test_run_all_signals.sh")]),
    ("estimate", [("script", "tests/integration/test_suite_estimate.py"),
                  ("script", "tests/integration/test_run_all_dry_run.sh")]),
    ("flags (untrustworthy figures)", [("script", "tests/integration/test_acceptance.sh"),
                                       ("unit", "tests/unit/test_result_notes.c", None)]),
    ("preconditions", [("script", "tests/integration/test_run_all_launch.sh"),
                       ("table", "run_all.sh's own options")]),
    ("escaping", [("script", "tests/integration/test_escaping.sh"), ("unit", "tests/unit/test_escape.c", None)]),
    ("full disk", [("script", "tests/integration/test_full_disk.sh")]),
    ("acceptance inputs", [("table", "acceptance: untrustworthy results")]),
    ("run records (issue 53)", [("script", "tests/integration/test_run_records.sh")]),
]

CHECK_SH = re.compile(r"(^|[;&|]|then|else|do)\s*(expect_rc|expect_in|pass)\s")
CHECK_PY = re.compile(r"^\s*(check\(|assert\b|self\.assert\w*\()")


def table_rows(section):
    rows, inside = 0, False
    for line in open(os.path.join(ROOT, "tests", "bad_input")):
        if line.startswith("# ----"):
            inside = section in line
        elif inside and line.strip() and not line.startswith("#"):
            rows += 1
    return rows


def unit_tests(path, functions):
    text = open(os.path.join(ROOT, path)).read()
    listed = re.findall(r"cmocka_unit_test(?:_setup_teardown)?\((\w+)", text)
    return len([f for f in listed if functions is None or f in functions])


def script_checks(path):
    """Check lines outside the test's own functions, plus, for each call of one of
    its functions, the checks that call makes: the check lines in that function's
    body and, in turn, in the functions it calls."""
    lines = open(os.path.join(ROOT, path)).read().splitlines()
    if path.endswith(".py"):
        return sum(1 for line in lines if CHECK_PY.search(line))
    bodies, top, name = {}, [], None
    for line in lines:
        m = re.match(r"(\w+)\(\)\s*\{", line)
        if m:
            name = m.group(1)
            bodies[name] = [line]
            if line.rstrip().endswith("}"):  # a one-line function: its body ends here
                name = None
        elif name and line.startswith("}"):
            name = None
        elif name:
            bodies[name].append(line)
        else:
            top.append(line)

    def calls(line, f):
        return re.search(r"(^|[;&|(]|then|else|do)\s*" + f + r"(\s|$)", line)

    def checks(body, seen):
        """The checks of these lines, a function's calls included (a recursive call counts once)."""
        n = 0
        for line in body:
            n += bool(CHECK_SH.search(line))
            for f, fbody in bodies.items():
                if f not in seen and calls(line, f):
                    n += checks(fbody, seen | {f})
        return n

    return checks(top, frozenset())


def count(source):
    kind = source[0]
    if kind == "table":
        return table_rows(source[1])
    if kind == "unit":
        return unit_tests(source[1], source[2])
    return script_checks(source[1])


def main():
    total = 0
    for name, sources in CLASSES:
        parts = [(s, count(s)) for s in sources]
        n = sum(c for _, c in parts)
        total += n
        detail = "; ".join(f"{c} {s[0]} {'rows of ' + repr(s[1]) if s[0] == 'table' else os.path.basename(s[1])}"
                           + (f" ({', '.join(s[2])})" if s[0] == "unit" and s[2] else "") for s, c in parts)
        print(f"{name}: {n} cases ({detail})")
    print(f"bad-input table: {table_rows('')} rows in all")
    print(f"all classes: {total} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
