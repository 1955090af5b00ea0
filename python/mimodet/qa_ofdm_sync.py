#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of mimodet.ofdm_sync: PSS timing, CFO, SSS slot numbering on numpy-built slots."""

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

QPSK = np.array([1 + 1j, 1 - 1j, -1 + 1j, -1 - 1j]) / np.sqrt(2)


def slot_grids(g, num, ns, n_ports, rng):
    """Grids (n_ports, 7, n_sc) of slot ns: random QPSK data, CRS, PSS/SSS on port 0."""
    n_sc = num.n_sc
    grids = np.zeros((n_ports, 7 * n_sc), complex)
    data = np.array(g.data_elements(ns))
    for p in range(n_ports):
        grids[p, data] = QPSK[rng.integers(0, 4, len(data))]
        for idx in g.crs_elements(ns, p):
            grids[p, idx] = g.crs_value(ns, p, idx // n_sc, idx % n_sc)
    if ns in (0, 10):
        ks = np.arange(n_sc // 2 - 31, n_sc // 2 + 31)
        grids[0, 6 * n_sc + ks] = g.pss()
        grids[0, 5 * n_sc + ks] = g.sss(ns)
    return grids.reshape(n_ports, 7, n_sc)


def modulate(num, grid):
    """Unitary IFFT + CP of one slot grid (7, n_sc) -> slot_samples samples."""
    N = num.fft_size
    bins = np.array([num.bin(k) for k in range(num.n_sc)])
    X = np.zeros((7, N), complex)
    X[:, bins] = grid
    x = np.fft.ifft(X, axis=1) * np.sqrt(N)
    return np.concatenate([np.concatenate([x[l, N - num.cp_length(l):], x[l]])
                           for l in range(7)])


def make_signal(bw, n_tx, n_rx, cell, n_slots, first_ns, offset, cfo, snr_db, rng,
                zero_lead=False, tail=0):
    """Slots first_ns.. through a flat channel exp(j theta)/sqrt(n_tx) per path, after
    `offset` leading samples (noise or zeros), CFO `cfo` subcarrier spacings, AWGN of
    variance 10^(-snr/10) per sample (= per grid element). Returns rx (n_rx, len),
    the grids (n_slots, n_tx, 7, n_sc) and h (n_rx, n_tx)."""
    num = mimodet.lte_numerology.from_bandwidth(bw)
    g = mimodet.lte_grid(num, n_tx, cell)
    grids = np.array([slot_grids(g, num, (first_ns + s) % 20, n_tx, rng)
                      for s in range(n_slots)])
    tx = np.array([np.concatenate([modulate(num, grids[s, t]) for s in range(n_slots)])
                   for t in range(n_tx)]) if n_slots else np.zeros((n_tx, 0))
    h = np.exp(2j * np.pi * rng.random((n_rx, n_tx))) / np.sqrt(n_tx)
    length = offset + tx.shape[1] + tail
    rx = np.zeros((n_rx, length), complex)
    rx[:, offset:offset + tx.shape[1]] = h @ tx
    rx *= np.exp(2j * np.pi * cfo * np.arange(length) / num.fft_size)
    nv = 10 ** (-snr_db / 10)
    noise = np.sqrt(nv / 2) * (rng.standard_normal(rx.shape) + 1j * rng.standard_normal(rx.shape))
    if zero_lead:
        noise[:, :offset] = 0
    return (rx + noise).astype(np.complex64), grids, h


def run_sync(bw, n_rx, cell, rx):
    tb = gr.top_block()
    sync = mimodet.ofdm_sync(bw, n_rx, cell)
    sinks = []
    for a in range(n_rx):
        src = blocks.vector_source_c(rx[a].tolist(), False)
        snk = blocks.vector_sink_c()
        tb.connect(src, (sync, a))
        tb.connect((sync, a), snk)
        sinks.append(snk)
    tb.run()
    out = np.array([np.array(s.data(), dtype=np.complex64) for s in sinks])
    tags = [[(t.offset, t.key, t.value) for t in s.tags()] for s in sinks]
    return sync, out, tags


def input_index(rx_mag, out_mag, hint, L=48):
    """Input index whose |samples| equal |out| (the CFO rotation keeps magnitudes)."""
    lo = max(0, hint - 200)
    win = np.lib.stride_tricks.sliding_window_view(rx_mag[lo:hint + 200 + L], L)
    err = np.max(np.abs(win - out_mag[:L]), axis=1)
    i = int(np.argmin(err))
    return lo + i if err[i] < 1e-4 else None


class qa_ofdm_sync(gr_unittest.TestCase):

    def check(self, bw, n_rx, snr, cfo=0.3, n_slots=None, first_ns=0, seed=0,
              zero_lead=False, n_tx=1, cfo_tol=0.01):
        rng = np.random.default_rng(seed)
        num = mimodet.lte_numerology.from_bandwidth(bw)
        S = num.slot_samples()
        n_slots = n_slots or {1.4: 30, 5: 24, 20: 12}[bw]
        offset = int(rng.integers(1000, 20001))
        cell = int(rng.integers(0, 504))
        rx, _, _ = make_signal(bw, n_tx, n_rx, cell, n_slots, first_ns, offset, cfo, snr,
                               rng, zero_lead=zero_lead)
        sync, out, tags = run_sync(bw, n_rx, cell, rx)
        msg = f"{bw} MHz, n_rx {n_rx}, SNR {snr} dB, offset {offset}"
        self.assertTrue(sync.locked(), msg)
        first_pss = (10 - first_ns % 10) % 10
        n_out = out.shape[1] // S
        self.assertEqual(out.shape[1], n_out * S, msg)
        self.assertGreaterEqual(n_out, n_slots - first_pss - 1, msg)
        for a in range(n_rx):
            # One 'slot' tag per slot, at every slot_samples-th output sample.
            offs = [o for o, k, _ in tags[a] if str(k) == "slot"]
            self.assertEqual(offs, [i * S for i in range(n_out)], msg)
        rx_mag = np.abs(rx[0])
        for i in range(n_out):
            ns = pmt.to_long(tags[0][i][2])
            j = first_pss + i
            start = input_index(rx_mag, np.abs(out[0, i * S:]), offset + j * S)
            self.assertIsNotNone(start, msg)
            # Slot boundary within +-2 samples, and the right slot number.
            self.assertLessEqual(abs(start - (offset + j * S)), 2, f"{msg}, slot {i}")
            self.assertEqual(ns, (first_ns + j) % 20, f"{msg}, slot {i}")
        self.assertLess(abs(sync.cfo() - cfo), cfo_tol, f"{msg}: cfo {sync.cfo()}")
        return sync

    def test_001_bandwidths_and_antennas_20db(self):
        seed = 0
        for bw in (1.4, 5, 20):
            for n_rx in (1, 2):
                seed += 1
                self.check(bw, n_rx, 20.0, seed=seed, first_ns=5 * (seed % 3))

    def test_002_low_snr(self):
        for bw in (1.4, 5, 20):
            self.check(bw, 2, 10.0, seed=10 + int(bw), first_ns=7, cfo_tol=0.02)
            self.check(bw, 1, 10.0, seed=20 + int(bw), first_ns=0, cfo_tol=0.02)

    def test_003_leading_zeros_high_snr_two_ports(self):
        for bw in (1.4, 5):
            self.check(bw, 2, 30.0, cfo=-0.3, seed=30 + int(bw), zero_lead=True, n_tx=2,
                       first_ns=12)

    def test_004_noise_only_gives_nothing(self):
        rng = np.random.default_rng(4)
        rx = ((rng.standard_normal((1, 100000)) + 1j * rng.standard_normal((1, 100000)))
              / np.sqrt(2)).astype(np.complex64)
        sync, out, tags = run_sync(1.4, 1, 0, rx)
        self.assertFalse(sync.locked())
        self.assertEqual(out.shape[1], 0)

    def test_005_parameters(self):
        with self.assertRaises(ValueError):
            mimodet.ofdm_sync(7, 1, 0)
        with self.assertRaises(ValueError):
            mimodet.ofdm_sync(5, 0, 0)
        with self.assertRaises(ValueError):
            mimodet.ofdm_sync(5, 1, 504)
        s = mimodet.ofdm_sync(5, 2, 1)
        self.assertEqual(s.cfo(), 0.0)
        self.assertFalse(s.locked())

    # Regressions found by the loopback integration tests (python/mimodet/qa_loopback.py).

    def test_006_one_two_four_tx_ports(self):
        # The PSS is on port 0 only: a metric normalised over the whole band puts its
        # peak at about 62/n_tx of the single-port one (a fixed threshold of 16/n_sc
        # misses 4 ports);
        # per-port unit energy and unit total channel power as in slot_framer +
        # mimo_channel.
        seed = 60
        for bw in (5, 20):
            for n_tx in (1, 2, 4):
                for n_rx in (1, 2):
                    seed += 1
                    self.check(bw, n_rx, 10.0, n_tx=n_tx, seed=seed, first_ns=0,
                               cfo_tol=0.02)

    def test_007_four_tx_20mhz_link(self):
        from gnuradio.mimodet import loopback
        link = loopback.build_link(20, 4, "qpsk", "zf", "cpu", "awgn", 30, 12, 3001,
                                   domain="time", cfo=0.3)
        r = link.run()
        self.assertEqual(r["first_slot"], 0)
        self.assertEqual(r["slots"], 12)
        self.assertEqual(r["slots_missing"], 0)
        self.assertEqual(r["errors"], 0)

    def test_008_first_pss_after_leading_zeros(self):
        # Exact zeros before the signal must not give a spurious huge metric and a lock
        # only at slot 10.
        for offset in (300, 1234, 5000):
            for zero_lead in (True, False):
                rng = np.random.default_rng(7)
                rx, _, _ = make_signal(1.4, 1, 1, 7, 30, 0, offset, 0.3, 30.0, rng,
                                       zero_lead=zero_lead)
                sync, out, tags = run_sync(1.4, 1, 7, rx)
                ns = [pmt.to_long(v) for o, k, v in tags[0] if str(k) == "slot"]
                msg = f"offset {offset}, zero_lead {zero_lead}"
                self.assertEqual(len(ns), 30, msg)
                self.assertEqual(ns, [i % 20 for i in range(30)], msg)
                S = mimodet.lte_numerology.from_bandwidth(1.4).slot_samples()
                start = input_index(np.abs(rx[0]), np.abs(out[0]), offset)
                self.assertIsNotNone(start, msg)
                self.assertLessEqual(abs(start - offset), 2, msg)

    def test_009_lock_independent_of_work_boundaries(self):
        # The same input in differently sized work() calls gives the same output.
        rng = np.random.default_rng(9)
        rx, _, _ = make_signal(5, 2, 2, 100, 24, 0, 14345, 0.3, 20.0, rng, zero_lead=True)
        ref = None
        for max_items in (None, 997, 4096, 20000):
            tb = gr.top_block()
            sync = mimodet.ofdm_sync(5, 2, 100)
            sinks = []
            for a in range(2):
                src = blocks.vector_source_c(rx[a].tolist(), False)
                snk = blocks.vector_sink_c()
                tb.connect(src, (sync, a))
                tb.connect((sync, a), snk)
                sinks.append(snk)
            if max_items:
                tb.run(max_items)
            else:
                tb.run()
            out = np.array([np.array(s.data(), dtype=np.complex64) for s in sinks])
            ns = [pmt.to_long(t.value) for t in sinks[0].tags() if str(t.key) == "slot"]
            self.assertEqual(ns[0], 0, f"max_noutput_items {max_items}")
            if ref is None:
                ref = (out, ns)
            else:
                self.assertEqual(ns, ref[1], f"max_noutput_items {max_items}")
                np.testing.assert_array_equal(out, ref[0])

    def test_010_repeatable_lock_in_the_link(self):
        from gnuradio.mimodet import loopback
        for _ in range(3):
            link = loopback.build_link(5, 2, "qpsk", "fsd", "cpu", "epa", 30, 40, 1251,
                                       domain="time", cfo=0.3, timing_offset=14345)
            r = link.run()
            self.assertEqual(r["first_slot"], 0)
            self.assertEqual(r["slots"], 40)

    def test_011_20mhz_acquisition_in_a_fade(self):
        # docs/LOOPBACK.md, "Acquisition": the two 20 MHz time-domain links of the
        # 200-slot table whose first slot a whole-band metric finds only at 110 and 160
        # (seeds 1601: 4x4, 1403: 2x2; the same channel and offset, QPSK and the cheap ZF
        # detector here, whose errors do not matter). Port 0's PSS sits in an EPA fade at
        # the carrier centre, which a metric normalised over the whole band cannot see.
        from gnuradio.mimodet import loopback
        for ant, seed in ((4, 1601), (2, 1403)):
            to = int(np.random.default_rng(seed).integers(0, 20000))
            link = loopback.build_link(20, ant, "qpsk", "zf", "cpu", "epa", 30, 12, seed,
                                       domain="time", cfo=0.3, timing_offset=to)
            r = link.run()
            msg = "%dx%d seed %d offset %d" % (ant, ant, seed, to)
            self.assertEqual(r["first_slot"], 0, msg)
            self.assertEqual(r["slots"], 12, msg)
            self.assertEqual(r["slots_missing"], 0, msg)

    def test_012_sample_rate_offset(self):
        # A receiver clock 40 ppm fast (gr-filter's arbitrary resampler after the
        # channel): the block reports the offset and resamples; the slots keep coming.
        from gnuradio import filter as grfilter
        rng = np.random.default_rng(12)
        rx, _, _ = make_signal(5, 1, 2, 77, 32, 0, 3000, 0.3, 30.0, rng)
        ppm = 40.0
        tb = gr.top_block()
        sync = mimodet.ofdm_sync(5, 2, 77)
        sinks = []
        for a in range(2):
            src = blocks.vector_source_c(rx[a].tolist(), False)
            rs = grfilter.pfb.arb_resampler_ccf(1.0 + ppm * 1e-6)
            snk = blocks.vector_sink_c()
            tb.connect(src, rs, (sync, a))
            tb.connect((sync, a), snk)
            sinks.append(snk)
        tb.run()
        applied = (float(np.float32(1.0 + ppm * 1e-6)) - 1.0) * 1e6
        ns = [pmt.to_long(t.value) for t in sinks[0].tags() if str(t.key) == "slot"]
        self.assertGreaterEqual(len(ns), 30)
        self.assertEqual(ns, [i % 20 for i in range(len(ns))])
        self.assertTrue(sync.resampling())
        self.assertLess(abs(sync.sro_ppm() - applied), 1.0, sync.sro_ppm())
        self.assertLess(abs(sync.cfo() - 0.3), 0.01)

    def test_013_runs_ahead_of_a_slow_consumer(self):
        # While the next block still works on a slot, the synchroniser goes on with the
        # next ones (GNU Radio hands a block at most half of its output buffer per call:
        # with its default buffer of two slots the two blocks ran one after the other),
        # and the next block finds several slots queued. The slots are the same.
        import time
        rng = np.random.default_rng(13)
        # 5 MHz: a slot (3840 samples) is more than half of GNU Radio's default buffer.
        num = mimodet.lte_numerology.from_bandwidth(5)
        S = num.slot_samples()
        rx, _, _ = make_signal(5, 1, 1, 5, 24, 0, 1500, 0.2, 30.0, rng)
        _, expect, _ = run_sync(5, 1, 5, rx)

        class slow_consumer(gr.basic_block):
            """Takes one slot per call, 10 ms late; notes the slots it finds queued."""

            def __init__(self):
                gr.basic_block.__init__(self, "slow_consumer", [np.complex64], [np.complex64])
                self.set_output_multiple(S)
                self.queued = []

            def forecast(self, noutput_items, ninputs):
                return [S]

            def general_work(self, ins, outs):
                self.queued.append(len(ins[0]) // S)
                time.sleep(0.01)
                outs[0][:S] = ins[0][:S]
                self.consume(0, S)
                return S

        tb = gr.top_block()
        sync = mimodet.ofdm_sync(5, 1, 5)
        slow = slow_consumer()
        snk = blocks.vector_sink_c()
        tb.connect(blocks.vector_source_c(rx[0].tolist(), False), sync, slow, snk)
        tb.run()
        np.testing.assert_array_equal(np.array(snk.data(), dtype=np.complex64), expect[0])
        self.assertEqual(len(slow.queued), expect.shape[1] // S)
        self.assertGreaterEqual(max(slow.queued), 4, slow.queued)

    def test_014_takes_the_next_slot_in_when_a_slot_goes_out(self):
        # The call that puts a slot out also takes in the next slot's input, so that a
        # source blocked on a full buffer (after a stall) gets its space back a call
        # earlier. Seen from a slow consumer: the synchroniser's input runs a whole slot
        # ahead of its output. With MIMODET_SYNC_AHEAD=0 (read when the block is made) it
        # does not; the slots are the same either way.
        import os
        import time
        rng = np.random.default_rng(14)
        num = mimodet.lte_numerology.from_bandwidth(5)
        S = num.slot_samples()
        offset = 1500
        rx, _, _ = make_signal(5, 1, 1, 5, 24, 0, offset, 0.2, 30.0, rng)
        _, expect, _ = run_sync(5, 1, 5, rx)
        leads = {}
        for ahead in ("1", "0"):
            os.environ["MIMODET_SYNC_AHEAD"] = ahead
            try:
                sync = mimodet.ofdm_sync(5, 1, 5)
            finally:
                del os.environ["MIMODET_SYNC_AHEAD"]
            lead = []

            class slow_consumer(gr.basic_block):
                def __init__(self):
                    gr.basic_block.__init__(self, "slow_consumer", [np.complex64],
                                            [np.complex64])
                    self.set_output_multiple(S)

                def forecast(self, noutput_items, ninputs):
                    return [S]

                def general_work(self, ins, outs):
                    time.sleep(0.005) # the synchroniser waits on its full output buffer
                    lead.append(sync.nitems_read(0) - sync.nitems_written(0) - offset)
                    outs[0][:S] = ins[0][:S]
                    self.consume(0, S)
                    return S

            tb = gr.top_block()
            slow = slow_consumer()
            snk = blocks.vector_sink_c()
            tb.connect(blocks.vector_source_c(rx[0].tolist(), False), sync, slow, snk)
            tb.run()
            np.testing.assert_array_equal(np.array(snk.data(), dtype=np.complex64),
                                          expect[0], f"MIMODET_SYNC_AHEAD={ahead}")
            leads[ahead] = max(lead)
        self.assertGreaterEqual(leads["1"], S, leads)
        self.assertLess(leads["0"], S, leads)


if __name__ == "__main__":
    gr_unittest.run(qa_ofdm_sync)
