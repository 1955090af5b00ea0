#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Receiver of the emulated over-the-air link (docs/OTA.md): runs the gr-mimodet receive
chain on the files examples/ota_record.py wrote and counts the bit errors against the
transmitted bits, regenerated from the seed in ota.json.

    file_source (one per receive antenna) -> ofdm_sync -> ofdm_demod
        -> channel_estimator -> mimo_detector -> BER (loopback.ber_counter)

    PYTHONPATH=build/python /usr/bin/python3 examples/ota_receive.py /tmp/ota [--detector fsd]

The receiver knows the cell id, the bandwidth, the antenna counts and the modulation
(a radio would be configured so), nothing about the impairments or where the signal
starts. It prints the synchroniser's view (CFO, missed PSS), then

    slots found <received>/<sent>, first slot <a>, missing <m>
    BER <value> over <n> bits

"slots sent" are the slots whose bits count (ota.json "slots"); the padding slots after
them are never counted. A slot is found when its bits reach the BER counter.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

from gnuradio import blocks, gr  # noqa: E402

from gnuradio.mimodet import loopback  # noqa: E402
from gnuradio.mimodet import (channel_estimator, mimo_detector, ofdm_demod,  # noqa: E402
                              ofdm_sync)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ota_record  # noqa: E402


def receive(rec_dir, detector="fsd", backend="cpu", quiet=True, **detector_params):
    """Runs the receiver on a recording; returns a dict: slots_sent, slots_found,
    first_slot, slots_missing, errors, bits, ber, cfo and sro_ppm (the synchroniser's
    estimates at the end), resampling (whether it was removing a sample-rate offset),
    pss_missed, slots_out (all slots the synchroniser emitted), records (per received
    slot: absolute slot, ns, bits, errors), seconds, meta (ota.json)."""
    with open(os.path.join(rec_dir, "ota.json")) as f:
        meta = json.load(f)
    if meta.get("format") != ota_record.FORMAT:
        raise ValueError("%s: not a %s recording" % (rec_dir, ota_record.FORMAT))
    bw = float(meta["bandwidth"])
    n_tx, n_rx = int(meta["n_tx"]), int(meta["n_rx"])
    cell = int(meta["cell_id"])
    mod = meta["modulation"]
    bits = ota_record.tx_bits(meta)
    bps = ota_record.bits_per_slot(meta)

    tb = gr.top_block("mimodet ota receive")
    sync = ofdm_sync(bw, n_rx, cell)
    demod = ofdm_demod(bw, n_rx)
    est = channel_estimator(bw, n_tx, n_rx, cell)
    det = mimo_detector(detector, bw, n_tx, n_rx, mod, cell, backend, False,
                        **detector_params)
    for r in range(n_rx):
        src = blocks.file_source(gr.sizeof_gr_complex,
                                 os.path.join(rec_dir, meta["files"][r]), False)
        tb.connect(src, (sync, r))
        tb.connect((sync, r), (demod, r))
        tb.connect((demod, r), (est, r))
        tb.connect((demod, r), (det, r))
    tb.connect((est, 0), (det, n_rx))
    tb.connect((est, 1), (det, n_rx + 1))
    counter = loopback.ber_counter(bits, bps, int(meta["slots"]))
    tb.connect(det, counter)
    t0 = time.time()
    tb.run()
    seconds = time.time() - t0

    n = int(meta["slots"])
    rec = counter.records()
    counted = [r for r in rec if r[0] < n]
    found = sorted(set(r[0] for r in counted))
    first = rec[0][0] if rec else None
    res = dict(slots_sent=n, slots_found=len(found),
               first_slot=first,
               slots_missing=n - len(found),
               errors=sum(r[3] for r in counted), bits=sum(r[2] for r in counted),
               cfo=sync.cfo(), sro_ppm=sync.sro_ppm(), resampling=sync.resampling(),
               pss_missed=int(sync.pss_missed()),
               slots_out=int(sync.slots_out()), records=rec, seconds=seconds, meta=meta)
    res["ber"] = res["errors"] / res["bits"] if res["bits"] else float("nan")
    if not quiet:
        print("recording: %g MHz %dx%d %s, %s %g dB, CFO %g (%.0f Hz), SRO %g ppm, "
              "%d samples per antenna"
              % (bw, n_tx, n_rx, mod, meta["channel"], meta["snr_db"], meta["cfo"],
                 meta["cfo_hz"], meta["sro_ppm"], meta["n_samples"]), flush=True)
        print("ofdm_sync: CFO estimate %.4f subcarrier spacings, sample-rate offset "
              "estimate %.2f ppm (resampling %s), %d slots out, %d PSS missed in "
              "tracking; %.1f s" % (res["cfo"], res["sro_ppm"],
                                    "on" if res["resampling"] else "off",
                                    res["slots_out"], res["pss_missed"], seconds),
              flush=True)
        print("slots found %d/%d, first slot %s, missing %d"
              % (res["slots_found"], n, first, res["slots_missing"]), flush=True)
        print("BER %.6g over %d bits" % (res["ber"], res["bits"]), flush=True)
    return res


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="gr-mimodet receiver on an emulated over-the-air recording "
                    "(examples/ota_record.py)")
    p.add_argument("dir", help="directory with ota.json and rx<r>.c64")
    p.add_argument("--detector", default="fsd",
                   choices=["psd", "fsd", "sfsd", "mtt", "mmse", "zf", "ml"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    try:
        r = receive(a.dir, a.detector, a.backend, quiet=False)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("ota_receive: %s" % e)
    return 0 if r["slots_found"] == r["slots_sent"] else 1


if __name__ == "__main__":
    sys.exit(main())
