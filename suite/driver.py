"""run_all.sh's driver: checks the launch, installs what is missing, builds,
runs the steps of suite/manifest.py in order and writes the results
(steps.tsv, meta.json, logs/, the report), with progress on stderr and a
summary on stdout. SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the running
step's whole process tree, and what completed is still recorded and reported
(exit 128 + the signal); a step outlives no driver, even one killed
(suite/guard.py)."""
import contextlib
import dataclasses
import errno
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

from suite import commands, dry_run, environment, machine as machines, manifest, meta, options, paths, processes, version
from suite import shapes as shaping
from suite.processes import SIGNALS, Interrupted


# Why a run failed, as its exit code. With several causes the first of PRIORITY wins: wrong
# data and missed thresholds are what acceptance acts on, a hang hides what the step would
# have measured, and an environment error says only that this machine could not run it.
WRONG, HUNG, ENVIRONMENT = 1, 4, 3
PRIORITY = (WRONG, HUNG, ENVIRONMENT)


def cause(rc, step_limited):
    """The run's exit code a step's exit RC stands for. 124 (and 137, timeout's KILL) is the
    step limit of a step under timeout. Anything else (a crash, a usage error in a step's
    own arguments) is not explained by the machine, so it counts as wrong data."""
    if rc == 3:
        return ENVIRONMENT
    if rc == 4 or (step_limited and rc in (124, 137)):
        return HUNG
    return WRONG


def refused_for_test(*paths):
    """Fault hook, tests only (docs/reliability.md): PARABENCH_TEST_REFUSE=NAME makes the
    results directory refuse a step's output or log named NAME as a full disk would, so that
    a stop in the middle of a run, after steps have completed, can be tested."""
    name = os.environ.get("PARABENCH_TEST_REFUSE")
    for path in paths:
        if name and path.endswith(os.sep + name):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def run_exit(causes):
    """0 without a cause; otherwise the first of PRIORITY present."""
    return next((c for c in PRIORITY if c in causes), 0)


def hms(seconds):
    return "%d:%02d" % (seconds // 60, seconds % 60)


class Driver:
    def __init__(self, opts):
        self.o = opts
        self.build = os.environ.get("BUILD", "build")
        self.bin = paths.bin_dir(self.build)
        self.build_log = ""       # in /tmp until the results directory exists
        self.build_failed = False
        self.out = ""
        self.claimed = ""         # the results folder this run took (claim_results_dir)
        self.out_ready = False
        self.failed = []          # "name(exit N)", "name(not built)"
        self.causes = set()       # WRONG, HUNG, ENVIRONMENT: the run's exit code (run_exit)
        self.verdict_failed = False
        self.start = time.monotonic()
        self.step, self.step_t0 = None, 0.0  # the step running now
        self.at_step = ""  # the step the run is at, recorded or not

    def say(self, text):
        if not self.o.quiet:
            print(f"run_all: {text}", file=sys.stderr, flush=True)

    def elapsed(self, since=None):
        return int(time.monotonic() - (self.start if since is None else since))

    # ---- before the steps ----
    def install_and_build(self):
        """In a checkout: install what is missing and build. Installed, the binaries are there already."""
        if paths.installed():
            return
        deps = ["scripts/install-deps.sh", "--for", "run"] + ([] if self.o.install else ["--no-install"])
        if processes.run(deps, stdout=None, stderr=None, defer=True) != 0:
            print("run_all.sh: dependencies are missing (above); nothing was run", file=sys.stderr)
            sys.exit(3)
        SIGNALS.check()
        fd, self.build_log = tempfile.mkstemp(prefix="parabench-build.", dir="/tmp")
        os.close(fd)
        if processes.run(["make", "-q", f"BUILD={self.build}", "all"]) != 0:
            self.say(f"building ({self.build}/)")
            # -k: a benchmark that does not build is reported as such; the others still run.
            make = ["make", "-k", f"-j{machines.cores()}", f"BUILD={self.build}", "all"]
            if processes.run_to_files(make, self.build_log, None) != 0:
                self.build_failed = True
                print("run_all.sh: part of the build failed; see the build log in the results", file=sys.stderr)
                with open(self.build_log, errors="replace") as f:
                    sys.stderr.writelines([line for line in f if "error" in line][:5])

    def check_launcher(self):
        """One empty launch of the run's ranks before the first step: ranks that mpirun or srun
        cannot place (a hostfile it cannot read, more ranks per node than the hosts give) would
        fail every step as exit 1, "wrong data"; here they are exit 3, with the launcher's words."""
        rc, text = processes.output(["timeout", "-k", "5", "60", *self.machine.launch, "true"])
        if rc != 0:
            said = " | ".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("---"))
            options.die_env(f"the launcher refused this run's {self.machine.nranks} ranks (exit {rc}): "
                            f"{said[:600] or 'no message'}; nothing was run")

    def check_acceptance_file(self):
        """A bad threshold file is a usage error: say so before spending time on the suite."""
        if self.o.acceptance:
            checker = os.path.join(self.bin, manifest.by_role("acceptance verdict").binary)
            if not os.access(checker, os.X_OK):
                print(f"run_all.sh: {checker} is not built", file=sys.stderr)
                sys.exit(3)
            if processes.run([checker, "--check", self.o.acceptance], stderr=None) != 0:
                sys.exit(2)

    def results_dir(self):
        """results/<date>-<time>-<host>, or --out; an earlier run is never overwritten."""
        if self.claimed:
            return self.claimed
        if not self.o.out:
            base = time.strftime("results/%Y%m%d-%H%M%S-") + socket.gethostname().split(".")[0]
            out, n = base, 1
            while os.path.lexists(out):
                out, n = f"{base}-{n}", n + 1
            return out
        return self.o.out  # checked by options.parse

    def claim_results_dir(self):
        """Take the results folder before anything else, once: mkdir (a default name taken by a run
        started in the same second gets the next suffix), then steps.tsv created exclusively, so a
        second run into the same --out is refused (exit 2) instead of mixing its results in."""
        while True:
            out = self.results_dir()
            parent = os.path.dirname(out) or "."
            try:  # the folder above it: a FileExistsError here (a file of that name) is not a name taken
                os.makedirs(parent, exist_ok=True)
            except OSError:
                options.die_env(f"cannot create {out}: {parent} is not a directory that can hold it; nothing was run")
            try:
                os.mkdir(out)
                break
            except FileExistsError:
                if self.o.out:
                    break  # an empty --out that exists (options.parse): steps.tsv decides
            except OSError as e:
                options.die_env(f"--out '{out}' cannot be created: {e.strerror}; nothing was run")
        try:
            os.close(os.open(os.path.join(out, "steps.tsv"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            options.die_usage("--out", f"'{out}' is taken by another run (it has steps.tsv); results are never "
                              "mixed: choose another folder")
        except OSError as e:
            options.die_env(f"--out '{out}' cannot be written: {e.strerror}; nothing was run")
        self.claimed = out

    def release_unused_claim(self):
        """A run that stopped before its results folder was set up leaves nothing behind."""
        if self.claimed and not self.out_ready:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.claimed, "steps.tsv"))
                os.rmdir(self.claimed)

    def make_results_dir(self, out):
        try:
            os.makedirs(os.path.join(out, "logs"), exist_ok=True)
        except OSError:
            print(f"run_all.sh: cannot create {out}", file=sys.stderr)
            sys.exit(3)
        self.out = os.path.realpath(out)
        os.environ["PARABENCH_RUN"] = self.out  # the steps may write into this run's folder (docs/reliability.md)
        if self.machine.bind_applied == "gpu":  # where bind-near-gpu.sh notes a rank it could not bind (meta.py)
            os.environ["PARABENCH_BIND_NOTE"] = os.path.join(self.out, "logs", meta.BIND_NOTE)
        if self.build_log:  # none when installed: nothing is built
            shutil.move(self.build_log, os.path.join(self.out, "logs", "build.log"))
            self.build_log = ""
        open(os.path.join(self.out, "steps.tsv"), "w").close()
        self.out_ready = True

    # ---- the steps ----
    def record(self, name, status, rc, seconds, note):
        with open(os.path.join(self.out, "steps.tsv"), "a") as f:
            f.write(f"{name}\t{status}\t{rc}\t{seconds}\t{note}\n")

    def progress(self, k, step):
        """Step k's line: the time so far and, once a step is done, the time left at the
        rate of the step weights done so far."""
        elapsed, eta = self.elapsed(), ""
        if self.done_weight > 0 and elapsed > 0:
            eta = f", about {hms(elapsed * (self.total_weight - self.done_weight) // self.done_weight)} left"
        return f"[{k}/{len(self.plan)}] {step.name} ({hms(elapsed)} elapsed{eta})"

    def run_step(self, k, step):
        SIGNALS.check()
        self.say(self.progress(k, step))
        run = manifest.with_placement(self.run, *manifest.placement_of_run(self.out))
        why = step.skip(run)
        if why:
            self.record(step.name, "skipped", "-", 0, why)
            self.say(f"  skipped: {why}")
            if why.startswith(shaping.DOES_NOT_FIT):  # the GPU is too small for the model: an environment error
                self.failed.append(f"{step.name}(does not fit the GPU)")
                self.causes.add(ENVIRONMENT)
            return
        err = os.path.join(self.out, "logs", step.name + ".err")
        if step.kind != manifest.SCRIPT and not os.access(os.path.join(self.bin, step.binary), os.X_OK):
            missing = os.path.join(self.bin, step.binary)
            with open(err, "w") as f:
                f.write(f"run_all.sh: {step.name}: {missing} is not built\n")
            self.record(step.name, "not built", "-", 0, f"{missing} is missing")
            self.failed.append(f"{step.name}(not built)")
            self.causes.add(ENVIRONMENT)  # the build failed here (see logs/build.log)
            self.say(f"  {step.name}: not built")
            return
        if step.shaped:
            self.say(f"  shape: {manifest.shape(run, step.name)['describe']}")
        if step.pair(run):
            self.say(f"  {step.pair(run)}")
        cmd = commands.command(step, run, self.machine.launch, self.o.backend)
        stdout = os.path.join(self.out, step.stdout or step.name + ".txt")
        refused_for_test(stdout, err)
        self.step, self.step_t0 = step.name, time.monotonic()  # from here a signal records it as interrupted
        rc = processes.run_to_files(cmd, stdout, err)
        self.step = None
        seconds = self.elapsed(self.step_t0)
        if rc == 0:
            self.record(step.name, "ok", 0, seconds, "")
        elif step.verdict and rc == 1:
            self.verdict_failed = True
            self.causes.add(WRONG)
            self.record(step.name, "failed", 1, seconds, "thresholds missed")
        elif step.advisory and rc in (1, 2):
            # A verdict to report (figures worse), or inputs it refused (runs of other shapes): the report
            # says which; the run's exit stays the measurements' (docs/run_all.md, exit status).
            status = "worse" if rc == 1 else "refused"
            self.record(step.name, status, rc, seconds, f"see {step.stdout if rc == 1 else 'logs/' + step.name + '.err'}")
            self.say(f"  {step.name}: {status}; see the report")
        else:
            note = f"stopped after the step limit of {run.limits.step_limit} s" if rc == 124 and step.kind != manifest.SCRIPT \
                else f"see logs/{step.name}.err"
            self.failed.append(f"{step.name}(exit {rc})")
            self.causes.add(cause(rc, step.kind != manifest.SCRIPT))
            self.record(step.name, "failed", rc, seconds, note)
            self.say(f"  {step.name} failed with exit {rc}; see {err}")

    def write_meta(self, signal_name="", stopped=""):
        run = manifest.with_placement(self.run, *manifest.placement_of_run(self.out))
        meta.write(self.out, self.o, self.machine, self.plan, manifest.shapes_record(run), version.current(self.build),
                   signal_name, stopped or "", manifest.model_record(run))

    def summary(self):
        print("")
        print(f"parabench {self.o.profile} run: {self.machine.nranks} ranks ({self.machine.device}), {hms(self.elapsed())}")
        lines = []
        for name in ["summary.txt"] + (["acceptance.txt"] if self.o.acceptance else []):
            try:
                with open(os.path.join(self.out, name), errors="replace") as f:
                    text = f.read().splitlines()
            except OSError:
                continue
            lines += text if name == "summary.txt" else text[-1:]
        lines += [f"{s['name']}: {s['status']} ({s['note']})" for s in meta.read_steps(self.out)
                  if s["status"] in ("failed", "not built", "interrupted")]
        if not shutil.which("gnuplot"):  # the report ran without it (an installed run checks no dependency)
            lines.append("figures: not drawn: gnuplot is not installed (not on PATH); report.md has the tables")
        for line in lines:
            print(f"  {line}")
        print(f"  report: {self.out}/report.md")
        print(f"          {self.out}/index.html", flush=True)

    def run_steps(self):
        self.say(f"{self.o.profile} profile: {self.machine.nranks} ranks ({self.machine.device}), "
                 f"{self.machine.launcher}, bound to: {self.machine.bind_applied}, results in {self.out}")
        if self.machine.bind_note:
            self.say(f"  binding: {self.machine.bind_note}")
        self.total_weight, self.done_weight = sum(s.weight for s in self.plan), 0
        for k, step in enumerate(self.plan, 1):
            self.at_step = step.name
            if step.reads_meta:
                self.write_meta()
            self.run_step(k, step)
            self.done_weight += step.weight

    def interrupted(self, signum, proc):
        """Stop the running command, record the step, write meta.json and the report, exit 128 + signum.
        A second signal while the step stops only makes it stop sooner (stop_tree); meta.json is
        written before the report, atomically, so one during the report cannot lose it."""
        name, code = signal.Signals(signum).name, 128 + signum
        print(f"run_all.sh: {name}: stopping{' the step ' + self.step if self.step else ''}", file=sys.stderr, flush=True)
        processes.stop_tree(proc)
        if not self.out_ready:
            print(f"run_all.sh: interrupted by {name} before any step ran", file=sys.stderr)
            sys.exit(code)
        step, self.step = self.step, None
        if step:
            self.record(step, "interrupted", "-", self.elapsed(self.step_t0), f"stopped by {name}")
        self.write_meta(name, step)
        report = [s for s in self.plan if s.role == "the pages of the run"]
        if step != report[0].name:
            try:  # a second signal stops the report and ends the run at once
                cmd = commands.command(report[0], self.run, self.machine.launch, self.o.backend)
                processes.run_to_files(cmd, os.path.join(self.out, report[0].stdout),
                                       os.path.join(self.out, "logs", report[0].name + ".err"))
            except Interrupted as again:
                processes.stop_tree(again.proc)
                sys.exit(code)
        self.summary()
        print(f"run_all.sh: interrupted by {name}{' during ' + step if step else ''}; what completed is in {self.out} "
              "(meta.json, report.md)", file=sys.stderr)
        sys.exit(code)

    def cannot_write(self, e):
        """The results directory cannot take another write (a full disk, a quota, a read-only mount):
        every later step would fail the same way, so the run stops here, exit 3. meta.json is
        tried once more; it is written whole or not at all (atomic_file), never left empty."""
        where = f" at step {self.at_step}" if self.at_step else ""
        print(f"run_all.sh: --out {self.out or self.o.out}: cannot write {e.filename or 'the results'}: "
              f"{e.strerror or e}; stopped{where}", file=sys.stderr, flush=True)
        if self.out_ready:
            try:
                self.write_meta()
            except OSError:
                pass
        return 3

    def main(self):
        o = self.o
        backend_checked = options.check_backend(o, self.bin)  # before anything is installed, where already built
        if not o.dry_run:
            self.claim_results_dir()
            self.install_and_build()
            if not backend_checked:
                options.check_backend(o, self.bin)
            self.check_acceptance_file()
        # ---- machine: ranks and launcher ----
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                          OMPI_MCA_btl_base_warn_component_unused="0")
        self.machine = machines.detect(o, paths.HOME, os.path.join(self.bin, manifest.STEPS[0].binary))
        if o.backend == "nccl" and self.machine.gpus == 0 and not o.dry_run and not o.hostfile:
            # A GPU is visible (options.check_launch) but this build has no NCCL: every step would exit 3.
            options.die_env(f"--backend nccl needs a CUDA build with NCCL; {self.build}/bin does not link libnccl "
                            "(make CUDA=1); nothing was run")
        if not o.dry_run:
            self.check_launcher()
        out = self.results_dir()
        self.run = manifest.Run(profile=o.profile, nranks=self.machine.nranks, gpus=self.machine.gpus, out=out,
                                bin=self.bin, acceptance=o.acceptance, junit=o.junit, reproduce=o.reproduce,
                                baseline=o.baseline,
                                dry_run=o.dry_run, steps=o.steps, model_name=o.model, model_file=o.model_file,
                                gpu_memory=self.machine.gpu_memory)
        self.plan = manifest.plan(self.run)
        if o.dry_run:
            rpn = dry_run.assumed_ranks_per_node(o, self.machine.nranks)
            nodes = -(-self.machine.nranks // rpn)
            try:
                return dry_run.show(o, self.machine, manifest.with_placement(self.run, nodes, rpn), self.plan, o.backend)
            except BrokenPipeError:  # `--dry-run | head`: the reader has what it wanted
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 0
        try:
            self.make_results_dir(out)
            self.run = dataclasses.replace(self.run, out=self.out)
            self.run_steps()
        except OSError as e:
            return self.cannot_write(e)
        # Every step is recorded and the report written: a signal now just ends the summary.
        SIGNALS.uninstall()
        if self.build_failed:
            self.failed.append("build")
            self.causes.add(ENVIRONMENT)
        self.summary()
        if self.failed:
            print(f"run_all.sh: failed: {' '.join(self.failed)}", file=sys.stderr)
        if self.verdict_failed:
            print(f"run_all.sh: acceptance: FAIL (thresholds missed; see {self.out}/acceptance.txt)", file=sys.stderr)
        rc = run_exit(self.causes)
        if rc:
            why = {WRONG: "wrong data or missed thresholds", HUNG: "a step hung (watchdog or step limit)",
                   ENVIRONMENT: "the environment (steps exited 3, or the build failed)"}[rc]
            print(f"run_all.sh: exit {rc}: {why}", file=sys.stderr)
        return rc


def main(argv):
    SIGNALS.install()
    if not paths.installed():  # installed, results go under the current directory (suite/paths.py)
        os.chdir(paths.HOME)
    opts = options.parse(argv)
    environment.check()
    options.check_launch(opts)
    driver = Driver(opts)
    try:
        return driver.main()
    except Interrupted as i:
        driver.interrupted(i.signum, i.proc)
    finally:
        driver.release_unused_claim()
        if driver.build_log and os.path.exists(driver.build_log):
            os.unlink(driver.build_log)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
