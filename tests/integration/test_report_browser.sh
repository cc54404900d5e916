#!/usr/bin/env bash
# The report as a person sees it: a real run_all.sh --quick results directory's
# index.html opened in headless Chromium (tools/dev/check-report-browser.py, over
# the DevTools pipe): no console error, every image loaded, a screenshot 1280
# pixels wide. Then the checker must catch what it is for, on copies of the
# page: an image whose file is missing, an image whose data is corrupt, a
# console error. Skips without Chromium (scripts/install-deps.sh --for report).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
CHECK=$ROOT/tools/dev/check-report-browser.py
[ -n "${CHROMIUM:-}" ] || for b in chromium chromium-headless-shell chromium-browser google-chrome; do
    command -v "$b" >/dev/null && { CHROMIUM=$b; break; }
done
command -v "${CHROMIUM:-chromium}" >/dev/null || skip_test "no Chromium (scripts/install-deps.sh --for report installs it)"
export CHROMIUM

RUN=$TMP/run
BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --np 2 --quiet --out "$RUN" >"$TMP/run.out" 2>&1
[ -s "$RUN/index.html" ] || { cat "$TMP/run.out" >&2; fail "run_all.sh --quick wrote no index.html"; finish; }

expect_rc 0 "the quick run's index.html: no console error, every image loaded" -- \
    python3 "$CHECK" --screenshot "$TMP/shot.png" "$RUN"
expect_in "$TMP/out" "no console errors, every image loaded" "the checker says what it checked"
if python3 - "$TMP/shot.png" <<'PY'
import struct, sys
head = open(sys.argv[1], "rb").read(24)
assert head[:8] == b"\x89PNG\r\n\x1a\n", head[:8]
assert struct.unpack(">II", head[16:24]) == (1280, 900), struct.unpack(">II", head[16:24])
PY
then pass "screenshot: a PNG, 1280 x 900"; else fail "screenshot"; fi

# mutate SRC DEST PYTHON: copy the run's page to DEST/index.html, changed by PYTHON (on `page`).
mutate() {
    mkdir -p "$2"
    python3 -c "import sys; page = open(sys.argv[1]).read(); $3; open(sys.argv[2], 'w').write(page)" \
        "$1/index.html" "$2/index.html"
}
mutate "$RUN" "$TMP/missing" "import re; page = re.sub(r\"src='data:image/png;base64,[^']*'\", \"src='no-such-figure.png'\", page, count=1)"
expect_rc 1 "an image whose file is missing is caught" -- python3 "$CHECK" "$TMP/missing"
expect_in "$TMP/out" "image did not load" "missing image: named"
mutate "$RUN" "$TMP/corrupt" "page = page.replace(\"src='data:image/png;base64,iVBOR\", \"src='data:image/png;base64,AAAA\", 1)"
expect_rc 1 "an image whose data is corrupt is caught" -- python3 "$CHECK" "$TMP/corrupt"
expect_in "$TMP/out" "image did not load: Bus bandwidth" "corrupt image: named by its caption"
mutate "$RUN" "$TMP/console" "page = page.replace('</body>', '<script>console.error(\"injected\")</script></body>')"
expect_rc 1 "a console error is caught" -- python3 "$CHECK" "$TMP/console"
expect_in "$TMP/out" "console error: injected" "console error: its text"
expect_rc 2 "not a results directory: usage" -- python3 "$CHECK" "$TMP/no-such-dir"
finish
