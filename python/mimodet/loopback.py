#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""End-to-end LTE-style MIMO-OFDM loopback link as a plain gr.top_block (no hier_block2),
for the Python examples and tests (docs/SLOT_LAYOUT.md, docs/LOOPBACK.md).

Time domain (domain="time")::

    bits -> slot_framer -> mimo_channel (time, CFO, timing offset)
         -> ofdm_sync -> ofdm_demod -> channel_estimator -> mimo_detector -> bits

Frequency domain (domain="freq")::

    bits -> slot_framer(freq_domain) -> mimo_channel(freq_domain, H output)
         -> channel_estimator -> mimo_detector -> bits

with perfect_csi=True (frequency domain only) the channel's true H and its known
noise_var (mimo_channel.noise_var(), through a blocks.vector_source_f) feed the
detector instead of the estimator.

Bit alignment: the framer consumes the bits of absolute slot a (ns = a mod 20) at
offset sum_{b<a} bits_per_slot(b mod 20). The receiver's bit stream carries a "slot" tag
(ns) on the first bit of every slot; ofdm_sync drops the samples before the first PSS it
accepts, so the first received slot is slot 0 or 10 of some frame, and it can skip slots
when it loses lock. The BER counter (a streaming sink, so that long runs need no stored
bit streams) places the first received slot at the absolute index a = ns + 20 m that fits
its bits best (fewest errors) and every later slot at the previous index plus the ns step
(1 .. 20). Only whole received slots of the first `slots` transmitted slots count; the time
domain sends a few padding slots after them (to flush the timing offset and the
synchroniser's look-ahead), which are never counted.
"""

import threading

import numpy as np
import pmt
from gnuradio import blocks, gr

from .mimodet_python import (channel_estimator, lte_grid, lte_numerology, mimo_channel,
                             mimo_detector, ofdm_demod, ofdm_sync, slot_framer)

BANDWIDTHS = (1.4, 3.0, 5.0, 10.0, 15.0, 20.0)
MODULATIONS = {"qpsk": 2, "16qam": 4, "64qam": 6}
DETECTORS = ("psd", "fsd", "sfsd", "mtt", "mmse", "zf", "ml")
CHANNELS = ("awgn", "rayleigh", "epa", "eva", "etu")

_SLOT = pmt.intern("slot")


class ber_counter(gr.sync_block):
    """Streaming BER sink: compares the detector's bits, slot by slot (from the "slot"
    tags), with the transmitted bits. Thread-safe counters: errors(), bits(), slots()."""

    def __init__(self, tx_bits, bits_per_slot, n_count_slots, keep_bits=False):
        gr.sync_block.__init__(self, name="mimodet_ber_counter", in_sig=[np.uint8],
                               out_sig=None)
        self._tx = np.asarray(tx_bits, dtype=np.uint8)
        self._bps = [int(b) for b in bits_per_slot]          # per ns 0..19
        total = len(self._tx)
        # Absolute slot starts in the transmitted stream.
        starts = [0]
        while starts[-1] < total:
            starts.append(starts[-1] + self._bps[(len(starts) - 1) % 20])
        self._starts = starts[:-1] if starts[-1] > total else starts
        self._n_tx_slots = len(self._starts) - 1
        self._n_count = min(int(n_count_slots), self._n_tx_slots)
        self._keep = keep_bits
        self._lock = threading.Lock()
        self._cur = None          # [abs or None, ns, pos, errors, candidate errors]
        self._records = []        # (abs, ns, bits, errors) per whole received slot
        self._kept = []
        self._untagged = 0
        self._prev = None         # (abs, ns) of the previous slot

    # -- alignment helpers -------------------------------------------------------------
    def _candidates(self, ns):
        return [a for a in range(ns, self._n_tx_slots, 20)]

    def _open_slot(self, ns):
        if self._prev is None:
            cands = self._candidates(ns)
            self._cur = [None, ns, 0, 0, {a: 0 for a in cands}]
        else:
            a_prev, ns_prev = self._prev
            a = a_prev + ((ns - ns_prev - 1) % 20) + 1
            self._cur = [a, ns, 0, 0, None]

    def _close_slot(self):
        a, ns, pos, err, cand = self._cur
        if a is None:
            if cand:
                a = min(cand, key=lambda c: (cand[c], c))
                err = cand[a]
            else:
                a = self._n_tx_slots + ns  # beyond what was sent: never counted
        if pos == self._bps[ns]:
            with self._lock:
                self._records.append((a, ns, pos, err))
        self._prev = (a, ns)
        self._cur = None

    def _feed(self, x):
        """x: bits of the current slot (continuing at its position)."""
        a, ns, pos, err, cand = self._cur
        n = min(len(x), self._bps[ns] - pos)
        if n <= 0:
            return
        x = x[:n]
        if a is None:
            for c in cand:
                ref = self._tx[self._starts[c] + pos:self._starts[c] + pos + n]
                cand[c] += int(np.count_nonzero(ref != x))
        elif a < self._n_tx_slots:
            ref = self._tx[self._starts[a] + pos:self._starts[a] + pos + n]
            err += int(np.count_nonzero(ref != x))
        self._cur[2] = pos + n
        self._cur[3] = err
        if self._keep:
            self._kept.append(np.array(x))

    def work(self, input_items, output_items):
        x = input_items[0]
        n = len(x)
        base = self.nitems_read(0)
        tags = sorted(self.get_tags_in_window(0, 0, n, _SLOT), key=lambda t: t.offset)
        i = 0
        for t in tags:
            j = int(t.offset - base)
            if self._cur is not None:
                self._feed(x[i:j])
                self._close_slot()
            else:
                self._untagged += j - i
            self._open_slot(int(pmt.to_long(t.value)) % 20)
            i = j
        if self._cur is not None:
            self._feed(x[i:n])
            if self._cur[2] == self._bps[self._cur[1]]:
                # Whole slot in: record it now (the last slot gets no following tag).
                self._close_slot()
        else:
            self._untagged += n - i
        return n

    # -- results -----------------------------------------------------------------------
    def records(self):
        """[(absolute slot, ns, bits, errors)] of every whole received slot."""
        with self._lock:
            return list(self._records)

    def counted(self):
        return [r for r in self.records() if r[0] < self._n_count]

    def errors(self):
        return sum(r[3] for r in self.counted())

    def bits(self):
        return sum(r[2] for r in self.counted())

    def slots(self):
        return len(self.counted())

    def rx_bits(self):
        return np.concatenate(self._kept) if self._kept else np.zeros(0, np.uint8)


class link(object):
    """What build_link returns. Unpacks as (tb, tx_sink, rx_sink, ber):

    tb        the gr.top_block
    tx_sink   blocks.vector_sink_b of the transmitted bits (None with keep_bits=False)
    rx_sink   the ber_counter sink of the detector's bits (rx_sink.rx_bits() holds them
              with keep_bits=True)
    ber       function () -> dict(errors, bits, ber, slots, slots_expected,
              slots_missing, first_slot, records)

    Attributes: framer, channel, sync, demod, estimator, detector (None where not in the
    chain), tx_bits (numpy), n_slots, n_sent, h_true_sink/h_est_sink/nv_sink (with
    keep_h=True, frequency domain), params (the build_link arguments).
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __iter__(self):
        return iter((self.tb, self.tx_sink, self.rx_sink, self.ber))

    def ber(self):
        rec = self.rx_sink.records()
        counted = [r for r in rec if r[0] < self.n_slots]
        # Slots before the first received one (ofdm_sync starts at a PSS) are skipped,
        # not missing.
        first = min(rec[0][0], self.n_slots) if rec else 0
        errors = sum(r[3] for r in counted)
        bits = sum(r[2] for r in counted)
        return {
            "errors": errors,
            "bits": bits,
            "ber": errors / bits if bits else float("nan"),
            "slots": len(counted),
            "slots_expected": self.n_slots,
            "slots_missing": self.n_slots - first - len(set(r[0] for r in counted)),
            "first_slot": rec[0][0] if rec else None,
            "records": rec,
        }

    def run(self):
        self.tb.run()
        return self.ber()

    def h_nmse(self):
        """Channel-estimate NMSE (frequency domain, keep_h=True):
        sum |H_est - H|^2 / sum |H|^2 over all slots, plus the per-slot mean estimated
        and true noise_var."""
        he = np.array(self.h_est_sink.data(), dtype=np.complex64)
        ht = np.array(self.h_true_sink.data(), dtype=np.complex64)
        n = min(len(he), len(ht))
        nmse = float(np.sum(np.abs(he[:n] - ht[:n]) ** 2) / np.sum(np.abs(ht[:n]) ** 2))
        nv = np.array(self.nv_sink.data(), dtype=float)
        return {"nmse": nmse, "nv_est": float(np.mean(nv)) if len(nv) else float("nan"),
                "nv_true": self.channel.noise_var()}


def build_link(bandwidth, antennas, modulation, detector, backend, channel, snr_db, slots,
               seed, domain="time", cfo=0.0, timing_offset=0, perfect_csi=False,
               cell_id=1, doppler_hz=-1.0, n_rx=None, keep_bits=False, keep_h=False,
               pad_slots=None, pilot_ratio_db=0.0, rx_pilot_ratio_db=None,
               **detector_params):
    """Build the loopback link; returns a `link` (unpacks as tb, tx_sink, rx_sink, ber).

    bandwidth   MHz: 1.4, 3, 5, 10, 15, 20
    antennas    n_tx (= n_rx unless n_rx is given): 1, 2 or 4
    modulation  "qpsk", "16qam", "64qam"
    detector    mimo_detector algorithm: psd, fsd, sfsd, mtt, mmse, zf (or ml)
    backend     "cpu", "cuda" or "auto"
    channel     awgn, rayleigh, epa, eva, etu (mimo_channel model)
    snr_db      SNR per data resource element (docs/CONVENTIONS.md)
    slots       slots whose bits are counted (the time domain sends pad_slots more)
    seed        >= 1: reproducible bits, fading and noise; 0: random
    domain      "time" (framer -> channel -> sync -> demod -> ...) or "freq" (grids)
    cfo, timing_offset  channel impairments (time domain only)
    perfect_csi frequency domain only: the channel's true H and noise_var replace the
                estimator
    keep_bits   also store the transmitted bits in a vector_sink_b and the received ones
                in the counter (memory: one byte per bit)
    keep_h      frequency domain: sinks of the true and estimated H and the estimated
                noise_var (link.h_nmse())
    pilot_ratio_db     the framer's pilot-to-data power ratio (dB)
    rx_pilot_ratio_db  the estimator's: None (default) the framer's, a value in dB, or
                float('nan') to estimate it
    detector_params  passed to mimo_detector (soft detectors run with soft_output=False):
                lvl, exp, T, niter, sorted_qr, llr_clip, threads, slot_limit_us (default
                0 here: the link runs as fast as it can, not in real time, so psd keeps
                the exact search whatever a slot costs)
    """
    detector_params.setdefault("slot_limit_us", 0.0)
    bandwidth = float(bandwidth)
    if bandwidth not in BANDWIDTHS:
        raise ValueError("bandwidth must be one of %s MHz" % (BANDWIDTHS,))
    if domain not in ("time", "freq"):
        raise ValueError("domain must be 'time' or 'freq'")
    if modulation not in MODULATIONS:
        raise ValueError("modulation must be one of %s" % (tuple(MODULATIONS),))
    if channel not in CHANNELS:
        raise ValueError("channel must be one of %s" % (CHANNELS,))
    if perfect_csi and domain != "freq":
        raise ValueError("perfect_csi needs domain='freq' (the time-domain channel has "
                         "no H output)")
    if domain == "freq" and (cfo != 0 or timing_offset != 0):
        raise ValueError("cfo and timing_offset apply to the time domain only")
    slots = int(slots)
    if slots < 1:
        raise ValueError("slots must be >= 1")
    n_tx = int(antennas)
    n_rx = n_tx if n_rx is None else int(n_rx)
    freq = domain == "freq"
    num = lte_numerology.from_bandwidth(bandwidth)
    n_sc = num.n_sc

    framer = slot_framer(bandwidth, n_tx, modulation, cell_id, freq, float(pilot_ratio_db))
    rx_ratio = float(pilot_ratio_db if rx_pilot_ratio_db is None else rx_pilot_ratio_db)
    bps = [framer.bits_per_slot(ns) for ns in range(20)]
    if pad_slots is None:
        # Time domain: flush the timing offset (the channel is a sync block: its last
        # timing_offset samples never come out) and the synchroniser's look-ahead.
        pad_slots = 0 if freq else -(-int(timing_offset) // num.slot_samples()) + 2
    n_sent = slots + int(pad_slots)
    n_bits = sum(bps[a % 20] for a in range(n_sent))
    rng = np.random.default_rng(seed if seed else None)
    tx_bits = rng.integers(0, 2, size=n_bits, dtype=np.uint8)

    tb = gr.top_block("mimodet loopback")
    src = blocks.vector_source_b(tx_bits.tolist(), False)
    tb.connect(src, framer)
    tx_sink = None
    if keep_bits:
        tx_sink = blocks.vector_sink_b()
        tb.connect(src, tx_sink)

    chan_seed = int(seed) % 2147483647 if seed else 0
    chan = mimo_channel(n_tx, n_rx, channel, float(snr_db), bandwidth, float(doppler_hz),
                        float(cfo), int(timing_offset), freq, chan_seed)
    for t in range(n_tx):
        tb.connect((framer, t), (chan, t))

    sync = demod = est = None
    if freq:
        grid_src = chan
    else:
        sync = ofdm_sync(bandwidth, n_rx, cell_id)
        demod = ofdm_demod(bandwidth, n_rx)
        for r in range(n_rx):
            tb.connect((chan, r), (sync, r))
            tb.connect((sync, r), (demod, r))
        grid_src = demod

    det = mimo_detector(detector, bandwidth, n_tx, n_rx, modulation, cell_id, backend,
                        False, **detector_params)
    for r in range(n_rx):
        tb.connect((grid_src, r), (det, r))

    h_true_sink = h_est_sink = nv_sink = None
    if freq and (perfect_csi or keep_h):
        h_true_sink = blocks.vector_sink_c(n_sc * n_rx * n_tx) if keep_h else None
        if keep_h:
            tb.connect((chan, n_rx), h_true_sink)
    if perfect_csi:
        tb.connect((chan, n_rx), (det, n_rx))
        nv_src = blocks.vector_source_f([float(chan.noise_var())] * n_sent, False)
        tb.connect(nv_src, (det, n_rx + 1))
        if keep_h:
            # The estimator still runs beside, for the NMSE.
            est = channel_estimator(bandwidth, n_tx, n_rx, cell_id, pilot_ratio_db=rx_ratio)
            for r in range(n_rx):
                tb.connect((grid_src, r), (est, r))
    else:
        est = channel_estimator(bandwidth, n_tx, n_rx, cell_id, pilot_ratio_db=rx_ratio)
        for r in range(n_rx):
            tb.connect((grid_src, r), (est, r))
        tb.connect((est, 0), (det, n_rx))
        tb.connect((est, 1), (det, n_rx + 1))
    if keep_h and est is not None and freq:
        h_est_sink = blocks.vector_sink_c(n_sc * n_rx * n_tx)
        nv_sink = blocks.vector_sink_f()
        tb.connect((est, 0), h_est_sink)
        tb.connect((est, 1), nv_sink)

    rx_sink = ber_counter(tx_bits, bps, slots, keep_bits)
    tb.connect(det, rx_sink)

    params = dict(bandwidth=bandwidth, antennas=n_tx, n_rx=n_rx, modulation=modulation,
                  detector=detector, backend=backend, channel=channel, snr_db=snr_db,
                  slots=slots, seed=seed, domain=domain, cfo=cfo,
                  timing_offset=timing_offset, perfect_csi=perfect_csi, cell_id=cell_id,
                  doppler_hz=doppler_hz, pilot_ratio_db=pilot_ratio_db,
                  rx_pilot_ratio_db=rx_pilot_ratio_db,
                  detector_params=dict(detector_params))
    return link(tb=tb, tx_sink=tx_sink, rx_sink=rx_sink, framer=framer, channel=chan,
                sync=sync, demod=demod, estimator=est, detector=det, tx_bits=tx_bits,
                n_slots=slots, n_sent=n_sent, bits_per_slot=bps, h_true_sink=h_true_sink,
                h_est_sink=h_est_sink, nv_sink=nv_sink, params=params)


def interp_snr_at_ber(snrs, bers, target=1e-2):
    """SNR (dB) where the BER curve crosses `target`, by linear interpolation of
    log10(BER) against SNR between the two points around it (None if not crossed)."""
    pts = [(s, b) for s, b in zip(snrs, bers) if b > 0]
    for (s0, b0), (s1, b1) in zip(pts, pts[1:]):
        if (b0 - target) * (b1 - target) <= 0 and b0 != b1:
            l0, l1, lt = np.log10(b0), np.log10(b1), np.log10(target)
            return s0 + (lt - l0) * (s1 - s0) / (l1 - l0)
    return None


# -- helpers for GNU Radio Companion flowgraphs (examples/loopback_4x4.grc) --------------

def frame_bits(bandwidth, n_tx, modulation, cell_id=1, seed=1):
    """One frame (20 slots) of random bits for a repeating vector_source_b: with a period
    of exactly one frame, the bits of slot ns are the same in every frame, so a receiver
    can check them from the "slot" tag alone (frame_ber_meter)."""
    f = slot_framer(float(bandwidth), int(n_tx), modulation, int(cell_id), False)
    n = sum(f.bits_per_slot(ns) for ns in range(20))
    return np.random.default_rng(int(seed)).integers(0, 2, size=n, dtype=np.uint8).tolist()


class frame_ber_meter(gr.sync_block):
    """Running BER of a detector's bit stream against frame_bits(...) (a transmitter that
    repeats one frame of bits). Input: bits with "slot" tags; output: the BER so far
    (float, one per input item, for a qtgui number sink). ber(), errors(), bits()."""

    def __init__(self, bandwidth=5.0, n_tx=4, modulation="16qam", cell_id=1, seed=1):
        gr.sync_block.__init__(self, name="frame_ber_meter", in_sig=[np.uint8],
                               out_sig=[np.float32])
        f = slot_framer(float(bandwidth), int(n_tx), modulation, int(cell_id), False)
        self._bps = [f.bits_per_slot(ns) for ns in range(20)]
        self._start = np.concatenate([[0], np.cumsum(self._bps)]).astype(int)
        self._ref = np.array(frame_bits(bandwidth, n_tx, modulation, cell_id, seed),
                             dtype=np.uint8)
        self._ns = None
        self._pos = 0
        self._errors = 0
        self._bits = 0

    def _feed(self, x):
        while len(x) and self._ns is not None:
            n = min(len(x), self._bps[self._ns] - self._pos)
            s = self._start[self._ns] + self._pos
            self._errors += int(np.count_nonzero(self._ref[s:s + n] != x[:n]))
            self._bits += n
            self._pos += n
            x = x[n:]
            if self._pos == self._bps[self._ns]:       # untagged next slot: ns + 1
                self._ns, self._pos = (self._ns + 1) % 20, 0

    def work(self, input_items, output_items):
        x = input_items[0]
        base = self.nitems_read(0)
        i = 0
        for t in sorted(self.get_tags_in_window(0, 0, len(x), _SLOT), key=lambda t: t.offset):
            j = int(t.offset - base)
            self._feed(x[i:j])
            self._ns, self._pos = int(pmt.to_long(t.value)) % 20, 0
            i = j
        self._feed(x[i:])
        output_items[0][:] = self.ber()
        return len(x)

    def ber(self):
        return self._errors / self._bits if self._bits else 0.0

    def errors(self):
        return self._errors

    def bits(self):
        return self._bits


class zf_symbols(gr.basic_block):
    """Zero-forcing equalised data symbols, for a constellation display: inputs n_rx
    grids and H (the channel_estimator's output 0), output per slot the n_data(ns) * n_tx
    equalised symbols (per data element, transmit antennas 0..n_tx-1). ZF only serves
    the display; the detector works on the grids and H itself."""

    def __init__(self, bandwidth=5.0, n_tx=4, n_rx=4, cell_id=1):
        num = lte_numerology.from_bandwidth(float(bandwidth))
        self._n_sc, self._n_tx, self._n_rx = num.n_sc, int(n_tx), int(n_rx)
        gr.basic_block.__init__(
            self, name="zf_symbols",
            in_sig=[(np.complex64, 7 * num.n_sc)] * self._n_rx
            + [(np.complex64, num.n_sc * self._n_rx * self._n_tx)],
            out_sig=[np.complex64])
        g = lte_grid(num, self._n_tx, int(cell_id))
        self._data = [np.array(g.data_elements(ns)) for ns in range(20)]
        self.set_output_multiple(max(len(d) for d in self._data) * self._n_tx)
        self._ns = -1

    def forecast(self, noutput_items, ninputs):
        return [1] * ninputs

    def general_work(self, input_items, output_items):
        n_in = min(len(x) for x in input_items)
        out = output_items[0]
        produced = 0
        done = 0
        base = self.nitems_read(0)
        while done < n_in:
            tags = self.get_tags_in_range(0, base + done, base + done + 1, _SLOT)
            ns = int(pmt.to_long(tags[0].value)) % 20 if tags else (self._ns + 1) % 20
            d = self._data[ns]
            if produced + len(d) * self._n_tx > len(out):
                break
            self._ns = ns
            y = np.stack([input_items[r][done] for r in range(self._n_rx)])  # (n_rx, 7 n_sc)
            H = input_items[self._n_rx][done].reshape(self._n_sc, self._n_rx, self._n_tx)
            k = d % self._n_sc
            pinv = np.linalg.pinv(H)                       # (n_sc, n_tx, n_rx)
            s = np.einsum("jtr,rj->jt", pinv[k], y[:, d])  # (n_data, n_tx)
            out[produced:produced + s.size] = s.ravel()
            produced += s.size
            done += 1
        self.consume_each(done)
        return produced
