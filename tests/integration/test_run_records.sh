#!/usr/bin/env bash
# Issue 53's classes, each case checked three ways: the exit code, the message, and that
# nothing in the case's folder changed (names, kinds, contents: `state`). Sections:
# writers (what an output replaces), the results folder claimed once, the environment
# parsed like options, consumers of a run, a run's records, install, make plots.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
A=$BIN/acceptance PLAN=$BIN/plan RA=$ROOT/run_all.sh
# state DIR: every entry under DIR with its kind and, for a regular file, its checksum.
state() { find "$1" -printf '%P %y\n' | sort; find "$1" -type f -exec md5sum {} + | sort; }
# case_ WANT FRAGMENT DIR DESC -- COMMAND...: COMMAND exits WANT naming FRAGMENT, DIR unchanged.
case_() {
    local want=$1 fragment=$2 dir=$3 desc=$4 before; shift 5
    before=$(state "$dir")
    expect_rc "$want" "$desc" -- timeout 120 "$@" </dev/null
    cat "$TMP/out" >>"$TMP/err"
    expect_in "$TMP/err" "$fragment" "$desc: names '$fragment'"
    if [ "$(state "$dir")" = "$before" ]; then pass "$desc: nothing in $(basename "$dir") changed"
    else fail "$desc: $(basename "$dir") changed"; diff <(echo "$before") <(state "$dir") | head -5 >&2; fi
}
# A run folder (its markers and a result) and a threshold file, copied from the fixtures.
run_dir() { mkdir -p "$1"; cp "$TESTS_DIR/../acceptance_cases/good/coll_sweep.csv" "$1/"; echo '{}' >"$1/meta.json"; : >"$1/steps.tsv"; }
THR=$TESTS_DIR/../acceptance_cases/busbw.thr

# ---- writers: what an output replaces ----
W=$TMP/w; mkdir -p "$W"; run_dir "$TMP/run"
mknod -m 666 "$W/null1" c 1 3 2>/dev/null || skip_test "mknod is not permitted here (root needed)"
mkfifo "$W/fifo"; ln -s /dev/full "$W/full"; ln -s null1 "$W/tonull"; mkdir "$W/adir"
case_ 0 "PASS" "$W" "acceptance --junit on a character device writes through it" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/null1"
case_ 0 "PASS" "$W" "acceptance --junit on a link to a device follows it" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/tonull"
case_ 3 "no process is reading it" "$W" "acceptance --junit on a FIFO without a reader: exit 3 at once" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/fifo"
case_ 3 "No space left on device" "$W" "acceptance --junit /dev/full: exit 3" -- "$A" -t "$THR" -r "$TMP/run" --junit /dev/full
case_ 3 "No space left on device" "$W" "acceptance --junit on a link to /dev/full: exit 3" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/full"
case_ 2 "--junit" "$W" "acceptance --junit on a directory: exit 2 naming the option" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/adir"
case_ 3 "No space left on device" "$W" "coll_sweep --csv /dev/full: exit 3" -- "$BIN/coll_sweep" -b 8 -e 8 -n 2 -w 0 --csv /dev/full
case_ 0 "allreduce" "$W" "coll_sweep --csv on a character device" -- "$BIN/coll_sweep" -b 8 -e 8 -n 2 -w 0 --csv "$W/null1"
case_ 3 "no process is reading it" "$W" "plan --json on a FIFO without a reader" -- "$PLAN" --model llama-70b --cluster a100 --gpus 256 --json "$W/fifo"
case_ 3 "No space left on device" "$W" "plan --json /dev/full" -- "$PLAN" --model llama-70b --cluster a100 --gpus 256 --json /dev/full
# a FIFO with a reader gets the text, and stays a FIFO. The reader holds the FIFO open
# before the writer starts (a reader still starting is no reader: the writer would
# refuse, and a plain `cat` would then wait forever for a writer), and gives up after 60 s.
cat >"$TMP/fifo_reader.py" <<'PY'
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)  # open now, writer or not
open(sys.argv[2], "w").close()                          # ready: the writer may start
data, wrote, end = b"", False, time.time() + 60
while time.time() < end:
    select.select([fd], [], [], 1)
    chunk = os.read(fd, 65536)
    data += chunk
    wrote = wrote or bool(chunk)
    if not chunk and wrote:
        break                                           # EOF after the writer's text
    if not chunk:
        time.sleep(0.02)                                # no writer yet
open(sys.argv[3], "wb").write(data)
PY
python3 "$TMP/fifo_reader.py" "$W/fifo" "$TMP/fifo.ready" "$TMP/fifo.read" & reader=$!
for _ in $(seq 300); do [ -e "$TMP/fifo.ready" ] && break; kill -0 $reader 2>/dev/null || break; sleep 0.1; done
expect_rc 0 "acceptance --junit into a FIFO with a reader" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/fifo"
wait $reader
expect_in "$TMP/fifo.read" "<testsuites" "the FIFO's reader got the JUnit XML"
[ -p "$W/fifo" ] && [ -c "$W/null1" ] && pass "the FIFO and the device are still a FIFO and a device" || fail "a special file was replaced"
# a link to a regular file: the target is replaced, the link stays a link
echo old >"$W/real.xml"; ln -s real.xml "$W/lnk"
expect_rc 0 "acceptance --junit on a link to a regular file" -- "$A" -t "$THR" -r "$TMP/run" --junit "$W/lnk"
[ -L "$W/lnk" ] && grep -q "<testsuites" "$W/real.xml" && pass "the link stays a link, its target holds the XML" || fail "the link was replaced"
rm -f "$W/lnk" "$W/real.xml"
# the Python writer (suite/atomic_file.py), the same rules
cat >"$TMP/pyw.py" <<PY
import sys
sys.path.insert(0, "$ROOT")
from suite import atomic_file
try:
    atomic_file.write_text(sys.argv[1], "x\\n")
    print("written")
except OSError as e:
    print("error:", e.strerror)
    sys.exit(2 if isinstance(e, IsADirectoryError) else 3)
PY
case_ 0 "written" "$W" "atomic_file on a character device" -- python3 "$TMP/pyw.py" "$W/null1"
case_ 3 "no process is reading it" "$W" "atomic_file on a FIFO without a reader" -- python3 "$TMP/pyw.py" "$W/fifo"
case_ 3 "No space left on device" "$W" "atomic_file on a link to /dev/full" -- python3 "$TMP/pyw.py" "$W/full"
case_ 2 "is a directory" "$W" "atomic_file on a directory" -- python3 "$TMP/pyw.py" "$W/adir"

# ---- the environment, parsed like options (run_all.sh --dry-run: nothing run) ----
E=$TMP/e; mkdir -p "$E"; : >"$E/afile"
for v in SLURM_NTASKS=abc SLURM_NTASKS=0 SLURM_NTASKS=2000000 'SLURM_NTASKS=4(x)' SLURM_JOB_NUM_NODES=x SLURM_NNODES=-1; do
    case_ 2 "variable ${v%%=*}" "$E" "run_all with $v: exit 2 naming the variable" -- env SLURM_JOB_ID=1 "$v" "$RA" --dry-run --quick
done
case_ 2 "variable TMPDIR" "$E" "run_all with TMPDIR set to a file" -- env TMPDIR="$E/afile" "$RA" --dry-run --quick
case_ 2 "variable BUILD" "$E" "run_all with BUILD set to a file" -- env BUILD="$E/afile" "$RA" --dry-run --quick
case_ 2 "variable BUILD" "$E" "run_all with BUILD empty" -- env BUILD= "$RA" --dry-run --quick
case_ 2 "is outside the checkout and does not exist" "$E" "run_all with BUILD a missing folder outside the checkout" -- env BUILD="$E/no-such-build" "$RA" --dry-run --quick
case_ 0 "8 ranks" "$E" "SLURM_NTASKS=4(x2) is 8 ranks" -- env SLURM_NTASKS='4(x2)' "$RA" --dry-run --quick
printf 'localhost  slots = 2\n' >"$TMP/spaced.hosts"
case_ 0 "2 ranks" "$E" "a hostfile line 'localhost  slots = 2' counts 2" -- "$RA" --dry-run --quick --hostfile "$TMP/spaced.hosts"
printf 'localhost slots=2000000\n' >"$TMP/huge.hosts"
case_ 3 "more than 1048576 slots" "$E" "hostfile slots above the rank cap" -- "$RA" --dry-run --quick --hostfile "$TMP/huge.hosts"

# ---- consumers refuse what is not a run ----
U=$TMP/user; mkdir -p "$U"; echo mine >"$U/report.md"; echo mine >"$U/summary.txt"; echo mine >"$U/index.html"
cp "$TESTS_DIR/../acceptance_cases/good/coll_sweep.csv" "$U/"
case_ 2 "not a run's results folder" "$U" "make plots RESULTS=a folder of user files" -- make -s -C "$ROOT" plots RESULTS="$U"
case_ 2 "not a run's results folder" "$U" "report.py on a folder of user files" -- python3 "$ROOT/scripts/report.py" --no-plots "$U"
case_ 2 "not a run's results folder" "$U" "acceptance -r a folder of user files" -- "$A" -t "$THR" -r "$U"
case_ 2 "not a run's results folder" "$U" "plan --fit a folder of user files" -- "$PLAN" --fit "$U"
case_ 2 "not a run's results folder" "$U" "plan --calibrate a folder of user files" -- "$PLAN" --calibrate "$U" -o "$TMP/c.txt"
# a CSV cut mid-row and non-finite evidence: no traceback, FILE:LINE, never evidence
G=$TMP/garbled; run_dir "$G"
printf '{"machine": {"hosts": [{"name": "n0", "ranks": [0]}, {"name": "n1", "ranks": [1]}]}}\n' >"$G/meta.json"
{ echo 'collective,bytes,group,busbw_GBps'; echo 'allreduce,1024,node0,nan'; echo 'allreduce,1024,node1,1.0'
  echo 'allreduce,2048,node0,inf'; echo 'allreduce,2048,node1,1.0'; printf 'allreduce,20'; } >"$G/coll_sweep.csv"
printf 'import sys\nsys.path.insert(0, "%s/scripts")\nimport suspects\nv = suspects.judge(sys.argv[1])\nprint("suspects:", v and v.suspects)\n' "$ROOT" >"$TMP/sus.py"
expect_rc 0 "suspects on a CSV cut mid-row: no traceback" -- python3 "$TMP/sus.py" "$G"
expect_in "$TMP/err" "coll_sweep.csv:6: garbled row" "the cut row is named FILE:LINE"
expect_in "$TMP/out" "suspects: []" "nan and inf bandwidths are never evidence"
H=$TMP/hosts; run_dir "$H"
printf '{"machine": {"hosts": [{"name": "n0 slots=99", "ranks": [0]}, {"name": "n1", "ranks": [1]}]}}\n' >"$H/meta.json"
expect_rc 0 "suspects with a host name holding a blank" -- python3 "$TMP/sus.py" "$H"
expect_in "$TMP/err" "holds a blank or a control character" "the host name is refused"
[ ! -e "$H/good-hosts.txt" ] && pass "no good-hosts.txt from a refused host list" || fail "good-hosts.txt written: $(cat "$H/good-hosts.txt")"

# ---- a run's records are protected ----
R=$TMP/rec; run_dir "$R"; run_dir "$TMP/other"; echo mine >"$TMP/other/summary.txt"; echo mine >"$R/report.md"
case_ 2 "results folder of a run" "$R" "acceptance --junit RUN/meta.json" -- "$A" -t "$THR" -r "$R" --junit "$R/meta.json"
case_ 2 "results folder of a run" "$R" "plan --fit RUN --csv RUN/steps.tsv" -- "$PLAN" --fit "$R" --csv "$R/steps.tsv"
case_ 2 "results folder of a run" "$R" "plan --calibrate RUN -o RUN/report.md" -- "$PLAN" --calibrate "$R" -o "$R/report.md"
case_ 2 "results folder of a run" "$R" "plan --json RUN/meta.json" -- "$PLAN" --model llama-70b --cluster a100 --gpus 256 --json "$R/meta.json"
case_ 2 "results folder of a run" "$TMP/other" "coll_sweep --csv OTHER_RUN/summary.txt" -- "$BIN/coll_sweep" -b 8 -e 8 --csv "$TMP/other/summary.txt"
case_ 2 "results folder of a run" "$R" "PARABENCH_RUN never lets meta.json be replaced" -- env PARABENCH_RUN="$R" "$PLAN" --model llama-70b --cluster a100 --gpus 256 --json "$R/meta.json"
case_ 2 "results folder of a run" "$R" "PARABENCH_RUN of another run does not open this one" -- env PARABENCH_RUN="$TMP/other" "$PLAN" --fit "$R" --csv "$R/plan_fit.csv"
case_ 2 "is a file -r/--results" "$R" "the run's own step still never overwrites a file it reads" -- env PARABENCH_RUN="$R" "$A" -t "$THR" -r "$R" --junit "$R/coll_sweep.csv"
expect_rc 0 "the run's own step (PARABENCH_RUN names it) writes its file there" -- env PARABENCH_RUN="$R" "$A" -t "$THR" -r "$R" --junit "$R/acceptance-junit.xml"
case_ 1 "no configuration is valid" "$TMP/w" "plan exits 1: no JSON written" -- "$PLAN" --model gpt-175b --cluster a100 --gpus 2 --json "$TMP/w/plan.json"

# ---- the results folder is claimed once ----
O=$TMP/claim; mkdir -p "$O"
for x in a b; do (BUILD=$BUILD "$RA" --quick --no-install --np 2 --steps coll_sweep --out "$O/same" >"$TMP/claim.$x" 2>&1; echo $? >"$TMP/claim.$x.rc") & done
wait
codes=$(cat "$TMP/claim.a.rc" "$TMP/claim.b.rc" | sort | tr '\n' ' ')
[ "$codes" = "0 2 " ] && pass "two runs into one --out at once: one runs, one exits 2" || fail "two runs into one --out: exits $codes"
cat "$TMP/claim.a" "$TMP/claim.b" >"$TMP/claim.both"
expect_in "$TMP/claim.both" "option --out: '$O/same'" "the second run names --out"
D=$TMP/defaults; mkdir -p "$D"
python3 - "$ROOT" "$D" <<'PY' && pass "default names taken in one second: each run gets its own folder" || fail "default names collide"
import os, sys
sys.path.insert(0, sys.argv[1]); os.chdir(sys.argv[2])
from suite import driver, options
names = set()
for _ in range(3):
    d = driver.Driver(options.Options())
    d.claim_results_dir()
    names.add(d.claimed)
assert len(names) == 3 and all(os.path.isfile(os.path.join(n, "steps.tsv")) for n in names), names
PY
# checked empty by the options, then taken by another run before this one claims it: exit 2
mkdir -p "$D/taken"
python3 - "$ROOT" "$D/taken" >"$TMP/taken.out" 2>&1 <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
from suite import driver, options
o = options.parse(["--out", sys.argv[2]])
open(os.path.join(sys.argv[2], "steps.tsv"), "w").close()  # the other run's claim
driver.Driver(o).claim_results_dir()
PY
[ $? = 2 ] && pass "a folder claimed between the check and the claim: exit 2" || fail "a claimed folder was taken twice"
expect_in "$TMP/taken.out" "is taken by another run" "the message says the folder is taken"

# ---- install and uninstall ----
P=$TMP/prefix
expect_rc 0 "make install" -- make -s -C "$ROOT" install BUILD="$BUILD" PREFIX="$P"
echo keep >"$TMP/victim"; echo "$TMP/victim" >>"$P/share/parabench/install-manifest.txt"
case_ 2 "is outside PREFIX" "$P" "make uninstall with a manifest naming a path outside PREFIX" -- make -s -C "$ROOT" uninstall PREFIX="$P"
[ -f "$TMP/victim" ] && pass "the path outside PREFIX is still there" || fail "uninstall removed $TMP/victim"
sed -i '$d' "$P/share/parabench/install-manifest.txt"
expect_rc 0 "make uninstall" -- make -s -C "$ROOT" uninstall PREFIX="$P"
mkdir -p "$P/bin"; echo mine >"$P/bin/plan"
case_ 2 "was not installed by parabench" "$P" "make install over a file it did not install" -- make -s -C "$ROOT" install BUILD="$BUILD" PREFIX="$P"
expect_rc 0 "make install FORCE=1 replaces it" -- make -s -C "$ROOT" install BUILD="$BUILD" PREFIX="$P" FORCE=1
make -s -C "$ROOT" uninstall PREFIX="$P" >/dev/null

# ---- make plots without its tools ----
NT=$TMP/notools; mkdir -p "$NT"; for t in make find sh bash env python3 mkdir cmp; do ln -s "$(command -v $t)" "$NT/$t"; done
case_ 2 "gnuplot is not installed" "$R" "make plots without gnuplot (the recipe exits 3)" -- env PATH="$NT" make -s -C "$ROOT" plots RESULTS="$R"
# Without git on PATH the Makefile's revision is "unknown": a make that compiles nothing must not record it as a build's.
VB=$TMP/vbuild; mkdir -p "$VB"; echo "0.9.0 feedbee" >"$VB/version.txt"
env PATH="$NT" make -s -C "$ROOT" plots BUILD="$VB" RESULTS="$R" >/dev/null 2>&1
[ "$(cat "$VB/version.txt")" = "0.9.0 feedbee" ] && pass "make plots without git leaves a build's version.txt as it was" ||
    fail "make plots without git rewrote BUILD/version.txt: '$(cat "$VB/version.txt")', was '0.9.0 feedbee'"
finish
