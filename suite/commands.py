"""A step's command line: what the driver runs and --dry-run prints."""
import os

from suite import paths
from suite.manifest import MPI, SCRIPT, TOOL

# timeout's grace between its TERM and its KILL: a launcher needs time to stop its ranks.
KILL_AFTER = {MPI: "10", TOOL: "5"}


def command(step, run, launch, backend):
    args = step.args(run)
    if step.kind == SCRIPT:
        return ["python3", paths.script(step.binary), *args]
    # timeout puts itself and the launcher in a process group; the driver's session holds both.
    limit = ["timeout", "-k", KILL_AFTER[step.kind], str(run.limits.step_limit)]
    binary = os.path.join(run.bin, step.binary)
    if step.kind == TOOL:
        return [*limit, binary, *args]
    return [*limit, *launch, binary, *args, *(["--backend", backend] if backend else []),
            "--csv", run.at(step.name + ".csv"), "--json", run.at(step.name + ".json")]
