#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the mimo_detector block: test grids built with numpy from mimodet.lte_grid and the
36.211 constellations (the framer's mapping of docs/SLOT_LAYOUT.md), a known H per
subcarrier, and the detector block's bits/LLRs against the transmitted bits."""

import time

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

MODS = {"qpsk": 2, "16qam": 4, "64qam": 6}
HARD = ("psd", "fsd")


def map_bits(grid, ns, bits, mod):
    """The framer's mapping: data element j carries on port t the symbol of bits
    [(j n_tx + t) q, (j n_tx + t + 1) q); each port its CRS. Returns x (n_tx, 7*n_sc)."""
    num = grid.numerology()
    n_tx, n_sc, q = grid.n_ports(), num.n_sc, MODS[mod]
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod))
    data = np.array(grid.data_elements(ns))
    labels = (bits.reshape(len(data), n_tx, q) << np.arange(q - 1, -1, -1)).sum(axis=2)
    x = np.zeros((n_tx, 7 * n_sc), np.complex64)
    x[:, data] = pts[labels].T
    for t in range(n_tx):
        for re in grid.crs_elements(ns, t):
            x[t, re] = grid.crs_value(ns, t, re // n_sc, re % n_sc)
    return x


def add_noise(rng, y, nv):
    n = np.sqrt(nv / 2) * (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape))
    return (y + n).astype(np.complex64)


def make_slot(rng, grid, ns, n_rx, mod, nv):
    """Random bits of slot ns mapped as the framer does; returns bits, y (n_rx, 7*n_sc),
    H (n_sc, n_rx, n_tx) i.i.d. CN(0,1) per subcarrier."""
    num = grid.numerology()
    n_tx, n_sc = grid.n_ports(), num.n_sc
    bits = rng.integers(0, 2, size=len(grid.data_elements(ns)) * n_tx * MODS[mod]).astype(np.uint8)
    x = map_bits(grid, ns, bits, mod)
    H = ((rng.standard_normal((n_sc, n_rx, n_tx)) + 1j * rng.standard_normal((n_sc, n_rx, n_tx)))
         / np.sqrt(2)).astype(np.complex64)
    y = np.einsum("krt,tlk->rlk", H, x.reshape(n_tx, 7, n_sc)).reshape(n_rx, -1)
    return bits, add_noise(rng, y, nv), H


def run_detector(det, mhz, n_rx, ys, Hs, nvs, slots, soft, tagged=True, queue=0):
    """Flowgraph: n_rx grid sources + H + noise_var -> det -> sink. Returns data, tags.
    queue > 0: the sources' buffers hold 2 * queue slots (half of them per call), so
    that many slots can wait for the detector at once."""
    num = mimodet.lte_numerology.from_bandwidth(mhz)
    tb = gr.top_block()
    grid_srcs = []
    tags = [gr.tag_utils.python_to_tag((i, pmt.intern("slot"), pmt.from_long(ns)))
            for i, ns in enumerate(slots)] if tagged else []
    for r in range(n_rx):
        src = blocks.vector_source_c(np.concatenate([y[r] for y in ys]).tolist(), False,
                                     7 * num.n_sc, tags if r == 0 else [])
        tb.connect(src, (det, r))
        grid_srcs.append(src)
    h_src = blocks.vector_source_c(np.concatenate([H.ravel() for H in Hs]).tolist(), False,
                                   Hs[0].size)
    nv_src = blocks.vector_source_f([float(v) for v in nvs], False)
    tb.connect(h_src, (det, n_rx))
    tb.connect(nv_src, (det, n_rx + 1))
    if queue:
        for b in [h_src, nv_src] + grid_srcs:
            b.set_min_output_buffer(2 * queue)
    snk = blocks.vector_sink_f() if soft else blocks.vector_sink_b()
    tb.connect(det, snk)
    tb.run()
    return np.array(snk.data()), snk.tags()


def config_of(algorithm="mmse", n_tx=2, n_rx=2, mod="16qam", **fields):
    """A detector_config set field by field (fields: its own names), not through the
    blocks' keyword face."""
    c = mimodet.detector_config()
    c.algorithm = algorithm
    c.n_tx, c.n_rx = n_tx, n_rx
    c.mod = mimodet.parse_modulation(mod)
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def check_device_keyword(test, make):
    """The device keyword of the block make(**keywords) makes (a 2x2 mmse detector): an
    int >= 0 that the CPU backend ignores; backend cuda refuses an index without a
    device, auto takes the CPU then."""
    for device in (0, 2):
        test.assertEqual(make(device=device).backend(), "cpu")
    with test.assertRaisesRegex(ValueError, "device must be >= 0.*got -1"):
        make(device=-1)
    with test.assertRaisesRegex(TypeError, "device must be a int"):
        make(device=0.0)
    n = mimodet.cuda_device_count()
    missing = "no CUDA device" if n == 0 else "CUDA device %d does not exist" % n
    with test.assertRaisesRegex(RuntimeError, missing):
        make(backend="cuda", device=n)
    test.assertEqual(make(backend="auto", device=n).backend(), "cpu")


def stop_while_running(tb, after_s=0.5):
    """Starts tb and stops it after_s seconds in; returns the seconds that
    tb.stop(); tb.wait() took."""
    tb.start()
    time.sleep(after_s)
    t0 = time.monotonic()
    tb.stop()
    tb.wait()
    return time.monotonic() - t0


class qa_mimo_detector(gr_unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(77)

    def chain(self, alg, n_tx, n_rx, mod, slots, snr_db=None, soft=False, mhz=1.4, cell_id=9,
              nv_override=None, **params):
        num = mimodet.lte_numerology.from_bandwidth(mhz)
        grid = mimodet.lte_grid(num, n_tx, cell_id)
        nv = 1e-6 if snr_db is None else mimodet.snr_to_noise_var(snr_db, n_tx)
        gen = [make_slot(self.rng, grid, ns, n_rx, mod, 0.0 if snr_db is None else nv)
               for ns in slots]
        nvs = [nv] * len(slots) if nv_override is None else nv_override
        # Outputs compared with the engine's: psd's stall bound (a wall-clock deadline)
        # would make them depend on the machine's load.
        params.setdefault("slot_limit_us", 0.0)
        det = mimodet.mimo_detector(alg, mhz, n_tx, n_rx, mod, cell_id, "cpu", soft, **params)
        out, tags = run_detector(det, mhz, n_rx, [g[1] for g in gen], [g[2] for g in gen], nvs,
                                 slots, soft)
        bits = [g[0] for g in gen]
        # One slot tag at the start of every slot's output, with its ns.
        starts = np.cumsum([0] + [len(b) for b in bits[:-1]])
        self.assertEqual([t.offset for t in tags], list(starts))
        self.assertEqual([pmt.to_long(t.value) for t in tags], list(slots))
        for ns, b in zip(slots, bits):
            self.assertEqual(det.items_per_slot(ns), len(b))
        return out, bits, det

    def test_001_exact_bits_every_algorithm(self):
        # Noiseless grids with known H: every algorithm gives back the bits, slot 0
        # (PSS/SSS, fewer data elements) and 10 included.
        slots = [0, 1, 2, 10, 11]
        for n_tx, n_rx, mod in ((2, 2, "64qam"), (4, 4, "16qam")):
            for alg in mimodet.algorithms():
                if alg == "ml" and n_tx == 4:
                    continue  # 65536 candidates per vector: slow; covered at 2x2
                out, bits, det = self.chain(alg, n_tx, n_rx, mod, slots)
                np.testing.assert_array_equal(out, np.concatenate(bits),
                                              err_msg="%s %dx%d" % (alg, n_tx, n_rx))
                self.assertEqual(det.bad_slots(), 0)
                self.assertEqual(det.slots_processed(), len(slots))

    def test_002_high_snr_bits(self):
        # 35 dB with the noise: the near-ML detectors still make no error.
        for alg in ("psd", "fsd", "sfsd", "mtt", "ml"):
            out, bits, _ = self.chain(alg, 2, 2, "16qam", [3, 4, 5], snr_db=35)
            np.testing.assert_array_equal(out, np.concatenate(bits), err_msg=alg)

    def test_003_llr_signs(self):
        # Noiseless grids: every soft detector's LLR signs are the transmitted bits.
        slots = [0, 1, 6]
        for n_tx, n_rx, mod in ((2, 2, "64qam"), (4, 4, "16qam")):
            for alg in ("sfsd", "mtt", "mmse", "zf", "ml"):
                if alg == "ml" and n_tx == 4:
                    continue
                llr, bits, _ = self.chain(alg, n_tx, n_rx, mod, slots, soft=True,
                                          llr_clip=50.0)
                ref = np.concatenate(bits)
                self.assertEqual(len(llr), len(ref))
                np.testing.assert_array_equal((llr < 0).astype(np.uint8), ref,
                                              err_msg="%s %dx%d" % (alg, n_tx, n_rx))
                self.assertLessEqual(np.max(np.abs(llr)), 50.0 + 1e-3)
                self.assertGreater(np.min(np.abs(llr)), 0.0)

    def test_004_llr_signs_match_bit_output(self):
        # At 15 dB (errors happen): soft_output=False gives exactly the LLR signs.
        for alg in ("sfsd", "mtt", "mmse", "zf"):
            self.rng = np.random.default_rng(5)
            llr, ref, _ = self.chain(alg, 4, 4, "16qam", [0, 1], snr_db=15, soft=True)
            self.rng = np.random.default_rng(5)
            bits, _, _ = self.chain(alg, 4, 4, "16qam", [0, 1], snr_db=15, soft=False)
            np.testing.assert_array_equal((llr < 0).astype(np.uint8), bits, err_msg=alg)
            ber = np.mean(bits != np.concatenate(ref))
            self.assertGreater(ber, 0.0)
            self.assertLess(ber, 0.25)

    def test_005_bad_slot_flagged(self):
        # Slot 2 (second item) has a NaN noise_var, slot 3 a zero one: zeros out, counted,
        # the other slots still decoded.
        slots = [1, 2, 3, 4]
        out, bits, det = self.chain("mmse", 2, 2, "qpsk", slots,
                                    nv_override=[1e-6, float("nan"), 0.0, 1e-6])
        offs = np.cumsum([0] + [len(b) for b in bits])
        np.testing.assert_array_equal(out[offs[0]:offs[1]], bits[0])
        self.assertTrue(np.all(out[offs[1]:offs[3]] == 0))
        np.testing.assert_array_equal(out[offs[3]:offs[4]], bits[3])
        self.assertEqual(det.bad_slots(), 2)
        llr, bits, det = self.chain("sfsd", 2, 2, "qpsk", [5, 6], soft=True,
                                    nv_override=[-1.0, 1e-6])
        n0 = len(bits[0])
        self.assertTrue(np.all(llr[:n0] == 0))
        np.testing.assert_array_equal((llr[n0:] < 0).astype(np.uint8), bits[1])
        self.assertEqual(det.bad_slots(), 1)

    def test_006_nan_in_h(self):
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        grid = mimodet.lte_grid(num, 2, 0)
        gen = [make_slot(self.rng, grid, ns, 2, "16qam", 0.0) for ns in (7, 8)]
        H0 = gen[0][2].copy()
        H0[5, 1, 0] = np.nan
        det = mimodet.mimo_detector("psd", 1.4, 2, 2, "16qam", 0, slot_limit_us=0.0)
        out, _ = run_detector(det, 1.4, 2, [g[1] for g in gen], [H0, gen[1][2]], [1e-6, 1e-6],
                              [7, 8], False)
        n0 = len(gen[0][0])
        self.assertTrue(np.all(out[:n0] == 0))
        np.testing.assert_array_equal(out[n0:], gen[1][0])
        self.assertEqual(det.bad_slots(), 1)

    def test_007_untagged_slots_count_from_zero(self):
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        grid = mimodet.lte_grid(num, 2, 4)
        gen = [make_slot(self.rng, grid, ns, 2, "qpsk", 0.0) for ns in (0, 1, 2)]
        det = mimodet.mimo_detector("fsd", 1.4, 2, 2, "qpsk", 4)
        out, tags = run_detector(det, 1.4, 2, [g[1] for g in gen], [g[2] for g in gen],
                                 [1e-6] * 3, [0, 1, 2], False, tagged=False)
        np.testing.assert_array_equal(out, np.concatenate([g[0] for g in gen]))
        self.assertEqual([pmt.to_long(t.value) for t in tags], [0, 1, 2])
        self.assertEqual(det.untagged_slots(), 3)

    def test_008_with_channel_estimator(self):
        # estimator -> detector on a 30 dB flat-fading slot stream: no bit errors for PSD.
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        n_tx = n_rx = 2
        grid = mimodet.lte_grid(num, n_tx, 21)
        nv = mimodet.snr_to_noise_var(30, n_tx)
        slots = [0, 1, 2, 3]
        bits, ys = [], []
        for ns in slots:
            b = self.rng.integers(0, 2, size=len(grid.data_elements(ns)) * n_tx * 4).astype(np.uint8)
            Hf = ((self.rng.standard_normal((n_rx, n_tx))
                   + 1j * self.rng.standard_normal((n_rx, n_tx))) / np.sqrt(2))
            bits.append(b)
            ys.append(add_noise(self.rng, Hf @ map_bits(grid, ns, b, "16qam"), nv))
        tb = gr.top_block()
        tags = [gr.tag_utils.python_to_tag((i, pmt.intern("slot"), pmt.from_long(ns)))
                for i, ns in enumerate(slots)]
        est = mimodet.channel_estimator(1.4, n_tx, n_rx, 21)
        det = mimodet.mimo_detector("psd", 1.4, n_tx, n_rx, "16qam", 21)
        snk = blocks.vector_sink_b()
        for r in range(n_rx):
            src = blocks.vector_source_c(np.concatenate([y[r] for y in ys]).tolist(), False,
                                         7 * num.n_sc, tags if r == 0 else [])
            tb.connect(src, (est, r))
            tb.connect(src, (det, r))
        tb.connect((est, 0), (det, n_rx))
        tb.connect((est, 1), (det, n_rx + 1))
        tb.connect(det, snk)
        tb.run()
        out = np.array(snk.data())
        ref = np.concatenate(bits)
        ber = np.mean(out != ref)
        print("estimator -> psd, 2x2 16qam flat 30 dB: BER %.2e over %d bits" % (ber, len(ref)))
        self.assertEqual(len(out), len(ref))
        self.assertLess(ber, 1e-3)

    def test_010_twenty_mhz(self):
        # 172800 output items per slot: the block's rate keeps the input buffers small
        # (with rate 1 the runtime asked for a 22 GB buffer).
        out, bits, _ = self.chain("mmse", 4, 4, "64qam", [0, 1], mhz=20, threads=2)
        np.testing.assert_array_equal(out, np.concatenate(bits))

    def test_011_queued_slots_share_calls(self):
        # Twelve slots queued at once go through in calls of up to eight slots (one batch
        # each). GNU Radio hands a block at most half of its output buffer per call, so
        # the buffer must hold twice a call's slots: with one of eight slots a call
        # would get four. The calls' slot counts come from the block's call
        # timeline (MIMODET_CALL_TIMELINE, read when the block is made, written when it
        # is destroyed).
        import gc
        import glob
        import os
        import tempfile
        slots = list(range(12))
        num = mimodet.lte_numerology.from_bandwidth(20)
        grid = mimodet.lte_grid(num, 2, 9)
        gen = [make_slot(self.rng, grid, ns, 2, "qpsk", 0.0) for ns in slots]
        with tempfile.TemporaryDirectory() as d:
            prefix = os.path.join(d, "tl")
            os.environ["MIMODET_CALL_TIMELINE"] = prefix
            try:
                det = mimodet.mimo_detector("zf", 20, 2, 2, "qpsk", 9, "cpu")
            finally:
                del os.environ["MIMODET_CALL_TIMELINE"]
            out, _ = run_detector(det, 20, 2, [g[1] for g in gen], [g[2] for g in gen],
                                  [1e-6] * len(slots), slots, False, queue=len(slots))
            np.testing.assert_array_equal(out, np.concatenate([g[0] for g in gen]))
            del det
            gc.collect()
            files = glob.glob(prefix + "_block_*.csv")
            self.assertEqual(len(files), 1, files)
            calls = np.loadtxt(files[0], delimiter=",", skiprows=1, ndmin=2)
        per_call = calls[:, 2]  # t0_ns, work_ns, slots
        self.assertEqual(per_call.sum(), len(slots))
        self.assertEqual(per_call.max(), 8, per_call)

    def test_012_degenerate_slots_tagged(self):
        # Slot 4's H is all zeros, slot 5's has equal columns on subcarrier 3, slot 6's is
        # sound: all three are detected (finite LLRs, zeros for the zero H), the first two
        # tagged "degenerate" with their vectors on such a channel and counted as bad.
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        grid = mimodet.lte_grid(num, 2, 0)
        gen = [make_slot(self.rng, grid, ns, 2, "16qam", 0.0) for ns in (4, 5, 6)]
        H4 = np.zeros_like(gen[0][2])
        H5 = gen[1][2].copy()
        H5[3, :, 1] = H5[3, :, 0]
        on_sc3 = sum(1 for e in grid.data_elements(5) if e % num.n_sc == 3)
        n4, n5 = len(gen[0][0]), len(gen[1][0])
        for soft in (False, True):
            det = mimodet.mimo_detector("sfsd", 1.4, 2, 2, "16qam", 0, "cpu", soft)
            out, tags = run_detector(det, 1.4, 2, [g[1] for g in gen], [H4, H5, gen[2][2]],
                                     [1e-2] * 3, [4, 5, 6], soft)
            deg = [(t.offset, pmt.to_long(t.value)) for t in tags
                   if pmt.symbol_to_string(t.key) == "degenerate"]
            self.assertEqual(deg, [(0, len(grid.data_elements(4))), (n4, on_sc3)])
            self.assertEqual(det.bad_slots(), 2)
            hard = (out < 0).astype(np.uint8) if soft else out
            np.testing.assert_array_equal(hard[n4 + n5:], gen[2][0])
            if soft:
                self.assertTrue(np.all(np.isfinite(out)))
                self.assertTrue(np.all(out[:n4] == 0))

    def test_009_invalid_parameters(self):
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("psd", 1.4, 2, 2, "16qam", 0, "cpu", True)  # hard + soft
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("fsd", 1.4, 2, 2, "16qam", 0, soft_output=True)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("foo", 1.4, 2, 2, "16qam", 0)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("mmse", 2.0, 2, 2, "16qam", 0)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("mmse", 1.4, 4, 2, "16qam", 0)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("mmse", 1.4, 2, 2, "8psk", 0)
        with self.assertRaises(ValueError):
            mimodet.mimo_detector("psd", 1.4, 2, 2, "16qam", 0, lvl=[2, 1], exp=[1, 1])
        det = mimodet.mimo_detector("sfsd", 1.4, 2, 2, "16qam", 0, soft_output=True, T=1,
                                    niter=3, llr_clip=10.0, threads=1)
        self.assertEqual(det.backend(), "cpu")

    def test_013_config_face_equals_keyword_face(self):
        # The config-taking make (a detector_config set field by field), positional or
        # config=, makes the same block as the keyword face: the same outputs and tags,
        # with parameters that change the outputs of the soft detectors.
        mhz, n, mod, cell, slots = 1.4, 2, "16qam", 9, [0, 1, 10]
        grid = mimodet.lte_grid(mimodet.lte_numerology.from_bandwidth(mhz), n, cell)
        nv = mimodet.snr_to_noise_var(20.0, n)
        gen = [make_slot(self.rng, grid, ns, n, mod, nv) for ns in slots]
        fields = dict(lvl="psd_lvl", exp="psd_exp", T="fsd_full_levels", niter="sfsd_niter",
                      sorted_qr="sorted_qr", llr_clip="llr_clip", llr_scaled="llr_scaled",
                      threads="threads", deadline_us="psd_deadline_us")
        cases = [
            ("psd", False, dict(lvl=[5, 3, 1], exp=[1, 4], sorted_qr=1, threads=1)),
            ("fsd", False, dict(T=2)),
            ("sfsd", True, dict(T=1, niter=3, llr_clip=5.0)),
            ("mtt", True, dict(sorted_qr=0, llr_clip=2.0)),
            ("mmse", True, dict(llr_scaled=False)),
        ]

        def run(det, soft):
            out, tags = run_detector(det, mhz, n, [g[1] for g in gen], [g[2] for g in gen],
                                     [nv] * len(slots), slots, soft)
            self.assertEqual(det.bad_slots(), 0)
            self.assertEqual(det.slots_processed(), len(slots))
            return out, [(t.offset, pmt.symbol_to_string(t.key), pmt.to_long(t.value))
                         for t in tags]

        for alg, soft, params in cases:
            cfg = config_of(alg, n, n, mod, **{fields[k]: v for k, v in params.items()})
            # Compared bit for bit: no stall bound (a wall-clock deadline for psd).
            ref, ref_tags = run(mimodet.mimo_detector(alg, mhz, n, n, mod, cell, "cpu", soft,
                                                      slot_limit_us=0.0, **params), soft)
            self.assertEqual(len(ref), sum(len(g[0]) for g in gen), alg)
            for det in (mimodet.mimo_detector(cfg, mhz, cell, soft, 0.0),
                        mimodet.mimo_detector(config=cfg, bandwidth_mhz=mhz, cell_id=cell,
                                              soft_output=soft, slot_limit_us=0.0)):
                out, tags = run(det, soft)
                np.testing.assert_array_equal(out, ref, err_msg=alg)
                self.assertEqual(tags, ref_tags, alg)
            hard = (ref < 0).astype(np.uint8) if soft else ref
            self.assertLess(np.mean(hard != np.concatenate([g[0] for g in gen])), 0.05, alg)
            if soft:  # the parameters reached the detector: other LLRs than the defaults'
                default, _ = run(mimodet.mimo_detector(alg, mhz, n, n, mod, cell, "cpu", True),
                                 True)
                self.assertFalse(np.array_equal(default, ref), alg)

    def test_014_invalid_configs(self):
        # A bad detector_config, or arguments that do not fit the block, are refused when
        # the block is made, with a message that names the problem.
        cfg = config_of
        bad = [
            ((cfg(n_tx=3, n_rx=4), 1.4, 0), {}, "n_tx must be 1, 2 or 4, got 3"),
            ((cfg(n_rx=1), 1.4, 0), {}, "n_rx must be n_tx..8, got 1"),
            ((cfg(n_rx=9), 1.4, 0), {}, "n_rx must be n_tx..8, got 9"),
            ((cfg(algorithm="foo"), 1.4, 0), {}, "unknown algorithm 'foo'"),
            ((cfg(algorithm="fsd"), 1.4, 0, True), {}, "'fsd' gives hard bits only"),
            ((cfg(algorithm="mmse", psd_deadline_us=100.0), 1.4, 0), {},
             "psd_deadline_us applies to algorithm 'psd' only"),
            ((cfg(algorithm="psd", psd_lvl=[2, 1], psd_exp=[1, 1]), 1.4, 0), {},
             "psd parameters.*The rule"),
            ((cfg(), 2.0, 0), {}, "bandwidth 2"),
            ((cfg(), 1.4, 504), {}, "cell_id must be 0..503"),
        ]
        for args, kw, msg in bad:
            with self.assertRaisesRegex(ValueError, msg):
                mimodet.mimo_detector(*args, **kw)
        with self.assertRaisesRegex(ValueError, "unknown backend 'gpu'"):
            mimodet.mimo_detector("mmse", 1.4, 2, 2, "16qam", 0, "gpu")
        # The two faces do not mix, and the keyword face names what is missing or unknown.
        wrong = [
            ((cfg(), 1.4, 0), dict(algorithm="zf"), "detector's parameters are the config's"),
            ((cfg(), 1.4, 0), dict(lvl=[5, 1]), "detector's parameters are the config's"),
            ((cfg(), 1.4, 0), dict(config=cfg()), "detector_config twice"),
            ((), dict(config=cfg(), cell_id=0), "missing required argument 'bandwidth_mhz'"),
            (("zf", 1.4, 2), {}, "missing required argument 'n_rx'"),
            (("zf", 1.4, 2, 2), dict(bogus=1), "unexpected keyword argument 'bogus'"),
            (("zf", 1.4, 2, 2), dict(est_threads=1), "unexpected keyword argument"),
            (("zf", 1.4, 2, 2, "16qam", 0, "cpu", False, [1]), {}, "at most 8 positional"),
            (("zf", 1.4, 2, 2), dict(T="1"), "T must be a int"),
            (("zf", 1.4, 2.0, 2), {}, "n_tx must be an int"),
        ]
        for args, kw, msg in wrong:
            with self.assertRaisesRegex(TypeError, msg):
                mimodet.mimo_detector(*args, **kw)

    def test_012_stop_ends_a_long_detection(self):
        # ML 4x4 16QAM (2^16 candidates per vector, about 1900 vectors per 5 MHz slot):
        # up to 8 queued slots per call make one work() call last seconds. top_block.stop()
        # interrupts the block's thread, which the detection polls: wait() returns within
        # a second, long before the slots are done.
        mhz, n, mod = 5.0, 4, "16qam"
        num = mimodet.lte_numerology.from_bandwidth(mhz)
        grid = mimodet.lte_grid(num, n, 9)
        slots = list(range(20))
        nv = mimodet.snr_to_noise_var(10, n)
        gen = [make_slot(self.rng, grid, ns, n, mod, nv) for ns in slots]
        det = mimodet.mimo_detector("ml", mhz, n, n, mod, 9, "cpu", False)
        tb = gr.top_block()
        tags = [gr.tag_utils.python_to_tag((i, pmt.intern("slot"), pmt.from_long(ns)))
                for i, ns in enumerate(slots)]
        for r in range(n):
            src = blocks.vector_source_c(np.concatenate([g[1][r] for g in gen]).tolist(),
                                         False, 7 * num.n_sc, tags if r == 0 else [])
            src.set_min_output_buffer(16)
            tb.connect(src, (det, r))
        h_src = blocks.vector_source_c(np.concatenate([g[2].ravel() for g in gen]).tolist(),
                                       False, gen[0][2].size)
        nv_src = blocks.vector_source_f([float(nv)] * len(slots), False)
        for b in (h_src, nv_src):
            b.set_min_output_buffer(16)
        tb.connect(h_src, (det, n))
        tb.connect(nv_src, (det, n + 1))
        snk = blocks.vector_sink_b()
        tb.connect(det, snk)
        stop_s = stop_while_running(tb)
        self.assertLess(stop_s, 1.0)
        print("stop() + wait(): %.1f ms" % (stop_s * 1e3))
        self.assertLess(det.slots_processed(), len(slots))

    def test_015_device(self):
        # device: the detector's keyword (and config field), checked when the block is
        # made; the CPU backend ignores it.
        check_device_keyword(
            self, lambda **kw: mimodet.mimo_detector("mmse", 1.4, 2, 2, **kw))
        with self.assertRaisesRegex(ValueError, "device must be >= 0"):
            mimodet.mimo_detector(config_of(device=-1), 1.4, 0)

if __name__ == "__main__":
    gr_unittest.run(qa_mimo_detector)
