#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of mimodet.ofdm_demod, alone and behind mimodet.ofdm_sync."""

import os
import sys

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qa_ofdm_sync import make_signal  # noqa: E402  (numpy slot builder)


def slot_tag(offset, ns):
    return gr.tag_utils.python_to_tag((offset, pmt.intern("slot"), pmt.from_long(ns)))


def run_demod(bw, rx, tags, **kw):
    """rx (n_rx, len) with tags on stream 0 -> grids (n_rx, n_items, 7, n_sc), tags."""
    n_rx = rx.shape[0]
    num = mimodet.lte_numerology.from_bandwidth(bw)
    tb = gr.top_block()
    dem = mimodet.ofdm_demod(bw, n_rx, **kw)
    sinks = []
    for a in range(n_rx):
        src = blocks.vector_source_c(rx[a].tolist(), False, 1, tags if a == 0 else [])
        snk = blocks.vector_sink_c(7 * num.n_sc)
        tb.connect(src, (dem, a))
        tb.connect((dem, a), snk)
        sinks.append(snk)
    tb.run()
    grids = np.array([np.array(s.data(), dtype=np.complex64).reshape(-1, 7, num.n_sc)
                      for s in sinks])
    out_tags = [[(t.offset, pmt.to_long(t.value)) for t in s.tags()
                 if pmt.symbol_to_string(t.key) == "slot"] for s in sinks]
    return dem, grids, out_tags


class qa_ofdm_demod(gr_unittest.TestCase):

    def test_001_grids_pass_unchanged(self):
        # Framer-like slots straight into the demodulator: the grid comes back
        # element by element (unitary IFFT/FFT, back-off phase compensated).
        rng = np.random.default_rng(1)
        for bw in (1.4, 5, 20):
            # From 10 MHz the antennas are demodulated on several threads: 3 and 4
            # antennas split unevenly and evenly over them.
            for n_rx in (1, 2, 3, 4) if bw == 20 else (1, 2):
                num = mimodet.lte_numerology.from_bandwidth(bw)
                S = num.slot_samples()
                n_slots = 4 if bw == 20 else 12
                rx, grids, h = make_signal(bw, 1, n_rx, 9, n_slots, 3, 0, 0.0, 300, rng)
                tags = [slot_tag(i * S, (3 + i) % 20) for i in range(n_slots)]
                dem, out, otags = run_demod(bw, rx, tags)
                self.assertEqual(dem.fft_backoff(), num.cp_other // 4)
                self.assertEqual(out.shape[1], n_slots)
                for a in range(n_rx):
                    self.assertEqual(otags[a], [(i, (3 + i) % 20) for i in range(n_slots)])
                    ref = h[a, 0] * grids[:, 0]
                    self.assertLess(np.max(np.abs(out[a] - ref)), 1e-3, f"{bw} MHz")

    def test_002_backoff_linear_phase(self):
        # Without compensation the back-off b leaves exp(-j 2 pi bin(k) b / N).
        rng = np.random.default_rng(2)
        for bw, b in ((1.4, 3), (5, 0), (5, 20)):
            num = mimodet.lte_numerology.from_bandwidth(bw)
            S = num.slot_samples()
            rx, grids, h = make_signal(bw, 1, 1, 100, 3, 0, 0, 0.0, 300, rng)
            tags = [slot_tag(i * S, i) for i in range(3)]
            dem, out, _ = run_demod(bw, rx, tags, fft_backoff=b, compensate_backoff=False)
            self.assertEqual(dem.fft_backoff(), b)
            bins = np.array([num.bin(k) for k in range(num.n_sc)])
            ramp = np.exp(-2j * np.pi * bins * b / num.fft_size)
            ref = h[0, 0] * grids[:, 0] * ramp
            self.assertLess(np.max(np.abs(out[0] - ref)), 1e-3)
            # Same with compensation: the plain grid.
            _, out_c, _ = run_demod(bw, rx, tags, fft_backoff=b)
            self.assertLess(np.max(np.abs(out_c[0] - h[0, 0] * grids[:, 0])), 1e-3)

    def test_003_alignment_from_tags(self):
        # Junk before the first tag is dropped; a slot without tag counts on; a tag in
        # the middle of a slot re-aligns (the partial slot is dropped).
        rng = np.random.default_rng(3)
        bw = 1.4
        num = mimodet.lte_numerology.from_bandwidth(bw)
        S = num.slot_samples()
        rx, grids, h = make_signal(bw, 1, 1, 5, 8, 0, 0, 0.0, 300, rng)
        junk = (rng.standard_normal((1, 333)) + 0j).astype(np.complex64)
        part = rx[:, :200]  # a partial slot before slot 4
        sig = np.concatenate([junk, rx[:, :4 * S], part, rx[:, 4 * S:]], axis=1)
        # tags: slot 0 after the junk, none on slot 1, slots 2 and 3, a tag on the partial
        # slot's start is missing too (it is dropped by the realignment at slot 4).
        o = 333
        tags = [slot_tag(o, 0), slot_tag(o + 2 * S, 2), slot_tag(o + 3 * S, 3),
                slot_tag(o + 4 * S + 200, 4)]
        tags += [slot_tag(o + (i + 4) * S + 200, i + 4) for i in range(1, 4)]
        _, out, otags = run_demod(bw, sig, tags)
        # slots 0..3, then (realigned) 4..7
        self.assertEqual([v for _, v in otags[0]], list(range(8)))
        self.assertEqual(out.shape[1], 8)
        self.assertLess(np.max(np.abs(out[0] - h[0, 0] * grids[:, 0])), 1e-3)

    def test_004_behind_ofdm_sync(self):
        # Offset, CFO 0.3, 30 dB: sync + demod give the transmitted grids up to one
        # complex gain per slot and antenna (channel x CFO-correction phase).
        for bw, n_rx, seed in ((1.4, 2, 5), (5, 1, 6), (20, 2, 7)):
            rng = np.random.default_rng(seed)
            num = mimodet.lte_numerology.from_bandwidth(bw)
            n_slots = 12 if bw == 20 else 20
            offset = int(rng.integers(1000, 20001))
            rx, grids, h = make_signal(bw, 1, n_rx, 33, n_slots, 0, offset, 0.3, 30, rng,
                                       tail=num.slot_samples())
            tb = gr.top_block()
            sync = mimodet.ofdm_sync(bw, n_rx, 33)
            dem = mimodet.ofdm_demod(bw, n_rx)
            sinks = []
            for a in range(n_rx):
                src = blocks.vector_source_c(rx[a].tolist(), False)
                snk = blocks.vector_sink_c(7 * num.n_sc)
                tb.connect(src, (sync, a), (dem, a), snk)
                sinks.append(snk)
            tb.run()
            for a in range(n_rx):
                Y = np.array(sinks[a].data()).reshape(-1, 7, num.n_sc)
                ns = [pmt.to_long(t.value) for t in sinks[a].tags()]
                self.assertEqual(ns, [i % 20 for i in range(len(Y))])
                self.assertGreaterEqual(len(Y), n_slots - 1)
                for i, y in enumerate(Y[:n_slots]):
                    x = grids[i, 0]
                    g = np.vdot(x, y) / np.vdot(x, x)
                    evm = np.sum(np.abs(y - g * x) ** 2) / np.sum(np.abs(g * x) ** 2)
                    self.assertLess(10 * np.log10(evm), -25, f"{bw} MHz slot {i}")
                    self.assertAlmostEqual(abs(g), 1.0, delta=0.05)

    def test_005_parameters(self):
        with self.assertRaises(ValueError):
            mimodet.ofdm_demod(2, 1)
        with self.assertRaises(ValueError):
            mimodet.ofdm_demod(5, 9)
        with self.assertRaises(ValueError):
            mimodet.ofdm_demod(1.4, 1, 10)  # > cp_other = 9
        self.assertEqual(mimodet.ofdm_demod(20, 1).fft_backoff(), 36)
        self.assertEqual(mimodet.ofdm_demod(20, 1).vlen(), 8400)


if __name__ == "__main__":
    gr_unittest.run(qa_ofdm_demod)
