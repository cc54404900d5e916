#!/usr/bin/env python3
"""suite/processes.stop_tree with a step that ignores SIGTERM (run by
test_guard.sh): alone it waits STOP_GRACE and then KILLs; a second signal
during that wait makes it KILL at once, and that signal is used up as "stop
faster", so the driver's next wait (the report) does not take it as a new
interruption. Exit 1 if a check fails."""
import os
import subprocess
import sys
import threading
import time

os.environ["STOP_GRACE"] = "4"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from suite import processes  # noqa: E402
from suite.processes import SIGNALS, Interrupted  # noqa: E402

FAILS = 0


def check(cond, what):
    global FAILS
    print(("ok: " if cond else "FAIL: ") + what)
    FAILS += 0 if cond else 1


def stubborn():
    """A step that ignores SIGTERM, in a session of its own as the driver starts steps."""
    return subprocess.Popen(["bash", "-c", "trap '' TERM; while :; do sleep 0.1; done"], start_new_session=True)


SIGNALS.install()
# Alone: TERM is ignored, KILL comes after the grace.
p = stubborn()
time.sleep(0.3)  # the trap is set
t0 = time.monotonic()
processes.stop_tree(p)
took = time.monotonic() - t0
check(p.returncode == -9 and took >= processes.STOP_GRACE - 0.5,
      f"a step ignoring SIGTERM is KILLed after the {processes.STOP_GRACE} s grace ({took:.1f} s, status {p.returncode})")

# A second signal 0.5 s into the stop: KILL at once, and the signal is spent.
p = stubborn()
time.sleep(0.3)
threading.Timer(0.5, lambda: os.kill(os.getpid(), processes.signal.SIGHUP)).start()
t0 = time.monotonic()
processes.stop_tree(p)
took = time.monotonic() - t0
check(p.returncode == -9 and took < processes.STOP_GRACE - 1,
      f"a second signal during the stop KILLs at once ({took:.1f} s, grace {processes.STOP_GRACE} s)")
try:
    SIGNALS.check()
    check(True, "the second signal was spent on stopping faster, not left for the report's wait")
except Interrupted as e:
    check(False, f"the second signal ({e}) is still pending: the report's wait would take it as a new interruption")
SIGNALS.uninstall()
sys.exit(1 if FAILS else 0)
