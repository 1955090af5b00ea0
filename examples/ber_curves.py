#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Uncoded BER against SNR of gr-mimodet's detectors on an i.i.d. Rayleigh channel,
through the batch API (mimodet.detector). Writes <prefix>.csv and <prefix>.png.

Run it with GNU Radio's Python (on Debian: /usr/bin/python3) and the module on the
path, e.g. from a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/ber_curves.py \\
        --detectors zf,mmse,fsd,psd --antennas 4 --modulation 16qam \\
        --snr 0:30:2 --vectors 100000 --output /tmp/ber_4x4_16qam

System model, SNR and bit order: docs/CONVENTIONS.md. Every vector draws its own
H with i.i.d. CN(0, 1) entries (with --symbols-per-channel S, S vectors share one H, as
the symbols of an OFDM slot share a subcarrier's channel), unit-energy symbols from the
3GPP TS 36.211 map and noise of variance noise_var = n_tx * 10^(-SNR/10). At each SNR
every detector sees the same channels, symbols and noise, so the curves differ only by
the detectors. A point with no bit error has BER 0 in the CSV and is left out of the
(logarithmic) plot.
"""

import argparse
import csv
import os
import sys
import time

# Keep the console readable where GNU Radio's default log level is debug.
os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

import numpy as np  # noqa: E402

from gnuradio import mimodet  # noqa: E402

MODULATIONS = {"qpsk": 2, "16qam": 4, "64qam": 6}
ALGORITHMS = ("ml", "zf", "mmse", "psd", "fsd", "sfsd", "mtt")
CSV_FIELDS = ("detector", "backend", "n_tx", "n_rx", "modulation", "snr_db", "noise_var",
              "vectors", "bits", "errors", "ber", "seconds", "vectors_per_s")
# Vectors per detect call: bounds memory (a 8x8 64QAM chunk is ~50 MB) while keeping
# each call large enough for the detector's threads / the GPU.
CHUNK = 32768


def snr_range(text):
    """'start:stop:step' (stop included when it falls on the grid) or one value."""
    try:
        parts = [float(x) for x in text.split(":")]
    except ValueError:
        raise argparse.ArgumentTypeError("SNR must be start:stop:step or a number: %r"
                                         % text)
    if len(parts) == 1:
        return [parts[0]]
    if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
        raise argparse.ArgumentTypeError("SNR must be start:stop:step with step > 0 and "
                                         "stop >= start: %r" % text)
    start, stop, step = parts
    n = int(np.floor((stop - start) / step + 1e-9)) + 1
    return [round(start + i * step, 10) for i in range(n)]


def detector_list(text):
    names = [d.strip().lower() for d in text.split(",") if d.strip()]
    bad = [d for d in names if d not in ALGORITHMS]
    if not names or bad:
        raise argparse.ArgumentTypeError("unknown detector(s) %s; choose from %s"
                                         % (", ".join(bad) or "(none)",
                                            ", ".join(ALGORITHMS)))
    return names


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Uncoded BER against SNR of gr-mimodet detectors on an i.i.d. "
                    "Rayleigh channel (batch API); writes PREFIX.csv and PREFIX.png.")
    p.add_argument("--detectors", type=detector_list, default=["zf", "mmse", "fsd", "psd"],
                   help="comma-separated list of %s (default zf,mmse,fsd,psd)"
                        % ",".join(ALGORITHMS))
    p.add_argument("--antennas", type=int, default=4,
                   help="transmit antennas n_tx, 1..8 (default 4)")
    p.add_argument("--rx", type=int, default=None,
                   help="receive antennas n_rx >= n_tx, up to 8 (default n_tx)")
    p.add_argument("--modulation", default="16qam", choices=sorted(MODULATIONS))
    p.add_argument("--snr", type=snr_range, default=snr_range("0:30:2"),
                   help="SNR in dB, start:stop:step, stop included (default 0:30:2); "
                        "SNR = n_tx / noise_var (docs/CONVENTIONS.md)")
    p.add_argument("--vectors", type=int, default=20000,
                   help="received vectors per SNR point (default 20000)")
    p.add_argument("--symbols-per-channel", type=int, default=1, metavar="S",
                   help="vectors that share one channel matrix (default 1: every "
                        "vector its own H; 7 for the symbols of an OFDM slot)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"],
                   help="cpu, cuda (needs a CUDA build and a GPU) or auto (default cpu)")
    p.add_argument("--threads", type=int, default=0,
                   help="CPU detector threads (default 0: all cores)")
    p.add_argument("--seed", type=int, default=1,
                   help="random seed (default 1); 0 draws a random one")
    p.add_argument("--output", default="ber_curves",
                   help="output prefix: writes PREFIX.csv and PREFIX.png "
                        "(default ./ber_curves)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    a = p.parse_args(argv)
    a.rx = a.antennas if a.rx is None else a.rx
    if not 1 <= a.antennas <= 8 or not a.antennas <= a.rx <= 8:
        p.error("need 1 <= n_tx <= n_rx <= 8 (got --antennas %d --rx %d)"
                % (a.antennas, a.rx))
    if a.vectors < 1 or a.symbols_per_channel < 1:
        p.error("--vectors and --symbols-per-channel must be >= 1")
    return a


def make_detectors(a):
    """Build every detector before simulating, so that a bad configuration (e.g. ml on a
    system beyond 2^18 candidates, cuda without a GPU) fails at once."""
    dets = {}
    for name in a.detectors:
        try:
            dets[name] = mimodet.detector(name, a.antennas, a.rx, a.modulation,
                                          backend=a.backend, threads=a.threads)
        except (ValueError, RuntimeError) as e:
            sys.exit("ber_curves: cannot make detector '%s' (%dx%d %s, %s): %s"
                     % (name, a.antennas, a.rx, a.modulation, a.backend, e))
    return dets


def draw(rng, n_mat, n_sym, n_tx, n_rx, q, points, noise_var):
    """One chunk of y = H s + n: bits (n_mat, n_sym, n_tx*q), H, y (complex64)."""
    bits = rng.integers(0, 2, size=(n_mat, n_sym, n_tx, q), dtype=np.uint8)
    labels = (bits.astype(np.int64) << np.arange(q - 1, -1, -1)).sum(axis=3)  # b0 = MSB
    s = points[labels]                                                   # (B, S, n_tx)

    def cn(*shape):                                       # CN(0, 1) entries
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * np.sqrt(0.5)

    H = cn(n_mat, n_rx, n_tx)
    y = np.einsum("brt,bst->bsr", H, s) + np.sqrt(noise_var) * cn(n_mat, n_sym, n_rx)
    return (bits.reshape(n_mat, n_sym, n_tx * q), H.astype(np.complex64),
            y.astype(np.complex64))


class progress(object):
    """One status line: rewritten in place on a terminal, one line per finished point
    otherwise (logs, CI)."""

    def __init__(self, total, quiet):
        self.total, self.quiet = total, quiet
        self.tty = sys.stdout.isatty()
        self.t0 = time.time()
        self.done = 0

    def update(self, text, finished=False):
        if self.quiet:
            return
        elapsed = time.time() - self.t0
        frac = self.done / self.total
        eta = elapsed / frac * (1 - frac) if frac > 0 else float("nan")
        line = "[%3.0f%%, %6.1f s, ETA %5.0f s] %s" % (100 * frac, elapsed, eta, text)
        if self.tty:
            sys.stdout.write("\r\033[K" + line + ("\n" if finished else ""))
            sys.stdout.flush()
        elif finished:
            print(line, flush=True)


def simulate(a, dets, write_row):
    n_tx, n_rx, q = a.antennas, a.rx, MODULATIONS[a.modulation]
    points = np.asarray(mimodet.constellation_points(mimodet.parse_modulation(a.modulation)))
    n_mat_total = -(-a.vectors // a.symbols_per_channel)
    n_vec = n_mat_total * a.symbols_per_channel          # rounded up to whole matrices
    mats_per_chunk = max(1, CHUNK // a.symbols_per_channel)
    prog = progress(len(a.snr) * n_mat_total * len(dets), a.quiet)
    rows = []
    for i, snr in enumerate(a.snr):
        nv = mimodet.snr_to_noise_var(snr, n_tx)
        stats = {d: [0, 0.0] for d in dets}             # errors, detector seconds
        # One stream per SNR point: every detector sees the same realisations, and a
        # point does not depend on which other points were asked for.
        rng = np.random.default_rng([a.seed, i] if a.seed else None)
        left = n_mat_total
        while left:
            m = min(mats_per_chunk, left)
            left -= m
            bits, H, y = draw(rng, m, a.symbols_per_channel, n_tx, n_rx, q, points, nv)
            for name, det in dets.items():
                t = time.time()
                out = det.detect_bits(H, y, nv)
                stats[name][1] += time.time() - t
                stats[name][0] += int(np.count_nonzero(out != bits))
                prog.done += m
                prog.update("%-4s SNR %5.1f dB: %d errors so far" % (name, snr,
                                                                       stats[name][0]))
        for name, det in dets.items():
            errors, secs = stats[name]
            n_bits = n_vec * n_tx * q
            row = dict(detector=name, backend=det.backend, n_tx=n_tx, n_rx=n_rx,
                       modulation=a.modulation, snr_db=snr, noise_var=nv, vectors=n_vec,
                       bits=n_bits, errors=errors, ber=errors / n_bits, seconds=secs,
                       vectors_per_s=n_vec / secs if secs > 0 else float("inf"))
            rows.append(row)
            write_row(row)
            prog.update("%-4s SNR %5.1f dB: BER %.3e (%d / %d bits), %.0f vectors/s"
                        % (name, snr, row["ber"], errors, n_bits, row["vectors_per_s"]),
                        finished=True)
    return rows


def plot(a, rows, path):
    """BER curves to a PNG; returns False (after saying why) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")              # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("ber_curves: matplotlib is not installed (Debian: apt install "
              "python3-matplotlib), so no plot was made; the CSV has every result.",
              file=sys.stderr, flush=True)
        return False
    fig, ax = plt.subplots(figsize=(7, 5))
    # A marker and dash per detector: the exact ML detectors (ml, psd) give the same
    # curve, which stays visible as a solid line under a dashed one.
    styles = {"ml": ("o", "-"), "psd": ("x", "--"), "fsd": ("s", "-"), "sfsd": ("^", ":"),
              "mtt": ("v", "-."), "mmse": ("D", "-"), "zf": ("P", "--")}
    for name in a.detectors:
        marker, dash = styles.get(name, ("o", "-"))
        pts = [(r["snr_db"], r["ber"]) for r in rows if r["detector"] == name and r["ber"] > 0]
        if pts:
            ax.semilogy(*zip(*pts), marker=marker, linestyle=dash, label=name,
                        markerfacecolor="none")
        else:
            ax.plot([], [], marker=marker, label="%s (no errors)" % name)
    n_vec = rows[0]["vectors"] if rows else a.vectors
    ax.set_title("gr-mimodet: %dx%d %s, i.i.d. Rayleigh, %d vectors per point"
                 % (a.antennas, a.rx, a.modulation.upper(), n_vec))
    ax.set_xlabel("SNR (dB), SNR = n_tx / noise_var")
    ax.set_ylabel("uncoded bit error rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None):
    a = parse_args(argv)
    dets = make_detectors(a)
    out_dir = os.path.dirname(os.path.abspath(a.output))
    os.makedirs(out_dir, exist_ok=True)
    csv_path, png_path = a.output + ".csv", a.output + ".png"
    print("ber_curves: %s on %dx%d %s, SNR %s dB, %d vectors per point, backend %s, "
          "seed %d" % (",".join(a.detectors), a.antennas, a.rx, a.modulation,
                       ",".join("%g" % s for s in a.snr), a.vectors,
                       ",".join(sorted({d.backend for d in dets.values()})), a.seed),
          flush=True)
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()

        def write_row(row):
            # Written as they come, so an interrupted run keeps its finished points.
            w.writerow(row)
            f.flush()
        try:
            rows = simulate(a, dets, write_row)
        except KeyboardInterrupt:
            print("\nber_curves: interrupted; %s holds the finished points" % csv_path,
                  file=sys.stderr)
            return 130
    print("wrote %s" % csv_path, flush=True)
    if plot(a, rows, png_path):
        print("wrote %s" % png_path, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
