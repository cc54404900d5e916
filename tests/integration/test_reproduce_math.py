"""scripts/reproduce.py's arithmetic, and its TP rows on a fabricated run: run by
test_reproduce_math.sh (python3 -m unittest)."""
import csv
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import reproduce as r  # noqa: E402


class Arithmetic(unittest.TestCase):
    def test_grad_bytes_for_ratio(self):
        # 2 ranks (factor 1), 10 GB/s, 10 ms of compute, 11.2%: 11.2 MB
        s = r.grad_bytes_for_ratio(0.112, 0.01, lambda x: 10e9, 2)
        self.assertAlmostEqual(s / 11.2e6, 1, places=3)
        # 8 ranks move 2*7/8 of S: S is smaller by 7/4
        s8 = r.grad_bytes_for_ratio(0.112, 0.01, lambda x: 10e9, 8)
        self.assertAlmostEqual(s8 * 1.75 / 11.2e6, 1, places=3)

    def test_layer_flops(self):
        # 3 x (2bs * 12h^2 + 4bs^2h): b=2, s=128, h=256 by hand
        self.assertEqual(r.layer_flops(2, 128, 256), 3 * (2 * 2 * 128 * 12 * 256 ** 2 + 4 * 2 * 128 ** 2 * 256))
        self.assertEqual(r.layer_flops(4, 64, 512), 4 * r.layer_flops(1, 64, 512))  # linear in b

    def test_micro_batches_for_efficiency(self):
        self.assertEqual(r.micro_batches_for_efficiency(8, 32 / 39), 32)
        self.assertEqual(r.micro_batches_for_efficiency(2, 32 / 39), 5)
        self.assertEqual(r.micro_batches_for_efficiency(4, 32 / 39), 14)
        self.assertEqual(r.micro_batches_for_efficiency(1, 32 / 39), 1)
        self.assertEqual(r.micro_batches_for_efficiency(1, 1.0), 1)  # one stage: no bubble to size, whatever the target

    def test_verdict(self):
        self.assertEqual(r.verdict(0.112 * 1.14, 0.112), "reproduced")
        self.assertEqual(r.verdict(0.112 * 0.86, 0.112), "reproduced")
        self.assertEqual(r.verdict(0.112 * 1.16, 0.112), "differs")
        self.assertEqual(r.verdict(None, 0.112), "differs")
        self.assertEqual(r.verdict(math.nan, 0.112), "differs")

    def test_usage(self):
        # a wrong word or count of arguments: usage, exit 2; a results folder that is not one: exit 3
        for argv in (["reproduce.py"], ["reproduce.py", "setup", "/tmp"], ["reproduce.py", "write", "/tmp"],
                     ["reproduce.py", "scan", "/tmp"], ["reproduce.py", "scan-setup", "/tmp", "2"]):
            self.assertEqual(r.main(argv), 2, argv)
        self.assertEqual(r.main(["reproduce.py", "scan-setup", "/nonexistent/run"]), 3)
        # a folder without what the step needs (a file missing, a rank count that is not one): exit 3
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(r.main(["reproduce.py", "write", d, "/nonexistent/bin"]), 3)
            self.assertEqual(r.main(["reproduce.py", "setup", d, "two"]), 3)

    def test_bucket_size(self):
        # a quarter of the gradient in whole MiB, at least 1 (--bucket-mb 0 is refused)
        self.assertEqual([r.bucket_mb_for(b) for b in (1000, 5 << 20, 16 << 20, 100 << 20)], [1, 1, 4, 25])

    def test_bucketing_verdict(self):
        # judged only with a core per rank to spare for the all-reduce's progress
        self.assertEqual(r.bucketing_verdict(0.3, 4, 2), ("reproduced", ""))
        self.assertEqual(r.bucketing_verdict(-0.2, 4, 2)[0], "differs")
        self.assertEqual(r.bucketing_verdict(None, 16, 8)[0], "differs")
        v, why = r.bucketing_verdict(-1.07, 2, 2)
        self.assertEqual(v, "not judged")
        self.assertIn("2 cores for 2 ranks", why)
        self.assertEqual(r.bucketing_verdict(0.5, 3, 2)[0], "not judged")
        self.assertEqual(r.bucketing_verdict(0.5, None, None)[0], "not judged")

    def test_cores_and_ranks_from_the_dp_run(self):
        # the DP run's own metadata: meta.json is written only when the whole run ends
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(r.node_cores_and_ranks(d), (None, None))
            with open(os.path.join(d, "repro_dp.json"), "w") as f:
                f.write('{"meta": {"topology": {"cores": 8}, "hosts": [{"name": "a", "ranks": [0, 1, 2]},'
                        ' {"name": "b", "ranks": [3]}]}}')
            self.assertEqual(r.node_cores_and_ranks(d), (8, 3))

    def test_busy_machine_not_judged(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "repro_dp.csv")
            with open(path, "w") as f:
                f.write("# note: load: other processes used 23% of the busiest node's CPU time during the run, "
                        "steal 1% (/proc/stat against the ranks' own CPU time)\ngrad_bytes\n1\n")
            self.assertEqual(r.load_of(path), (0.23, 0.01))
            self.assertIsNone(r.load_of(os.path.join(d, "none.csv")))
        self.assertIn("machine busy: other processes used 23%", r.busy_reason((0.23, 0.01)))
        self.assertIn("the hypervisor 6%", r.busy_reason((0.0, 0.06)))
        self.assertIn("judged only under 10% and 5%", r.busy_reason((0.0, 0.06)))  # docs/reproduce.md's bars
        self.assertIsNone(r.busy_reason((0.10, 0.05)))  # at the bars: quiet enough
        self.assertIsNone(r.busy_reason(None))  # not known: judged as before

    def test_tp_fraction_and_largest_t(self):
        f = lambda t: r.tp_comm_fraction(t, 1, 1, 128, 256, 4, 0.0, 1e9, 1e-3)  # noqa: E731
        self.assertEqual(f(1), 0.0)
        # t=2: 8*128*256/2*4 B at 1 GB/s = 0.524 ms over 0.5 ms of compute
        self.assertAlmostEqual(f(2), 0.524288 / 0.5, places=6)
        self.assertEqual(r.largest_t_under(0.2, lambda t: 0.05 * t), 2)
        self.assertEqual(r.largest_t_under(0.2, lambda t: 1.0), 1)

    def test_crossing_and_interp(self):
        self.assertAlmostEqual(r.crossing([(0.1, 0.1), (0.3, 0.3)], 0.2), 0.2)
        self.assertIsNone(r.crossing([(0.1, 0.05), (0.3, 0.1)], 0.2))
        self.assertAlmostEqual(r.interp_log([(1, 1.0), (100, 3.0)], 10), 2.0)
        self.assertEqual(r.interp_log([(1, 1.0), (100, 3.0)], 1000), 3.0)
        self.assertAlmostEqual(r.interp_log([(10, 1.0), (1000, 3.0)], 100), 2.0)  # log x0 != 0: the span is a difference
        # at the first size itself: its y, even when a sweep ran that size twice (no 0-wide span)
        self.assertEqual(r.interp_log([(8, 2.0), (8, 2.5), (64, 5.0)], 8), 2.0)
        # a size of 0 bytes, or one that measured no bandwidth (a failed size), is no point of the curve
        pts = [(0, 9.0), (1, 1.0), (100, 3.0), (1000, 0.0)]
        self.assertEqual((r.interp_log(pts, 0.5), r.interp_log(pts, 1000)), (1.0, 3.0))


def write_csv(path, header, body):
    with open(path, "w", newline="") as f:
        f.write("# fabricated\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)


class TPRows(unittest.TestCase):
    """tp_rows on a fabricated repro_tp.csv and p2p_sweep.csv; every expected value is computed
    here from the fixture, not read from reproduce.py."""
    T, B, S, H, LAYERS = 4, 2, 128, 256, 2
    # (mode, bytes, bw_GBps): unidirectional bw below bibw, so taking one for the other shows
    P2P = [("latency", 8, 0.01), ("bw", 1048576, 3.25), ("bw", 4194304, 3.5), ("bibw", 1048576, 5.0),
           ("bibw", 4194304, 6.25), ("bibw", 16777216, 6.0)]

    def tp_rows(self, dtype, comm_bytes):
        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "repro_tp.csv"),
                      ["tp", "mode", "layers", "batch", "seq", "hidden", "dtype", "compute_us", "comm_bytes_per_rank"],
                      [[self.T, "allreduce", self.LAYERS, self.B, self.S, self.H, dtype, 100.0, comm_bytes]])
            write_csv(os.path.join(d, "p2p_sweep.csv"), ["mode", "bytes", "time_us", "bw_GBps"],
                      [[m, n, n / (bw * 1e3), bw] for m, n, bw in self.P2P])
            return {q["figure"]: q for q in r.tp_rows(d, {"nranks": self.T})}

    def expected_tp_bytes(self, esize):
        # Megatron: per layer 2 all-reduces forward and 2 backward of the b*s*h activations; a ring
        # all-reduce sends 2(t-1)/t of its buffer per rank.
        return 4 * 2 * (self.T - 1) / self.T * self.B * self.S * self.H * esize

    def test_tp_bytes_per_dtype(self):
        # the names tp_layer writes (pb_dtype_name), and the aliases its options accept
        for dtype, esize in (("float", 4), ("half", 2), ("bfloat16", 2), ("fp32", 4), ("fp16", 2), ("bf16", 2)):
            want = self.expected_tp_bytes(esize)
            got = self.tp_rows(dtype, int(want))["TP bytes per rank per layer, 8bsh(t-1)/t"]
            self.assertAlmostEqual(float(got["document_value"]) / want, 1, places=5, msg=dtype)
            self.assertAlmostEqual(float(got["formula_value"]) / want, 1, places=5, msg=dtype)
            self.assertEqual(got["verdict"], "reproduced", dtype)
        far = self.tp_rows("half", int(self.expected_tp_bytes(2) * 1.3))["TP bytes per rank per layer, 8bsh(t-1)/t"]
        self.assertEqual(far["verdict"], "differs")

    def test_unknown_dtype(self):
        with self.assertRaisesRegex(ValueError, "dtype 'fp8'"):
            self.tp_rows("fp8", 1)

    def test_5gb_at_bibw(self):
        bibw = max(bw for m, _, bw in self.P2P if m == "bibw")  # GB/s, both directions
        want_ms = 5e9 / (bibw * 1e9) * 1e3
        got = self.tp_rows("float", 1)["TP: 5 GB of activations"]
        self.assertAlmostEqual(float(got["measured_value"]) / want_ms, 1, places=5)
        self.assertAlmostEqual(float(got["formula_value"]), 5e9 / 600e9 * 1e3, places=5)

    def test_largest_t_note(self):
        # cluster.txt's intra link and the unsharded layer time: the note's figures and the largest t
        alpha_us, bw_GBps, unsharded_us = 2.5, 12.0, 800.0
        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "repro_tp.csv"),
                      ["tp", "mode", "layers", "batch", "seq", "hidden", "dtype", "compute_us", "unsharded_us",
                       "comm_bytes_per_rank", "comm_fraction"],
                      [[self.T, "allreduce", self.LAYERS, self.B, self.S, self.H, "float", 250.0, unsharded_us, 1,
                        0.125]])
            write_csv(os.path.join(d, "p2p_sweep.csv"), ["mode", "bytes", "time_us", "bw_GBps"],
                      [[m, n, n / (bw * 1e3), bw] for m, n, bw in self.P2P])
            with open(os.path.join(d, "cluster.txt"), "w") as f:
                f.write("name = fabricated\nintra_alpha_us = %g\nintra_bw_GBps = %g\n" % (alpha_us, bw_GBps))
            got = {q["figure"]: q for q in r.tp_rows(d, {"nranks": self.T})}["TP: largest t with comm under 20% of compute"]

        def frac(t):  # 4 ring all-reduces per layer of b*s*h floats, over the unsharded layer / t
            comm = 8 * (t - 1) * alpha_us * 1e-6 + 8 * self.B * self.S * self.H * (t - 1) / t * 4 / (bw_GBps * 1e9)
            return comm / (unsharded_us * 1e-6 / t) if t > 1 else 0.0
        want_t = max(t for t in (1, 2, 4, 8, 16, 32, 64) if frac(t) < 0.2)
        self.assertEqual(float(got["measured_value"]), want_t)
        self.assertIn("alpha %.2f us, B %.2f GB/s" % (alpha_us, bw_GBps), got["note"])
        self.assertIn("unsharded layer %.0f us / t" % unsharded_us, got["note"])
        self.assertIn("comm_fraction at t=%d: 0.125 (model %.3f)" % (self.T, frac(self.T)), got["note"])


    def test_largest_t_without_unsharded_time(self):
        # a row without unsharded_us: the unsharded layer is compute_us x t (250 us x 4)
        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "repro_tp.csv"),
                      ["tp", "mode", "layers", "batch", "seq", "hidden", "dtype", "compute_us", "comm_bytes_per_rank",
                       "comm_fraction"],
                      [[self.T, "allreduce", self.LAYERS, self.B, self.S, self.H, "float", 250.0, 1, 0.125]])
            write_csv(os.path.join(d, "p2p_sweep.csv"), ["mode", "bytes", "time_us", "bw_GBps"],
                      [[m, n, n / (bw * 1e3), bw] for m, n, bw in self.P2P])
            with open(os.path.join(d, "cluster.txt"), "w") as f:
                f.write("name = fabricated\nintra_alpha_us = 2.5\nintra_bw_GBps = 12\n")
            got = {q["figure"]: q for q in r.tp_rows(d, {"nranks": self.T})}["TP: largest t with comm under 20% of compute"]
        self.assertIn("unsharded layer 1000 us / t", got["note"])

PLAN_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", os.environ.get("BUILD", "build"), "bin")


class PPRows(unittest.TestCase):
    """pp_rows on a fabricated repro_pp.csv: the p=8 m=32 row simulated from this run's stage times."""

    def test_simulated_row(self):
        p, tf, tb = 4, 300.0, 500.0
        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "repro_pp.csv"),
                      ["schedule", "stages", "micro_batches", "t_fwd_us", "t_bwd_us", "act_bytes", "efficiency"],
                      [["1f1b", p, m, tf, tb, 0, round(m / (m + p - 1), 4)] for m in (14, 32)])
            rows = {q["figure"]: q for q in r.pp_rows(d, {"pp": {"stages": p, "micro_batches": [14, 32]}}, PLAN_BIN)}
        sim = rows["PP efficiency p=8 m=32 (simulated)"]
        self.assertEqual(sim["configuration"], "p=8 m=32 1f1b, stage times from p=%d" % p)
        # 8 stages each doing p/8 of this run's stage; no p2p_sweep.csv: no transfer time
        self.assertIn("t_fwd %.1f us, t_bwd %.1f us (measured x %d/8), transfer 0.0 us" % (tf * p / 8, tb * p / 8, p),
                      sim["note"])
        self.assertAlmostEqual(float(sim["measured_value"]), 32 / 39, places=4)
        m32 = rows["PP efficiency, m = 32"]
        self.assertAlmostEqual(float(m32["formula_value"]), 32 / 35, places=3)
        self.assertIn("p=4 here, not 8: the formula itself gives %.3f" % (32 / 35), m32["note"])


class HybridRows(unittest.TestCase):
    """hybrid_rows: the measured ranking, and the note when every axis is on one link class."""

    def hybrid(self, links):
        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "hybrid_3d.csv"), ["placement", "tp_link", "pp_link", "dp_link", "step_us"],
                      [[name, *ls, us] for (name, ls), us in zip(links.items(), (900, 1000, 1100))])
            return r.hybrid_rows(d, {"nranks": 8})[0]

    def test_tie_and_ranking(self):
        mixed = self.hybrid({"tp-inner": ("intra", "inter", "inter"), "pp-inner": ("inter", "intra", "inter"),
                             "dp-inner": ("inter", "inter", "intra")})
        self.assertEqual(mixed["note"], "measured step_us ranking")
        self.assertEqual(mixed["verdict"], "reproduced")
        self.assertIn("measured: tp-inner < pp-inner < dp-inner; plan: tp-inner < pp-inner < dp-inner",
                      mixed["configuration"])
        tie = self.hybrid({"pp-inner": ("intra",) * 3, "tp-inner": ("intra",) * 3, "dp-inner": ("intra",) * 3})
        self.assertEqual(tie["note"], "every axis intra-node here: the model ties the placements")
        self.assertEqual(tie["verdict"], "differs")
        self.assertEqual(float(tie["measured_value"]), 2)


DP_COLS = ["grad_bytes", "overlap", "overhead", "predicted_overhead", "exposed_us", "buckets", "target_ratio",
           "compute_us", "compute_us_slowest", "overhead_paired", "overhead_instep"]


class DPRows(unittest.TestCase):
    """The DP rows read dp_allreduce's --target-ratio rows and notes, not the sizes set up beforehand."""

    def write(self, d, rows, notes, load="other processes used 3% of the busiest node's CPU time during the run, steal 0%",
              name="repro_dp.csv"):
        with open(os.path.join(d, name), "w") as f:
            f.write("".join("# note: %s\n" % n for n in notes + ["load: " + load]))
            f.write(",".join(DP_COLS) + "\n")
            f.writelines(",".join(str(v) for v in row + (1000, 1020, "", "")[len(row) - 7:]) + "\n" for row in rows)

    def plan(self):
        return {"nranks": 2, "dp": {"ratios": [r.DP_RATIO, 0.2], "sweep_bytes": [1000, 2000], "compute_s": 0.25,
                                    "gemm_gflops": 50.0, "layer_efficiency": 0.8, "note": "x", "busbw_GBps": [2.0, 2.0],
                                    "bucket_mb": 1, "shape": "tiny"}}

    def test_rows_follow_the_searched_sizes(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [(6144, "none", 0.121, 0.110, 121, 1, 0.112), (6144, "bucket", 0.15, 0.11, 150, 3, 0.112)],
                       ["target comm/compute 0.112: grad_bytes 6144 chosen in this run after 3 probes of the all-reduce "
                        "alone and the compute alone, from 1000; there comm/compute 0.1105",
                        "target comm/compute 0.2: grad_bytes 9216 chosen in this run after 12 probes of the all-reduce "
                        "alone and the compute alone, from 2000; there comm/compute 0.2301 (not within 2% of the target: "
                        "the nearest probe)"])
            self.assertEqual(r.searches(os.path.join(d, "repro_dp.csv")),
                             {0.112: (6144, 3, 0.1105, True), 0.2: (9216, 12, 0.2301, False)})
            # the scan: no target ratio; x is each row's own comm/compute
            self.write(d, [(9216, "none", 0.22, 0.19, 220, 1, ""), (12288, "none", 0.34, 0.3, 340, 1, ""),
                           (12288, "bucket", 0.5, 0.3, 500, 3, "")], [], name="repro_dp_scan.csv")
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
        main = rows["DP overhead (comm/compute, no overlap)"]
        self.assertEqual((main["measured_value"], main["verdict"]), ("0.121", "reproduced"))  # 0.121/0.112 = 1.08
        self.assertIn("grad_bytes=6144 on 2 ranks", main["configuration"])
        self.assertIn("3 probes, the nearest 0.1105", main["note"])
        self.assertIn("in the step's loop comm/compute 0.110, and the step added 0.121", main["note"])
        # the sweep's own prediction, every figure of it read back (250 ms: a unit slip shows at %.1f)
        self.assertIn("the sweep (busbw 2.00 GB/s, compute 250.0 ms from GEMM 50.0 GFLOP/s x 0.80, x) predicted 1000 B",
                      main["note"])
        comp = rows["DP composition: step - compute against comm, no overlap"]
        self.assertEqual((comp["formula_value"], comp["measured_value"], comp["verdict"]), ("0.11", "0.121", "reproduced"))
        self.assertIn("= 1.1", comp["note"])  # 0.121 / 0.110
        self.assertIn("compute skew (each iteration's slowest rank over the slowest mean) added 0.020 of the compute",
                      comp["note"])  # (1020 - 1000) / 1000
        scan = rows["DP 20% line scan: comm/compute 0.19"]
        self.assertEqual((scan["formula_value"], scan["measured_value"], scan["configuration"]),
                         ("0.19", "0.22", "grad_bytes=9216 on 2 ranks"))
        self.assertEqual(scan["verdict"], "differs")  # across the 20% line, and 0.22 / 0.19 = 1.158: over 15% off
        over = rows["DP 20% line scan: comm/compute 0.30"]
        self.assertEqual((over["measured_value"], over["verdict"]), ("0.34", "reproduced"))  # both over the rule
        self.assertNotIn("DP 20% line scan: comm/compute 0.11", rows)  # the main row is a point, not a scan row
        self.assertEqual(len([f for f in rows if f.startswith("DP 20% line scan")]), 2)  # the bucket row is not one
        # Bucketing: no metadata on the cores, so not judged, but what it measured is given: 1 - 150/121.
        bucket = rows["DP bucketing: share of the exposed all-reduce hidden"]
        self.assertEqual((bucket["measured_value"], bucket["verdict"]), ("", "not judged"))
        self.assertIn("it measured -0.24", bucket["note"])
        cross = rows["DP: comm/compute where measured overhead crosses 20%"]
        # points (0.110, 0.121), (0.19, 0.22): 0.110 + (0.2 - 0.121) * 0.08 / 0.099
        self.assertAlmostEqual(float(cross["measured_value"]), 0.110 + 0.079 * 0.08 / 0.099, places=5)
        self.assertEqual(cross["configuration"], "scan 0.11,0.19,0.3")

    def test_bucketing_hidden_share_with_a_core_per_rank(self):
        # 8 cores for 2 ranks: judged. Bucketing leaves 30 of the 120 us exposed: it hid 1 - 30/120 = 0.75.
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [(6144, "none", 0.12, 0.11, 120, 1, 0.112), (6144, "bucket", 0.03, 0.11, 30, 3, 0.112)], [])
            with open(os.path.join(d, "repro_dp.json"), "w") as f:
                json.dump({"meta": {"topology": {"cores": 8}, "hosts": [{"ranks": [0, 1]}]}}, f)
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
        bucket = rows["DP bucketing: share of the exposed all-reduce hidden"]
        self.assertEqual((bucket["measured_value"], bucket["verdict"]), ("0.75", "reproduced"))

    def test_far_from_the_document_differs_and_busy_is_not_judged(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [(6144, "none", 0.2, 0.11, 200, 1, 0.112)], [])
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
            self.assertEqual(rows["DP overhead (comm/compute, no overlap)"]["verdict"], "differs")
            self.assertEqual(rows["DP composition: step - compute against comm, no overlap"]["verdict"], "differs")
            self.assertIn("no search note", rows["DP overhead (comm/compute, no overlap)"]["note"])
            self.write(d, [(6144, "none", 0.2, 0.11, 200, 1, 0.112)], [],
                       load="other processes used 40% of the busiest node's CPU time during the run, steal 0%")
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
            for fig in ("DP overhead (comm/compute, no overlap)", "DP composition: step - compute against comm, no overlap"):
                self.assertEqual(rows[fig]["verdict"], "not judged")
                self.assertTrue(rows[fig]["note"].startswith("machine busy: other processes used 40%"))
            # the step follows its own loop's comm/compute (0.19), which is far from the document's 0.112
            self.write(d, [(6144, "none", 0.2, 0.19, 200, 1, 0.112)], [])
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
            self.assertEqual(rows["DP overhead (comm/compute, no overlap)"]["verdict"], "differs")
            self.assertEqual(rows["DP composition: step - compute against comm, no overlap"]["verdict"], "reproduced")

    def test_the_paired_overhead_is_the_figure(self):
        with tempfile.TemporaryDirectory() as d:
            # the means give 0.2 (one iteration slowed), the paired iterations 0.115
            self.write(d, [(6144, "none", 0.2, 0.11, 200, 1, 0.112, 1000, 1020, 0.115)], [])
            self.write(d, [(9216, "none", 0.05, 0.25, 50, 1, "", 1000, 1000, 0.26)], [], name="repro_dp_scan.csv")
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
        main = rows["DP overhead (comm/compute, no overlap)"]
        self.assertEqual((main["measured_value"], main["verdict"]), ("0.115", "reproduced"))
        self.assertIn("the step added 0.115 (its all-reduce after its own compute, the median of its iterations; "
                      "against the separate compute phase 0.115; from the means 0.200)", main["note"])
        self.assertEqual(rows["DP composition: step - compute against comm, no overlap"]["measured_value"], "0.115")
        self.assertEqual(rows["DP 20% line scan: comm/compute 0.25"]["measured_value"], "0.26")
        self.assertAlmostEqual(float(rows["DP: comm/compute where measured overhead crosses 20%"]["measured_value"]),
                               0.11 + (0.2 - 0.115) * 0.14 / 0.145, places=5)

    def test_the_in_step_overhead_comes_first(self):
        with tempfile.TemporaryDirectory() as d:
            # paired with the separate compute phase 0.13; inside the step, against its own compute, 0.118
            self.write(d, [(6144, "none", 0.2, 0.11, 200, 1, 0.112, 1000, 1020, 0.13, 0.118)], [])
            self.write(d, [(9216, "none", 0.05, 0.25, 50, 1, "", 1000, 1000, 0.26, 0.24)], [], name="repro_dp_scan.csv")
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
        main = rows["DP overhead (comm/compute, no overlap)"]
        self.assertEqual((main["measured_value"], main["verdict"]), ("0.118", "reproduced"))
        self.assertIn("the step added 0.118 (its all-reduce after its own compute, the median of its iterations; "
                      "against the separate compute phase 0.130; from the means 0.200)", main["note"])
        self.assertEqual(rows["DP composition: step - compute against comm, no overlap"]["measured_value"], "0.118")
        self.assertEqual(rows["DP 20% line scan: comm/compute 0.25"]["measured_value"], "0.24")

    def test_no_row_for_the_document_ratio(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [(9216, "none", 0.22, 0.19, 220, 1, 0.2)], [])
            rows = {x["figure"]: x for x in r.dp_rows(d, self.plan())}
        main = rows["DP overhead (comm/compute, no overlap)"]
        self.assertEqual((main["measured_value"], main["verdict"]), ("", "differs"))
        self.assertIn("no overlap=none row for target ratio 0.112", main["note"])


class ScanSetup(unittest.TestCase):
    """repro_dp_scan's sizes come from repro_dp's own loop, or from the sweep without it."""

    def test_scaled_from_repro_dp(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "reproduce"))
            plan = {"nranks": 2, "dp": {"sweep_bytes": [1, 2, 3, 4, 5], "model_args": ["--model", "tiny"]}}
            with open(os.path.join(d, "reproduce", "plan.json"), "w") as f:
                json.dump(plan, f)
            r.scan_setup(d)  # no repro_dp.csv: the sweep's sizes
            with open(os.path.join(d, "reproduce", "repro_dp_scan.args")) as f:
                self.assertEqual(f.read().split("\n")[:6], ["--overlap", "none", "--model", "tiny", "--grad-bytes",
                                                            "2,3,4,5"])
            # the row at the documents' ratio, not one searched for another ratio before it
            DPRows.write(None, d, [(40960, "none", 0.5, 0.5, 500, 1, 0.5), (10240, "bucket", 0.2, 0.2, 200, 1, 0.112),
                                   (10240, "none", 0.1, 0.1024, 100, 1, 0.112)], [])
            r.scan_setup(d)
            with open(os.path.join(d, "reproduce", "repro_dp_scan.args")) as f:
                args = f.read().split("\n")
            # 10240 B at 0.1024: 10000 B per 0.1 of comm/compute, rounded to 1 KiB
            self.assertEqual(args[args.index("--grad-bytes") + 1], "10240,20480,29696,50176")
            with open(os.path.join(d, "reproduce", "plan.json")) as f:
                self.assertIn("scaled from repro_dp's 10240 B at comm/compute 0.1024", json.load(f)["dp"]["scan_source"])

    def test_busy_scan_is_not_judged(self):
        with tempfile.TemporaryDirectory() as d:
            DPRows.write(None, d, [(6144, "none", 0.11, 0.11, 110, 1, 0.112)], [])
            DPRows.write(None, d, [(9216, "none", 0.3, 0.3, 300, 1, "")], [], name="repro_dp_scan.csv",
                         load="other processes used 40% of the busiest node's CPU time during the run, steal 0%")
            rows = {x["figure"]: x for x in r.dp_rows(d, DPRows.plan(None))}
        self.assertEqual(rows["DP overhead (comm/compute, no overlap)"]["verdict"], "reproduced")
        for fig in ("DP 20% line scan: comm/compute 0.30", "DP: comm/compute where measured overhead crosses 20%"):
            self.assertEqual(rows[fig]["verdict"], "not judged")
            self.assertTrue(rows[fig]["note"].startswith("machine busy: other processes used 40%"), rows[fig])


if __name__ == "__main__":
    unittest.main()
