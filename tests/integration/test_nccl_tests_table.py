"""scripts/nccl_tests_table.py (gpu-check.sh --node's comparison with nccl-tests) on recorded
nccl-tests outputs, and gpu-check-judge.py's nccl-tests and vs-nccl-tests commands around it:
run by test_nccl_tests_table.sh (python3 -m unittest).

The outputs in tests/nccl_tests_outputs/ are fabricated in nccl-tests' exact layout (its
util.cu: the header, the rank lines, the 13 columns with their widths, N/A for sendrecv's
in-place #wrong, the footer) for 8 H100s at -b 8 -e 512M -f 4; their figures are made up
(busbw = algbw x 2(n-1)/n for all_reduce, x 1 for sendrecv) and stand for no measurement.
Every expected value below is recomputed from those files or from the rows the test writes."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import nccl_tests_table as nt  # noqa: E402

OUTPUTS = os.path.join(ROOT, "tests", "nccl_tests_outputs")
ALLREDUCE = os.path.join(OUTPUTS, "all_reduce_perf-8xH100.txt")
SENDRECV = os.path.join(OUTPUTS, "sendrecv_perf-8xH100.txt")
JUDGE = os.path.join(ROOT, "scripts", "gpu-check-judge.py")
PB_HEADER = "collective,bytes,nranks,time_us,algbw_GBps,busbw_GBps,wrong\n"


def raw_rows(path):
    """The fixture's data lines split by whitespace, read independently of the parser."""
    return [line.split() for line in open(path) if line.strip() and not line.startswith("#")]


def judge(*args, env=None):
    p = subprocess.run([sys.executable, JUDGE, *args], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


class Parse(unittest.TestCase):
    def test_every_row_and_column(self):
        rows, bad, facts = nt.read(ALLREDUCE)
        raw = raw_rows(ALLREDUCE)
        self.assertEqual(bad, [])
        self.assertEqual(len(rows), len(raw))
        for r, f in zip(rows, raw):
            self.assertEqual(r["bytes"], int(f[0]))
            self.assertEqual(r["count"], int(f[1]))
            self.assertEqual((r["type"], r["redop"]), (f[2], f[3]))
            self.assertEqual((r["time_us"], r["algbw"], r["busbw"], r["wrong"]),
                             (float(f[5]), float(f[6]), float(f[7]), int(f[8])))
            self.assertEqual((r["ip_time_us"], r["ip_algbw"], r["ip_busbw"], r["ip_wrong"]),
                             (float(f[9]), float(f[10]), float(f[11]), int(f[12])))
        self.assertEqual(facts["test"], "all_reduce_perf")
        self.assertEqual(facts["ranks"], 8)
        self.assertEqual(facts["version"], "nccl-tests 2.19.6, NCCL 2.28.3")
        avg = re.search(r"Avg bus bandwidth\s*:\s*(\S+)", open(ALLREDUCE).read()).group(1)
        self.assertEqual(facts["avg_busbw"], avg)

    def test_sendrecv_in_place_not_checked(self):
        rows, bad, _ = nt.read(SENDRECV)
        self.assertEqual(bad, [])
        self.assertTrue(rows and all(r["ip_wrong"] is None and r["wrong"] == 0 for r in rows))

    def test_headline(self):
        rows, _, _ = nt.read(ALLREDUCE)
        h = nt.headline(ALLREDUCE)
        self.assertFalse(h.startswith("FAIL"), h)
        self.assertIn(f"{len(rows)} sizes, 8 ranks, busbw {rows[-1]['busbw']:g} GB/s at {rows[-1]['bytes']} B", h)
        self.assertTrue(h.endswith("; 0 wrong"), h)

    def test_nccl_versions(self):
        self.assertEqual(nt.nccl_version("22803"), "2.28.3")
        self.assertEqual(nt.nccl_version("21913"), "2.19.13")
        self.assertEqual(nt.nccl_version("2708"), "2.7.8")


class Malformed(unittest.TestCase):
    """What a node's output may really hold: NCCL's own lines between the rows, a run that died
    before its table, a row cut short, figures that are not numbers, a size printed twice."""

    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def lines(self):
        return open(ALLREDUCE).read().splitlines()

    def test_nccl_messages_between_rows_are_not_rows(self):
        lines = self.lines()
        k = next(i for i, l in enumerate(lines) if l.strip().startswith("2048 "))
        lines[k:k] = ["gpu-node-1:41230:41230 [0] NCCL INFO comm 0x55d0 rank 0 nranks 8 - Init COMPLETE",
                      "10-0-0-7:41231:41299 [1] NCCL WARN Cuda failure 'out of memory'", ""]
        rows, bad, _ = nt.parse("\n".join(lines))
        self.assertEqual(bad, [])
        self.assertEqual(len(rows), len(raw_rows(ALLREDUCE)))

    def test_cut_row_non_numbers_and_repeats_are_malformed(self):
        lines = self.lines()
        data = [i for i, l in enumerate(lines) if l.strip() and not l.startswith("#")]
        cut = lines[data[3]].split()[:7]
        lines[data[3]] = "  ".join(cut)                                       # cut short
        lines[data[5]] = lines[data[5]].replace(" 0.63 ", " nan ", 1)         # not a finite number
        lines[data[6]] = re.sub(r"\s0\s*$", " x", lines[data[6]])            # #wrong not a count
        lines.insert(data[9] + 1, lines[data[9]])                             # a size again
        rows, bad, _ = nt.parse("\n".join(lines))
        self.assertEqual(len(bad), 4, bad)
        self.assertEqual(len(rows), len(data) - 3)
        self.assertNotIn(int(cut[0]), [r["bytes"] for r in rows])
        h = nt.headline(self.write("\n".join(lines)))
        self.assertIn("4 malformed lines left out", h)
        self.assertFalse(h.startswith("FAIL"), h)

    def test_no_table_fails(self):
        died = "\n".join(self.lines()[:13] + ["gpu-node-1: Test NCCL failure common.cu:1234 'unhandled cuda error'"])
        self.assertTrue(nt.headline(self.write(died)).startswith("FAIL: no result row"))
        self.assertTrue(nt.headline(self.write("")).startswith("FAIL: no result row"))
        only_bad = "\n".join(["8 2 float sum -1 11.5 0.00"])
        h = nt.headline(self.write(only_bad))
        self.assertTrue(h.startswith("FAIL: no result row") and "1 malformed (line 1" in h, h)

    def test_wrong_values_fail(self):
        lines = self.lines()
        k = max(i for i, l in enumerate(lines) if l.strip() and not l.startswith("#"))
        lines[k] = re.sub(r"\s0(\s+\S+\s+\S+\s+\S+\s+0)$", r"   12\1", lines[k])   # out of place: 12 wrong
        self.assertEqual(nt.parse("\n".join(lines))[0][-1]["wrong"], 12)
        self.assertIn("12 wrong values", nt.headline(self.write("\n".join(lines))))
        bounds = open(ALLREDUCE).read().replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED")
        self.assertTrue(nt.headline(self.write(bounds)).startswith("FAIL"))


class Compare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))

    def parabench(self, scale, collectives=("allreduce", "sendrecv"), ranks=8, drop=()):
        """A coll_sweep CSV at every size of the outputs, busbw = nccl-tests' x scale (time / scale)."""
        path = os.path.join(self.dir, f"pb-{scale}-{ranks}.csv")
        with open(path, "w") as f:
            f.write("# command: fabricated\n" + PB_HEADER)
            for coll, src in (("allreduce", ALLREDUCE), ("sendrecv", SENDRECV)):
                if coll not in collectives:
                    continue
                for r in nt.read(src)[0]:
                    if r["bytes"] in drop:
                        continue
                    bw = r["busbw"] * scale if ranks > 1 else 0.0
                    f.write(f"{coll},{r['bytes']},{ranks},{r['time_us'] / scale},{r['algbw'] * scale},{bw},0\n")
        return path

    def table_rows(self, text, collective):
        block = text.split(f"## {collective}:")[1].split("\n## ")[0]
        return [l.split() for l in block.splitlines()[2:] if l.strip() and not l.startswith("#")]

    def test_table_per_size(self):
        pb, out = self.parabench(0.95), os.path.join(self.dir, "vs.txt")
        head, findings = nt.compare(pb, [("allreduce", ALLREDUCE), ("sendrecv", SENDRECV)], out)
        text = open(out).read()
        self.assertEqual(findings, [])
        for coll, src in (("allreduce", ALLREDUCE), ("sendrecv", SENDRECV)):
            want = nt.read(src)[0]
            got = self.table_rows(text, coll)
            self.assertEqual(len(got), len(want))
            for g, w in zip(got, want):
                self.assertEqual(g[0], nt.human(w["bytes"]))
                self.assertAlmostEqual(float(g[1]), w["time_us"], places=2)
                self.assertAlmostEqual(float(g[3]), w["busbw"], places=2)
                self.assertAlmostEqual(float(g[4]), w["busbw"] * 0.95, places=2)
                if w["busbw"] > 0:
                    self.assertEqual(g[5], "0.950")
                else:   # busbw printed as 0.00 at the smallest sizes: the ratio by time
                    self.assertEqual(g[5], "0.950t")
        self.assertIn("allreduce 0.95 of nccl-tests at 512M", head)
        self.assertIn("sendrecv 0.95 of nccl-tests at 512M", head)

    def test_off_by_more_than_ten_percent_is_a_finding(self):
        out = os.path.join(self.dir, "vs.txt")
        _, findings = nt.compare(self.parabench(0.8), [("allreduce", ALLREDUCE), ("sendrecv", SENDRECV)], out)
        self.assertEqual(findings, ["allreduce", "sendrecv"])
        _, findings = nt.compare(self.parabench(1.2), [("allreduce", ALLREDUCE)], out)
        self.assertEqual(findings, ["allreduce"])
        _, findings = nt.compare(self.parabench(1.09), [("allreduce", ALLREDUCE)], out)
        self.assertEqual(findings, [])

    def test_one_rank_by_time(self):
        out = os.path.join(self.dir, "vs.txt")
        one = open(ALLREDUCE).read()
        rows = nt.read(ALLREDUCE)[0]
        for r in rows:   # one rank: nccl-tests' busbw is 0 at every size
            one = re.sub(rf"(^\s*{r['bytes']}\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+)\S+", r"\g<1>0.00", one, flags=re.M)
        p = os.path.join(self.dir, "one.txt")
        open(p, "w").write(one)
        head, findings = nt.compare(self.parabench(0.5, ("allreduce",), ranks=1), [("allreduce", p)], out)
        self.assertIn("allreduce 0.50 by time of nccl-tests at 512M", head)
        self.assertEqual(findings, ["allreduce"])
        self.assertTrue(all(g[5] == "0.500t" for g in self.table_rows(open(out).read(), "allreduce")))

    def test_sizes_on_one_side_only(self):
        out = os.path.join(self.dir, "vs.txt")
        big = nt.read(ALLREDUCE)[0][-1]["bytes"]
        head, _ = nt.compare(self.parabench(1.0, drop=(big,)), [("allreduce", ALLREDUCE)], out)
        got = self.table_rows(open(out).read(), "allreduce")
        self.assertEqual(got[-1][2], "-")   # nccl-tests' 512M, no parabench row
        self.assertIn("at 128M", head)      # the largest size both measured

    def test_refusals(self):
        out = os.path.join(self.dir, "vs.txt")
        with self.assertRaisesRegex(ValueError, "no sendrecv row"):
            nt.compare(self.parabench(1.0, ("allreduce",)), [("sendrecv", SENDRECV)], out)
        empty = os.path.join(self.dir, "empty.txt")
        open(empty, "w").write("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n")
        with self.assertRaisesRegex(ValueError, "no result row"):
            nt.compare(self.parabench(1.0), [("allreduce", empty)], out)


class Judge(unittest.TestCase):
    """The commands gpu-check.sh runs, end to end."""

    def test_nccl_tests_command(self):
        rc, out, _ = judge("nccl-tests", ALLREDUCE)
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("all_reduce_perf: 14 sizes, 8 ranks"), out)
        self.assertEqual(judge("nccl-tests", "/nonexistent.txt")[0], 3)

    def test_vs_command(self):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        c = Compare()
        c.dir = d
        pb, table = c.parabench(0.8), os.path.join(d, "vs.txt")
        rc, out, err = judge("vs-nccl-tests", pb, table, f"allreduce={ALLREDUCE}", f"sendrecv={SENDRECV}")
        self.assertEqual(rc, 0, err)
        last = out.strip().splitlines()[-1]
        self.assertTrue(last.startswith("FINDING: parabench vs nccl-tests: allreduce 0.80"), last)
        self.assertIn("## sendrecv:", out)             # the table printed, above the headline
        self.assertEqual(open(table).read(), out[:len(open(table).read())])
        rc, out, _ = judge("vs-nccl-tests", pb, table, f"allreduce={ALLREDUCE}", env={"PB_REHEARSE": "1"})
        self.assertTrue(out.strip().splitlines()[-1].startswith("REHEARSED: "))
        self.assertEqual(judge("vs-nccl-tests", pb, table, "allreduce")[0], 2)
        self.assertEqual(judge("vs-nccl-tests", pb, table, "allreduce=/nonexistent.txt")[0], 3)


if __name__ == "__main__":
    unittest.main()
