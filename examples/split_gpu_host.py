#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The GPU host of a receiver split across two hosts (docs/SPLIT.md): the slots that
split_radio_host.py sends (grids, or ofdm_sync's samples with --domain samples) come in
over ZeroMQ, and mimo_receiver estimates the channel and detects them (on the GPU with
--backend cuda or auto where one exists).

    PYTHONPATH=build/python /usr/bin/python3 examples/split_gpu_host.py \\
        --bandwidth 5 --antennas 2 --domain grids --address tcp://radio-host:5555

It prints the running BER against the radio host's repeating frame of bits every second.
--slots N ends after N slots; --record FILE appends each slot (its ns and bits) to FILE as
it is detected (read it with read_record). Restarting it is safe: the radio host waits
for it and the slots resume with their tags.
"""

import argparse
import os
import signal
import struct
import sys
import threading
import time

import numpy as np

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "warn")

from gnuradio import blocks, gr  # noqa: E402
from gnuradio.mimodet import loopback, mimo_receiver, split  # noqa: E402
import pmt  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="gr-mimodet split receiver: the GPU host "
                                "(ZeroMQ -> estimation and detection)")
    split.add_carrier_arguments(p, "tcp://127.0.0.1:5555")
    p.add_argument("--detector", default="fsd",
                   choices=["psd", "fsd", "sfsd", "mtt", "mmse", "zf"])
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.add_argument("--slots", type=int, default=0, help="end after this many slots (0: run "
                   "until stopped)")
    p.add_argument("--record", default="", help="append each detected slot to this file")
    return p.parse_args(argv)


class slot_recorder(gr.sync_block):
    """Bits with "slot" tags -> per slot (ns, bits), appended to a file as each slot
    completes; done is set after `slots` slots (0: never)."""

    def __init__(self, items_per_slot, path="", slots=0):
        gr.sync_block.__init__(self, name="slot_recorder", in_sig=[np.uint8], out_sig=None)
        self._items = items_per_slot
        self._file = open(path, "ab") if path else None
        self._want = int(slots)
        self._ns = None
        self._left = 0
        self._bits = []
        self.count = 0
        self.done = threading.Event()

    def _close_slot(self):
        bits = np.concatenate(self._bits)
        if self._file:
            self._file.write(struct.pack("<ii", self._ns, bits.size) + bits.tobytes())
            self._file.flush()
        self.count += 1
        if self._want and self.count >= self._want:
            self.done.set()

    def work(self, input_items, output_items):
        x = input_items[0]
        n0 = self.nitems_read(0)
        starts = {t.offset - n0: pmt.to_long(t.value)
                  for t in self.get_tags_in_window(0, 0, len(x), pmt.intern("slot"))}
        pos = 0
        while pos < len(x):
            if self._left == 0:
                if pos not in starts:  # between slots (none expected): to the next tag
                    pos = min([o for o in starts if o > pos], default=len(x))
                    continue
                self._ns, self._left, self._bits = starts[pos], self._items(starts[pos]), []
            take = min(self._left, len(x) - pos)
            self._bits.append(np.array(x[pos:pos + take], np.uint8))
            self._left -= take
            pos += take
            if self._left == 0:
                self._close_slot()
        return len(x)


def read_record(path):
    """The slots of a --record file: a list of (ns, bits)."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 8 <= len(data):
        ns, n = struct.unpack_from("<ii", data, at)
        at += 8
        if at + n > len(data):
            break
        out.append((ns, np.frombuffer(data, np.uint8, n, at).copy()))
        at += n
    return out


def build(a):
    n = a.antennas
    tb = gr.top_block("mimodet split: GPU host")
    tb.src = split.slot_stream_source(a.bandwidth, n, a.domain, a.address, a.hwm)
    tb.rx = mimo_receiver(a.detector, a.bandwidth, n, n, a.modulation, a.cell_id, a.backend,
                          False, time_domain=a.domain == "samples")
    tb.ber = loopback.frame_ber_meter(a.bandwidth, n, a.modulation, a.cell_id, a.seed)
    tb.rec = slot_recorder(tb.rx.items_per_slot, a.record, a.slots)
    tb.null = blocks.null_sink(gr.sizeof_float)
    for r in range(n):
        tb.connect((tb.src, r), (tb.rx, r))
    tb.connect(tb.rx, tb.ber, tb.null)
    tb.connect(tb.rx, tb.rec)
    return tb


def main(argv=None):
    a = parse_args(argv)
    tb = build(a)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    tb.start()
    print("GPU host: %s on %s, %s from %s" % (a.detector, tb.rx.backend(), a.domain,
                                             a.address), flush=True)
    last = time.monotonic()
    try:
        while not stop.is_set() and not tb.rec.done.wait(0.05):
            if time.monotonic() - last >= 1.0:
                last = time.monotonic()
                print("slots %d  BER %.3e" % (tb.rec.count, tb.ber.ber()), flush=True)
    except KeyboardInterrupt:
        pass
    tb.stop()
    tb.wait()
    print("GPU host: %d slots, BER %.3e over %d bits, %d bad" % (
        tb.rec.count, tb.ber.ber(), tb.ber.bits(), tb.rx.bad_slots()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
