"""meta.json: how the run was made, its steps, and, after a signal, where it stopped."""
import glob
import json
import os
import socket
import time

from suite import atomic_file, version

# What marks a folder as a run's results: the readers refuse any other folder, and no
# program writes into one that is not its own run (docs/reliability.md, "A run's records").
MARKERS = ("meta.json", "steps.tsv")


def is_run(folder):
    return any(os.path.lexists(os.path.join(folder, f)) for f in MARKERS)


# scripts/bind-near-gpu.sh appends a line here (PARABENCH_BIND_NOTE) for each rank it ran
# unbound because hwloc could not place its GPU: meta.json's binding.fallback.
BIND_NOTE = "bind-fallback.txt"


def bind_fallback(out):
    """The distinct lines of logs/bind-fallback.txt, in order; None when no rank fell back."""
    try:
        with open(os.path.join(out, "logs", BIND_NOTE), errors="replace") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return None
    return list(dict.fromkeys(lines)) or None


STEP_FIELDS = ("name", "status", "rc", "seconds", "note")  # a line of steps.tsv, tab-separated (driver.record)


def read_steps(out):
    """steps.tsv: a dict of STEP_FIELDS per step recorded, in order; [] before the run made it."""
    try:
        with open(os.path.join(out, "steps.tsv")) as f:
            return [dict(zip(STEP_FIELDS, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def benchmark_documents(out):
    """(name, document) of every benchmark JSON in the results, sorted."""
    for path in sorted(glob.glob(os.path.join(glob.escape(out), "*.json"))):
        if path.endswith("meta.json"):
            continue
        try:
            with open(path) as f:
                yield os.path.basename(path)[:-5], json.load(f)
        except (OSError, ValueError):
            continue


def write(out, opts, machine, planned, shapes, number_rev, signal_name="", stopped_step="", model=None):
    """planned: the step records of this run, in order; shapes: every shaped
    step's {args, describe, skip, note} (manifest.shapes_record); number_rev:
    the suite's (version number, git revision) (suite/version.py); model: the
    model the workloads ran, its precision and sizes (manifest.model_record)."""
    steps = read_steps(out)
    verdicts = {s.name for s in planned if s.verdict}
    meta = {"version": version.format_version(*number_rev), "parabench_version": number_rev[0],
            "git_revision": number_rev[1],
            "profile": opts.profile, "launcher": machine.launcher, "nranks": machine.nranks, "devices": machine.device,
            "launch": " ".join(machine.launch), "backend": opts.backend or "default", "host": socket.gethostname(),
            "binding": {"requested": machine.bind, "applied": machine.bind_applied, "note": machine.bind_note or None,
                        "fallback": bind_fallback(out),
                        "per_rank": "meta.binding in each benchmark's JSON (one entry per rank)"},
            "oversubscribed": machine.oversubscribed, "cores": machine.cores,
            "acceptance_file": opts.acceptance or None, "selected_steps": list(opts.steps) or None, "shapes": shapes,
            "model": model, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": steps,
            "failed": [s["name"] for s in steps if s["status"] in ("failed", "not built") and s["name"] not in verdicts],
            "interrupted": signal_name or None, "benchmarks": {},
            # NVLS takes NVSwitch multicast objects per communicator (docs/gpu.md, "Communicators")
            "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE", "unset")}
    if signal_name:
        done = {s["name"] for s in steps}
        meta["interrupted_step"] = stopped_step or None
        meta["not_run"] = [s.name for s in planned if s.name not in done and s.role != "the pages of the run"]
    for name, doc in benchmark_documents(out):
        meta["benchmarks"][name] = {"complete": doc.get("complete"), "rows": len(doc.get("rows", []))}
        counted = doc.get("meta", {}).get("communicators_measured")
        if counted:  # what the backend counted, and the GPU memory NCCL took at set-up (null: not measured)
            meta["benchmarks"][name]["communicators"] = counted
        meta.setdefault("machine", doc.get("meta", {}))
    with atomic_file.replace(os.path.join(out, "meta.json")) as f:
        json.dump(meta, f, indent=2)
