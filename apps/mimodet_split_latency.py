#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""Latency the ZeroMQ split of the receiver adds (docs/SPLIT.md): slots of one carrier
(grids or time-domain samples, n_rx antennas) from a paced source to a sink, once
through split.slot_stream_sink -> slot_stream_source over TCP on this machine and once
connected directly, in the same process with the same source and sink. Each slot carries
its send time (a tag on its last item); the sink takes the time its last item arrives.
The added latency is the difference of the two paths' percentiles.

    PYTHONPATH=build/python /usr/bin/python3 apps/mimodet_split_latency.py \\
        --bandwidth 20 --antennas 4 --domain grids --rate 2000 --seconds 5
"""

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

from gnuradio import gr  # noqa: E402
from gnuradio.mimodet import lte_numerology, split  # noqa: E402
import pmt  # noqa: E402

KEY = pmt.intern("t_sent")


class paced_slots(gr.sync_block):
    """n_rx streams of slots (one grid item, or slot_samples samples, per slot and
    antenna) at `rate` slots/s; the last item of each slot on stream 0 is tagged with the
    monotonic time (ns) it was produced."""

    def __init__(self, n_rx, vlen, per_slot, rate):
        gr.sync_block.__init__(self, "paced_slots", None, [(np.complex64, vlen)] * n_rx
                               if vlen > 1 else [np.complex64] * n_rx)
        self._per_slot = per_slot
        self._period = 1.0 / rate
        self._next = None
        self._pos = 0  # items of the current slot already out

    def work(self, input_items, output_items):
        now = time.monotonic()
        if self._next is None:
            self._next = now
        if self._pos == 0 and now < self._next:
            time.sleep(min(self._next - now, 0.001))
            return 0
        n = min(len(output_items[0]), self._per_slot - self._pos)
        for out in output_items:
            out[:n] = 0.5
        self._pos += n
        if self._pos == self._per_slot:
            self.add_item_tag(0, self.nitems_written(0) + n - 1, KEY,
                              pmt.from_long(time.monotonic_ns()))
            self._pos = 0
            self._next += self._period
        return n


class latency_sink(gr.sync_block):
    def __init__(self, n_rx, vlen):
        gr.sync_block.__init__(self, "latency_sink", [(np.complex64, vlen)] * n_rx
                               if vlen > 1 else [np.complex64] * n_rx, None)
        self.latencies_ms = []

    def work(self, input_items, output_items):
        n = len(input_items[0])
        now = time.monotonic_ns()
        for t in self.get_tags_in_window(0, 0, n, KEY):
            self.latencies_ms.append((now - pmt.to_long(t.value)) * 1e-6)
        return n


def measure(a, path, port):
    num = lte_numerology.from_bandwidth(a.bandwidth)
    grids = a.domain == "grids"
    vlen = 7 * num.n_sc if grids else 1
    per_slot = 1 if grids else num.slot_samples()
    src = paced_slots(a.antennas, vlen, per_slot, a.rate)
    snk = latency_sink(a.antennas, vlen)
    for b in (src, snk):  # as split's blocks: no scheduler back-off of 250 ms
        b.set_blkd_input_timer_value(split.ZMQ_BLOCKED_TIMER_MS)
    tbs = [gr.top_block("sender"), gr.top_block("receiver")]
    if path == "direct":
        for r in range(a.antennas):
            tbs[0].connect((src, r), (snk, r))
        tbs = tbs[:1]
    else:
        push = split.slot_stream_sink(a.bandwidth, a.antennas, a.domain,
                                      "tcp://127.0.0.1:%d" % port, a.hwm)
        pull = split.slot_stream_source(a.bandwidth, a.antennas, a.domain,
                                        "tcp://127.0.0.1:%d" % port, a.hwm)
        for r in range(a.antennas):
            tbs[0].connect((src, r), (push, r))
            tbs[1].connect((pull, r), (snk, r))
    for tb in reversed(tbs):
        tb.start()
    t0 = time.monotonic()
    time.sleep(a.warmup + a.seconds)
    for tb in tbs:
        tb.stop()
    for tb in tbs:
        tb.wait()
    got = np.array(snk.latencies_ms[int(a.warmup * a.rate):])
    return got, len(got) / a.seconds, time.monotonic() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bandwidth", type=float, default=20.0,
                   choices=[1.4, 3.0, 5.0, 10.0, 15.0, 20.0])
    p.add_argument("--antennas", type=int, default=4, choices=[1, 2, 4, 8])
    p.add_argument("--domain", default="grids", choices=split.DOMAINS)
    p.add_argument("--rate", type=float, default=2000.0, help="slots/s offered")
    p.add_argument("--seconds", type=float, default=5.0, help="measured window")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds left out first")
    p.add_argument("--hwm", type=int, default=16, help="ZeroMQ high-water mark")
    p.add_argument("--port", type=int, default=5599)
    a = p.parse_args(argv)
    rate = split.network_rate_bytes_per_s(a.bandwidth, a.antennas, a.domain)
    print("%g MHz, %d antennas, %s: %.1f MB/s (%.2f Gbit/s) at 2000 slots/s; offered %g "
          "slots/s for %g s" % (a.bandwidth, a.antennas, a.domain, rate / 1e6,
                                rate * 8 / 1e9, a.rate, a.seconds))
    res = {}
    for path in ("direct", "zmq"):
        lat, done, _ = measure(a, path, a.port)
        if not len(lat):
            print("%-6s no slot measured" % path)
            return 1
        res[path] = [np.percentile(lat, q) for q in (50, 99)] + [lat.max()]
        print("%-6s slots/s %8.1f  latency p50 %7.3f  p99 %7.3f  max %7.3f ms" %
              ((path, done) + tuple(res[path])))
    d = [z - s for z, s in zip(res["zmq"], res["direct"])]
    print("added  p50 %.3f  p99 %.3f  max %.3f ms" % tuple(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
