#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the coded MIMO-BICM pieces (python/mimodet/coding.py): the LLR adapter's sign
and scale against gr-fec's LDPC decoder, the interleaver, unscaled LLRs, and coded
loopbacks (batch link and the GNU Radio slot-chain flowgraph) at high SNR."""

import numpy as np
from gnuradio import blocks, fec, gr, gr_unittest

from gnuradio import mimodet
from gnuradio.mimodet import coding


def gr_fec_decode(code, x, sigma):
    """gr-fec's decoder on raw input x (its own convention), one flowgraph."""
    d = fec.ldpc_decoder.make(code.alist, sigma, code.max_iterations)
    tb = gr.top_block()
    src = blocks.vector_source_f(np.asarray(x, np.float32).tolist())
    dec = fec.decoder(d, gr.sizeof_float, gr.sizeof_char)
    snk = blocks.vector_sink_b()
    tb.connect(src, dec, snk)
    tb.run()
    return np.array(snk.data(), dtype=np.uint8)


class qa_coding(gr_unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.code = coding.ldpc_code(threads=2)
        rng = np.random.default_rng(7)
        cls.frames = 8
        cls.info = rng.integers(0, 2, cls.frames * cls.code.k, dtype=np.uint8)
        cls.cw = cls.code.encode(cls.info)

    def test_001_code_shape(self):
        c = self.code
        self.assertEqual((c.n, c.k), (1800, 902))
        self.assertEqual(self.cw.size, self.frames * c.n)
        # gr-fec's LDPC encoder is systematic with the info bits at the end.
        cw = self.cw.reshape(self.frames, c.n)
        np.testing.assert_array_equal(cw[:, c.n - c.k:], self.info.reshape(self.frames, c.k))

    def test_002_adapter_matches_gr_fec_convention(self):
        # BPSK over AWGN in gr-fec's own convention (its examples: bit 1 -> +1, bit 0 ->
        # -1, decoder made with the noise sigma) against our path: the exact LLR
        # 2 r / sigma^2 of r = (1 - 2c) + noise (positive means 0) through llr_to_fec.
        c = self.code
        for sigma in (0.6, 0.8):
            rng = np.random.default_rng(int(sigma * 10))
            r = (1.0 - 2.0 * self.cw) + sigma * rng.standard_normal(self.cw.size)
            native_in = (-r).astype(np.float32)
            llr = 2.0 * r / sigma ** 2
            ours_in = coding.llr_to_fec(llr, sigma)
            # Same input up to float rounding (no LLR here reaches the saturation).
            self.assertLess(np.abs(llr).max(), coding.FEC_LLR_LIMIT)
            np.testing.assert_allclose(ours_in, native_in, rtol=1e-5, atol=1e-6)
            native = gr_fec_decode(c, native_in, sigma)
            ours = coding.ldpc_code(max_iterations=c.max_iterations, sigma=sigma,
                                    threads=1).decode(llr)
            np.testing.assert_array_equal(ours, native)
            if sigma == 0.6:
                # Raw BER about 5 %: the code corrects nearly everything.
                self.assertGreater((r < 0).astype(np.uint8).__ne__(self.cw).mean(), 0.02)
                self.assertLess((ours != self.info).mean(), 1e-3)

    def test_003_sign_matters(self):
        # Clean LLRs of the right sign decode exactly; the opposite sign convention
        # decodes a different codeword (here the complement), so the test above could
        # not pass with a sign error.
        llr = 8.0 * (1.0 - 2.0 * self.cw)
        np.testing.assert_array_equal(self.code.decode(llr), self.info)
        wrong = self.code.decode(-llr)
        self.assertGreater((wrong != self.info).mean(), 0.3)
        # Positive LLR (bit 0) becomes negative decoder input (gr-fec: negative = 0).
        self.assertLess(coding.llr_to_fec([5.0])[0], 0)
        self.assertAlmostEqual(float(coding.llr_to_fec([4.0], sigma=0.5)[0]), -0.5)

    def test_004_saturation(self):
        # Huge reliable LLRs (a list detector's missing-counter-hypothesis value, or
        # unclipped high-SNR LLRs) with 3 % weak wrong bits: gr-fec's decoder fails on
        # them raw (exp overflow) and decodes them after llr_to_fec's saturation.
        rng = np.random.default_rng(3)
        llr = 1000.0 * (1.0 - 2.0 * self.cw)
        bad = rng.random(llr.size) < 0.03
        llr[bad] = -0.5 * np.sign(llr[bad])
        raw = gr_fec_decode(self.code, -0.5 * llr, 1.0)
        self.assertGreater((raw != self.info).mean(), 0.01)
        np.testing.assert_array_equal(self.code.decode(llr), self.info)

    def test_005_interleaver(self):
        il = coding.interleaver(1800, seed=5)
        x = np.arange(3 * 1800)
        y = il.interleave(x)
        self.assertFalse(np.array_equal(x, y))
        np.testing.assert_array_equal(il.deinterleave(y), x)
        self.assertEqual(sorted(y[:1800].tolist()), list(range(1800)))
        # The GNU Radio block form applies the same permutation.
        for itemsize, src_t, snk_t, data in (
                (gr.sizeof_char, blocks.vector_source_b, blocks.vector_sink_b,
                 (x % 2).astype(np.uint8)),
                (gr.sizeof_float, blocks.vector_source_f, blocks.vector_sink_f,
                 x.astype(np.float32))):
            tb = gr.top_block()
            src, snk = src_t(data.tolist()), snk_t()
            tb.connect(src, il.block(itemsize), snk)
            tb.run()
            np.testing.assert_array_equal(np.array(snk.data()), il.interleave(data))
            tb = gr.top_block()
            src, snk = src_t(il.interleave(data).tolist()), snk_t()
            tb.connect(src, il.deinterleave_block(itemsize), snk)
            tb.run()
            np.testing.assert_array_equal(np.array(snk.data()), data)
        with self.assertRaises(ValueError):
            il.interleave(np.zeros(100))
        with self.assertRaises(ValueError):
            coding.interleaver(0)

    def test_006_unscaled_llrs(self):
        # llr_scaled=False gives noise_var times the scaled LLRs, per matrix, for every
        # soft detector (one place in the core for all algorithms and backends).
        rng = np.random.default_rng(11)
        B, S, n = 40, 3, 2
        H = ((rng.standard_normal((B, n, n)) + 1j * rng.standard_normal((B, n, n)))
             / np.sqrt(2)).astype(np.complex64)
        y = ((rng.standard_normal((B, S, n)) + 1j * rng.standard_normal((B, S, n)))
             ).astype(np.complex64)
        nv = rng.uniform(0.05, 0.5, B).astype(np.float32)
        for alg in ("ml", "mtt", "sfsd", "mmse", "zf"):
            for clip in (0.0, 6.0):
                a = mimodet.detector(alg, n, n, "16qam", llr_clip=clip)
                b = mimodet.detector(alg, n, n, "16qam", llr_clip=clip, llr_scaled=False)
                la, lb = a.detect_llr(H, y, nv), b.detect_llr(H, y, nv)
                np.testing.assert_allclose(lb, la * nv[:, None, None], rtol=1e-6,
                                           atol=1e-7, err_msg=alg)
                if clip > 0:
                    self.assertLessEqual(np.abs(la).max(), clip)
                    self.assertGreater(np.abs(la).max(), clip * 0.999)

    def test_007_coded_batch_link_high_snr(self):
        # Rayleigh block fading at high SNR: every frame decodes.
        for alg, n, mod, snr in (("mtt", 2, "16qam", 22.0), ("sfsd", 4, "16qam", 22.0),
                                 ("mmse", 2, "64qam", 28.0)):
            det = mimodet.detector(alg, n, n, mod, threads=2)
            link = coding.bicm_link(det, self.code, seed=5)
            be, nb, fe, nf = link.run(snr, 6)
            self.assertEqual((be, fe), (0, 0), "%s %dx%d %s" % (alg, n, n, mod))
            self.assertEqual((nb, nf), (6 * self.code.k, 6))

    def test_008_coded_slot_chain_flowgraph(self):
        # bits -> LDPC -> interleaver -> slot framer -> EPA channel -> estimator ->
        # detector LLRs -> deinterleaver -> adapter -> gr-fec decoder, at 25 dB.
        for alg, n in (("mtt", 2), ("sfsd", 4)):
            tb, info, sink, code = coding.build_coded_slot_link(
                1.4, n, "16qam", alg, "epa", 25.0, frames=6, seed=3, threads=2)
            tb.run()
            out = np.array(sink.data(), dtype=np.uint8)
            self.assertGreaterEqual(out.size, 6 * code.k)
            got = out[:6 * code.k].reshape(6, code.k)
            want = info[:6 * code.k].reshape(6, code.k)
            frame_ok = (got == want).all(axis=1)
            self.assertTrue(frame_ok.all(), "%s: frames decoded %s" % (alg, frame_ok))

    def test_009_bad_input(self):
        with self.assertRaises(ValueError):
            coding.alist_path("no_such_code.alist")
        with self.assertRaises(ValueError):
            coding.llr_to_fec([1.0], sigma=0.0)
        with self.assertRaises(ValueError):
            self.code.encode(np.zeros(self.code.k + 1, np.uint8))
        with self.assertRaises(ValueError):
            self.code.decode(np.zeros(self.code.n - 1))


if __name__ == "__main__":
    gr_unittest.run(qa_coding)
