#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the PSD deadline and node budget from Python: the deadline_us and budget keywords
of mimodet.detector (the 'truncated' stats) and the mimo_detector block's deadline
('truncated' tags, truncated_slots()); the start_rows and radius keywords (the
depth-first search's starting bound and starting radius)."""

import os
import signal
import threading
import time

import numpy as np
import pmt
from gnuradio import gr_unittest

from gnuradio import mimodet
# The slot builders of the block's QA (the framer's mapping, a flowgraph around the block).
from qa_mimo_detector import make_slot, run_detector


def rayleigh(rng, n_mat, n_sym, n_tx, n_rx, mod, snr_db):
    """H (B, n_rx, n_tx), y (B, S, n_rx) of random symbols, noise_var."""
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod))
    H = ((rng.standard_normal((n_mat, n_rx, n_tx)) + 1j * rng.standard_normal((n_mat, n_rx, n_tx)))
         / np.sqrt(2)).astype(np.complex64)
    x = pts[rng.integers(0, len(pts), size=(n_mat, n_sym, n_tx))]
    nv = mimodet.snr_to_noise_var(snr_db, n_tx)
    n = np.sqrt(nv / 2) * (rng.standard_normal((n_mat, n_sym, n_rx))
                           + 1j * rng.standard_normal((n_mat, n_sym, n_rx)))
    y = (np.einsum("brt,bst->bsr", H, x) + n).astype(np.complex64)
    return H, y, np.float32(nv)


class qa_psd_deadline(gr_unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(5)

    def test_001_detector_keyword(self):
        H, y, nv = rayleigh(self.rng, 100, 7, 4, 4, "64qam", 6.0)
        exact = mimodet.detector("psd", 4, 4, "64qam", threads=1, budget=0)
        ref, ref_st = exact.detect_bits(H, y, nv, return_stats=True)
        self.assertEqual(int(ref_st["truncated"].sum()), 0)
        cut = mimodet.detector("psd", 4, 4, "64qam", threads=1, deadline_us=1.0, budget=0)
        bits, st = cut.detect_bits(H, y, nv, return_stats=True)
        flags = st["truncated"].reshape(100, 7).astype(bool)
        self.assertTrue(flags.any())
        self.assertTrue(np.isin(bits, (0, 1)).all())
        # Unflagged vectors had their whole exact search: the exact decisions.
        np.testing.assert_array_equal(bits[~flags], ref[~flags])

    def test_002_refused(self):
        with self.assertRaises(ValueError):
            mimodet.detector("mmse", 2, 2, deadline_us=10.0)
        with self.assertRaises(ValueError):
            mimodet.detector("psd", 2, 2, deadline_us=-1.0)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("fsd", 1.4, 2, 2, "16qam", 0, deadline_us=10.0)

    def test_005_node_budget_bounds_a_hostile_vector(self):
        # One 8x8 64QAM vector with y x 9 (far outside the constellation): the unbounded
        # exact search runs for minutes; the default budget ends it, flagged.
        H, y, nv = rayleigh(self.rng, 1, 1, 8, 8, "64qam", 20.0)
        det = mimodet.detector("psd", n_tx=8, n_rx=8, modulation="64qam", threads=1)
        t0 = time.monotonic()
        bits, st = det.detect_bits(H, 9 * y, 1.0, return_stats=True)
        elapsed = time.monotonic() - t0
        self.assertEqual(int(st["truncated"].sum()), 1)
        self.assertTrue(np.isin(bits, (0, 1)).all())
        # Bounded work, not a timing claim: the budget's path metrics.
        self.assertLess(int(st["evaluated"].max()), 3 * 2 ** 20 + 8)
        print("8x8 64QAM y x 9: %.1f ms, %d path metrics" % (elapsed * 1e3,
                                                            int(st["evaluated"].max())))
        for bad in (-2, 2 ** 40, 1.5):
            with self.assertRaises((ValueError, TypeError)):
                mimodet.detector("psd", 2, 2, budget=bad)
        with self.assertRaises(ValueError):
            mimodet.detector("fsd", 2, 2, budget=1000)

    def test_006_ctrl_c_interrupts_one_unbounded_vector(self):
        # budget=0: the same vector searches for minutes; SIGINT 0.2 s into the call
        # raises KeyboardInterrupt well within a second (the search looks at the signal
        # poll inside the vector, not only between vectors).
        H, y, nv = rayleigh(self.rng, 1, 1, 8, 8, "64qam", 20.0)
        det = mimodet.detector("psd", 8, 8, "64qam", threads=1, budget=0)
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        sent = []

        def send():
            time.sleep(0.2)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        sender = threading.Thread(target=send)
        sender.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                det.detect_bits(H, 9 * y, 1.0)
            latency = time.monotonic() - sent[0]
        finally:
            sender.join()
            signal.signal(signal.SIGINT, previous)
        self.assertLess(latency, 1.0)
        print("one unbounded vector: KeyboardInterrupt %.1f ms after SIGINT" % (latency * 1e3))

    def run_block(self, deadline_us, slots, snr_db, gain=1.0, **block):
        mhz, n_tx, n_rx, mod, cell_id = 1.4, 4, 4, "64qam", 9
        grid = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(mhz), n_tx, cell_id)
        nv = mimodet.snr_to_noise_var(snr_db, n_tx)
        gen = [make_slot(self.rng, grid, ns, n_rx, mod, nv) for ns in slots]
        det = mimodet.mimo_detector("psd", mhz, n_tx, n_rx, mod, cell_id, "cpu", False,
                                    threads=1, deadline_us=deadline_us, **block)
        out, tags = run_detector(det, mhz, n_rx, [g[1] * gain for g in gen], [g[2] for g in gen],
                                 [nv] * len(slots), slots, False)
        self.assertEqual(len(out), sum(len(g[0]) for g in gen))
        self.assertTrue(np.isin(out, (0, 1)).all())
        starts = [t.offset for t in tags if pmt.symbol_to_string(t.key) == "slot"]
        trunc = [t for t in tags if pmt.symbol_to_string(t.key) == "truncated"]
        return det, starts, trunc

    def test_003_block_tags(self):
        slots = [1, 2, 3]
        # No deadline and no stall bound: the exact search, no tag.
        det, starts, trunc = self.run_block(0.0, slots, 6.0, slot_limit_us=0.0)
        self.assertEqual(trunc, [])
        self.assertEqual(det.truncated_slots(), 0)
        det, starts, trunc = self.run_block(1.0, slots, 6.0)
        # Every slot of 4x4 64QAM at 6 dB runs out of 1 us; each is tagged once, on its
        # first item, with its count of truncated vectors.
        self.assertEqual(det.truncated_slots(), len(trunc))
        self.assertGreater(len(trunc), 0)
        for t in trunc:
            self.assertIn(t.offset, starts)
            self.assertGreater(pmt.to_long(t.value), 0)
        self.assertEqual(len({t.offset for t in trunc}), len(trunc))

    def test_007_block_stall_bound(self):
        # y x 30 (a gain step): every vector of the exact search is far outside the
        # constellation and runs to the node budget (a few ms each on one core, 500 per
        # slot: several seconds per slot with the budget alone). The block's stall bound
        # (slot_limit_us, default 2500 us, five slot times) ends each call after 2.5 ms per
        # slot it holds: 20 such slots take well under a second of detection (a bound of
        # 50 ms, plus the flowgraph's start and the vectors in flight when it expires),
        # where the budget alone would take minutes. All come out tagged.
        slots = list(range(20))
        t0 = time.monotonic()
        det, starts, trunc = self.run_block(0.0, slots, 20.0, gain=30.0)
        elapsed = time.monotonic() - t0
        self.assertEqual(det.truncated_slots(), len(slots))
        self.assertEqual(sorted(t.offset for t in trunc), sorted(starts))
        self.assertLess(elapsed, 5.0)
        print("20 hostile 1.4 MHz 4x4 64QAM slots through the block (bound 2.5 ms per "
              "slot): %.2f s" % elapsed)
        # A bound of 0.5 s per slot holds 4 such slots for about 2 s (the budget alone
        # would take minutes): the limit is the block's, per slot, whatever the number of
        # slots a call finds queued.
        t0 = time.monotonic()
        det, _, _ = self.run_block(0.0, slots[:4], 20.0, gain=30.0, slot_limit_us=5e5)
        slow = time.monotonic() - t0
        self.assertEqual(det.truncated_slots(), 4)
        self.assertGreater(slow, 4 * 0.5 * 0.9)
        self.assertLess(slow, 4 * 0.5 + 1.5)
        print("4 such slots with a bound of 0.5 s per slot: %.2f s" % slow)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("psd", 1.4, 2, 2, "16qam", 0, slot_limit_us=-1.0)
    def test_008_start_rows_keyword(self):
        # The depth-first search's starting bound: the same bits, fewer expanded nodes
        # in total (4x4 64QAM at 8 dB, where the search's own first leaves lie far from
        # the answer); bad values raise ValueError naming the keyword.
        H, y, nv = rayleigh(self.rng, 60, 7, 4, 4, "64qam", 8.0)
        plain = mimodet.detector("psd", 4, 4, "64qam", threads=1, start_rows=0)
        ref, ref_st = plain.detect_bits(H, y, nv, return_stats=True)
        for rows in (1, 2):
            det = mimodet.detector("psd", 4, 4, "64qam", threads=1, start_rows=rows)
            bits, st = det.detect_bits(H, y, nv, return_stats=True)
            np.testing.assert_array_equal(bits, ref)
            self.assertTrue((st["expanded"] <= ref_st["expanded"]).all())
            self.assertLess(int(st["expanded"].sum()), int(ref_st["expanded"].sum()))
        for bad in (-2, 9):
            with self.assertRaisesRegex(ValueError, "start_rows"):
                mimodet.detector("psd", 2, 2, start_rows=bad)
        with self.assertRaises(TypeError):
            mimodet.detector("psd", 2, 2, start_rows=1.5)
        with self.assertRaises(ValueError):
            mimodet.detector("fsd", 2, 2, start_rows=1)

    def test_009_radius_keyword(self):
        # The depth-first search's starting radius (a multiple of n_rx * noise_var):
        # the same bits as without one (radius=0) for small, default and large radii,
        # also given a noise variance 1e4 times too small; bad values raise ValueError
        # naming the parameter.
        H, y, nv = rayleigh(self.rng, 60, 7, 4, 4, "64qam", 8.0)
        plain = mimodet.detector("psd", 4, 4, "64qam", threads=1, radius=0)
        ref = plain.detect_bits(H, y, nv)
        for radius in (1e-3, 1.5, 10.0):
            det = mimodet.detector("psd", 4, 4, "64qam", threads=1, radius=radius)
            for scale in (1.0, 1e-4):
                bits, st = det.detect_bits(H, y, nv * scale, return_stats=True)
                np.testing.assert_array_equal(bits, ref)
                self.assertEqual(int(st["truncated"].sum()), 0)
        for bad in (-2.0, float("inf"), float("nan")):
            with self.assertRaisesRegex(ValueError, "psd_radius"):
                mimodet.detector("psd", 2, 2, radius=bad)
        with self.assertRaisesRegex(ValueError, "psd_radius"):
            mimodet.detector("fsd", 2, 2, radius=1.0)


if __name__ == "__main__":
    gr_unittest.run(qa_psd_deadline)
