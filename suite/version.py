"""run_all's version, in the words every binary prints for --version
(common/core/version.c): "parabench NUMBER (git REV)", or "parabench NUMBER"
outside git. It is the version of the binaries the run uses: the build's
version.txt (the Makefile writes "NUMBER REV" there when it compiles them),
or install.json when installed; before any build, the VERSION file and
`git describe`, as the Makefile computes them."""
import os
import subprocess

from suite import paths


def format_version(number, git_rev):
    if git_rev and git_rev != "unknown":
        return f"parabench {number} (git {git_rev})"
    return f"parabench {number}"


def from_checkout():
    """(NUMBER, REV) of the checkout as it is now."""
    try:
        with open(os.path.join(paths.HOME, "VERSION")) as f:
            number = f.read().strip() or "unknown"
    except OSError:
        number = "unknown"
    try:
        p = subprocess.run(["git", "-C", paths.HOME, "describe", "--always", "--dirty"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        rev = p.stdout.strip() if p.returncode == 0 else "unknown"
    except OSError:
        rev = "unknown"
    return number, rev or "unknown"


def current(build):
    """(NUMBER, REV) of the binaries this run uses (BUILD: the checkout's build folder)."""
    if paths.installed():
        record = paths.install_record()
        return record.get("version", "unknown"), record.get("git", "unknown")
    try:
        with open(os.path.join(paths.HOME, build, "version.txt")) as f:
            fields = f.read().split()
        if len(fields) == 2:
            return fields[0], fields[1]
    except OSError:
        pass
    return from_checkout()


def string(build):
    return format_version(*current(build))
