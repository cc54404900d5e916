"""run_all.sh's results directory (suite/driver.py): results/<date>-<time>-<host>
by default, and never one that exists already, however many runs started within
the same second. Run by test_suite_driver.sh (python3 -m unittest)."""
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from suite import driver, machine  # noqa: E402


class ResultsDir(unittest.TestCase):
    def setUp(self):
        self.cwd = os.getcwd()
        self.tmp = tempfile.TemporaryDirectory()
        os.chdir(self.tmp.name)
        os.mkdir("results")

    def tearDown(self):
        os.chdir(self.cwd)
        self.tmp.cleanup()

    def pick(self):
        """The directory a run would take at 12:00:00 on host node7.example."""
        d = driver.Driver(types.SimpleNamespace(out=None, quiet=True))
        with mock.patch.object(driver.time, "strftime", lambda fmt: "results/20261205-120000-"), \
                mock.patch.object(driver.socket, "gethostname", lambda: "node7.example"):
            return d.results_dir()

    def test_first_run_of_the_second(self):
        self.assertEqual(self.pick(), "results/20261205-120000-node7")

    def test_later_runs_of_the_same_second_are_numbered(self):
        os.mkdir("results/20261205-120000-node7")
        self.assertEqual(self.pick(), "results/20261205-120000-node7-1")
        os.mkdir("results/20261205-120000-node7-1")
        os.symlink("nowhere", "results/20261205-120000-node7-2")  # a dangling link is taken too
        self.assertEqual(self.pick(), "results/20261205-120000-node7-3")

    def test_given_out_is_kept(self):
        d = driver.Driver(types.SimpleNamespace(out="mine", quiet=True))
        self.assertEqual(d.results_dir(), "mine")


class Progress(unittest.TestCase):
    """Each step's progress line: no estimate before a step is done, then the time left at the
    rate of the step weights done so far."""

    def test_time_left_by_weights_done(self):
        d = driver.Driver(types.SimpleNamespace(out=None, quiet=True, profile="quick"))
        d.machine = types.SimpleNamespace(nranks=2, device="cpu", launcher="mpirun", bind_applied="none", bind_note="")
        d.plan = [types.SimpleNamespace(name=n, weight=w, reads_meta=False) for n, w in (("a", 1), ("b", 3), ("c", 2))]
        d.say, d.start, lines = (lambda line: None), 0.0, []
        d.run_step = lambda k, step: lines.append(d.progress(k, step))
        with mock.patch.object(driver.time, "monotonic", lambda: 60.0):
            d.run_steps()
        self.assertEqual(lines, ["[1/3] a (1:00 elapsed)",
                                 "[2/3] b (1:00 elapsed, about 5:00 left)",    # 1 of 6 done in 60 s: 5 more
                                 "[3/3] c (1:00 elapsed, about 0:30 left)"])   # 4 of 6


class Launch(unittest.TestCase):
    """mpirun's line outside Slurm: --oversubscribe only with more ranks than cores (a rank per core
    is not oversubscribed, and Open MPI refuses more ranks than slots without it)."""

    def launch(self, np, ncores):
        o = types.SimpleNamespace(np=np, hostfile=None, ranks_per_node=0, bind="none", backend="mpi")
        with mock.patch.object(machine, "cores", lambda: ncores), mock.patch.dict(os.environ, {}, clear=False):
            for k in ("SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_JOBID"):
                os.environ.pop(k, None)
            return machine.detect(o, "/nonexistent", "/nonexistent/bin")

    def test_oversubscribed_only_past_the_cores(self):
        for np, ncores, over in ((4, 4, False), (3, 4, False), (5, 4, True)):
            m = self.launch(np, ncores)
            self.assertEqual(("--oversubscribe" in m.launch, m.oversubscribed), (over, over), (np, ncores, m.launch))
            self.assertEqual(m.launch[:3], ["mpirun", "-np", str(np)])


if __name__ == "__main__":
    unittest.main()
