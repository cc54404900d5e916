"""scripts/compare-osu-table.py on stand-ins for OSU, parabench and mpirun:
run by test_compare_osu.sh (python3 -m unittest). The stand-ins print and
write tables whose values follow from the size and the round, so every
figure of the summary (medians, ratios, the band, the sizes OSU is asked for)
is known here. OSU itself is not needed; docs/fidelity.md has the real run."""
import csv
import os
import re
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "compare-osu-table.py")
NP = 2
# parabench / OSU per round, for every operation the script compares (by the script's name: OSU's,
# less osu_ and _block), some inside the band, some outside.
RATIOS = {"allreduce": (1.00, 1.10, 0.96), "allgather": (1.02, 0.98, 1.00), "bw": (1.00, 1.10, 0.96),
          "latency": (1.20, 1.30, 1.25), "reduce_scatter": (0.97, 1.03, 1.08), "bcast": (1.01, 0.90, 1.04),
          "alltoall": (1.06, 0.99, 1.02), "bibw": (0.94, 1.02, 1.05)}
BANDWIDTH = ("bw", "bibw")


# The stand-ins' OSU value at parabench's buffer size: a latency in us, or MB/s for bw (exact
# at the 2 decimals OSU prints).
VALUE = """
def value(op, size):
    return 100 + size / 8 if op in ("bw", "bibw") else 1 + size / 100
"""
exec(VALUE)


FAKE = {
    "mpirun": """
        # mpirun -np N [flags] PROGRAM ARGS...: PROGRAM once, the launch flags dropped (and kept in
        # FAKE_STATE/launches, one line per launch).
        with open(os.path.join(os.environ["FAKE_STATE"], "launches"), "a") as f:
            f.write(" ".join(sys.argv[1:]) + "\\n")
        args = sys.argv[1:]
        while not os.path.isabs(args[0]):
            args = args[1:]
        os.execv(args[0], args)
    """,
    "osu": """
        # OSU's table for -m LO:HI, sizes doubling; collectives per rank (x NP for parabench's size).
        op = os.path.basename(sys.argv[0])
        lo, hi = (int(x) for x in sys.argv[sys.argv.index("-m") + 1].split(":"))
        per_rank = op in ("osu_allgather", "osu_alltoall")
        name = op[len("osu_"):].replace("_block", "")
        print("# OSU MPI stand-in\\n# Size    value")
        s = lo
        while s <= hi:
            zero = str(s) == os.environ.get("FAKE_OSU_ZERO")  # a size OSU printed as 0.00
            print(f"{s:<10}{0 if zero else value(name, s * NP if per_rank else s):.2f}")
            s *= 2
    """,
    "parabench": """
        # coll_sweep/p2p_sweep -b LO -e HI -f 2 --csv PATH (--coll OP | --mode MODE); round = calls so far.
        a = sys.argv
        op = a[a.index("--coll") + 1] if "--coll" in a else a[a.index("--mode") + 1]
        op = {"reducescatter": "reduce_scatter", "broadcast": "bcast"}.get(op, op)  # the script's names
        lo, hi, path = int(a[a.index("-b") + 1]), int(a[a.index("-e") + 1]), a[a.index("--csv") + 1]
        count = os.path.join(os.environ["FAKE_STATE"], op)
        with open(count, "a") as f:
            f.write("x")
        r = RATIOS[op][os.path.getsize(count) - 1]
        with open(path, "w") as f:
            f.write("# stand-in\\nbytes,time_us,bw_GBps\\n")
            s = lo
            while s <= hi:
                v = value(op, s)
                t, bw = (1.0, v * r / 1e3) if op in ("bw", "bibw") else (v * r, 1.0)
                f.write(f"{s},{t!r},{bw!r}\\n")
                s *= 2
            f.write("# complete\\n")
    """,
}


def write_exe(path, body):
    with open(path, "w") as f:
        f.write(f"#!{sys.executable}\nimport os, sys\nNP = {NP}\nRATIOS = {RATIOS!r}\n")
        f.write(VALUE)
        f.write(textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def load_script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("compare_osu_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class LaunchModes(unittest.TestCase):
    """A launch is fast when at least half of its sizes put it in the faster half of rounds."""

    def test_majority_of_sizes(self):
        # 3 rounds x 5 sizes; the faster half is 2 rounds. Sizes 1-2: rounds 1 and 2 fastest;
        # sizes 3-5: rounds 2 and 3. Round 1 is fast at 2 of 5 sizes (slow), round 2 at 5 of 5,
        # round 3 at 3 of 5 (fast).
        raw = []
        for size in range(1, 6):
            order = (1, 2, 3) if size <= 2 else (2, 3, 1)  # fastest first
            for rank, r in enumerate(order):
                raw.append((r, "allreduce", size, "time_us", "osu", 1.0 + rank))
        modes = load_script().launch_modes(raw)
        self.assertEqual(modes, {(1, "allreduce", "osu"): "slow", (2, "allreduce", "osu"): "fast",
                                 (3, "allreduce", "osu"): "fast"})


class Sizes(unittest.TestCase):
    """The sizes docs/fidelity.md says the comparison covers are the script's."""

    def test_doc_ranges(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("compare_osu_table", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        doc = " ".join(open(os.path.join(ROOT, "docs", "fidelity.md")).read().split())
        self.assertIn("power-of-two sizes (8 B to 1 MiB for collectives, to 4 MiB for point to point)", doc)
        for op, (_, cmd, _, _, span) in mod.OPS.items():
            want = (8, 4 << 20) if cmd[0] == "p2p_sweep" else (8, 1 << 20)
            self.assertEqual(span, want, f"{op}: {span}, docs/fidelity.md says {want}")


class CompareOSU(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        for d in ("bin", "osu/collective", "osu/pt2pt", "pb", "state"):
            os.makedirs(os.path.join(t, d))
        write_exe(os.path.join(t, "bin", "mpirun"), FAKE["mpirun"])
        for (exe, *_rest) in load_script().OPS.values():
            write_exe(os.path.join(t, "osu", exe), FAKE["osu"])
        for exe in ("coll_sweep", "p2p_sweep"):
            write_exe(os.path.join(t, "pb", exe), FAKE["parabench"])
        env = dict(os.environ, PATH=os.path.join(t, "bin") + os.pathsep + os.environ["PATH"],
                   FAKE_STATE=os.path.join(t, "state"))
        cls.out, cls.env = os.path.join(t, "out"), env
        p = subprocess.run([sys.executable, SCRIPT, "--osu", os.path.join(t, "osu"), "--parabench",
                            os.path.join(t, "pb"), "--rounds", "3", "--np", str(NP), "--bind", "none",
                            "--ops", ",".join(RATIOS), "--max", "64", "--out", cls.out],
                           capture_output=True, text=True, env=env, timeout=120)
        cls.proc = p
        if p.returncode != 0:
            raise AssertionError(f"compare-osu-table.py exit {p.returncode}:\n{p.stdout}{p.stderr}")
        with open(os.path.join(cls.out, "compare-osu.csv")) as f:
            cls.rows = list(csv.DictReader(l for l in f if not l.startswith("#")))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def expected(self):
        """(op, size) -> the summary row, computed from the stand-ins' values."""
        want = {}
        for op, rs in RATIOS.items():
            bw = op in BANDWIDTH
            for size in (8, 16, 32, 64):  # --min not given: each op's default smallest size, 8 B
                v = value(op, size)
                pb = sorted(v * r for r in rs)
                ratio = pb[1] / v
                best = (max(pb) if bw else min(pb)) / v
                # the faster two of three rounds: the two highest bandwidths, the two lowest times
                fast = (pb[1] + pb[2]) / 2 if bw else (pb[0] + pb[1]) / 2
                want[(op, size)] = {"metric": "bw_MBps" if bw else "time_us", "osu_median": f"{v:.4g}",
                                    "parabench_median": f"{pb[1]:.4g}", "ratio_median": f"{ratio:.3f}",
                                    "ratio_best": f"{best:.3f}", "ratio_min": f"{min(rs):.3f}",
                                    "ratio_max": f"{max(rs):.3f}", "rounds": "3",
                                    "in_band": str(int(0.95 <= ratio <= 1.05)), "osu_fast_median": f"{v:.4g}",
                                    "parabench_fast_median": f"{fast:.4g}", "ratio_fast": f"{fast / v:.3f}"}
        return want

    def test_default_out(self):
        # Without --out: results/compare-osu-DATE-TIME-HOST under the current directory.
        t = self.tmp.name
        with tempfile.TemporaryDirectory() as cwd:
            os.makedirs(os.path.join(cwd, "state"))  # the stand-ins' round counters, fresh
            p = subprocess.run([sys.executable, SCRIPT, "--osu", os.path.join(t, "osu"), "--parabench",
                                os.path.join(t, "pb"), "--rounds", "1", "--np", str(NP), "--bind", "none",
                                "--ops", "latency", "--max", "8"],
                               capture_output=True, text=True, cwd=cwd, timeout=120,
                               env=dict(self.env, FAKE_STATE=os.path.join(cwd, "state")))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            made = os.listdir(os.path.join(cwd, "results"))
            self.assertEqual(len(made), 1, made)
            self.assertRegex(made[0], r"^compare-osu-\d{8}-\d{6}-" + re.escape(socket.gethostname()) + "$")
            self.assertTrue(os.path.exists(os.path.join(cwd, "results", made[0], "compare-osu.csv")))

    def test_size_osu_printed_as_zero(self):
        # No ratio to a zero: that size has no row, the others do, and the script finishes.
        t = self.tmp.name
        with tempfile.TemporaryDirectory() as cwd:
            os.makedirs(os.path.join(cwd, "state"))
            out = os.path.join(cwd, "out")
            p = subprocess.run([sys.executable, SCRIPT, "--osu", os.path.join(t, "osu"), "--parabench",
                                os.path.join(t, "pb"), "--rounds", "1", "--np", str(NP), "--bind", "none",
                                "--ops", "bw", "--max", "64", "--out", out],
                               capture_output=True, text=True, timeout=120,
                               env=dict(self.env, FAKE_STATE=os.path.join(cwd, "state"), FAKE_OSU_ZERO="16"))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(out, "compare-osu.csv")) as f:
                sizes = [int(r["bytes"]) for r in csv.DictReader(l for l in f if not l.startswith("#"))]
            self.assertEqual(sizes, [8, 32, 64])

    def test_summary_rows(self):
        want = self.expected()
        got = {(r["op"], int(r["bytes"])): {k: v for k, v in r.items() if k not in ("op", "bytes")} for r in self.rows}
        self.assertEqual(sorted(got), sorted(want))
        for key in want:
            self.assertEqual(got[key], want[key], key)

    def test_printed_table(self):
        lines = self.proc.stdout.splitlines()
        table = [l for l in lines if l.split() and l.split()[0] in RATIOS]
        self.assertEqual(len(table), len(self.rows))
        for line, r in zip(table, self.rows):
            f = line.split()
            self.assertEqual(f[:9], [r["op"], r["bytes"], r["metric"], r["osu_median"], r["parabench_median"],
                                     r["ratio_median"], r["ratio_best"], r["ratio_fast"],
                                     f"{r['ratio_min']}-{r['ratio_max']}"])
            self.assertEqual("outside 0.95-1.05" in line, r["in_band"] == "0", line)
        inside = sum(r["in_band"] == "1" for r in self.rows)
        self.assertIn(f"{inside} of {len(self.rows)} sizes within 0.95-1.05", self.proc.stdout)

    def test_launches(self):
        """Without --fixed-malloc the tools run with the allocator as it is; with it, every launch of
        both tools carries the fixed thresholds."""
        with open(os.path.join(self.tmp.name, "state", "launches")) as f:
            plain = f.read().splitlines()
        self.assertEqual(len(plain), 3 * len(RATIOS) * 2)  # rounds x ops x tools
        self.assertFalse([l for l in plain if "MALLOC_" in l])
        t = self.tmp.name
        state = os.path.join(t, "state-fixed")
        os.makedirs(state)
        env = dict(os.environ, PATH=os.path.join(t, "bin") + os.pathsep + os.environ["PATH"], FAKE_STATE=state)
        p = subprocess.run([sys.executable, SCRIPT, "--osu", os.path.join(t, "osu"), "--parabench", os.path.join(t, "pb"),
                            "--rounds", "1", "--np", str(NP), "--bind", "none", "--ops", "allreduce,bw", "--max", "16",
                            "--fixed-malloc", "--out", os.path.join(t, "out-fixed")],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(state, "launches")) as f:
            fixed = f.read().splitlines()
        self.assertEqual(len(fixed), 4)  # 1 round x 2 ops x 2 tools
        for l in fixed:
            self.assertIn("-x MALLOC_MMAP_THRESHOLD_=67108864 -x MALLOC_TRIM_THRESHOLD_=134217728", l)
        with open(os.path.join(t, "out-fixed", "compare-osu.csv")) as f:
            self.assertIn("--fixed-malloc", f.readline())

    def test_sizes_per_op(self):
        """Each operation's rows are its own sizes: by default all-reduce stops at OSU's 1 MiB for
        collectives and bw goes on to its 4 MiB for point to point."""
        t = self.tmp.name
        state = os.path.join(t, "state-sizes")
        os.makedirs(state)
        env = dict(os.environ, PATH=os.path.join(t, "bin") + os.pathsep + os.environ["PATH"], FAKE_STATE=state)
        out = os.path.join(t, "out-sizes")
        p = subprocess.run([sys.executable, SCRIPT, "--osu", os.path.join(t, "osu"), "--parabench", os.path.join(t, "pb"),
                            "--rounds", "1", "--np", str(NP), "--bind", "none", "--ops", "allreduce,bw",
                            "--out", out], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "compare-osu.csv")) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
        for op, top in (("allreduce", 1 << 20), ("bw", 4 << 20)):
            got = [int(r["bytes"]) for r in rows if r["op"] == op]
            self.assertEqual(got, [8 << k for k in range((top // 8).bit_length())], op)

    def test_raw_rows(self):
        with open(os.path.join(self.out, "compare-osu-raw.csv")) as f:
            raw = list(csv.DictReader(l for l in f if not l.startswith("#")))
        self.assertEqual(len(raw), 3 * len(RATIOS) * 4 * 2)  # rounds x ops x sizes x tools
        for r in raw:
            v = value(r["op"], int(r["bytes"]))
            if r["tool"] == "osu":
                self.assertAlmostEqual(float(r["value"]), v, places=2)
            else:
                self.assertAlmostEqual(float(r["value"]), v * RATIOS[r["op"]][int(r["round"]) - 1], places=6)
                # a launch is slow when it is outside the faster two of three rounds: the highest
                # time (latency 1.30, allreduce 1.10) or the lowest bandwidth (bw 0.96)
                rs = RATIOS[r["op"]]
                slow = rs.index(min(rs) if r["op"] in BANDWIDTH else max(rs)) + 1
                self.assertEqual(r["mode"], "slow" if int(r["round"]) == slow else "fast", r)


if __name__ == "__main__":
    unittest.main()
