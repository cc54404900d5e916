#!/usr/bin/env bash
# make install / make uninstall (docs/install.md). The suite is built and installed from a
# scratch copy of this tree (a clone with the working tree's changes laid over it, so the
# git revision is this checkout's), which is then deleted: the installed
# parabench-run-all can reach nothing but the prefix. From another directory it runs a
# --quick pass into a relative --out: exit 0, the results and the report there, nothing
# written into the prefix. A DESTDIR install lands under DESTDIR alone, names PREFIX in
# its modulefile and runs where it was staged. Every binary and parabench-run-all print
# one version string. make uninstall leaves only what was in the prefix before.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
for c in make python3 mpirun; do command -v $c >/dev/null || skip_test "$c not found"; done
NUMBER=$(cat "$ROOT/VERSION")
# make of its own: not the build folder or jobserver of a `make test` above this test, but the
# variables that built its objects, which the scratch tree is given (below) so as to rebuild
# only what differs (version.o: the scratch tree's revision).
BUILT=$ROOT/$BUILD
case $BUILD in /*) BUILT=$BUILD ;; esac
# shellcheck disable=SC2046 # build_vars prints words
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make BUILD=build $(build_vars "$BUILT") "$@"; }

# ---- the scratch tree ----
SRC=$TMP/src
if git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git clone -q --no-checkout "$ROOT" "$SRC" && git -C "$SRC" checkout -q --detach "$(git -C "$ROOT" rev-parse HEAD)" ||
        { fail "git clone of $ROOT"; finish; }
    (cd "$ROOT" && git ls-files -z -d) | (cd "$SRC" && xargs -0 -r rm -f)
    (cd "$ROOT" && git ls-files -z -co --exclude-standard | xargs -0 -r tar -cf - --no-recursion) | tar -xf - -C "$SRC"
    REV=$(git -C "$ROOT" describe --always --dirty)
    WANT="parabench $NUMBER (git $REV)"
else # a copy without git (tests/mutate.py's): no revision
    (cd "$ROOT" && tar -cf - --exclude='./build*' --exclude=./results .) | tar -xf - -C "$(mkdir -p "$SRC" && echo "$SRC")"
    WANT="parabench $NUMBER"
fi
[ -e "$SRC/build" ] && fail "the scratch tree has a build folder before its own build"
# The objects already built, with their times (the sources keep theirs too, from the tar above).
[ -d "$BUILT/obj" ] && mkdir -p "$SRC/build" && cp -a "$BUILT/obj" "$BUILT/.flags" "$SRC/build/" 2>/dev/null
mk -C "$SRC" -j2 all >"$TMP/build.log" 2>&1 || { fail "make in the scratch tree"; tail -20 "$TMP/build.log" >&2; finish; }

P=$TMP/prefix D=$TMP/stage
mkdir -p "$P/bin" && echo "#!/bin/sh" >"$P/bin/other-tool" # somebody else's, in a bin/ that was there before
expect_rc 0 "make install PREFIX=$P" -- mk -C "$SRC" install PREFIX="$P"
expect_rc 2 "a second install into the same prefix is refused (make: 2)" -- mk -C "$SRC" install PREFIX="$P"
expect_in "$TMP/err" "make uninstall first" "the refusal says what to do"
expect_rc 0 "make install DESTDIR=$D PREFIX=/opt/parabench" -- mk -C "$SRC" install DESTDIR="$D" PREFIX=/opt/parabench
rm -rf "$SRC"
[ -e "$SRC" ] && fail "the scratch tree is still there"

# ---- what went where ----
for f in bin/coll_sweep bin/plan bin/acceptance bin/parabench-run-all bin/parabench-compare bin/parabench-history libexec/parabench/suite/driver.py \
    libexec/parabench/scripts/report.py libexec/parabench/plots/busbw.gp share/parabench/acceptance/this-machine.thresholds \
    share/doc/parabench/README.md share/doc/parabench/CHANGELOG.md share/doc/parabench/docs/install.md \
    "share/modulefiles/parabench/$NUMBER" share/parabench/install-manifest.txt; do
    [ -e "$P/$f" ] || fail "PREFIX/$f was not installed"
done
m=$(wc -l <"$P/share/parabench/install-manifest.txt")
[ "$(find "$D" -mindepth 1 -maxdepth 1)" = "$D/opt" ] && [ "$(find "$D/opt" -mindepth 1 -maxdepth 1)" = "$D/opt/parabench" ] &&
    pass "DESTDIR: everything under DESTDIR/opt/parabench" || fail "DESTDIR: files outside DESTDIR/PREFIX: $(find "$D" -maxdepth 2)"
(cd "$P" && find . -type f -o -type l | sort) >"$TMP/p.list"
(cd "$D/opt/parabench" && find . -type f -o -type l | sort) >"$TMP/d.list"
grep -v '^./bin/other-tool$' "$TMP/p.list" | cmp -s - "$TMP/d.list" && pass "the DESTDIR install holds the same $(wc -l <"$TMP/d.list") files" ||
    fail "DESTDIR and PREFIX installs differ: $(grep -v other-tool "$TMP/p.list" | diff - "$TMP/d.list" | head -5)"
grep -rlF "$D" "$D" >"$TMP/leaks" && fail "the staged install names the staging folder: $(head -3 "$TMP/leaks")"

# ---- the modulefile ----
MF=$P/share/modulefiles/parabench/$NUMBER
head -1 "$MF" | grep -q '^#%Module' && grep -qx "set root {$P}" "$MF" && grep -qx 'setenv PARABENCH_HOME $root' "$MF" &&
    grep -qx 'prepend-path PATH $root/bin' "$MF" && pass "modulefile: Tcl, PARABENCH_HOME and PATH for $P" ||
    { fail "modulefile $MF:"; sed 's/^/  | /' "$MF" >&2; }
grep -qx "set root {/opt/parabench}" "$D/opt/parabench/share/modulefiles/parabench/$NUMBER" &&
    pass "DESTDIR modulefile names PREFIX, not DESTDIR" || fail "DESTDIR modulefile: $(grep root "$D/opt/parabench/share/modulefiles/parabench/$NUMBER")"
MODULECMD=$(command -v modulecmd || true)
if [ -n "$MODULECMD" ]; then
    # Environment Modules' modulecmd writes the shell code that `module load` evaluates.
    (export MODULEPATH=$P/share/modulefiles && unset LOADEDMODULES _LMFILES_ &&
        eval "$("$MODULECMD" bash load "parabench/$NUMBER")" &&
        echo "$PARABENCH_HOME|$(command -v parabench-run-all)|$(parabench-run-all --version)") >"$TMP/module" 2>&1
    [ "$(cat "$TMP/module")" = "$P|$P/bin/parabench-run-all|$WANT" ] &&
        pass "module load parabench/$NUMBER: PARABENCH_HOME, parabench-run-all on PATH" ||
        { fail "module load parabench/$NUMBER:"; sed 's/^/  | /' "$TMP/module" >&2; }
else
    echo "note: modulecmd not installed (Debian: environment-modules); the modulefile's content was checked, not loaded"
fi

# ---- one version string ----
# Asked from inside the checkout: the installed job must run its own suite/, not the one there.
bad=""
for b in "$P"/bin/* "$D"/opt/parabench/bin/*; do
    [ "$b" = "$P/bin/other-tool" ] && continue
    got=$(cd "$ROOT" && "$b" --version 2>&1) && [ "$got" = "$WANT" ] || bad+=" $b: '$got';"
done
[ -z "$bad" ] && pass "every installed binary and parabench-run-all (both installs) print '$WANT'" ||
    fail "--version, expected '$WANT':$bad"

# ---- a run, from another directory ----
WORK=$TMP/work
mkdir -p "$WORK"
touch "$TMP/installed"
(cd "$P" && find . | sort) >"$TMP/before"
# Bytecode is allowed here (the run must not write it into the prefix); BUILD must not matter.
(cd "$WORK" && unset PYTHONDONTWRITEBYTECODE && BUILD=no-such-build timeout 600 \
    "$P/bin/parabench-run-all" --quick --np 2 --out out >"$TMP/run.out" 2>"$TMP/run.err")
rc=$?
[ "$rc" -eq 0 ] && pass "parabench-run-all --quick --np 2 --out out (exit 0)" ||
    { fail "parabench-run-all: exit $rc"; tail -15 "$TMP/run.err" | sed 's/^/  | /' >&2; }
for f in meta.json steps.tsv report.md index.html summary.txt coll_sweep.csv; do
    [ -s "$WORK/out/$f" ] || fail "out/$f is missing (the results go under the current directory)"
done
[ -s "$WORK/out/plots/busbw.png" ] || fail "out/plots/busbw.png is missing (report.py found no gnuplot script?)"
[ -s "$WORK/out/report.md" ] && pass "results and report in the current directory's out/"
got=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print(m["version"], "|", m["machine"]["version"])' \
    "$WORK/out/meta.json" 2>&1)
[ "$got" = "$WANT | $WANT" ] && pass "meta.json: the suite's and the binaries' version" || fail "meta.json versions: '$got'"
expect_in "$WORK/out/report.md" "$WANT" "the report shows the version"
# parabench-compare, installed, puts the run beside itself: every figure the same, exit 0.
(cd "$WORK" && "$P/bin/parabench-compare" --quiet --out cmp out out >"$TMP/cmp.out" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ -s "$WORK/cmp/compare.json" ] && grep -q "no figure worse beyond the noise" "$TMP/cmp.out" &&
    pass "the installed parabench-compare: the run against itself, exit 0, compare.json written" ||
    { fail "installed parabench-compare: exit $rc"; sed 's/^/  | /' "$TMP/cmp.out" | tail -5 >&2; }
# parabench-history, installed, refuses a history of one run (exit 2) and follows the run twice over:
# a copy with a later date, no node drifting (exit 0), history.json written.
cp -r "$WORK/out" "$WORK/out2" && sed -i 's/"date": "[0-9-]*T/"date": "2099-01-01T/' "$WORK/out2/meta.json"
(cd "$WORK" && "$P/bin/parabench-history" --quiet -o hist out >"$TMP/hist.out" 2>&1)
rc1=$?
(cd "$WORK" && "$P/bin/parabench-history" --quiet -o hist out out2 >>"$TMP/hist.out" 2>&1)
rc=$?
[ "$rc1" -eq 2 ] && [ "$rc" -eq 0 ] && [ -s "$WORK/hist/history.json" ] && grep -q "no node drifts" "$TMP/hist.out" &&
    pass "the installed parabench-history: one run refused, two runs followed, history.json written" ||
    { fail "installed parabench-history: exit $rc1 then $rc"; sed 's/^/  | /' "$TMP/hist.out" | tail -5 >&2; }
(cd "$P" && find . | sort) | diff "$TMP/before" - >"$TMP/changed" && [ -z "$(find "$P" -newer "$TMP/installed")" ] &&
    pass "nothing was written into the prefix" ||
    { fail "the run changed the prefix:"; { cat "$TMP/changed"; find "$P" -newer "$TMP/installed"; } | head -10 | sed 's/^/  | /' >&2; }
# The staged tree, moved nowhere, runs where it lies: every path is relative to itself. Started
# inside the checkout, it runs its own suite/ and binaries, not the checkout's.
(cd "$ROOT" && "$D/opt/parabench/bin/parabench-run-all" --dry-run --quick --np 2) >"$TMP/dry" 2>&1
expect_in "$TMP/dry" "$D/opt/parabench/bin/coll_sweep" "the staged tree finds its own binaries"
expect_in "$TMP/dry" "$D/opt/parabench/libexec/parabench/scripts/report.py" "and its own report.py"
# A step whose binary is missing (an installed tree has no build to redo): "not built", the
# environment's exit 3, the missing path in its log; the report still runs. The binary goes back after.
NB=$D/opt/parabench/bin/p2p_sweep
mv "$NB" "$TMP/p2p_sweep.aside"
(cd "$WORK" && "$D/opt/parabench/bin/parabench-run-all" --quick --np 2 --bind none --steps p2p_sweep --out nb) \
    >"$TMP/nb.out" 2>"$TMP/nb.err"
rc=$?
mv "$TMP/p2p_sweep.aside" "$NB"
[ "$rc" -eq 3 ] && pass "a step's binary missing: exit 3" || { fail "a step's binary missing: exit $rc, expected 3"; sed 's/^/  | /' "$TMP/nb.err" >&2; }
expect_in "$WORK/nb/steps.tsv" "p2p_sweep	not built	-" "steps.tsv: p2p_sweep not built"
expect_in "$WORK/nb/steps.tsv" "report	ok	0" "the report still ran"
expect_in "$WORK/nb/logs/p2p_sweep.err" "run_all.sh: p2p_sweep: $NB is not built" "its log names the missing binary"
expect_in "$TMP/nb.err" "run_all:   p2p_sweep: not built" "the progress says so"
expect_in "$TMP/nb.err" "run_all.sh: exit 3: the environment" "stderr names the cause"
# No --out, and the current directory's results/ is a file: the default folder cannot be made,
# the environment's exit 3, before any step runs.
RF=$TMP/results-is-a-file
mkdir -p "$RF" && : >"$RF/results"
(cd "$RF" && "$D/opt/parabench/bin/parabench-run-all" --quick --np 2 --bind none --steps p2p_sweep) \
    >"$TMP/rf.out" 2>"$TMP/rf.err"
rc=$?
[ "$rc" -eq 3 ] && pass "results/ a file: exit 3" || { fail "results/ a file: exit $rc, expected 3"; sed 's/^/  | /' "$TMP/rf.err" >&2; }
expect_in "$TMP/rf.err" "run_all.sh: cannot create results/" "the message names the folder"

# ---- uninstall (the checkout's Makefile; its build folder untouched) ----
expect_rc 0 "make uninstall PREFIX=$P" -- mk -C "$ROOT" BUILD="$TMP/no-build" uninstall PREFIX="$P"
left=$(cd "$P" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "./bin ./bin/other-tool " ] && pass "uninstall left only what was there before (bin/other-tool; $m entries removed)" ||
    fail "uninstall left: $left"
expect_rc 0 "make uninstall DESTDIR=$D PREFIX=/opt/parabench" -- \
    mk -C "$ROOT" BUILD="$TMP/no-build" uninstall DESTDIR="$D" PREFIX=/opt/parabench
[ -z "$(find "$D" -mindepth 1)" ] && pass "DESTDIR uninstall: the staging folder is empty" || fail "DESTDIR uninstall left: $(find "$D" -mindepth 1 | head -5)"

finish
