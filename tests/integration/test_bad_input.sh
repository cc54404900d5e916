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
n=0
while IFS='|' read -r bin ranks args code fragment; do
    case "$bin" in ''|\#*) continue ;; esac
    bin=$(echo $bin) ranks=$(echo $ranks) code=$(echo $code)
    fragment=$(echo "$fragment" | sed 's/^ *//; s/ *$//')
    eval "argv=($args)"    # '' stands for an empty argument
    [ -x "$BIN/$bin" ] || { fail "$bin is not built"; continue; }
    if [ "$ranks" -le 1 ]; then  # 0: no MPI at all; 1: MPI singleton, no mpirun
        timeout 60 "$BIN/$bin" "${argv[@]}" >"$TMP/out" 2>"$TMP/err" </dev/null
    else
        mpi "$ranks" "$BIN/$bin" "${argv[@]}" >"$TMP/out" 2>"$TMP/err"
    fi
    rc=$?
    n=$((n + 1))
    if [ "$rc" -ne "$code" ]; then
        fail "$bin $args: exit $rc, expected $code"; sed 's/^/  | /' "$TMP/err" | head -5 >&2
    elif ! grep -qF -- "$fragment" "$TMP/err" "$TMP/out"; then
        fail "$bin $args: message does not contain '$fragment'"; sed 's/^/  | /' "$TMP/err" | head -5 >&2
    else
        pass "$bin $args: exit $code, names '$fragment'"
    fi
done <"$TABLE"
echo "$n cases"
finish
