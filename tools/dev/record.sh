#!/usr/bin/env bash
# record.sh NAME COMMAND...: run COMMAND from the repository root and keep its
# output (stdout and stderr) as docs/measured/NAME.txt (PB_RECORD_DIR instead:
# dev/records for the records of development runs), below a header saying
# what ran, when, at which commit and on what machine. The docs quote figures
# from these files only (make docs-check). Exit: the command's status; 2 usage.
set -u
[ $# -ge 2 ] || { echo "usage: tools/dev/record.sh NAME COMMAND..." >&2; exit 2; }
name=$1; shift
cd "$(dirname "$0")/../.." || exit 3
dir=${PB_RECORD_DIR:-docs/measured}
out=$dir/$name.txt
mkdir -p "$dir"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')
{
    echo "# command: $(printf '%s ' "$@" | tr -s ' \n' ' ')"   # one line, however long
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "# machine: $(hostname), $cpu, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), cpu flags of note: ${flags:-none of avx2 avx512f avx512_bf16 amx_bf16}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# mpi: $(mpirun --version 2>/dev/null | head -1)"
} >"$out.tmp"
"$@" >>"$out.tmp" 2>&1
rc=$?
echo "# exit: $rc" >>"$out.tmp"
mv "$out.tmp" "$out"
echo "recorded $out (exit $rc)"
exit "$rc"
