"""--dry-run: every step with its launch line, then an upper bound on the
time (estimate.py); nothing is installed, built or run."""
import os
import shlex

from suite import commands, estimate, manifest, models, tables
from suite import shapes as shaping
from suite.machine import assumed_ranks_per_node


def choices(steps, bin_dir):
    """{option: names} that "all" stands for, as the sweep binaries list them (tables.py);
    a string saying what is missing when one is not built."""
    found = {}
    for binary in sorted(estimate.sweeps_need(steps)):
        path = os.path.join(bin_dir, binary)
        if not os.access(path, os.X_OK):
            return f"no estimate: {path} is not built (make); it lists the collectives and modes that 'all' runs"
        for opt, what in estimate.ALL_OF.items():
            found[opt] = found.get(opt) or tables.names(path, what) or []
    return found


def _gib(n):
    return f"{n / 1073741824:.2f} GiB" if n >= 1 << 30 else f"{n / 1048576:.1f} MiB"


def model_lines(run):
    """The model, its precision and the sizes the workloads would move and hold."""
    m, es = run.model_spec, run.element_bytes
    t, p, d = shaping.job_of(run.nranks, run.ranks_per_node or run.nranks, run.gpus, m)
    sz = models.sizes(m, t, p, es)
    out = [f"model {models.describe(m)}",
           f"precision {'bf16' if es == 2 else 'fp32'} GEMMs and gradients; job TP {t} x PP {p} x DP {d}; "
           f"{models.LAYER_CAP[run.profile]} of a stage's {-(-m['layers'] // p)} layers run",
           f"bytes: TP call {sz['tp_call']} ({_gib(sz['tp_call'])}, b*s*h*{es}); gradients a rank {sz['grad_per_rank']} "
           f"({_gib(sz['grad_per_rank'])}, params/(t*p)*{es}); PP message {sz['pp_message']} ({_gib(sz['pp_message'])})"]
    mem = [f"{s['step']} {_gib(s['sizes']['memory'])}" for s in manifest.shapes_of(run)
           if s["sizes"].get("memory")]
    if mem:
        where = f"a GPU of {_gib(run.gpu_memory)}" if run.gpu_memory else "a GPU" if run.gpus else "a rank"
        out.append(f"memory {where}: " + ", ".join(mem))
    return out


def show(o, machine, run, steps, backend):
    print(f"run_all.sh --dry-run: {o.profile} profile, {run.nranks} ranks ({machine.device}), {machine.launcher}, "
          f"bound to: {machine.bind_applied}; nothing is installed, built or run")
    print(f"results would go to {run.out}")
    for line in model_lines(run):
        print(line)
    for k, step in enumerate(steps, 1):
        why = step.skip(run)
        line = f"skipped: {why}" if why else shlex.join(commands.command(step, run, machine.launch, backend))
        later = f"  # + the arguments {step.chosen_by} chooses" if step.chosen_by and not why else ""
        print(f"[{k}/{len(steps)}] {step.name}: {line}{later}")
        if step.shaped and not why:
            print(f"    shape: {manifest.shape(run, step.name)['describe']}")
        if step.pair(run) and not why:
            print(f"    {step.pair(run)}")
    print("")
    names = choices(steps, run.bin)
    if isinstance(names, str):
        print(names)
        return 0
    print("\n".join(estimate.Estimate(run, names).lines(steps)))
    return 0
