#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Coded BER and frame error rate against SNR of the soft detectors in a MIMO-BICM link
with gr-fec's rate-1/2 LDPC code (n = 1800, k = 902) over i.i.d. Rayleigh block fading
(one channel matrix per 7 vectors, as one subcarrier of an LTE slot), see docs/CODING.md.

Run it with GNU Radio's Python and the module on the path, e.g. from a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/coded_ber.py \\
        --configs 2x2:16qam,4x4:16qam --detectors ml,mtt,sfsd,mmse --output coded

For each antenna/modulation configuration and detector it sweeps the SNR (receive SNR
n_tx/noise_var, docs/CONVENTIONS.md) upwards from --snr-start in --snr-step until the
BER falls below --target-ber, prints a progress line per point, and writes <output>.csv,
<output>.png (matplotlib) and a summary: the SNR each detector needs for the target BER
(log-linear interpolation between the bracketing points) and its distance from max-log
ML. ml is skipped where exhaustive search is not computable (> 2^16 candidates).
"""

import argparse
import csv
import math
import os
import sys
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

from gnuradio import mimodet  # noqa: E402
from gnuradio.mimodet import coding  # noqa: E402
from gnuradio.mimodet.loopback import MODULATIONS as Q  # noqa: E402  bits per symbol


def parse_configs(text):
    out = []
    for item in text.split(","):
        ant, mod = item.strip().split(":")
        nt, nr = (int(v) for v in ant.lower().split("x"))
        if mod not in Q:
            raise SystemExit("unknown modulation '%s' in --configs" % mod)
        out.append((nt, nr, mod))
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="2x2:16qam,2x2:64qam,4x4:16qam,4x4:64qam",
                   help="comma-separated NTXxNRX:modulation (default: all four)")
    p.add_argument("--detectors", default="ml,mtt,sfsd,mmse",
                   help="comma-separated soft detectors (ml, mtt, sfsd, mmse, zf)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    p.add_argument("--llr-clip", type=float, default=None,
                   help="detector LLR clipping (default: the detector's default)")
    p.add_argument("--snr-start", type=float, default=None,
                   help="first SNR in dB (default: per configuration)")
    p.add_argument("--snr-step", type=float, default=0.5)
    p.add_argument("--snr-max", type=float, default=40.0)
    p.add_argument("--target-ber", type=float, default=1e-4)
    p.add_argument("--min-frame-errors", type=int, default=40,
                   help="stop a point after this many frame errors")
    p.add_argument("--max-frames", type=int, default=1000,
                   help="stop a point after this many frames")
    p.add_argument("--batch", type=int, default=50, help="frames per detector call")
    p.add_argument("--max-iterations", type=int, default=50, help="LDPC BP iterations")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--output", default="coded_ber", help="output prefix (.csv, .png)")
    p.add_argument("--no-plot", action="store_true", help="write the CSV only")
    return p.parse_args(argv)


# First SNR of the sweep per (n_tx, modulation): a few dB before the waterfall.
DEFAULT_START = {(2, "qpsk"): 2.0, (2, "16qam"): 8.0, (2, "64qam"): 13.0,
                 (4, "qpsk"): 2.0, (4, "16qam"): 7.0, (4, "64qam"): 12.0}


def ml_computable(nt, mod):
    return Q[mod] * nt <= 16


def snr_at_ber(points, target):
    """Log-linear interpolation of the SNR where BER crosses `target` between the last
    point above and the first point below it; a point without errors counts as
    0.5/bits (an upper bound, so the SNR found is conservative). None if not bracketed."""
    for (s1, e1, n1), (s2, e2, n2) in zip(points, points[1:]):
        b1 = e1 / n1
        b2 = max(e2, 0.5) / n2
        if b1 >= target > e2 / n2:
            if b1 <= b2:
                return s2
            return s1 + (s2 - s1) * (math.log10(b1) - math.log10(target)) / (
                math.log10(b1) - math.log10(b2))
    return None


def main(argv=None):
    a = parse_args(argv)
    configs = parse_configs(a.configs)
    detectors = [d.strip() for d in a.detectors.split(",") if d.strip()]
    code = coding.ldpc_code(max_iterations=a.max_iterations, threads=a.threads)
    print("LDPC (gr-fec %s): n = %d, k = %d, rate %.4f; %s backend; target BER %g"
          % (os.path.basename(code.alist), code.n, code.k, code.rate, a.backend,
             a.target_ber), flush=True)
    rows, summary = [], []
    t_start = time.time()
    for nt, nr, mod in configs:
        for name in detectors:
            if name == "ml" and not ml_computable(nt, mod):
                print("%dx%d %s ml: skipped (exhaustive search over %d candidates)"
                      % (nt, nr, mod, 2 ** (Q[mod] * nt)), flush=True)
                continue
            params = {"threads": a.threads}
            if a.llr_clip is not None:
                params["llr_clip"] = a.llr_clip
            det = mimodet.detector(name, nt, nr, mod, backend=a.backend, **params)
            link = coding.bicm_link(det, code, interleaver_seed=a.seed, seed=a.seed)
            snr = a.snr_start if a.snr_start is not None else DEFAULT_START[(nt, mod)]
            points = []
            while snr <= a.snr_max + 1e-9:
                be = nb = fe = nf = 0
                t0 = time.time()
                while fe < a.min_frame_errors and nf < a.max_frames:
                    f = min(a.batch, a.max_frames - nf)
                    e1, n1, fe1, nf1 = link.run(snr, f)
                    be, nb, fe, nf = be + e1, nb + n1, fe + fe1, nf + nf1
                    print("\r  %dx%d %s %-5s %5.2f dB: %6d frames, BER %.3e, FER %.3e"
                          % (nt, nr, mod, name, snr, nf, be / nb, fe / nf),
                          end="", flush=True)
                dt = time.time() - t0
                print("  (%.1f s)" % dt, flush=True)
                rows.append(dict(n_tx=nt, n_rx=nr, modulation=mod, detector=name,
                                 snr_db=snr, bit_errors=be, bits=nb, ber=be / nb,
                                 frame_errors=fe, frames=nf, fer=fe / nf,
                                 seconds=round(dt, 2)))
                points.append((snr, be, nb))
                if be / nb < a.target_ber:
                    break
                # Far above the waterfall (every frame lost, BER > 5 %): coarser steps.
                coarse = fe == nf and be / nb > 0.05
                snr = round(snr + a.snr_step * (2 if coarse else 1), 6)
            summary.append(((nt, nr, mod), name, snr_at_ber(points, a.target_ber)))
    write_csv(a.output + ".csv", rows)
    print_summary(summary, a.target_ber)
    if not a.no_plot:
        plot(a.output + ".png", rows, a.target_ber)
    print("done in %.0f s; wrote %s.csv%s" % (time.time() - t_start, a.output,
                                             "" if a.no_plot else " and .png"))
    return 0


def write_csv(path, rows):
    fields = ["n_tx", "n_rx", "modulation", "detector", "snr_db", "bit_errors", "bits",
              "ber", "frame_errors", "frames", "fer", "seconds"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def print_summary(summary, target):
    print("\nSNR (dB) for BER %g, and distance from max-log ML:" % target)
    print("%-12s %-6s %9s %9s" % ("config", "det", "SNR", "vs ML"))
    ml = {cfg: s for cfg, name, s in summary if name == "ml"}
    for cfg, name, s in summary:
        ref = ml.get(cfg)
        d = "%+9.2f" % (s - ref) if s is not None and ref is not None else "%9s" % "-"
        print("%-12s %-6s %9s %s" % ("%dx%d %s" % cfg, name,
                                    "%.2f" % s if s is not None else "n/a", d))


# Same colour for a detector in every panel.
DETECTOR_ORDER = ("ml", "mtt", "sfsd", "mmse", "zf")


def plot(path, rows, target):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (apt install python3-matplotlib): no plot",
              file=sys.stderr)
        return
    cfgs = sorted({(r["n_tx"], r["n_rx"], r["modulation"]) for r in rows})
    fig, axes = plt.subplots(1, len(cfgs), figsize=(4.5 * len(cfgs), 4), squeeze=False)
    for ax, cfg in zip(axes[0], cfgs):
        for k, det in enumerate(DETECTOR_ORDER):
            pts = [r for r in rows if (r["n_tx"], r["n_rx"], r["modulation"]) == cfg
                   and r["detector"] == det and r["bit_errors"] > 0]
            if pts:
                ax.semilogy([r["snr_db"] for r in pts], [r["ber"] for r in pts],
                            "o-", label=det, color="C%d" % k)
        ax.axhline(target, color="grey", lw=0.8, ls=":")
        ax.set_title("%dx%d %s, LDPC 1/2" % cfg)
        ax.set_xlabel("SNR (dB)")
        ax.set_ylabel("coded BER")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
