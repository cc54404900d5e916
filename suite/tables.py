"""The names the binaries choose from (collectives, backends, engines, modes),
as they list them: `BINARY --list WHAT` (common/core/options.h), which prints
the table's names one a line without starting MPI. The suite reads them here
rather than repeat the tables of common/, so a collective or a backend added
there is known to run_all.sh and its dry run at once."""
import os
import subprocess


def names(binary, what):
    """The names `binary --list what` prints; None when the binary is not built
    (or cannot list them)."""
    if not os.access(binary, os.X_OK):
        return None
    try:
        r = subprocess.run([binary, "--list", what], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.split() if r.returncode == 0 else None
