#!/usr/bin/env bash
# `make mutate-sample`'s generator (tests/mutate_sample.py): the same seed gives
# the same sample, each operator class gives a compiling mutant, comments,
# strings, messages and declarations are never mutated, and an entry of the
# equivalents file leaves the score. No build and no mutant run: a few seconds.
. "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || skip_test "no C compiler to check that mutants compile"
if python3 "$TESTS_DIR/test_mutate_sample.py" >"$TMP/out" 2>&1; then pass "$(tail -1 "$TMP/out")"
else fail "mutant generator"; sed 's/^/  | /' "$TMP/out" >&2; fi
# The equivalents file kept in the repository parses (a malformed entry is exit 2).
python3 -c "import sys; sys.path.insert(0, '$TESTS_DIR/..'); import mutate_sample as S; S.parse_equivalents(S.EQUIV)" \
    2>"$TMP/err" && pass "tests/mutants-equivalent.txt parses" || { fail "tests/mutants-equivalent.txt"; cat "$TMP/err" >&2; }
finish
