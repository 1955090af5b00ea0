#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the batch detector API (gnuradio.mimodet.detector)."""

import inspect
import itertools
import os
import signal
import threading
import time

import numpy as np
from gnuradio import gr_unittest

from gnuradio import mimodet

MODS = {"qpsk": 2, "16qam": 4, "64qam": 6}


def random_problem(rng, B, n_tx, n_rx, mod, snr_db, S=None):
    """y = H s + n with the conventions of docs/CONVENTIONS.md; returns H, y, nv, bits."""
    q = MODS[mod]
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod))
    shape = (B, n_tx) if S is None else (B, S, n_tx)
    labels = rng.integers(0, 1 << q, size=shape)
    s = pts[labels]
    H = ((rng.standard_normal((B, n_rx, n_tx)) + 1j * rng.standard_normal((B, n_rx, n_tx)))
         / np.sqrt(2)).astype(np.complex64)
    nv = mimodet.snr_to_noise_var(snr_db, n_tx)
    if S is None:
        y = np.einsum("brt,bt->br", H, s)
    else:
        y = np.einsum("brt,bst->bsr", H, s)
    y = y + np.sqrt(nv / 2) * (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape))
    shifts = np.arange(q - 1, -1, -1)
    bits = ((labels[..., None] >> shifts) & 1).astype(np.uint8).reshape(*labels.shape[:-1], n_tx * q)
    return H, y.astype(np.complex64), nv, bits


def brute_force(H, y, nv, mod):
    """Exhaustive ML bits and max-log LLRs in numpy (float64), for small problems."""
    q = MODS[mod]
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod)).astype(np.complex128)
    B, n_rx, n_tx = H.shape
    labels = np.array(list(itertools.product(range(1 << q), repeat=n_tx)))  # (C, n_tx)
    cand = pts[labels]  # (C, n_tx)
    shifts = np.arange(q - 1, -1, -1)
    cbits = ((labels[..., None] >> shifts) & 1).reshape(len(labels), n_tx * q)
    d = np.abs(y.astype(np.complex128)[:, None, :]
               - np.einsum("brt,ct->bcr", H.astype(np.complex128), cand)) ** 2
    d = d.sum(axis=2)  # (B, C)
    best = cbits[np.argmin(d, axis=1)]
    llr = np.empty((B, n_tx * q))
    for k in range(n_tx * q):
        m0 = np.where(cbits[:, k] == 0, d, np.inf).min(axis=1)
        m1 = np.where(cbits[:, k] == 1, d, np.inf).min(axis=1)
        llr[:, k] = (m1 - m0) / nv
    return best.astype(np.uint8), llr


class qa_detector(gr_unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(1234)

    def test_001_ml_matches_numpy_brute_force(self):
        for mod in ("qpsk", "16qam"):
            H, y, nv, _ = random_problem(self.rng, 200, 2, 2, mod, 12)
            det = mimodet.detector("ml", 2, 2, mod)
            bits = det.detect_bits(H, y, nv)
            llr = det.detect_llr(H, y, nv)
            ref_bits, ref_llr = brute_force(H, y, nv, mod)
            np.testing.assert_array_equal(bits, ref_bits)
            np.testing.assert_allclose(llr, ref_llr, rtol=1e-4, atol=1e-3)

    def test_002_every_detector_decodes_clean_signals(self):
        # At 40 dB every detector, exact or not, recovers the transmitted bits.
        for alg in mimodet.algorithms():
            for n_tx, n_rx, mod in ((2, 2, "64qam"), (4, 4, "16qam")):
                if alg == "ml" and n_tx == 4:
                    continue
                H, y, nv, bits = random_problem(self.rng, 50, n_tx, n_rx, mod, 40, S=7)
                det = mimodet.detector(alg, n_tx, n_rx, mod)
                out = det.detect_bits(H, y, nv)
                self.assertEqual(out.shape, (50, 7, n_tx * MODS[mod]))
                self.assertEqual(out.dtype, np.uint8)
                errors = np.count_nonzero(out != bits)
                # ZF meets the occasional ill-conditioned channel even at 40 dB.
                limit = bits.size // 50 if alg == "zf" else bits.size // 1000
                self.assertLessEqual(errors, limit, "%s %dx%d %s" % (alg, n_tx, n_rx, mod))

    def test_003_shapes_and_scalar_or_vector_noise(self):
        H, y, nv, _ = random_problem(self.rng, 10, 2, 3, "qpsk", 20)
        det = mimodet.detector("mmse", 2, 3, "qpsk")
        a = det.detect_llr(H, y, nv)
        b = det.detect_llr(H, y, np.full(10, nv, dtype=np.float32))
        self.assertEqual(a.shape, (10, 4))
        self.assertEqual(a.dtype, np.float32)
        np.testing.assert_array_equal(a, b)

    def test_004_soft_detector_bits_are_llr_signs(self):
        H, y, nv, _ = random_problem(self.rng, 100, 4, 4, "16qam", 10, S=2)
        for alg in ("mmse", "zf", "sfsd", "mtt"):
            det = mimodet.detector(alg, 4, 4, "16qam")
            self.assertTrue(det.soft)
            bits = det.detect_bits(H, y, nv)
            llr = det.detect_llr(H, y, nv)
            np.testing.assert_array_equal(bits, (llr < 0).astype(np.uint8))

    def test_005_psd_is_ml_and_reports_nodes(self):
        H, y, nv, _ = random_problem(self.rng, 300, 2, 2, "16qam", 8)
        det = mimodet.detector("psd", 2, 2, "16qam")
        bits, stats = det.detect_bits(H, y, nv, return_stats=True)
        ref, _ = brute_force(H, y, nv, "16qam")
        np.testing.assert_array_equal(bits, ref)
        self.assertTrue(np.all(stats["evaluated"] > 0))
        self.assertEqual(stats["expanded"].shape, (300,))

    def test_006_hard_detector_refuses_llr(self):
        H, y, nv, _ = random_problem(self.rng, 4, 2, 2, "qpsk", 20)
        for alg in ("psd", "fsd"):
            det = mimodet.detector(alg, 2, 2, "qpsk")
            self.assertFalse(det.soft)
            with self.assertRaisesRegex(ValueError, "hard bits only"):
                det.detect_llr(H, y, nv)

    def test_007_bad_configuration(self):
        with self.assertRaisesRegex(ValueError, "unknown algorithm"):
            mimodet.detector("viterbi", 2, 2, "qpsk")
        with self.assertRaisesRegex(ValueError, "unknown modulation"):
            mimodet.detector("mmse", 2, 2, "8psk")
        with self.assertRaisesRegex(ValueError, "n_rx"):
            mimodet.detector("mmse", 4, 2, "qpsk")
        with self.assertRaisesRegex(ValueError, "backend"):
            mimodet.detector("mmse", 2, 2, "qpsk", backend="tpu")
        with self.assertRaises(TypeError):
            mimodet.detector("mmse", 2, 2, "qpsk", beam_width=3)
        with self.assertRaisesRegex(ValueError, "psd_radius"):
            mimodet.detector("mmse", 2, 2, "qpsk", radius=3)
        with self.assertRaisesRegex(ValueError, "psd_radius"):
            mimodet.detector("psd", 2, 2, "qpsk", radius=-3)
        with self.assertRaises(ValueError):
            mimodet.detector("psd", 2, 2, "qpsk", lvl=[5, 3, 4, 1], exp=[1, 1, 1])
        with self.assertRaises(ValueError):
            mimodet.detector("ml", 4, 4, "64qam")  # 2^24 candidates

    def test_008_bad_input(self):
        det = mimodet.detector("mmse", 2, 2, "qpsk")
        H, y, nv, _ = random_problem(self.rng, 4, 2, 2, "qpsk", 20)
        with self.assertRaisesRegex(ValueError, "shape"):
            det.detect_bits(H[:, :, :1], y, nv)
        with self.assertRaisesRegex(ValueError, "shape"):
            det.detect_bits(H, y[:3], nv)
        with self.assertRaisesRegex(ValueError, "noise_var"):
            det.detect_bits(H, y, np.ones(3))
        with self.assertRaisesRegex(ValueError, "noise_var"):
            det.detect_bits(H, y, -1.0)
        Hn = H.copy()
        Hn[0, 0, 0] = np.nan
        with self.assertRaisesRegex(ValueError, "NaN"):
            det.detect_bits(Hn, y, nv)
        yi = y.copy()
        yi[1, 0] = np.inf
        with self.assertRaisesRegex(ValueError, "NaN or Inf"):
            det.detect_bits(H, yi, nv)

    def test_009_singular_channel(self):
        H, y, nv, _ = random_problem(self.rng, 6, 2, 2, "16qam", 20)
        H[:3] = 0
        H[3:, :, 1] = H[3:, :, 0]
        for alg in mimodet.algorithms():
            det = mimodet.detector(alg, 2, 2, "16qam")
            bits, st = det.detect_bits(H, y, nv, return_stats=True)
            self.assertTrue(np.all(bits <= 1))
            # Every matrix is rank-deficient: flagged (bit 1), whatever the detector.
            np.testing.assert_array_equal(st["flags"] & 1, 1, err_msg=alg)
            if det.soft:
                llr, st = det.detect_llr(H, y, nv, return_stats=True)
                self.assertTrue(np.all(np.isfinite(llr)))
                np.testing.assert_array_equal(st["flags"] & 1, 1, err_msg=alg)
                # An all-zero H says nothing about any bit.
                np.testing.assert_array_equal(llr[:3], 0.0, err_msg=alg)

    def test_012_saturated_llrs_are_finite_and_flagged(self):
        # A vanishing noise variance: every soft detector's LLRs are finite, of the
        # transmitted bits' signs, saturated at one magnitude (sfsd: or its missing-
        # counter-hypothesis value) and flagged (bit 2); sound channels carry no bit 1.
        H, y, _, bits = random_problem(self.rng, 20, 2, 2, "16qam", 300)
        for alg in ("ml", "zf", "mmse", "sfsd", "mtt"):
            det = mimodet.detector(alg, 2, 2, "16qam")
            llr, st = det.detect_llr(H, y, 1e-40, return_stats=True)
            self.assertTrue(np.all(np.isfinite(llr)), alg)
            np.testing.assert_array_equal((llr < 0).astype(np.uint8), bits, err_msg=alg)
            sat = np.max(np.abs(llr))
            self.assertGreater(sat, 1e9, alg)
            self.assertTrue(np.all((np.abs(llr) == sat) | (np.abs(llr) == 1000.0)), alg)
            np.testing.assert_array_equal(st["flags"], 2 * np.any(np.abs(llr) == sat, axis=1),
                                          err_msg=alg)

    def test_010_backend_selection(self):
        det = mimodet.detector("mmse", 2, 2, "qpsk", backend="auto")
        if mimodet.cuda_device_count() == 0:
            self.assertEqual(det.backend, "cpu")
            with self.assertRaisesRegex(RuntimeError, "no CUDA device"):
                mimodet.detector("mmse", 2, 2, "qpsk", backend="cuda")
        else:
            self.assertIn(det.backend, ("cpu", "cuda"))

    def test_011_every_public_name_has_a_docstring(self):
        # The package's functions, blocks and batch API, and each class's public
        # methods and properties (pybind11 puts the signature first: not a doc).
        def doc(obj, name):
            text = (getattr(obj, "__doc__", None) or "").strip()
            if text.startswith(name + "("):
                text = text.split("\n", 1)[1].strip() if "\n" in text else ""
            return text

        missing = []
        for name in dir(mimodet):
            obj = getattr(mimodet, name)
            if name.startswith("_") or inspect.ismodule(obj):
                continue
            if not doc(obj, name):
                missing.append(name)
            if inspect.isclass(obj):
                enum_members = {"name", "value"} if hasattr(obj, "__members__") else set()
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or attr in enum_members:
                        continue
                    if isinstance(member, obj):  # an enum's values
                        continue
                    if not doc(member, attr):
                        missing.append(name + "." + attr)
        self.assertGreater(len(dir(mimodet)), 20)
        self.assertEqual(missing, [])

    def long_ml_problem(self, det, seconds):
        """A batch that the ML 3x3 64QAM detector det needs about `seconds` for (measured
        on a small one first), so a call is still running when the test interrupts it."""
        H, y, nv, _ = random_problem(self.rng, 64, 3, 3, "64qam", 10)
        t0 = time.monotonic()
        det.detect_bits(H, y, nv)
        per_vector = max(1e-7, (time.monotonic() - t0) / 64)
        B = int(min(2e6, max(256, seconds / per_vector)))
        return random_problem(self.rng, B, 3, 3, "64qam", 10)[:3]

    def assert_still_exact(self, det):
        """The detector's bits after an interruption: the exhaustive search's."""
        H, y, nv, _ = random_problem(self.rng, 6, 3, 3, "64qam", 12)
        ref, _ = brute_force(H, y, nv, "64qam")
        np.testing.assert_array_equal(det.detect_bits(H, y, nv), ref)

    def interrupted_call(self, action, exception, call, *args):
        """Runs call(*args) while another thread runs action() 0.2 s in; asserts that the
        call raises exception; returns the seconds from action() to the raise."""
        sent = []

        def interrupt():
            time.sleep(0.2)
            sent.append(time.monotonic())
            action()

        sender = threading.Thread(target=interrupt)
        sender.start()
        try:
            with self.assertRaises(exception):
                call(*args)
            return time.monotonic() - sent[0]
        finally:
            sender.join()

    def test_012_ctrl_c_interrupts_a_long_call(self):
        # SIGINT 0.2 s into a call that would take about 20 s: KeyboardInterrupt well
        # within a second (the call polls the signal handlers every 20 ms and its
        # workers stop after their current vector, about a millisecond here).
        det = mimodet.detector("ml", 3, 3, "64qam")
        H, y, nv = self.long_ml_problem(det, 20.0)
        # Python's own handler, also where the test runner started with SIGINT ignored.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            for call in (det.detect_bits, det.detect_llr):
                latency = self.interrupted_call(
                    lambda: os.kill(os.getpid(), signal.SIGINT), KeyboardInterrupt, call,
                    H, y, nv)
                self.assertLess(latency, 1.0, call.__name__)
                print("%s: KeyboardInterrupt %.1f ms after SIGINT" % (call.__name__,
                                                                     latency * 1e3))
        finally:
            signal.signal(signal.SIGINT, previous)
        self.assert_still_exact(det)

    def test_013_cancel_from_another_thread(self):
        det = mimodet.detector("ml", 3, 3, "64qam")
        H, y, nv = self.long_ml_problem(det, 20.0)
        latency = self.interrupted_call(det.cancel, mimodet.cancelled, det.detect_bits,
                                        H, y, nv)
        self.assertLess(latency, 1.0)
        self.assertTrue(issubclass(mimodet.cancelled, RuntimeError))
        self.assert_still_exact(det)

    def test_014_device(self):
        # The CUDA device index: a detector_config field and a keyword, >= 0; the CPU
        # backend ignores it, cuda refuses an index without a device, auto takes the CPU.
        cfg = mimodet.detector_config()
        self.assertEqual(cfg.device, 0)
        cfg.device = 1
        self.assertEqual(cfg.device, 1)
        H, y, _, bits = random_problem(self.rng, 50, 2, 2, "qpsk", 30)
        ref = mimodet.detector("mmse", 2, 2, "qpsk").detect_bits(H, y, 0.01)
        for device in (0, 3):
            det = mimodet.detector("mmse", 2, 2, "qpsk", device=device)
            self.assertEqual(det.backend, "cpu")
            np.testing.assert_array_equal(det.detect_bits(H, y, 0.01), ref)
        with self.assertRaisesRegex(ValueError, "device must be >= 0.*got -1"):
            mimodet.detector("mmse", 2, 2, "qpsk", device=-1)
        with self.assertRaisesRegex(ValueError, "device must be >= 0"):
            mimodet.detector("mmse", 2, 2, "qpsk", backend="auto", device=-2)
        with self.assertRaisesRegex(TypeError, "device must be a int"):
            mimodet.detector("mmse", 2, 2, "qpsk", device="1")
        n = mimodet.cuda_device_count()
        missing = "no CUDA device" if n == 0 else "CUDA device %d does not exist" % n
        with self.assertRaisesRegex(RuntimeError, missing):
            mimodet.detector("mmse", 2, 2, "qpsk", backend="cuda", device=n)
        self.assertEqual(
            mimodet.detector("mmse", 2, 2, "qpsk", backend="auto", device=n).backend, "cpu")

if __name__ == "__main__":
    gr_unittest.run(qa_detector)
