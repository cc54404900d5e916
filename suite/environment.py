"""Values run_all takes from its environment, parsed as strictly as its options:
a value that is not accepted is exit 2 with one line naming the variable and
what it accepts, never a traceback (docs/reliability.md, "The environment")."""
import os
import re
import sys

from suite import options, paths  # its MAX_RANKS, read at call time (options imports this module)

# Slurm's counts: N, or N(xM) for N on each of M nodes, comma-separated (SLURM_TASKS_PER_NODE's form).
SLURM_ITEM = re.compile(r"([1-9][0-9]{0,6})(?:\(x([1-9][0-9]{0,6})\))?")
COUNTS = ("SLURM_NTASKS", "SLURM_JOB_NUM_NODES", "SLURM_NNODES")


def die_variable(name, why):
    print(f"run_all.sh: variable {name}: {why}", file=sys.stderr)
    sys.exit(2)


def slurm_count(name):
    """The count a Slurm variable gives (its N(xM) items summed), 0 when unset; at most MAX_RANKS."""
    value = os.environ.get(name, "")
    if not value:
        return 0
    total = 0
    for item in value.split(","):
        m = SLURM_ITEM.fullmatch(item)
        if not m:
            die_variable(name, f"'{value}' is not accepted; expected N or N(xM) (N on each of M nodes), "
                               f"comma-separated, from 1 to {options.MAX_RANKS} in all")
        total += int(m.group(1)) * int(m.group(2) or 1)
    if total > options.MAX_RANKS:
        die_variable(name, f"'{value}' is {total}; expected at most {options.MAX_RANKS}")
    return total


def check_tmpdir():
    """TMPDIR, when set, is where mpirun and the tools put their files: a writable directory."""
    value = os.environ.get("TMPDIR")
    if value is not None and not (os.path.isdir(value) and os.access(value, os.W_OK | os.X_OK)):
        die_variable("TMPDIR", f"'{value}' is not a writable directory; expected one, or TMPDIR unset")


def check_build():
    """BUILD names the build folder (make BUILD=...): one word, a directory when it exists."""
    value = os.environ.get("BUILD")
    if value is None or paths.installed():  # installed, the binaries are the prefix's: BUILD is not read
        return
    if not value or re.search(r"[\s=\x00-\x1f\x7f]", value):
        die_variable("BUILD", f"'{value}' is not accepted; expected a folder name without blanks, '=' or "
                              "control characters (default: build)")
    if os.path.lexists(value) and not os.path.isdir(value):
        die_variable("BUILD", f"'{value}' is not a directory; expected the build folder (default: build)")
    # A folder outside the checkout is one the user made: make would otherwise create it
    # anywhere (BUILD=/nonexistent built at the root of the file system).
    home = os.path.realpath(paths.HOME)
    inside = os.path.realpath(os.path.join(home, value)).startswith(home + os.sep)
    if not inside and not os.path.isdir(value):
        die_variable("BUILD", f"'{value}' is outside the checkout and does not exist; expected a folder of the "
                              "checkout (default: build) or an existing directory")


def check():
    """Every variable the run reads, before anything is made or run."""
    check_tmpdir()
    check_build()
    for name in COUNTS:
        slurm_count(name)
