#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The radio host of a receiver split across two hosts (docs/SPLIT.md): synchronisation
(and the FFT with --domain grids) here, the slots sent with their tags over ZeroMQ to
split_gpu_host.py, which estimates the channel and detects.

The radio is simulated (a repeating frame of bits -> slot_framer -> mimo_channel); on
the air, a UHD source of n_rx channels takes the place of the framer and the channel
(examples/usrp_4x4_rx.grc). Run with GNU Radio's Python and the module on the path:

    PYTHONPATH=build/python /usr/bin/python3 examples/split_radio_host.py \\
        --bandwidth 5 --antennas 2 --domain grids --address tcp://*:5555

It sends until stopped (Ctrl-C, SIGTERM), and waits while no GPU host is connected.
"""

import argparse
import os
import signal
import sys
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

from gnuradio import blocks, gr  # noqa: E402
from gnuradio.mimodet import (loopback, lte_numerology, mimo_channel,  # noqa: E402
                              ofdm_demod, ofdm_sync, slot_framer, split)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="gr-mimodet split receiver: the radio host "
                                "(sync [+ FFT] -> ZeroMQ)")
    split.add_carrier_arguments(p, "tcp://*:5555")
    p.add_argument("--channel", default="epa", choices=["rayleigh", "epa", "eva", "etu", "awgn"])
    p.add_argument("--snr", type=float, default=30.0, help="SNR per data element, dB")
    p.add_argument("--rate", type=float, default=0.0,
                   help="pace the simulated radio at this many slots/s (0: as fast as the "
                        "receiver takes them; 2000 is real time)")
    return p.parse_args(argv)


def build(a, sink=None, frames=0):
    """The radio host's flowgraph; its n_rx slot streams go to sink (default: the
    ZeroMQ slot_stream_sink). frames > 0: that many frames of bits, then the source ends
    (0: it repeats until stopped)."""
    n = a.antennas
    framer = slot_framer(a.bandwidth, n, a.modulation, a.cell_id, False)
    tb = gr.top_block("mimodet split: radio host")
    bits = loopback.frame_bits(a.bandwidth, n, a.modulation, a.cell_id, a.seed)
    tb.src = blocks.vector_source_b(bits * max(frames, 1), frames == 0)
    tb.chan = mimo_channel(n, n, a.channel, a.snr, a.bandwidth, -1.0, 0.0, 0, False, a.seed)
    tb.sync = ofdm_sync(a.bandwidth, n, a.cell_id)
    tb.sink = sink or split.slot_stream_sink(a.bandwidth, n, a.domain, a.address, a.hwm)
    tb.connect(tb.src, framer)
    for t in range(n):
        tb.connect((framer, t), (tb.chan, t))
    slot_samples = lte_numerology.from_bandwidth(a.bandwidth).slot_samples()
    for r in range(n):
        src = (tb.chan, r)
        if a.rate > 0:  # each antenna paced alike: ofdm_sync takes them together
            thr = blocks.throttle(gr.sizeof_gr_complex, a.rate * slot_samples)
            setattr(tb, "throttle%d" % r, thr)
            tb.connect(src, thr)
            src = thr
        tb.connect(src, (tb.sync, r))
    if a.domain == "grids":
        tb.demod = ofdm_demod(a.bandwidth, n)
        for r in range(n):
            tb.connect((tb.sync, r), (tb.demod, r))
            tb.connect((tb.demod, r), (tb.sink, r))
    else:
        for r in range(n):
            tb.connect((tb.sync, r), (tb.sink, r))
    return tb


def main(argv=None):
    a = parse_args(argv)
    tb = build(a)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    tb.start()
    print("radio host: %g MHz %dx%d %s, sending %s to %s" % (
        a.bandwidth, a.antennas, a.antennas, a.modulation, a.domain, a.address), flush=True)
    try:
        while not stop:
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    if split.stop_sender(tb, tb.sink):
        print("radio host: the last slot waited for a receiver that was gone; drained",
              flush=True)
    print("radio host: %d slots synchronised, %d lost" % (
        tb.sync.slots_out(), tb.sync.slots_lost()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
