#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Command-line simulation of the LTE-style MIMO-OFDM loopback link of gr-mimodet
(docs/LOOPBACK.md, docs/SLOT_LAYOUT.md).

Run it with GNU Radio's Python (on Debian: /usr/bin/python3; another python3 first on
PATH may not import gnuradio), with the module on the path, e.g. from a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/loopback_sim.py \\
        --bandwidth 5 --antennas 4 --modulation 16qam --detector fsd --channel epa \\
        --snr 30 --slots 100 --domain time --cfo 0.3 --timing-offset 1234

It prints a progress line every second and ends with exactly one line
`BER <value> over <n> bits`.
"""

import argparse
import os
import sys
import threading
import time

# GNU Radio's default config on some systems logs at debug level; keep the console
# readable unless the user set a level.
os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

from gnuradio import gr  # noqa: E402
from gnuradio.mimodet import loopback  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="gr-mimodet LTE-style MIMO-OFDM link simulation "
                    "(framer -> channel -> [sync -> demod] -> estimator -> detector)")
    p.add_argument("--bandwidth", type=float, default=5.0,
                   choices=[1.4, 3.0, 5.0, 10.0, 15.0, 20.0], help="MHz (default 5)")
    p.add_argument("--antennas", type=int, default=2, choices=[2, 4],
                   help="transmit = receive antennas (default 2)")
    p.add_argument("--modulation", default="16qam", choices=["qpsk", "16qam", "64qam"])
    p.add_argument("--detector", default="fsd",
                   choices=["psd", "fsd", "sfsd", "mtt", "mmse", "zf"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    p.add_argument("--channel", default="epa",
                   choices=["rayleigh", "epa", "eva", "etu", "awgn"])
    p.add_argument("--snr", type=float, default=30.0,
                   help="SNR per data resource element in dB (docs/CONVENTIONS.md)")
    p.add_argument("--slots", type=int, default=40, help="slots whose bits are counted")
    p.add_argument("--seed", type=int, default=1, help=">= 1 reproducible, 0 random")
    p.add_argument("--domain", default="time", choices=["time", "freq"],
                   help="time: OFDM + sync; freq: grids through the channel (fast)")
    p.add_argument("--cfo", type=float, default=0.0,
                   help="carrier frequency offset in subcarrier spacings (time domain)")
    p.add_argument("--timing-offset", type=int, default=0,
                   help="leading samples before the signal (time domain)")
    p.add_argument("--perfect-csi", action="store_true",
                   help="frequency domain: detect with the channel's true H and noise_var")
    p.add_argument("--threads", type=int, default=0, help="detector CPU threads (0: all)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.slots < 1:
        sys.exit("--slots must be >= 1")
    link = loopback.build_link(a.bandwidth, a.antennas, a.modulation, a.detector,
                               a.backend, a.channel, a.snr, a.slots, a.seed,
                               domain=a.domain, cfo=a.cfo, timing_offset=a.timing_offset,
                               perfect_csi=a.perfect_csi, threads=a.threads)
    print("gr-mimodet loopback: %g MHz, %dx%d %s, detector %s (%s), channel %s, %g dB, "
          "%d slots, %s domain, cfo %g, timing offset %d, seed %d"
          % (a.bandwidth, a.antennas, a.antennas, a.modulation, a.detector,
             link.detector.backend(), a.channel, a.snr, a.slots, a.domain, a.cfo,
             a.timing_offset, a.seed), flush=True)

    done = threading.Event()
    t0 = time.time()

    def progress():
        while not done.wait(1.0):
            det = link.detector.slots_processed()
            bits, errs = link.rx_sink.bits(), link.rx_sink.errors()
            extra = ""
            if link.sync is not None:
                extra = ", sync %s cfo %.4f" % ("locked" if link.sync.locked() else
                                                "searching", link.sync.cfo())
            print("[%5.1fs] slots detected %d/%d, bits %d, errors %d%s"
                  % (time.time() - t0, det, link.n_sent, bits, errs, extra), flush=True)

    th = None
    if not a.quiet:
        th = threading.Thread(target=progress, daemon=True)
        th.start()
    try:
        # GNU Radio warns, for every buffer of resource grids, that the grid's size in
        # bytes does not divide its page granularity and that it allocated more items
        # (harmless: the buffer only grows). Buffers are made at start, so their loggers
        # alone are made at error level; the blocks' loggers keep the level set above.
        logging = gr.logging()
        level = logging.default_level()
        logging.set_default_level(gr.log_levels.err)
        try:
            link.tb.start()
        finally:
            logging.set_default_level(level)
        link.tb.wait()
    except KeyboardInterrupt:
        link.tb.stop()
        link.tb.wait()
    done.set()
    if th is not None:
        th.join()
    r = link.ber()
    if r["first_slot"] is None:
        print("no slot received (not synchronised?)", flush=True)
    else:
        print("received %d of %d counted slots (first: %d, missing after it: %d), "
              "%.1f s" % (r["slots"], a.slots, r["first_slot"], r["slots_missing"],
                          time.time() - t0), flush=True)
    print("BER %.6g over %d bits" % (r["ber"] if r["bits"] else float("nan"), r["bits"]),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
