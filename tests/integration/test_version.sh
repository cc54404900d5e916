#!/usr/bin/env bash
# --version: every binary and run_all.sh print one string, "parabench NUMBER (git REV)"
# with NUMBER from the VERSION file (and no git part outside git); suite/version.py
# formats it as common/core/version.c does (test_version, the unit test, checks the C
# side); a benchmark's JSON and CSV metadata record the same string.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
command -v python3 >/dev/null || skip_test "python3 not found"
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
NUMBER=$(cat "$ROOT/VERSION")

# run_all.sh's formatter, by itself.
if PYTHONPATH=$ROOT python3 - >"$TMP/py" 2>&1 <<'PY'
from suite.version import format_version
cases = [(("0.9.0", "2c2696b"), "parabench 0.9.0 (git 2c2696b)"),
         (("1.2.3", "2c2696b-dirty"), "parabench 1.2.3 (git 2c2696b-dirty)"),
         (("0.9.0", "unknown"), "parabench 0.9.0"), (("0.9.0", ""), "parabench 0.9.0")]
bad = [(args, format_version(*args), want) for args, want in cases if format_version(*args) != want]
print("\n".join(f"format_version{a} = {got!r}, expected {want!r}" for a, got, want in bad) or "ok")
raise SystemExit(1 if bad else 0)
PY
then pass "suite/version.py formats NUMBER and REV as the binaries do"
else fail "suite/version.py:"; sed 's/^/  | /' "$TMP/py" >&2; fi

# One string everywhere.
BUILD_DIR=$(dirname "$BIN")
WANT=$("$ROOT/run_all.sh" --version 2>"$TMP/err") || fail "run_all.sh --version: exit $? ($(cat "$TMP/err"))"
[[ "$WANT" =~ ^parabench\ ${NUMBER//./\\.}(\ \(git\ [0-9a-z.-]+\))?$ ]] &&
    pass "run_all.sh --version: '$WANT' (VERSION $NUMBER)" ||
    fail "run_all.sh --version: '$WANT'; expected 'parabench $NUMBER' and a git revision in parentheses"
read -r _ rev <"$BUILD_DIR/version.txt"
[ "$rev" = unknown ] || [ "$WANT" = "parabench $NUMBER (git $rev)" ] ||
    fail "run_all.sh --version: '$WANT'; the build ($BUILD_DIR/version.txt) says git $rev"
# Before any build (no BUILD/version.txt): the VERSION file and git describe, as the Makefile computes them.
bare=$(BUILD=no-such-build "$ROOT/run_all.sh" --version 2>"$TMP/err")
if rev=$(git -C "$ROOT" describe --always --dirty 2>/dev/null); then want="parabench $NUMBER (git $rev)"; else want="parabench $NUMBER"; fi
[ "$bare" = "$want" ] && pass "run_all.sh --version before a build: '$bare'" ||
    fail "run_all.sh --version before a build: '$bare', expected '$want' ($(cat "$TMP/err"))"
n=0
for src in "$ROOT"/benchmarks/*.c "$ROOT"/tools/*.c; do
    b=$(basename "$src" .c)
    got=$("$BIN/$b" --version 2>"$TMP/err")
    rc=$?
    if [ "$rc" -eq 0 ] && [ "$got" = "$WANT" ]; then n=$((n + 1))
    else fail "$b --version: '$got' (exit $rc), expected '$WANT' (exit 0)"; sed 's/^/  | /' "$TMP/err" >&2; fi
done
[ "$n" -gt 0 ] && pass "all $n binaries print '$WANT'"

# --version needs no MPI and takes no value; a benchmark's --help lists it.
expect_rc 2 "coll_sweep --version=1 is refused" -- "$BIN/coll_sweep" --version=1
expect_rc 2 "plan --version=1 is refused" -- "$BIN/plan" --version=1
expect_rc 2 "acceptance --version=1 is refused" -- "$BIN/acceptance" --version=1
expect_in "$TMP/err" "--version" "acceptance names --version"
"$BIN/coll_sweep" --help >"$TMP/help" 2>&1
expect_in "$TMP/help" "--version" "coll_sweep --help lists --version"

# Results record it: a benchmark's JSON and CSV metadata.
mpi 2 "$BIN/coll_sweep" --coll allreduce -b 8 -e 64 -n 2 -w 1 --csv "$TMP/c.csv" --json "$TMP/c.json" >/dev/null 2>"$TMP/err" ||
    fail "coll_sweep: $(cat "$TMP/err")"
expect_in "$TMP/c.csv" "# version: $WANT" "the CSV's metadata records the version"
got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["meta"]["version"])' "$TMP/c.json" 2>&1)
[ "$got" = "$WANT" ] && pass "the JSON's meta.version is '$WANT'" || fail "the JSON's meta.version: '$got', expected '$WANT'"
finish
