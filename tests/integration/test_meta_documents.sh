#!/usr/bin/env bash
# suite/meta.py lists the benchmarks' JSON documents of a results directory,
# never its own meta.json (test_meta_documents.py says why and what is checked).
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 "$TESTS_DIR/test_meta_documents.py" >"$TMP/check" 2>&1; then pass "$(tail -n 1 "$TMP/check")"
else fail "meta documents"; sed 's/^/  | /' "$TMP/check" >&2; fi
finish
