"""--dry-run: every step with its launch line, then an upper bound on the
time (estimate.py); nothing is installed, built or run."""
import os
import shlex
import subprocess

from suite import commands, estimate, manifest
from suite.environment import slurm_count
from suite.options import hostfile_hosts, in_slurm_job


def assumed_ranks_per_node(o, nranks):
    """--ranks-per-node, else the hostfile's slots spread over its hosts, else the
    ranks spread over a Slurm job's nodes (SLURM_JOB_NUM_NODES, as srun spreads
    them), else one node."""
    rpn = o.ranks_per_node
    if not rpn and o.hostfile:
        rpn = -(-nranks // max(hostfile_hosts(o.hostfile), 1))
    job_nodes = slurm_count("SLURM_JOB_NUM_NODES")
    if not rpn and in_slurm_job() and job_nodes > 0:
        rpn = -(-nranks // job_nodes)
    return nranks if not rpn or rpn > nranks else rpn


def choices(steps, bin_dir):
    """{option: names} that "all" stands for, from the sweep binaries' --help;
    a string saying what is missing when one is not built."""
    found = {}
    for binary in sorted(estimate.sweeps_need(steps)):
        path = os.path.join(bin_dir, binary)
        if not os.access(path, os.X_OK):
            return f"no estimate: {path} is not built (make); it lists the collectives and modes that 'all' runs"
        text = subprocess.run([path, "--help"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout
        for opt in ("--coll", "--mode"):
            found[opt] = found.get(opt) or estimate.binary_choices(text, opt)
    return found


def show(o, machine, run, steps, backend):
    print(f"run_all.sh --dry-run: {o.profile} profile, {run.nranks} ranks ({machine.device}), {machine.launcher}, "
          f"bound to: {machine.bind_applied}; nothing is installed, built or run")
    print(f"results would go to {run.out}")
    for k, step in enumerate(steps, 1):
        why = step.skip(run)
        line = f"skipped: {why}" if why else shlex.join(commands.command(step, run, machine.launch, backend))
        later = f"  # + the arguments {step.chosen_by} chooses" if step.chosen_by and not why else ""
        print(f"[{k}/{len(steps)}] {step.name}: {line}{later}")
        if step.shaped and not why:
            print(f"    shape: {manifest.shape(run, step.name)['describe']}")
    print("")
    names = choices(steps, run.bin)
    if isinstance(names, str):
        print(names)
        return 0
    print("\n".join(estimate.Estimate(run, names).lines(steps)))
    return 0
