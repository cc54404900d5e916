"""python3 guard.py PARENT CMD...: run CMD and end its whole process tree if
PARENT (run_all's driver) goes away without stopping it, SIGKILL included:
a killed driver runs no handler, and the step, in a session of its own, would
otherwise run on until its step limit. The guard leads the step's session;
CMD is its child, and the guard's exit status is CMD's (a CMD killed by a
signal kills the guard with the same signal)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from suite import processes  # noqa: E402

POLL = 0.1  # how soon the guard notices that the driver is gone


def main(argv):
    parent, cmd = int(argv[0]), argv[1:]
    child = os.fork()
    if child == 0:
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            print(f"{cmd[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            if os.WIFSIGNALED(status):
                signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
                os.kill(os.getpid(), os.WTERMSIG(status))
            return os.waitstatus_to_exitcode(status)
        if os.getppid() != parent:  # reparented: the driver is gone
            # The tree is still linked through the guard: collect it before anything is orphaned.
            pids = processes.descendants(os.getpid())
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's TERM is for the step, not the guard
            for send, target in [(os.killpg, os.getpgrp())] + [(os.kill, p) for p in pids]:
                processes.send_quietly(send, target, signal.SIGTERM)
            deadline = time.monotonic() + processes.STOP_GRACE
            while time.monotonic() < deadline and any(processes.alive(p) for p in pids):
                time.sleep(POLL)
                os.waitpid(child, os.WNOHANG)
            for p in pids:
                processes.send_quietly(os.kill, p, signal.SIGKILL)
            return 128 + signal.SIGKILL
        time.sleep(POLL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
