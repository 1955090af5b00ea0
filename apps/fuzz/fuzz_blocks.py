#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Seeded random flowgraphs around each gr-mimodet block (docs/RELIABILITY.md).

Every case builds one block with random (valid) parameters, feeds each input port a
stream of random items (Gaussian samples, bursts of zeros, huge, tiny, NaN or infinite
values, random bytes) with "slot" tags that are right, missing, misplaced or carry
out-of-range or wrongly typed values, and runs the flowgraph to its end. It fails on a
crash (the process dies), a hang (a case that does not finish within --case-timeout
seconds), or an output the block documents as impossible: bits other than 0/1, or
non-finite LLRs from the detector and receiver (bad slots are flagged and zero).

    fuzz_blocks.py --seconds 60 --seed 1      # CPU backend, a fixed time
    fuzz_blocks.py --cases 200 --seed 7 -v    # a fixed count, one line per case
"""

import argparse
import sys
import threading
import time

import numpy as np
import pmt
from gnuradio import blocks, gr

from gnuradio import mimodet

MODS = ("qpsk", "16qam", "64qam")
Q = {"qpsk": 2, "16qam": 4, "64qam": 6}
ALGS = ("ml", "zf", "mmse", "psd", "fsd", "sfsd", "mtt")
SOFT = ("ml", "zf", "mmse", "sfsd", "mtt")


def values(rng, n):
    """n complex values: mostly Gaussian, with random bursts of edge cases."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _values(rng, n)


def _values(rng, n):
    x = ((rng.standard_normal(n) + 1j * rng.standard_normal(n)) / np.sqrt(2)).astype(np.complex64)
    for _ in range(rng.integers(0, 4)):
        if n == 0:
            break
        a = int(rng.integers(0, n))
        b = min(n, a + int(rng.integers(1, max(2, n // 3))))
        kind = rng.integers(0, 7)
        if kind == 0:
            x[a:b] = 0
        elif kind == 1:
            x[a:b] *= np.float32(1e30)
        elif kind == 2:
            x[a:b] = np.float32(3.4e38)
        elif kind == 3:
            x[a:b] = np.nan
        elif kind == 4:
            x[a:b] = np.inf
        elif kind == 5:
            x[a:b] *= np.float32(1e-40)
        else:
            x[a:b] *= np.float32(rng.uniform(0, 100))
    return x


def slot_tags(rng, n_items, per_slot):
    """Slot tags every per_slot items: right, or missing, misplaced, out of range, or
    not an integer."""
    tags = []
    mode = rng.integers(0, 4)  # 0 right, 1 none, 2 random, 3 right with damage
    if mode == 1:
        return tags
    for i, off in enumerate(range(0, n_items, per_slot)):
        ns = i % 20
        if mode == 2:
            off = int(rng.integers(0, max(1, n_items)))
            ns = int(rng.integers(-3, 25))
        elif mode == 3 and rng.random() < 0.3:
            choice = rng.integers(0, 4)
            if choice == 0:
                continue
            if choice == 1:
                ns = int(rng.integers(-1000, 1000))
            if choice == 2:
                off = min(n_items - 1, off + int(rng.integers(1, per_slot + 1)))
            if choice == 3:
                tags.append(gr.tag_utils.python_to_tag(
                    (off, pmt.intern("slot"), pmt.intern("seven"))))
                continue
        tags.append(gr.tag_utils.python_to_tag((off, pmt.intern("slot"), pmt.from_long(ns))))
    return tags


def source(rng, kind, vlen, n_items, tags=()):
    if kind == "c":
        return blocks.vector_source_c(values(rng, vlen * n_items).tolist(), False, vlen,
                                      list(tags))
    if kind == "f":
        v = rng.exponential(0.1, vlen * n_items).astype(np.float32)
        bad = rng.random(v.shape) < 0.1
        v[bad] = rng.choice(np.array([0.0, -1.0, np.nan, np.inf, 1e-45, 3e38], np.float32),
                            int(bad.sum()))
        return blocks.vector_source_f(v.tolist(), False, vlen, list(tags))
    data = rng.integers(0, 2, vlen * n_items).astype(np.uint8)
    if rng.random() < 0.2:
        data[rng.random(data.shape) < 0.1] = 7  # not a bit
    return blocks.vector_source_b(data.tolist(), False, vlen, list(tags))


def detector_params(rng, n_tx):
    alg = ALGS[rng.integers(0, len(ALGS))]
    mod = MODS[rng.integers(0, 3)]
    if alg == "ml":
        mod = "qpsk" if n_tx > 2 else mod
    soft = bool(alg in SOFT and rng.random() < 0.5)
    kw = dict(threads=int(rng.integers(0, 3)))
    if alg == "psd":
        # The PSD's search has no bound per vector of its own: a deadline keeps a case
        # bounded in time.
        kw["deadline_us"] = float(rng.choice([200.0, 2000.0]))
    return alg, mod, soft, kw


def make_case(rng):
    """A random flowgraph: (name, top_block, checks) where checks() asserts on outputs."""
    mhz = 1.4 if rng.random() < 0.8 else 3.0
    num = mimodet.lte_numerology.from_bandwidth(mhz)
    n_tx = int(rng.choice([1, 2, 4]))  # the LTE antenna ports
    n_rx = int(rng.integers(n_tx, min(8, n_tx + 2) + 1))
    cell = int(rng.integers(0, 504))
    grid = 7 * num.n_sc
    n_slots = int(rng.integers(1, 6))
    tb = gr.top_block()
    which = rng.integers(0, 7)
    checks = []

    def sink_b(blk, port=0):
        s = blocks.vector_sink_b()
        tb.connect((blk, port), s)
        checks.append(lambda: np.all(np.isin(np.array(s.data(), np.uint8), (0, 1))))
        return s

    def sink_f(blk, port=0):
        s = blocks.vector_sink_f()
        tb.connect((blk, port), s)
        checks.append(lambda: np.all(np.isfinite(np.array(s.data(), np.float32))))
        return s

    def null(blk, port, size):
        tb.connect((blk, port), blocks.null_sink(size))

    if which == 0:
        alg, mod, soft, kw = detector_params(rng, n_tx)
        blk = mimodet.mimo_detector(alg, mhz, n_tx, n_rx, mod, cell, "cpu", soft, **kw)
        tags = slot_tags(rng, n_slots, 1)
        for r in range(n_rx):
            tb.connect(source(rng, "c", grid, n_slots, tags if r == 0 else ()), (blk, r))
        tb.connect(source(rng, "c", num.n_sc * n_rx * n_tx, n_slots), (blk, n_rx))
        tb.connect(source(rng, "f", 1, n_slots), (blk, n_rx + 1))
        (sink_f if soft else sink_b)(blk)
        name = "mimo_detector %s %dx%d %s soft=%s" % (alg, n_tx, n_rx, mod, soft)
    elif which == 1:
        alg, mod, soft, kw = detector_params(rng, n_tx)
        td = bool(rng.random() < 0.5)
        blk = mimodet.mimo_receiver(alg, mhz, n_tx, n_rx, mod, cell, "cpu", soft,
                                    time_domain=td, **kw)
        per = num.slot_samples() if td else 1
        n_items = per * n_slots + (int(rng.integers(0, per)) if td else 0)
        tags = slot_tags(rng, n_items, per)
        for r in range(n_rx):
            tb.connect(source(rng, "c", 1 if td else grid, n_items, tags if r == 0 else ()),
                       (blk, r))
        (sink_f if soft else sink_b)(blk)
        name = "mimo_receiver %s %dx%d %s soft=%s time_domain=%s" % (alg, n_tx, n_rx, mod,
                                                                    soft, td)
    elif which == 2:
        blk = mimodet.channel_estimator(mhz, n_tx, n_rx, cell, int(rng.integers(0, 3)))
        tags = slot_tags(rng, n_slots, 1)
        for r in range(n_rx):
            tb.connect(source(rng, "c", grid, n_slots, tags if r == 0 else ()), (blk, r))
        null(blk, 0, 8 * num.n_sc * n_rx * n_tx)
        null(blk, 1, 4)
        name = "channel_estimator %dx%d" % (n_tx, n_rx)
    elif which == 3:
        blk = mimodet.ofdm_demod(mhz, n_rx)
        n_items = num.slot_samples() * n_slots + int(rng.integers(0, 500))
        tags = slot_tags(rng, n_items, num.slot_samples())
        for r in range(n_rx):
            tb.connect(source(rng, "c", 1, n_items, tags if r == 0 else ()), (blk, r))
        for r in range(n_rx):
            null(blk, r, 8 * grid)
        name = "ofdm_demod n_rx=%d" % n_rx
    elif which == 4:
        blk = mimodet.ofdm_sync(mhz, n_rx, cell)
        n_items = num.slot_samples() * (n_slots + 2)
        for r in range(n_rx):
            tb.connect(source(rng, "c", 1, n_items), (blk, r))
        for r in range(n_rx):
            null(blk, r, 8)
        name = "ofdm_sync n_rx=%d" % n_rx
    elif which == 5:
        mod = MODS[rng.integers(0, 3)]
        freq = bool(rng.random() < 0.5)
        blk = mimodet.slot_framer(mhz, n_tx, mod, cell, freq)
        n_bits = sum(blk.bits_per_slot(ns % 20) for ns in range(n_slots)) + int(
            rng.integers(0, 100))
        tb.connect(source(rng, "b", 1, n_bits), blk)
        for t in range(n_tx):
            null(blk, t, 8 * blk.vlen())
        name = "slot_framer %s n_tx=%d freq=%s" % (mod, n_tx, freq)
    else:
        freq = bool(rng.random() < 0.5)
        model = ("awgn", "rayleigh", "epa", "eva", "etu")[rng.integers(0, 5)]
        blk = mimodet.mimo_channel(n_tx, n_rx, model, float(rng.uniform(-10, 40)), mhz,
                                   seed=int(rng.integers(0, 1000)), freq_domain=freq)
        n_items = n_slots if freq else num.slot_samples() * n_slots
        for t in range(n_tx):
            tb.connect(source(rng, "c", grid if freq else 1, n_items), (blk, t))
        for r in range(n_rx):
            null(blk, r, 8 * (grid if freq else 1))
        if freq:
            null(blk, n_rx, 8 * num.n_sc * n_rx * n_tx)
        name = "mimo_channel %s %dx%d freq=%s" % (model, n_tx, n_rx, freq)
    return name, tb, checks


def run_case(name, tb, timeout):
    """Runs tb to its end; returns seconds, or None where it did not end in time."""
    t0 = time.monotonic()
    tb.start()
    waiter = threading.Thread(target=tb.wait, daemon=True)
    waiter.start()
    waiter.join(timeout)
    if waiter.is_alive():
        tb.stop()
        waiter.join(10)
        return None
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="run time (default 30)")
    ap.add_argument("--cases", type=int, default=0, help="stop after this many cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--case-timeout", type=float, default=60.0,
                    help="seconds one flowgraph may take (default 60)")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per case")
    args = ap.parse_args()
    # The blocks log every bad slot they see: expected here, and not the point.
    gr.logging().set_default_level(gr.log_levels.off)

    t_start = time.monotonic()
    counts, failures, n = {}, [], 0
    while time.monotonic() - t_start < args.seconds and (args.cases == 0 or n < args.cases):
        case_seed = args.seed * 1_000_003 + n
        rng = np.random.default_rng(case_seed)
        try:
            name, tb, checks = make_case(rng)
        except ValueError as e:  # a refused parameter set: a clear error, not a failure
            name, tb, checks = None, None, None
            if args.verbose:
                print("case %d: refused: %s" % (case_seed, e))
        if tb is not None:
            if args.verbose:
                print("case %d: %s" % (case_seed, name), flush=True)
            took = run_case(name, tb, args.case_timeout)
            kind = name.split()[0]
            counts[kind] = counts.get(kind, 0) + 1
            if took is None:
                failures.append("case %d (%s): no end within %.0f s" % (case_seed, name,
                                                                         args.case_timeout))
            elif not all(c() for c in checks):
                failures.append("case %d (%s): invalid output" % (case_seed, name))
        n += 1
    took = time.monotonic() - t_start
    print("fuzz_blocks: %d cases in %.1f s, seed %d: %s" % (
        n, took, args.seed, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    for f in failures:
        print("FAILURE:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
