#!/usr/bin/env bash
# run_all.sh off Debian: with a PATH that has no apt-get it installs nothing;
# when everything is found it runs, and when MPI is missing it names what is
# missing (Debian and dnf packages, the module line) and exits 3 before
# measuring anything. --no-install forbids installing even where apt exists;
# --for report asks for Chromium alone.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

# fake_path DIR EXCLUDED...: DIR holds links to every command on PATH but the excluded ones.
fake_path() {
    local dir=$1; shift
    mkdir -p "$dir"
    local IFS=:
    for d in $PATH; do
        [ -d "$d" ] || continue
        for f in "$d"/*; do
            local name=${f##*/}
            [ -x "$f" ] && [ ! -e "$dir/$name" ] && ln -s "$f" "$dir/$name"
        done
    done
    unset IFS
    for x in "$@"; do rm -f "$dir/$x"; done
}
fake_path "$TMP/noapt" apt-get apt
fake_path "$TMP/nompi" apt-get apt mpicc mpirun

# One step is enough: what is checked is that the dependencies are found, not the suite.
PATH=$TMP/noapt BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --quiet --steps coll_sweep --out "$TMP/run" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] && pass "no apt-get, everything found: run_all runs (exit 0)" || { fail "no apt-get: exit $rc"; tail -5 "$TMP/err" >&2; }
[ -f "$TMP/run/meta.json" ] && pass "and writes its results" || fail "no meta.json without apt-get"
if grep -q "installing" "$TMP/err"; then fail "it tried to install"; else pass "it installed nothing"; fi

expect_rc 3 "no apt-get and no MPI: exit 3" -- env PATH="$TMP/nompi" BUILD="$BUILD" "$ROOT/run_all.sh" --quick --out "$TMP/run2"
expect_in "$TMP/err" "missing: openmpi-bin libopenmpi-dev" "the message names what is missing"
expect_in "$TMP/err" "dnf install openmpi openmpi-devel" "and the dnf packages"
expect_in "$TMP/err" "module load" "and the module line"
[ ! -e "$TMP/run2" ] && pass "nothing was measured" || fail "a results directory was created"

# --no-install where apt-get exists: a missing need is reported, not installed.
mkdir -p "$TMP/apt" && ln -s "$(command -v apt-get)" "$TMP/apt/apt-get"
expect_rc 3 "--no-install with MPI missing: exit 3" -- \
    env PATH="$TMP/nompi:$TMP/apt" "$ROOT/scripts/install-deps.sh" --for run --no-install
expect_in "$TMP/err" "missing: openmpi-bin libopenmpi-dev" "--no-install names what is missing"
if grep -q "installing" "$TMP/err"; then fail "--no-install tried to install"; else pass "--no-install installed nothing"; fi

# --for report is its own group: Chromium only, whatever else is missing.
fake_path "$TMP/nochromium" apt-get apt mpicc mpirun chromium chromium-headless-shell chromium-browser google-chrome
expect_rc 3 "--for report --no-install without Chromium: exit 3" -- \
    env PATH="$TMP/nochromium" "$ROOT/scripts/install-deps.sh" --for report --no-install
expect_in "$TMP/err" "missing: chromium (Debian" "--for report names Chromium, and only it"
finish
