#!/usr/bin/env python3
"""invariants.py's rules seen from both sides, on rows made here: a row that
holds each rule passes, and the same row broken in one place is refused with a
message naming what broke. (Every integration test runs the checker on the real
files it leaves, the passing side; this is the refusing side, which no correct
run can show.)"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import invariants as inv  # noqa: E402


def errors(check, *args):
    ck = inv.Checker("t")
    check(ck, *args)
    return ck.errors


def tp_row(**kw):
    r = {"tp": "2", "nnodes": "1", "groups": "1", "link_class": "intra", "compute_us": "50", "comm_us": "20",
         "step_us": "80", "comm_bytes_per_rank": "4096"}
    r.update(kw)
    return r


def pp_row(**kw):
    r = {"micro_batches": "4", "stages": "2", "virtual_stages": "1", "link_class": "intra",
         "stage_wait_us": "12.5;3.0", "p2p_wait_us": "12.5"}
    r.update(kw)
    return r


class Signs(unittest.TestCase):
    def test_durations_and_bytes(self):
        ok = {"time_us": "3.5", "time_us_min": "0", "bytes": "8", "bw_GBps": "1.5", "iters": "10",
              "exposed_us": "-4.0", "overhead": "-0.01", "stage_busy_us": "1.0;2.0"}
        self.assertEqual(errors(inv.check_signs, [ok]), [])
        for k, v in (("time_us", "-3.5"), ("time_us_min", "-0.1"), ("bytes", "-8"), ("bw_GBps", "-1"),
                     ("iters", "-1"), ("stage_busy_us", "1.0;-2.0")):
            got = errors(inv.check_signs, [dict(ok, **{k: v})])
            self.assertTrue(got and f"{k} {v} is negative" in got[0], (k, got))


def coll_row(**kw):
    r = {"collective": "allreduce", "bytes": "8", "nranks": "2", "nnodes": "1", "link_class": "intra", "iters": "100",
         "time_us": "0.30", "time_us_min": "0.35", "time_us_max": "0.90", "time_us_median": "0.40",
         "time_us_p99": "0.80", "time_us_rankmax": "0.31", "algbw_GBps": str(8 / 0.30 / 1e3),
         "busbw_GBps": str(8 / 0.30 / 1e3), "sample_iters": "25", "time_us_sample_mean": "0.45"}
    r.update(kw)
    return r


class CollSweep(unittest.TestCase):
    def test_whole_loop_time_outside_the_samples(self):
        # the whole loop's time (0.30) below the sample pass's min: the sample mean is the one in [min, max]
        self.assertEqual(errors(inv.check_stats, [coll_row()]), [])
        got = errors(inv.check_stats, [coll_row(time_us_sample_mean="0.95")])
        self.assertTrue(any("mean time_us 0.95 outside [0.35, 0.9]" in e for e in got), got)

    def test_sample_pass_within_the_loop(self):
        self.assertEqual(errors(inv.check_coll_sweep, [coll_row()], 1), [])
        for bad in ("0", "101"):
            got = errors(inv.check_coll_sweep, [coll_row(sample_iters=bad)], 1)
            self.assertTrue(any(f"sample_iters {float(bad)} outside 1..iters 100.0" in e for e in got), got)

    def test_busbw_by_the_collective_factor(self):
        # allgather on 2 ranks: busbw = algbw / 2; a collective the checker has no factor for is refused, not skipped
        alg = 8 / 0.30 / 1e3
        self.assertEqual(errors(inv.check_coll_sweep, [coll_row(collective="allgather", busbw_GBps=str(alg / 2))], 1), [])
        got = errors(inv.check_coll_sweep, [coll_row(collective="allgather")], 1)
        self.assertTrue(any("busbw" in e and "allgather" in e for e in got), got)
        got = errors(inv.check_coll_sweep, [coll_row(collective="gather")], 1)
        self.assertTrue(any("'gather' has no nccl-tests busbw factor" in e for e in got), got)


class TpLayer(unittest.TestCase):
    def test_comm_time_where_bytes_move(self):
        self.assertEqual(errors(inv.check_tp_layer, [tp_row()], 1), [])
        self.assertEqual(errors(inv.check_tp_layer, [tp_row(tp="1", link_class="none", comm_us="0",
                                                            comm_bytes_per_rank="0")], 1), [])
        for broken in (tp_row(comm_us="0"), tp_row(tp="1", link_class="none", comm_bytes_per_rank="0")):
            got = errors(inv.check_tp_layer, [broken], 1)
            self.assertTrue(any("time without bytes or bytes without time" in e for e in got), got)
        got = errors(inv.check_tp_layer, [tp_row(compute_us="0")], 1)
        self.assertTrue(any("compute_us 0 is not positive" in e for e in got), got)


class PpPipeline(unittest.TestCase):
    def test_wait_is_the_slowest_stage_and_positive(self):
        self.assertEqual(errors(inv.check_pp_pipeline, [pp_row()], 1), [])
        self.assertEqual(errors(inv.check_pp_pipeline, [pp_row(stages="1", stage_wait_us="0.0", p2p_wait_us="0")],
                                1), [])
        got = errors(inv.check_pp_pipeline, [pp_row(p2p_wait_us="3.0")], 1)
        self.assertTrue(any("is not the largest of 2 stage_wait_us" in e for e in got), got)
        got = errors(inv.check_pp_pipeline, [pp_row(stage_wait_us="12.5", p2p_wait_us="12.5")], 1)
        self.assertTrue(any("is not the largest of 2" in e for e in got), got)
        got = errors(inv.check_pp_pipeline, [pp_row(stage_wait_us="0.0;0.0", p2p_wait_us="0")], 1)
        self.assertTrue(any("2 stages never waited on a message" in e for e in got), got)


class DpAllreduce(unittest.TestCase):
    def test_slowest_compute_with_one_iteration_or_one_rank(self):
        row = {"compute_us": "100", "step_us": "150", "exposed_us": "50", "overhead": "0.5", "nranks": "2",
               "iters": "1", "link_class": "intra", "compute_us_slowest": "100"}
        self.assertEqual(errors(inv.check_dp_allreduce, [row], 1), [])
        self.assertEqual(errors(inv.check_dp_allreduce, [dict(row, iters="5", compute_us_slowest="130")], 1), [])
        for broken in (dict(row, compute_us_slowest="130"), dict(row, iters="5", nranks="1", compute_us_slowest="130")):
            got = errors(inv.check_dp_allreduce, [broken], 1)
            self.assertTrue(any("compute_us_slowest 130.0 != compute_us 100.0" in e for e in got), got)


class Metadata(unittest.TestCase):
    def test_p2p_iterations_per_mode(self):
        rows = [{"mode": "latency"}, {"mode": "bw"}]
        meta = {"iterations": {"latency": "1000 (+100 warm-up)", "bw": "100 (+10 warm-up)"}}
        self.assertEqual(errors(inv.check_meta, meta, "p2p_sweep", rows), [])
        got = errors(inv.check_meta, {"iterations": {"latency": "1000"}}, "p2p_sweep", rows)
        self.assertEqual(got, ["t: meta.iterations says nothing of mode bw, which the rows measure"])

    def test_oversubscribed_on_one_node(self):
        meta = {"nnodes": 1, "nranks": 2, "topology": {"packages": 1, "cores": 2, "pus": 2}, "oversubscribed": False}
        self.assertEqual(errors(inv.check_meta, meta), [])
        self.assertEqual(errors(inv.check_meta, dict(meta, nranks=3, oversubscribed=True)), [])
        self.assertEqual(errors(inv.check_meta, dict(meta, nnodes=2, oversubscribed=True)), [])  # another node's cores
        self.assertEqual(errors(inv.check_meta, dict(meta, oversubscribed=True)),
                         ["t: meta.oversubscribed True for 2 ranks on one node of 2 cores"])


class Notes(unittest.TestCase):
    def test_load_shares(self):
        note = "load: other processes used %s%% of the busiest node's CPU time during the run, steal %s%% (x)"
        self.assertEqual(errors(inv.check_notes, [note % (16, 0), note % (100, 100), "wrong values: 0 OK"]), [])
        for shares in ((16, -100), (-1, 0), (101, 0), (16, "-0"), ("-0", 0)):
            got = errors(inv.check_notes, ["# note: " + note % shares])
            self.assertTrue(got and "outside 0-100%" in got[0], (shares, got))


if __name__ == "__main__":
    unittest.main()
