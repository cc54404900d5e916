#!/usr/bin/env bash
# suite/atomic_file.py: every Python writer writes a whole file or none, through a temporary of
# its own (test_atomic_file.py says what is checked).
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 "$TESTS_DIR/test_atomic_file.py" >"$TMP/check" 2>&1; then pass "atomic_file: $(tail -n 1 "$TMP/check")"
else fail "atomic_file"; sed 's/^/  | /' "$TMP/check" >&2; fi
finish
