#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The demo of gr-mimodet (run by scripts/demo): the LTE-style loopback link of
python/mimodet/loopback.py (docs/LOOPBACK.md) at 20 MHz, 4x4, 16QAM, over EPA fading at
20 and 30 dB, once per detector, and one table of BER and throughput per detector.

The link runs in the frequency domain: slot_framer(grids) -> mimo_channel(EPA, AWGN) ->
channel_estimator (CRS, estimated CSI) -> mimo_detector -> BER counter. Every run uses
the same seed, so every detector sees the same bits, channel and noise. The backend is
"auto" (the GPU for every detector but ml) when there is a CUDA device,
else "cpu". slots/s and Mbit/s are the whole link's (every block of the flowgraph
shares the CPU cores), wall clock over the counted slots and data bits.

Run it with GNU Radio's Python and the module on the path, e.g. from a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/demo_table.py [--slots 200] ...
"""

import argparse
import os
import sys
import time

# GNU Radio's default config on some systems logs at debug level, and the buffer
# allocator warns about the large grid items; keep the table readable.
os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

from gnuradio import mimodet  # noqa: E402
from gnuradio.mimodet import loopback  # noqa: E402

DETECTORS = ("psd", "fsd", "sfsd", "mtt", "mmse", "zf")
# 200 slots (10 frames, 23 Mbit per run) took 4-14 s per run for the tree searches and
# about 1 s for zf/mmse on the 2-core development machine (whole demo about 1.5 min);
# at 30 dB fewer slots would show no errors at all.
DEFAULT_SLOTS = 200


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="gr-mimodet demo: 20 MHz 4x4 16QAM loopback (frequency domain, EPA, "
                    "estimated CSI) with every detector; prints BER and throughput")
    p.add_argument("--detectors", default=",".join(DETECTORS),
                   help="comma-separated list (default: %(default)s)")
    p.add_argument("--snr", default="20,30", help="SNRs in dB, comma-separated")
    p.add_argument("--slots", type=int, default=DEFAULT_SLOTS,
                   help="slots per run (default %(default)s)")
    p.add_argument("--backend", choices=["auto", "cpu", "cuda"], default=None,
                   help="default: auto when a CUDA device is present, else cpu")
    p.add_argument("--seed", type=int, default=1, help=">= 1 reproducible")
    return p.parse_args(argv)


def run_one(detector, backend, snr_db, slots, seed):
    link = loopback.build_link(20, 4, "16qam", detector, backend, "epa", snr_db, slots,
                               seed, domain="freq")
    t0 = time.perf_counter()
    r = link.run()
    dt = time.perf_counter() - t0
    return link.detector.backend(), r, dt


def main(argv=None):
    a = parse_args(argv)
    dets = [d for d in a.detectors.split(",") if d]
    for d in dets:
        if d not in DETECTORS:
            sys.exit("unknown detector %r (one of %s)" % (d, ", ".join(DETECTORS)))
    snrs = [float(s) for s in a.snr.split(",") if s]
    if a.slots < 1:
        sys.exit("--slots must be >= 1")
    gpus = mimodet.cuda_device_count()
    backend = a.backend or ("auto" if gpus > 0 else "cpu")
    print("== loopback: 20 MHz 4x4 16QAM, EPA fading, frequency domain (grids, no OFDM/"
          "sync), CRS channel estimate, %d slots per run, seed %d" % (a.slots, a.seed))
    print("== backend %s (%d CUDA device%s); slots/s and Mbit/s: the whole link, wall "
          "clock" % (backend, gpus, "" if gpus == 1 else "s"))
    print("%-8s %-7s %5s %6s %10s %8s %10s %8s %8s"
          % ("detector", "backend", "SNR", "slots", "bits", "errors", "BER", "slots/s",
             "Mbit/s"), flush=True)
    t_all = time.perf_counter()
    for snr in snrs:
        for d in dets:
            used, r, dt = run_one(d, backend, snr, a.slots, a.seed)
            print("%-8s %-7s %5g %6d %10d %8d %10.3e %8.1f %8.2f"
                  % (d, used, snr, r["slots"], r["bits"], r["errors"], r["ber"],
                     r["slots"] / dt, r["bits"] / dt / 1e6), flush=True)
            if r["slots"] != a.slots:
                print("   (%d of %d slots counted)" % (r["slots"], a.slots), flush=True)
    print("== %.1f s in all" % (time.perf_counter() - t_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
