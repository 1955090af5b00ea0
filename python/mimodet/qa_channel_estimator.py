#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the channel_estimator block: known frequency-domain channels, y = sum_t H_t X_t + n
on test grids built from mimodet.lte_grid (docs/SLOT_LAYOUT.md)."""

import numpy as np
import pmt
from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet

# 3GPP TS 36.101 B.2 delay profiles (ns, dB).
PROFILES = {
    "flat": ([0.0], [0.0]),
    "EPA": ([0, 30, 70, 90, 110, 190, 410], [0, -1, -2, -3, -8, -17.2, -20.8]),
    "EVA": ([0, 30, 150, 310, 370, 710, 1090, 1730, 2510],
            [0, -1.5, -1.4, -3.6, -0.6, -9.1, -7, -12, -16.9]),
}


def sc_freqs(num):
    """Subcarrier frequencies (Hz), DC excluded."""
    k = np.arange(num.n_sc)
    return 15e3 * np.where(k < num.n_sc // 2, k - num.n_sc // 2, k - num.n_sc // 2 + 1)


def make_channel(rng, num, profile, n_tx, n_rx):
    """True H (n_sc, n_rx, n_tx): independent Rayleigh taps per link, unit total power."""
    delays, pdb = PROFILES[profile]
    p = 10.0 ** (np.array(pdb) / 10)
    p /= p.sum()
    a = (rng.standard_normal((n_rx, n_tx, len(p))) + 1j * rng.standard_normal((n_rx, n_tx, len(p)))) \
        * np.sqrt(p / 2)
    ph = np.exp(-2j * np.pi * np.outer(sc_freqs(num), np.array(delays) * 1e-9))  # (n_sc, taps)
    return np.einsum("kd,rtd->krt", ph, a).astype(np.complex64)


def tx_grids(rng, grid, ns, mod="16qam"):
    """Transmitted grids (n_tx, 7*n_sc): random data, CRS, nothing elsewhere."""
    num = grid.numerology()
    n_tx = grid.n_ports()
    pts = mimodet.constellation_points(mimodet.parse_modulation(mod))
    x = np.zeros((n_tx, 7 * num.n_sc), np.complex64)
    data = np.array(grid.data_elements(ns))
    x[:, data] = pts[rng.integers(0, len(pts), size=(n_tx, len(data)))]
    for t in range(n_tx):
        for re in grid.crs_elements(ns, t):
            x[t, re] = grid.crs_value(ns, t, re // num.n_sc, re % num.n_sc)
    return x


def receive(rng, num, x, H, nv):
    """y (n_rx, 7*n_sc) = sum_t H[k, r, t] x[t] + n."""
    y = np.einsum("krt,tlk->rlk", H, x.reshape(x.shape[0], 7, num.n_sc)).reshape(H.shape[1], -1)
    n = np.sqrt(nv / 2) * (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape))
    return (y + n).astype(np.complex64)


def slot_tags(slots):
    return [gr.tag_utils.python_to_tag((i, pmt.intern("slot"), pmt.from_long(ns)))
            for i, ns in enumerate(slots)]


def run_estimator(mhz, n_tx, n_rx, ys, slots, cell_id, tagged=True):
    """ys: (n_slots, n_rx, 7*n_sc). Returns H (n_slots, n_sc, n_rx, n_tx), nv, tags, block."""
    num = mimodet.lte_numerology.from_bandwidth(mhz)
    tb = gr.top_block()
    est = mimodet.channel_estimator(mhz, n_tx, n_rx, cell_id)
    tags = slot_tags(slots) if tagged else []
    for r in range(n_rx):
        src = blocks.vector_source_c(ys[:, r, :].ravel().tolist(), False, 7 * num.n_sc,
                                     tags if r == 0 else [])
        tb.connect(src, (est, r))
    snk_h = blocks.vector_sink_c(num.n_sc * n_rx * n_tx)
    snk_nv = blocks.vector_sink_f()
    tb.connect((est, 0), snk_h)
    tb.connect((est, 1), snk_nv)
    tb.run()
    H = np.array(snk_h.data(), np.complex64).reshape(-1, num.n_sc, n_rx, n_tx)
    return H, np.array(snk_nv.data()), (snk_h.tags(), snk_nv.tags()), est


class qa_channel_estimator(gr_unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(2026)

    def check(self, mhz, profile, n_tx, n_rx, snr_db, slots, cell_id=11):
        num = mimodet.lte_numerology.from_bandwidth(mhz)
        grid = mimodet.lte_grid(num, n_tx, cell_id)
        nv = mimodet.snr_to_noise_var(snr_db, n_tx)
        Hs = [make_channel(self.rng, num, profile, n_tx, n_rx) for _ in slots]
        ys = np.stack([receive(self.rng, num, tx_grids(self.rng, grid, ns), H, nv)
                       for ns, H in zip(slots, Hs)])
        Hest, nv_est, tags, est = run_estimator(mhz, n_tx, n_rx, ys, slots, cell_id)
        self.assertEqual(Hest.shape[0], len(slots))
        Ht = np.stack(Hs)
        nmse = 10 * np.log10(np.sum(np.abs(Hest - Ht) ** 2) / np.sum(np.abs(Ht) ** 2))
        ratio = np.mean(nv_est) / nv
        print("%-4s %dx%d %4.1f dB: NMSE %6.2f dB, noise_var est/true %.3f (per slot %.2f..%.2f)"
              % (profile, n_tx, n_rx, snr_db, nmse, ratio, nv_est.min() / nv, nv_est.max() / nv))
        # Tags: one "slot" tag per output item of both outputs, with the input's ns.
        for tl in tags:
            self.assertEqual([t.offset for t in tl], list(range(len(slots))))
            self.assertEqual([pmt.to_long(t.value) for t in tl], list(slots))
            self.assertTrue(all(pmt.symbol_to_string(t.key) == "slot" for t in tl))
        self.assertEqual(est.slots_processed(), len(slots))
        self.assertEqual(est.bad_slots(), 0)
        self.assertEqual(est.untagged_slots(), 0)
        self.last_nmse_over_nv = 10 ** (nmse / 10) / nv
        return nmse, ratio, nv_est / nv

    def test_001_flat_and_selective_30db(self):
        # Acceptance: NMSE below -20 dB and noise_var within 20 % at 30 dB.
        for profile in ("flat", "EPA", "EVA"):
            for n in (2, 4):
                nmse, ratio, per_slot = self.check(5, profile, n, n, 30, [0, 1, 2, 3, 10, 11])
                self.assertLess(nmse, -20)
                # Wiener smoothing: error well below noise_var (linear interpolation
                # gave ~0.6 x noise_var).
                self.assertLess(self.last_nmse_over_nv, 0.6 if profile == "EVA" else 0.25)
                self.assertAlmostEqual(ratio, 1.0, delta=0.2)
                self.assertTrue(np.all(np.abs(per_slot - 1) < 0.35))

    def test_002_lower_snr_and_other_sizes(self):
        for snr in (5, 15):
            nmse, ratio, _ = self.check(1.4, "EPA", 2, 4, snr, list(range(20)))
            self.assertLess(nmse, 10 * np.log10(2) - snr)
            self.assertLess(self.last_nmse_over_nv, 0.25)
            self.assertAlmostEqual(ratio, 1.0, delta=0.15)
        nmse, ratio, _ = self.check(10, "EPA", 1, 2, 30, [5, 6])
        self.assertLess(nmse, -20)
        self.assertAlmostEqual(ratio, 1.0, delta=0.2)

    def test_003_noiseless_flat_exact(self):
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        grid = mimodet.lte_grid(num, 2, 3)
        H = np.broadcast_to(make_channel(self.rng, num, "flat", 2, 2)[:1], (num.n_sc, 2, 2))
        ys = np.stack([receive(self.rng, num, tx_grids(self.rng, grid, ns), H, 0.0)
                       for ns in (0, 7)])
        Hest, nv, _, _ = run_estimator(1.4, 2, 2, ys, [0, 7], 3)
        # The Wiener smoother shrinks by ~1/SNR (60 dB cap of a noiseless slot).
        np.testing.assert_allclose(Hest, np.stack([H, H]), atol=1e-3 * np.abs(H).max())
        self.assertTrue(np.all(nv > 0) and np.all(nv < 1e-4))

    def test_004_untagged_and_bad_input(self):
        # Without tags the slots count from 0; a NaN grid gives a NaN noise_var, counted.
        num = mimodet.lte_numerology.from_bandwidth(1.4)
        grid = mimodet.lte_grid(num, 2, 0)
        H = make_channel(self.rng, num, "EPA", 2, 2)
        ys = np.stack([receive(self.rng, num, tx_grids(self.rng, grid, ns), H, 0.02)
                       for ns in range(3)])
        ys[1, 0, grid.crs_elements(1, 0)[3]] = np.nan
        Hest, nv, tags, est = run_estimator(1.4, 2, 2, ys, [0, 1, 2], 0, tagged=False)
        self.assertEqual([pmt.to_long(t.value) for t in tags[0]], [0, 1, 2])
        self.assertTrue(np.isfinite(nv[0]) and np.isnan(nv[1]) and np.isfinite(nv[2]))
        self.assertEqual(est.bad_slots(), 1)
        self.assertEqual(est.untagged_slots(), 3)

    def test_005_invalid_parameters(self):
        for args in ((4, 2, 2, 0), (5, 3, 2, 0), (5, 2, 0, 0), (5, 2, 9, 0), (5, 2, 2, 504)):
            with self.assertRaises(ValueError):
                mimodet.channel_estimator(*args)

    def test_006_backend(self):
        self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0).backend(), "cpu")
        self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0, 0, "cpu").backend(), "cpu")
        with self.assertRaises(ValueError):
            mimodet.channel_estimator(5, 2, 2, 0, 0, "gpu")
        if mimodet.cuda_device_count() == 0:
            # Without a device: cuda is refused at construction, auto runs on the CPU.
            with self.assertRaises(RuntimeError):
                mimodet.channel_estimator(5, 2, 2, 0, backend="cuda")
            self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0, backend="auto").backend(), "cpu")
        else:
            self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0, backend="cuda").backend(), "cuda")

    def test_007_device(self):
        # The GPU estimator's device: >= 0, ignored by the CPU backend; cuda refuses an
        # index without a device, auto takes the CPU.
        self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0, device=0).backend(), "cpu")
        self.assertEqual(mimodet.channel_estimator(5, 2, 2, 0, device=4).backend(), "cpu")
        with self.assertRaisesRegex(ValueError, "channel_estimator: device must be >= 0"):
            mimodet.channel_estimator(5, 2, 2, 0, device=-1)
        n = mimodet.cuda_device_count()
        with self.assertRaisesRegex(RuntimeError,
                                    "no CUDA device" if n == 0 else "device %d does not" % n):
            mimodet.channel_estimator(5, 2, 2, 0, backend="cuda", device=n)
        self.assertEqual(
            mimodet.channel_estimator(5, 2, 2, 0, backend="auto", device=n).backend(), "cpu")

if __name__ == "__main__":
    gr_unittest.run(qa_channel_estimator)
