"""scripts/training_step.py on a fabricated run: the step of the run's model
assembled from its measured parts, every expected value recomputed here from
the fixture (docs/models.md). Run by test_training_step.sh."""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import training_step  # noqa: E402
from suite import models  # noqa: E402

MODEL = dict(models.presets()["llama-70b"])


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


if __name__ == "__main__":
    unittest.main()
