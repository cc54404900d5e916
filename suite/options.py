"""run_all.sh's command line, and the launch checks made before anything is
installed or built."""
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from suite import environment, manifest, meta, models, tables, version

USAGE = """\
parabench main job: install what is missing, build, run the whole suite on this
machine (or a cluster), and write everything under results/<date>-<time>-<host>/.

  ./run_all.sh [--quick|--full] [--np N] [--hostfile FILE] [--ranks-per-node N]
               [--backend NAME] [--bind none|core|numa|gpu] [--out DIR]
               [--acceptance FILE] [--junit FILE] [--no-install] [--quiet] [--dry-run] [--reproduce]
               [--steps NAME[,NAME...]] [--model NAME | --model-file FILE]
               [--gpus-per-node N] [--gpu h100|h200|a100]
  ./run_all.sh --version

  --quick        a short pass (well under two minutes on a 2-core machine)
  --full         long sweeps (to 256 MB) and bigger workloads
  --np N         ranks, 1 to 1048576 (default: GPUs when the CUDA build finds devices, else cores, at least 2;
                 under Slurm the job's tasks; with --hostfile the slots it lists)
  --backend NAME the communication backend of every step: mpi (host memory) or nccl (GPU memory), or
                 another of the backend table (build/bin/coll_sweep --list backends); default nccl
                 where the CUDA build finds GPUs, else mpi
  --bind WHAT    where each rank runs: core (default on CPUs: one core per rank), numa (one NUMA
                 domain), gpu (default with GPUs: the cores nearest the rank's GPU, via hwloc) or none
  --acceptance FILE  evaluate thresholds (docs/acceptance.md): PASS/FAIL table, JUnit XML, exit 1 on a miss
  --junit FILE   where the JUnit XML goes (default: RESULTS/acceptance-junit.xml)
  --reproduce    also set up the documents' figures (DP 11%, PP 82%, TP bytes, 3D placement) scaled to
                 the rates this run measured, measure them and write RESULTS/reproduce.csv (docs/reproduce.md)
  --model NAME   the model the workloads train (docs/models.md): its own layer, in bf16 on GPUs,
                 at the sizes it communicates; default: the largest of llama3-405b, llama3-70b,
                 llama3-8b whose training state fits the GPUs at this world's TP x PP; tiny-gqa on CPUs
  --model-file FILE  the model's shape from a file of key value lines (docs/models.md)
  --gpus-per-node N  with --dry-run: the GPUs of each node of the machine the run is planned for
                 (this machine's are not looked at)
  --gpu KIND     with --dry-run: that machine's GPU, h100 (default), h200 or a100: its memory
  --steps LIST   run only these steps (comma-separated names, as --dry-run lists them); the
                 acceptance check and the report still run, on what those steps measured
  --no-install   never install packages: say what is missing and exit 3 (dependencies found
                 on PATH, by pkg-config or through MPI_HOME/CUDA_HOME/NCCL_HOME are never reinstalled)
  --dry-run      print the steps, each one's launch line and an upper bound on its duration,
                 then exit 0: installs, builds and runs nothing
  --version      print the version of the suite and of the binaries it runs (they are the same),
                 "parabench NUMBER (git REVISION)", and exit 0

Installed (make install, docs/install.md) the job is parabench-run-all: it installs and
builds nothing, runs the installed binaries and writes results/ under the current directory.

The steps are declared in suite/manifest.py. A failing benchmark is recorded and
the rest still run. Exit, by cause: 0 all passed; 1 wrong data (a step exited 1
or crashed) or a threshold was missed; 2 usage error or bad threshold file;
3 environment (dependencies, output directory, no GPU, steps that exited 3);
4 a step hung (watchdog or step limit); with several causes 1 wins, then 4,
then 3. 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT: the running step
is stopped (its whole process tree) and recorded as interrupted, and meta.json
and the report are written for what completed."""

POSITIVE = re.compile(r"[1-9][0-9]*")
# The most ranks a run accepts (2^20): above any machine today, and where the launch
# lines and --dry-run's estimate stay instant. Beyond it a number is a typo.
MAX_RANKS = 1 << 20


@dataclass
class Options:
    profile: str = "default"
    np: int = 0              # 0: chosen from the machine
    hostfile: str = ""
    ranks_per_node: int = 0
    backend: str = ""
    bind: str = ""
    out: str = ""
    acceptance: str = ""
    junit: str = ""
    quiet: bool = False
    install: bool = True
    dry_run: bool = False
    reproduce: bool = False
    steps: tuple = ()        # --steps: the only steps to run (empty: all)
    slots: int = 0           # the hostfile's slots
    model: str = ""          # --model
    model_file: str = ""     # --model-file
    gpus_per_node: int = 0   # --gpus-per-node (dry runs)
    gpu: str = ""            # --gpu (dry runs)


def die_usage(option, why):
    print(f"run_all.sh: option {option}: {why}", file=sys.stderr)
    sys.exit(2)


def die_env(why):
    print(f"run_all.sh: {why}", file=sys.stderr)
    sys.exit(3)


def parse(argv):
    o = Options()
    flags = {"--quick": ("profile", "quick"), "--full": ("profile", "full"), "--quiet": ("quiet", True),
             "--no-install": ("install", False), "--dry-run": ("dry_run", True), "--reproduce": ("reproduce", True)}
    args = list(argv)
    profiles = set()  # --quick and --full together would leave the run to whichever came last
    seen = set()  # an option given twice is refused, as the binaries refuse theirs
    while args:
        opt = args.pop(0)
        if opt in seen and opt not in ("-h", "--help", "--version"):
            die_usage(opt, "is given twice; give it once")
        seen.add(opt)
        if opt in flags:
            setattr(o, *flags[opt])
            if opt in ("--quick", "--full"):
                profiles.add(opt)
            continue
        if opt in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        if opt == "--version":
            print(version.string(os.environ.get("BUILD", "build")))
            sys.exit(0)
        if opt not in ("--np", "--hostfile", "--ranks-per-node", "--backend", "--bind", "--out", "--acceptance", "--junit",
                       "--steps", "--model", "--model-file", "--gpus-per-node", "--gpu"):
            die_usage(opt, "unknown option; see --help")
        if not args:
            die_usage(opt, "needs a value")
        value = args.pop(0)
        if opt in ("--np", "--ranks-per-node"):
            if not POSITIVE.fullmatch(value) or len(value) > 7 or int(value) > MAX_RANKS:
                die_usage(opt, f"'{value}' is not accepted; expected an integer from 1 to {MAX_RANKS}")
            setattr(o, "np" if opt == "--np" else "ranks_per_node", int(value))
        elif opt in ("--hostfile", "--acceptance"):
            # A directory passes os.access; mpirun and the checker would only fail on it later.
            if not os.path.isfile(value) or not os.access(value, os.R_OK):
                die_usage(opt, f"'{value}' is not a readable file")
            setattr(o, opt[2:], value)
        elif opt == "--backend" and not value:
            die_usage(opt, "an empty name is not accepted")
        elif opt == "--bind" and value not in ("none", "core", "numa", "gpu"):
            die_usage(opt, f"'{value}' is not accepted; expected none, core, numa or gpu")
        elif opt in ("--out", "--junit") and not value:
            die_usage(opt, "an empty path is not accepted")
        elif opt == "--steps":
            o.steps = step_names(value)
        elif opt == "--model":
            known = list(models.presets())
            if value not in known:
                die_usage(opt, f"'{value}' is not accepted; expected one of {', '.join(known)}")
            o.model = value
        elif opt == "--model-file":
            if not os.path.isfile(value) or not os.access(value, os.R_OK):
                die_usage(opt, f"'{value}' is not a readable file")
            try:
                models.load_file(value)
            except ValueError as e:
                die_usage(opt, str(e))
            o.model_file = os.path.abspath(value)
        elif opt == "--gpus-per-node":
            if not POSITIVE.fullmatch(value) or int(value) > 64:
                die_usage(opt, f"'{value}' is not accepted; expected an integer from 1 to 64")
            o.gpus_per_node = int(value)
        elif opt == "--gpu":
            if value not in models.GPUS:
                die_usage(opt, f"'{value}' is not accepted; expected one of {', '.join(models.GPUS)}")
            o.gpu = value
        else:
            setattr(o, opt[2:], value)
    if len(profiles) > 1:
        die_usage("--quick", "--quick and --full together: choose one")
    if o.model and o.model_file:
        die_usage("--model-file", "--model and --model-file together: choose one")
    for opt, given in (("--gpus-per-node", o.gpus_per_node), ("--gpu", o.gpu)):
        if given and not o.dry_run:
            die_usage(opt, "plans a machine this run is not on: only with --dry-run (a real run finds its GPUs)")
    if o.gpu and not o.gpus_per_node:
        die_usage("--gpu", "needs --gpus-per-node N")
    # Whether a step is part of a run depends on these options alone (manifest.Step.planned): known before installing.
    shown = manifest.Run(profile=o.profile, nranks=1, acceptance=o.acceptance, reproduce=o.reproduce)
    absent = [s.name for s in manifest.STEPS if s.name in o.steps and not s.planned(shown)]
    if absent:
        die_usage("--steps", f"'{absent[0]}' is not part of this run: it needs an option this run lacks "
                             "(--reproduce, --acceptance)")
    if o.junit and not o.acceptance:
        die_usage("--junit", "needs --acceptance FILE")
    if o.junit:
        # A JUnit file directly in --out is created with it (the run checks --out itself).
        in_out = bool(o.out) and os.path.realpath(os.path.dirname(o.junit) or ".") == os.path.realpath(o.out)
        if in_out and os.path.basename(o.junit) in run_files():
            die_usage("--junit", f"'{o.junit}' is a file this run writes in --out '{o.out}'; "
                      "expected another name (the default is acceptance-junit.xml there)")
        why = "" if in_out else unwritable(o.junit)
        if why:
            die_usage("--junit", f"'{o.junit}' {why}; the verdict would be lost after the whole suite ran")
        for opt, path in (("--acceptance", o.acceptance), ("--hostfile", o.hostfile)):
            if path and same_file(o.junit, path):
                die_usage("--junit", f"'{o.junit}' is the same file as {opt} '{path}'; writing it would destroy "
                          "an input, expected a file the run does not read")
    if o.out:
        if os.path.exists(o.out) and (not os.path.isdir(o.out) or os.listdir(o.out)):
            die_usage("--out", f"'{o.out}' exists and is not empty; results are never overwritten")
        run = enclosing_run(o.out)
        if run:
            die_usage("--out", f"'{o.out}' is inside another run's results folder '{run}'; "
                      "results are never mixed: choose a folder outside it")
    return o


def step_names(value):
    """--steps' list: names of the manifest's steps, each once."""
    known = [s.name for s in manifest.STEPS]
    names = value.split(",")
    for name in names:
        if name not in known:
            die_usage("--steps", f"'{name}' is not a step; expected comma-separated names from: {', '.join(known)}")
    if len(set(names)) < len(names):
        die_usage("--steps", f"'{value}' names a step twice")
    return tuple(names)


def unwritable(path):
    """Why a file could not be written at PATH, or "": checked before the run, not after it."""
    if os.path.isdir(path):
        return "is a directory"
    if os.path.exists(path):
        return "" if os.access(path, os.W_OK) else "is not writable"
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        return f"cannot be created: no directory '{parent}'"
    return "" if os.access(parent, os.W_OK | os.X_OK) else f"cannot be created: '{parent}' is not writable"


def run_files():
    """The names a run writes at the top of its results folder (the JUnit file aside)."""
    names = {"meta.json", "steps.tsv", "logs", "acceptance.txt"}
    for step in manifest.STEPS:
        names.update(step.name + ext for ext in (".csv", ".json", ".txt"))
        names.update(out.rstrip("/") for out in step.outputs if out != "acceptance-junit.xml")
    return names


def same_file(a, b):
    """Whether paths A and B name one file (B exists; A may not exist yet, and then it is not B)."""
    return os.path.exists(a) and os.path.samefile(a, b)


def enclosing_run(path):
    """The results folder of another run (it has meta.json or steps.tsv) that PATH lies in, or ""."""
    d = os.path.dirname(os.path.realpath(path))
    while True:
        if meta.is_run(d):
            return d
        up = os.path.dirname(d)
        if up == d:
            return ""
        d = up


def hostfile_slots(path):
    """The slots a hostfile lists (Open MPI's syntax: "host [slots=N]
    [max_slots=M]", one slot when none is given, # comments), or
    "line N: WHY" for a line mpirun would reject."""
    total = 0
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            # "slots = 2" is "slots=2" to mpirun too
            fields = re.sub(r"\s*=\s*", "=", line.split("#", 1)[0]).split()
            if not fields:
                continue
            slots = 1
            for field in fields[1:]:
                if field.startswith("slots="):
                    if not re.fullmatch(r"[0-9]{1,7}", field[6:]):
                        return f"line {n}: '{field}' is not a slot count"
                    slots = int(field[6:])
            total += slots
            if total > MAX_RANKS:
                return f"line {n}: more than {MAX_RANKS} slots in all"
    return total


def hostfile_hosts(path):
    with open(path, errors="replace") as f:
        return sum(1 for line in f if line.split("#", 1)[0].split())


def in_slurm_job():
    return bool(os.environ.get("SLURM_JOB_ID")) and shutil.which("srun") is not None


def visible_gpus():
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def check_backend(o, bin_dir):
    """--backend must be a name of the backend table, as the built binaries list it (tables.py); before
    the first build nothing can say, and the check waits for it (the driver asks again after the build).
    Returns whether the name could be checked."""
    if not o.backend:
        return True
    known = tables.names(os.path.join(bin_dir, manifest.STEPS[0].binary), "backends")
    if known is None:
        return False
    if o.backend not in known:
        die_usage("--backend", f"'{o.backend}' is not accepted; expected {or_list(known)} "
                               f"(the backends {bin_dir} lists)")
    return True


def or_list(names):
    """["a", "b", "c"] as "a, b or c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_launch(o):
    """Ranks the launcher cannot place would fail every step (exit 1, "wrong
    data"): refuse them here, as an environment error (exit 3). So with
    --backend nccl and no GPU: every step would fail with exit 3."""
    # With a hostfile the ranks run on the hosts it lists, whose GPUs this machine cannot see;
    # --dry-run only shows what would run.
    if o.backend == "nccl" and not o.hostfile and not o.dry_run and visible_gpus() == 0:
        die_env("--backend nccl needs a GPU; none is visible (nvidia-smi -L lists none); nothing was run")
    if o.out and not o.dry_run:
        d = os.path.abspath(o.out)
        while not os.path.exists(d):
            d = os.path.dirname(d)
        if not os.path.isdir(d) or not os.access(d, os.W_OK | os.X_OK):
            die_env(f"--out '{o.out}' cannot be created: '{d}' is not a writable directory; nothing was run")
    if o.hostfile:
        slots = hostfile_slots(o.hostfile)
        if isinstance(slots, str):
            die_env(f"--hostfile '{o.hostfile}': {slots}")
        if slots < 1:
            die_env(f"--hostfile '{o.hostfile}' lists no slots (no hosts, or slots=0 on every one): no rank could start")
        if o.np > slots:
            die_env(f"--np {o.np} is more than the {slots} slots '{o.hostfile}' lists: mpirun would refuse every step; "
                    f"use --np {slots} or fewer, or add slots")
        o.slots = slots
    tasks = environment.slurm_count("SLURM_NTASKS")
    if os.environ.get("SLURM_JOB_ID") and tasks and o.np > tasks and in_slurm_job():
        die_env(f"--np {o.np} is more than this Slurm job's {tasks} tasks: srun would refuse every step; "
                f"use --np {tasks} or fewer")
