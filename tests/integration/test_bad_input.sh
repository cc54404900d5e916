#!/usr/bin/env bash
# Runs the table tests/bad_input: each case must exit with its code and print
# a message containing its fragment (which names the option). A case run as one
# process says a refusal (exit 2) in one line on stderr, and a failed verdict
# (exit 1) on stdout alone.
source "$(dirname "$0")/lib.sh"
TABLE=$TESTS_DIR/../bad_input
# Inputs the cases may name as outputs, copied so that a regression destroys
# only these copies: a cluster file, a threshold file, a results directory.
mkdir -p "$TMP/in"
printf 'intra_bw_GBps = 1\ntflops = 1\n' >"$TMP/in/c.txt"
cp "$TESTS_DIR/../acceptance_cases/busbw.thr" "$TMP/in/t.thr"
cp -r "$TESTS_DIR/../acceptance_cases/good" "$TMP/in/run"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
# Inputs made here from one good line each, every way a line-oriented file can be odd: cluster
# files (cl-*.txt), rank maps (rm-*.txt), threshold files (th-*.thr), results directories (res-*/).
long=$(head -c 5000 /dev/zero | tr '\0' a)
cluster() { printf "$2" >"$TMP/in/cl-$1.txt"; }
cluster hex 'intra_bw_GBps = 0x10\ntflops = 1\n'
cluster plus 'intra_bw_GBps = +100\ntflops = 1\n'
cluster dup 'intra_bw_GBps = 1\nintra_bw_GBps = 2\ntflops = 1\n'
cluster bom '\xef\xbb\xbfintra_bw_GBps = 100\ntflops = 100\n'
cluster bommid 'intra_bw_GBps = 1\n\xef\xbb\xbftflops = 1\n'
cluster cr 'intra_bw_GBps = 1\rtflops = 1\r'
cluster crlf 'intra_bw_GBps = 100\r\ntflops = 100\r\n'
cluster nul 'intra_bw_GBps = 1\ntfl\0ops = 1\n'
cluster long "# $long\nintra_bw_GBps = 1\ntflops = 1\n"
cluster unknown 'intra_bw_GBps = 1\ntflops = 1\nspeed = 9\n'
cluster missing 'intra_bw_GBps = 1\n'
cluster negative 'intra_bw_GBps = -1\ntflops = 1\n'
cluster inf 'intra_bw_GBps = inf\ntflops = 1\n'
cluster nan 'intra_bw_GBps = nan\ntflops = 1\n'
cluster empty 'intra_bw_GBps =\ntflops = 1\n'
cluster noeq 'intra_bw_GBps 1\ntflops = 1\n'
cluster comments '# only a comment\n'
cluster zero 'intra_bw_GBps = 0\ntflops = 1\n'
cluster gpn 'intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = 2.5\n'
cluster huge 'intra_bw_GBps = 1e999\ntflops = 1\n'
rankmap() { printf "$2" >"$TMP/in/rm-$1.txt"; }
rankmap wrap '0 0 0 0\n4294967297 0 0 0\n'
rankmap plus '0 0 0 0\n+1 0 0 0\n'
rankmap hex '0 0 0 0\n0x1 0 0 0\n'
rankmap extra '0 0 0 0\n0 0 0 0 7\n'
rankmap few '0 0 0\n'
rankmap twice '0 0 0 0\n0 0 0 0\n'
rankmap outside '0 1 0 0\n'
rankmap missing '# nothing placed\n'
rankmap neg '0 0 0 0\n-1 0 0 0\n'
thr() { printf "$2" >"$TMP/in/th-$1.thr"; }
rule='busbw coll=allreduce size=64M >= 1 GB/s'
thr cr "$rule\r$rule\r"
thr bommid "$rule\n\xef\xbb\xbf$rule\n"
thr long "# $long\n$rule\n"
thr nul "$rule\n\0\n"
thr crlf "$rule\r\n"
# results(NAME, PRINTF-TEXT): a run's results directory whose coll_sweep.csv is the text.
results() { mark_run "$TMP/in/res-$1"; printf "$2" >"$TMP/in/res-$1/coll_sweep.csv"; }
head='# parabench coll_sweep\ncollective,bytes,count,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong\n'
row='allreduce,67108864,16777216,2,intra,30000,2.2,3.0'
results completemid "$head$row,0\n# complete\n$row,0\n"
results nowrong "# parabench coll_sweep\ncollective,bytes,count,nranks,link_class,time_us,algbw_GBps,busbw_GBps\n$row\n# complete\n"
results unchecked "$head$row,-1\n# complete\n"
results wrongneg "$head$row,-2\n# complete\n"
results wrongone "$head$row,1\n# complete\n"
results wrongfrac "$head$row,0.5\n# complete\n"
results cr "$head$row,0\r# complete\r"
results bom "\xef\xbb\xbf$head$row,0\n# complete\n"
results bommid "$head\xef\xbb\xbf$row,0\n# complete\n"
results long "# $long$long\n$head$row,0\n# complete\n"
results headeronly "$head# complete\n"
results twocomplete "$head$row,0\n# complete\n# complete\n"
mkdir -p "$TMP/in/empty" "$TMP/in/oldrun"; mark_run "$TMP/in/emptyrun"
# FIFOs with no writer: an input read by one process is refused after the wait, one read by every rank at once
mkfifo "$TMP/in/fifo"; export PARABENCH_INPUT_WAIT_S=1
printf 'localhost slots=2 bogus=\n' >"$TMP/in/unparsable.hosts" # a token mpirun cannot parse
touch "$TMP/in/oldrun/steps.tsv" "$TMP/in/oldrun/meta.json"
# case WORKER: every case of the table whose index is WORKER modulo WORKERS, one after
# another, each with its own out/err files; prints ok:/FAIL: lines (its own counters
# live in a subshell: the parent counts the lines).
WORKERS=4
cases() {
    local worker=$1 i=0 bin ranks args code fragment rc out=$TMP/w$1
    mkdir -p "$out"
    while IFS='|' read -r bin ranks args code fragment; do
        case "$bin" in ''|\#*) continue ;; esac
        i=$((i + 1))
        [ $((i % WORKERS)) -eq "$worker" ] || continue
        bin=$(echo $bin) ranks=$(echo $ranks) code=$(echo $code)
        fragment=$(echo "$fragment" | sed 's/^ *//; s/ *$//')
        eval "argv=($args)"    # '' stands for an empty argument
        path=$BIN/$bin
        [ "$bin" = run_all.sh ] && path=$ROOT/run_all.sh # the driver's own options: no MPI, nothing built
        [ "$bin" = compare-osu.sh ] && path=$ROOT/scripts/compare-osu.sh # checked before OSU is looked for
        [ -x "$path" ] || { echo "FAIL: $bin is not built"; continue; }
        if [ "$ranks" -le 1 ]; then  # 0: no MPI at all; 1: MPI singleton, no mpirun
            BUILD=$BUILD timeout 60 "$path" "${argv[@]}" >"$out/out" 2>"$out/err" </dev/null
        else
            mpi "$ranks" "$BIN/$bin" "${argv[@]}" >"$out/out" 2>"$out/err"
        fi
        rc=$?
        if [ "$rc" -ne "$code" ]; then
            echo "FAIL: $bin $args: exit $rc, expected $code"; sed 's/^/  | /' "$out/err" | head -5
        elif ! grep -qF -- "$fragment" "$out/err" "$out/out"; then
            echo "FAIL: $bin $args: message does not contain '$fragment'"; sed 's/^/  | /' "$out/err" | head -5
        elif [ "$ranks" -le 1 ] && [ "$code" = 2 ] && [ -n "${args// /}" ] && [ "$(grep -c . "$out/err")" != 1 ]; then
            # one process, no mpirun noise: a refusal is its one line, not a reader's too
            echo "FAIL: $bin $args: $(grep -c . "$out/err") lines on stderr, one expected"; sed 's/^/  | /' "$out/err" | head -5
        elif [ "$ranks" -le 1 ] && [ "$code" = 2 ] && [ -n "${args// /}" ] && ! head -1 "$out/err" | grep -q "^${bin}: "; then
            # the line says which program refused, by its name (as run, the path before it dropped)
            echo "FAIL: $bin $args: the message does not start '$bin: '"; sed 's/^/  | /' "$out/err" | head -5
        elif [ "$ranks" -le 1 ] && [ "$code" = 1 ] && [ -s "$out/err" ]; then
            # a failed verdict is the verdict on stdout: a file it refused is named there, once
            echo "FAIL: $bin $args: exit 1 with stderr"; sed 's/^/  | /' "$out/err" | head -5
        else
            echo "ok: $bin $args: exit $code, names '$fragment'"
        fi
    done <"$TABLE"
}
# Four at a time: each case waits mostly on mpirun's start (1.4 s, 0.06 s of CPU), not on a core.
for w in $(seq 0 $((WORKERS - 1))); do cases "$w" >"$TMP/cases.$w" 2>&1 9>&1 & done
wait
n=0
while IFS= read -r line; do
    case $line in
        ok:*) pass "${line#ok: }"; n=$((n + 1)) ;;
        FAIL:*) fail "${line#FAIL: }"; n=$((n + 1)) ;;
        *) echo "$line" >&2 ;;
    esac
done < <(cat "$TMP"/cases.*)
echo "$n cases"
finish
