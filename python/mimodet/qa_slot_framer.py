#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of mimodet.slot_framer against an independent numpy construction of the grids
(docs/SLOT_LAYOUT.md) from mimodet.lte_grid."""

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

Q = {"qpsk": 2, "16qam": 4, "64qam": 6}


def reference_grids(bw, n_tx, mod, cell, bits, n_slots):
    """(n_slots, n_tx, 7, n_sc) grids built in numpy from lte_grid's maps."""
    num = mimodet.lte_numerology.from_bandwidth(bw)
    g = mimodet.lte_grid(num, n_tx, cell)
    n_sc, q = num.n_sc, Q[mod]
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod))
    weights = 1 << np.arange(q - 1, -1, -1)  # b0 most significant
    K = mimodet.re_kind
    out = np.zeros((n_slots, n_tx, 7, n_sc), dtype=np.complex64)
    pos = 0
    for s in range(n_slots):
        ns = s % 20
        data = np.array(g.data_elements(ns))
        nb = len(data) * n_tx * q
        labels = (bits[pos:pos + nb].reshape(len(data), n_tx, q) * weights).sum(axis=2)
        pos += nb
        for t in range(n_tx):
            grid = np.zeros(7 * n_sc, dtype=np.complex64)
            grid[data] = pts[labels[:, t]]
            for l in range(7):
                for k in range(n_sc):
                    kind = g.kind(ns, t, l, k)
                    if kind == K.crs:
                        grid[l * n_sc + k] = g.crs_value(ns, t, l, k)
                    elif kind == K.pss and t == 0:
                        grid[l * n_sc + k] = g.pss()[k - n_sc // 2 + 31]
                    elif kind == K.sss and t == 0:
                        grid[l * n_sc + k] = g.sss(ns)[k - n_sc // 2 + 31]
                    elif kind != K.data:
                        assert grid[l * n_sc + k] == 0
            out[s, t] = grid.reshape(7, n_sc)
    assert pos == len(bits)
    return out


def bits_for(framer, n_slots, rng):
    nb = sum(framer.bits_per_slot(s % 20) for s in range(n_slots))
    return rng.integers(0, 2, nb).astype(np.uint8)


class qa_slot_framer(gr_unittest.TestCase):

    def setUp(self):
        self.rng = np.random.default_rng(2026)

    def run_framer(self, framer, n_tx, bits):
        tb = gr.top_block()
        src = blocks.vector_source_b(bits.tolist(), False)
        sinks = [blocks.vector_sink_c(framer.vlen()) for _ in range(n_tx)]
        tb.connect(src, framer)
        for t, s in enumerate(sinks):
            tb.connect((framer, t), s)
        tb.run()
        data = [np.array(s.data(), dtype=np.complex64) for s in sinks]
        tags = [[(tg.offset, pmt.symbol_to_string(tg.key), pmt.to_python(tg.value))
                 for tg in s.tags()] for s in sinks]
        return data, tags

    def grids(self, bw, n_tx, mod, cell, n_slots):
        f = mimodet.slot_framer(bw, n_tx, mod, cell, True)
        bits = bits_for(f, n_slots, self.rng)
        data, tags = self.run_framer(f, n_tx, bits)
        num = mimodet.lte_numerology.from_bandwidth(bw)
        self.assertEqual(f.vlen(), 7 * num.n_sc)
        self.assertEqual(f.items_per_slot(), 1)
        got = np.stack([d.reshape(n_slots, 7, num.n_sc) for d in data], axis=1)
        return f, bits, got, tags

    def test_001_freq_grid_matches_numpy(self):
        # 2 and 4 antennas, 16QAM; the 1.4 MHz run wraps the frame (ns 19 -> 0) and both
        # include slots 0 and 10 (PSS/SSS, fewer data elements).
        for bw, n_tx, cell, n_slots in [(1.4, 2, 7, 22), (5, 4, 123, 12), (3, 2, 0, 3)]:
            f, bits, got, tags = self.grids(bw, n_tx, "16qam", cell, n_slots)
            ref = reference_grids(bw, n_tx, "16qam", cell, bits, n_slots)
            self.assertEqual(got.shape, ref.shape)
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6,
                                       err_msg=f"{bw} MHz {n_tx} tx")
            self.assertEqual(f.slots_sent(), n_slots)
            self.assertEqual(f.invalid_bits(), 0)
            # Unit mean data energy, unit-magnitude CRS (SLOT_LAYOUT.md scaling).
            g = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(bw), n_tx, cell)
            data = np.array(g.data_elements(1))
            self.assertAlmostEqual(np.mean(np.abs(got[1].reshape(n_tx, -1)[:, data]) ** 2),
                                   1.0, delta=0.1)
            crs = np.array(g.crs_elements(1, 0))
            np.testing.assert_allclose(np.abs(got[1, 0].reshape(-1)[crs]), 1.0, atol=1e-6)

    def test_002_other_modulations(self):
        for bw, n_tx, mod in [(1.4, 1, "qpsk"), (1.4, 4, "64qam")]:
            f, bits, got, _ = self.grids(bw, n_tx, mod, 11, 11)
            ref = reference_grids(bw, n_tx, mod, 11, bits, 11)
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)

    def test_003_slot_tags(self):
        n_slots = 23
        f, _, _, tags = self.grids(1.4, 2, "16qam", 3, n_slots)
        for t in range(2):
            self.assertEqual(tags[t], [(s, "slot", s % 20) for s in range(n_slots)])
        # Time mode: one tag per slot at its first sample.
        f = mimodet.slot_framer(1.4, 2, "qpsk", 3, False)
        bits = bits_for(f, 4, self.rng)
        _, tags = self.run_framer(f, 2, bits)
        S = mimodet.lte_numerology.from_bandwidth(1.4).slot_samples()
        for t in range(2):
            self.assertEqual(tags[t], [(s * S, "slot", s) for s in range(4)])

    def test_004_time_mode_fft_gives_grid(self):
        for bw, n_tx, cell, n_slots in [(1.4, 2, 5, 12), (5, 4, 301, 3), (5, 2, 17, 11)]:
            num = mimodet.lte_numerology.from_bandwidth(bw)
            N, n_sc, S = num.fft_size, num.n_sc, num.slot_samples()
            ff = mimodet.slot_framer(bw, n_tx, "16qam", cell, True)
            ft = mimodet.slot_framer(bw, n_tx, "16qam", cell, False)
            self.assertEqual(ft.items_per_slot(), S)
            self.assertEqual(ft.vlen(), 1)
            bits = bits_for(ff, n_slots, self.rng)
            grids, _ = self.run_framer(ff, n_tx, bits)
            time_out, _ = self.run_framer(ft, n_tx, bits)
            bins = np.array([num.bin(k) for k in range(n_sc)])
            unused = np.setdiff1d(np.arange(N), bins)
            for t in range(n_tx):
                x = time_out[t]
                self.assertEqual(len(x), n_slots * S)
                grid = grids[t].reshape(n_slots, 7, n_sc)
                for s in range(n_slots):
                    pos = s * S
                    for l in range(7):
                        cp = num.cp_length(l)
                        sym = x[pos + cp:pos + cp + N]
                        # Cyclic prefix = the symbol's tail.
                        np.testing.assert_allclose(x[pos:pos + cp], sym[N - cp:], atol=1e-6)
                        X = np.fft.fft(sym.astype(np.complex128)) / np.sqrt(N)
                        np.testing.assert_allclose(X[bins], grid[s, l], rtol=0, atol=2e-5,
                                                   err_msg=f"{bw} MHz t{t} s{s} l{l}")
                        self.assertLess(np.max(np.abs(X[unused])), 2e-5)
                        pos += cp + N
                    self.assertEqual(pos, (s + 1) * S)

    def test_005_partial_slot_dropped_and_exact_consumption(self):
        f = mimodet.slot_framer(1.4, 2, "qpsk", 0, True)
        n = f.bits_per_slot(0) + f.bits_per_slot(1) + f.bits_per_slot(2) - 1
        bits = self.rng.integers(0, 2, n).astype(np.uint8)
        data, tags = self.run_framer(f, 2, bits)
        self.assertEqual(len(data[0]), 2 * f.vlen())
        self.assertEqual(f.slots_sent(), 2)
        self.assertEqual(bits_for(f, 20, self.rng).size,
                         sum(f.bits_per_slot(ns) for ns in range(20)))
        self.assertLess(f.bits_per_slot(0), f.bits_per_slot(1))
        self.assertEqual(f.bits_per_slot(0), f.bits_per_slot(10))

    def test_006_invalid_bytes_use_low_bit_and_are_counted(self):
        f_ok = mimodet.slot_framer(1.4, 1, "16qam", 2, True)
        f_bad = mimodet.slot_framer(1.4, 1, "16qam", 2, True)
        bits = bits_for(f_ok, 2, self.rng)
        dirty = bits.copy()
        dirty[[0, 10, 3000]] += 2
        dirty[5] = 255 if bits[5] else 254
        ok, _ = self.run_framer(f_ok, 1, bits)
        bad, _ = self.run_framer(f_bad, 1, dirty)
        np.testing.assert_array_equal(ok[0], bad[0])
        self.assertEqual(f_ok.invalid_bits(), 0)
        self.assertEqual(f_bad.invalid_bits(), 4)

    def test_007_large_carrier_runs(self):
        # 20 MHz, 4 x 64QAM: ~190k bits per slot; the scheduler must not stall.
        for freq in (True, False):
            f = mimodet.slot_framer(20, 4, "64qam", 503, freq)
            bits = bits_for(f, 3, self.rng)
            data, _ = self.run_framer(f, 4, bits)
            per = f.vlen() * f.items_per_slot()
            self.assertEqual([len(d) for d in data], [3 * per] * 4)

    def test_008_bad_parameters(self):
        for args in [(7, 2, "qpsk", 0), (1.4, 3, "qpsk", 0), (1.4, 0, "qpsk", 0),
                     (1.4, 8, "qpsk", 0), (1.4, 2, "8psk", 0), (1.4, 2, "qpsk", 504),
                     (1.4, 2, "qpsk", -1)]:
            for freq in (True, False):
                with self.assertRaises((ValueError, RuntimeError), msg=str(args)):
                    mimodet.slot_framer(*args, freq)
        f = mimodet.slot_framer(1.4, 2, "qpsk", 0)
        with self.assertRaises((ValueError, IndexError, RuntimeError)):
            f.bits_per_slot(20)


if __name__ == "__main__":
    gr_unittest.run(qa_slot_framer)
