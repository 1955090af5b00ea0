#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The coded slot-chain link as one GNU Radio flowgraph (docs/CODING.md):

    bits -> gr-fec LDPC encoder -> interleaver -> slot_framer (grids) -> mimo_channel
      -> channel_estimator -> mimo_detector (LLRs) -> deinterleaver -> llr_to_fec
      -> gr-fec LDPC decoder -> bits

Sends enough codewords to fill --slots slots and prints frame and bit errors:

    PYTHONPATH=build/python /usr/bin/python3 examples/coded_loopback.py \\
        --bandwidth 5 --antennas 4 --modulation 64qam --detector sfsd --snr 30 --slots 200
"""

import argparse
import os
import sys
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

import numpy as np  # noqa: E402
from gnuradio.mimodet import coding, slot_framer  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bandwidth", type=float, default=5.0,
                   choices=[1.4, 3.0, 5.0, 10.0, 15.0, 20.0])
    p.add_argument("--antennas", type=int, default=2, choices=[2, 4])
    p.add_argument("--modulation", default="16qam", choices=["qpsk", "16qam", "64qam"])
    p.add_argument("--detector", default="mtt", choices=["mtt", "sfsd", "mmse", "zf", "ml"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    p.add_argument("--channel", default="epa", choices=["awgn", "rayleigh", "epa", "eva", "etu"])
    p.add_argument("--snr", type=float, default=30.0, help="dB (docs/CONVENTIONS.md)")
    p.add_argument("--slots", type=int, default=200)
    p.add_argument("--seed", type=int, default=5)
    a = p.parse_args(argv)
    if a.slots < 1:
        p.error("--slots must be >= 1")
    code = coding.ldpc_code()
    framer = slot_framer(a.bandwidth, a.antennas, a.modulation, 1, True)
    frames = max(1, sum(framer.bits_per_slot(s % 20) for s in range(a.slots)) // code.n)
    t0 = time.time()
    tb, info, sink, code = coding.build_coded_slot_link(
        a.bandwidth, a.antennas, a.modulation, a.detector, a.channel, a.snr, frames,
        seed=a.seed, backend=a.backend, code=code)
    print("%g MHz %dx%d %s %s %s %.1f dB: %d LDPC frames (n %d, k %d) over %d slots"
          % (a.bandwidth, a.antennas, a.antennas, a.modulation, a.detector, a.channel,
             a.snr, frames, code.n, code.k, a.slots), flush=True)
    tb.run()
    out = np.array(sink.data(), dtype=np.uint8)
    if out.size < frames * code.k:
        print("error: only %d of %d frames came out" % (out.size // code.k, frames))
        return 1
    got = out[:frames * code.k].reshape(frames, code.k)
    want = info[:frames * code.k].reshape(frames, code.k)
    frame_errors = int((got != want).any(axis=1).sum())
    bit_errors = int((got != want).sum())
    print("frame errors %d of %d, bit errors %d of %d (%.1f s)"
          % (frame_errors, frames, bit_errors, got.size, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
