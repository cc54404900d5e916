#!/usr/bin/env bash
# suite/guard.py, the guard run_all puts above every step: when its parent (the
# driver) dies by SIGKILL it ends the step's tree, with SIGTERM first and SIGKILL
# after STOP_GRACE seconds for whatever ignored the TERM. The step here notes
# when the TERM came and goes on; its child ignores SIGTERM; so only the
# escalation can end them, and it must come no sooner than STOP_GRACE later.
. "$(dirname "$0")/lib.sh"
GUARD=$TESTS_DIR/../../suite/guard.py
GRACE=2

# The step: a shell that writes when SIGTERM came and carries on, with a
# sleeping child that ignores it; both write their PIDs.
cat >"$TMP/step.sh" <<EOF
trap 'echo \$EPOCHREALTIME >"$TMP/term.at"' TERM
echo \$\$ >"$TMP/step.pid"
(trap '' TERM; exec sleep 120) &
echo \$! >"$TMP/child.pid"
while :; do wait; sleep 0.05; done  # a TERM ends the wait; the step waits again
EOF
# The driver stand-in: it starts the guard in a session of its own, as run_all does
# (the guard TERMs its whole process group), and waits; SIGKILL to it is the test.
STOP_GRACE=$GRACE bash -c "setsid python3 '$GUARD' \$\$ bash '$TMP/step.sh' & wait" &
driver=$!
for _ in $(seq 100); do [ -s "$TMP/child.pid" ] && break; sleep 0.1; done
[ -s "$TMP/child.pid" ] || { fail "the guarded step never started"; kill -KILL "$driver"; finish; }
step=$(cat "$TMP/step.pid") child=$(cat "$TMP/child.pid")
guard=$(descendants "$driver" | head -1)

kill -KILL "$driver"
wait "$driver" 2>/dev/null
t0=$(date +%s.%N)
# TERM is ignored, so the step must outlive it: still there half a grace period later.
sleep "$(awk -v g="$GRACE" 'BEGIN { print g / 2 }')"
if kill -0 "$step" 2>/dev/null && kill -0 "$child" 2>/dev/null; then pass "the step and its child outlived SIGTERM, as they asked"
else fail "the step ended within half the grace period: it did not outlive SIGTERM, so this test proves nothing"; fi
left=""
for _ in $(seq 100); do  # KILL at STOP_GRACE; 10 s more for a loaded machine
    left=""
    for p in $step $child; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    [ -z "$left" ] && break
    sleep 0.1
done
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ -z "$left" ]; then pass "the guard SIGKILLed the step and its child ${took} s after the driver died"
else fail "the step's processes outlived the guard's escalation:$left"; kill -KILL $left 2>/dev/null; fi
# The grace: SIGKILL no sooner than STOP_GRACE after SIGTERM (0.5 s allowed
# for the step's trap to run late on a loaded machine; without the grace the gap is ~0).
gone=$(date +%s.%N)
if [ -s "$TMP/term.at" ]; then
    gap=$(awk -v a="$(cat "$TMP/term.at")" -v b="$gone" 'BEGIN { printf "%.1f", b - a }')
    awk -v gap="$gap" -v g="$GRACE" 'BEGIN { exit !(gap >= g - 0.5) }' && pass "SIGKILL came ${gap} s after SIGTERM (STOP_GRACE $GRACE s)" \
        || fail "SIGKILL came ${gap} s after SIGTERM, before STOP_GRACE ($GRACE s)"
else fail "the step never saw SIGTERM: the guard went straight to SIGKILL"; fi
# The guard itself is gone too (it returns after the KILL).
[ -n "$guard" ] && ! kill -0 "$guard" 2>/dev/null && pass "the guard exited after ending the step" \
    || { fail "the guard ($guard) is still running"; [ -n "$guard" ] && kill -KILL "$guard" 2>/dev/null; }

# The driver's own stop (suite/processes.stop_tree), with a second signal during it.
if python3 "$TESTS_DIR/test_stop_tree.py" >"$TMP/stop_tree.out" 2>&1; then pass "stop_tree: $(grep -c '^ok' "$TMP/stop_tree.out") checks"
else fail "stop_tree"; sed 's/^/  | /' "$TMP/stop_tree.out" >&2; fi
finish
