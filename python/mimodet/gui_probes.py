#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Measurement blocks for the GNU Radio Companion examples (examples/*.grc): the
detector's throughput for a Qt number sink. The BER meter and the constellation helper
live in gnuradio.mimodet.loopback (frame_ber_meter, zf_symbols)."""

import collections
import threading
import time

import numpy as np
import pmt
from gnuradio import gr

_SLOT = pmt.intern("slot")


class throughput_meter(gr.sync_block):
    """Throughput of a detector's output stream, for a Qt number sink.

    Input: the MIMO Detector's bits (uint8) or LLRs (float32, ``itemtype="float"``), with
    the detector's "slot" tags. Output 0: Mbit/s (one detected bit per input item),
    output 1: slots/s, both float32, one value per input item, averaged over the last
    `window` seconds of wall-clock time (the number sink shows the latest value).

    The rate is what reaches this block, so it measures the whole receive chain as the
    scheduler runs it: behind a throttle it shows the throttle's rate, behind a radio the
    radio's rate as long as the chain keeps up, and the chain's own speed otherwise.

    Thread-safe readers: mbps(), slots_per_second(), bits(), slots().
    """

    def __init__(self, window=1.0, itemtype="byte"):
        if itemtype not in ("byte", "float"):
            raise ValueError("throughput_meter: itemtype must be 'byte' or 'float'")
        if not window > 0:
            raise ValueError("throughput_meter: window must be > 0 seconds")
        gr.sync_block.__init__(
            self, name="mimodet_throughput_meter",
            in_sig=[np.uint8 if itemtype == "byte" else np.float32],
            out_sig=[np.float32, np.float32])
        self._window = float(window)
        self._lock = threading.Lock()
        self._hist = collections.deque()    # (time, bits, slots) samples, oldest first
        self._bits = 0
        self._slots = 0
        self._mbps = 0.0
        self._sps = 0.0

    def work(self, input_items, output_items):
        n = len(input_items[0])
        tags = self.get_tags_in_window(0, 0, n, _SLOT)
        now = time.monotonic()
        with self._lock:
            self._bits += n
            self._slots += len(tags)
            h = self._hist
            h.append((now, self._bits, self._slots))
            # Keep one sample at or before the window's start, so the rate always spans
            # about `window` seconds once that much has run.
            while len(h) > 2 and h[1][0] <= now - self._window:
                h.popleft()
            t0, b0, s0 = h[0]
            if now > t0:
                self._mbps = (self._bits - b0) / (now - t0) / 1e6
                self._sps = (self._slots - s0) / (now - t0)
            mbps, sps = self._mbps, self._sps
        output_items[0][:] = mbps
        output_items[1][:] = sps
        return n

    def mbps(self):
        """Detected Mbit/s over the last window."""
        with self._lock:
            return self._mbps

    def slots_per_second(self):
        """Detected slots per second over the last window."""
        with self._lock:
            return self._sps

    def bits(self):
        """Items (bits or LLRs) seen so far."""
        with self._lock:
            return self._bits

    def slots(self):
        """"slot" tags (detected slots) seen so far."""
        with self._lock:
            return self._slots
