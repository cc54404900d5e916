"""plan's printed figures recomputed from the other figures it prints: run by
test_plan_figures.sh (python3 -m unittest). A figure that no longer follows
from its inputs (a wrong factor, a wrong unit, a row too many) fails here even
when the verdicts around it still read right. Printed numbers are rounded, so
each check carries every input's rounding (half its last digit) through the
formula and asks that the printed result fall within that range."""
import itertools
import os
import re
import subprocess
import unittest

PLAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", os.environ.get("BUILD", "build"), "bin",
                    "plan")


def plan(*args, rc=0):
    p = subprocess.run([PLAN, *args], capture_output=True, text=True, timeout=60)
    if p.returncode != rc:
        raise AssertionError(f"plan {' '.join(args)}: exit {p.returncode}, expected {rc}\n{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def half(s):
    """Half a unit of the last printed digit of s."""
    s = s.lower().split("e")[0]
    return 0.5 * 10 ** -(len(s.split(".")[1]) if "." in s else 0)


def span(f, *printed):
    """[lo, hi] of f over the rounding box of its printed inputs."""
    vals = [[float(s) - half(s), float(s) + half(s)] for s in printed]
    out = [f(*c) for c in itertools.product(*vals)]
    return min(out), max(out)


class Figures(unittest.TestCase):
    def agrees(self, shown, f, *printed, slack=0.0):
        """shown (a printed string) is f(printed inputs), within rounding."""
        lo, hi = span(f, *printed)
        v, h = float(shown), half(shown) + slack
        self.assertTrue(lo - h <= v <= hi + h, f"printed {shown}, recomputed {lo:.6g}..{hi:.6g} from {printed}")

    def find(self, pattern, text):
        m = re.search(pattern, text)
        self.assertIsNotNone(m, f"no match for {pattern!r} in:\n{text}")
        return m.groups()


N = r"([0-9.]+)"


class Reproduce(Figures):
    @classmethod
    def setUpClass(cls):
        cls.out = plan("--reproduce")
        cls.blocks = {m.group(1): m.group(0) for m in re.finditer(r"(?ms)^\[([A-Z0-9-]+)\].*?(?=^\[|\Z)", cls.out)}

    def test_dp_volume_sentence(self):
        b = self.blocks["DP-1"]
        bound, exact = self.find(r"computed +" + N + r" GB; exact .* = " + N + " GB", b)
        gb, less = self.find(r"exact n=8 volume \(" + N + " GB, " + N + "% less", b)
        self.agrees(gb, lambda e: e, exact)
        self.agrees(less, lambda e, bd: 100 * (1 - e / bd), exact, bound)

    def test_dp_overhead_follows_dp_time(self):
        t_bound, t_exact = self.find(r"computed +" + N + " s; exact ring .* = " + N + " s", self.blocks["DP-2"])
        over, step, ring = self.find(r"computed +" + N + "%; over the step .* = " + N + "%; exact ring " + N + "%",
                                     self.blocks["DP-3"])
        self.agrees(over, lambda t: 100 * t / 5.0, t_bound)
        self.agrees(step, lambda t: 100 * t / (5.0 + t), t_bound)
        self.agrees(ring, lambda t: 100 * t / 5.0, t_exact)

    def test_pp_efficiency_and_bubble(self):
        eff, bub, ideal = self.find(r"computed +" + N + r"%; bubble \(p-1\)/\(m\+p-1\) = " + N +
                                    r"% of the step = \(p-1\)/m = " + N + "%", self.blocks["PP-1"])
        self.agrees(eff, lambda: 100 * 32 / 39)
        self.agrees(bub, lambda: 100 * 7 / 39)
        self.agrees(ideal, lambda: 100 * 7 / 32)

    def test_pp_parameters_per_stage(self):
        per, gb, gpu = self.find(r"computed +" + N + r"e9 per stage \(x16 B = " + N + r" GB .* per stage, " + N +
                                 r" GB per GPU at t=8\)", self.blocks["PP-2"])
        self.agrees(per, lambda: 70 / 8)
        self.agrees(gb, lambda p: 16 * p, per, slack=0.05)
        self.agrees(gpu, lambda g: g / 8, gb)

    def test_tp_rule_percentages(self):
        b = self.blocks["RULE-TP"]
        # The shape it computes with is the one it names: llama-70b's layer, bf16 activations.
        bb, s, h, mb = self.find(r"llama-70b \(b=(\d+), s=(\d+), h=(\d+), bf16\): 4 ring allreduces of " + N + " MB", b)
        self.assertEqual((bb, s, h), ("1", "4096", "8192"), "RULE-TP's layer is not llama-70b's at b=1")
        self.agrees(mb, lambda: 1 * 4096 * 8192 * 2 / 1e6)
        comp, nvl, pn, eth, pe = self.find(r"compute " + N + " ms; TP comm " + N + r" ms over NVLink \(" + N +
                                           r"%\) vs " + N + r" ms over 100 GbE \(" + N + r"%\)", b)
        self.agrees(pn, lambda n, c: 100 * n / c, nvl, comp)
        self.agrees(pe, lambda e, c: 100 * e / c, eth, comp)
        (x,) = self.find(r"\(([0-9.]+)x NVLink's\)", b)
        self.agrees(x, lambda e, n: e / n, eth, nvl)

    def test_rankings_are_the_planners(self):
        """Each 3D figure's table is what plan itself ranks for the job its "assumes" line states."""
        for name in ("3D-1", "3D-2"):
            with self.subTest(name):
                b = self.blocks[name]
                model, cluster, gb = self.find(r"assumes +(\S+) preset, (\S+), global batch (\d+) ", b)
                (gpus,) = self.find(r"enumerate t\*p\*d = (\d+),", b)
                self.assertIn("b=1, bf16, 1F1B, sequence parallel, selective recompute", b)
                cli = plan("--model", model, "--cluster", cluster, "--gpus", gpus, "--global-batch", gb,
                           "--micro-batch", "1", "--dtype", "bf16", "--schedule", "1f1b", "--sp", "on",
                           "--recompute", "selective", "--top", "5")
                table = r"(?m)^[* ] +\d+ +\d+ +\d+ +\d+ +\d+ +\S+ +\S+ +.*$"
                self.assertEqual([r[1:] for r in re.findall(table, b)], [r[1:] for r in re.findall(table, cli)],
                                 f"{name}: the figure's ranking is not plan's for its stated job\n{cli}")

    def test_rankings(self):
        for name in ("3D-1", "3D-2"):
            with self.subTest(name):
                b = self.blocks[name]
                rows = re.findall(r"(?m)^([* ]) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +\S+ +\S+ +" +
                                  r" +".join([r"([0-9.]+)"] * 7) + r"\s*$", b)
                self.assertEqual([int(r[1]) for r in rows], [1, 2, 3, 4, 5], f"the top 5, ranked:\n{b}")
                steps = [float(r[6]) for r in rows]
                self.assertEqual(steps, sorted(steps))
                for r in rows:
                    t, p, d, m = (int(x) for x in r[2:6])
                    step, comp, tp, pp, dp, bub = r[6:12]
                    # step = compute x (1 + tp + pp + dp) + the bubble, which is bubble% of the step
                    self.agrees(step, lambda c, a, b_, e, u: c * (1 + a / 100 + b_ / 100 + e / 100) / (1 - u / 100),
                                comp, tp, pp, dp, bub)
                    # the fill/drain is (p-1) slots when the stages are even; the last stage (the logits)
                    # is the slowest, so the others' slots are shorter and the bubble a little less
                    lo, hi = span(lambda c, a, b_, s: 100 * c * (1 + a / 100 + b_ / 100) * (p - 1) / m / s,
                                  comp, tp, pp, step)
                    self.assertTrue((p == 1) == (float(bub) == 0) and float(bub) <= hi + half(bub),
                                    f"{name}: bubble {bub}% of step, at most {hi:.4g}% (even stages), 0 only at p = 1")
                marked = [r for r in rows if r[0] == "*"]
                self.assertEqual(len(marked), 1, "the documents' configuration is marked")
                doc, best = marked[0], rows[0]
                g = self.find(r"ranks (\d+), ([0-9.]+)% behind \((\d+),(\d+),(\d+)\): vs it, TP ([-+0-9.]+), "
                              r"bubble ([-+0-9.]+), DP ([-+0-9.]+), PP ([-+0-9.]+) points of compute; memory "
                              r"([0-9.]+) vs ([0-9.]+) GB/GPU", b)
                self.assertEqual(g[0], doc[1])
                self.assertEqual(g[2:5], best[2:5])
                self.agrees(g[1], lambda s, s1: 100 * (s / s1 - 1), doc[6], best[6])
                for shown, col in ((g[5], 8), (g[7], 10), (g[8], 9)):
                    self.agrees(shown, lambda a, b_: a - b_, doc[col], best[col])
                self.agrees(g[6], lambda bd, sd, cd, bb, sb, cb: bd * sd / cd - bb * sb / cb,
                            doc[11], doc[6], doc[7], best[11], best[6], best[7])
                self.agrees(g[9], lambda x: x, doc[12], slack=0.5)
                self.agrees(g[10], lambda x: x, best[12], slack=0.5)


class OneConfiguration(Figures):
    """The breakdown of one configuration: every figure from the ones above it."""

    def check(self, *args, v=1):
        out = self.run_plan(args)
        t, p, d, m = (int(x) for x in self.find(r"configuration t=(\d+) p=(\d+) d=(\d+), m=(\d+)", out))
        fwd, bwd, tp, pp = self.find(r"fwd " + N + " ms, bwd " + N + " ms, TP comm " + N + " ms, PP comm " + N, out)
        k, slot, fill, dp, step = self.find(r"slot \+ fill/drain \+ DP allreduce = " + N + " x " + N + " ms \\+ " + N +
                                            " ms \\+ " + N + " ms = " + N, out)
        ideal, bub, pct, slots = self.find(r"ideal compute " + N + " s; bubble " + N + " s = " + N + "% of step, " + N +
                                           " slots", out)
        w, g, o, a, tot = self.find(r"weights " + N + r" \+ grads " + N + r" \+ optimizer " + N + r" \+ activations " +
                                    N + " = " + N + " GB", out)
        self.assertEqual(int(k), m)
        self.agrees(slot, lambda *x: sum(x), fwd, bwd, tp, pp)
        self.agrees(step, lambda s, f, c: m * s / 1e3 + f / 1e3 + c / 1e3, slot, fill, dp)
        self.agrees(ideal, lambda f, b: m * (f + b) / 1e3, fwd, bwd)
        self.agrees(bub, lambda f: f / 1e3, fill)
        self.agrees(pct, lambda b, s: 100 * b / s, bub, step)
        self.agrees(slots, lambda f, s: f / s, fill, slot)
        # the other stages are no slower than the slowest: at most (p-1)/v of its slots, none at p = 1
        self.assertTrue(float(slots) <= (p - 1) / v + half(slots) and (float(slots) == 0) == (p == 1), slots)
        if v == 1:
            (eff,) = self.find(r"efficiency m/\(m\+p-1\) = " + N + "%", out)
            self.agrees(eff, lambda: 100 * m / (m + p - 1))
        else:
            self.assertIn(f"v={v} virtual stages", out)
        params = 1.3e9  # gpt-1.3b's nominal size: bf16 weights and grads 2 B, fp32 master/m/v 12 B, over t*p
        self.agrees(w, lambda: 2 * params / (t * p) / 1e9)
        self.agrees(g, lambda: 2 * params / (t * p) / 1e9)
        self.agrees(o, lambda: 12 * params / (t * p) / 1e9)
        self.agrees(tot, lambda *x: sum(x), w, g, o, a)
        return out

    def run_plan(self, args):
        p = subprocess.run([PLAN, "--model", "gpt-1.3b", "--cluster", "a100", "--gpus", "16", *args],
                           capture_output=True, text=True, timeout=60)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return p.stdout

    def test_schedules(self):
        self.check("--tp", "2", "--pp", "2", "--dp", "4")
        self.check("--tp", "2", "--pp", "4", "--dp", "2", "--schedule", "gpipe")
        self.check("--tp", "4", "--pp", "1", "--dp", "4")
        self.check("--tp", "2", "--pp", "4", "--dp", "2", "--schedule", "interleaved", "--interleave", "3", v=3)

    def test_interleave_defaults_to_two(self):
        base = ("--tp", "2", "--pp", "2", "--dp", "4", "--schedule", "interleaved")
        self.assertEqual(self.check(*base, v=2), self.run_plan(base + ("--interleave", "2")))

    def test_global_batch_not_a_multiple(self):
        cfg = ("--tp", "2", "--pp", "2", "--dp", "4", "--global-batch")
        self.assertIn("REJECTED: global batch 18 is not a multiple of d*b=4", self.run_plan(cfg + ("18",)))
        self.assertNotIn("REJECTED", self.run_plan(cfg + ("16",)))


class Options(Figures):
    def fwd_ms(self, *args):
        out = plan("--hidden", "64", "--layers", "2", "--seq", "16", "--global-batch", "8", "--gpus", "1", *args)
        return out, float(self.find(r"fwd ([0-9.]+) ms", out)[0])

    def test_tflops_below_one(self):
        _, at1 = self.fwd_ms("--heads", "4", "--tflops", "1")
        out, at_half = self.fwd_ms("--heads", "4", "--tflops", "0.5")
        self.assertIn("0.5 TFLOP/s", out)
        self.assertGreater(at_half, 1.5 * at1, "half the GEMM rate, a slower forward")
        plan("--hidden", "64", "--layers", "2", "--heads", "4", "--seq", "16", "--gpus", "1", "--tflops", "0", rc=2)

    def test_one_head(self):
        out, _ = self.fwd_ms("--heads", "1")
        self.assertIn("heads=1 ", out)
        plan("--hidden", "64", "--layers", "2", "--heads", "3", "--seq", "16", "--gpus", "1", rc=2)

    def test_pp_simulate(self):
        for sched in ("gpipe", "1f1b"):
            for p, m, tf, tb in ((4, 8, 100, 200), (3, 5, 7.5, 12.25), (1, 3, 2, 3)):
                with self.subTest(sched=sched, p=p, m=m):
                    out = plan("--pp-simulate", f"{p},{m},{tf},{tb},0", "--schedule", sched)
                    step, ideal, eff, theory = self.find(r"step_us " + N + " ideal_us " + N + " efficiency " + N +
                                                         " efficiency_theory " + N, out)
                    self.agrees(step, lambda: (m + p - 1) * (tf + tb))
                    self.agrees(ideal, lambda: m * (tf + tb))
                    self.agrees(eff, lambda s, i: i / s, step, ideal)
                    self.agrees(theory, lambda: m / (m + p - 1))
        # interleaved over v chunks: each chunk runs 1/v of the stage, the bubble shrinks v-fold
        for v, p, m in ((2, 4, 8), (3, 4, 12), (4, 2, 6)):
            with self.subTest(sched="interleaved", v=v, p=p, m=m):
                out = plan("--pp-simulate", f"{p},{m},{tf},{tb},0", "--schedule", "interleaved", "--interleave", str(v))
                step, ideal, eff, theory = self.find(r"step_us " + N + " ideal_us " + N + " efficiency " + N +
                                                     " efficiency_theory " + N, out)
                self.agrees(step, lambda: (m + (p - 1) / v) * (tf + tb))
                self.agrees(ideal, lambda: m * (tf + tb))
                self.agrees(theory, lambda: m * v / (m * v + p - 1))
        plan("--pp-simulate", "4,6,100,200,0", "--schedule", "interleaved", rc=2)  # m not a multiple of p
        plan("--pp-simulate", "1024,9765,1,1,0")  # P x M at its bound, 10^7 (tests/bad_input: one more M)


DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "plan.md")


class PresetTables(unittest.TestCase):
    """docs/plan.md's preset tables are what plan uses: each row against plan's own "cluster" line."""

    def cluster_line(self, name):
        out = plan("--model", "gpt-1.3b", "--cluster", name, "--gpus", "8", "--top", "1")
        m = re.search(r"(?m)^cluster \S+: (\d+) GPU/node, intra ([0-9.]+) GB/s ([0-9.]+) us, inter ([0-9.]+) GB/s "
                      r"([0-9.]+) us, ([0-9.]+) TFLOP/s sustained GEMM, ([0-9.]+) GB/s memory, ([0-9.]+) GB$", out)
        self.assertIsNotNone(m, out)
        return [float(x) for x in m.groups()]

    def test_nodes(self):
        rows = re.findall(r"(?m)^\| (a100|h100) \| (\d+) \| ([0-9.]+) GB/s, ([0-9.]+) us \(NVLink\d\) \| [0-9.]+ -> "
                          r"([0-9.]+) TFLOP/s \| ([0-9.]+) GB/s \| ([0-9.]+) GB \|$", open(DOC).read())
        self.assertEqual([r[0] for r in rows], ["a100", "h100"])
        for name, gpn, bw, us, gemm, hbm, mem in rows:
            with self.subTest(name):
                got = self.cluster_line(name)
                self.assertEqual((got[0], got[1], got[2], got[6], got[7]),
                                 (float(gpn), float(bw), float(us), float(hbm), float(mem)))
                self.assertEqual(round(got[5]), float(gemm))  # the doc rounds the GEMM rate

    def test_networks(self):
        text = open(DOC).read()
        ib = re.search(r"(?m)^\| ib100 / ib200 / ib400 \| ([0-9.]+) / ([0-9.]+) / ([0-9.]+) GB/s \| ([0-9.]+) us \|$", text)
        eth = re.search(r"(?m)^\| eth100 \| ([0-9.]+) GB/s \| ([0-9.]+) us \|$", text)
        opa = re.search(r"(?m)^\| opa: .*\(([0-9.]+) GB/s with 8\) \| ([0-9.]+) us \|$", text)
        self.assertTrue(ib and eth and opa, "a network row of docs/plan.md is missing")
        want = {"a100-ib100": (ib[1], ib[4]), "a100-ib200": (ib[2], ib[4]), "a100-ib400": (ib[3], ib[4]),
                "a100-eth100": eth.groups(), "a100-opa": opa.groups()}
        for name, (bw, us) in want.items():
            with self.subTest(name):
                self.assertEqual(self.cluster_line(name)[3:5], [float(bw), float(us)])


if __name__ == "__main__":
    unittest.main()
