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
            crashed.wait(10)
            got = self.gpu.read_record(rec)
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


if __name__ == "__main__":
    gr_unittest.run(qa_split_hosts)
