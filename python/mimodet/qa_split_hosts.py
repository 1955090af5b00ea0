#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The receiver split across two processes over GNU Radio's ZeroMQ blocks (docs/SPLIT.md):
examples/split_radio_host.py and examples/split_gpu_host.py as separate processes on
localhost, against the same chain in one process."""

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
from gnuradio import blocks, gr, gr_unittest
import pmt

try:
    from gnuradio import mimodet
    from gnuradio.mimodet import split
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from gnuradio import mimodet
    from gnuradio.mimodet import split

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples")
MHZ, N, MOD, CELL, SEED = 1.4, 2, "16qam", 1, 3


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env():
    e = dict(os.environ, GR_CONF_LOG_LOG_LEVEL="error")
    e["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return e


def slots_of(data, tags, items_per_slot):
    """A bit stream with "slot" tags -> [(ns, bits)] of its whole slots."""
    out = []
    for t in sorted(tags, key=lambda t: t.offset):
        if pmt.symbol_to_string(t.key) != "slot":
            continue
        ns = pmt.to_long(t.value)
        n = items_per_slot(ns)
        if t.offset + n <= len(data):
            out.append((ns, np.array(data[t.offset:t.offset + n], np.uint8)))
    return out


class qa_split_hosts(gr_unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.radio = load_example("split_radio_host")
        cls.gpu = load_example("split_gpu_host")
        cls.refs = {}

    def args(self, domain, port):
        common = ["--bandwidth", str(MHZ), "--antennas", str(N), "--modulation", MOD,
                  "--cell-id", str(CELL), "--seed", str(SEED), "--domain", domain]
        return (common + ["--address", "tcp://127.0.0.1:%d" % port, "--snr", "18"],
                common + ["--address", "tcp://127.0.0.1:%d" % port, "--backend", "cpu"])

    def reference(self, domain, frames=150):
        """The same chain in one process: radio host -> mimo_receiver -> bits, per slot."""
        if domain not in self.refs:
            a = self.radio.parse_args(self.args(domain, 1)[0])
            rx = mimodet.mimo_receiver("fsd", MHZ, N, N, MOD, CELL, "cpu", False,
                                       time_domain=domain == "samples")
            tb = self.radio.build(a, rx, frames=frames)
            snk = blocks.vector_sink_b()
            tb.connect(rx, snk)
            tb.run()
            self.refs[domain] = slots_of(snk.data(), snk.tags(), rx.items_per_slot)
        return self.refs[domain]

    def start(self, script, argv):
        return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, script)] + argv,
                                env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)

    def gpu_host(self, argv, record, slots, timeout=60.0):
        """A GPU host process that records `slots` slots and ends; its slots."""
        p = self.start("split_gpu_host.py", argv + ["--record", record, "--slots", str(slots)])
        out, _ = p.communicate(timeout=timeout)
        self.assertEqual(p.returncode, 0, out[-2000:])
        return self.gpu.read_record(record)

    def assert_run_of(self, got, ref, at_least, what):
        """got equals ref[o:o + len(got)] for some o >= at_least; returns o."""
        self.assertGreater(len(got), 0, what)

        def run_length(o):
            """How many of got, from the first, equal ref from o on."""
            n = 0
            for g, r in zip(got, ref[o:]):
                if g[0] != r[0] or not np.array_equal(g[1], r[1]):
                    break
                n += 1
            return n
        for o in range(at_least, len(ref) - len(got) + 1):
            if run_length(o) == len(got):
                return o
        # Where the longest run starts, and what breaks it: a slot number out of order (a
        # slot lost inside the run) or bits that differ (a slot detected otherwise).
        best = max(range(at_least, len(ref)), key=run_length, default=at_least)
        n = run_length(best)
        broken = ""
        if n < len(got) and best + n < len(ref):
            g, r = got[n], ref[best + n]
            broken = "; slot %d of the run: ns %d against %d, %d of %d bits differ" % (
                n, g[0], r[0], int(np.count_nonzero(g[1] != r[1])) if g[1].size == r[1].size
                else -1, r[1].size)
        self.fail("%s: %d slots are no run of the single-process reference's %d (from %d); "
                  "the longest, %d slots, starts at %d%s; slot numbers %s"
                  % (what, len(got), len(ref), at_least, n, best, broken,
                     [g[0] for g in got]))

    def run_split(self, domain, tmp):
        port = free_port()
        radio_argv, gpu_argv = self.args(domain, port)
        ref = self.reference(domain)
        self.assertGreater(len(ref), 300)
        radio = self.start("split_radio_host.py", radio_argv)
        try:
            # A receiver from the start: every slot arrives, in order, equal bit for bit.
            first = self.gpu_host(gpu_argv, os.path.join(tmp, "a.bin"), 40)
            self.assertGreaterEqual(len(first), 40)
            self.assertEqual(self.assert_run_of(first, ref, 0, domain + ": first receiver"), 0)
            # A receiver killed in the middle (SIGKILL: a crash) ...
            rec = os.path.join(tmp, "b.bin")
            crashed = self.start("split_gpu_host.py", gpu_argv + ["--record", rec])
            t0 = time.monotonic()
            while (not os.path.exists(rec) or len(self.gpu.read_record(rec)) < 10) and \
                    time.monotonic() - t0 < 60:
                time.sleep(0.05)
            crashed.send_signal(signal.SIGKILL)
            crashed_out, _ = crashed.communicate(timeout=10)
            got = self.gpu.read_record(rec) if os.path.exists(rec) else []
            self.assertGreaterEqual(len(got), 10, "%s: the second receiver recorded %d slots "
                                    "in 60 s; its output: %s" % (domain, len(got),
                                                                 crashed_out[-2000:]))
            o1 = self.assert_run_of(got, ref, len(first), domain + ": crashed receiver")
            # ... and its restart: the sender, never restarted, goes on where the new
            # receiver joins; the slots in flight to the dead one are lost with it.
            again = self.gpu_host(gpu_argv, os.path.join(tmp, "c.bin"), 30)
            o2 = self.assert_run_of(again, ref, o1 + len(got), domain + ": restarted receiver")
            self.assertIsNone(radio.poll(), "the radio host ended")
            print("\n%s: first receiver slots 0..%d; crashed one %d..%d; restarted %d..%d "
                  "(%d slots lost in the crash)" % (domain, len(first) - 1, o1,
                                                    o1 + len(got) - 1, o2, o2 + len(again) - 1,
                                                    o2 - o1 - len(got)))
        finally:
            radio.send_signal(signal.SIGTERM)
            try:
                out, _ = radio.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                radio.kill()
                out, _ = radio.communicate()
        self.assertEqual(radio.returncode, 0, out[-2000:])

    def test_001_grids_across_processes(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            self.run_split("grids", tmp)

    def test_002_samples_across_processes(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            self.run_split("samples", tmp)

    def test_003_stream_blocks(self):
        # One process, two flowgraphs: the hier blocks' item sizes and the tags.
        for domain in split.DOMAINS:
            item = split.stream_item_size(20, domain)
            self.assertEqual(item, 8 if domain == "samples" else 8 * 7 * 1200)
        self.assertEqual(split.network_rate_bytes_per_s(20, 4, "samples"), 15360 * 8 * 4 * 2000)
        self.assertEqual(split.network_rate_bytes_per_s(20, 4, "grids"), 7 * 1200 * 8 * 4 * 2000)
        with self.assertRaises(ValueError):
            split.slot_stream_sink(1.4, 2, "bits", "tcp://*:1")
        with self.assertRaises(ValueError):
            split.slot_stream_source(1.4, 0, "grids", "tcp://127.0.0.1:1")
        with self.assertRaises(ValueError):
            split.slot_stream_source(1.4, 2, "grids", "localhost:1")

    def test_004_tags_arrive_with_their_slots(self):
        # Every slot leaves slot_stream_source with its tag already on it, also the first
        # one a receiver gets (a receiver numbers an untagged slot by counting).
        for domain in split.DOMAINS:
            item, per_slot = split.stream_item_size(MHZ, domain), 1
            if domain == "samples":
                per_slot = mimodet.lte_numerology.from_bandwidth(MHZ).slot_samples()
            n_slots, port = 400, free_port()
            tx = gr.top_block()
            tags = [gr.tag_utils.python_to_tag((k * per_slot, pmt.intern("slot"),
                                                pmt.from_long(k % 20))) for k in range(n_slots)]
            words = item // 8 * per_slot * n_slots
            sink = split.slot_stream_sink(MHZ, N, domain, "tcp://127.0.0.1:%d" % port, 16)
            for r in range(N):
                src = blocks.vector_source_c(np.arange(words, dtype=np.complex64) + r, False,
                                             item // 8, tags if r == 0 else [])
                tx.connect(src, (sink, r))
            rx = gr.top_block()
            source = split.slot_stream_source(MHZ, N, domain, "tcp://127.0.0.1:%d" % port, 16)
            probe = tag_probe(item // 8, per_slot)
            rx.connect((source, 0), probe)
            for r in range(1, N):
                rx.connect((source, r), blocks.null_sink(item))
            rx.start()
            tx.start()
            t0 = time.monotonic()
            while probe.slots < n_slots and time.monotonic() - t0 < 60:
                time.sleep(0.01)
            self.assertFalse(split.stop_sender(tx, sink), domain)
            rx.stop()
            rx.wait()
            self.assertEqual(probe.slots, n_slots, domain)
            self.assertEqual(probe.untagged, [], domain + ": slots seen before their tag")
            self.assertEqual(probe.numbers, [k % 20 for k in range(n_slots)], domain)

    def test_005_drain_takes_the_slots(self):
        # stop_sender's last resort, a local receiver, takes what the sink sends.
        item, port = split.stream_item_size(MHZ, "grids"), free_port()
        tx = gr.top_block()
        sink = split.slot_stream_sink(MHZ, N, "grids", "tcp://*:%d" % port, 4)
        self.assertEqual(sink.local_endpoint(), "tcp://127.0.0.1:%d" % port)
        srcs = [blocks.vector_source_c(np.zeros(item // 8, np.complex64), True, item // 8)
                for _ in range(N)]
        for r in range(N):
            tx.connect(srcs[r], (sink, r))
        tx.start()
        time.sleep(0.3)  # nobody connected: the sender stalls with full buffers
        stalled = srcs[0].nitems_written(0)
        drain = sink.drain()
        drain.start()
        t0 = time.monotonic()
        while srcs[0].nitems_written(0) < stalled + 100 and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        self.assertGreaterEqual(srcs[0].nitems_written(0), stalled + 100)
        drain.stop()
        drain.wait()
        self.assertFalse(split.stop_sender(tx, sink))


class tag_probe(gr.sync_block):
    """Antenna 0's stream: per slot, whether its "slot" tag was on it when this block got
    its first item (the tag's value in numbers, the slot's index in untagged)."""

    def __init__(self, vlen, per_slot):
        sig = (np.complex64, vlen) if vlen > 1 else np.complex64
        gr.sync_block.__init__(self, "tag_probe", in_sig=[sig], out_sig=None)
        self.per_slot, self.slots, self.numbers, self.untagged = per_slot, 0, [], []

    def work(self, input_items, output_items):
        n0, n = self.nitems_read(0), len(input_items[0])
        tagged = {t.offset: pmt.to_long(t.value)
                  for t in self.get_tags_in_window(0, 0, n, pmt.intern("slot"))}
        for offset in range(n0, n0 + n):
            if offset % self.per_slot == 0:
                if offset in tagged:
                    self.numbers.append(tagged[offset])
                else:
                    self.untagged.append(self.slots)
                self.slots += 1
        return n


if __name__ == "__main__":
    gr_unittest.run(qa_split_hosts)
