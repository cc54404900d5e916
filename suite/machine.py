"""The machine a run uses: cores, GPUs, ranks, binding and the launch line
(srun inside a Slurm job, otherwise mpirun)."""
import os
import re
import shutil
from dataclasses import dataclass, field

from suite import models, processes
from suite.environment import slurm_count
from suite.options import die_usage, hostfile_hosts, in_slurm_job


@dataclass
class Machine:
    cores: int
    gpus: int
    nranks: int
    bind: str                # requested (or the default)
    bind_applied: str
    bind_note: str
    launcher: str
    launch: list = field(default_factory=list)
    oversubscribed: bool = False  # more ranks than this machine's cores (mpirun --oversubscribe)
    gpu_memory: float = 0    # bytes of one GPU (the smallest), 0 without GPUs
    gpu_name: str = ""

    @property
    def device(self):
        if self.gpus > 0:
            return f"{self.gpus} GPUs" + (f" ({self.gpu_name}, {self.gpu_memory / 2**30:.0f} GiB each)" if self.gpu_name else "")
        return f"{self.cores} cores"


def cores():
    """nproc, not os.cpu_count(): it honours the affinity mask and OMP_NUM_THREADS."""
    rc, out = processes.output(["nproc"])
    return int(out.strip()) if rc == 0 and out.strip().isdigit() else 1


def gpus(probe_binary, backend):
    """GPUs the ranks would use: a CUDA build (the binary links NCCL) and devices nvidia-smi lists."""
    if backend == "mpi" or not shutil.which("nvidia-smi"):
        return 0
    rc, libs = processes.output(["ldd", probe_binary])
    if rc != 0 or "libnccl" not in libs:
        return 0
    _, listing = processes.output(["nvidia-smi", "-L"])
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def gpu_memory():
    """(bytes, name) of the smallest visible GPU, from nvidia-smi; (0, "") when it cannot say."""
    _, listing = processes.output(["nvidia-smi", "--query-gpu=memory.total,name", "--format=csv,noheader,nounits"])
    found = []
    for line in listing.splitlines():
        mib, _, name = line.partition(",")
        if mib.strip().isdigit():
            found.append((int(mib.strip()) * 1048576.0, name.strip()))
    return min(found) if found else (0, "")


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


def default_ranks(o, ncores, ngpus):
    tasks = slurm_count("SLURM_NTASKS")
    if tasks:
        return tasks
    if o.hostfile:
        return o.slots
    if ngpus > 0:
        return ngpus
    return max(ncores, 2)


def detect(o, root, probe_binary):
    ncores, ngpus = cores(), gpus(probe_binary, o.backend)
    memory, name = gpu_memory() if ngpus else (0, "")
    if getattr(o, "gpus_per_node", 0):  # --dry-run for a machine this is not: its GPUs, not ours
        ngpus, memory, name = o.gpus_per_node, models.GPUS[o.gpu or "h100"]["memory"], (o.gpu or "h100").upper()
    nranks = o.np or default_ranks(o, ncores, ngpus)
    # Binding, as OSU's and nccl-tests' guides ask: a rank per core on CPUs, near its GPU with GPUs.
    bind = o.bind or ("gpu" if ngpus > 0 else "core")
    if bind == "gpu" and ngpus == 0:
        die_usage("--bind", "gpu needs visible GPUs and a CUDA build; expected none, core or numa")
    applied, note = bind, ""
    # From the ranks each node gets, whatever gave the count (--np, a hostfile, Slurm): nodes
    # are taken to have this one's cores, and mpirun or srun refuse to bind more ranks than that.
    per_node = assumed_ranks_per_node(o, nranks)
    if bind == "core" and per_node > ncores:
        applied, note = "none", (f"{per_node} ranks on a node of {ncores} cores cannot have a core each; "
                                 "ranks run unbound")
    m = Machine(ncores, ngpus, nranks, bind, applied, note, "mpirun", gpu_memory=memory, gpu_name=name)
    if in_slurm_job():
        m.launcher = "srun"
        cpu_bind = {"core": "cores", "numa": "ldoms"}.get(applied, "none")
        m.launch = ["srun", "-n", str(nranks)] + ([f"--ntasks-per-node={o.ranks_per_node}"] if o.ranks_per_node else [])
        m.launch.append(f"--cpu-bind={cpu_bind}")
        # The PMI Open MPI needs, named where the site's MpiDefault may be none (and so
        # recorded in meta.json's launch line); SLURM_MPI_TYPE, when set, wins.
        if not os.environ.get("SLURM_MPI_TYPE"):
            _, types = processes.output(["srun", "--mpi=list"])
            if re.search(r"(?<!\w)pmix(?!\w)", types):
                m.launch.append("--mpi=pmix")
        # Under srun --mpi=pmix a rank of Open MPI 4.1 that is late into MPI_Init now
        # and then gets a peer's first MPI message while still in the modex fence, and
        # dies in the TCP BTL (docs/run_all.md, "MPI_Init under srun"). With Slurm's
        # PMIx fences as rings it did not, in the recorded runs. The variable is
        # Slurm's; a value the user or the site set wins.
        if "SLURM_PMIX_FENCE" not in os.environ:
            m.launch = ["env", "SLURM_PMIX_FENCE=ring", *m.launch]
    else:
        binding = {"core": ["--map-by", "core", "--bind-to", "core"],
                   "numa": ["--map-by", "numa", "--bind-to", "numa"]}.get(applied, ["--bind-to", "none"])
        m.launch = ["mpirun", "-np", str(nranks)] + binding
        if nranks > ncores and not o.hostfile:
            m.launch.append("--oversubscribe")
            m.oversubscribed = True
        if o.hostfile:
            m.launch += ["--hostfile", o.hostfile]
            if applied == "gpu":  # ranks on other hosts get only the variables mpirun is told to pass
                m.launch += ["-x", "PARABENCH_BIND_NOTE"]
        if o.ranks_per_node:
            m.launch += ["--npernode", str(o.ranks_per_node)]
    if applied == "gpu":
        m.launch.append(os.path.join(root, "scripts", "bind-near-gpu.sh"))
    return m
