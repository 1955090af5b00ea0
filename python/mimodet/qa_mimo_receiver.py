#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the mimo_receiver block (channel estimation + MIMO detection in one block), CPU
backend: on test grids built as in qa_channel_estimator.py / qa_mimo_detector.py (the
framer's mapping of docs/SLOT_LAYOUT.md, random EPA channels per slot, "slot" tags), its
bits and LLRs must equal EXACTLY those of channel_estimator(cpu) -> mimo_detector(cpu) on
the same grids; plus its tags, bad and untagged slots, parameters and GRC definition."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet
# The .grc scaffolding of the GRC tests (this file's folder is on sys.path when run).
from qa_examples import GRC_COMMON, compile_detector_makes, detector_make  # noqa: E402,E501
from qa_examples import env as grc_env, flowgraph, front_end_graph  # noqa: E402,E501
# Test channels and the framer's mapping, as the estimator's and the detector's QA.
from qa_channel_estimator import make_channel  # noqa: E402
from qa_mimo_detector import check_device_keyword, config_of, map_bits  # noqa: E402
from qa_mimo_detector import stop_while_running  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODS = {"qpsk": 2, "16qam": 4, "64qam": 6}
HARD = ("psd", "fsd")
SOFT = ("ml", "zf", "mmse", "sfsd", "mtt")

def make_slots(rng, mhz, n_tx, n_rx, mod, cell_id, slots, snr_db):
    """Random bits per slot through an EPA channel (a new one per slot) at snr_db.
    Returns the bits per slot and the grids ys (n_slots, n_rx, 7*n_sc)."""
    num = mimodet.lte_numerology.from_bandwidth(mhz)
    grid = mimodet.lte_grid(num, n_tx, cell_id)
    nv = mimodet.snr_to_noise_var(snr_db, n_tx)
    bits, ys = [], []
    for ns in slots:
        b = rng.integers(0, 2, size=len(grid.data_elements(ns)) * n_tx * MODS[mod])
        b = b.astype(np.uint8)
        x = map_bits(grid, ns, b, mod)
        H = make_channel(rng, num, "EPA", n_tx, n_rx)
        y = np.einsum("krt,tlk->rlk", H, x.reshape(n_tx, 7, num.n_sc)).reshape(n_rx, -1)
        y = y + np.sqrt(nv / 2) * (rng.standard_normal(y.shape)
                                   + 1j * rng.standard_normal(y.shape))
        bits.append(b)
        ys.append(y.astype(np.complex64))
    return bits, np.stack(ys)


def slot_tags(slots, items=None):
    """"slot" tags with value ns on the given items (default: every item)."""
    items = range(len(slots)) if items is None else items
    return [gr.tag_utils.python_to_tag((i, pmt.intern("slot"), pmt.from_long(slots[i])))
            for i in items]


def connect_sources(tb, ys, tags, sinks):
    """One vector source per receive antenna (the tags on antenna 0) into every block of
    sinks (each takes the grids on its inputs 0..n_rx-1)."""
    n_rx, vlen = ys.shape[1], ys.shape[2]
    for r in range(n_rx):
        src = blocks.vector_source_c(ys[:, r, :].ravel().tolist(), False, vlen,
                                     tags if r == 0 else [])
        for blk in sinks:
            tb.connect(src, (blk, r))


def run_receiver(rx, ys, tags, soft):
    tb = gr.top_block()
    connect_sources(tb, ys, tags, [rx])
    snk = blocks.vector_sink_f() if soft else blocks.vector_sink_b()
    tb.connect(rx, snk)
    tb.run()
    return np.array(snk.data(), np.float32 if soft else np.uint8), snk.tags()


def run_chain(mhz, n_tx, n_rx, cell_id, ys, tags, alg, mod, soft, est_threads=0, **params):
    """channel_estimator(cpu) -> mimo_detector(cpu), the reference of the receiver."""
    # Compared bit for bit: no stall bound (psd's wall-clock deadline) unless asked.
    params.setdefault("slot_limit_us", 0.0)
    tb = gr.top_block()
    est = mimodet.channel_estimator(mhz, n_tx, n_rx, cell_id, est_threads, "cpu")
    det = mimodet.mimo_detector(alg, mhz, n_tx, n_rx, mod, cell_id, "cpu", soft, **params)
    connect_sources(tb, ys, tags, [est, det])
    tb.connect((est, 0), (det, n_rx))
    tb.connect((est, 1), (det, n_rx + 1))
    snk = blocks.vector_sink_f() if soft else blocks.vector_sink_b()
    tb.connect(det, snk)
    tb.run()
    return np.array(snk.data(), np.float32 if soft else np.uint8), snk.tags(), est, det


def slot_tag_at(offset, ns):
    return gr.tag_utils.python_to_tag((offset, pmt.intern("slot"), pmt.from_long(ns)))


def tag_list(tags):
    return [(t.offset, pmt.symbol_to_string(t.key), pmt.to_long(t.value)) for t in tags]



def modulate(mhz, ys):
    """The grids ys (n_slots, n_rx, 7*n_sc) as time-domain slots (n_rx, n_slots *
    slot_samples): per symbol a unitary IFFT of its subcarriers' bins with the CP in
    front, as the slot framer sends them."""
    num = mimodet.lte_numerology.from_bandwidth(mhz)
    N, n_sc = num.fft_size, num.n_sc
    bins = np.array([num.bin(k) for k in range(n_sc)])
    out = []
    for r in range(ys.shape[1]):
        parts = []
        for y in ys[:, r, :]:
            for l in range(7):
                X = np.zeros(N, np.complex128)
                X[bins] = y[l * n_sc:(l + 1) * n_sc]
                x = np.fft.ifft(X) * np.sqrt(N)
                parts.append(x[N - num.cp_length(l):])
                parts.append(x)
        out.append(np.concatenate(parts).astype(np.complex64))
    return np.stack(out)


def run_time_receiver(rx, samples, tags, soft):
    """rx (time_domain) on the time-domain streams samples (n_rx, len), tags on 0."""
    tb = gr.top_block()
    for r in range(samples.shape[0]):
        src = blocks.vector_source_c(samples[r].tolist(), False, 1, tags if r == 0 else [])
        tb.connect(src, (rx, r))
    snk = blocks.vector_sink_f() if soft else blocks.vector_sink_b()
    tb.connect(rx, snk)
    tb.run()
    return np.array(snk.data(), np.float32 if soft else np.uint8), snk.tags()


def run_demod_receiver(mhz, n_tx, n_rx, cell_id, samples, tags, alg, mod, soft,
                       fft_backoff=-1):
    """ofdm_demod -> mimo_receiver (grids), the reference of the time-domain input."""
    tb = gr.top_block()
    dem = mimodet.ofdm_demod(mhz, n_rx, fft_backoff)
    rx = mimodet.mimo_receiver(alg, mhz, n_tx, n_rx, mod, cell_id, "cpu", soft,
                               slot_limit_us=0.0)
    for r in range(n_rx):
        src = blocks.vector_source_c(samples[r].tolist(), False, 1, tags if r == 0 else [])
        tb.connect(src, (dem, r))
        tb.connect((dem, r), (rx, r))
    snk = blocks.vector_sink_f() if soft else blocks.vector_sink_b()
    tb.connect(rx, snk)
    tb.run()
    return np.array(snk.data(), np.float32 if soft else np.uint8), snk.tags(), rx


class qa_mimo_receiver(gr_unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(4711)

    def compare(self, alg, mhz, n_tx, n_rx, mod, slots, snr_db=20.0, soft=False, cell_id=17,
                ys=None, bits=None, tags=None, **params):
        """Receiver and chain on the same grids: equal outputs and tags. Returns the
        receiver's output, the transmitted bits, the receiver, the chain's blocks."""
        if ys is None:
            bits, ys = make_slots(self.rng, mhz, n_tx, n_rx, mod, cell_id, slots, snr_db)
        tags = slot_tags(slots) if tags is None else tags
        # Compared bit for bit: no stall bound (psd's wall-clock deadline) unless asked.
        params.setdefault("slot_limit_us", 0.0)
        what = "%s %gMHz %dx%d %s %s %s" % (alg, mhz, n_tx, n_rx, mod,
                                            "llr" if soft else "bits", params)
        ref, ref_tags, est, det = run_chain(mhz, n_tx, n_rx, cell_id, ys, tags, alg, mod, soft,
                                            **params)
        rx = mimodet.mimo_receiver(alg, mhz, n_tx, n_rx, mod, cell_id, "cpu", soft, **params)
        out, out_tags = run_receiver(rx, ys, tags, soft)
        # Output item: float LLRs or byte bits.
        self.assertEqual(rx.output_signature().sizeof_stream_item(0), 4 if soft else 1, what)
        self.assertEqual(rx.input_signature().max_streams(), n_rx, what)
        self.assertEqual(rx.input_signature().sizeof_stream_item(0), 8 * ys.shape[2], what)
        self.assertEqual(len(out), sum(det.items_per_slot(ns) for ns in slots), what)
        np.testing.assert_array_equal(out, ref, err_msg=what)
        self.assertEqual(tag_list(out_tags), tag_list(ref_tags), what)
        self.assertEqual(rx.slots_processed(), len(slots), what)
        self.assertEqual(rx.bad_slots(), det.bad_slots(), what)
        self.assertEqual(rx.untagged_slots(), est.untagged_slots(), what)
        self.assertEqual(rx.backend(), "cpu")
        return out, bits, rx, (est, det)

    def test_001_equals_chain_every_algorithm(self):
        # EPA at 20 dB (errors happen, so equality is not just "both decode"), slots 0
        # and 10 (PSS/SSS) among others: bits of every algorithm, LLRs of the soft ones.
        slots = [0, 1, 6, 10, 13]
        for mhz, n_tx, n_rx, mod in ((1.4, 2, 2, "16qam"), (1.4, 2, 4, "qpsk"),
                                     (3, 2, 2, "64qam")):
            bits, ys = make_slots(self.rng, mhz, n_tx, n_rx, mod, 17, slots, 20.0)
            for alg in mimodet.algorithms():
                if alg == "ml" and mod == "64qam":
                    continue  # 4096 candidates per vector: covered at 16qam/qpsk
                for soft in ((False, True) if alg in SOFT else (False,)):
                    out, _, rx, _ = self.compare(alg, mhz, n_tx, n_rx, mod, slots, ys=ys,
                                                 bits=bits, soft=soft)
                    self.assertEqual(rx.bad_slots(), 0)
                    if soft:
                        self.assertTrue(np.all(np.isfinite(out)))
                        self.assertGreater(np.count_nonzero(out), 0)
                    else:
                        ber = np.mean(out != np.concatenate(bits))
                        self.assertLess(ber, 0.2, "%s %s" % (alg, mod))

    def test_002_equals_chain_4x4(self):
        # 4 ports (CRS of ports 2/3 every 6 subcarriers), non-ML algorithms.
        slots = [0, 3, 10]
        bits, ys = make_slots(self.rng, 1.4, 4, 4, "16qam", 5, slots, 25.0)
        for alg in ("psd", "fsd", "sfsd", "mtt", "mmse", "zf"):
            self.compare(alg, 1.4, 4, 4, "16qam", slots, cell_id=5, ys=ys, bits=bits)
        for alg in ("sfsd", "mmse"):
            self.compare(alg, 1.4, 4, 4, "16qam", slots, cell_id=5, ys=ys, bits=bits,
                         soft=True)

    def test_003_high_snr_bits_are_transmitted_bits(self):
        # 40 dB EPA with the estimated channel: no bit errors, and the LLR signs of the
        # soft detectors are the bits too.
        slots = [2, 3, 10, 11]
        bits, ys = make_slots(self.rng, 1.4, 2, 4, "16qam", 3, slots, 40.0)
        ref = np.concatenate(bits)
        for alg in mimodet.algorithms():
            out, _, _, _ = self.compare(alg, 1.4, 2, 4, "16qam", slots, cell_id=3, ys=ys,
                                        bits=bits)
            np.testing.assert_array_equal(out, ref, err_msg=alg)
            if alg in SOFT:
                llr, _, _, _ = self.compare(alg, 1.4, 2, 4, "16qam", slots, cell_id=3, ys=ys,
                                            bits=bits, soft=True)
                np.testing.assert_array_equal((llr < 0).astype(np.uint8), ref, err_msg=alg)

    def test_004_slot_tags_and_items_per_slot(self):
        slots = [7, 8, 9, 10, 11, 0]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "64qam", 1, slots, 30.0)
        rx = mimodet.mimo_receiver("mmse", 1.4, 2, 2, "64qam", 1)
        # Other tags on the grids are not propagated (as channel_estimator/mimo_detector).
        other = [gr.tag_utils.python_to_tag((i, pmt.intern("foo"), pmt.from_long(i)))
                 for i in (0, 2, 5)]
        out, tags = run_receiver(rx, ys, slot_tags(slots) + other, False)
        starts = np.cumsum([0] + [len(b) for b in bits[:-1]])
        self.assertEqual(tag_list(tags), [(int(o), "slot", ns) for o, ns in zip(starts, slots)])
        self.assertEqual(len(out), sum(len(b) for b in bits))
        grid = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(1.4), 2, 1)
        for n_tx, n_rx, mod in ((2, 2, "64qam"), (4, 4, "qpsk"), (1, 2, "16qam")):
            r = mimodet.mimo_receiver("zf", 1.4, n_tx, n_rx, mod, 1)
            d = mimodet.mimo_detector("zf", 1.4, n_tx, n_rx, mod, 1)
            g = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(1.4), n_tx, 1)
            for ns in range(20):
                self.assertEqual(r.items_per_slot(ns), d.items_per_slot(ns))
                self.assertEqual(r.items_per_slot(ns),
                                 len(g.data_elements(ns)) * n_tx * MODS[mod])
        self.assertEqual(rx.items_per_slot(0), len(grid.data_elements(0)) * 2 * 6)
        self.assertEqual(rx.untagged_slots(), 0)
        self.assertEqual(rx.truncated_slots(), 0)

    def test_005_nan_data_element(self):
        # Slot 2 of 4 has a NaN in one data element of antenna 1: zeros, counted; the
        # neighbours are decoded and equal to the chain's.
        slots = [1, 2, 3, 4]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 8, slots, 35.0)
        grid = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(1.4), 2, 8)
        ys[1, 1, grid.data_elements(2)[40]] = np.nan
        offs = np.cumsum([0] + [len(b) for b in bits])
        for alg, soft in (("psd", False), ("mmse", False), ("sfsd", True)):
            out, _, rx, (est, det) = self.compare(alg, 1.4, 2, 2, "16qam", slots, cell_id=8,
                                                  ys=ys, bits=bits, soft=soft)
            self.assertEqual(rx.bad_slots(), 1, alg)
            self.assertEqual(det.bad_slots(), 1, alg)
            self.assertEqual(rx.slots_processed(), 4, alg)
            self.assertTrue(np.all(out[offs[1]:offs[2]] == 0), alg)
            for i in (0, 2, 3):
                got = out[offs[i]:offs[i + 1]]
                if soft:
                    got = (got < 0).astype(np.uint8)
                np.testing.assert_array_equal(got, bits[i], err_msg="%s slot %d" % (alg, i))

    def test_006_unusable_pilots(self):
        # Slot index 1 all zero (no noise variance), slot index 3 NaN at a CRS element:
        # zeros, counted bad; the others decoded as the chain decodes them.
        slots = [4, 5, 6, 7, 8]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "qpsk", 2, slots, 35.0)
        grid = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(1.4), 2, 2)
        ys[1] = 0
        ys[3, 0, grid.crs_elements(7, 1)[2]] = np.nan
        offs = np.cumsum([0] + [len(b) for b in bits])
        for alg, soft in (("fsd", False), ("mtt", True)):
            out, _, rx, (est, det) = self.compare(alg, 1.4, 2, 2, "qpsk", slots, cell_id=2,
                                                  ys=ys, bits=bits, soft=soft)
            self.assertEqual(rx.bad_slots(), 2, alg)
            self.assertEqual(est.bad_slots(), 2, alg)
            for i in (1, 3):
                self.assertTrue(np.all(out[offs[i]:offs[i + 1]] == 0), "%s slot %d" % (alg, i))
            for i in (0, 2, 4):
                got = out[offs[i]:offs[i + 1]]
                if soft:
                    got = (got < 0).astype(np.uint8)
                np.testing.assert_array_equal(got, bits[i], err_msg="%s slot %d" % (alg, i))
        # A stream of zeros only: every slot bad, output all zeros of the right length.
        rx = mimodet.mimo_receiver("zf", 1.4, 2, 2, "qpsk", 2)
        out, tags = run_receiver(rx, np.zeros_like(ys), slot_tags(slots), False)
        self.assertEqual(len(out), offs[-1])
        self.assertTrue(np.all(out == 0))
        self.assertEqual(rx.bad_slots(), len(slots))
        self.assertEqual([v for _, _, v in tag_list(tags)], slots)

    def test_007_untagged_slots(self):
        # No tags at all: the slots count from 0, as in channel_estimator/mimo_detector.
        slots = [0, 1, 2]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 4, slots, 35.0)
        out, _, rx, (est, det) = self.compare("psd", 1.4, 2, 2, "16qam", slots, cell_id=4,
                                              ys=ys, bits=bits, tags=[])
        self.assertEqual(rx.untagged_slots(), 3)
        self.assertEqual(det.untagged_slots(), 3)
        np.testing.assert_array_equal(out, np.concatenate(bits))
        # Only the first item tagged (ns 18): the next items take 19, then 0 and 1 (mod 20).
        slots = [18, 19, 0, 1]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 4, slots, 35.0)
        out, _, rx, _ = self.compare("mmse", 1.4, 2, 2, "16qam", slots, cell_id=4, ys=ys,
                                     bits=bits, tags=slot_tags(slots, [0]))
        self.assertEqual(rx.untagged_slots(), 3)
        np.testing.assert_array_equal(out, np.concatenate(bits))
        # Tagged, untagged, tagged again: the tag wins over the count.
        slots = [5, 6, 12, 13]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 4, slots, 35.0)
        rx = mimodet.mimo_receiver("fsd", 1.4, 2, 2, "16qam", 4)
        out, tags = run_receiver(rx, ys, slot_tags(slots, [0, 2]), False)
        self.assertEqual([v for _, _, v in tag_list(tags)], slots)
        self.assertEqual(rx.untagged_slots(), 2)
        np.testing.assert_array_equal(out, np.concatenate(bits))

    def test_008_detector_parameters_passed_on(self):
        # Non-default detector parameters: still exactly the chain with the same ones.
        slots = [1, 10]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 6, slots, 15.0)
        cases = [
            ("psd", False, dict(lvl=[5, 3, 1], exp=[1, 4], sorted_qr=1)),
            ("fsd", False, dict(T=2)),
            ("sfsd", True, dict(T=1, niter=3, llr_clip=5.0, llr_scaled=False)),
            ("mtt", True, dict(sorted_qr=0, llr_clip=8.0)),
            ("mmse", True, dict(llr_scaled=False, threads=1)),
            ("zf", True, dict(llr_clip=2.0, threads=2)),
        ]
        for alg, soft, params in cases:
            out, _, _, _ = self.compare(alg, 1.4, 2, 2, "16qam", slots, cell_id=6, ys=ys,
                                        bits=bits, soft=soft, **params)
            if "llr_clip" in params:
                self.assertLessEqual(np.max(np.abs(out)), params["llr_clip"] + 1e-6, alg)
        # llr_scaled=False: noise_var times the scaled LLRs (not the same numbers).
        scaled, _, _, _ = self.compare("mmse", 1.4, 2, 2, "16qam", slots, cell_id=6, ys=ys,
                                       bits=bits, soft=True)
        raw, _, _, _ = self.compare("mmse", 1.4, 2, 2, "16qam", slots, cell_id=6, ys=ys,
                                    bits=bits, soft=True, llr_scaled=False)
        np.testing.assert_array_equal(np.sign(raw), np.sign(scaled))
        self.assertLess(np.max(np.abs(raw)), np.max(np.abs(scaled)))

    def test_009_est_threads(self):
        # The estimator's threads do not change the results (bit for bit).
        slots = [0, 1, 2]
        bits, ys = make_slots(self.rng, 3, 2, 4, "16qam", 30, slots, 20.0)
        ref = None
        for t in (0, 1, 3, 8):
            out, _, _, _ = self.compare("sfsd", 3, 2, 4, "16qam", slots, cell_id=30, ys=ys,
                                        bits=bits, soft=True, est_threads=t)
            if ref is None:
                ref = out
            np.testing.assert_array_equal(out, ref, err_msg="est_threads=%d" % t)

    def test_010_invalid_parameters(self):
        bad = [
            (("foo", 1.4, 2, 2, "16qam", 0), {}),                    # algorithm
            (("mmse", 2.0, 2, 2, "16qam", 0), {}),                   # bandwidth
            (("mmse", 1.4, 3, 4, "16qam", 0), {}),                   # n_tx
            (("mmse", 1.4, 4, 2, "16qam", 0), {}),                   # n_rx < n_tx
            (("mmse", 1.4, 2, 9, "16qam", 0), {}),                   # n_rx > 8
            (("mmse", 1.4, 2, 2, "8psk", 0), {}),                    # modulation
            (("mmse", 1.4, 2, 2, "16qam", 504), {}),                 # cell_id
            (("mmse", 1.4, 2, 2, "16qam", -2), {}),
            (("psd", 1.4, 2, 2, "16qam", 0, "cpu", True), {}),       # hard + soft
            (("fsd", 1.4, 2, 2, "16qam", 0), dict(soft_output=True)),
            (("mmse", 1.4, 2, 2, "16qam", 0, "gpu"), {}),            # backend
            (("mmse", 1.4, 2, 2, "16qam", 0), dict(est_threads=-1)),
            (("mmse", 1.4, 2, 2, "16qam", 0), dict(est_threads=257)),
            (("psd", 1.4, 2, 2, "16qam", 0), dict(lvl=[2, 1], exp=[1, 1])),
            (("mmse", 1.4, 2, 2, "16qam", 0), dict(deadline_us=100.0)),  # psd only
            (("psd", 1.4, 2, 2, "16qam", 0), dict(deadline_us=-1.0)),
        ]
        for args, kw in bad:
            with self.assertRaises(ValueError, msg="%s %s" % (args, kw)):
                mimodet.mimo_receiver(*args, **kw)
        # Valid ones, with every keyword.
        rx = mimodet.mimo_receiver("sfsd", 1.4, 2, 2, "16qam", 0, soft_output=True, T=1,
                                   niter=3, llr_clip=10.0, threads=1, llr_scaled=False,
                                   est_threads=256)
        self.assertEqual(rx.backend(), "cpu")
        self.assertEqual(rx.slots_processed(), 0)
        self.assertEqual(rx.bad_slots(), 0)
        rx = mimodet.mimo_receiver(algorithm="zf", bandwidth_mhz=20, n_tx=1, n_rx=8)
        self.assertEqual(rx.items_per_slot(1),
                         mimodet.mimo_detector("zf", 20, 1, 8).items_per_slot(1))

    def test_011_backend(self):
        self.assertEqual(mimodet.mimo_receiver("mmse", 1.4, 2, 2).backend(), "cpu")
        self.assertEqual(mimodet.mimo_receiver("mmse", 1.4, 2, 2, "16qam", 0, "cpu").backend(),
                         "cpu")
        if mimodet.cuda_device_count() == 0:
            # Without a device: cuda is refused at construction, auto runs on the CPU.
            with self.assertRaises(RuntimeError):
                mimodet.mimo_receiver("mmse", 1.4, 2, 2, "16qam", 0, "cuda")
            with self.assertRaises(RuntimeError):
                mimodet.mimo_receiver("psd", 1.4, 2, 2, backend="cuda", deadline_us=50.0)
            rx = mimodet.mimo_receiver("psd", 1.4, 2, 2, "16qam", 0, "auto", slot_limit_us=0.0)
            self.assertEqual(rx.backend(), "cpu")
            # ... and is the CPU chain.
            bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 0, [0, 1], 20.0)
            out, _ = run_receiver(rx, ys, slot_tags([0, 1]), False)
            ref, _, _, _ = run_chain(1.4, 2, 2, 0, ys, slot_tags([0, 1]), "psd", "16qam", False)
            np.testing.assert_array_equal(out, ref)
        else:
            self.assertEqual(mimodet.mimo_receiver("mmse", 1.4, 2, 2, backend="cuda").backend(),
                             "cuda")
            self.assertEqual(mimodet.mimo_receiver("mmse", 1.4, 2, 2, backend="auto").backend(),
                             "cuda")

    def test_012_psd_deadline(self):
        # A tight deadline: runs on the CPU, every slot output whole; truncated slots (if
        # any) are tagged on their first item with the number of truncated vectors.
        slots = [0, 1, 2, 3, 4, 5]
        bits, ys = make_slots(self.rng, 3, 4, 4, "64qam", 12, slots, 10.0)
        rx = mimodet.mimo_receiver("psd", 3, 4, 4, "64qam", 12, "cpu", deadline_us=20.0)
        self.assertEqual(rx.backend(), "cpu")
        out, tags = run_receiver(rx, ys, slot_tags(slots), False)
        starts = list(np.cumsum([0] + [len(b) for b in bits[:-1]]))
        self.assertEqual(len(out), sum(len(b) for b in bits))
        self.assertTrue(np.all((out == 0) | (out == 1)))
        n_trunc = rx.truncated_slots()
        self.assertIsInstance(n_trunc, int)
        self.assertGreaterEqual(n_trunc, 0)
        self.assertLessEqual(n_trunc, len(slots))
        tl = tag_list(tags)
        self.assertEqual([(o, v) for o, k, v in tl if k == "slot"],
                         [(int(o), ns) for o, ns in zip(starts, slots)])
        trunc = [(o, v) for o, k, v in tl if k == "truncated"]
        self.assertEqual(len(trunc), n_trunc)
        for o, v in trunc:
            self.assertIn(o, starts)
            self.assertGreater(v, 0)
        self.assertEqual(rx.bad_slots(), 0)
        print("psd deadline 20 us, 3 MHz 4x4 64qam 10 dB: %d of %d slots truncated"
              % (n_trunc, len(slots)))
        # A generous deadline truncates nothing: the exact chain's bits.
        slots = [0, 1]
        bits, ys = make_slots(self.rng, 1.4, 2, 2, "16qam", 12, slots, 20.0)
        out, _, rx, _ = self.compare("psd", 1.4, 2, 2, "16qam", slots, cell_id=12, ys=ys,
                                     bits=bits)
        rx = mimodet.mimo_receiver("psd", 1.4, 2, 2, "16qam", 12, deadline_us=1e6)
        got, tags = run_receiver(rx, ys, slot_tags(slots), False)
        self.assertEqual(rx.truncated_slots(), 0)
        np.testing.assert_array_equal(got, out)

    def test_014_long_stream(self):
        # Two frames of slots (40 items, several work calls and queued slots): still the
        # chain's output, item for item, with one tag per slot.
        slots = list(range(20)) * 2
        bits, ys = make_slots(self.rng, 3, 2, 2, "16qam", 101, slots, 22.0)
        for alg, soft in (("mmse", True), ("psd", False), ("sfsd", False)):
            out, _, rx, _ = self.compare(alg, 3, 2, 2, "16qam", slots, cell_id=101, ys=ys,
                                         bits=bits, soft=soft)
            self.assertEqual(rx.slots_processed(), 40)
            self.assertEqual(rx.bad_slots(), 0)
            self.assertEqual(len(out), sum(len(b) for b in bits))

    def test_015_time_domain_equals_ofdm_demod_then_receiver(self):
        # Time-domain input: exactly ofdm_demod -> mimo_receiver (the same CPU FFT and
        # tables), bits and LLRs, with samples before the first tag, the default and an
        # explicit FFT back-off.
        mhz, n_tx, n_rx, cell = 1.4, 2, 2, 7
        num = mimodet.lte_numerology.from_bandwidth(mhz)
        S = num.slot_samples()
        slots = [8, 9, 10, 11, 12]
        bits, ys = make_slots(self.rng, mhz, n_tx, n_rx, "16qam", cell, slots, 30.0)
        lead = 37
        samples = np.concatenate(
            [(0.1 * self.rng.standard_normal((n_rx, lead))).astype(np.complex64),
             modulate(mhz, ys)], axis=1)
        tags = [slot_tag_at(lead + i * S, ns) for i, ns in enumerate(slots)]
        for alg, soft, backoff in (("psd", False, -1), ("mmse", True, -1),
                                   ("sfsd", False, 0), ("mtt", True, num.cp_other)):
            what = "%s soft=%s backoff=%d" % (alg, soft, backoff)
            ref, ref_tags, ref_rx = run_demod_receiver(mhz, n_tx, n_rx, cell, samples, tags,
                                                       alg, "16qam", soft, backoff)
            rx = mimodet.mimo_receiver(alg, mhz, n_tx, n_rx, "16qam", cell, "cpu", soft,
                                       time_domain=True, fft_backoff=backoff,
                                       slot_limit_us=0.0)
            self.assertTrue(rx.time_domain())
            self.assertEqual(rx.input_signature().sizeof_stream_item(0), 8, what)
            out, out_tags = run_time_receiver(rx, samples, tags, soft)
            self.assertEqual(len(out), sum(rx.items_per_slot(ns) for ns in slots), what)
            np.testing.assert_array_equal(out, ref, err_msg=what)
            self.assertEqual(tag_list(out_tags), tag_list(ref_tags), what)
            self.assertEqual(rx.slots_processed(), len(slots), what)
            self.assertEqual(rx.bad_slots(), 0, what)
            self.assertEqual(rx.untagged_slots(), 0, what)
            if not soft:  # 30 dB: the transmitted bits
                np.testing.assert_array_equal(out, np.concatenate(bits), err_msg=what)

    def test_016_time_domain_alignment_and_bad_samples(self):
        mhz, n_tx, n_rx, cell = 1.4, 2, 2, 3
        num = mimodet.lte_numerology.from_bandwidth(mhz)
        S = num.slot_samples()
        slots = [3, 4, 5, 6]
        bits, ys = make_slots(self.rng, mhz, n_tx, n_rx, "qpsk", cell, slots, 30.0)
        samples = modulate(mhz, ys)
        # Only the first slot tagged: the others count on and are counted as untagged.
        rx = mimodet.mimo_receiver("fsd", mhz, n_tx, n_rx, "qpsk", cell, time_domain=True)
        out, tags = run_time_receiver(rx, samples, [slot_tag_at(0, 3)], False)
        self.assertEqual([v for _, _, v in tag_list(tags)], slots)
        self.assertEqual(rx.untagged_slots(), 3)
        np.testing.assert_array_equal(out, np.concatenate(bits))
        # No tag at all: nothing to align to, nothing out.
        rx = mimodet.mimo_receiver("fsd", mhz, n_tx, n_rx, "qpsk", cell, time_domain=True)
        out, _ = run_time_receiver(rx, samples, [], False)
        self.assertEqual(len(out), 0)
        self.assertEqual(rx.slots_processed(), 0)
        # A tag inside slot 1 (the stream jumped): the partial slot before it is dropped
        # and the receiver re-aligns to it (ns 5), then counts on (6); the half slot at
        # the end is not a slot.
        rx = mimodet.mimo_receiver("zf", mhz, n_tx, n_rx, "qpsk", cell, time_domain=True)
        jump = S + S // 2
        out, tags = run_time_receiver(
            rx, samples, [slot_tag_at(0, 3), slot_tag_at(jump, 5)], False)
        self.assertEqual([v for _, _, v in tag_list(tags)], [3, 5, 6])
        self.assertEqual(rx.untagged_slots(), 1)
        np.testing.assert_array_equal(out[:len(bits[0])], bits[0])
        # A NaN in a data symbol's FFT window: a bad slot, zeros, the others decoded; a
        # NaN in a CP (outside the windows) harms nothing.
        bad = samples.copy()
        bad[1, S + num.cp_first + 5] = np.nan          # slot 1, symbol 0's window
        bad[0, 2 * S + 2] = np.nan                      # slot 2, symbol 0's CP start
        rx = mimodet.mimo_receiver("fsd", mhz, n_tx, n_rx, "qpsk", cell, time_domain=True)
        out, _ = run_time_receiver(rx, bad, [slot_tag_at(0, 3)], False)
        self.assertEqual(rx.bad_slots(), 1)
        n0, n1 = len(bits[0]), len(bits[1])
        np.testing.assert_array_equal(out[n0:n0 + n1], 0)
        np.testing.assert_array_equal(np.delete(out, np.s_[n0:n0 + n1]),
                                      np.concatenate([bits[0]] + bits[2:]))

    def test_017_time_domain_invalid_parameters(self):
        with self.assertRaises(ValueError):  # a back-off for grid input
            mimodet.mimo_receiver("zf", 1.4, 2, 2, "qpsk", 0, fft_backoff=2)
        for b in (-2, 10):  # cp_other is 9 samples at 1.4 MHz
            with self.assertRaises(ValueError, msg=str(b)):
                mimodet.mimo_receiver("zf", 1.4, 2, 2, "qpsk", 0, time_domain=True,
                                      fft_backoff=b)
        rx = mimodet.mimo_receiver("zf", 1.4, 2, 2, "qpsk", 0, time_domain=True,
                                   fft_backoff=9)
        self.assertTrue(rx.time_domain())
        self.assertFalse(mimodet.mimo_receiver("zf", 1.4, 2, 2, "qpsk", 0).time_domain())

    def test_013_grc_block(self):
        # The GRC definition: a flowgraph framer -> channel -> {MIMO Receiver, Channel
        # Estimator -> MIMO Detector} compiles with grcc, runs, and the receivers equal the
        # chain bit for bit; the C++ output calls make() with every argument.
        grcc = shutil.which("grcc")
        if grcc is None:
            self.skipTest("grcc not found")
        import yaml
        tmp = tempfile.mkdtemp(prefix="mimodet_qa_receiver_")
        try:
            self._grc_python(tmp, yaml)
            self._grc_cpp(tmp, yaml)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # -- GRC helpers (the .grc scaffolding is qa_examples', beside this file) ------
    # The receivers under test: name -> (parameters, soft).
    GRC_RX = {
        "rx_psd": (dict(algorithm="'psd'", lvl="[5, 3, 1]", exp="[1, 4]", sorted_qr=1,
                        est_threads=2), False),
        "rx_sfsd": (dict(algorithm="'sfsd'", soft_output="True", T=1, niter=3,
                         llr_clip=20), True),
        "rx_mmse": (dict(algorithm="'mmse'", soft_output="False"), False),
        # The pilot ratio estimated (the chain's estimator takes it as known, 0 dB: the
        # bits are compared with the transmitted ones only).
        "rx_est": (dict(algorithm="'mmse'", soft_output="False",
                        estimate_pilot_ratio="True"), False),
    }

    def _graph(self, lang):
        common = GRC_COMMON
        blks, conns = front_end_graph(lang, 30)
        for name, (extra, soft) in self.GRC_RX.items():
            p = dict(common)
            p.update(extra)
            blks.append((name, "mimodet_mimo_receiver", p))
            # The chain with the same detector parameters.
            dp = {k: v for k, v in p.items()
                  if k not in ("est_threads", "estimate_pilot_ratio")}
            blks.append((name + "_det", "mimodet_mimo_detector", dp))
            for n in (name, name + "_det"):
                blks.append((n + "_out", "blocks_vector_sink_x",
                             dict(type="float" if soft else "byte", vlen=1,
                                  reserve_items=1024)))
                conns.append((n, 0, n + "_out", 0))
            conns += [("chan", 0, name, 0), ("chan", 1, name, 1),
                      ("chan", 0, name + "_det", 0), ("chan", 1, name + "_det", 1),
                      ("est", 0, name + "_det", 2), ("est", 1, name + "_det", 3)]
        return flowgraph("rx_blocks_" + lang, blks, conns, lang=lang)

    def _grcc(self, tmp, yaml, lang):
        grc = os.path.join(tmp, "rx_blocks_%s.grc" % lang)
        with open(grc, "w") as f:
            yaml.safe_dump(self._graph(lang), f)
        p = subprocess.run(["grcc", "-o", tmp, grc], env=grc_env(), capture_output=True,
                           text=True, timeout=180)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])

    def _grc_python(self, tmp, yaml):
        from gnuradio.mimodet import loopback
        self._grcc(tmp, yaml, "python")
        with open(os.path.join(tmp, "rx_blocks_python.py")) as f:
            src = f.read()
        self.assertIn("mimodet.mimo_receiver('psd', bandwidth, 2, 2, 'qpsk', 1, 'cpu', "
                      "soft_output=False, lvl=[5, 3, 1], exp=[1, 4], T=(-1), niter=(-1), "
                      "sorted_qr=1, llr_clip=0, threads=1, device=0, llr_scaled=True, "
                      "deadline_us=0, budget=(-1), slot_limit_us=2500, est_threads=2, time_domain=False, fft_backoff=(-1), pilot_ratio_db=0)",
                      src)
        self.assertIn("fft_backoff=(-1), pilot_ratio_db=float('nan'))", src)
        code = textwrap.dedent("""
            import json, sys
            sys.path.insert(0, %r)
            import rx_blocks_python as m
            tb = m.rx_blocks_python()
            tb.run()
            r = {}
            for n in %r:
                r[n] = list(map(float, getattr(tb, n + "_out").data()))
                r[n + "_det"] = list(map(float, getattr(tb, n + "_det_out").data()))
                r[n + "_bad"] = getattr(tb, n).bad_slots()
                r[n + "_slots"] = getattr(tb, n).slots_processed()
            print("RESULT " + json.dumps(r))
            """) % (tmp, list(self.GRC_RX))
        p = subprocess.run([sys.executable, "-c", code], env=grc_env(), capture_output=True,
                           text=True, timeout=180)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        import json
        r = json.loads([l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1][7:])
        tx = np.array(loopback.frame_bits(1.4, 2, "qpsk", 1, 3), dtype=np.uint8)
        for name, (extra, soft) in self.GRC_RX.items():
            out = np.array(r[name])
            self.assertEqual(len(out), len(tx), name)
            if "estimate_pilot_ratio" not in extra:
                np.testing.assert_array_equal(out, np.array(r[name + "_det"]), err_msg=name)
            bits = (out < 0).astype(np.uint8) if soft else out.astype(np.uint8)
            self.assertLess(float(np.mean(bits != tx)), 1e-3, name)
            self.assertEqual(r[name + "_slots"], 20, name)
            self.assertEqual(r[name + "_bad"], 0, name)
            if soft:
                self.assertLessEqual(float(np.max(np.abs(out))), 20 + 1e-3, name)

    def _grc_cpp(self, tmp, yaml):
        self._grcc(tmp, yaml, "cpp")
        with open(os.path.join(tmp, "rx_blocks_cpp", "rx_blocks_cpp.cpp")) as f:
            src = f.read()
        with open(os.path.join(tmp, "rx_blocks_cpp", "CMakeLists.txt")) as f:
            self.assertIn("gnuradio-mimodet", f.read())
        psd = detector_make(src, "rx_psd")
        self.assertIn('block_detector_config("psd", 2, 2, "qpsk", "cpu");', psd)
        for line in ("cfg.psd_lvl = {5, 3, 1};", "cfg.psd_exp = {1, 4};", "cfg.sorted_qr = 1;",
                     "cfg.threads = 1;", "cfg.device = 0;",
                     "cfg.psd_deadline_us = static_cast<double>(0);",
                     "cfg.psd_node_budget = (-1);",
                     "mimo_receiver::make(cfg, bandwidth, 1, false, 2, false, (-1), "
                     "static_cast<double>(0), static_cast<double>(2500));"):
            self.assertIn(line, psd)
        sfsd = detector_make(src, "rx_sfsd")
        self.assertIn('block_detector_config("sfsd", 2, 2, "qpsk", "cpu");', sfsd)
        for line in ("cfg.fsd_full_levels = 1;", "cfg.sfsd_niter = 3;",
                     "cfg.llr_clip = static_cast<float>(20);",
                     "mimo_receiver::make(cfg, bandwidth, 1, true, 0, false, (-1), "
                     "static_cast<double>(0), static_cast<double>(2500));"):
            self.assertIn(line, sfsd)
        # The estimated pilot ratio: NaN.
        est = [l.strip() for l in src.splitlines()
               if "std::numeric_limits<double>::quiet_NaN()" in l]
        self.assertEqual(len(est), 1)
        with open(os.path.join(tmp, "rx_blocks_cpp", "rx_blocks_cpp.hpp")) as f:
            hpp = f.read()
        self.assertIn("#include <gnuradio/mimodet/mimo_receiver.h>", hpp)
        self.assertIn("#include <limits>", hpp)
        rx_lines = [l for l in src.splitlines() if "mimo_receiver" in l or "cfg" in l]
        self.assertNotIn("'", "".join(rx_lines))
        self.assertNotIn("True", "".join(rx_lines))
        # The receivers' and detectors' make code compiles against the public headers.
        compile_detector_makes(self, src, "double bandwidth = 1.4;")

    def test_019_config_face_equals_keyword_face(self):
        # mimo_receiver(config, ...) with a detector_config set field by field makes the
        # same receiver as the keyword face, block-only parameters included.
        mhz, n_tx, n_rx, mod, cell, slots = 1.4, 2, 2, "16qam", 6, [1, 10]
        bits, ys = make_slots(self.rng, mhz, n_tx, n_rx, mod, cell, slots, 25.0)
        tags = slot_tags(slots)
        for alg, soft, params, fields in (
                ("psd", False, dict(lvl=[5, 3, 1], exp=[1, 4], sorted_qr=1),
                 dict(psd_lvl=[5, 3, 1], psd_exp=[1, 4], sorted_qr=1)),
                ("sfsd", True, dict(T=1, niter=3, llr_clip=5.0, llr_scaled=False),
                 dict(fsd_full_levels=1, sfsd_niter=3, llr_clip=5.0, llr_scaled=False))):
            cfg = config_of(alg, n_tx, n_rx, mod, **fields)
            ref, ref_tags = run_receiver(
                mimodet.mimo_receiver(alg, mhz, n_tx, n_rx, mod, cell, "cpu", soft,
                                      est_threads=2, pilot_ratio_db=0.0, slot_limit_us=0.0,
                                      **params),
                ys, tags, soft)
            self.assertEqual(len(ref), sum(len(b) for b in bits), alg)
            hard = (ref < 0).astype(np.uint8) if soft else ref
            self.assertLess(np.mean(hard != np.concatenate(bits)), 0.05, alg)
            for rx in (mimodet.mimo_receiver(cfg, mhz, cell, soft, 2, False, -1, 0.0, 0.0),
                       mimodet.mimo_receiver(config=cfg, bandwidth_mhz=mhz, cell_id=cell,
                                             soft_output=soft, est_threads=2,
                                             pilot_ratio_db=0.0, slot_limit_us=0.0)):
                out, out_tags = run_receiver(rx, ys, tags, soft)
                np.testing.assert_array_equal(out, ref, err_msg=alg)
                self.assertEqual(tag_list(out_tags), tag_list(ref_tags), alg)
                self.assertEqual(rx.bad_slots(), 0)

    def test_020_invalid_configs(self):
        # The config face checks the config and the block's own parameters when the
        # receiver is made, with the receiver's name in the message.
        cfg = config_of
        bad = [
            ((cfg(n_tx=4, n_rx=2), 1.4, 0), {}, "mimo_receiver: n_rx must be n_tx..8"),
            ((cfg(algorithm="psd"), 1.4, 0, True), {}, "mimo_receiver: algorithm 'psd'"),
            ((cfg(algorithm="bar"), 1.4, 0), {}, "unknown algorithm 'bar'"),
            ((cfg(), 1.4, -2), {}, "mimo_receiver: cell_id must be 0..503"),
            ((cfg(), 1.4, 0), dict(est_threads=257), "mimo_receiver: threads must be 0..256"),
            ((cfg(), 1.4, 0), dict(fft_backoff=2), "fft_backoff applies to time_domain"),
            ((cfg(), 1.4, 0), dict(time_domain=True, fft_backoff=100), "fft_backoff must be"),
            ((cfg(), 1.4, 0), dict(pilot_ratio_db=20.0), "pilot_ratio_db must be finite"),
            ((cfg(algorithm="zf", psd_deadline_us=5.0), 1.4, 0), {},
             "psd_deadline_us applies to algorithm 'psd' only"),
        ]
        for args, kw, msg in bad:
            with self.assertRaisesRegex(ValueError, msg):
                mimodet.mimo_receiver(*args, **kw)
        with self.assertRaisesRegex(TypeError, "detector's parameters are the config's"):
            mimodet.mimo_receiver(cfg(), 1.4, 0, niter=2)
        rx = mimodet.mimo_receiver(cfg(), 1.4, 0, time_domain=True, fft_backoff=2)
        self.assertTrue(rx.time_domain())

    def test_018_stop_ends_a_long_detection(self):
        # ML 4x4 16QAM (2^16 candidates per vector, about 1900 vectors per 5 MHz slot): a
        # work() call of a slot lasts seconds on a small machine. top_block.stop()
        # interrupts the block's thread, which the detection polls: wait() returns within
        # a second, long before the slots are done.
        mhz, n, mod = 5.0, 4, "16qam"
        slots = list(range(10))
        _, ys = make_slots(self.rng, mhz, n, n, mod, 17, slots, 10.0)
        rx = mimodet.mimo_receiver("ml", mhz, n, n, mod, 17, "cpu", False)
        tb = gr.top_block()
        connect_sources(tb, ys, slot_tags(slots), [rx])
        tb.connect(rx, blocks.vector_sink_b())
        stop_s = stop_while_running(tb)
        self.assertLess(stop_s, 1.0)
        self.assertLess(rx.slots_processed(), len(slots))
        print("stop() + wait(): %.1f ms" % (stop_s * 1e3))

    def test_022_cell_change_from_tags(self):
        # cell_id -1: the cell of each slot from the "cell_id" tags, which change mid-stream
        # (ofdm_sync after a new cell search). The receiver takes the new cell's pilots and
        # data map from the first slot of the new cell on: its output equals two
        # receivers given each cell, on their halves. No slot before the first tag is
        # known: flagged (zeros, counted bad).
        mhz, n, mod = 1.4, 2, "16qam"
        first, second = [0, 1, 2, 3], [4, 5, 6]
        bits_a, ys_a = make_slots(self.rng, mhz, n, n, mod, 7, first, 30.0)
        bits_b, ys_b = make_slots(self.rng, mhz, n, n, mod, 301, second, 30.0)
        slots = first + second
        ys = np.concatenate([ys_a, ys_b])
        cells = [gr.tag_utils.python_to_tag((i, pmt.intern("cell_id"), pmt.from_long(c)))
                 for i, c in ((0, 7), (len(first), 301))]
        for alg in ("fsd", "mmse"):
            rx = mimodet.mimo_receiver(alg, mhz, n, n, mod, -1, "cpu", False,
                                       slot_limit_us=0.0)
            out, tags = run_receiver(rx, ys, slot_tags(slots) + cells, False)
            ref_a, _ = run_receiver(mimodet.mimo_receiver(alg, mhz, n, n, mod, 7, "cpu", False),
                                    ys_a, slot_tags(first), False)
            ref_b, _ = run_receiver(mimodet.mimo_receiver(alg, mhz, n, n, mod, 301, "cpu",
                                                          False),
                                    ys_b, slot_tags(second, range(len(second))), False)
            np.testing.assert_array_equal(out, np.concatenate([ref_a, ref_b]), err_msg=alg)
            self.assertEqual([v for _, k, v in tag_list(tags) if k == "slot"], slots)
            self.assertEqual(rx.bad_slots(), 0, alg)
            if alg == "fsd":  # at 30 dB the bits sent (another cell's pilots could not)
                np.testing.assert_array_equal(out, np.concatenate(bits_a + bits_b))
        # The second cell's tag only: the first cell's slots are flagged, the rest received.
        rx = mimodet.mimo_receiver("fsd", mhz, n, n, mod, -1, "cpu", False)
        out, _ = run_receiver(rx, ys, slot_tags(slots) + cells[1:], False)
        offs = np.cumsum([0] + [rx.items_per_slot(ns) for ns in slots])
        self.assertEqual(rx.bad_slots(), len(first))
        self.assertFalse(np.any(out[:offs[len(first)]]))
        np.testing.assert_array_equal(out[offs[len(first)]:], np.concatenate(bits_b))

    def test_021_device(self):
        # device: as mimo_detector's; the estimator follows the detector's device.
        check_device_keyword(
            self, lambda **kw: mimodet.mimo_receiver("mmse", 1.4, 2, 2, **kw))

if __name__ == "__main__":
    gr_unittest.run(qa_mimo_receiver)
