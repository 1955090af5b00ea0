#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Coded MIMO-BICM around the detectors: GNU Radio's gr-fec LDPC code, a bit
interleaver, and the one place where our LLRs are adapted to gr-fec's decoder
(docs/CODING.md).

Transmit: bits -> LDPC encoder -> interleaver -> slot framer / symbol mapper.
Receive:  detector LLRs -> deinterleaver -> llr_to_fec -> LDPC decoder -> bits.

gr-fec's soft LDPC decoder (fec.ldpc_decoder, belief propagation over an alist
parity-check matrix) reads BPSK-like soft values x with the convention of its own
examples: bit 1 -> +1, bit 0 -> -1, plus Gaussian noise of the `sigma` it was made with;
internally it forms the channel LLR 2 x / sigma^2 with "positive means 1". Our LLRs are
ln P(b=0)/P(b=1) ("positive means 0", docs/CONVENTIONS.md), so

    x = -LLR * sigma^2 / 2,

after saturating |LLR| to FEC_LLR_LIMIT: the decoder's likelihood ratios exp(+-LLR)
overflow above |LLR| ~ 150-200 and then it decodes garbage (measured with the 1800-bit
code: |LLR| = 150 decodes, 200 does not). An LLR of 50 already means an error probability
of 2e-22, so the saturation loses nothing.
"""

import os

import numpy as np
from gnuradio import analog, blocks, fec, gr, trellis

#: |LLR| is saturated here before gr-fec's decoder (see the module docstring).
FEC_LLR_LIMIT = 50.0

#: gr-fec's rate-1/2 code closest to the papers' 2304-bit one: n = 1800, k = 902.
DEFAULT_ALIST = "n_1800_k_0902_gap_28.alist"


def alist_path(name=DEFAULT_ALIST):
    """Full path of an alist file: `name` itself if it exists, else gr-fec's shipped
    matrices (<prefix>/share/gnuradio/fec/ldpc/<name>)."""
    if os.path.isfile(name):
        return name
    path = os.path.join(gr.prefix(), "share", "gnuradio", "fec", "ldpc", name)
    if not os.path.isfile(path):
        raise ValueError("mimodet: LDPC alist file '%s' not found (looked in %s)"
                         % (name, os.path.dirname(path)))
    return path


def fec_input_scale(sigma=1.0):
    """The factor from our LLRs to gr-fec decoder input: -sigma^2 / 2."""
    if not (sigma > 0 and np.isfinite(sigma)):
        raise ValueError("mimodet: sigma must be finite and > 0, got %r" % (sigma,))
    return -0.5 * sigma * sigma


def llr_to_fec(llr, sigma=1.0):
    """Our LLRs (ln P(0)/P(1)) -> gr-fec ldpc_decoder input for a decoder made with
    `sigma`: saturate to +-FEC_LLR_LIMIT, then scale by -sigma^2/2. float32."""
    llr = np.asarray(llr, dtype=np.float64)
    return (np.clip(llr, -FEC_LLR_LIMIT, FEC_LLR_LIMIT) * fec_input_scale(sigma)).astype(
        np.float32)


class llr_to_fec_ff(gr.hier_block2):
    """Streaming form of llr_to_fec(): float LLRs in, gr-fec ldpc_decoder input out
    (saturation to +-FEC_LLR_LIMIT, then the factor -sigma^2/2)."""

    def __init__(self, sigma=1.0):
        gr.hier_block2.__init__(self, "mimodet_llr_to_fec_ff",
                                gr.io_signature(1, 1, gr.sizeof_float),
                                gr.io_signature(1, 1, gr.sizeof_float))
        self._rail = analog.rail_ff(-FEC_LLR_LIMIT, FEC_LLR_LIMIT)
        self._scale = blocks.multiply_const_ff(fec_input_scale(sigma))
        self.connect(self, self._rail, self._scale, self)


class interleaver(object):
    """Pseudo-random bit interleaver over one codeword of n bits (seeded permutation).
    interleave(x)[..., i] = x[..., table[i]]; works on the last axis of arrays whose
    size is a multiple of n. block(itemsize) gives the same permutation as a GNU Radio
    block (gr-trellis permutation); deinterleave_block(itemsize) its inverse."""

    def __init__(self, n, seed=0):
        if n < 1:
            raise ValueError("mimodet: interleaver length must be >= 1, got %r" % (n,))
        self.n = int(n)
        self.table = np.random.default_rng(seed).permutation(self.n)
        self.inverse = np.argsort(self.table)

    def _apply(self, x, table):
        x = np.asarray(x)
        if x.shape[-1] % self.n:
            raise ValueError("mimodet: length %d is not a multiple of the interleaver "
                             "length %d" % (x.shape[-1], self.n))
        shape = x.shape
        return x.reshape(shape[:-1] + (-1, self.n))[..., table].reshape(shape)

    def interleave(self, x):
        return self._apply(x, self.table)

    def deinterleave(self, x):
        return self._apply(x, self.inverse)

    def block(self, itemsize):
        return trellis.permutation(self.n, [int(v) for v in self.table], 1, itemsize)

    def deinterleave_block(self, itemsize):
        return trellis.permutation(self.n, [int(v) for v in self.inverse], 1, itemsize)


class ldpc_code(object):
    """gr-fec LDPC code from an alist file, with numpy encode/decode that run gr-fec's
    encoder and soft decoder blocks (fec.encoder / fec.decoder) in small flowgraphs.

    encode(bits): k*F info bits (0/1) -> n*F code bits (systematic at the end).
    decode(llr):  n*F of our LLRs (positive means 0) -> k*F decided info bits, through
                  llr_to_fec(); `threads` decoders work on parts of the frames at once.
    """

    def __init__(self, alist=DEFAULT_ALIST, max_iterations=50, sigma=1.0, threads=0):
        self.alist = alist_path(alist)
        if max_iterations < 1:
            raise ValueError("mimodet: max_iterations must be >= 1")
        self.max_iterations = int(max_iterations)
        self.sigma = float(sigma)
        fec_input_scale(self.sigma)  # validates sigma
        self.threads = int(threads) if threads > 0 else max(1, os.cpu_count() or 1)
        enc = fec.ldpc_encoder_make(self.alist)
        self.k = enc.get_input_size()
        self.n = enc.get_output_size()
        self.rate = float(self.k) / self.n

    def make_encoder(self):
        """A new gr-fec encoder object (for fec.encoder / fec.extended_encoder)."""
        return fec.ldpc_encoder_make(self.alist)

    def make_decoder(self):
        """A new gr-fec soft decoder object; feed it llr_to_fec(llr, self.sigma)."""
        return fec.ldpc_decoder.make(self.alist, self.sigma, self.max_iterations)

    def encode(self, bits):
        bits = np.asarray(bits, dtype=np.uint8).ravel()
        if bits.size % self.k:
            raise ValueError("mimodet: %d info bits is not a multiple of k = %d"
                             % (bits.size, self.k))
        tb = gr.top_block()
        src = blocks.vector_source_b(bits.tolist())
        enc = fec.encoder(self.make_encoder(), gr.sizeof_char, gr.sizeof_char)
        snk = blocks.vector_sink_b()
        tb.connect(src, enc, snk)
        tb.run()
        return np.array(snk.data(), dtype=np.uint8)

    def decode(self, llr):
        x = llr_to_fec(np.asarray(llr).ravel(), self.sigma)
        if x.size % self.n:
            raise ValueError("mimodet: %d LLRs is not a multiple of n = %d"
                             % (x.size, self.n))
        frames = x.size // self.n
        parts = np.array_split(np.arange(frames), min(self.threads, max(frames, 1)))
        # One decoder block per part; a top_block runs each block in its own thread.
        tb = gr.top_block()
        sinks = []
        for p in parts:
            if p.size == 0:
                continue
            seg = x[p[0] * self.n:(p[-1] + 1) * self.n]
            src = blocks.vector_source_f(seg.tolist())
            dec = fec.decoder(self.make_decoder(), gr.sizeof_float, gr.sizeof_char)
            snk = blocks.vector_sink_b()
            tb.connect(src, dec, snk)
            sinks.append(snk)
        if sinks:
            tb.run()
        out = [np.array(s.data(), dtype=np.uint8) for s in sinks]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.uint8)


def bits_to_symbols(bits, modulation):
    """Map bits (0/1, length a multiple of q) to 36.211 symbols: q bits per symbol, b0
    first and most significant (docs/CONVENTIONS.md)."""
    from .mimodet_python import constellation_points, parse_modulation
    mod = parse_modulation(modulation) if isinstance(modulation, str) else modulation
    pts = np.asarray(constellation_points(mod))
    q = int(round(np.log2(pts.size)))
    b = np.asarray(bits, dtype=np.int64).reshape(-1, q)
    labels = b.dot(1 << np.arange(q - 1, -1, -1))
    return pts[labels]


class bicm_link(object):
    """Coded MIMO-BICM over i.i.d. Rayleigh block fading, for BER/FER simulations.

    Per frame batch: info bits -> ldpc_code.encode -> interleaver (per codeword) ->
    36.211 symbols on n_tx antennas -> y = H s + n with one CN(0,1) H per `block`
    consecutive vectors (block = 7: one subcarrier of an LTE slot) -> detector LLRs
    (scaled by 1/noise_var) -> deinterleaver -> gr-fec decoder. Codewords are packed back
    to back over the vectors, so one codeword sees many channel matrices.

    run(snr_db, frames) returns (bit_errors, bits, frame_errors, frames). The SNR is the
    receive SNR n_tx / noise_var of docs/CONVENTIONS.md.
    """

    def __init__(self, detector, code, interleaver_seed=1, block=7, seed=0):
        self.det = detector
        self.code = code
        self.n_tx = detector.n_tx
        self.n_rx = detector.n_rx
        self.bpv = detector.bits_per_vector
        self.q = self.bpv // self.n_tx
        from .loopback import MODULATIONS
        self.modulation = {q: name for name, q in MODULATIONS.items()}[self.q]
        self.block = int(block)
        self.il = interleaver(code.n, interleaver_seed)
        self.rng = np.random.default_rng(seed)

    def run(self, snr_db, frames):
        code, rng = self.code, self.rng
        info = rng.integers(0, 2, frames * code.k, dtype=np.uint8)
        cw = self.il.interleave(code.encode(info))
        # Whole channel blocks of vectors; the tail is padded with random bits.
        per_block = self.block * self.bpv
        n_blocks = -(-cw.size // per_block)
        tx = np.concatenate([cw, rng.integers(0, 2, n_blocks * per_block - cw.size,
                                              dtype=np.uint8)])
        s = bits_to_symbols(tx, self.modulation).reshape(n_blocks, self.block, self.n_tx)
        H = (rng.standard_normal((n_blocks, self.n_rx, self.n_tx)) +
             1j * rng.standard_normal((n_blocks, self.n_rx, self.n_tx))) / np.sqrt(2)
        nv = self.n_tx / 10.0 ** (snr_db / 10.0)
        noise = (rng.standard_normal((n_blocks, self.block, self.n_rx)) +
                 1j * rng.standard_normal((n_blocks, self.block, self.n_rx))) * np.sqrt(nv / 2)
        y = np.einsum("brt,bst->bsr", H, s) + noise
        llr = self.det.detect_llr(H.astype(np.complex64), y.astype(np.complex64),
                                  np.full(n_blocks, nv, dtype=np.float32))
        llr = self.il.deinterleave(np.asarray(llr).ravel()[:cw.size])
        dec = code.decode(llr)
        err = dec != info
        frame_err = int(err.reshape(frames, code.k).any(axis=1).sum())
        return int(err.sum()), int(info.size), frame_err, int(frames)


def build_coded_slot_link(bandwidth, antennas, modulation, detector, channel, snr_db,
                          frames, seed=1, backend="cpu", code=None, interleaver_seed=1,
                          **detector_params):
    """The coded link as one GNU Radio flowgraph over the frequency-domain slot chain:

        info bits -> fec.encoder (LDPC) -> interleaver -> slot_framer(freq)
          -> mimo_channel(freq) -> channel_estimator -> mimo_detector (soft, LLRs)
          -> deinterleaver -> llr_to_fec_ff -> fec.decoder (LDPC) -> bits

    Sends `frames` codewords plus enough padding codewords to fill the last slot (the
    framer emits whole slots only). Returns (tb, info_bits, sink, code); after tb.run(),
    sink.data() holds the decoded info bits of every codeword that came through whole,
    in order (the first `frames` are the ones to count). The frequency-domain chain
    delivers every slot from slot 0, so codeword boundaries stay aligned.
    """
    from .mimodet_python import (channel_estimator, mimo_channel, mimo_detector,
                                 slot_framer)
    code = code or ldpc_code()
    n_tx = int(antennas)
    framer = slot_framer(float(bandwidth), n_tx, modulation, 1, True)
    bps = [framer.bits_per_slot(ns) for ns in range(20)]
    # Codewords to cover `frames` and then finish the slot they end in.
    total, slots = 0, 0
    while total < frames * code.n:
        total += bps[slots % 20]
        slots += 1
    n_frames = -(-total // code.n)
    rng = np.random.default_rng(seed)
    info = rng.integers(0, 2, n_frames * code.k, dtype=np.uint8)
    il = interleaver(code.n, interleaver_seed)

    tb = gr.top_block("mimodet coded loopback")
    src = blocks.vector_source_b(info.tolist(), False)
    enc = fec.encoder(code.make_encoder(), gr.sizeof_char, gr.sizeof_char)
    tb.connect(src, enc, il.block(gr.sizeof_char), framer)
    chan = mimo_channel(n_tx, n_tx, channel, float(snr_db), float(bandwidth), -1.0, 0.0,
                        0, True, int(seed))
    est = channel_estimator(float(bandwidth), n_tx, n_tx, 1)
    det = mimo_detector(detector, float(bandwidth), n_tx, n_tx, modulation, 1, backend,
                        True, **detector_params)
    for t in range(n_tx):
        tb.connect((framer, t), (chan, t))
        tb.connect((chan, t), (est, t))
        tb.connect((chan, t), (det, t))
    tb.connect((est, 0), (det, n_tx))
    tb.connect((est, 1), (det, n_tx + 1))
    dec = fec.decoder(code.make_decoder(), gr.sizeof_float, gr.sizeof_char)
    sink = blocks.vector_sink_b()
    tb.connect(det, il.deinterleave_block(gr.sizeof_float), llr_to_fec_ff(code.sigma), dec,
               sink)
    return tb, info, sink, code
