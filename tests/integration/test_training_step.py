"""scripts/training_step.py on a fabricated run: the step of the run's model
assembled from its measured parts, every expected value recomputed here from
the fixture (docs/models.md). Run by test_training_step.sh."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import training_step  # noqa: E402
from suite import models  # noqa: E402

MODEL = dict(models.presets()["llama-70b"])
PLAN = os.path.join(os.environ.get("PB_BIN", os.path.join(ROOT, "build", "bin")), "plan")
# A cluster file as plan --calibrate writes one: nodes of 8 H100-class GPUs on a 400 Gb/s network.
CLUSTER = ("name = fixture\ngpus_per_node = 8\nintra_alpha_us = 2\nintra_bw_GBps = 450\ninter_alpha_us = 5\n"
           "inter_bw_GBps = 50\ntflops = 600\nmem_GB = 80\nhbm_GBps = 3350\n")


def write(folder, name, header, rows):
    with open(os.path.join(folder, name), "w") as f:
        f.write("# a fixture\n" + ",".join(header) + "\n")
        for r in rows:
            f.write(",".join(map(str, r)) + "\n")


def run_folder(folder, t=8, p=8, d=16, devices="1024 GPUs (H100, 80 GiB each)", C=30000.0, T=4000.0,
               bw=50.0, R=90000.0):
    meta = {"devices": devices, "model": {"name": "llama-70b", "file": None,
            "shape": {k: MODEL[k] for k in models.FIELDS}, "precision": "bf16", "job": {"tp": t, "pp": p, "dp": d}}}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f)
    open(os.path.join(folder, "steps.tsv"), "w").close()
    h, s = MODEL["hidden"], MODEL["seq"]
    write(folder, "tp_layer.csv", ("tp", "mode", "seq", "hidden", "compute_us", "comm_us"),
          [(t, "allreduce", s // 2, h, C / 3, T / 3), (t, "allreduce", s, h, C, T), (t, "sp", s, h, C, 2 * T)])
    write(folder, "p2p_sweep.csv", ("mode", "bytes", "link_class", "time_us", "bw_GBps"),
          [("bw", 1 << 20, "inter", 1, bw / 2), ("bw", 16 << 20, "inter", 1, bw), ("bw", 16 << 20, "intra", 1, 400.0)])
    write(folder, "dp_allreduce.csv", ("grad_bytes", "overlap", "compute_us", "comm_us"),
          [(1 << 30, "none", 1, R / 2), (2 << 30, "none", 1, R), (2 << 30, "bucket", 1, R / 9)])
    write(folder, "compute_probe.csv", ("test", "engine", "dtype", "size", "iters", "rate", "unit"),
          [("gemm", "blas", "float", 256, 2, 100.0, "GFLOP/s"), ("gemm", "blas", "float", 512, 2, 150.0, "GFLOP/s")])


class Step(unittest.TestCase):
    def test_arithmetic(self):
        with tempfile.TemporaryDirectory() as d:
            run_folder(d)
            s = training_step.assemble(d)
        C, T = 30000.0, 4000.0
        X = 4096 * 8192 * 2 / 50e9 * 1e6       # one 64 MiB message at the inter-node 16 MiB bandwidth
        Ls, m = 10, 1024 // 16                 # 80 layers over 8 stages; 1024 sequences over 16 pipelines
        slot = Ls * (C + T) + 2 * X
        dp = max(0.0, 90000.0 - Ls * C * 2 / 3)
        self.assertAlmostEqual(s["X_us"], X)
        self.assertEqual((s["m"], s["layers_per_stage"]), (m, Ls))
        self.assertAlmostEqual(s["step_us"], (m + 8 - 1) * slot + dp)
        parts = s["parts_us"]
        self.assertAlmostEqual(parts["compute"], m * Ls * C)
        self.assertAlmostEqual(parts["tp"], m * Ls * T)
        self.assertAlmostEqual(parts["pp_transfers"], 2 * m * X)
        self.assertAlmostEqual(parts["bubble"], 7 * slot)
        self.assertAlmostEqual(parts["dp"], dp)
        self.assertAlmostEqual(sum(parts.values()), s["step_us"])  # the breakdown is the whole step
        # MFU: the FLOPs a GPU does (its 1/t of m x L_s layers) over the step at H100's bf16 peak
        flops = m * Ls * models.layer_flops(MODEL) / 8
        self.assertAlmostEqual(s["mfu"], flops / (s["step_us"] * 1e-6) / 989e12)
        self.assertIn("H100 bf16 peak", s["peak_what"])
        line = training_step.line(s)
        self.assertIn("training step of llama-70b at TP 8 x PP 8 x DP 16, 64 micro-batches: %.3f s" % (s["step_us"] / 1e6), line)
        self.assertIn("MFU %.1f%%" % (100 * s["mfu"]), line)

    def test_dp_hidden_by_the_last_backward(self):
        # an all-reduce shorter than the last micro-batch's backward is not exposed
        with tempfile.TemporaryDirectory() as d:
            run_folder(d, R=1000.0)
            self.assertEqual(training_step.assemble(d)["parts_us"]["dp"], 0.0)

    def test_dp_exposed_beyond_it(self):
        # longer than the last micro-batch's backward (two thirds of its 10 layers' 30 ms): the rest shows
        with tempfile.TemporaryDirectory() as d:
            run_folder(d, R=250000.0)
            self.assertAlmostEqual(training_step.assemble(d)["parts_us"]["dp"], 250000.0 - 10 * 30000.0 * 2 / 3)

    def test_one_stage_sends_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            run_folder(d, p=1, d=128)
            s = training_step.assemble(d)
        self.assertEqual((s["X_us"], s["parts_us"]["bubble"], s["layers_per_stage"]), (0.0, 0.0, 80))

    def test_cpu_peak_is_the_measured_gemm_rate(self):
        with tempfile.TemporaryDirectory() as d:
            run_folder(d, devices="2 cores")
            s = training_step.assemble(d)
        self.assertIn("compute_probe", s["peak_what"])
        self.assertAlmostEqual(s["mfu"], s["m"] * 10 * models.layer_flops(MODEL) / 8 / (s["step_us"] * 1e-6) / 150e9)

    def test_missing_parts_give_no_line(self):
        with tempfile.TemporaryDirectory() as d:
            run_folder(d)
            os.unlink(os.path.join(d, "dp_allreduce.csv"))
            self.assertIsNone(training_step.assemble(d))
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(training_step.assemble(d))  # no meta.json


class AgreesWithPlan(unittest.TestCase):
    """Where the measured parts are the cluster file's own (plan's per-micro-batch terms of the slowest
    stage fed in as the run's rows), the assembled step is plan's step but for the two documented
    differences: the fill and drain take p - 1 slots of the slowest stage, not the other stages' own
    (the last holds the logit layer), and the DP all-reduce overlaps the last backward."""

    def plan_terms(self, folder, t, p, d, m):
        cmd = [PLAN, "--model", "llama-70b", "--cluster", os.path.join(folder, "cluster.txt"), "--gpus",
               str(t * p * d), "--tp", str(t), "--pp", str(p), "--dp", str(d), "--global-batch", str(m * d)]
        text = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
        per = re.search(r"fwd ([0-9.]+) ms, bwd ([0-9.]+) ms, TP comm ([0-9.]+) ms, PP comm ([0-9.]+) ms", text)
        step = re.search(r"step = .* = (\d+) x ([0-9.]+) ms \+ ([0-9.]+) ms \+ ([0-9.]+) ms = ([0-9.]+) s", text)
        self.assertTrue(per and step, text)
        fwd, bwd, tp, pp = (float(x) * 1e3 for x in per.groups())
        count, slot, fill, dp, total = (float(x) for x in step.groups())
        self.assertEqual(count, m)
        return {"C_stage": fwd + bwd, "T_stage": tp, "pp": pp, "slot": slot * 1e3, "fill": fill * 1e3,
                "dp": dp * 1e3, "step": total * 1e6}

    def test_assembled_from_plans_parts(self):
        t, p, d = 8, 8, 16
        m = models.presets()["llama-70b"]
        mb, Ls = training_step.shapes.micro_batches(m, d, ())[1], -(-m["layers"] // p)
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "cluster.txt"), "w") as f:
                f.write(CLUSTER)
            k = self.plan_terms(folder, t, p, d, mb)
            msg = m["seq"] * m["hidden"] * 2
            run_folder(folder, t, p, d, C=k["C_stage"] / Ls, T=k["T_stage"] / Ls,
                       bw=2 * msg / (k["pp"] * 1e-6) / 1e9, R=k["dp"])  # 2 messages a slot make plan's PP comm
            s = training_step.assemble(folder)
            planned = training_step.plan_step(folder, s, PLAN)
        self.assertAlmostEqual(planned, k["step"] / 1e6, places=3)  # plan_step reads plan's own step line
        slot = Ls * (s["C_us"] + s["T_us"]) + 2 * s["X_us"]
        self.assertAlmostEqual(slot, k["slot"], delta=1e-3 * k["slot"])  # the same slot
        hidden = max(0.0, k["dp"] - Ls * s["C_us"] * 2 / 3)
        self.assertAlmostEqual(s["step_us"], k["step"] - k["fill"] + (p - 1) * slot - k["dp"] + hidden,
                               delta=1e-3 * k["step"])
        # and the whole step within 3% of plan's: the two differences are small at this shape
        self.assertLess(abs(s["step_us"] / k["step"] - 1), 0.03, (s["step_us"], k["step"]))


if __name__ == "__main__":
    unittest.main()
