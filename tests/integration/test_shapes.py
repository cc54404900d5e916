"""suite/shapes.py over a table of worlds: the rules (TP inside a node, PP
stages on node boundaries, the grid's axes), and every argument list it
returns run through the real binary's --validate N:R, so that no step is ever
launched with arguments it would refuse. Run by test_shapes.sh (PB_BIN: the
binaries)."""
import math
import os
import re
import concurrent.futures
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
from suite import manifest  # noqa: E402
from suite import models  # noqa: E402
from suite import shapes as S  # noqa: E402

def shapes(*args, **kw):
    """suite/shapes.py's answer with each step's name (the manifest's, by role)."""
    return manifest.name_shapes(S.shapes(*args, **kw))


BIN = os.environ.get("PB_BIN", os.path.join(ROOT, "build", "bin"))
RANKS = (1, 2, 3, 4, 8, 12, 16, 64, 1024, 4096)
PER_NODE = (1, 2, 4, 8)
PROFILES = ("quick", "default", "full")


def worlds():
    """(ranks, ranks per node): the table, plus worlds whose last node is short."""
    out = {(n, r) for n in RANKS for r in PER_NODE}
    out |= {(n + k, r) for n in (8, 64, 1024) for r in (4, 8) for k in range(1, r)}
    return sorted(out)


# The CPU model in every profile, and every preset (their shapes are whole: only layers are capped).
MODELS = [("tiny-gqa", profile) for profile in ("quick", "default", "full")] + \
         [(name, "default") for name in models.presets()]

# What run_all passes besides the shape.
STEP_ARGS = {
    "tp_layer": ["--tp-comm", "allreduce,sp"],
    "dp_allreduce": ["--overlap", "none,bucket"],
    "pp_pipeline": [],
    "hybrid_3d": [],
    "fsdp_step": ["--prefetch", "off,on"],
    "cp_attention": ["--overlap", "off,on"],
    "moe_layer": [],
}


def command(step, model, profile, shape, ranks, rpn):
    own = "--model" in shape["args"]  # moe_layer's shape names its own (MoE) model
    return [os.path.join(BIN, step)] + ([] if own else ["--model", model]) + STEP_ARGS[step] + shape["args"] + \
        ["--validate", "%d:%d" % (ranks, rpn)]


class Rules(unittest.TestCase):
    def test_presets_as_the_binaries_read_them(self):
        # one table: what suite/models.py reads of presets.def is what plan prints of it
        for name, m in models.presets().items():
            out = subprocess.run([os.path.join(BIN, "plan"), "--model", name, "--cluster", "h100", "--gpus", "8"],
                                 stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
            self.assertIn("h=%d L=%d heads=%d kv_heads=%d ffn=%d (%s) s=%d V=%d" % (
                m["hidden"], m["layers"], m["heads"], m["kv_heads"], m["ffn"], m["mlp"], m["seq"], m["vocab"]), out)
            self.assertIn("counted from the shape: %.2fe9" % (models.params(m) / 1e9), out)

    def test_cpu_model_has_heads_for_a_node(self):
        m = models.presets()[models.CPU_MODEL]
        self.assertEqual((m["heads"] % 8, m["kv_heads"] % 8, m["ffn"] % 8), (0, 0, 0))
        self.assertLess(m["kv_heads"], m["heads"])  # the LLaMA form: grouped-query attention
        self.assertEqual(m["mlp"], "swiglu")

    def test_70b_at_scale(self):
        # The sizes a 70B-class model communicates, on nodes of 8 H100s, in bf16:
        # a TP call is b*s*h*2 = 64 MiB; a rank's gradients params/(t*p)*2; a PP message b*s*h*2.
        m = models.presets()["llama-70b"]
        params = 80 * (2 * 8192 ** 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 2 * 32000 * 8192
        self.assertEqual(models.params(m), params)
        for ranks, (t, p, d) in ((8, (8, 1, 1)), (64, (8, 8, 1)), (1024, (8, 8, 16))):
            got = {s["step"]: s for s in shapes(ranks, 8, 8, m, "default", es=2, memory=models.GPUS["h100"]["memory"])}
            self.assertEqual(S.job_of(ranks, 8, 8, m), (t, p, d))
            tp = got["tp_layer"]
            self.assertEqual(tp["sizes"]["tp_call"], 64 << 20)
            self.assertEqual(tp["args"], ["--tp", "8", "--layers", "2", "--seq-list", "2048,4096,8192"])
            g = got["dp_allreduce"]["sizes"]["grad_bytes"]
            self.assertLessEqual(abs(g / (params / (t * p) * 2) - 1), 0.01)
            self.assertIn(str(g), got["dp_allreduce"]["args"][3].split(","))
            pp = got["pp_pipeline"]
            self.assertEqual(pp["sizes"]["pp_message"], 64 << 20)
            self.assertIn("1f1b", pp["args"][1])
            ep = got["moe_layer"]  # a dense model: OLMoE's 64 experts over a node, and over 8 nodes where there are
            self.assertEqual(ep["args"][:4], ["--model", S.MOE_MODEL_GPU, "--ep-group",
                                              {8: "world", 64: "node,world", 1024: "node,64"}[ranks]])
            cp = got["cp_attention"]  # a ring of 8 inside each node, each rank a block of the model's s tokens
            self.assertEqual(cp["args"][:4], ["--cp", "8", "--seq", str(8 * m["seq"])])
            self.assertEqual(cp["sizes"]["cp_block"], 2 * m["seq"] * m["kv_heads"] * (m["hidden"] // m["heads"]) * 2)
            fs = got["fsdp_step"]  # ZeRO-3 over one node; hybrid sharding (a node a shard group) over several
            self.assertEqual(fs["args"][:2], ["--shard-group", "world" if ranks == 8 else "node"])
            self.assertEqual(fs["sizes"]["fsdp_gather"], models.layer_params(m) * 2)
            hy = got["hybrid_3d"]["args"]
            self.assertEqual([int(hy[hy.index(k) + 1]) for k in ("--tp", "--pp", "--dp")], [t, p, d])
            for s in got.values():  # what runs fits a GPU, with room for NCCL
                if s["args"] and "memory" in s["sizes"]:
                    self.assertLess(s["sizes"]["memory"], 0.9 * models.GPUS["h100"]["memory"])
        # 1024 ranks: 1024 sequences of 4096 tokens over 16 pipelines: 64 micro-batches each, run to 32
        pp = {s["step"]: s for s in shapes(1024, 8, 8, m, "default", es=2)}["pp_pipeline"]
        self.assertEqual(pp["sizes"]["micro_batches"], 64)
        self.assertIn("32", pp["args"][pp["args"].index("--micro-batches") + 1].split(","))

    def test_ep_groups_are_whole_nodes(self):
        # 18 experts on 9 nodes of 4: no node group (4 does not divide 18), and no group of whole nodes
        # the experts divide into (8, 12, 16 do not divide 18): skipped, never a group of 4.5 nodes (18)
        m = dict(models.presets()["tiny-moe"], experts=18, top_k=2)
        ep = {s["step"]: s for s in shapes(36, 4, 0, m, "default")}["moe_layer"]
        self.assertIsNone(ep["args"], ep["describe"])
        self.assertIn("18 experts spread over no EP group of whole nodes", ep["skip"])
        # 16 experts: a node of 4, and 16 ranks = 4 whole nodes across
        ep = {s["step"]: s for s in shapes(32, 4, 0, dict(m, experts=16), "default")}["moe_layer"]
        self.assertEqual(ep["args"][3], "node,16")

    def test_memory_refuses_what_does_not_fit(self):
        # a rank's 405B gradient on one node (t 8, p 1: 101 GB) fits no GPU, whatever the layers recompute
        m = models.presets()["llama3-405b"]
        got = {s["step"]: s for s in shapes(8, 8, 8, m, "default", es=2, memory=models.GPUS["h100"]["memory"])}
        self.assertIn("does not fit", got["dp_allreduce"]["skip"])
        self.assertIn("with full recomputation needs", got["dp_allreduce"]["skip"])
        self.assertIn("GiB a GPU", got["dp_allreduce"]["skip"])
        # a 70B stage fits no GPU of 16 GB, even recomputing whole layers; without a memory figure
        # (a CPU run) nothing is checked
        m = models.presets()["llama3-70b"]
        got = {s["step"]: s for s in shapes(64, 8, 8, m, "default", es=2, memory=16e9)}
        self.assertIn("a 1F1B stage of 2 layers (t 1) with full recomputation needs", got["pp_pipeline"]["skip"])
        got = {s["step"]: s for s in shapes(64, 8, 8, m, "default", es=2)}
        self.assertIsNone(got["pp_pipeline"]["skip"])
        self.assertNotIn("--recompute", got["pp_pipeline"]["args"])

    def test_tp_never_recomputes_whole_layers(self):
        # across GPU sizes from 10 to 80 GiB, 405B on 8 nodes: where pp_pipeline needs full recomputation,
        # tp_layer and hybrid_3d (blocks with TP communication between them) stop at selective, and skip
        seen = set()
        for quarter in range(40, 321):
            got = {s["step"]: s for s in shapes(64, 8, 8, models.presets()["llama3-405b"], "default", es=2,
                                                memory=quarter * 2 ** 28)}
            for step, s in got.items():
                rc = s["args"][s["args"].index("--recompute") + 1] if s["args"] and "--recompute" in s["args"] else None
                seen.add((step, rc))
                if step in ("tp_layer", "hybrid_3d"):
                    self.assertNotEqual(rc, "full", "%s at %.2f GiB" % (step, quarter / 4))
        self.assertIn(("pp_pipeline", "full"), seen)
        self.assertIn(("tp_layer", "selective"), seen)
        self.assertIn(("hybrid_3d", "selective"), seen)

    def test_recompute_memory_terms(self):
        # selective drops the s x s scores from what a micro-batch keeps, full keeps the layer's input
        # only; what is not kept is one shared set in the scratch, as compute/layer_stack.c holds it
        m = models.presets()["llama3-70b"]
        slots = models.act_slots(m, 1, 2)
        n, h, s = m["seq"], m["hidden"], m["seq"]
        self.assertEqual(slots[2], 64 * s * s * 2)
        self.assertEqual(models.layer_act_bytes(m, 1, 2, "selective"), sum(slots) - slots[2])
        self.assertEqual(models.layer_act_bytes(m, 1, 2, "full"), n * h * 2)
        self.assertEqual(models.scratch_bytes(m, 1, 2, "selective") - models.scratch_bytes(m, 1, 2), slots[2])
        self.assertEqual(models.scratch_bytes(m, 1, 2, "full") - models.scratch_bytes(m, 1, 2),
                         sum(slots[1:]) + n * h * 2)

    def test_default_model(self):
        h100 = models.GPUS["h100"]["memory"]
        self.assertEqual(models.default_model(0, 0, 1, 1), "tiny-gqa")
        self.assertEqual(models.default_model(8, h100, 8, 1), "llama3-8b")   # one node: 70B's 16 B/param do not fit
        self.assertEqual(models.default_model(8, h100, 8, 8), "llama3-70b")
        self.assertEqual(models.default_model(8, h100, 8, 64), "llama3-405b")

    def test_every_world(self):
        for ranks, rpn in worlds():
            for model, profile in MODELS:
                with self.subTest(ranks=ranks, rpn=rpn, model=model):
                    self.check(ranks, rpn, model, profile)

    def check(self, ranks, rpn, model, profile):
        got = {s["step"]: s for s in shapes(ranks, rpn, 0, model, profile)}
        self.assertEqual(tuple(got), tuple(manifest.by_role(r).name for r in S.ROLES))
        sizes = S.node_sizes(ranks, min(rpn, ranks))
        m = S.model_of(model)
        for s in got.values():
            self.assertTrue(s["describe"])
            self.assertEqual(s["args"] is None, s["skip"] is not None)
        tp = got["tp_layer"]
        if tp["args"] and ranks > 1:
            t = int(tp["args"][1])
            # every group of t consecutive ranks inside one node
            self.assertTrue(2 <= t <= 8 and all(n % t == 0 for n in sizes))
            self.assertEqual((m["heads"] % t, m["kv_heads"] % t, m["ffn"] % t), (0, 0, 0))
        ep = got["moe_layer"]
        if ep["args"]:  # every EP group divides the experts and the ranks; "node" only on equal nodes
            E = models.presets()[ep["args"][1]]["experts"]
            for g in ep["args"][3].split(","):
                n = ranks if g == "world" else rpn if g == "node" else int(g)
                self.assertEqual((E % n, ranks % n), (0, 0), (g, n, E, ranks))
                self.assertTrue(g != "node" or (ranks > rpn and ranks % rpn == 0), (g, ranks, rpn))
        cp = got["cp_attention"]
        g = math.gcd(*sizes)  # a ring fits every node when some c from 2 to 8 divides every node's ranks
        self.assertEqual(cp["args"] is None, ranks == 1 or not any(g % c == 0 for c in range(2, 9)), (ranks, sizes))
        if cp["args"]:  # every ring inside a node: the largest such c
            c = int(cp["args"][1])
            self.assertTrue(2 <= c <= 8 and all(n % c == 0 for n in sizes), (c, sizes))
            self.assertEqual(c, max(k for k in range(2, 9) if g % k == 0), (c, sizes))
            self.assertEqual(int(cp["args"][3]), c * m["seq"])
        fs = got["fsdp_step"]
        if ranks > 1:  # a node a shard group only where every node holds the same ranks, more than one
            hybrid = ranks > rpn and ranks % rpn == 0 and rpn > 1
            self.assertEqual(fs["args"][1], "node" if hybrid else "world")
            self.assertGreaterEqual(int(fs["args"][3]), min(2, m["layers"]))
        pp = got["pp_pipeline"]
        if pp["args"] and "--pp-stride" in pp["args"]:
            p = int(pp["args"][pp["args"].index("--stages") + 1])
            stride = int(pp["args"][pp["args"].index("--pp-stride") + 1])
            self.assertEqual(stride, min(rpn, ranks))
            self.assertLessEqual(p, 8)
            # stage k of every pipeline on its own node, as pp_pipeline maps ranks
            for rank in range(0, ranks, max(1, ranks // 64)):
                block, within = divmod(rank, stride * p)
                self.assertEqual(rank // stride, block * p + within // stride)
        if pp["args"]:
            p = int(pp["args"][pp["args"].index("--stages") + 1])
            self.assertEqual(int(pp["args"][pp["args"].index("--layers") + 1]) % p, 0)
        hy = got["hybrid_3d"]
        if hy["args"]:
            a = hy["args"]
            T, P, D = (int(a[a.index(k) + 1]) for k in ("--tp", "--pp", "--dp"))
            self.assertEqual(T * P * D, ranks)
            self.assertIn("--compare-placements", a)
            tp_link, pp_link, _ = S.hybrid_links(ranks, min(rpn, ranks), T, P, D)
            self.assertIn(tp_link, ("intra", "none"))
            if P > 1 and len(sizes) > 1:
                self.assertEqual(pp_link, "inter")

    def test_links_without_listing_ranks(self):
        # hybrid_links classifies each kind of group from its start modulo the node size: the
        # same answer as listing every group rank by rank, on every small grid and node size.
        def listed(ranks, rpn, T, P, D):
            groups = ([[T * (p + P * d) + t for t in range(T)] for p in range(P) for d in range(D)],
                      [[T * (p + P * d) + t for p in range(P)] for t in range(T) for d in range(D)],
                      [[T * (p + P * d) + t for d in range(D)] for t in range(T) for p in range(P)])
            out = []
            for g in groups:
                classes = {"intra" if len({r // rpn for r in x}) == 1 else
                           "inter" if len({r // rpn for r in x}) == len(x) else "mixed" for x in g}
                out.append("none" if len(g[0]) == 1 else classes.pop() if len(classes) == 1 else "mixed")
            return tuple(out)
        for T in (1, 2, 3, 4):
            for P in (1, 2, 3, 5):
                for D in (1, 2, 3, 4, 6):
                    for rpn in range(1, T * P * D + 1):
                        self.assertEqual(S.hybrid_links(T * P * D, rpn, T, P, D), listed(T * P * D, rpn, T, P, D),
                                         (T, P, D, rpn))

    def test_a_million_ranks_at_once(self):
        import time
        t0 = time.monotonic()
        for rpn in (8, 1000, 10 ** 6):
            shapes(10 ** 6, rpn, 0, "tiny-gqa", "default")
        shapes(1 << 20, 8, 8, "llama3-405b", "full", es=2, memory=models.GPUS["h100"]["memory"])
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_cluster_scale(self):
        got = {s["step"]: s for s in shapes(1024, 8, 8, "tiny-gqa", "default")}
        self.assertEqual(got["tp_layer"]["args"][:2], ["--tp", "8"])
        self.assertEqual(got["pp_pipeline"]["args"][:7], ["--schedule", "gpipe,1f1b", "--stages", "8", "--pp-stride",
                                                          "8", "--layers"])
        self.assertEqual(got["pp_pipeline"]["args"][7], "8")  # tiny-gqa's 4 layers: 1 a stage of 8, never more
        self.assertEqual(got["hybrid_3d"]["args"][:6], ["--tp", "8", "--pp", "8", "--dp", "16"])
        self.assertEqual(got["coll_sweep_intra"]["args"], ["--groups", "node"])

    def test_no_stage_count_divides(self):
        # 11 nodes: no count from 2 to 8 divides them, so the stages stay inside each node
        got = {s["step"]: s for s in shapes(88, 8, 0, "tiny-gqa", "default")}
        self.assertEqual(got["pp_pipeline"]["args"][2:6], ["--stages", "4", "--layers", "4"])
        self.assertIn("no stage count from 2 to 8 divides the 11 nodes", got["pp_pipeline"]["describe"])
        # 7 ranks on one node: no count from 2 to 4 divides them, so no pipeline at all
        got = {s["step"]: s for s in shapes(7, 7, 0, "tiny-gqa", "default")}
        self.assertIsNone(got["pp_pipeline"]["args"])
        self.assertIn("no stage count from 2 to 4 divides every node's ranks (7)", got["pp_pipeline"]["skip"])

    def test_skips_say_why(self):
        got = {s["step"]: s for s in shapes(3, 4, 0, "tiny-gqa", "default")}
        self.assertIn("heads", got["tp_layer"]["skip"])
        self.assertIn("dp_allreduce", got["hybrid_3d"]["skip"])
        got = {s["step"]: s for s in shapes(16, 1, 0, "tiny-gqa", "default")}
        self.assertIn("one rank", got["tp_layer"]["skip"])


@unittest.skipUnless(os.access(os.path.join(BIN, "hybrid_3d"), os.X_OK), "binaries not built")
class Binaries(unittest.TestCase):
    def test_every_answer_is_accepted(self):
        seen = set()
        for ranks, rpn in worlds():
            for model, profile in MODELS:
                for s in shapes(ranks, rpn, 0, model, profile):
                    if s["args"] is None or s["step"] not in STEP_ARGS:
                        continue
                    cmd = command(s["step"], model, profile, s, ranks, min(rpn, ranks))
                    seen.add(tuple(cmd))
        self.assertGreater(len(seen), 100)
        self.all_accepted(seen)

    def test_grid_never_recomputes_whole_layers(self):
        # hybrid_3d's TP blocks replay no whole layer: on a GPU where only full recomputation would
        # fit, the grid is skipped, never given --recompute full (no preset needs it on an H100).
        m = models.presets()["llama3-405b"]
        selective, full = (S.hybrid_memory(m, 8, 2, 8, 16, 2, rc) for rc in ("selective", "full"))
        self.assertLess(full, selective)
        memory = (full + selective) / 2 / S.MEMORY_USE
        got = S._grid(m, 8, 8, 16, 1024, 8, "here", 2, 2, memory)
        self.assertIsNotNone(got["skip"], got)
        self.assertIn("with selective recomputation", got["skip"])

    def test_recompute_keeps_the_shape(self):
        # What does not fit keeping every activation recomputes, as training does, never with a
        # smaller shape: the least recomputation that fits (tensor parallelism's blocks at most
        # selective). 70B and 405B on 8 and 128 nodes of 8 H100s run every step.
        h100 = models.GPUS["h100"]["memory"]
        # (hybrid_3d's 1F1B holds P micro-batches, not its 2P: 405B's stage keeps everything in 61 GiB)
        cases = (("llama3-70b", 64, {"pp_pipeline": "selective"}),
                 ("llama3-405b", 64, {"dp_allreduce": "selective", "pp_pipeline": "full", "fsdp_step": "selective"}),
                 ("llama3-405b", 1024, {"dp_allreduce": "selective", "pp_pipeline": "full", "fsdp_step": "selective"}))
        cmds = []
        for name, ranks, want in cases:
            m = models.presets()[name]
            got = {s["step"]: s for s in shapes(ranks, 8, 8, m, "default", es=2, memory=h100)}
            for step, s in got.items():
                self.assertIsNone(s["skip"], "%s %d: %s" % (name, ranks, step))
                args = s["args"]
                rc = args[args.index("--recompute") + 1] if "--recompute" in args else "none"
                self.assertEqual(rc, want.get(step, "none"), "%s %d: %s %s" % (name, ranks, step, args))
                self.assertLess(s["sizes"].get("memory", 0), 0.9 * h100)
                if step != "coll_sweep_intra":  # coll_sweep has no --validate (test_run_all_commands_are_accepted)
                    model = [] if "--model" in args else ["--model", name]  # moe_layer's own MoE model
                    cmds.append(tuple([os.path.join(BIN, step)] + model + args + ["--validate", "%d:8" % ranks]))
            # the least that fits: pp_pipeline's 1F1B stage with one less recomputation would not
            pp = got["pp_pipeline"]["args"]
            mbs = max(int(x) for x in pp[pp.index("--micro-batches") + 1].split(","))
            layers = int(pp[pp.index("--layers") + 1]) // int(pp[pp.index("--stages") + 1])
            less = models.RECOMPUTE[models.RECOMPUTE.index(want["pp_pipeline"]) - 1]
            self.assertGreater(S.pp_stage_memory(m, layers, min(8, mbs), mbs, 2, less), 0.9 * h100)
        self.all_accepted(cmds)  # the binaries take them: tp_layer and hybrid_3d never get full

    def all_accepted(self, cmds):
        """Each command line exits 0. Those that differ only in the world go in
        one call (--validate W1,W2,...: one start, then a fork per world; each
        start maps the binary's libraries again), a few calls at a time."""
        worlds = {}
        for cmd in cmds:
            assert cmd[-2] == "--validate"
            worlds.setdefault(tuple(cmd[:-1]), []).append(cmd[-1])
        calls = [list(head) + [",".join(w)] for head, w in worlds.items()]

        def run(cmd):
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            for cmd, p in zip(calls, pool.map(run, calls)):
                self.assertEqual(p.returncode, 0, "%s\n%s" % (" ".join(cmd), p.stderr))
                # one line per world: every child ran to the end of the checks, in the world it was
                # given, with as many nodes as that world fills (the last one partly)
                said = re.findall(r"arguments accepted for (\d+) ranks, (\d+) per node \((\d+) nodes\)", p.stdout)
                given = [tuple(int(x) for x in w.split(":")) for w in cmd[-1].split(",")]
                self.assertEqual(sorted(said), sorted((str(n), str(min(r, n)), str(-(-n // r))) for n, r in given),
                                 " ".join(cmd))

    def test_run_all_commands_are_accepted(self):
        # The command lines run_all itself builds (suite/manifest.py: the shape among the profile's
        # arguments and the cap), not only the shapes: accepted at every scale and profile.
        from suite import manifest
        cmds = []
        with tempfile.TemporaryDirectory() as out:
            for profile in PROFILES:
                for ranks, rpn in ((1, 1), (2, 2), (8, 8), (12, 4), (64, 8), (1024, 8), (1030, 8)):
                    run = manifest.Run(profile=profile, nranks=ranks, dry_run=True, nodes=-(-ranks // rpn),
                                       ranks_per_node=rpn, out=out)
                    for step in manifest.plan(run):
                        if step.shaped and step.binary != "coll_sweep" and not step.skip(run):
                            cmds.append(tuple([os.path.join(BIN, step.binary)] + step.args(run) +
                                              ["--validate", "%d:%d" % (ranks, rpn)]))
            self.all_accepted(cmds)  # inside: the commands name files in out

    def test_refusals_come_back(self):
        # the old run_all shape: TP over the whole world of 1024 (8 heads)
        cmd = [os.path.join(BIN, "tp_layer"), "--model", "tiny", "--tp", "1024", "--validate", "1024:8"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--tp", p.stderr)
        cmd = [os.path.join(BIN, "pp_pipeline"), "--stages", "8", "--pp-stride", "8", "--layers", "8",
               "--validate", "68:8"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        cmd = [os.path.join(BIN, "hybrid_3d"), "--tp", "2", "--pp", "2", "--dp", "2", "--validate", "12:4"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--tp/--pp/--dp", p.stderr)

    def test_one_refusal_among_worlds(self):
        # several worlds in one call: the refused one is named and sets the exit status
        cmd = [os.path.join(BIN, "tp_layer"), "--model", "tiny", "--tp", "4", "--validate", "8:8,3:3,16:8"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--validate 3:3: refused", p.stderr)
        self.assertEqual(p.stdout.count("arguments accepted"), 2)


class RunPlacement(unittest.TestCase):
    """The driver reads a run's placement from its first sweep's metadata;
    before that sweep has run (or when --steps leaves it out) the run is one
    node holding every rank, so TP spans the run."""
    def shapes_in(self, d, nranks):
        run = manifest.with_placement(manifest.Run(profile="quick", nranks=nranks, out=d),
                                      *manifest.placement_of_run(d))
        return manifest.shape(run, "tp_layer")["args"][:2], manifest.shape(run, "hybrid_3d")["args"][:6]

    def test_before_the_first_sweep(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(self.shapes_in(d, 4), (["--tp", "4"], ["--tp", "4", "--pp", "1", "--dp", "1"]))
            # a sweep that stopped before its header (a full disk): still nothing known
            open(os.path.join(d, "coll_sweep.csv"), "w").close()
            self.assertEqual(self.shapes_in(d, 4), (["--tp", "4"], ["--tp", "4", "--pp", "1", "--dp", "1"]))

    def test_from_the_first_sweep(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "coll_sweep.csv"), "w") as f:
                f.write("# nnodes: 2\n# ranks_per_node: 2,2\nbytes\n")  # as coll_sweep writes them
            self.assertEqual(manifest.placement_of_run(d), (2, 2))
            self.assertEqual(self.shapes_in(d, 4), (["--tp", "2"], ["--tp", "2", "--pp", "2", "--dp", "1"]))


if __name__ == "__main__":
    unittest.main()
