#!/usr/bin/env bash
# parabench main job: install what is missing, build, run the whole suite on this
# machine (or a cluster), and write everything under results/<date>-<time>-<host>/.
#
#   ./run_all.sh [--quick|--full] [--np N] [--hostfile FILE] [--ranks-per-node N]
#                [--backend NAME] [--bind none|core|numa|gpu] [--out DIR]
#                [--acceptance FILE] [--junit FILE] [--no-install] [--quiet] [--dry-run] [--reproduce]
#
# ./run_all.sh --help says more (docs/run_all.md). The steps are declared in
# suite/manifest.py and run by suite/driver.py; this script only finds python3
# (installing it through scripts/install-deps.sh where allowed) and hands over.
# Exit, by cause: 0 all passed; 1 wrong data (a step exited 1, or crashed) or a missed
# threshold; 2 usage; 3 environment (a check before the run, or steps that exited 3, or a
# benchmark that did not build); 4 a step hung (watchdog or step limit). With several causes
# 1 wins, then 4, then 3 (docs/run_all.md). 128 + the signal for SIGINT (130), SIGTERM (143),
# SIGHUP (129), SIGQUIT (131).
#
# Installed (make install, docs/install.md), PREFIX/bin/parabench-run-all is a link to this
# file in PREFIX/libexec/parabench, beside install.json: it works in the current directory
# (results/ there, never in the prefix) and installs nothing. A checkout works in itself.
ROOT=$(cd "$(dirname "$(readlink -f "$0")")" && pwd) || exit 3
if [ -f "$ROOT/install.json" ]; then
    export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the prefix: it may be read-only, and stays as installed
else
    cd "$ROOT" || exit 3
fi
if ! command -v python3 >/dev/null 2>&1; then
    [ -f "$ROOT/install.json" ] && { echo "parabench-run-all: python3 is missing (not on PATH); nothing was run" >&2; exit 3; }
    deps=(--for run)
    for a in "$@"; do case "$a" in --no-install|--dry-run) deps+=(--no-install); break ;; esac; done
    scripts/install-deps.sh "${deps[@]}" && command -v python3 >/dev/null 2>&1 ||
        { echo "run_all.sh: python3 is missing (above); nothing was run" >&2; exit 3; }
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" # for the scripts the steps run
# The suite beside this file, first on the path: `python3 -m suite` would put the current
# directory first, and an installed job started inside a checkout would run the checkout's.
exec python3 -c 'import sys; sys.path[0] = sys.argv.pop(1); from suite.driver import main; sys.exit(main(sys.argv[1:]))' \
    "$ROOT" "$@"
