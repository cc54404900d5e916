#!/usr/bin/env bash
# Runs the table tests/bad_input: each case must exit with its code and print
# a message containing its fragment (which names the option).
source "$(dirname "$0")/lib.sh"
TABLE=$TESTS_DIR/../bad_input
# Inputs the cases may name as outputs, copied so that a regression destroys
# only these copies: a cluster file, a threshold file, a results directory.
mkdir -p "$TMP/in"
printf 'intra_bw_GBps = 1\ntflops = 1\n' >"$TMP/in/c.txt"
cp "$TESTS_DIR/../acceptance_cases/busbw.thr" "$TMP/in/t.thr"
cp -r "$TESTS_DIR/../acceptance_cases/good" "$TMP/in/run"
# case WORKER: every case of the table whose index is WORKER modulo WORKERS, one after
# another, each with its own out/err files; prints ok:/FAIL: lines (its own counters
# live in a subshell: the parent counts the lines).
WORKERS=2
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
        [ -x "$BIN/$bin" ] || { echo "FAIL: $bin is not built"; continue; }
        if [ "$ranks" -le 1 ]; then  # 0: no MPI at all; 1: MPI singleton, no mpirun
            timeout 60 "$BIN/$bin" "${argv[@]}" >"$out/out" 2>"$out/err" </dev/null
        else
            mpi "$ranks" "$BIN/$bin" "${argv[@]}" >"$out/out" 2>"$out/err"
        fi
        rc=$?
        if [ "$rc" -ne "$code" ]; then
            echo "FAIL: $bin $args: exit $rc, expected $code"; sed 's/^/  | /' "$out/err" | head -5
        elif ! grep -qF -- "$fragment" "$out/err" "$out/out"; then
            echo "FAIL: $bin $args: message does not contain '$fragment'"; sed 's/^/  | /' "$out/err" | head -5
        else
            echo "ok: $bin $args: exit $code, names '$fragment'"
        fi
    done <"$TABLE"
}
# Two at a time: each case waits mostly on mpirun's start, not on a core.
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
