"""Every step of run_all.sh, declared once.

A step is a record: its name, the program it runs, its arguments for the
run's profile and topology, when it cannot run (and why), what it writes, its
share of a usual run's time, how --dry-run bounds its duration, the report's
table of its CSV, and where its documentation and its test are. The driver,
the dry run and scripts/report.py read these records; nothing else lists the
steps (tests/integration/test_manifest.sh checks it).
"""
import copy
import functools
import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Optional, Tuple

from suite import models
from suite import shapes as shaping

# Step kinds: how a step is started (driver.py) and estimated (estimate.py).
MPI = "mpi"        # BIN/binary on every rank, under the launcher, with --csv/--json NAME
TOOL = "tool"      # BIN/binary, one process
SCRIPT = "script"  # python3 binary (a script of this repository), no time limit


@dataclass(frozen=True)
class Profile:
    """What --quick, the default and --full change: the sweeps' sizes and
    per-size caps (their iteration counts stay OSU's), the workloads'
    iterations, micro-batch counts and cap per configuration, the largest
    collective on GPUs, and the wall-clock limit of every step. The workloads'
    sizes come from the model (suite/shapes.py), the same in every profile;
    a profile changes only how many of a stage's layers run (models.LAYER_CAP)."""
    sweep: Tuple[str, ...]
    p2p: Tuple[str, ...]
    gpu_sweep_max: str  # -e of the collective sweeps on GPUs, where memory allows (nccl-tests' figures are 1-8 GiB)
    dp: Tuple[str, ...]
    tp: Tuple[str, ...]
    pp: Tuple[str, ...]
    workload_cap: str  # --max-seconds-per-size of dp, tp, pp, hybrid: seconds per configuration
    step_limit: int


PROFILES = {
    "quick": Profile(sweep=("-b", "8", "-e", "1M", "-f", "8", "--max-seconds-per-size", "0.25"),
                     p2p=("-b", "1", "-e", "1M", "-f", "16", "--max-seconds-per-size", "0.25"), gpu_sweep_max="1G",
                     dp=("-n", "3", "-w", "1"), tp=("-n", "3", "-w", "1"), pp=("1", "2", "4", "8", "-n", "2", "-w", "1"),
                     workload_cap="2", step_limit=90),
    "default": Profile(sweep=("-b", "8", "-e", "64M", "-f", "4", "--max-seconds-per-size", "3"),
                       p2p=("-b", "1", "-e", "16M", "-f", "4", "--max-seconds-per-size", "3"), gpu_sweep_max="8G",
                       dp=("-n", "5", "-w", "1"), tp=("-n", "5", "-w", "1"),
                       pp=("1", "2", "4", "8", "16", "-n", "3", "-w", "1"), workload_cap="10", step_limit=900),
    "full": Profile(sweep=("-b", "8", "-e", "256M", "-f", "2", "--max-seconds-per-size", "20"),
                    p2p=("-b", "1", "-e", "64M", "-f", "2", "--max-seconds-per-size", "10"), gpu_sweep_max="8G",
                    dp=("-n", "10", "-w", "2"), tp=("-n", "10", "-w", "2"),
                    pp=("1", "2", "4", "8", "16", "32", "-n", "5", "-w", "1"), workload_cap="30", step_limit=3600),
}


@dataclass(frozen=True)
class Run:
    """What a step's arguments and preconditions depend on."""
    profile: str
    nranks: int
    gpus: int = 0                # GPUs the ranks use (0: CPU ranks)
    out: str = "results"         # the results directory
    bin: str = "build/bin"       # the built binaries
    acceptance: str = ""         # --acceptance FILE
    junit: str = ""              # --junit FILE
    reproduce: bool = False      # --reproduce
    baseline: str = ""           # --baseline RUN: the run this one is compared with
    steps: Tuple[str, ...] = ()  # --steps: the only measuring steps to run (empty: all)
    dry_run: bool = False        # nothing runs: arguments chosen at run time are not read
    nodes: int = 1               # nodes and ranks per node: from the run's first sweep
    ranks_per_node: int = 0      # (placement_of_run), or --dry-run's assumption
    model_name: str = ""         # --model (empty: models.default_model chooses)
    model_file: str = ""         # --model-file
    gpu_memory: float = 0        # bytes of one GPU (0: CPU ranks, or unknown)

    @property
    def limits(self):
        return PROFILES[self.profile]

    @property
    def chosen_model(self):
        """--model, else the default: models.default_model at the (t, p) this world's shapes give the
        models trained now (their heads and KV heads all split 8 ways)."""
        if self.model_name or self.model_file:
            return self.model_name
        t, p, _ = shaping.job_of(self.nranks, self.ranks_per_node or self.nranks, self.gpus, models.TRAINED_NOW[-1])
        return models.default_model(self.gpus, self.gpu_memory, t, p)

    @property
    def model_spec(self):
        """The model dict (suite/models.py) the workloads run."""
        return _model(self.chosen_model, self.model_file)

    @property
    def model(self):
        """The model arguments of every workload step, and its precision: bf16 GEMMs and gradients on GPUs."""
        spec = ["--model-file", self.model_file] if self.model_file else ["--model", self.chosen_model]
        return spec + self.precision

    @property
    def precision(self):
        return ["--compute-dtype", "bfloat16", "--grad-dtype", "bfloat16"] if self.gpus > 0 else []

    @property
    def element_bytes(self):
        return 2 if self.gpus > 0 else 4

    @property
    def pp_counts(self):
        """The profile's micro-batch counts (the numbers before its -n)."""
        return tuple(int(a) for a in self.limits.pp[:self.limits.pp.index("-n")])

    def at(self, name):
        return os.path.join(self.out, name)


# Steps are declared by keyword (kw_only where Python has it, 3.10 on): a record reads as what it declares.
@dataclass(frozen=True, **({"kw_only": True} if sys.version_info >= (3, 10) else {}))
class Step:
    name: str
    binary: str                  # MPI, TOOL: BUILD/bin/<binary>; SCRIPT: the script's path
    kind: str
    args: Callable[[Run], list]
    weight: int                  # rough seconds of a usual run here: the time-left estimate
    cost: str                    # --dry-run's bound: "sweep", "matrix", "configs", "limit" or "allowance"
    doc: str                     # the page that documents the step
    test: str                    # the integration test that runs it
    skip: Callable[[Run], str] = lambda run: ""     # why it cannot run in this run, or ""
    planned: Callable[[Run], bool] = lambda run: True  # part of this run at all
    outputs: Tuple[str, ...] = ()  # files it writes besides NAME.csv, .json, .txt and logs/NAME.err
    table: Optional[Tuple[str, Tuple[str, ...]]] = None  # the report's table: (CSV name, columns)
    allowance: str = ""          # cost "allowance": what the fixed allowance covers
    axes: Tuple[Tuple[str, str], ...] = ()  # cost "configs": (option, word) whose lists multiply to its configurations
    shaped: bool = False         # its shape (arguments or skip) comes from suite/shapes.py
    chosen_by: str = ""          # a step that writes this one's arguments at run time
    pair: Callable[[Run], str] = lambda run: ""  # the ranks it measures, a line for --dry-run and progress
    verdict: bool = False        # exit 1 is its verdict (thresholds missed), not a failure
    advisory: bool = False       # its verdict (exit 1) and its refusal of its inputs (exit 2) are reported, never the run's exit
    reads_meta: bool = False     # meta.json is written before it runs
    always: bool = False         # runs even when --steps leaves it out: it judges or reports the others' results
    stdout: str = ""             # where stdout goes, when not NAME.txt
    role: str = ""               # what it measures or writes, as its readers ask for it (by_role): never its name


# ---- preconditions, with the reason a step is skipped ----
def needs_peer(run):
    return "" if run.nranks >= 2 else f"needs at least 2 ranks; this run has {run.nranks}"


def shape(run, name):
    """The shape suite/shapes.py gives step `name` in this run's world (ranks per
    node from the run's placement, one node until it is known): a dict with
    args, describe, skip and note."""
    for s in shapes_of(run):
        if s["step"] == name:
            return s
    raise KeyError(name)


def name_shapes(shapes):
    """suite/shapes.py's shapes (each with its step's role), each with its step's name added as "step"."""
    return [dict(s, step=by_role(s["role"]).name) for s in shapes]


def shapes_of(run):
    # a copy: the cached answer must not change under a caller
    return name_shapes(copy.deepcopy(_shapes(run.nranks, run.ranks_per_node or run.nranks, run.gpus, run.chosen_model,
                                 run.model_file, run.profile, run.element_bytes, run.pp_counts, run.gpu_memory)))


@functools.lru_cache(maxsize=16)
def _model(name, path):
    return models.resolve(name, path)


@functools.lru_cache(maxsize=16)
def _shapes(ranks, rpn, gpus, name, path, profile, es, pp_counts, memory):
    """Asked for by every shaped step's arguments and skip: computed once per world."""
    return shaping.shapes(ranks, rpn, gpus, _model(name, path), profile, es, pp_counts, memory)


def shape_args(run, name):
    return shape(run, name)["args"] or []


def shaped_skip(name):
    """A shaped step is skipped where its shape says why; it is never run to fail."""
    return lambda run: shape(run, name)["skip"] or ""


def workload_cap(run):
    return ["--max-seconds-per-size", run.limits.workload_cap]


def needs_choice(run, name, chooser="repro_setup"):
    if run.dry_run or os.path.exists(chosen_args_file(run, name)):
        return ""
    return f"{chooser} chose no configuration (see logs/{chooser}.err)"


# ---- arguments that are computed, not copied from the profile ----
def sweep(run):
    """The profile's collective sweep; on GPUs up to gpu_sweep_max (nccl-tests' sizes), at most an
    eighth of a GPU's memory (send, receive and an all-gather's whole output)."""
    args = list(run.limits.sweep)
    if run.gpus > 0:
        top = {"1G": 1 << 30, "8G": 8 << 30}[run.limits.gpu_sweep_max]
        while run.gpu_memory and top > 1 << 20 and top * 8 > run.gpu_memory:
            top //= 2
        args[args.index("-e") + 1] = "%dG" % (top >> 30) if top >= 1 << 30 else "%dM" % (top >> 20)
    return args


def probe_args(run):
    """compute_probe: on GPUs cuBLAS in bf16 at the sizes a large model's GEMMs have; on CPUs the
    host BLAS in fp32 at sizes it runs in seconds."""
    if run.gpus > 0:
        return ["--engine", "cublas", "-d", "bfloat16", "--sizes", "4096,8192,16384"]
    return ["--sizes", "256,512,1024"]


def matrix_cap(run):
    """The all-pairs matrix runs its rounds (at most NP-1; fewer sampled above 64 ranks) of 2 sizes: cap
    each size so the whole matrix takes at most half the step limit (1 s a size on small worlds)."""
    rounds = shaping.matrix_rounds(run.nranks, run.ranks_per_node or run.nranks, shaping.matrix_sampled(run.nranks))
    c = run.limits.step_limit / 2 / (2 * max(rounds, 1))
    return "%.3g" % min(1.0, max(0.01, c))


def search_cap(run):
    """dp_allreduce --target-ratio measures at most 12 probes and one more configuration (bucket):
    each capped at 1/16 of the step limit, all of them fit in it with the launch, however loaded
    the machine (a quiet probe of repro_dp takes about 1.5 s)."""
    return ["--max-seconds-per-size", "%g" % (run.limits.step_limit / 16)]


def chosen_args_file(run, name):
    return os.path.join(run.out, "reproduce", name + ".args")


def chosen_args(run, name):
    """The arguments repro_setup chose from this run's rates, one a line."""
    if run.dry_run:
        return []
    with open(chosen_args_file(run, name)) as f:
        return f.read().splitlines()


def placement_of_run(out):
    """(nodes, ranks on rank 0's node) from the metadata of the run's first
    sweep; (1, 0) before it ran."""
    nodes, rpn = 1, 0
    try:
        with open(os.path.join(out, "coll_sweep.csv")) as f:
            for line in f:
                if line.startswith("# nnodes:"):
                    nodes = int(line.split(":", 1)[1].strip() or 1)
                elif line.startswith("# ranks_per_node:"):
                    first = line.split(":", 1)[1].split(",")[0]
                    rpn = int("".join(c for c in first if c.isdigit()) or 0)
    except (OSError, ValueError):
        return 1, 0
    return nodes, rpn


COLL_COLUMNS = ("collective", "bytes", "nranks", "link_class", "time_us", "algbw_GBps", "busbw_GBps", "wrong")
with_reproduce = lambda run: run.reproduce  # noqa: E731

STEPS = (
    Step(name="coll_sweep", binary="coll_sweep", kind=MPI, args=lambda r: ["--coll", "all", *sweep(r)], weight=30,
         cost="sweep",
         doc="docs/METRICS.md", test="tests/integration/test_coll_sweep.sh", table=("coll_sweep", COLL_COLUMNS),
         role="collectives over all ranks"),
    Step(name="coll_sweep_intra", binary="coll_sweep", kind=MPI,
         args=lambda r: ["--coll", "all", *shape_args(r, "coll_sweep_intra"), *sweep(r)], weight=20,
         cost="sweep", doc="docs/emulated-cluster.md", test="tests/integration/test_run_all_cluster.sh",
         skip=shaped_skip("coll_sweep_intra"), shaped=True, table=("coll_sweep_intra", COLL_COLUMNS),
         role="collectives inside each node"),
    Step(name="p2p_sweep", binary="p2p_sweep", kind=MPI, args=lambda r: ["--mode", "all", *r.limits.p2p], weight=10,
         cost="sweep",
         doc="docs/METRICS.md", test="tests/integration/test_p2p_sweep.sh", skip=needs_peer,
         table=("p2p_sweep", ("mode", "bytes", "rank_a", "rank_b", "link_class", "time_us", "bw_GBps", "wrong")),
         pair=lambda r: shaping.p2p_pair(r.nranks, r.ranks_per_node or r.nranks), role="point-to-point"),
    Step(name="p2p_matrix", binary="p2p_sweep", kind=MPI,
         args=lambda r: ["--matrix", "--sizes", "8,1M", "--max-seconds-per-size", matrix_cap(r), "--matrix-csv", r.at("p2p_matrix")],
         weight=4, cost="matrix", doc="docs/placement.md", test="tests/integration/test_run_all.sh", skip=needs_peer,
         outputs=("p2p_matrix-latency.csv", "p2p_matrix-bw.csv", "p2p_matrix-pairs.csv"),
         table=("p2p_matrix-pairs", ("a", "b", "link_class", "latency_us", "bw_GBps", "slow")),
         pair=lambda r: shaping.matrix_line(r.nranks, r.ranks_per_node or r.nranks),
         role="every pair of ranks"),
    # The workloads: shaped by suite/shapes.py (TP inside a node, PP across nodes, DP over the rest),
    # each configuration capped so that --dry-run bounds them at any scale.
    Step(name="dp_allreduce", binary="dp_allreduce", kind=MPI,
         args=lambda r: ["--overlap", "none,bucket", *r.model, *shape_args(r, "dp_allreduce"), *r.limits.dp, *workload_cap(r)],
         weight=10, cost="configs", doc="docs/dp_allreduce.md", test="tests/integration/test_dp_allreduce.sh",
         skip=shaped_skip("dp_allreduce"), shaped=True,
         axes=(("--grad-bytes", "gradient size"), ("--overlap", "overlap")),
         table=("dp_allreduce", ("nranks", "link_class", "grad_bytes", "overlap", "compute_us", "comm_us", "step_us",
                                 "overhead", "predicted_overhead", "busbw_GBps", "wrong")), role="data parallel"),
    Step(name="tp_layer", binary="tp_layer", kind=MPI,
         args=lambda r: ["--tp-comm", "allreduce,sp", *r.model, *shape_args(r, "tp_layer"), *r.limits.tp, *workload_cap(r)],
         weight=8, cost="configs", doc="docs/tp_layer.md", test="tests/integration/test_tp_layer.sh",
         skip=shaped_skip("tp_layer"), shaped=True, axes=(("--seq-list", "sequence length"), ("--tp-comm", "mode")),
         table=("tp_layer", ("tp", "link_class", "mode", "hidden", "compute_us", "comm_us", "step_us", "comm_fraction",
                             "comm_bytes_per_rank", "speedup", "wrong")), role="tensor parallel"),
    Step(name="pp_pipeline", binary="pp_pipeline", kind=MPI,
         args=lambda r: [*r.model, *shape_args(r, "pp_pipeline"), *r.limits.pp[r.limits.pp.index("-n"):], *workload_cap(r),
                    "--trace", r.at("pp_trace.csv")],
         weight=10, cost="configs", doc="docs/pp_pipeline.md", test="tests/integration/test_pp_pipeline.sh",
         outputs=("pp_trace.csv",),
         skip=shaped_skip("pp_pipeline"), shaped=True,
         axes=(("--schedule", "schedule"), ("--micro-batches", "micro-batch count")),
         table=("pp_pipeline", ("schedule", "stages", "micro_batches", "link_class", "step_us", "efficiency",
                                "efficiency_theory", "bubble_fraction", "peak_act_bytes",
         "wrong")), role="pipeline parallel"),
    Step(name="hybrid_3d", binary="hybrid_3d", kind=MPI,
         args=lambda r: [*r.model, *shape_args(r, "hybrid_3d"), "-n", "2", "-w", "1", *workload_cap(r)],
         weight=8, cost="configs", doc="docs/placement.md", test="tests/integration/test_hybrid_3d.sh",
         skip=shaped_skip("hybrid_3d"), shaped=True, axes=(("--compare-placements", "placement"),),
         table=("hybrid_3d", ("placement", "tp", "pp", "dp", "tp_link", "pp_link", "dp_link", "step_us", "compute_us",
                              "tp_comm_us", "pp_wait_us", "dp_comm_us", "wrong")), role="3D parallel"),
    Step(name="fsdp_step", binary="fsdp_step", kind=MPI,
         args=lambda r: ["--prefetch", "off,on", *r.model, *shape_args(r, "fsdp_step"), *r.limits.dp, *workload_cap(r)],
         weight=2, cost="configs", doc="docs/fsdp_step.md", test="tests/integration/test_fsdp_step.sh",
         skip=shaped_skip("fsdp_step"), shaped=True, axes=(("--prefetch", "prefetch setting"),),
         table=("fsdp_step", ("nranks", "shard_group", "replicas", "link_class", "prefetch", "compute_us", "comm_us",
                              "step_us", "exposed_us", "overhead", "predicted_exposed_us", "dp_overhead", "wrong")),
         role="sharded data parallel"),
    Step(name="cp_attention", binary="cp_attention", kind=MPI,
         args=lambda r: ["--overlap", "off,on", *r.model, *shape_args(r, "cp_attention"), *r.limits.tp, *workload_cap(r)],
         weight=3, cost="configs", doc="docs/cp_attention.md", test="tests/integration/test_cp_attention.sh",
         skip=shaped_skip("cp_attention"), shaped=True, axes=(("--overlap", "overlap setting"),),
         table=("cp_attention", ("nranks", "cp", "link_class", "seq", "overlap", "compute_us", "comm_us", "step_us",
                                 "exposed_us", "overhead", "predicted_exposed_us", "transfer_bytes", "wrong")),
         role="context parallel"),
    Step(name="moe_layer", binary="moe_layer", kind=MPI,
         args=lambda r: [*r.precision, *shape_args(r, "moe_layer"), *r.limits.tp, *workload_cap(r)],
         weight=4, cost="configs", doc="docs/moe_layer.md", test="tests/integration/test_moe_layer.sh",
         skip=shaped_skip("moe_layer"), shaped=True, axes=(("--ep-group", "EP group"), ("--skew", "load")),
         table=("moe_layer", ("nranks", "ep_group", "link_class", "model", "skew", "imbalance", "step_us", "dispatch_us",
                              "combine_us", "a2a_share", "dispatch_vs_even", "bw_vs_even", "slowest_rank",
                              "predicted_step_us", "wrong")),
         role="expert parallel"),
    Step(name="compute_probe", binary="compute_probe", kind=TOOL,
         args=lambda r: [*probe_args(r), "-n", "5", "--copy-bytes", "0", "--csv", r.at("compute_probe.csv")],
         weight=2, cost="allowance", doc="docs/compute.md", test="tests/integration/test_compute_probe.sh",
         allowance="no MPI",
         outputs=("compute_probe.csv",), role="compute rate"),
    Step(name="plan_fit", binary="plan", kind=TOOL, args=lambda r: ["--fit", r.out, "--csv", r.at("plan_fit.csv")],
         weight=1, cost="allowance",
         doc="docs/plan.md", test="tests/integration/test_run_all.sh", skip=needs_peer, allowance="no MPI",
         outputs=("plan_fit.csv",),
         table=("plan_fit", ("benchmark", "row", "predicted_us", "measured_us", "rel_error")), role="model fit"),
    Step(name="calibrate", binary="plan", kind=TOOL,
         args=lambda r: ["--calibrate", r.out, "-o", r.at("cluster.txt")], weight=1, cost="allowance",
         doc="docs/plan.md", test="tests/integration/test_reproduce.sh", skip=needs_peer, allowance="no MPI",
         outputs=("cluster.txt",), role="cluster file"),
    # --reproduce: the documents' figures, each set up from the rates measured above (docs/reproduce.md).
    Step(name="repro_busbw", binary="coll_sweep", kind=MPI,  args=# the sizes repro_dp will use
         lambda r: ["--coll", "allreduce", "-b", "1M", "-e", "64M", "-f", "2", "--max-seconds-per-size", "0.5"],
         weight=6, cost="sweep", doc="docs/reproduce.md", test="tests/integration/test_reproduce.sh",
         planned=with_reproduce, role="documents' all-reduce sweep"),
    Step(name="repro_setup", binary="scripts/reproduce.py", kind=SCRIPT,
         args=lambda r: ["setup", r.out, str(r.nranks)], weight=1, cost="allowance",
         doc="docs/reproduce.md", test="tests/integration/test_reproduce.sh", planned=with_reproduce,
         allowance="reproduce.py",
         outputs=("reproduce/",), role="documents' setup"),
    Step(name="repro_dp", binary="dp_allreduce", kind=MPI,
         args=lambda r: [*chosen_args(r, "repro_dp"), *search_cap(r)], weight=10, cost="limit",
         doc="docs/reproduce.md",
         test="tests/integration/test_reproduce.sh", planned=with_reproduce, chosen_by="repro_setup",
         skip=lambda r: needs_choice(r, "repro_dp"), role="documents' DP"),
    Step(name="repro_scan_setup", binary="scripts/reproduce.py", kind=SCRIPT, args=lambda r: ["scan-setup", r.out],
         weight=1, cost="allowance",
         doc="docs/reproduce.md", test="tests/integration/test_reproduce.sh", planned=with_reproduce,
         allowance="reproduce.py",
         skip=lambda r: needs_choice(r, "repro_dp"), role="documents' DP scan setup"),
    Step(name="repro_dp_scan", binary="dp_allreduce", kind=MPI, args=lambda r: chosen_args(r, "repro_dp_scan"),
         weight=5, cost="limit",
         doc="docs/reproduce.md", test="tests/integration/test_reproduce.sh", planned=with_reproduce,
         chosen_by="repro_scan_setup", skip=lambda r: needs_choice(r, "repro_dp_scan", "repro_scan_setup"),
         role="documents' DP scan"),
    Step(name="repro_pp", binary="pp_pipeline", kind=MPI, args=lambda r: chosen_args(r, "repro_pp"), weight=10,
         cost="limit", doc="docs/reproduce.md",
         test="tests/integration/test_reproduce.sh", planned=with_reproduce, chosen_by="repro_setup",
         skip=lambda r: needs_choice(r, "repro_pp"), role="documents' PP"),
    Step(name="repro_tp", binary="tp_layer", kind=MPI, args=lambda r: chosen_args(r, "repro_tp"), weight=4,
         cost="limit", doc="docs/reproduce.md",
         test="tests/integration/test_reproduce.sh", planned=with_reproduce, chosen_by="repro_setup",
         skip=lambda r: needs_choice(r, "repro_tp"), role="documents' TP"),
    Step(name="repro_write", binary="scripts/reproduce.py", kind=SCRIPT, args=lambda r: ["write", r.out, r.bin],
         weight=2, cost="allowance",
         doc="docs/reproduce.md", test="tests/integration/test_reproduce.sh", planned=with_reproduce,
         allowance="reproduce.py",
         outputs=("reproduce.csv",), role="documents' figures"),
    Step(name="acceptance", binary="acceptance", kind=TOOL,
         args=lambda r: ["--thresholds", r.acceptance, "--results", r.out, "--junit", r.junit or r.at("acceptance-junit.xml")],
         weight=1, cost="allowance", doc="docs/acceptance.md", test="tests/integration/test_run_all.sh",
         planned=lambda r: bool(r.acceptance),
         allowance="no MPI", verdict=True, always=True, outputs=("acceptance.txt", "acceptance-junit.xml"),
         role="acceptance verdict"),
    # --baseline: this run against an earlier one (parabench-compare), for the report's verdict. Figures
    # worse than the baseline's, or a baseline of another shape, are reported, not a failure of the run.
    Step(name="baseline_compare", binary="scripts/compare-runs.py", kind=SCRIPT,
         args=lambda r: ["--quiet", "--out", r.at("compare"), r.baseline, r.out], weight=2, cost="allowance",
         doc="docs/acceptance.md", test="tests/integration/test_golden_loop.sh", planned=lambda r: bool(r.baseline),
         allowance="compare-runs.py", advisory=True, always=True, reads_meta=True, stdout="logs/compare.out",
         outputs=("compare/",), role="comparison with the baseline"),
    Step(name="report", binary="scripts/report.py", kind=SCRIPT, args=lambda r: ["--quiet", r.out], weight=5,
         cost="allowance", doc="docs/run_all.md",
         test="tests/integration/test_report.sh", allowance="gnuplot, report.py", reads_meta=True, always=True,
         stdout="logs/report.out", outputs=("plots/", "summary.txt", "report.md", "index.html"), role="the pages of the run"),
)

def by_role(role):
    """The step that plays ROLE ("collectives inside each node"): the report, the figures and the
    suspects find a step's output by what it is, so a step is named here only."""
    for s in STEPS:
        if s.role == role:
            return s
    raise KeyError(f"no step has the role {role!r} (suite/manifest.py)")


def output(out, role, suffix=".csv"):
    """The file of run OUT that the step playing ROLE writes: NAME + SUFFIX ("-pairs.csv", ".json")."""
    return os.path.join(out, by_role(role).name + suffix)


# The report's tables, in the order of the steps: CSV name -> columns shown.
TABLES = {s.table[0]: list(s.table[1]) for s in STEPS if s.table}


def plan(run):
    """The steps of this run, in order. With --steps, the named ones, and the
    steps that read what they measured (acceptance, the report)."""
    return [s for s in STEPS if s.planned(run) and (not run.steps or s.name in run.steps or s.always)]


def shapes_record(run):
    """Every shaped step's shape, for meta.json: {step: {args, describe, skip, note}}."""
    names = {s.name for s in plan(run) if s.shaped}
    return {s["step"]: {k: s[k] for k in ("args", "describe", "skip", "note")} for s in shapes_of(run)
            if s["step"] in names}


def model_record(run):
    """For meta.json: the model the workloads ran (its shape and parameters), their precision,
    the job's (t, p, d) and the bytes it communicates (suite/models.py)."""
    m, es = run.model_spec, run.element_bytes
    t, p, d = shaping.job_of(run.nranks, run.ranks_per_node or run.nranks, run.gpus, m)
    return {"name": m["name"], "file": run.model_file or None, "shape": {k: m[k] for k in models.FIELDS},
            "params": models.params(m), "precision": "bf16" if es == 2 else "fp32", "job": {"tp": t, "pp": p, "dp": d},
            "layers_run_per_stage": models.LAYER_CAP[run.profile], "bytes": models.sizes(m, t, p, es)}


def with_placement(run, nodes, ranks_per_node):
    return replace(run, nodes=nodes, ranks_per_node=ranks_per_node)
