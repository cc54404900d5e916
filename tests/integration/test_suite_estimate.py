"""--dry-run's estimate (suite/estimate.py): sizes of a sweep, the matrix's
rounds (pinned to the schedule p2p_sweep --matrix runs, computed by
common/coll/p2p_schedule.c), each step bounded by its caps plus the launch and
never more than the step limit, steps skipped as the run skips them. Run by
test_suite_estimate.sh (python3 -m unittest)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from suite import estimate, manifest  # noqa: E402

ALL = {"--coll": ["c%d" % i for i in range(7)], "--mode": ["latency", "bw", "bibw"]}


def bounds(run):
    e = estimate.Estimate(run, ALL)
    return {s.name: e.bound(s) for s in manifest.plan(run)}


def world(nranks, rpn, profile="quick", **kw):
    return manifest.Run(profile=profile, nranks=nranks, dry_run=True, nodes=-(-nranks // rpn), ranks_per_node=rpn, **kw)


class Arithmetic(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(estimate.sweep_sizes(8, 1 << 20, 8), 6)  # 8, 64, 512, 4K, 32K, 256K
        self.assertEqual(estimate.sweep_sizes(8, 64 << 20, 4), 12)
        self.assertEqual(estimate.sweep_sizes(1 << 20, 1 << 20, 2), 1)
        # -f 1 or -b 0: the one size -b (a factor below 2 never grows); -b past -e: none
        self.assertEqual(estimate.sweep_sizes(8, 64, 1), 1)
        self.assertEqual(estimate.sweep_sizes(0, 64, 2), 1)
        self.assertEqual(estimate.sweep_sizes(128, 64, 2), 0)
        self.assertEqual(estimate.sweep_sizes(128, 64, 1), 0)
        # nodes: ranks over ranks per node, rounded up
        self.assertEqual([estimate.nodes_of(n, 8) for n in (1, 8, 9, 1024)], [1, 1, 2, 128])
        self.assertEqual(estimate.size("64M"), 64 << 20)
        # every suffix, as the benchmarks' size parser reads it (powers of 1024)
        self.assertEqual([estimate.size(t) for t in ("8", "2K", "3m", "1G", "2T")],
                         [8, 2 << 10, 3 << 20, 1 << 30, 2 << 40])

    def test_matrix_rounds(self):
        # (nodes - 1) x ranks_per_node + (ranks_per_node - 1) = N - 1 for even counts; one node: a
        # round-robin tournament, N - 1 (even) or N (odd); uneven last nodes as p2p_schedule.c counts them.
        for n, rpn, rounds in [(4, 2, 3), (1024, 8, 1023), (4, 4, 3), (5, 5, 5), (9, 4, 15), (10, 3, 12), (7, 2, 7),
                               (6, 6, 5), (12, 5, 20), (3, 1, 3), (100, 7, 112)]:
            self.assertEqual(estimate.matrix_rounds(n, rpn), rounds, (n, rpn))

    def test_matrix_rounds_closed_form(self):
        # The closed form against the schedule played round by round (the circle method), for
        # every small world; and at a million ranks it must answer at once (it used to loop).
        def played(nranks, rpn):
            sizes = [min(rpn, nranks - k) for k in range(0, nranks, rpn)]
            m, rounds = len(sizes) + len(sizes) % 2, 0
            for t in range(estimate.tournament_rounds(len(sizes))):
                meet = [(0 if i == 0 else 1 + (i - 1 + t) % (m - 1), 1 + (m - 2 - i + t) % (m - 1)) for i in range(m // 2)]
                rounds += max(max(sizes[x], sizes[y]) for x, y in meet if x < len(sizes) and y < len(sizes))
            return rounds + max(estimate.tournament_rounds(k) for k in sizes)
        for n in range(1, 41):
            for rpn in range(1, n + 1):
                self.assertEqual(estimate.matrix_rounds(n, rpn), played(n, rpn), (n, rpn))
        t0 = time.monotonic()
        self.assertEqual(estimate.matrix_rounds(1 << 20, 8), (1 << 20) - 1)
        self.assertEqual(estimate.matrix_rounds(10 ** 6 + 1, 10 ** 6 + 1), 10 ** 6 + 1)
        self.assertLess(time.monotonic() - t0, 0.5)

    def test_matrix_rounds_sampled(self):
        # Above 64 ranks p2p_sweep --matrix samples: every node pair's rails (1 sub-round), a cross-rail
        # shift in each of the first rpn - 1 node rounds (a second), every pair inside a node; the closed
        # form against the schedule played round by round, and test_p2p_schedule's counts (141 at 1024/8).
        def played(nranks, rpn):
            sizes = [min(rpn, nranks - k) for k in range(0, nranks, rpn)]
            m, rounds = len(sizes) + len(sizes) % 2, 0
            for t in range(estimate.tournament_rounds(len(sizes))):
                meet = [(0 if i == 0 else 1 + (i - 1 + t) % (m - 1), 1 + (m - 2 - i + t) % (m - 1)) for i in range(m // 2)]
                rounds += max(1 + (t + 1 < max(sizes[x], sizes[y])) for x, y in meet if x < len(sizes) and y < len(sizes))
            return rounds + max(estimate.tournament_rounds(k) for k in sizes)
        for n in range(1, 41):
            for rpn in range(1, n + 1):
                self.assertEqual(estimate.matrix_rounds(n, rpn, True), played(n, rpn), (n, rpn))
        for n, rpn, rounds in [(1024, 8, 141), (16, 4, 9), (24, 8, 13), (1 << 20, 8, (1 << 17) - 1 + 14)]:
            self.assertEqual(estimate.matrix_rounds(n, rpn, True), rounds, (n, rpn))
        self.assertFalse(estimate.matrix_sampled(64))
        self.assertTrue(estimate.matrix_sampled(65))

    def test_sweep_of_one_operation(self):
        # a sweep with neither --coll nor --mode (one operation, as a new benchmark's step): sizes x cap
        e = estimate.Estimate(world(2, 2), ALL)
        self.assertEqual(e.sweep(["-b", "8", "-e", "1M", "-f", "8", "--max-seconds-per-size", "0.25"]),
                         (estimate.launch_seconds(2, 2) + 6 * 0.25, "6 sizes x 0.25 s cap + 2.0 s launch"))
        self.assertEqual(e.sweep(["--coll", "a,b", "-b", "8", "-e", "64", "-f", "8", "--max-seconds-per-size", "1"])[1],
                         "2 collectives x 2 sizes x 1 s cap + 2.0 s launch")


class Steps(unittest.TestCase):
    def test_two_nodes(self):
        b = bounds(world(4, 2))
        launch = estimate.launch_seconds(4, 2)  # 2.1 s
        self.assertNotIn("acceptance", b)  # no --acceptance
        self.assertFalse([n for n in b if n.startswith("repro_")])  # no --reproduce
        self.assertEqual(b["coll_sweep"][0], launch + 7 * 6 * 0.25)
        self.assertEqual(b["coll_sweep_intra"][0], launch + 7 * 6 * 0.25)
        self.assertEqual(b["p2p_sweep"][0], launch + 3 * 6 * 0.25)  # 1, 16, .. 1M
        self.assertEqual(b["p2p_matrix"][0], launch + 3 * 2 * 1.0)  # 3 rounds
        # workloads: configurations x the quick profile's 2 s cap per configuration
        self.assertEqual(b["dp_allreduce"], (launch + 3 * 2 * 2.0, "3 gradient sizes x 2 overlaps x 2 s cap + 2.1 s launch"))
        self.assertEqual(b["tp_layer"][0], launch + 3 * 2 * 2.0)
        self.assertEqual(b["pp_pipeline"][0], launch + 2 * 4 * 2.0)
        self.assertEqual(b["hybrid_3d"], (launch + 3 * 2.0, "3 placements x 2 s cap + 2.1 s launch"))
        self.assertEqual(b["report"][0], 10)
        self.assertEqual(b["compute_probe"][0], 10)
        self.assertIn("7 collectives x 6 sizes x 0.25 s cap", b["coll_sweep"][1])

    def test_one_node(self):
        # no intra sweep (shapes.py's reason); the matrix's cap keeps its 61 rounds within half the step limit
        b = bounds(world(62, 62, acceptance="thr"))
        self.assertEqual(len(b), len(bounds(world(62, 62))) + 1)  # the acceptance step
        self.assertEqual(b["coll_sweep_intra"], (0, "skipped: one node: coll_sweep is already intra-node"))
        self.assertEqual(b["hybrid_3d"][0], estimate.launch_seconds(62, 62) + 3 * 2.0)  # TP 2 x PP 1 x DP 31
        self.assertEqual(b["p2p_matrix"], (2.05 + 61 * 2 * 0.369, "61 rounds x 2 sizes x 0.369 s cap + 2.0 s launch"))
        self.assertEqual(b["acceptance"][0], 10)

    def test_step_limit(self):
        # --full's sweep: 7 collectives x 26 sizes x 20 s is more than the hour a step may take
        b = bounds(world(2, 2, profile="full"))
        self.assertEqual(b["coll_sweep"], (3600, "the step limit (7 collectives x 26 sizes x 20 s cap would be 3642 s)"))

    def test_reproduce(self):
        # its all-reduce sweep (1M..64M by 2: 7 sizes at 0.5 s), 4 workloads, 3 scripts
        plain, more = bounds(world(62, 62)), bounds(world(62, 62, reproduce=True))
        self.assertEqual(sorted(set(more) - set(plain)), ["repro_busbw", "repro_dp", "repro_dp_scan", "repro_pp",
                                                          "repro_scan_setup", "repro_setup", "repro_tp", "repro_write"])
        self.assertEqual(more["repro_busbw"], (estimate.launch_seconds(62, 62) + 7 * 0.5,
                                               "1 collective x 7 sizes x 0.5 s cap + 2.0 s launch"))
        self.assertEqual(more["repro_pp"][0], 90)
        added = sum(v[0] for v in more.values()) - sum(v[0] for v in plain.values())
        self.assertAlmostEqual(added, 2.05 + 7 * 0.5 + 4 * 90 + 3 * 10)

    def test_reproduce_search_fits_the_step_limit(self):
        # repro_dp's 12 probes and its bucket row, each at the per-configuration cap, fit in the step limit
        for profile in ("quick", "default", "full"):
            run = world(2, 2, profile=profile, reproduce=True)
            args = next(s for s in manifest.plan(run) if s.name == "repro_dp").args(run)
            cap = float(args[args.index("--max-seconds-per-size") + 1])
            self.assertLess(13 * cap, run.limits.step_limit, profile)
            self.assertGreater(cap, 3, profile)  # a quiet probe (about 1.5 s) is never cut short

    def test_one_rank(self):
        b = bounds(world(1, 1))
        for name in ("p2p_sweep", "p2p_matrix", "plan_fit", "calibrate"):
            self.assertEqual(b[name], (0, "skipped: needs at least 2 ranks; this run has 1"))

    def test_total_line(self):
        # a line per step, then their sum (a step a recipe adds is summed too: no total of our own here)
        run = world(1024, 8, profile="default")
        e, steps = estimate.Estimate(run, ALL), manifest.plan(run)
        lines = e.lines(steps)
        self.assertIn("1024 ranks on 128 node(s) of 8", lines[0])
        self.assertEqual([l.split()[0] for l in lines[2:-1]], [s.name for s in steps])
        total = sum(seconds for _, seconds, _ in e.bounds(steps))
        self.assertGreater(total, 1000)
        self.assertEqual(lines[-1].split()[:3], ["total", "%.0f" % total, "s"])

    def test_cluster_scale_bounds(self):
        # The goals of docs/run_all.md's "Shapes at scale": 1,024 ranks, 8 a node, within
        # 30 min (default) and 5 min (quick); no workload at its step limit.
        for profile, most in (("default", 1800), ("quick", 300)):
            b = bounds(world(1024, 8, profile=profile))
            self.assertLessEqual(sum(v[0] for v in b.values()), most, profile)
            for name in ("dp_allreduce", "tp_layer", "pp_pipeline", "hybrid_3d"):
                self.assertLess(b[name][0], manifest.PROFILES[profile].step_limit, (profile, name))


class Configurations(unittest.TestCase):
    def test_axes(self):
        args = ["--overlap", "none,bucket", "--grad-bytes", "1M", "--grad-bytes", "1M,4M,16M"]  # the last one wins
        self.assertEqual(estimate.configurations(args, (("--grad-bytes", "size"), ("--overlap", "overlap"))),
                         (6, "3 sizes x 2 overlaps"))
        self.assertEqual(estimate.configurations(["--tp", "2"], (("--hidden-list", "hidden size"),)), (1, "1 hidden size"))

    def test_flag_axis(self):
        axes = (("--compare-placements", "placement"),)
        self.assertEqual(estimate.configurations(["--compare-placements"], axes), (3, "3 placements"))
        self.assertEqual(estimate.configurations(["--placement", "naive"], axes), (1, "1 placement"))

    def test_workload_bound(self):
        # 1024 ranks, default: pp_pipeline's 2 schedules x 5 m values at 10 s, plus the launch; capped by the limit
        run = world(1024, 8, profile="default")
        step = next(s for s in manifest.STEPS if s.name == "pp_pipeline")
        self.assertEqual(estimate.Estimate(run, ALL).bound(step),
                         (8.4 + 2 * 5 * 10.0, "2 schedules x 5 micro-batch counts x 10 s cap + 8.4 s launch"))
        short = estimate.Estimate(run, ALL)
        short.limit = 50
        self.assertEqual(short.bound(step)[0], 50)


if __name__ == "__main__":
    unittest.main()
