#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the cell search end to end: ofdm_sync(cell_id=-1) finds the cell of the
slot_framer, reports it (getter, message port, cell_id tags), and channel_estimator,
mimo_detector and mimo_receiver made with cell_id -1 give what they give with the cell
id given."""

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

BW = 1.4
N_TX = N_RX = 2


def tx_bits(framer, n_slots, rng):
    n = sum(framer.bits_per_slot(ns % 20) for ns in range(n_slots))
    return rng.integers(0, 2, size=n, dtype=np.uint8)


class qa_cell_search(gr_unittest.TestCase):

    def test_001_search_end_to_end(self):
        """slot_framer(cell) -> mimo_channel (CFO, timing offset) -> ofdm_sync(-1):
        the cell is found and reported; estimator and receivers (grid and time-domain
        input) with cell_id -1 give the same H, noise and bits as with the cell given."""
        rng = np.random.default_rng(34)
        for cell in (int(rng.integers(0, 504)), 301):
            with self.subTest(cell=cell):
                self._end_to_end(cell, rng)

    def test_004_search_end_to_end_cuda(self):
        """As test_001 with the receivers, estimator and detector on the GPU (their
        lanes made again for the cell found)."""
        if mimodet.cuda_device_count() == 0:
            self.skipTest("no CUDA device")
        self._end_to_end(int(np.random.default_rng(35).integers(0, 504)),
                         np.random.default_rng(36), "cuda")

    def _end_to_end(self, cell, rng, backend="cpu"):
        n_slots = 60
        tb = gr.top_block()
        framer = mimodet.slot_framer(BW, N_TX, "qpsk", cell, False)
        bits = tx_bits(framer, n_slots, rng)
        src = blocks.vector_source_b(bits.tolist(), False)
        chan = mimodet.mimo_channel(N_TX, N_RX, "awgn", 25.0, BW, -1.0, 0.23, 1234,
                                    False, 7 + cell)
        sync = mimodet.ofdm_sync(BW, N_RX, -1)
        self.assertEqual(sync.cell_id(), -1)
        demod = mimodet.ofdm_demod(BW, N_RX)
        tb.connect(src, framer)
        for t in range(N_TX):
            tb.connect((framer, t), (chan, t))
        for r in range(N_RX):
            tb.connect((chan, r), (sync, r))
            tb.connect((sync, r), (demod, r))
        msgs = blocks.message_debug()
        tb.msg_connect((sync, "cell_id"), (msgs, "store"))
        tag_sink = blocks.vector_sink_c()
        tb.connect((sync, 0), tag_sink)

        def receiver(cell_id, time_domain):
            rx = mimodet.mimo_receiver("mmse", BW, N_TX, N_RX, "qpsk", cell_id, backend,
                                       time_domain=time_domain)
            snk = blocks.vector_sink_b()
            for r in range(N_RX):
                tb.connect((sync if time_domain else demod, r), (rx, r))
            tb.connect(rx, snk)
            return rx, snk

        rx_auto, bits_auto = receiver(-1, False)
        rx_given, bits_given = receiver(cell, False)
        rxt_auto, bits_t_auto = receiver(-1, True)
        rxt_given, bits_t_given = receiver(cell, True)
        ests = []
        for cell_id in (-1, cell):
            est = mimodet.channel_estimator(BW, N_TX, N_RX, cell_id, 0, backend)
            h = blocks.vector_sink_c(mimodet.lte_numerology.from_bandwidth(BW).n_sc
                                     * N_RX * N_TX)
            nv = blocks.vector_sink_f()
            for r in range(N_RX):
                tb.connect((demod, r), (est, r))
            tb.connect((est, 0), h)
            tb.connect((est, 1), nv)
            # The separate blocks' chain: estimator and detector with the same cell_id.
            det = mimodet.mimo_detector("mmse", BW, N_TX, N_RX, "qpsk", cell_id, backend)
            det_bits = blocks.vector_sink_b()
            for r in range(N_RX):
                tb.connect((demod, r), (det, r))
            tb.connect((est, 0), (det, N_RX))
            tb.connect((est, 1), (det, N_RX + 1))
            tb.connect(det, det_bits)
            ests.append((est, h, nv, det, det_bits))
        tb.run()

        # Found and reported.
        self.assertEqual(sync.cell_id(), cell)
        self.assertGreaterEqual(msgs.num_messages(), 1)
        d = msgs.get_message(0)
        self.assertEqual(pmt.to_long(pmt.dict_ref(d, pmt.intern("cell_id"), pmt.PMT_NIL)), cell)
        self.assertEqual(pmt.to_long(pmt.dict_ref(d, pmt.intern("n_id1"), pmt.PMT_NIL)), cell // 3)
        self.assertEqual(pmt.to_long(pmt.dict_ref(d, pmt.intern("n_id2"), pmt.PMT_NIL)), cell % 3)
        self.assertGreater(pmt.to_double(pmt.dict_ref(d, pmt.intern("metric"), pmt.PMT_NIL)), 0.5)
        self.assertTrue(pmt.to_bool(pmt.dict_ref(d, pmt.intern("searched"), pmt.PMT_NIL)))
        cell_tags = [t for t in tag_sink.tags() if pmt.symbol_to_string(t.key) == "cell_id"]
        slot_tags = [t for t in tag_sink.tags() if pmt.symbol_to_string(t.key) == "slot"]
        self.assertGreater(len(slot_tags), 30)
        self.assertEqual([t.offset for t in cell_tags], [t.offset for t in slot_tags])
        self.assertTrue(all(pmt.to_long(t.value) == cell for t in cell_tags))

        # Downstream with cell_id -1 == with the cell given.
        for (auto_rx, auto_snk), (given_rx, given_snk) in (
                ((rx_auto, bits_auto), (rx_given, bits_given)),
                ((rxt_auto, bits_t_auto), (rxt_given, bits_t_given))):
            a = np.array(auto_snk.data(), dtype=np.uint8)
            g = np.array(given_snk.data(), dtype=np.uint8)
            self.assertGreater(len(g), 1000)
            np.testing.assert_array_equal(a, g)
            self.assertEqual(auto_rx.bad_slots(), 0)
            self.assertEqual(given_rx.slots_processed(), auto_rx.slots_processed())
        (est_a, h_a, nv_a, det_a, bits_d_a), (est_g, h_g, nv_g, det_g, bits_d_g) = ests
        self.assertEqual(est_a.bad_slots(), 0)
        self.assertEqual(det_a.bad_slots(), 0)
        np.testing.assert_array_equal(np.array(h_a.data()), np.array(h_g.data()))
        np.testing.assert_array_equal(np.array(nv_a.data()), np.array(nv_g.data()))
        self.assertGreater(len(bits_d_g.data()), 1000)
        np.testing.assert_array_equal(np.array(bits_d_a.data()), np.array(bits_d_g.data()))
        # The link works: at 25 dB AWGN the bits are those sent (a wrong cell, with other
        # CRS and another data map, could not give them). The first slot out is the
        # lock's, in the first frame (slot 0 or 10).
        ns0 = pmt.to_long([t for t in bits_given.tags()
                           if pmt.symbol_to_string(t.key) == "slot"][0].value)
        skip = sum(framer.bits_per_slot(ns) for ns in range(ns0))
        g = np.array(bits_given.data(), dtype=np.uint8)
        sent = bits[skip:skip + len(g)]
        self.assertLess(np.mean(g[:len(sent)] != sent), 1e-3)

    def test_002_no_cell_known_is_flagged(self):
        """cell_id -1 without cell_id tags (grids straight from a frequency-domain
        framer): every slot is flagged (NaN noise_var, zeros out) and counted, not
        estimated with some other cell's pilots."""
        rng = np.random.default_rng(3)
        n_slots = 6
        tb = gr.top_block()
        framer = mimodet.slot_framer(BW, N_TX, "qpsk", 12, True)
        src = blocks.vector_source_b(tx_bits(framer, n_slots, rng).tolist(), False)
        chan = mimodet.mimo_channel(N_TX, N_RX, "awgn", 30.0, BW, -1.0, 0.0, 0, True, 5)
        est = mimodet.channel_estimator(BW, N_TX, N_RX, -1)
        rx = mimodet.mimo_receiver("zf", BW, N_TX, N_RX, "qpsk", -1, "cpu")
        det = mimodet.mimo_detector("zf", BW, N_TX, N_RX, "qpsk", -1, "cpu")
        nv = blocks.vector_sink_f()
        out = blocks.vector_sink_b()
        det_out = blocks.vector_sink_b()
        tb.connect(src, framer)
        for t in range(N_TX):
            tb.connect((framer, t), (chan, t))
        for r in range(N_RX):
            tb.connect((chan, r), (est, r))
            tb.connect((chan, r), (rx, r))
            tb.connect((chan, r), (det, r))
        tb.connect((est, 0), (det, N_RX))
        tb.connect((est, 1), nv)
        tb.connect((est, 1), (det, N_RX + 1))
        tb.connect(rx, out)
        tb.connect(det, det_out)
        tb.run()
        self.assertEqual(est.bad_slots(), n_slots)
        self.assertTrue(np.all(np.isnan(np.array(nv.data()))))
        self.assertEqual(rx.bad_slots(), n_slots)
        self.assertEqual(len(out.data()), sum(rx.items_per_slot(ns) for ns in range(n_slots)))
        self.assertFalse(np.any(np.array(out.data())))
        self.assertEqual(det.bad_slots(), n_slots)
        self.assertEqual(len(det_out.data()), len(out.data()))
        self.assertFalse(np.any(np.array(det_out.data())))

    def test_003_parameters(self):
        self.assertEqual(mimodet.ofdm_sync(BW, 1, 42).cell_id(), 42)
        for make in (lambda c: mimodet.ofdm_sync(BW, 1, c),
                     lambda c: mimodet.channel_estimator(BW, 1, 1, c),
                     lambda c: mimodet.mimo_receiver("zf", BW, 1, 1, "qpsk", c, "cpu"),
                     lambda c: mimodet.mimo_detector("zf", BW, 1, 1, "qpsk", c, "cpu")):
            for bad in (-2, 504):
                with self.assertRaises(ValueError):
                    make(bad)
            make(-1)


if __name__ == "__main__":
    gr_unittest.run(qa_cell_search)
