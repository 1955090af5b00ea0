#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Over-the-air link, emulated: the transmitter's output recorded the way a radio would
deliver it (docs/OTA.md). examples/ota_receive.py runs the receiver from the recording.

    bits -> slot_framer -> mimo_channel (multipath, CFO, timing offset; no noise)
         -> per receive antenna: sample-rate offset (gr-filter pfb arbitrary resampler,
            rate 1 + ppm 1e-6) -> unknown start (blocks.delay: a random number of leading
            samples) -> receiver noise (analog.noise_source_c, on every sample, the
            leading ones too) -> blocks.file_sink

Writes DIR/rx<r>.c64 (complex64, GNU Radio's raw file format, one file per receive
antenna) and DIR/ota.json: the parameters, the seed and what the receiver needs to
regenerate the transmitted bits (numpy default_rng(seed), as gnuradio.mimodet.loopback).

Run it with GNU Radio's Python (Debian: /usr/bin/python3) and the module on the path:

    PYTHONPATH=build/python /usr/bin/python3 examples/ota_record.py --out /tmp/ota \\
        --bandwidth 1.4 --antennas 2 --modulation qpsk --snr 30 --cfo 0.3 --sro-ppm 20 \\
        --timing-offset 1234 --slots 60 --seed 1
    PYTHONPATH=build/python /usr/bin/python3 examples/ota_receive.py /tmp/ota

The noise is added after the resampler, at the receiver, as in a radio (thermal noise at
the ADC, also before the burst starts): CN(0, noise_var) per sample with
noise_var = n_tx 10^(-snr/10), the SNR per data resource element of docs/CONVENTIONS.md.
mimo_channel runs at 300 dB (noise_var ~1e-30: none) so that the noise is not resampled.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

import numpy as np  # noqa: E402
from gnuradio import analog, blocks, gr  # noqa: E402
from gnuradio import filter as grfilter  # noqa: E402

from gnuradio.mimodet import loopback  # noqa: E402
from gnuradio.mimodet import lte_numerology, mimo_channel, slot_framer  # noqa: E402

FORMAT = "gr-mimodet-ota-1"
CHANNEL_SNR_DB = 300.0  # mimo_channel's own noise off: the receiver noise comes later


def effective_ppm(ppm):
    """The resampler takes its rate as a 32-bit float: the sample-rate offset it really
    applies (float spacing near 1 is 1.2e-7, so 0.12 ppm steps)."""
    return (float(np.float32(1.0 + ppm * 1e-6)) - 1.0) * 1e6


def bits_per_slot(meta):
    f = slot_framer(float(meta["bandwidth"]), int(meta["n_tx"]), meta["modulation"],
                    int(meta["cell_id"]), False)
    return [f.bits_per_slot(ns) for ns in range(20)]


def tx_bits(meta):
    """The transmitted bits, regenerated from ota.json (the same rule as loopback.py:
    numpy default_rng(seed).integers(0, 2) over the bits of n_sent slots)."""
    bps = bits_per_slot(meta)
    n_bits = sum(bps[a % 20] for a in range(int(meta["n_sent"])))
    rng = np.random.default_rng(int(meta["seed"]))
    return rng.integers(0, 2, size=n_bits, dtype=np.uint8)


def record(out_dir, bandwidth=1.4, antennas=2, n_rx=None, modulation="qpsk",
           channel="epa", snr_db=30.0, cfo=0.3, sro_ppm=20.0, timing_offset=0,
           lead_max=None, slots=60, seed=1, cell_id=1, doppler_hz=-1.0, pad_slots=None,
           quiet=True):
    """Records the emulated link to out_dir; returns the sidecar dict (also written to
    out_dir/ota.json).

    bandwidth   MHz: 1.4, 3, 5, 10, 15, 20
    antennas    n_tx (n_rx = antennas unless given)
    modulation  qpsk, 16qam, 64qam
    channel     mimo_channel model: awgn, rayleigh, epa, eva, etu (doppler_hz -1: default)
    snr_db      SNR per data resource element (docs/CONVENTIONS.md)
    cfo         carrier frequency offset in subcarrier spacings (x 15 kHz)
    sro_ppm     receiver sample clock offset: the receiver takes 1 + sro_ppm 1e-6 samples
                per transmitted sample (> 0: its clock runs fast)
    timing_offset  fixed delay in samples (mimo_channel)
    lead_max    the unknown start: a further delay drawn uniformly from 0..lead_max samples
                with the seed (None: one frame)
    slots       slots whose bits the receiver counts; pad_slots more are sent (None:
                enough to flush the delays and the receiver's look-ahead)
    seed        >= 1: bits, fading, start and noise reproducible
    """
    bandwidth = float(bandwidth)
    n_tx = int(antennas)
    n_rx = n_tx if n_rx is None else int(n_rx)
    slots = int(slots)
    seed = int(seed)
    if seed < 1:
        raise ValueError("seed must be >= 1 (the receiver regenerates the bits from it)")
    if slots < 1:
        raise ValueError("slots must be >= 1")
    if modulation not in loopback.MODULATIONS:
        raise ValueError("modulation must be one of %s" % (tuple(loopback.MODULATIONS),))
    if not np.isfinite(sro_ppm) or abs(sro_ppm) > 1000:
        raise ValueError("sro_ppm must be within +-1000")
    if timing_offset < 0:
        raise ValueError("timing_offset must be >= 0")
    num = lte_numerology.from_bandwidth(bandwidth)
    S = num.slot_samples()
    if lead_max is None:
        lead_max = 20 * S
    if lead_max < 0:
        raise ValueError("lead_max must be >= 0")
    lead = int(np.random.default_rng([seed, 1]).integers(0, int(lead_max) + 1))
    if pad_slots is None:
        # mimo_channel is a sync block: its last timing_offset samples never come out;
        # the receiver needs a slot of look-ahead and the resampler eats a filter length.
        pad_slots = -(-int(timing_offset) // S) + 3
    n_sent = slots + int(pad_slots)
    meta = dict(format=FORMAT, bandwidth=bandwidth, sample_rate=num.sample_rate,
                fft_size=num.fft_size, slot_samples=S, n_tx=n_tx, n_rx=n_rx,
                modulation=modulation, cell_id=int(cell_id), channel=channel,
                doppler_hz=float(doppler_hz), snr_db=float(snr_db),
                noise_var=n_tx * 10 ** (-snr_db / 10), cfo=float(cfo),
                cfo_hz=float(cfo) * 15e3, sro_ppm=float(sro_ppm),
                sro_ppm_effective=effective_ppm(sro_ppm) if sro_ppm else 0.0,
                resampler="gr-filter pfb.arb_resampler_ccf (32 filters)",
                timing_offset=int(timing_offset), lead_max=int(lead_max), lead=lead,
                slots=slots, pad_slots=int(pad_slots), n_sent=n_sent, seed=seed,
                bits_rule="numpy.random.default_rng(seed).integers(0, 2, n_bits, uint8), "
                          "n_bits = sum of slot_framer.bits_per_slot(a % 20), a < n_sent",
                files=["rx%d.c64" % r for r in range(n_rx)], dtype="complex64")

    os.makedirs(out_dir, exist_ok=True)
    bits = tx_bits(meta)
    tb = gr.top_block("mimodet ota record")
    src = blocks.vector_source_b(bits.tolist(), False)
    framer = slot_framer(bandwidth, n_tx, modulation, int(cell_id), False)
    chan = mimo_channel(n_tx, n_rx, channel, CHANNEL_SNR_DB, bandwidth, float(doppler_hz),
                        float(cfo), int(timing_offset), False, seed % 2147483647)
    tb.connect(src, framer)
    for t in range(n_tx):
        tb.connect((framer, t), (chan, t))
    sinks = []
    amp = float(np.sqrt(meta["noise_var"]))  # noise_source_c: E|n|^2 = amplitude^2
    for r in range(n_rx):
        x = (chan, r)
        if sro_ppm:
            rs = grfilter.pfb.arb_resampler_ccf(1.0 + sro_ppm * 1e-6)
            tb.connect(x, rs)
            x = rs
        if lead:
            d = blocks.delay(gr.sizeof_gr_complex, lead)
            tb.connect(x, d)
            x = d
        noise = analog.noise_source_c(analog.GR_GAUSSIAN, amp,
                                      (seed * 7919 + 104729 * (r + 1)) % 2147483647)
        add = blocks.add_cc()
        tb.connect(x, (add, 0))
        tb.connect(noise, (add, 1))
        path = os.path.join(out_dir, meta["files"][r])
        tb.connect(add, blocks.file_sink(gr.sizeof_gr_complex, path, False))
        sinks.append(path)
    t0 = time.time()
    tb.run()
    # The per-antenna chains can stop a few samples apart; a multi-channel radio delivers
    # streams of one length, so the files are cut to the shortest.
    meta["n_samples"] = min(os.path.getsize(p) // 8 for p in sinks)
    for p in sinks:
        os.truncate(p, 8 * meta["n_samples"])
    meta["record_seconds"] = round(time.time() - t0, 3)
    # Where slot 0 starts in the files, for reference only (the receiver does not use it):
    # the delays scaled by the resampler; its filter's group delay is not included.
    meta["slot0_start_approx"] = (int(timing_offset) * (1 + sro_ppm * 1e-6)) + lead
    with open(os.path.join(out_dir, "ota.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    if not quiet:
        print("recorded %d slots (%d counted) of %g MHz %dx%d %s, %s %g dB, CFO %g, SRO "
              "%g ppm (effective %.3f), timing offset %d + unknown start %d samples: "
              "%d samples per antenna in %s (%.1f s)"
              % (n_sent, slots, bandwidth, n_tx, n_rx, modulation, channel, snr_db, cfo,
                 sro_ppm, meta["sro_ppm_effective"], timing_offset, lead,
                 meta["n_samples"], out_dir, meta["record_seconds"]), flush=True)
    return meta


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="gr-mimodet over-the-air link, emulated: record the transmitter's "
                    "output with CFO, sample-rate offset, timing offset, multipath, noise "
                    "and an unknown start (one complex64 file per receive antenna)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--bandwidth", type=float, default=1.4,
                   choices=[1.4, 3.0, 5.0, 10.0, 15.0, 20.0], help="MHz (default 1.4)")
    p.add_argument("--antennas", type=int, default=2, choices=[1, 2, 4],
                   help="transmit antennas (default 2)")
    p.add_argument("--n-rx", type=int, default=None, help="receive antennas (default: "
                   "--antennas)")
    p.add_argument("--modulation", default="qpsk", choices=list(loopback.MODULATIONS))
    p.add_argument("--channel", default="epa", choices=list(loopback.CHANNELS))
    p.add_argument("--doppler", type=float, default=-1.0,
                   help="maximum Doppler in Hz for epa/eva/etu (-1: model default)")
    p.add_argument("--snr", type=float, default=30.0,
                   help="SNR per data resource element in dB (docs/CONVENTIONS.md)")
    p.add_argument("--cfo", type=float, default=0.3,
                   help="carrier frequency offset in subcarrier spacings (15 kHz)")
    p.add_argument("--sro-ppm", type=float, default=20.0,
                   help="receiver sample-rate offset in ppm (> 0: fast clock)")
    p.add_argument("--timing-offset", type=int, default=1234, help="fixed delay, samples")
    p.add_argument("--lead-max", type=int, default=None,
                   help="unknown start: up to this many more leading samples, drawn with "
                        "the seed (default: one frame)")
    p.add_argument("--slots", type=int, default=60, help="slots the receiver counts")
    p.add_argument("--seed", type=int, default=1, help=">= 1")
    p.add_argument("--cell-id", type=int, default=1)
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    try:
        record(a.out, a.bandwidth, a.antennas, a.n_rx, a.modulation, a.channel, a.snr,
               a.cfo, a.sro_ppm, a.timing_offset, a.lead_max, a.slots, a.seed, a.cell_id,
               a.doppler, quiet=False)
    except ValueError as e:
        sys.exit("ota_record: %s" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
