#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Faults injected into a received stream (docs/RELIABILITY.md, "Faults"), CPU backend,
1.4 MHz 2x2 QPSK: the transmitter's own samples (slot_framer), a fixed 2x2 channel, a CFO
and receiver noise at 30 dB, then one fault: the signal gone for 100 ms (zeros, or noise
only), samples dropped or inserted with a change of the sample rate, a burst of
full-scale noise. The receiver is the time-domain chain ofdm_sync -> mimo_receiver
(time_domain=True). Every received slot is matched to the transmitted slot whose bits it
carries (the one of its slot number with the fewest bit errors: random bits, so any other
differs in about half of them). Asserted: the slots before the fault and, once the sync
has its lock again, every slot after it carry their bits without an error, in order; the
slots lost are those ofdm_sync reports (it drops the slots that hold no signal of its
transmitter: after a missed PSS, or far above the signal's level).

About 10 s on a 2-core machine. Every case prints its numbers.
"""

import os

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

import numpy as np  # noqa: E402
import pmt  # noqa: E402
from gnuradio import blocks, gr, gr_unittest  # noqa: E402

from gnuradio import mimodet  # noqa: E402

BW, N_TX, N_RX, MOD, CELL = 1.4, 2, 2, "qpsk", 7
NUM = mimodet.lte_numerology.from_bandwidth(BW)
S = NUM.slot_samples()                  # 960 samples, 0.5 ms
SLOTS_PER_100MS = int(round(0.1 * NUM.sample_rate / S))  # 200
CFO = 0.12                              # subcarrier spacings
SNR_DB = 30.0                           # per sample (per data element: 2.5 dB more)
# A fixed, well-conditioned 2x2 channel: the faults, not the channel, must explain errors.
H = np.array([[0.9, 0.35j], [-0.25 + 0.1j, 0.85]])


def transmit(n_slots, seed):
    """slot_framer's time-domain output for n_slots slots of random bits (slot 0 first).
    Returns tx (N_TX, n_slots * S) and the bits of every slot."""
    framer = mimodet.slot_framer(BW, N_TX, MOD, CELL, False)
    bps = [framer.bits_per_slot(ns) for ns in range(20)]
    rng = np.random.default_rng(seed)
    slot_bits = [rng.integers(0, 2, bps[a % 20], dtype=np.uint8) for a in range(n_slots)]
    tb = gr.top_block()
    src = blocks.vector_source_b(np.concatenate(slot_bits).tolist(), False)
    tb.connect(src, framer)
    sinks = []
    for t in range(N_TX):
        snk = blocks.vector_sink_c()
        tb.connect((framer, t), snk)
        sinks.append(snk)
    tb.run()
    tx = np.array([np.array(s.data(), np.complex64)[:n_slots * S] for s in sinks])
    assert tx.shape[1] == n_slots * S
    return tx, slot_bits


def channel(tx, rng, start=0):
    """H, the CFO (phase continuing from input sample `start`) and no noise."""
    n = np.arange(start, start + tx.shape[1])
    return (H @ tx) * np.exp(2j * np.pi * CFO * n / NUM.fft_size)


def noise(rng, shape, power):
    return np.sqrt(power / 2) * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


def resample(x, ppm, taps=32):
    """x (per antenna) as a receiver whose clock is ppm fast samples it: output sample n
    at input time n / (1 + ppm 1e-6) (output 0 on input 0, no filter delay), by a
    Kaiser-windowed sinc (taps taps; the signal is within 0.29 of the sample rate, the
    error is about -60 dB)."""
    rate = 1.0 + ppm * 1e-6
    n_out = int((x.shape[1] - taps) * rate)
    t = np.arange(n_out) / rate
    i0 = np.floor(t).astype(np.int64)
    frac = t - i0
    k = np.arange(-taps // 2 + 1, taps // 2 + 1)
    d = frac[:, None] - k[None, :]                         # distance to each tap
    window = np.i0(8.0 * np.sqrt(np.clip(1 - (d / (taps / 2)) ** 2, 0, 1))) / np.i0(8.0)
    h = np.sinc(d) * window
    idx = np.clip(i0[:, None] + k[None, :], 0, x.shape[1] - 1)
    return np.array([np.sum(x[a][idx] * h, axis=1) for a in range(x.shape[0])])


def receive(rx):
    """ofdm_sync -> mimo_receiver(time_domain) on rx (N_RX, n). Returns the received
    slots [(ns, bits, degenerate)], the sync and the receiver."""
    tb = gr.top_block()
    sync = mimodet.ofdm_sync(BW, N_RX, CELL)
    recv = mimodet.mimo_receiver("mmse", BW, N_TX, N_RX, MOD, CELL, "cpu",
                                 time_domain=True)
    for a in range(N_RX):
        src = blocks.vector_source_c(rx[a].astype(np.complex64).tolist(), False)
        tb.connect(src, (sync, a))
        tb.connect((sync, a), (recv, a))
    snk = blocks.vector_sink_b()
    tb.connect(recv, snk)
    tb.run()
    data = np.array(snk.data(), np.uint8)
    starts, degenerate = [], set()
    for t in snk.tags():
        if pmt.symbol_to_string(t.key) == "slot":
            starts.append((int(t.offset), int(pmt.to_long(t.value))))
        elif pmt.symbol_to_string(t.key) == "degenerate":
            degenerate.add(int(t.offset))
    starts.sort()
    slots = []
    for i, (off, ns) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(data)
        slots.append((ns, data[off:end], off in degenerate))
    return slots, sync, recv


def match(slots, slot_bits):
    """Per received slot: (transmitted slot a, bit errors, bits, degenerate), a being the
    transmitted slot of the same number whose bits it matches best."""
    out = []
    for ns, bits, deg in slots:
        best = None
        for a in range(ns, len(slot_bits), 20):
            ref = slot_bits[a]
            if len(ref) != len(bits):
                continue
            e = int(np.count_nonzero(ref != bits))
            if best is None or e < best[1]:
                best = (a, e)
        a, e = best if best else (-1, len(bits))
        out.append((a, e, len(bits), deg))
    return out


class qa_faults(gr_unittest.TestCase):

    def setUp(self):
        self.rng = np.random.default_rng(20)

    def clean_run(self, recs, first, last, msg):
        """recs[first:last] carry consecutive transmitted slots without a bit error."""
        run = recs[first:last]
        self.assertGreater(len(run), 0, msg)
        a0 = run[0][0]
        self.assertEqual([r[0] for r in run], list(range(a0, a0 + len(run))), msg)
        self.assertEqual(sum(r[1] for r in run), 0, msg)
        self.assertFalse(any(r[3] for r in run), msg)

    def split(self, recs, fault_slot):
        """Index of the last clean slot before the fault and of the first clean slot
        from which every later one is clean (the re-acquired run)."""
        before = max(i for i, r in enumerate(recs) if r[1] == 0 and r[0] < fault_slot)
        after = len(recs)
        while after > 0 and recs[after - 1][1] == 0 and recs[after - 1][0] > fault_slot:
            after -= 1
        return before, after

    def check_lost(self, recs, before, after, sync, msg, dropped=0):
        """The transmitted slots between the last clean one before the fault and the
        first after it are the slots put out in between (wrong or flagged) plus those
        the sync reports lost; with `dropped` samples gone from the input (which the
        sync cannot see) to within them."""
        skipped = recs[after][0] - recs[before][0] - 1
        put_out = after - before - 1
        self.assertLessEqual(abs(sync.slots_lost() - (skipped - put_out)),
                             -(-max(dropped, 0) // S), msg)
        return skipped, put_out

    def gap(self, what):
        n = 100 + SLOTS_PER_100MS + 60
        tx, bits = transmit(n, 1)
        sig = channel(tx, self.rng)
        p_sig = float(np.mean(np.abs(sig) ** 2))
        nv = p_sig * 10 ** (-SNR_DB / 10)
        rx = sig + noise(self.rng, sig.shape, nv)
        g0 = 100 * S + 317                      # inside slot 100
        g1 = g0 + SLOTS_PER_100MS * S           # 100 ms later
        rx[:, g0:g1] = 0 if what == "zeros" else noise(self.rng, (N_RX, g1 - g0), nv)
        slots, sync, recv = receive(rx)
        recs = match(slots, bits)
        msg = "gap of %s" % what
        before, after = self.split(recs, 100)
        self.clean_run(recs, 0, before + 1, msg)
        self.clean_run(recs, after, len(recs), msg)
        skipped, put_out = self.check_lost(recs, before, after, sync, msg)
        between = [ns for ns, _, _ in slots[before + 1:after]]
        print("\n%s, %d slots (100 ms) from inside slot 100: clean slots 0..%d, then %d "
              "put out (slot numbers %s), %d lost "
              "(ofdm_sync.slots_lost), PSS missed %d, clean again from slot %d (%d slots "
              "to the end)"
              % (msg, SLOTS_PER_100MS, recs[before][0], put_out, between, sync.slots_lost(),
                 sync.pss_missed(), recs[after][0], len(recs) - after))
        self.assertEqual(recs[0][0], 0, msg)
        self.assertEqual(recs[before][0], 99, msg)  # slot 100 holds the gap's start
        # The gap's slots and those up to the first PSS after it (at most a half frame).
        self.assertGreaterEqual(skipped, SLOTS_PER_100MS, msg)
        self.assertLessEqual(skipped, SLOTS_PER_100MS + 11, msg)
        # Only the slots that hold the gap's start (100) and its end (300, the new
        # lock's; both slot number 0) come out, with the errors of their part in the
        # gap; the others are dropped after the first missed PSS and reported lost: the
        # gap, to within those two and the re-acquisition.
        self.assertLessEqual(len(between), 2, msg)
        self.assertEqual(set(between), {0}, msg)
        self.assertGreaterEqual(sync.slots_lost(), SLOTS_PER_100MS - 2, msg)
        # To the end (the last slot stays in the sync's look-ahead).
        self.assertGreaterEqual(recs[-1][0], n - 2, msg)

    def test_001_signal_gone_100ms_zeros(self):
        self.gap("zeros")

    def test_002_signal_gone_100ms_noise_only(self):
        self.gap("noise only")

    def jump(self, drop, ppm):
        """`drop` samples dropped (< 0: -drop zeros inserted) inside slot 60 and, from
        there, the receiver's clock ppm fast."""
        n = 60 + 100 + 40
        tx, bits = transmit(n, 2)
        sig = channel(tx, self.rng)
        p_sig = float(np.mean(np.abs(sig) ** 2))
        nv = p_sig * 10 ** (-SNR_DB / 10)
        j = 60 * S + 451
        head, tail = sig[:, :j], sig[:, j + max(drop, 0):]
        if drop < 0:
            tail = np.concatenate([np.zeros((N_RX, -drop)), tail], axis=1)
        if ppm:
            tail = resample(tail, ppm)
        rx = np.concatenate([head, tail], axis=1)
        rx = rx + noise(self.rng, rx.shape, nv)
        slots, sync, recv = receive(rx)
        recs = match(slots, bits)
        msg = "%d samples %s, then %g ppm" % (abs(drop), "dropped" if drop > 0 else
                                              "inserted", ppm)
        before, after = self.split(recs, 60)
        self.clean_run(recs, 0, before + 1, msg)
        self.clean_run(recs, after, len(recs), msg)
        skipped, put_out = self.check_lost(recs, before, after, sync, msg, drop)
        print("\n%s: clean slots 0..%d, then %d put out (slot numbers %s), %d lost "
              "(ofdm_sync.slots_lost), PSS missed %d, clean again from slot %d (%d slots to "
              "the end); SRO estimate %.1f ppm, resampling %s"
              % (msg, recs[before][0], put_out, [ns for ns, _, _ in slots[before + 1:after]],
                 sync.slots_lost(), sync.pss_missed(),
                 recs[after][0], len(recs) - after, sync.sro_ppm(), sync.resampling()))
        self.assertEqual(recs[0][0], 0, msg)
        self.assertGreaterEqual(recs[before][0], 59, msg)
        return recs, before, after, sync

    def test_003_samples_dropped_and_rate_change(self):
        # A USRP overflow: 500 samples (half a slot) gone, and the clock 20 ppm fast from
        # there. The PSS is far outside the tracking window: the lock goes after the
        # misses and is found again.
        recs, before, after, sync = self.jump(500, 20.0)
        self.assertEqual(recs[before][0], 59)
        # Out of timing after the drop: dropped after the first missed PSS, until the
        # lock goes (max_missed PSS) and is found again; only the slot that holds the
        # drop, and the one before the first missed PSS, come out wrong.
        self.assertLessEqual(after - before - 1, 2)
        self.assertGreaterEqual(sync.slots_lost(), 70)
        self.assertGreaterEqual(len(recs) - after, 30)

    def test_004_samples_inserted_small(self):
        # 3 samples inserted (within the tracking window) and 30 ppm: tracking follows
        # the step at the next PSS without losing the lock.
        recs, before, after, sync = self.jump(-3, 30.0)
        self.assertEqual(sync.slots_lost(), 0)
        self.assertLessEqual(recs[after][0] - recs[before][0] - 1, 11)

    def test_005_full_scale_noise_burst(self):
        # 5 ms (10 slots, a PSS among them) of noise at 1e4 x the signal's amplitude
        # (|x| about 3e3: an int16 ADC's full scale with the signal at -80 dBFS).
        n = 60 + 10 + 60
        tx, bits = transmit(n, 3)
        sig = channel(tx, self.rng)
        p_sig = float(np.mean(np.abs(sig) ** 2))
        rx = sig + noise(self.rng, sig.shape, p_sig * 10 ** (-SNR_DB / 10))
        b0 = 60 * S + 200
        b1 = b0 + 10 * S
        rx[:, b0:b1] += noise(self.rng, (N_RX, b1 - b0), 1e8 * p_sig)
        slots, sync, recv = receive(rx)
        recs = match(slots, bits)
        msg = "full-scale noise burst"
        before, after = self.split(recs, 60)
        self.clean_run(recs, 0, before + 1, msg)
        self.clean_run(recs, after, len(recs), msg)
        skipped, put_out = self.check_lost(recs, before, after, sync, msg)
        print("\n%s (|x| about %.0f, 10 slots from inside slot 60): clean slots 0..%d, "
              "then %d put out, %d dropped as a burst (ofdm_sync.slots_lost), PSS missed "
              "%d, receiver bad slots %d, clean again from slot %d (%d slots to the end)"
              % (msg, float(np.sqrt(1e8 * p_sig)), recs[before][0], put_out,
                 sync.slots_lost(), sync.pss_missed(), recv.bad_slots(), recs[after][0],
                 len(recs) - after))
        # Slots 60..70 hold the burst: dropped by the sync (no slot of noise put out as
        # bits), counted as lost, and the next slot is clean.
        self.assertEqual(recs[before][0], 59)
        self.assertEqual(put_out, 0)
        self.assertEqual(sync.slots_lost(), 11)
        self.assertEqual(recs[after][0], 71)
        self.assertGreaterEqual(recs[-1][0], n - 2)


if __name__ == "__main__":
    gr_unittest.run(qa_faults)
