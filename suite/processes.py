"""Commands started in a session of their own, waited for so that a signal is
never lost, and stopped with their whole process tree."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


class Interrupted(Exception):
    """A signal of STOPPING arrived; proc is the command still running, if any."""

    def __init__(self, signum, proc=None):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.proc = signum, proc


# Every signal that ends a run cleanly: Ctrl-C, kill, a closed terminal or a lost ssh
# session (HUP), Ctrl-\ (QUIT). Left at their defaults they would end the driver at
# once, with the step still running and no meta.json.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Signals:
    """The STOPPING signals, noted by real handlers and acted on by the waits
    below: a signal arriving at any moment (even between two commands) is
    seen within 0.1 s, and none is dropped."""

    def __init__(self):
        self.received, self.handled = [], 0

    def install(self):
        for s in STOPPING:
            signal.signal(s, lambda signum, frame: self.received.append(signum))

    def uninstall(self):
        for s in STOPPING:
            signal.signal(s, signal.SIG_DFL)

    def check(self, proc=None):
        """Raise Interrupted for a signal not yet handled."""
        if len(self.received) > self.handled:
            self.handled = len(self.received)
            raise Interrupted(self.received[-1], proc)

    def pending(self):
        return len(self.received) > self.handled


SIGNALS = Signals()
STOP_GRACE = int(os.environ["STOP_GRACE"]) if re.fullmatch(r"[0-9]{1,4}", os.environ.get("STOP_GRACE", "")) else 5


GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py")


def run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, defer=False, guard=False):
    """Run cmd (stdin from /dev/null) in a session of its own and return its
    exit status. A signal stops the wait: Interrupted carries the command,
    still running, for the caller to stop. defer: let it finish first (an
    installer is not cut in the middle). guard: start it under guard.py,
    which ends its tree if this process dies without doing so (SIGKILL)."""
    if guard:
        cmd = [sys.executable, GUARD, str(os.getpid()), *cmd]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True)
    while True:
        try:
            return_code = proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            return_code = None
        if return_code is not None:
            if not defer:
                SIGNALS.check()
            return return_code
        if not defer:
            SIGNALS.check(proc)


def output(cmd):
    """(exit status, stdout and stderr) of a short command; None when it cannot start."""
    with tempfile.TemporaryFile() as f:
        try:
            rc = run(cmd, stdout=f, stderr=subprocess.STDOUT)
        except OSError:
            return None, ""
        f.seek(0)
        return rc, f.read().decode(errors="replace")


def run_to_files(cmd, out_path, err_path):
    """run() with stdout to out_path and stderr to err_path (None: with stdout)."""
    with open(out_path, "wb") as out:
        if err_path is None:
            return run(cmd, stdout=out, stderr=subprocess.STDOUT, guard=True)
        with open(err_path, "wb") as err:
            return run(cmd, stdout=out, stderr=err, guard=True)


def descendants(root):
    """Every process below root, from the parent field of /proc/*/stat."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue  # it exited meanwhile
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces
    found, queue = [], [root]
    while queue:
        p = queue.pop()
        children = [c for c, pp in parent.items() if pp == p]
        found += children
        queue += children
    return found


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def send_quietly(send, target, sig):
    try:
        send(target, sig)
    except OSError:
        pass  # it exited meanwhile


def signal_all(proc, pids, sig):
    for send, target in [(os.killpg, proc.pid)] + [(os.kill, p) for p in pids]:
        send_quietly(send, target, sig)


def stop_tree(proc):
    """TERM to proc's process group (its session: it leads both) and to every
    process below it, which a launcher may have put in groups of their own;
    KILL to whatever is left after STOP_GRACE seconds, or at once when another
    signal arrives meanwhile (the user insists; meta.json is still written
    after this returns); reap proc."""
    if proc is None:
        return
    pids = descendants(proc.pid)
    signal_all(proc, pids, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline:
        if SIGNALS.pending():
            SIGNALS.handled = len(SIGNALS.received)  # taken as "faster": the clean-up goes on
            break
        if proc.poll() is not None and not any(alive(p) for p in pids):
            break
        time.sleep(0.1)
    signal_all(proc, [p for p in pids if alive(p)], signal.SIGKILL)
    proc.wait()
