#!/usr/bin/env python3
"""`make mutate-sample`: mutants drawn at random, not by hand, as a measure of
the tests (dev/mutations.md, "Sampled mutants"). Not part of `make test`.

1. Sites. Every place in common/, benchmarks/, tools/ (C), scripts/*.py and
   suite/*.py (run_all's driver)
   where one of five operator classes applies: arithmetic operator swap,
   relational boundary/negation, constant change, &&/|| swap, deletion of a
   whole simple statement. Comments, strings, preprocessor lines,
   declarations without an initializer, an index inside sizeof, message-only
   code (notes, usage and error messages) and GPU-only code are never mutated
   (GPU_FILE, skip rules below): no GPU is present, so nothing could judge them.
2. Sample. The sites, sorted, are shuffled with random.Random(--seed); the
   first --n that compile are the sample (a mutant that does not compile is
   listed as such and the next one is drawn), so the sample is uniform over
   compiling sites and the same seed on the same tree gives the same sample.
3. Tests. A gcov build (make COV=1 BUILD=build-cov) runs each unit and
   integration test once and records the lines it executes (Python scripts:
   the `coverage` module, when installed). The map is cached under build-cov/
   keyed by a hash of the sources and tests; this pass is also the baseline,
   as a test that fails or skips there is never used.
4. Verdicts. Each mutant is applied to a scratch copy (tests/mutate.py's
   helpers), rebuilt, and the tests that execute its line run until one
   fails: killed. First run those tests/mutations.txt names for the mutant's
   line (and the sanitized test for a leak or a loop one past the end, the
   fault-injection test for an out-of-memory path), then
   the rest by kills per second (covering()); a test that would not fit
   in what is left of --budget is passed over, and a mutant no test killed
   with some passed over is "survived (budget)". A test that runs past its
   time limit counts as killed (a hang), marked "timeout". No failure:
   survived. A line no test executes: "not covered", which counts as
   survived. Mutants listed in
   tests/mutants-equivalent.txt (by file, original and mutated line text)
   are left out of the score, and their tests are not run.

usage: tests/mutate_sample.py [--n N] [--seed S] [--list-sites] [--keep]
Exit: 0 the run finished, 2 usage, 3 environment (no coverage map)."""
import argparse
import glob
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate  # noqa: E402  (the scratch-copy, build and test-run helpers)

ROOT = mutate.ROOT
COV_BUILD = "build-cov"
CODE_LINES = "(lines with code)"  # the map's entry listing every line gcov has code for
EQUIV = os.path.join(ROOT, "tests", "mutants-equivalent.txt")
# GPU-only sources: not compiled without CUDA, so no test here can run them.
GPU_FILE = re.compile(r"_cuda\.[ch]$|\.cu$|nccl(?!_tests_table\.py$)|cublas|gpu-check-judge\.py$")  # nccl-tests' reader runs anywhere
# Python code mutants are drawn from (each folder's own *.py, not below it).
PY_DIRS = ("scripts", "suite")
# Tests that judge this tool, not the code.
NOT_A_COVERING_TEST = {"test_mutate_sample.sh"}

# C code that only reports: a line starting (after `return`) with one of these
# calls is mutated only before the call, and the call's continuation lines not at all.
C_MESSAGE = re.compile(r"\b(?:(?:pb_report_note|pb_error_usage|pb_fail|pb_error_fail_at|pb_faults_fail|perror|"
                       r"pb_error_set_progname|pb_error_set_quiet_usage)\s*\(|fprintf\s*\(\s*stderr\b)")
PY_MESSAGE = re.compile(r"^\s*(print\(.*file=sys\.stderr|die\(|sys\.exit\(\s*[\"f]|warn\()")
# A line that starts `TYPE NAME` (after qualifiers): a declaration.
C_DECL = re.compile(r"^\s*(?:(?:static|const|volatile|extern|inline|unsigned|signed|struct|union|enum|register)\s+)*"
                    r"(?!return\b|else\b|case\b|goto\b)[A-Za-z_]\w*(?:\s+|\s*\*+\s*)(?:const\s+)?\**\s*[A-Za-z_]\w*\s*"
                    r"(?:\[[^\]]*\]\s*)*(?:[;,=()]|$)")
C_ENUMERATOR = re.compile(r"^\s*[A-Z][A-Z0-9_]*\s*(=\s*[^,;]*)?,?\s*$")
C_TYPES = {"char", "int", "long", "short", "double", "float", "void", "unsigned", "signed", "const", "size_t"}
C_CONTROL = re.compile(r"^\s*(if|else|for|while|do|switch|return|case|default|goto)\b")
PY_NOT_DELETABLE = {"def", "class", "return", "if", "elif", "else", "for", "while", "try", "except", "finally",
                    "with", "import", "from", "pass", "global", "nonlocal", "yield", "lambda", "async", "await",
                    "raise", "assert", "del"}

ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=",
         "++": "--", "--": "++"}
REL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
LOGIC = {"&&": "||", "||": "&&", "and": "or", "or": "and"}
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)"
                    r"([uUlLfF]*)(?![\w.])")


def source_files(root=ROOT):
    """The files mutants are drawn from, sorted: common/, benchmarks/, tools/ C, scripts/*.py and suite/*.py."""
    out = []
    for d in ("common", "benchmarks", "tools"):
        for base, _, names in os.walk(os.path.join(root, d)):
            out += [os.path.relpath(os.path.join(base, n), root) for n in names if n.endswith((".c", ".h"))]
    for d in PY_DIRS:
        out += [os.path.join(d, n) for n in os.listdir(os.path.join(root, d)) if n.endswith(".py")]
    return sorted(f for f in out if not GPU_FILE.search(f))


def mask_c(text):
    """The text with comments blanked and string/char literal contents blanked
    (quotes kept), same length and line breaks: sites are searched here."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out[i + 1:j] = " " * (j - i - 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def mask_py(text):
    """As mask_c, for Python: tokenize finds strings and comments."""
    lines = text.splitlines(keepends=True)
    out = [list(l) for l in lines]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.STRING, tokenize.COMMENT):
            continue
        (r0, c0), (r1, c1) = tok.start, tok.end
        for r in range(r0, r1 + 1):
            row = out[r - 1]
            a = c0 if r == r0 else 0
            b = c1 if r == r1 else len(row)
            for k in range(a, b):
                if row[k] != "\n":
                    row[k] = " "
            if tok.type == tokenize.STRING and r == r0:
                row[c0] = '"'  # a string stays an operand, so `"..." % x` is not seen as arithmetic
    return "".join("".join(r) for r in out)


def _binary(masked_line, i, py):
    """Whether the operator at i is binary: an operand (word, `)`, `]`, a
    string) ends just before it, not a keyword or a type name."""
    before = masked_line[:i].rstrip()
    if not before or before[-1] not in "_)]\"" and not before[-1].isalnum():
        return False
    if re.search(r"(?<![\w.])\d+\.?\d*[eE]$", before):  # the sign of an exponent: 1e-9
        return False
    word = re.search(r"(\w+)$", before)
    if word and word.group(1) in ({"return", "case", "sizeof", "in", "not", "and", "or", "if", "else", "yield",
                                    "lambda"} | (set() if py else C_TYPES) or word.group(1).endswith("_t")):
        return False
    return True


# Operators, longest first, so that `<<`, `->`, `**` or `>>=` are one token
# and never read as `<`, `-`, `*` or `>`.
OPS = re.compile(r"<<=|>>=|\*\*=|//=|&&|\|\||\+\+|--|->|<<|>>|\*\*|//|[+\-*/%<>=!]=|[+\-*/%<>]")


def line_sites(masked_line, py):
    """(col, end, operator class, replacement) for each operator site of one line."""
    out = []
    if py:
        for m in re.finditer(r"\b(and|or)\b", masked_line):
            out.append((m.start(), m.end(), "logical", LOGIC[m.group(0)]))
    for m in OPS.finditer(masked_line):
        op = m.group(0)
        if op in LOGIC and not py:
            out.append((m.start(), m.end(), "logical", LOGIC[op]))
        elif op in REL:
            out.append((m.start(), m.end(), "relational", REL[op]))
        elif op in ARITH:
            if op in ("++", "--"):
                if py:
                    continue
            elif not op.endswith("=") and not _binary(masked_line, m.start(), py):
                continue  # unary minus, `*p`, `*args`
            elif op == "*" and not py and not (masked_line[m.start() - 1:m.start()] == " " and
                                               masked_line[m.end():m.end() + 1] == " "):
                continue  # `int *p`, `(char *)`: a pointer, not a product
            out.append((m.start(), m.end(), "arithmetic", ARITH[op]))
    for m in NUMBER.finditer(masked_line):
        num = m.group(1)
        if not py and re.search(r"\bsizeof\s*\(?\s*[\w.>-]+\[\s*$", masked_line[:m.start(1)]):
            continue  # `sizeof a[0]`: sizeof reads only the type, any index gives the same size
        if re.fullmatch(r"\d+", num):
            v = int(num)
            new = {0: "1", 1: "0"}.get(v, str(v + 1))
        else:
            v = float(num)
            new = "1.0" if v == 0 else "0.0" if v == 1 else repr(v + 1)
        out.append((m.start(1), m.end(1), "constant", new))
    return out


def message_start(m, i):
    """The index of the second top-level comma of the call whose arguments start at m[i]
    (where PB_CHECK's message begins), or None when the line ends before it."""
    depth = commas = 0
    for k in range(i, len(m)):
        c = m[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return None
            depth -= 1
        elif c == "," and depth == 0:
            commas += 1
            if commas == 2:
                return k
    return None


def c_sites(path, text):
    """(line, col, end, op, replacement) of a C file; col None: delete the line."""
    masked = mask_c(text).split("\n")
    raw = text.split("\n")
    sites, gpu, skip_depth, prev_code, pp_cont = [], [], 0, ";", False
    for no, (line, m) in enumerate(zip(raw, masked), 1):
        s = m.strip()
        # Preprocessor lines and their continuations; #if PB_HAVE_CUDA regions (not built here).
        if pp_cont or s.startswith("#"):
            pp_cont = s.endswith("\\")
            d = re.match(r"#\s*(\w+)", s)
            if d and d.group(1) in ("if", "ifdef", "ifndef"):
                gpu.append("PB_HAVE_CUDA" in s and "!" not in s and d.group(1) != "ifndef")
            elif d and d.group(1) in ("else", "elif") and gpu:
                gpu[-1] = not gpu[-1] and "PB_HAVE_CUDA" in s if d.group(1) == "elif" else not gpu[-1]
            elif d and d.group(1) == "endif" and gpu:
                gpu.pop()
            continue
        if not s:
            continue
        if any(gpu):
            prev_code = s
            continue
        # The continuation lines of a message call are skipped whole.
        if skip_depth > 0:
            skip_depth += s.count("(") - s.count(")")
            prev_code = s
            continue
        span = len(m)
        msg = C_MESSAGE.search(m)
        if msg:
            span = msg.start()
            depth = m[msg.start():].count("(") - m[msg.start():].count(")")
            skip_depth = max(depth, 0)
        chk = None if msg else re.search(r"\bPB_CHECK\s*\(", m)
        if chk:  # PB_CHECK(condition, status, message...): only the condition and the status are code
            end = message_start(m, chk.end())
            if end is not None:
                span = end
                skip_depth = max(m[chk.start():].count("(") - m[chk.start():].count(")"), 0)
        decl = C_DECL.match(m) and "=" not in re.sub(r"[=!<>]=", "", m) and "(" not in m
        if decl or C_ENUMERATOR.match(m):
            prev_code = s
            continue
        for col, end, op, new in line_sites(m[:span], py=False):
            sites.append((no, col, end, op, new))
        # A whole simple statement: `...;` on one line, balanced, after a complete one.
        if (not msg and s.endswith(";") and prev_code[-1] in ";{}:" and not C_CONTROL.match(m)
                and not C_DECL.match(m) and s.count("(") == s.count(")") and s != ";"
                and not s.startswith(("}", "{"))):
            sites.append((no, None, None, "delete", ""))
        prev_code = s
    return sites


def py_sites(path, text):
    masked = mask_py(text).split("\n")
    sites = []
    # Physical lines that are a whole logical line, from the token stream.
    starts, ends = {}, {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NEWLINE:
            ends[tok.start[0]] = True
    logical_start = None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            continue
        if logical_start is None:
            logical_start = tok.start[0]
            starts[logical_start] = tok
        if tok.type == tokenize.NEWLINE:
            logical_start = None
    msg_lines = set()
    for no, tok in starts.items():
        if PY_MESSAGE.match(text.split("\n")[no - 1]):
            end = next(e for e in sorted(ends) if e >= no)
            msg_lines.update(range(no, end + 1))
    for no, m in enumerate(masked, 1):
        s = m.strip()
        if not s or no in msg_lines or s.startswith(("@", "import ", "from ")):
            continue
        for col, end, op, new in line_sites(m, py=True):
            sites.append((no, col, end, op, new))
        tok = starts.get(no)
        if (tok is not None and no in ends and tok.type == tokenize.NAME and tok.string not in PY_NOT_DELETABLE
                and not s.endswith(":")):
            sites.append((no, None, None, "delete", ""))
        elif tok is not None and no in ends and tok.string in ("break", "continue"):
            sites.append((no, None, None, "delete", ""))
    return sites


class Mutant:
    def __init__(self, path, text, site):
        self.file = path
        self.line, self.col, self.end, self.op, self.new = site
        self.orig_line = text.split("\n")[self.line - 1]
        if self.col is None:  # deletion: C drops the statement, Python needs a `pass` to keep its block
            indent = self.orig_line[:len(self.orig_line) - len(self.orig_line.lstrip())]
            self.mut_line = indent + "pass" if path.endswith(".py") else ""
        else:
            self.mut_line = self.orig_line[:self.col] + self.new + self.orig_line[self.end:]

    def key(self):
        """The identity tests/mutants-equivalent.txt uses: no line number, so it survives edits elsewhere."""
        return (self.file, self.orig_line.strip(), self.mut_line.strip())

    def apply(self, text):
        lines = text.split("\n")
        assert lines[self.line - 1] == self.orig_line
        lines[self.line - 1] = self.mut_line
        return "\n".join(lines)


def all_sites(root=ROOT):
    out = []
    for f in source_files(root):
        text = open(os.path.join(root, f)).read()
        fn = py_sites if f.endswith(".py") else c_sites
        out += [Mutant(f, text, s) for s in fn(f, text)]
    return out


def draw(sites, seed):
    """The sites in the order the sample takes them: a seeded shuffle of the sorted list."""
    order = sorted(sites, key=lambda m: (m.file, m.line, -1 if m.col is None else m.col, m.op, m.new))
    random.Random(seed).shuffle(order)
    return order


def parse_equivalents(path):
    """Stanzas of `file:`, `orig:`, `mutant:`, `why:` lines separated by blank lines; '#' comments.
    A deleted C line is `mutant: (deleted)`, as the report shows it."""
    out, cur = {}, {}
    if not os.path.exists(path):
        return out
    for n, line in enumerate(open(path).read().splitlines() + [""], 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                if set(cur) != {"file", "orig", "mutant", "why"} or not cur["why"].strip():
                    mutate.die(2, f"{path}:{n}: an entry needs file, orig, mutant and a non-empty why")
                mut = cur["mutant"].strip()
                out[(cur["file"], cur["orig"].strip(), "" if mut == "(deleted)" else mut)] = cur["why"]  # as rows show it
                cur = {}
            continue
        key, sep, val = line.partition(":")
        if not sep or key not in ("file", "orig", "mutant", "why"):
            mutate.die(2, f"{path}:{n}: expected 'file|orig|mutant|why: value'")
        cur[key] = val[1:] if val.startswith(" ") else val
    return out


def score(verdicts, equivalents):
    """(killed, counted, survivors): equivalent mutants are out of the count."""
    counted = [(m, v) for m, v in verdicts if m.key() not in equivalents]
    killed = sum(1 for _, v in counted if v.startswith("killed"))
    return killed, len(counted), [(m, v) for m, v in counted if not v.startswith("killed")]


# ---- coverage ---------------------------------------------------------------

def coverage_inputs():
    """What the coverage map depends on: the code, the tests and the build."""
    return sorted(f for f in mutate.tree_files()
                  if (f.startswith(("common/", "benchmarks/", "tools/", "tests/unit/", "tests/integration/") +
                                  tuple(d + "/" for d in PY_DIRS))
                      or f in ("Makefile", "run_all.sh"))
                  and not os.path.basename(f).startswith("test_mutate_sample"))


def source_hash():
    h = hashlib.sha256()
    for f in coverage_inputs():
        h.update(f.encode() + b"\0" + open(os.path.join(ROOT, f), "rb").read() + b"\0")
    return h.hexdigest()[:16]


def all_tests():
    units = sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, "tests", "unit")) if re.match(r"test_\w+\.c$", f))
    integ = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "integration"))
                   if re.match(r"test_\w+\.sh$", f) and f not in NOT_A_COVERING_TEST)
    return units + integ


def gcov_lines(build, executed=True):
    """{file: [lines executed]} from every .gcda under BUILD (its own objects
    and the sanitized ones test_unit_sanitized.sh builds in BUILD/san); with
    executed=False, every line gcov has code for, run or not."""
    # gcov reads .gcno (the code) and .gcda (the counts, "assuming not executed" where missing).
    ext = ".gcda" if executed else ".gcno"
    gcdas = [os.path.join(b, n) for b, _, ns in os.walk(os.path.join(ROOT, build)) for n in ns
             if n.endswith(ext)]
    out = {}
    if not gcdas:
        return out
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run(["gcov", "--json-format", "--stdout"] + gcdas, cwd=tmp, capture_output=True, text=True)
    for doc in res.stdout.splitlines():
        if not doc.startswith("{"):
            continue
        for f in json.loads(doc).get("files", []):
            lines = {l["line_number"] for l in f["lines"] if l["count"] > 0 or not executed}
            if lines:
                out.setdefault(os.path.relpath(os.path.join(ROOT, f["file"]), ROOT), set()).update(lines)
    return out


def have_python_coverage():
    try:
        import coverage  # noqa: F401
    except ImportError:
        return False
    return True


def py_lines(datadir):
    out = {}
    try:
        import coverage
    except ImportError:
        return out
    files = [os.path.join(datadir, n) for n in os.listdir(datadir) if n.startswith(".coverage")]
    if not files:
        return out
    data = coverage.CoverageData(basename=os.path.join(datadir, "combined"))
    coverage.data.combine_parallel_data(data, data_paths=files)
    for f in data.measured_files():
        rel = checkout_path(f)
        if rel:
            out.setdefault(rel, set()).update(data.lines(f) or ())
    return out


def checkout_path(measured, root=ROOT):
    """The checkout's file (relative) that a measured Python file is: itself, or
    the installed copy of one (make install copies suite/ and scripts/ as they
    are: a test that runs the installed suite runs that file's lines)."""
    rel = os.path.relpath(measured, root)
    if rel.startswith(tuple(d + "/" for d in PY_DIRS)):
        return rel
    tail = os.path.join(*os.path.normpath(measured).split(os.sep)[-2:])
    if tail.split(os.sep)[0] in PY_DIRS and os.path.isfile(os.path.join(root, tail)):
        try:
            with open(measured, "rb") as a, open(os.path.join(root, tail), "rb") as b:
                return tail if a.read() == b.read() else None
        except OSError:
            return None
    return None


def coverage_map(log_dir):
    """{test: {"rc", "seconds", "lines": {file: [line, ...]}}}, from the cache when the sources are unchanged."""
    cache = os.path.join(ROOT, COV_BUILD, f"mutate-coverage-{source_hash()}.json")
    if os.path.exists(cache):
        print(f"mutate-sample: coverage map from {os.path.relpath(cache, ROOT)}", flush=True)
        return json.load(open(cache))
    t0 = time.time()
    units = [f"{COV_BUILD}/tests/{t}" for t in all_tests() if not t.endswith(".sh")]

    def build():
        return mutate.run(["make", "-j2", "CUDA=0", "COV=1", f"BUILD={COV_BUILD}", "all"] + units, ROOT,
                          os.path.join(log_dir, "coverage-build.log"))
    if build() != 0:
        mutate.die(3, f"the coverage build failed; see {log_dir}/coverage-build.log")
    # The build's flags, to notice a test that rebuilds the folder its own way.
    flags = os.path.join(ROOT, COV_BUILD, ".flags")
    flags_text = open(flags).read()
    # Python: coverage's subprocess hook, through a sitecustomize on PYTHONPATH.
    pyhook = os.path.join(log_dir, "pycov")
    os.makedirs(pyhook, exist_ok=True)
    pydata = os.path.join(pyhook, "data")
    with open(os.path.join(pyhook, "sitecustomize.py"), "w") as f:
        f.write("try:\n    import coverage\n    coverage.process_startup()\nexcept ImportError:\n    pass\n")
    with open(os.path.join(pyhook, "rc"), "w") as f:
        f.write(f"[run]\nparallel = True\ndata_file = {pydata}/.coverage\n")
    result = {}
    for t in all_tests():
        for b, _, ns in os.walk(os.path.join(ROOT, COV_BUILD)):
            for n in ns:
                if n.endswith(".gcda"):
                    os.remove(os.path.join(b, n))
        shutil.rmtree(pydata, ignore_errors=True)
        os.makedirs(pydata)
        # CUDA=0 COV=1 in the environment: a test that runs run_all.sh (which
        # runs make on BUILD) finds this build up to date instead of rebuilding it.
        env = dict(os.environ, BUILD=COV_BUILD, CUDA="0", COV="1", COVERAGE_PROCESS_START=os.path.join(pyhook, "rc"),
                   PYTHONPATH=pyhook + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("CI", None)
        if t.endswith(".sh"):
            cmd, cwd = ["bash", t], os.path.join(ROOT, "tests", "integration")
        else:
            cmd, cwd = [os.path.join(ROOT, COV_BUILD, "tests", t)], ROOT
        start = time.time()
        rc = mutate.run(cmd, cwd, os.path.join(log_dir, f"coverage-{t}.log"), 900, env)
        secs = time.time() - start
        lines = {}
        if open(flags).read() != flags_text:
            print(f"mutate-sample: {t} rebuilt {COV_BUILD} with other flags; its coverage is not used", flush=True)
            rc = -1
            if build() != 0:
                mutate.die(3, f"the coverage build failed; see {log_dir}/coverage-build.log")
        if rc == 0:
            lines = gcov_lines(COV_BUILD)
            lines.update(py_lines(pydata))
        result[t] = {"rc": rc, "seconds": round(secs, 1), "lines": {f: sorted(v) for f, v in lines.items()}}
        print(f"mutate-sample: coverage {t}: exit {rc}, {secs:.0f} s, {sum(len(v) for v in lines.values())} lines",
              flush=True)
    # The lines with code, executed or not.
    result[CODE_LINES] = {"rc": None, "seconds": 0,
                          "lines": {f: sorted(v) for f, v in gcov_lines(COV_BUILD, executed=False).items()}}
    with open(cache, "w") as f:
        json.dump(result, f)
    print(f"mutate-sample: coverage map in {time.time() - t0:.0f} s -> {os.path.relpath(cache, ROOT)}", flush=True)
    return result


def has_code(cov, m):
    """Whether coverage can say anything about the mutant's line: gcov has code
    for it (C), or it starts a statement (Python)."""
    if m.file.endswith(".py"):
        try:
            from coverage.parser import PythonParser
        except ImportError:
            return True
        p = PythonParser(filename=os.path.join(ROOT, m.file))
        p.parse_source()
        return m.line in p.statements
    return m.line in set(cov.get(CODE_LINES, {}).get("lines", {}).get(m.file, ()))


def known_killers(path=os.path.join(ROOT, "tests", "mutations.txt")):
    """file -> the tests that tests/mutations.txt says kill a mutation in it."""
    out = {}
    for st in mutate.parse(path):
        for t in st["tests"].split():
            out.setdefault(st["file"], set()).add(t)
    return out


def line_killers(path=os.path.join(ROOT, "tests", "mutations.txt")):
    """(file, a line's text, stripped) -> the tests of the stanzas whose `find` holds
    that whole line: the tests written for that very line (lines of 8 characters or
    fewer, a brace or a `return 0;`, say nothing of which code they are)."""
    out = {}
    for st in mutate.parse(path):
        for line in mutate.unescape(st.get("find", "")).split("\n"):
            if len(line.strip()) > 8:
                out.setdefault((st["file"], line.strip()), set()).update(st["tests"].split())
    return out


RECORDS = os.path.join(ROOT, "docs", "measured")


def kill_history(folder=RECORDS):
    """file -> {test: how many mutants of that file it killed} in the recorded
    sampler runs (dev/records/mutate-sample-seed*.txt); a mutant a run's
    record lists twice (a rescore appended) counts once."""
    out, seen = {}, set()
    for path in sorted(glob.glob(os.path.join(folder, "mutate-sample-seed*.txt"))):
        seed = re.match(r"mutate-sample-seed(\d+)", os.path.basename(path)).group(1)
        with open(path, errors="replace") as f:
            for line in f:
                r = ROW.match(line.rstrip("\n"))
                if not r or not r.group(7).startswith("killed") or (seed, r.group(0)) in seen:
                    continue
                seen.add((seed, r.group(0)))
                kills = out.setdefault(r.group(2), {})
                kills[r.group(8)] = kills.get(r.group(8), 0) + 1
    return out


SANITIZED = "test_unit_sanitized.sh"
# A line that handles an allocation failure runs only when one fails: the
# fault-injection test makes every allocation of its programs fail in turn.
FAILMALLOC = "test_failmalloc.sh"
OUT_OF_MEMORY = re.compile(r"out of (host |device )?memory")
RELEASE = re.compile(r"\b(free|fclose|close|\w+_(destroy|free|close))\(")


def memory_error(m):
    """Whether the mutant makes a fault only AddressSanitizer or LeakSanitizer
    sees: a release call deleted (a leak), or a loop's `<` made `<=` (one
    element past the end); SANITIZED then runs among the line's own tests."""
    orig, mut = getattr(m, "orig_line", ""), getattr(m, "mut_line", "")
    if m.file.endswith(".py"):
        return False
    if m.op == "delete":
        return bool(RELEASE.search(orig))
    return m.op == "relational" and orig.lstrip().startswith("for (") and orig.count("<=") < mut.count("<=")


KNOWN_KILLERS = None
LINE_KILLERS = None
KILL_HISTORY = None
# What a covering test with no record of killing in the file is worth against
# one kill: enough that a 1 s test runs before a 30 s test with one kill.
PRIOR_KILLS = 0.2


def covering(cov, m):
    """The tests that executed the mutant's line and passed unmutated: first
    those tests/mutations.txt names for a mutation of that very line, then the
    others by kills per second, most first: a test's kills are those it made
    in the file in the recorded runs, plus one if tests/mutations.txt names it
    for a mutation in the file (it was written to check that file), plus
    PRIOR_KILLS; its seconds those of the coverage pass (at least 1). Ordering
    by chance of a kill over cost finds a killer soonest, so a mutant whose
    covering tests add up to more than the budget is judged by the likeliest.
    A line coverage has no code for (a static table, the second line of
    a statement) takes every test that executed any line of its file; a
    header's declaration (an enum's values, a macro) takes every test that
    executed its file or the source file of the same name (report.h: report.c),
    since gcov counts no line of a declaration."""
    per_line = has_code(cov, m)
    files = [m.file] + ([m.file[:-2] + ".c"] if m.file.endswith(".h") and not per_line else [])
    ts = [t for t, r in cov.items() if r["rc"] == 0 and t != CODE_LINES and
          (m.line in set(r["lines"].get(m.file, ())) if per_line else any(r["lines"].get(f) for f in files))]
    global KNOWN_KILLERS, LINE_KILLERS, KILL_HISTORY
    if KNOWN_KILLERS is None:
        KNOWN_KILLERS = known_killers()
    if LINE_KILLERS is None:
        LINE_KILLERS = line_killers()
    if KILL_HISTORY is None:
        KILL_HISTORY = kill_history()
    mine, history = KNOWN_KILLERS.get(m.file, set()), KILL_HISTORY.get(m.file, {})
    this_line = LINE_KILLERS.get((m.file, getattr(m, "orig_line", "").strip()), set())
    if memory_error(m):
        this_line = this_line | {SANITIZED}
    if OUT_OF_MEMORY.search(getattr(m, "orig_line", "")):
        this_line = this_line | {FAILMALLOC}

    def kills_per_second(t):
        return (history.get(t, 0) + (t in mine) + PRIOR_KILLS) / max(cov[t]["seconds"], 1)
    return sorted(ts, key=lambda t: (t not in this_line, -kills_per_second(t), cov[t]["seconds"], t))


# ---- the run ----------------------------------------------------------------

def compiles(tree, m, tests, log):
    """Build what the mutant's tests need: every binary and the unit tests among
    them (an integration test runs the binaries, so they are relinked even when
    no unit test covers the line); a not-covered mutant only has to compile."""
    if m.file.endswith(".py"):
        # compile() alone: py_compile would write a .pyc of the mutant, and a source
        # restored within the same second at the same size would go on running it.
        return mutate.run([sys.executable, "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')",
                           m.file], tree, log) == 0
    if tests or m.file.endswith(".h"):
        return mutate.build(tree, tests, log) == 0
    obj = "build/obj/" + m.file[:-2] + ".o"
    return mutate.run(["make", "CUDA=0", "BUILD=build", obj], tree, log) == 0


def build_mutant(tree, m, cov, log):
    """Whether the applied mutant builds, with everything its covering tests run."""
    return compiles(tree, m, covering(cov, m), log)


# The emulated cluster (scripts/emulate-cluster.sh) is one per machine. A test
# stopped by a timeout (SIGKILL to its group) cannot take its cluster down, and
# every later test that needs one would then fail for that, not for its mutant.
EMU_STATE = os.path.join(os.environ.get("PB_EMU_STATE_DIR", "/run/parabench-emucluster"), "state")


def cluster_up():
    return os.path.exists(EMU_STATE)


def take_down_cluster(tree, log):
    """Remove a cluster a stopped test of this run left up (the run refuses to start beside
    another's). Its tests bring clusters up as this run's owner (PB_EMU_OWNER, set in main):
    emulate-cluster.sh refuses to take down anyone else's."""
    if cluster_up():
        mutate.run(["scripts/emulate-cluster.sh", "down"], tree, log)


def judge(tree, logs, m, idx, cov, budget, equivalents=frozenset()):
    """The verdict and the killing test of one mutant (already applied)."""
    if m.key() in equivalents:  # out of the score whatever its tests say: running them would only cost time
        return "not judged (listed equivalent)", "-"
    tests = covering(cov, m)
    if not tests:
        return "not covered", "-"
    start, ran = time.time(), 0
    for t in tests:
        # A test that would not fit in what is left of the budget is passed
        # over (a faster one later may still fit); the first always runs, so a
        # line only a long test covers is still judged.
        if ran > 0 and time.time() - start + cov[t]["seconds"] > budget:
            continue
        take_down_cluster(tree, os.path.join(logs, f"m{idx:03d}-{t}-cluster-down.log"))
        ran += 1
        limit = max(60, 5 * cov[t]["seconds"])
        rc = mutate.run_test(tree, t, os.path.join(logs, f"m{idx:03d}-{t}.log"), timeout=limit)
        if rc == 124:
            return "killed (timeout)", t
        if rc not in (0, 77):
            return "killed", t
    if ran < len(tests):
        return f"survived (budget: {ran} of {len(tests)} tests run)", "-"
    return f"survived ({len(tests)} tests)", "-"


def failing_unmutated(tree, logs, killers, cov, units):
    """The killing tests that also fail on the unmutated scratch copy, rebuilt:
    the coverage pass ran them in the checkout, and a test that needs what a
    copy lacks (git, once) would otherwise kill every mutant it is reached for."""
    if not killers:
        return set()
    if mutate.build(tree, units, os.path.join(logs, "confirm-build.log")) != 0:
        mutate.die(3, f"the unmutated scratch copy no longer builds; see {logs}/confirm-build.log")
    bad = set()
    for t in sorted(killers):
        rc = mutate.run_test(tree, t, os.path.join(logs, f"confirm-{t}.log"), timeout=max(60, 5 * cov[t]["seconds"]))
        if rc not in (0, 77):
            bad.add(t)
    return bad


def fmt_row(idx, m, verdict, by):
    orig = m.orig_line.strip() or "(empty)"
    mut = m.mut_line.strip() or "(deleted)"
    return f"M{idx:03d}  {m.file}:{m.line}  {m.op}  `{orig}` -> `{mut}`  {verdict}  {by}"


ROW = re.compile(r"^M(\d+)  (\S+):(\d+)  (\w+)  `(.*)` -> `(.*)`  (.+?)  (\S+)(?:  \(\d+ s\))?$")


class Row:
    """A mutant as a report row gives it back: enough for key() and the survivors list."""

    def __init__(self, m):
        self.file, self.line, self.op = m.group(2), int(m.group(3)), m.group(4)
        self.orig_line = m.group(5)
        self.mut_line = "" if m.group(6) in ("(deleted)",) else m.group(6)
        self.verdict = m.group(7).replace(" [equivalent]", "")

    def key(self):
        return (self.file, self.orig_line.strip(), self.mut_line.strip())


def summary(verdicts, equivalents, invalid, seed, seconds):
    killed, counted, survivors = score(verdicts, equivalents)
    timeouts = sum(1 for _, v in verdicts if v.startswith("killed (timeout)"))
    uncovered = sum(1 for _, v in survivors if v == "not covered")
    cut = sum(1 for _, v in survivors if "budget" in v)
    return [
        "",
        f"mutants {len(verdicts)} (seed {seed}; {invalid} drawn that did not compile were replaced)",
        f"equivalent {len(verdicts) - counted} (tests/mutants-equivalent.txt, left out of the score)",
        f"killed {killed} ({timeouts} by a timeout)",
        f"survived {len(survivors)} ({uncovered} on lines no test executes, {cut} stopped by the budget "
        f"before every covering test ran)",
        f"score {killed}/{counted} = {100.0 * killed / counted if counted else 0:.1f}%",
        f"time {seconds:.0f} s",
        "survivors:",
    ] + [f"  {m.file}:{m.line}  {m.op}  `{m.orig_line.strip()}` -> `{m.mut_line.strip() or '(deleted)'}`  {v}"
         for m, v in survivors]


def rescore(path, equivalents):
    """The summary of a report's rows (a finished or an interrupted run) against
    today's equivalents file: marking an equivalent needs no rerun."""
    rows = [Row(m) for m in (ROW.match(l.rstrip("\n")) for l in open(path)) if m]
    if not rows:
        mutate.die(2, f"{path}: no mutant rows")
    invalid = sum(1 for l in open(path) if "does not compile, redrawn" in l)
    seed = re.search(r"seed (\d+)", open(path).read())
    lines = summary([(r, r.verdict) for r in rows], equivalents, invalid, seed.group(1) if seed else "?", 0)
    print("\n".join(l for l in lines if not l.startswith("time ")))  # no run time: nothing ran


def main():
    signal.signal(signal.SIGTERM, mutate.on_sigterm)
    # No bytecode in the scratch copy: a restored .py of the same size, rewritten within the
    # same second as its mutant, could otherwise run the mutant's cached .pyc (tests inherit this).
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    os.environ["PB_EMU_OWNER"] = f"mutate-sample-{os.getpid()}"  # the clusters its tests bring up are its own
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100, help="mutants to judge")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=900, help="seconds of tests per mutant before giving up")
    ap.add_argument("--list-sites", action="store_true", help="print the sample's sites (no build) and exit")
    ap.add_argument("--keep", action="store_true", help="keep the scratch tree")
    ap.add_argument("--rescore", metavar="REPORT", help="only print the summary of REPORT's rows")
    ap.add_argument("--rejudge", metavar="REPORT", help="judge again the mutants --ids names of REPORT (the same "
                                                       "--seed on the same tree), and print the whole report")
    ap.add_argument("--ids", default="", help="with --rejudge: mutant numbers, e.g. 6,7,30")
    a = ap.parse_args()
    if a.rescore:
        rescore(a.rescore, parse_equivalents(EQUIV))
        return
    if a.n < 1:
        mutate.die(2, "--n must be positive")
    if bool(a.rejudge) != bool(a.ids) or (a.ids and not re.fullmatch(r"\d+(,\d+)*", a.ids)):
        mutate.die(2, "--rejudge REPORT and --ids N,N... go together (numbers of REPORT's mutants)")
    if a.rejudge:
        old = {int(m.group(1)): (m.group(0), Row(m)) for m in (ROW.match(l.rstrip("\n")) for l in open(a.rejudge)) if m}
        ids = {int(i) for i in a.ids.split(",")}
        if not ids <= set(old):
            mutate.die(2, f"--ids: {a.rejudge} has no mutant {sorted(ids - set(old))}")
    sites = all_sites()
    order = draw(sites, a.seed)
    equivalents = parse_equivalents(EQUIV)
    by_class = {}
    for m in sites:
        by_class[m.op] = by_class.get(m.op, 0) + 1
    print(f"mutate-sample: {len(sites)} sites in {len(source_files())} files "
          f"({', '.join(f'{k} {v}' for k, v in sorted(by_class.items()))}); seed {a.seed}, n {a.n}", flush=True)
    if a.list_sites:
        for i, m in enumerate(order[:a.n], 1):
            print(fmt_row(i, m, "", ""))
        return
    if not have_python_coverage():
        mutate.die(3, "Python's coverage module is missing (python3 -m pip install coverage, or the python3-coverage "
                      "package for the system's python3): without it no Python line is ever covered, and every Python "
                      "mutant would count as survived")
    if cluster_up():
        mutate.die(3, f"an emulated cluster is up ({EMU_STATE}); the tests that need one would fail for it, not for "
                      "their mutants: take it down (scripts/emulate-cluster.sh down) and retry")

    t0 = time.time()
    scratch = tempfile.mkdtemp(prefix="parabench-mutate-sample.")
    tree, logs = os.path.join(scratch, "tree"), os.path.join(scratch, "logs")
    os.makedirs(logs)
    cov = coverage_map(logs)
    failing = sorted(t for t, r in cov.items() if r["rc"] != 0 and t != CODE_LINES)
    if failing:
        print(f"mutate-sample: not used (failed or skipped unmutated): {' '.join(failing)}", flush=True)
    mutate.copy_tree(tree)
    units = [t for t in cov if not t.endswith(".sh") and t != CODE_LINES]
    if mutate.build(tree, units, os.path.join(logs, "baseline-build.log")) != 0:
        mutate.die(3, f"the unmutated tree does not build; see {logs}/baseline-build.log")
    report = os.path.join(scratch, "report.txt")
    print(f"mutate-sample: scratch copy in {scratch}; report {report}", flush=True)

    verdicts, invalid, rows, bys = [], 0, [], []
    if a.rejudge:  # a mutant of REPORT is found in the draw by its text; the others keep their rows
        want = {(r.file, r.line, r.orig_line.strip(), r.mut_line.strip()): i for i, (_, r) in old.items() if i in ids}
        order = [m for m in order if (m.file, m.line, m.orig_line.strip(), m.mut_line.strip()) in want]
        print(f"mutate-sample: judging again mutants {a.ids} of {a.rejudge}", flush=True)
    for m in order:
        if len(verdicts) >= a.n or (a.rejudge and len(verdicts) == len(want)):
            break
        idx = len(verdicts) + 1
        if a.rejudge:
            idx = want[(m.file, m.line, m.orig_line.strip(), m.mut_line.strip())]
        path = os.path.join(tree, m.file)
        orig = open(path).read()
        start = time.time()
        try:
            with open(path, "w") as f:
                f.write(m.apply(orig))
            if not build_mutant(tree, m, cov, os.path.join(logs, f"m{idx:03d}-build.log")):
                invalid += 1
                print(f"        does not compile, redrawn: {m.file}:{m.line} `{m.mut_line.strip()}`", flush=True)
                continue
            verdict, by = judge(tree, logs, m, idx, cov, a.budget, equivalents)
        finally:
            with open(path, "w") as f:
                f.write(orig)
        if m.key() in equivalents:
            verdict += " [equivalent]"
        verdicts.append((m, verdict))
        bys.append((idx, by))
        rows.append(fmt_row(idx, m, verdict, by))
        print(rows[-1] + f"  ({time.time() - start:.0f} s)", flush=True)
        with open(report, "w") as f:
            f.write("\n".join(rows) + "\n")

    # Every test that killed is run once more on the unmutated copy: its kills
    # count only if it passes there.
    bad = failing_unmutated(tree, logs, {b for (_, v), (_, b) in zip(verdicts, bys) if v.startswith("killed")}, cov,
                            units)
    for k, ((m, v), (idx, by)) in enumerate(zip(verdicts, bys)):
        if by in bad and v.startswith("killed"):
            v = f"unjudged ({by} fails unmutated in the copy)" + (" [equivalent]" if m.key() in equivalents else "")
            verdicts[k], rows[k] = (m, v), fmt_row(idx, m, v, "-")
    if bad:
        print(f"mutate-sample: failing unmutated in the copy, their kills not counted: {' '.join(sorted(bad))}",
              flush=True)
        with open(report, "w") as f:
            f.write("\n".join(rows) + "\n")
    if a.rejudge:  # the whole report: REPORT's rows with the ones judged again replaced
        got = {int(ROW.match(t).group(1)): (v, t) for v, t in zip(verdicts, rows)}
        merged = [got.get(i, ((r, r.verdict), text)) for i, (text, r) in sorted(old.items())]
        verdicts, rows = [v for v, _ in merged], [t for _, t in merged]
        invalid = sum(1 for l in open(a.rejudge) if "does not compile, redrawn" in l)
        with open(report, "w") as f:
            f.write("\n".join(rows) + "\n")
        print("\n".join(rows), flush=True)
    lines = summary(verdicts, equivalents, invalid, a.seed, time.time() - t0)
    with open(report, "a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    if not a.keep:
        shutil.rmtree(tree)
    print(f"mutate-sample: report and logs in {scratch}")


if __name__ == "__main__":
    main()
