#!/usr/bin/env bash
# The layering and naming rules of common/ (tools/dev/check-layers.py and
# tools/dev/check-names.py, run by `make lint`): the tree follows them, and a copy
# of the tree with one include that climbs the layers, one bare include, one
# file put directly in common/, or a header exporting a name of another module
# (inside `extern "C"` too) is refused, each breach named; so are two files of
# common/ that use each other, or a longer loop (tools/dev/check-cycles.py),
# and a comparison with a backend's or an
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
# A header nvcc reads too wraps its declarations in extern "C" { ... }: they
# are exported all the same, and a struct after the block is still seen.
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf '#ifdef __cplusplus\nextern "C" {\n#endif\nint pb_cuda_scale(void);\nint pb_kernels_cuda_ok(void);\n#ifdef __cplusplus\n}\n#endif\ntypedef struct { int a; } pb_cuda_after;\n' >>"$TMP/common/compute/kernels_cuda.h"
expect_rc 1 "a name of another module inside extern \"C\" is refused" -- python3 "$ROOT/tools/dev/check-names.py" "$TMP"
expect_in "$TMP/err" "common/compute/kernels_cuda.h: exports pb_cuda_scale, not pb_kernels_cuda or pb_kernels_cuda_*" "the name inside the block is named"
expect_in "$TMP/err" "exports pb_cuda_after," "a type after the block is named"
if grep -q "pb_kernels_cuda_ok" "$TMP/err"; then fail "a conforming name inside extern \"C\" was flagged"; else pass "a conforming name inside extern \"C\" passes"; fi

expect_rc 0 "no two files of common/ use each other" -- python3 "$ROOT/tools/dev/check-cycles.py" "$ROOT"
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
# pp_check.c uses pp_stack.c; pp_stack.c calling back into pp_check.c closes a loop.
printf 'uint64_t pb_pp_stack_reference(const pb_pp_stack_config *c) { return pb_pp_reference_bytes(c); }\n' >>"$TMP/common/workload/pp_stack.c"
expect_rc 1 "two files that use each other are refused" -- python3 "$ROOT/tools/dev/check-cycles.py" "$TMP"
expect_in "$TMP/err" "common/workload/pp_check.c (" "the first file of the loop is named"
expect_in "$TMP/err" "-> common/workload/pp_stack.c (pb_pp_reference_bytes) -> common/workload/pp_check.c: files that use each other" "the loop and the name that closes it are named"
# The same use through an inline function of a header pp_stack.c includes.
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf 'static inline uint64_t pb_pp_extra_ref(const pb_pp_stack_config *c) { return pb_pp_reference_bytes(c); }\n' >"$TMP/common/workload/pp_extra.h"
printf '#include "workload/pp_extra.h"\n' >>"$TMP/common/workload/pp_stack.c"
expect_rc 1 "a use through a header's inline function is refused" -- python3 "$ROOT/tools/dev/check-cycles.py" "$TMP"
expect_in "$TMP/err" "-> common/workload/pp_stack.c (pb_pp_reference_bytes) -> common/workload/pp_check.c" "the header's use is the file's"
# A loop of three files, each through one call: stats.c -> csv.c -> parse.c -> stats.c.
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf 'int pb_loop_a(void);\nint pb_loop_a(void) { return pb_loop_b(); }\n' >>"$TMP/common/core/stats.c"
printf 'int pb_loop_b(void);\nint pb_loop_b(void) { return pb_loop_c(); }\n' >>"$TMP/common/core/csv.c"
printf 'int pb_loop_c(void);\nint pb_loop_c(void) { return pb_loop_a(); }\n' >>"$TMP/common/core/parse.c"
expect_rc 1 "a loop of three files is refused" -- python3 "$ROOT/tools/dev/check-cycles.py" "$TMP"
expect_in "$TMP/err" "common/core/csv.c (pb_loop_c) -> common/core/parse.c (pb_loop_a) -> common/core/stats.c (pb_loop_b) -> common/core/csv.c" "the three files are named in order"
# A name in a comment or a string, or a static function of the same name, is no use.
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf '/* pb_pp_reference_bytes */ static const char *why = "pb_pp_reference_bytes";\n' >>"$TMP/common/workload/pp_stack.c"
printf 'static uint64_t pb_pp_reference_bytes(void) { return 0; }\n' >>"$TMP/common/workload/pp_stack.c"
expect_rc 0 "comments, strings and static functions make no use" -- python3 "$ROOT/tools/dev/check-cycles.py" "$TMP"
expect_rc 0 "only the backend and engine tables compare their names" -- python3 "$ROOT/tools/dev/check-registries.py" "$ROOT"
rm -rf "$TMP/common" && cp -r "$ROOT/common" "$TMP/common"
printf 'static int is_nccl(const char *s) { return strcmp(s, "nccl") == 0; }\n' >>"$TMP/common/harness/bench.c"
printf 'static int same(const pb_compute *eng, const char *s) { return !strncmp(eng->name, s, 4); }\n' >>"$TMP/common/workload/dp.c"
expect_rc 1 "a comparison with a backend or engine name outside their tables is refused" -- python3 "$ROOT/tools/dev/check-registries.py" "$TMP"
expect_in "$TMP/err" 'common/harness/bench.c:' "the literal name is found"
expect_in "$TMP/err" 'compares with "nccl", a name of the backend or engine table' "the name is quoted"
expect_in "$TMP/err" "common/workload/dp.c:" "a comparison of an engine's name is found"
# check-refs reads the tracked files from git: a copy without git (tests/mutate.py's
# scratch tree) has none to check, the scratch repository below still does.
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    expect_rc 0 "every file the repository names is in it" -- python3 "$ROOT/tools/dev/check-refs.py" "$ROOT"
fi
mkdir -p "$TMP/refs/docs" && git -C "$TMP/refs" init -q
printf 'See docs/here.md and docs/gone.md, and DESIGN.md.\n' >"$TMP/refs/docs/here.md" # refs: example
git -C "$TMP/refs" add docs/here.md # refs: example
expect_rc 1 "a reference to a missing file is refused" -- python3 "$ROOT/tools/dev/check-refs.py" "$TMP/refs"
expect_in "$TMP/err" "docs/here.md:1: refers to docs/gone.md, which is not in the repository" "the missing path is named" # refs: example
expect_in "$TMP/err" "refers to DESIGN.md" "a bare Markdown name is checked too" # refs: example
if grep -q "refers to docs/here.md" "$TMP/err"; then fail "a present file was flagged"; else pass "a present file passes"; fi # refs: example
finish
