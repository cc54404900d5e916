"""suite/atomic_file.py, the one way the Python writers write a file: whole or
not at all, never through a fixed temporary name, and every writer of suite/
and scripts/ goes through it. Prints one line per check; exit 1 on the first
failure."""
import os
import re
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from suite import atomic_file  # noqa: E402


CHECKS = []


def check(cond, what):
    CHECKS.append(what)
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        sys.exit(1)


def leftovers(d, keep):
    return sorted(set(os.listdir(d)) - set(keep))


def main():
    d = tempfile.mkdtemp(prefix="pb-atomic.")
    path = os.path.join(d, "meta.json")
    # A user's file with the name the writers used to take as their temporary.
    for name in ("meta.json.tmp", ".meta.json.tmp"):
        with open(os.path.join(d, name), "w") as f:
            f.write("mine\n")
    atomic_file.write_text(path, "one\n")
    check(open(path).read() == "one\n", "the file is written whole")
    check(all(open(os.path.join(d, n)).read() == "mine\n" for n in ("meta.json.tmp", ".meta.json.tmp")),
          "a user's meta.json.tmp and .meta.json.tmp are left as they were")
    check(leftovers(d, ["meta.json", "meta.json.tmp", ".meta.json.tmp"]) == [], "no temporary is left")
    umask = os.umask(0o022)
    os.umask(umask)
    check(os.stat(path).st_mode & 0o777 == 0o666 & ~umask, "a new file gets the umask's mode, not mkstemp's 0600")
    os.chmod(path, 0o640)
    atomic_file.write_text(path, "two\n")
    check(os.stat(path).st_mode & 0o777 == 0o640, "a replaced file keeps its mode")

    # Durable before it is visible: the temporary's data reaches the disk (fsync)
    # before the rename publishes it, so a power cut after the rename cannot leave
    # an empty file under the name (ext4's delayed allocation does exactly that).
    events, real_fsync, real_replace = [], os.fsync, os.replace
    os.fsync = lambda fd: (events.append(("fsync", os.readlink("/proc/self/fd/%d" % fd))), real_fsync(fd))[1]
    os.replace = lambda src, dst: (events.append(("replace", os.path.abspath(src))), real_replace(src, dst))[1]
    try:
        atomic_file.write_text(os.path.join(d, "synced.txt"), "synced\n")
    finally:
        os.fsync, os.replace = real_fsync, real_replace
    kinds = [k for k, _ in events]
    check("fsync" in kinds and "replace" in kinds and kinds.index("fsync") < kinds.index("replace")
          and events[kinds.index("fsync")][1] == events[kinds.index("replace")][1],
          "the temporary is fsynced before it is renamed over the file (%s)" % kinds)

    # A failure inside the write: the old content stays, no temporary.
    try:
        with atomic_file.replace(path) as f:
            f.write("half")
            raise OSError(28, "No space left on device")
    except OSError:
        pass
    check(open(path).read() == "two\n", "a failed write leaves the previous content")
    check(leftovers(d, ["meta.json", "meta.json.tmp", ".meta.json.tmp", "synced.txt"]) == [],
          "a failed write leaves no temporary")

    # Two writers at once: each writes its own temporary, the file is one of theirs, whole.
    text = {k: ("%d" % k) * 200000 + "\n" for k in range(2)}
    threads = [threading.Thread(target=atomic_file.write_text, args=(path, text[k])) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(open(path).read() in text.values(), "two writers at once: the file is one of them, whole")
    check(leftovers(d, ["meta.json", "meta.json.tmp", ".meta.json.tmp", "synced.txt"]) == [],
          "two writers leave no temporary")

    # A directory that cannot be written: the error reaches the caller.
    ro = os.path.join(d, "ro")
    os.mkdir(ro, 0o500)
    if os.geteuid() != 0:
        try:
            atomic_file.write_text(os.path.join(ro, "x"), "x")
            check(False, "an unwritable directory raises")
        except OSError:
            check(True, "an unwritable directory raises")

    # No writer of suite/ or scripts/ builds a temporary name of its own.
    fixed = re.compile(r"""\.tmp['"]|['"]\.tmp|\+ *['"]\.tmp""")
    found = []
    for sub in ("suite", "scripts"):
        for name in sorted(os.listdir(os.path.join(ROOT, sub))):
            if name.endswith(".py") and name != "atomic_file.py":
                for n, line in enumerate(open(os.path.join(ROOT, sub, name)), 1):
                    if fixed.search(line):
                        found.append("%s/%s:%d" % (sub, name, n))
    check(not found, "no fixed temporary name in suite/ or scripts/ (%s)" % (", ".join(found) or "none"))
    for name in ("suite/meta.py", "scripts/reproduce.py", "scripts/report.py", "scripts/suspects.py",
                 "scripts/figure_data.py"):
        check("atomic_file." in open(os.path.join(ROOT, name)).read(), "%s writes through atomic_file" % name)
    print("%d checks passed" % len(CHECKS))


if __name__ == "__main__":
    main()
