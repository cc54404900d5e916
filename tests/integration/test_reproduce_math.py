"""scripts/reproduce.py's arithmetic: run by test_reproduce.sh (python3 -m unittest)."""
import math
import os
import sys
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

    def test_micro_batches_for_efficiency(self):
        self.assertEqual(r.micro_batches_for_efficiency(8, 32 / 39), 32)
        self.assertEqual(r.micro_batches_for_efficiency(2, 32 / 39), 5)
        self.assertEqual(r.micro_batches_for_efficiency(4, 32 / 39), 14)
        self.assertEqual(r.micro_batches_for_efficiency(1, 32 / 39), 1)

    def test_verdict(self):
        self.assertEqual(r.verdict(0.112 * 1.14, 0.112), "reproduced")
        self.assertEqual(r.verdict(0.112 * 0.86, 0.112), "reproduced")
        self.assertEqual(r.verdict(0.112 * 1.16, 0.112), "differs")
        self.assertEqual(r.verdict(None, 0.112), "differs")
        self.assertEqual(r.verdict(math.nan, 0.112), "differs")

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


if __name__ == "__main__":
    unittest.main()
