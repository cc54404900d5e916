#!/usr/bin/env bash
# The README's first screen is a newcomer's path: the two commands, one benchmark
# by hand and where the results are. The benchmark it shows is run here as written
# (build/bin -> this build), and the column header the README quotes must be the
# one it prints. docs/README.md, the index, must link every page of docs/ and only
# pages that exist.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
SCREEN=$TMP/screen; head -n 66 "$ROOT/README.md" >"$SCREEN"

for want in './run_all.sh' 'make test' 'mpirun -np 2 build/bin/coll_sweep' 'index.html' 'results/<date>-<time>-<host>/' 'docs/README.md'; do
    expect_in "$SCREEN" "$want" "the README's first screen shows '$want'"
done

# The command by hand, as the README writes it.
cmd=$(grep -m1 '^mpirun -np 2 build/bin/coll_sweep' "$SCREEN" | sed 's/ *#.*//')
[ -n "$cmd" ] || fail "no 'mpirun -np 2 build/bin/coll_sweep' line on the README's first screen"
read -r -a words <<<"${cmd#mpirun -np 2 }"
words[0]=$BIN/coll_sweep
if mpi 2 "${words[@]}" >"$TMP/out" 2>"$TMP/err"; then pass "the README's command runs: ${cmd}"
else fail "the README's command '$cmd' failed"; sed 's/^/  | /' "$TMP/err" >&2; fi
norm() { tr -s ' ' | sed 's/ *$//'; }
quoted=$(grep -m1 '^#  *size  *count' "$SCREEN" | norm)
printed=$(grep -m1 '^#  *size  *count' "$TMP/out" | norm)
[ -n "$quoted" ] && [ "$quoted" = "$printed" ] && pass "the header the README quotes is the one coll_sweep prints" ||
    fail "README quotes '$quoted'; coll_sweep prints '$printed'"
rows=$(grep -c '^ *[0-9]' "$TMP/out")
[ "$rows" -eq 24 ] && pass "one row per size, 8 B to 64 MiB (24 rows)" || fail "$rows rows, expected 24 (8 B to 64 MiB by factors of 2)"

# The index: every page of docs/ linked, every link a file.
INDEX=$ROOT/docs/README.md
missing=""
for page in "$ROOT"/docs/*.md; do
    name=$(basename "$page")
    [ "$name" = README.md ] && continue
    grep -q "]($name" "$INDEX" || missing="$missing $name"
done
[ -z "$missing" ] && pass "docs/README.md links every page of docs/" || fail "docs/README.md does not link:$missing"
broken=""
while read -r link; do
    [ -e "$ROOT/docs/${link%%#*}" ] || broken="$broken $link"
done < <(grep -o '](\([^)]*\))' "$INDEX" | sed 's/^](//; s/)$//' | grep -v '^http')
[ -z "$broken" ] && pass "every link of docs/README.md names a file" || fail "docs/README.md links missing files:$broken"
finish
