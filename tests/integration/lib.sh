# Shared helpers for integration tests. Each test_*.sh sources this file, runs
# the real binaries under mpirun and checks their output; any failed check
# exits non-zero with a message saying what was expected.
set -u
BUILD=${BUILD:-build}
BIN=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/$BUILD/bin
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Quiet Open MPI's "no high-performance transport" notices on machines without InfiniBand.
export OMPI_MCA_btl_base_warn_component_unused=0
# The PML Open MPI picks on a machine without a fast network anyway (Debian's
# openmpi-mca-params.conf excludes ucx; cm finds no transport). Naming it skips
# opening cm's PSM and PSM2 transports, whose probing adds about 0.2 s to every
# launch, most of it idle (10 launches of 2 ranks: 3.9 s against 1.8 s here).
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
# The python3 that PATH finds, resolved once and put first: a version manager's
# shim (pyenv's) runs a chain of bash scripts at every call, 0.11 CPU-s against
# 0.04 for the interpreter itself here, and a test run makes hundreds of calls.
# The same interpreter either way.
PB_PY_DIR=$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null) &&
    [ -n "$PB_PY_DIR" ] && [ "${PATH%%:*}" != "$PB_PY_DIR" ] && export PATH="$PB_PY_DIR:$PATH"
TMP=$(mktemp -d /tmp/parabench-test.XXXXXX)
exec 9>&2 # the test's stderr, for messages from inside redirected commands
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT # KEEP_TMP=1: left for a look after a failure
FAILS=0

# mpirun with the flags every test on a shared 2-core machine needs; its limit is 120 s
# times PB_TEST_SLOWDOWN (make sanitize: the sanitized builds run a few times slower).
mpi() {
    local np=$1; shift
    # stdin from /dev/null: mpirun forwards stdin to rank 0, and would eat the
    # here-documents that drive the tests' loops.
    timeout $((120 * ${PB_TEST_SLOWDOWN:-1})) mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp "$@" </dev/null
    local rc=$?
    check_outputs "$@"
    return $rc
}

# check_outputs ARGS...: the result files a command line names (--csv F, --json F) must
# hold invariants.py's invariants as soon as they are written, before a later run of the
# same test rewrites them (finish checks what is left at the end).
check_outputs() {
    local files=() a next=""
    for a in "$@"; do
        if [ -n "$next" ]; then [ -f "$a" ] && files+=("$a"); next=""; continue; fi
        case $a in
            --csv | --json) next=1 ;;
            --csv=* | --json=*) [ -f "${a#*=}" ] && files+=("${a#*=}") ;;
        esac
    done
    [ ${#files[@]} -gt 0 ] || return 0
    case " ${INVARIANTS_EXEMPT:-} " in *" ${files[0]} "*) return 0 ;; esac
    # One file per process (bad_input runs workers); messages to the test's own
    # stderr (fd 9): expect_rc sends the command's to a file.
    local report=$TMP/invariants.$BASHPID.out
    python3 "$TESTS_DIR/invariants.py" "${files[@]}" >"$report" 2>&1 ||
        { fail "result files break invariants (tests/integration/invariants.py):"
          sed 's/^/  | /' "$report" | head -20; } 2>&9 >&9
}

# build_vars DIR: the make variables (CUDA, SAN, COV, WERROR) that built the folder DIR, read
# from the compile flags it records (Makefile: FLAGS_STAMP). A scratch tree given a copy of its
# objects and these variables rebuilds only what it changed; other variables rebuild it whole.
build_vars() {
    local flags
    flags=$(cat "$1/.flags" 2>/dev/null) || { echo "CUDA=0"; return; }
    case $flags in *-DPB_HAVE_CUDA=1*) echo -n "CUDA=1" ;; *) echo -n "CUDA=0" ;; esac
    case $flags in *-fsanitize=*) echo -n " SAN=1" ;; esac
    case $flags in *--coverage*) echo -n " COV=1" ;; esac
    case $flags in *-Werror*) echo -n " WERROR=1" ;; esac
    echo
}

PASSES=0
# Processes by PID only: a test ends only what it started. `descendants PID`
# lists every process below PID, walking the parent field of /proc/*/stat.
# The files go through cat, which skips a process that exits between the glob
# and the read; awk given the names itself stops at the first one missing.
descendants() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '{
            pid = $1
            sub(/.*\) /, "")        # after the name, which may hold spaces: state, parent, ...
            parent[pid] = $2
        }
        END { q[1] = root; n = 1
              for (i = 1; i <= n; i++) for (p in parent) if (parent[p] == q[i]) { q[++n] = p; print p } }'
}
# rank_pid PID RANK: the MPI rank RANK among the descendants of PID (Open MPI
# gives each rank OMPI_COMM_WORLD_RANK in its environment).
rank_pid() {
    local p
    for p in $(descendants "$1"); do
        { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return 0; }
    done
    return 1
}
# named_pid PID NAME: the descendant of PID whose command name is NAME.
named_pid() {
    local p
    for p in $(descendants "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && { echo "$p"; return 0; }; done
    return 1
}
# all_gone PID...: wait up to 10 s for every PID to exit; fail if one is left.
all_gone() {
    local p left
    for _ in $(seq 50); do
        left=""
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
        [ -z "$left" ] && return 0
        sleep 0.2
    done
    echo "still running:$left" >&2
    return 1
}

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; PASSES=$((PASSES + 1)); }
# A test that cannot run here says why and exits 77: counted as skipped, never
# as passed (tests/tally.sh; under CI=true an unlisted skip fails).
skip_test() { echo "SKIP: $(basename "$0"): $*"; exit 77; }

# expect_rc WANT DESC -- command...: run the command, check its exit status.
expect_rc() {
    local want=$1 desc=$2; shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$desc (exit $rc)"; else
        fail "$desc: exit $rc, expected $want"; sed 's/^/  | /' "$TMP/err" | tail -15 >&2; fi
}

# fake_gpus DIR N: DIR/nvidia-smi, a stand-in that lists N GPUs for `nvidia-smi -L`
# (put DIR first on PATH; a fake ldd beside it says whether the binaries link NCCL).
fake_gpus() {
    mkdir -p "$1"
    { echo '#!/bin/sh'; echo '[ "$1" = -L ] || exit 0'; for i in $(seq 0 $(($2 - 1))); do
        echo "echo 'GPU $i: Fake GPU (UUID: GPU-$i)'"; done; } >"$1/nvidia-smi"
    chmod +x "$1/nvidia-smi"
}

# python_unittest FILE WHAT [NAME=VALUE...]: FILE's unittest cases (beside this file), run
# with those variables set, as one check named WHAT; a failure shows unittest's report.
python_unittest() {
    local file=$1 what=$2
    shift 2
    command -v python3 >/dev/null || skip_test "python3 not found"
    if env "$@" timeout 120 python3 -m unittest -q "$TESTS_DIR/$file" 2>"$TMP/unit.err"; then
        pass "$what ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
    else fail "$what"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
}

# expect_in FILE TEXT DESC: FILE contains TEXT (fixed string).
expect_in() {
    if grep -qF -- "$2" "$1"; then pass "$3"; else fail "$3: '$2' not in $1"; sed 's/^/  | /' "$1" | tail -15 >&2; fi
}

# Every result file a test's runs left under $TMP must hold the invariants of
# invariants.py (statistics in order, derived columns, link classes, CSV = JSON),
# whatever the test itself checked. A test that corrupts a result on purpose
# removes it, or names it in INVARIANTS_EXEMPT (paths, space-separated), first.
check_invariants() {
    local f files=()
    while IFS= read -r -d '' f; do
        case " ${INVARIANTS_EXEMPT:-} " in *" $f "*) continue ;; esac
        files+=("$f")
    done < <(find "$TMP" \( -name '*.csv' -o -name '*.json' \) -type f -print0 2>/dev/null)
    [ ${#files[@]} -gt 0 ] || return 0
    if python3 "$TESTS_DIR/invariants.py" "${files[@]}" >"$TMP/invariants.out" 2>&1; then
        # Only files a benchmark wrote count; none checked is no check passed.
        grep -q ': 0 result file' "$TMP/invariants.out" ||
            pass "invariants hold in every result file ($(tail -1 "$TMP/invariants.out"))"
    else
        fail "result files break invariants (tests/integration/invariants.py):"; sed 's/^/  | /' "$TMP/invariants.out" | head -20 >&2
    fi
}

finish() {
    check_invariants
    if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed in $(basename "$0")" >&2; exit 1; fi
    # A test that checked nothing has not passed.
    if [ "$PASSES" -eq 0 ]; then echo "no check ran in $(basename "$0")" >&2; exit 1; fi
    echo "all checks passed in $(basename "$0")"
}

# ---- an emulated cluster (scripts/emulate-cluster.sh) for the tests that need one ----
# fold_checks: each "ok: ..." or "FAIL: ..." line a checker wrote to $TMP/check
# becomes a pass or a fail; other lines go to stderr, indented.
fold_checks() {
    local line
    while IFS= read -r line; do
        case $line in
            ok:*) pass "${line#ok: }" ;;
            FAIL:*) fail "${line#FAIL: }" ;;
            *) [ -z "$line" ] || echo "  | $line" >&2 ;;
        esac
    done <"$TMP/check"
}
EMU=$TESTS_DIR/../../scripts/emulate-cluster.sh
# emu_up ARGS...: bring up an emulated cluster (emulate-cluster.sh up ARGS) that is
# taken down when the test exits, pass, fail or signal; a test that started a job
# of its own defines emu_before_down to stop it first. Skips (77) without root or
# where network namespaces are not permitted; never touches a cluster somebody
# else brought up (fail).
emu_up() {
    [ "$(id -u)" -eq 0 ] || skip_test "needs root to create network namespaces (emulate-cluster.sh up)"
    # One emulated cluster per machine: wait for whoever holds it (another test
    # run, a user's command under the same lock) rather than fail.
    emu_owner_lock
    if "$EMU" status 2>/dev/null | grep -q '^emulated cluster: \(up\|DAMAGED\)'; then
        fail "an emulated cluster is already up (see '$EMU status'); not touching it. Run '$EMU down' and retry"
        finish
    fi
    EMU_UP=1
    # The cluster is this test's (or its caller's, e.g. a mutation run's): no one else's down removes it.
    export PB_EMU_OWNER=${PB_EMU_OWNER:-test-$(basename "$0" .sh)-$$}
    trap emu_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    "$EMU" up "$@" >"$TMP/up.out" 2>"$TMP/up.err"
    local rc=$?
    [ "$rc" -eq 0 ] && return 0
    if [ "$rc" -eq 3 ] && grep -q "not permitted" "$TMP/up.err"; then
        skip_test "network namespaces are not permitted here: $(tail -1 "$TMP/up.err")"
    fi
    fail "emulate-cluster.sh up $*: exit $rc"; sed 's/^/  | /' "$TMP/up.err" >&2
    finish
}
# emu_owner_lock: wait for the machine's emulated cluster to be ours (the lock every
# user of it takes: flock /run/parabench-emu-owner.lock COMMAND), and hold it until
# the test exits. A test started under that flock already holds it (the descriptor
# flock passed down): locking again would wait for ourselves.
EMU_OWNER_LOCK=/run/parabench-emu-owner.lock
emu_owner_lock() {
    local fd
    for fd in /proc/$$/fd/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "$EMU_OWNER_LOCK" ] && return 0
    done
    exec 9>"$EMU_OWNER_LOCK" || skip_test "cannot open $EMU_OWNER_LOCK (needs root)"
    flock -w 900 9 || { fail "the emulated cluster stayed in use for 15 minutes ($EMU_OWNER_LOCK held)"; finish; }
}
emu_cleanup() {
    local rc=$?
    declare -F emu_before_down >/dev/null && emu_before_down
    if [ "${EMU_UP:-0}" -eq 1 ]; then
        "$EMU" down >/dev/null 2>&1 ||
            echo "FAIL: $(basename "$0"): '$EMU down' failed; clean up by hand (docs/emulated-cluster.md)" >&2
    fi
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
    exit "$rc"
}

# mark_run DIR...: make each DIR a run's results folder, as the readers require (a steps.tsv;
# docs/reliability.md, "A run's records").
mark_run() { local d; for d in "$@"; do mkdir -p "$d" && : >>"$d/steps.tsv"; done; }
