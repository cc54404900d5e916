"""Where the suite finds its parts, always from this file's own location.

In a checkout, HOME is the checkout (run_all.sh beside suite/), the binaries
are in BUILD/bin and the driver works in the checkout, so results/ lands
there. Installed (`make install`, docs/install.md), HOME is
PREFIX/libexec/parabench and holds install.json, which make install writes:
the binaries' folder relative to HOME, and the version they were built as.
The driver then never changes directory: results go under the current one
(or --out), never into the prefix. Relative paths keep an installed tree
working wherever it is moved (DESTDIR staging, a relocated prefix)."""
import json
import os

HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALL_RECORD = os.path.join(HOME, "install.json")


def installed():
    return os.path.isfile(INSTALL_RECORD)


def install_record():
    """install.json: {"version": NUMBER, "git": REV, "bin": the binaries' folder relative to HOME}."""
    with open(INSTALL_RECORD) as f:
        return json.load(f)


def bin_dir(build):
    """The binaries: BUILD/bin of the checkout, or the installed bin/."""
    if installed():
        return os.path.normpath(os.path.join(HOME, install_record()["bin"]))
    return os.path.join(HOME, build, "bin")


def script(path):
    """A script, plot or helper of the suite (scripts/report.py, ...), by its path in the checkout."""
    return os.path.join(HOME, path)
