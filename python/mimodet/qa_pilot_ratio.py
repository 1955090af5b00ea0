#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the pilot-to-data power ratio (docs/SLOT_LAYOUT.md): slot_framer's
pilot_ratio_db boosts (or attenuates) the CRS against the data; channel_estimator and
mimo_receiver take the ratio known or estimate it (pilot_ratio_db = nan).

The BER comparisons run the frequency-domain loopback (framer -> mimo_channel ->
channel_estimator -> mimo_detector, 5 MHz, 2x4, EPA, MMSE). Every run of one seed sees
the same bits, fading and unit noise samples (scaled to the SNR), so the BERs of two
ratios or two SNRs compare with little statistical noise. test_006 runs the time-domain
link (ofdm_sync, ofdm_demod) too. Each case prints its numbers.
"""

import math
import os

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

import numpy as np  # noqa: E402
from gnuradio import blocks, gr, gr_unittest  # noqa: E402

from gnuradio import mimodet  # noqa: E402
from gnuradio.mimodet import loopback  # noqa: E402

NAN = float("nan")
MHZ, N_TX, N_RX, CELL = 5.0, 2, 4, 3
SLOTS = 60
SEED = 7
# EPA taps change over a few slots at this Doppler, so 40 slots see many channels.
DOPPLER_HZ = 300.0
# Where the unboosted link still has errors to compare (BER around 1e-2).
SNR = {"16qam": 14.0, "64qam": 20.0}


def link_ber(mod, snr_db, tx_db, rx_db):
    """BER and the estimator's last pilot ratio of one loopback run."""
    lk = loopback.build_link(MHZ, N_TX, mod, "mmse", "cpu", "epa", snr_db, SLOTS, SEED,
                             domain="freq", cell_id=CELL, doppler_hz=DOPPLER_HZ,
                             n_rx=N_RX, pilot_ratio_db=tx_db, rx_pilot_ratio_db=rx_db)
    res = lk.run()
    if res["slots"] != SLOTS:
        raise AssertionError("%d of %d slots received" % (res["slots"], SLOTS))
    return res["ber"], res["bits"], lk.estimator.pilot_ratio_db()


def show(what, snr, ber, bits, ratio):
    print("%-32s SNR %5.1f dB: BER %.4e (%d bits), receiver's ratio %+.2f dB"
          % (what, snr, ber, bits, ratio))


class qa_pilot_ratio(gr_unittest.TestCase):

    def test_001_parameters(self):
        # Default 0 dB; -10..10 dB accepted; NaN selects estimation at the receiver
        # only; anything else is a ValueError at construction.
        framer = mimodet.slot_framer
        estimator = mimodet.channel_estimator
        self.assertEqual(framer(MHZ, 2, "16qam", CELL, True).pilot_ratio_db(), 0.0)
        self.assertEqual(framer(MHZ, 2, "16qam", CELL, True, 3.0).pilot_ratio_db(), 3.0)
        self.assertEqual(estimator(MHZ, 2, 2, CELL).pilot_ratio_db(), 0.0)
        self.assertEqual(estimator(MHZ, 2, 2, CELL, pilot_ratio_db=-4.0).pilot_ratio_db(),
                         -4.0)
        # Estimated: NaN until a slot has been estimated.
        self.assertTrue(math.isnan(
            estimator(MHZ, 2, 2, CELL, pilot_ratio_db=NAN).pilot_ratio_db()))
        rx = mimodet.mimo_receiver("mmse", MHZ, 2, 2, "16qam", CELL, pilot_ratio_db=6.0)
        self.assertEqual(rx.pilot_ratio_db(), 6.0)
        mimodet.mimo_receiver("mmse", MHZ, 2, 2, "16qam", CELL, pilot_ratio_db=NAN)
        for bad in (10.5, -10.5, math.inf, -math.inf):
            with self.assertRaisesRegex(ValueError, "pilot_ratio_db"):
                mimodet.slot_framer(MHZ, 2, "16qam", CELL, True, bad)
            with self.assertRaisesRegex(ValueError, "pilot_ratio_db"):
                mimodet.channel_estimator(MHZ, 2, 2, CELL, pilot_ratio_db=bad)
            with self.assertRaisesRegex(ValueError, "pilot_ratio_db"):
                mimodet.mimo_receiver("mmse", MHZ, 2, 2, "16qam", CELL, pilot_ratio_db=bad)
        with self.assertRaisesRegex(ValueError, "pilot_ratio_db"):
            mimodet.slot_framer(MHZ, 2, "16qam", CELL, True, NAN)

    def boosted_as_good(self, mod):
        # The boosted link's BER at SNR s is at most the unboosted link's at s - 0.2 dB,
        # with the ratio known and estimated: +3 dB pilots, and +6 dB (pilots +3 dB,
        # data -3 dB). Then -3 dB pilots, as below.
        s = SNR[mod]
        base = link_ber(mod, s, 0.0, None)
        base_lo = link_ber(mod, s - 0.2, 0.0, None)
        print(mod)
        show("unboosted", s, *base)
        show("unboosted", s - 0.2, *base_lo)
        self.assertGreater(base[0], 1e-3, "the SNR must leave errors to compare")
        self.assertLess(base[0], base_lo[0], "0.2 dB must show in the BER")
        for tx in (3.0, 6.0):
            for rx, name in ((None, "known"), (NAN, "estimated")):
                r = link_ber(mod, s, tx, rx)
                show("%+.0f dB pilots, %s" % (tx, name), s, *r)
                self.assertLessEqual(r[0], base_lo[0], "%s %+.0f dB %s" % (mod, tx, name))
                # The last slot's ratio: the known one, or its estimate (one slot: about
                # 0.1 dB spread).
                self.assertAlmostEqual(r[2], tx, delta=0.5)
        # Weaker pilots (-3 dB) double the channel estimate's error whatever the
        # receiver does (about 0.3 dB here): known, the ratio must cost no more than
        # 0.5 dB against the unboosted link; estimated, no more than 0.2 dB against known.
        base_lo5 = link_ber(mod, s - 0.5, 0.0, None)
        weak = link_ber(mod, s, -3.0, None)
        weak_lo = link_ber(mod, s - 0.2, -3.0, None)
        weak_est = link_ber(mod, s, -3.0, NAN)
        show("unboosted", s - 0.5, *base_lo5)
        show("-3 dB pilots, known", s, *weak)
        show("-3 dB pilots, known", s - 0.2, *weak_lo)
        show("-3 dB pilots, estimated", s, *weak_est)
        self.assertLessEqual(weak[0], base_lo5[0], "%s -3 dB known" % mod)
        self.assertLessEqual(weak_est[0], weak_lo[0], "%s -3 dB estimated" % mod)
        self.assertAlmostEqual(weak_est[2], -3.0, delta=0.5)

    def test_002_boosted_pilots_16qam(self):
        self.boosted_as_good("16qam")

    def test_003_boosted_pilots_64qam(self):
        self.boosted_as_good("64qam")

    def test_004_receiver_not_told_fails(self):
        # +6 dB pilots, receiver at 0 dB: H twice too large, 16QAM breaks; told the
        # ratio (or estimating it) the same receiver decodes.
        s = SNR["16qam"]
        told = link_ber("16qam", s, 6.0, None)
        untold = link_ber("16qam", s, 6.0, 0.0)
        show("+6 dB pilots, known", s, *told)
        show("+6 dB pilots, receiver at 0 dB", s, *untold)
        self.assertGreater(untold[0], 0.1)
        self.assertGreater(untold[0], 10 * told[0])

    def test_005_mimo_receiver_equals_the_chain(self):
        # mimo_receiver with the ratio known and estimated gives the bits of
        # channel_estimator followed by mimo_detector with the same ratio and backend
        # (with a CUDA device also on the GPU: fused with the ratio known, through the
        # host estimated).
        backends = ["cpu"] + (["cuda"] if mimodet.cuda_device_count() > 0 else [])
        for backend in backends:
            self.receiver_equals_chain(backend)

    def receiver_equals_chain(self, backend):
        n_slots = 12
        for tx, rx_db in ((3.0, 3.0), (-3.0, NAN)):
            framer = mimodet.slot_framer(MHZ, N_TX, "64qam", CELL, True, tx)
            n_bits = sum(framer.bits_per_slot(ns % 20) for ns in range(n_slots))
            bits = np.random.default_rng(5).integers(0, 2, n_bits, dtype=np.uint8)
            tb = gr.top_block()
            src = blocks.vector_source_b(bits.tolist(), False)
            chan = mimodet.mimo_channel(N_TX, N_RX, "epa", 22.0, MHZ, DOPPLER_HZ, 0.0, 0,
                                        True, 9)
            est = mimodet.channel_estimator(MHZ, N_TX, N_RX, CELL, backend=backend,
                                            pilot_ratio_db=rx_db)
            det = mimodet.mimo_detector("mmse", MHZ, N_TX, N_RX, "64qam", CELL, backend,
                                        False)
            rx = mimodet.mimo_receiver("mmse", MHZ, N_TX, N_RX, "64qam", CELL, backend,
                                       pilot_ratio_db=rx_db)
            snk_chain, snk_rx = blocks.vector_sink_b(), blocks.vector_sink_b()
            tb.connect(src, framer)
            for t in range(N_TX):
                tb.connect((framer, t), (chan, t))
            for r in range(N_RX):
                tb.connect((chan, r), (est, r))
                tb.connect((chan, r), (det, r))
                tb.connect((chan, r), (rx, r))
            tb.connect((est, 0), (det, N_RX))
            tb.connect((est, 1), (det, N_RX + 1))
            tb.connect(det, snk_chain)
            tb.connect(rx, snk_rx)
            tb.run()
            a = np.array(snk_chain.data(), np.uint8)
            b = np.array(snk_rx.data(), np.uint8)
            self.assertEqual(len(a), n_bits)
            self.assertTrue(np.array_equal(a, b),
                            "%s, tx %+.0f dB, rx %s" % (backend, tx, rx_db))
            ber = np.count_nonzero(a != bits) / n_bits
            print("mimo_receiver (%s), %+.0f dB pilots, rx %s: BER %.2e, ratio %+.2f / "
                  "%+.2f dB" % (backend, tx, rx_db, ber, est.pilot_ratio_db(),
                                rx.pilot_ratio_db()))
            self.assertLess(ber, 0.05)
            if backend == "cpu":  # one lane: the same last slot as the estimator's
                self.assertEqual(est.pilot_ratio_db(), rx.pilot_ratio_db())
            self.assertAlmostEqual(rx.pilot_ratio_db(), tx, delta=0.5)

    def test_006_time_domain(self):
        # The time-domain link (IFFT, CFO, timing offset, ofdm_sync, ofdm_demod): the
        # synchroniser is unaffected by the CRS power, and +6 dB pilots, known or
        # estimated, decode at least as well as unboosted ones; untold, 16QAM breaks.
        def run(tx, rx):
            lk = loopback.build_link(MHZ, 2, "16qam", "mmse", "cpu", "epa", 22.0, 40, 3,
                                     domain="time", cfo=0.2, timing_offset=100, n_rx=2,
                                     pilot_ratio_db=tx, rx_pilot_ratio_db=rx)
            r = lk.run()
            self.assertEqual(r["slots"], 40)
            show("time domain, %+.0f dB pilots, rx %s" % (tx, rx), 22.0, r["ber"],
                 r["bits"], lk.estimator.pilot_ratio_db())
            return r["ber"]
        base = run(0.0, None)
        self.assertGreater(base, 0)
        self.assertLessEqual(run(6.0, None), base)
        self.assertLessEqual(run(6.0, NAN), base)
        self.assertGreater(run(6.0, 0.0), 0.1)


if __name__ == "__main__":
    gr_unittest.run(qa_pilot_ratio)
