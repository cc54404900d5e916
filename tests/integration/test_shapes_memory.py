"""suite/shapes.py's memory needs against the binaries' own: the dry run says what a GPU will
hold from Python mirrors of the C formulas (dp_memory, tp_memory, pp_stage_memory,
hybrid_memory, fsdp_memory, cp_memory, moe_memory), so each mirror is compared, byte for byte,
with the need the binary itself computes (moe_layer's skewed load: bounded from above). The binaries run llama3-405b in fp32 at a size no machine's host
memory holds (moe_layer: olmoe-1b-7b over a million tokens): each refuses before allocating
(exit 3) and names its need, the total for the ranks of this node. Run by test_shapes.sh (PB_BIN: the binaries)."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
from suite import models  # noqa: E402
from suite import shapes as S  # noqa: E402

BIN = os.environ.get("PB_BIN", os.path.join(ROOT, "build", "bin"))
M = models.presets()["llama3-405b"]
FP32 = 4
COMMON = ["--compute-dtype", "float32", "--grad-dtype", "float32", "-n", "1", "-w", "0", "-c", "0"]


def binary_need(ranks, name, *args, model="llama3-405b"):
    """The bytes a rank of `name` says it needs (its message's total over the ranks of this node)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
           os.path.join(BIN, name), "--model", model, *COMMON, *map(str, args)]
    run = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    found = re.search(r"needs (\d+) bytes", run.stderr)
    assert run.returncode == 3 and found, "%s: exit %d, %s" % (" ".join(cmd), run.returncode, run.stderr[-600:])
    return int(found.group(1)) // ranks


class MirrorsMatchTheBinaries(unittest.TestCase):
    def test_dp_allreduce_its_own_gradients(self):
        # 1 GiB of buffer, smaller than 4 layers' gradients: the stack keeps its own
        self.assertEqual(binary_need(1, "dp_allreduce", "--layers", 4, "--grad-bytes", "1G"),
                         S.dp_memory(M, 4, 1 << 30, FP32))

    def test_dp_allreduce_gradients_in_the_buffer(self):
        # 64 GiB of buffer holds 4 layers' gradients (52 GB): the stack has none of its own
        self.assertEqual(binary_need(1, "dp_allreduce", "--layers", 4, "--grad-bytes", "64G", "--recompute", "full"),
                         S.dp_memory(M, 4, 64 << 30, FP32, "full"))

    def test_tp_layer(self):
        self.assertEqual(binary_need(2, "tp_layer", "--tp", 2, "--layers", 16, "--seq-list", 8192),
                         S.tp_memory(M, 2, 16, FP32))

    def test_pp_pipeline_1f1b(self):
        # 2 stages of 16 layers; 1F1B holds 2 of the 4 micro-batches
        self.assertEqual(binary_need(2, "pp_pipeline", "--stages", 2, "--layers", 32, "--micro-batches", 4,
                                     "--schedule", "1f1b", "--recompute", "selective"),
                         S.pp_stage_memory(M, 16, 2, 4, FP32, "selective"))

    def test_pp_pipeline_gpipe(self):
        self.assertEqual(binary_need(2, "pp_pipeline", "--stages", 2, "--layers", 32, "--micro-batches", 4,
                                     "--schedule", "gpipe"),
                         S.pp_stage_memory(M, 16, 4, 4, FP32))

    def test_hybrid_3d(self):
        # TP 2 x PP 2: 16 layers a stage, 1F1B's 2 in flight of the default 4 micro-batches
        self.assertEqual(binary_need(4, "hybrid_3d", "--tp", 2, "--pp", 2, "--dp", 1, "--layers", 32),
                         S.hybrid_memory(M, 2, 16, 2, 4, FP32))

    def test_fsdp_step(self):
        self.assertEqual(binary_need(2, "fsdp_step", "--layers", 16), S.fsdp_memory(M, 16, 2, FP32))

    def test_cp_attention(self):
        self.assertEqual(binary_need(2, "cp_attention", "--cp", 2, "--seq", 131072, "--layers", 1),
                         S.cp_memory(M, 2, 131072, FP32))

    def test_moe_layer(self):
        # Uniform load: exact. Under --skew F the mirror takes a rank's rows as F times its share, an
        # upper bound (only the most loaded expert gets F times the mean), so it only bounds that need.
        mm = dict(models.presets()["olmoe-1b-7b"], seq=1048576)
        args = ("--seq", 1048576, "--ep-group", 2, "--layers", 2, "--skew")
        self.assertEqual(binary_need(2, "moe_layer", *args, "uniform", model="olmoe-1b-7b"),
                         S.moe_memory(mm, 2, mm["experts"] // 2, 1.0, FP32))
        self.assertLessEqual(binary_need(2, "moe_layer", *args, 2, model="olmoe-1b-7b"),
                             S.moe_memory(mm, 2, mm["experts"] // 2, 2.0, FP32))


if __name__ == "__main__":
    unittest.main()
