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
from suite import driver  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
