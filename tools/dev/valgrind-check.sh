#!/usr/bin/env bash
# Valgrind memcheck on one small run of each binary (single-rank where the
# binary allows; p2p_sweep needs two), with Open MPI's suppression file and
# tests/valgrind.supp. Exits 1 if memcheck reports an error or a definite leak.
# Usage: tools/dev/valgrind-check.sh [BUILD_DIR]   (make valgrind)
set -u
cd "$(dirname "$0")/../.."
BIN=${1:-build}/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
SUPP=(--suppressions=tests/valgrind.supp)
[ -f /usr/share/openmpi/openmpi-valgrind.supp ] && SUPP+=(--suppressions=/usr/share/openmpi/openmpi-valgrind.supp)
VG=(valgrind -q --num-callers=40 --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 "${SUPP[@]}")
TINY="--layers 2 --hidden 64 --heads 2 --seq 16 -n 1 -w 0"
CASES=(
    "0|plan|--reproduce"
    "0|acceptance|--check acceptance/this-machine.thresholds"
    "1|coll_sweep|--coll all --sizes 1K -n 2 -w 0"
    "2|p2p_sweep|--mode all --sizes 1K -n 2 -w 0"
    "1|dp_allreduce|$TINY --overlap none,bucket"
    "1|tp_layer|$TINY --tp 1"
    "1|pp_pipeline|$TINY --stages 1 --micro-batches 2"
    "1|hybrid_3d|$TINY"
)
failed=()
for c in "${CASES[@]}"; do
    IFS='|' read -r np bin args <<<"$c"
    [ -x "$BIN/$bin" ] || { echo "valgrind: $bin not built, skipped"; continue; }
    log=$(mktemp)
    # shellcheck disable=SC2086
    if [ "$np" -le 1 ]; then "${VG[@]}" "$BIN/$bin" $args >/dev/null 2>"$log" </dev/null
    else mpirun -np "$np" --oversubscribe --bind-to none "${VG[@]}" "$BIN/$bin" $args >/dev/null 2>"$log" </dev/null; fi
    rc=$?
    if [ "$rc" -eq 0 ]; then echo "valgrind: $bin clean"; else
        echo "valgrind: $bin: exit $rc"; grep -E "^==[0-9]+==" "$log" | head -30; failed+=("$bin"); fi
    rm -f "$log"
done
[ ${#failed[@]} -eq 0 ] || { echo "valgrind: errors in ${failed[*]}"; exit 1; }
echo "valgrind: every binary clean"
