#!/usr/bin/env bash
# The layering and naming rules of common/ (tools/dev/check-layers.py and
# tools/dev/check-names.py, run by `make lint`): the tree follows them, and a copy
# of the tree with one include that climbs the layers, one bare include, one
# file put directly in common/, or a header exporting a name of another module
# is refused, each breach named; so is a comparison with a backend's or an
# engine's name outside their tables (tools/dev/check-registries.py). Also
# tools/dev/check-refs.py (`make docs-check`): a file the docs or code name must
# be in the repository.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

expect_rc 0 "the repository follows the layering rule" -- python3 "$ROOT/tools/dev/check-layers.py" "$ROOT"

cp -r "$ROOT/common" "$TMP/common"
printf '#include "workload/dp.h"\n' >>"$TMP/common/core/stats.c"
expect_rc 1 "core including workload is refused" -- python3 "$ROOT/tools/dev/check-layers.py" "$TMP"
expect_in "$TMP/err" 'common/core/stats.c: includes "workload/dp.h": layer core (0) may not include workload (5)' "the breach is named"

cp "$ROOT/common/core/stats.c" "$TMP/common/core/stats.c"
printf '#include "compute/compute.h"\n' >>"$TMP/common/coll/p2p.c"
expect_rc 1 "coll including compute (same rank) is refused" -- python3 "$ROOT/tools/dev/check-layers.py" "$TMP"
expect_in "$TMP/err" "layer coll (3) may not include compute (3)" "the sibling breach is named"

cp "$ROOT/common/coll/p2p.c" "$TMP/common/coll/p2p.c"
printf '#include "stats.h"\n' >>"$TMP/common/core/error.c"
touch "$TMP/common/loose.c" # refs: example
expect_rc 1 "a bare include and a loose file are refused" -- python3 "$ROOT/tools/dev/check-layers.py" "$TMP"
expect_in "$TMP/err" 'common/core/error.c: includes "stats.h" without its folder' "the bare include is named"
expect_in "$TMP/err" "common/loose.c: sits directly in common/" "the loose file is named" # refs: example

expect_rc 0 "the repository follows the naming rule" -- python3 "$ROOT/tools/dev/check-names.py" "$ROOT"
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf 'int pb_percentile(const double *x, int n);\n' >>"$TMP/common/core/stats.h"
printf 'typedef struct { int a; } pb_sample;\n' >>"$TMP/common/core/stats.h"
printf 'static inline int pb_stats_ok(void) { return 1; }\nstatic inline int pb_mean2(int a) { return a; }\n' >>"$TMP/common/core/stats.h"
expect_rc 1 "a header exporting names of another module is refused" -- python3 "$ROOT/tools/dev/check-names.py" "$TMP"
expect_in "$TMP/err" "common/core/stats.h: exports pb_percentile, not pb_stats or pb_stats_*" "the function is named"
expect_in "$TMP/err" "exports pb_sample," "the type is named"
expect_in "$TMP/err" "exports pb_mean2," "an inline function after another is named"
if grep -q "pb_stats_ok" "$TMP/err"; then fail "a conforming name was flagged"; else pass "a conforming name passes"; fi
expect_rc 0 "only the backend and engine tables compare their names" -- python3 "$ROOT/tools/dev/check-registries.py" "$ROOT"
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf 'static int is_nccl(const char *s) { return strcmp(s, "nccl") == 0; }\n' >>"$TMP/common/harness/bench.c"
printf 'static int same(const pb_compute *eng, const char *s) { return !strncmp(eng->name, s, 4); }\n' >>"$TMP/common/workload/dp.c"
expect_rc 1 "a comparison with a backend or engine name outside their tables is refused" -- python3 "$ROOT/tools/dev/check-registries.py" "$TMP"
expect_in "$TMP/err" 'common/harness/bench.c:' "the literal name is found"
expect_in "$TMP/err" 'compares with "nccl", a name of the backend or engine table' "the name is quoted"
expect_in "$TMP/err" "common/workload/dp.c:" "a comparison of an engine's name is found"
expect_rc 0 "every file the repository names is in it" -- python3 "$ROOT/tools/dev/check-refs.py" "$ROOT"
mkdir -p "$TMP/refs/docs" && git -C "$TMP/refs" init -q
printf 'See docs/here.md and docs/gone.md, and DESIGN.md.\n' >"$TMP/refs/docs/here.md" # refs: example
git -C "$TMP/refs" add docs/here.md # refs: example
expect_rc 1 "a reference to a missing file is refused" -- python3 "$ROOT/tools/dev/check-refs.py" "$TMP/refs"
expect_in "$TMP/err" "docs/here.md:1: refers to docs/gone.md, which is not in the repository" "the missing path is named" # refs: example
expect_in "$TMP/err" "refers to DESIGN.md" "a bare Markdown name is checked too" # refs: example
if grep -q "refers to docs/here.md" "$TMP/err"; then fail "a present file was flagged"; else pass "a present file passes"; fi # refs: example
finish
