#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of examples/ and of the GRC block definitions (grc/*.yml):

- every examples/*.grc compiles with grcc;
- the generated flowgraphs run headless (QT_QPA_PLATFORM=offscreen) for a few slots:
  the loopback as it is, the USRP ones with gnuradio.uhd replaced by a stand-in radio
  (a simulated transmitter and channel behind the USRP Source, a level meter behind the
  USRP Sink) that also records how the flowgraph configures the devices;
- a generated flowgraph with every mimodet GRC block decodes its bits, and the same
  blocks generate valid-looking C++;
- examples/ber_curves.py writes a sensible CSV (and PNG, or says why not).

About 25 s on a 2-core machine. Every flowgraph runs in its own Python process (one
QApplication each, and the stand-in gnuradio.uhd stays out of this process).
"""

import csv
import glob
import json
import math
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

import yaml  # noqa: E402
from gnuradio import gr_unittest  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples")
# Flowgraphs that need a radio: compiled always, run only with the stand-in UHD.
HARDWARE = ("usrp_b210_2x2_tx", "usrp_b210_2x2_rx", "usrp_4x4_rx")


def env():
    e = dict(os.environ, GRC_BLOCKS_PATH=os.path.join(REPO, "grc"),
             QT_QPA_PLATFORM="offscreen", GR_CONF_LOG_LOG_LEVEL="error")
    e.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())   # quiets Qt's warning
    return e


def detector_make(src, block_id):
    """The generated C++ that makes block block_id (mimo_detector, mimo_receiver): its
    scope, from the opening brace to the closing one."""
    at = src.index("this->%s = gr::mimodet::" % block_id)
    start = src.rindex("{", 0, src.rindex("block_detector_config(", 0, at))
    return src[start:src.index("}", at) + 1]


def compile_detector_makes(test, src, variables):
    """The generated C++ of every mimo_detector and mimo_receiver in src compiles
    against the public headers (syntax and types; variables: the flowgraph's variables
    they use)."""
    import re
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        return
    blocks = re.findall(r"this->(\w+) = gr::mimodet::(mimo_detector|mimo_receiver)::make", src)
    test.assertTrue(blocks)
    code = ["#include <gnuradio/mimodet/mimo_detector.h>",
            "#include <gnuradio/mimodet/mimo_receiver.h>", "#include <limits>",
            "struct flowgraph {"]
    code += ["    gr::mimodet::%s::sptr %s;" % (kind, name) for name, kind in blocks]
    code += ["    void make() {", "        " + variables]
    code += [detector_make(src, name) for name, _ in blocks]
    code += ["    }", "};"]
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write("\n".join(code) + "\n")
    try:
        p = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-I",
                            os.path.join(REPO, "include"), f.name],
                           capture_output=True, text=True, timeout=180)
    finally:
        os.unlink(f.name)
    test.assertEqual(p.returncode, 0, p.stderr[-3000:])


# Stand-in for gnuradio.uhd, installed by the driver below before the generated module
# is imported. The source plays what the matching transmitter sends: one repeated frame
# of bits (loopback.frame_bits with the flowgraph's own variables) through the slot
# framer and a fading channel with CFO and a timing offset, at -40 dB (ADC-like level).
FAKE_UHD = r'''
import numpy as np
from gnuradio import blocks, gr, mimodet
from gnuradio.mimodet import loopback

ALL_MBOARDS = 2**64 - 1
ALL_LOS = "all"
ALL_CHANS = 2**64 - 1
DEVICES = []


class stream_args(object):
    def __init__(self, cpu_format="fc32", otw_format="", args="", channels=(0,)):
        self.cpu_format, self.args, self.channels = cpu_format, args, list(channels)


class time_spec(object):
    def __init__(self, secs=0.0):
        self.secs = float(secs)

    def get_real_secs(self):
        return self.secs


class _device(gr.hier_block2):
    """Records every set_*/get_* call as (name, args...) with time_spec as seconds."""

    def _record(self, name):
        def call(*args):
            self.calls.append([name] + [a.secs if isinstance(a, time_spec) else a
                                        for a in args])
            return time_spec(0.0) if name.startswith("get_time") else None
        return call

    def __getattr__(self, name):
        if name.startswith(("set_", "get_")):
            return self._record(name)
        return gr.hier_block2.__getattr__(self, name)


class _level_meter(gr.sync_block):
    def __init__(self):
        gr.sync_block.__init__(self, "level_meter", [np.complex64], None)
        self.n, self.peak, self.energy = 0, 0.0, 0.0

    def work(self, input_items, output_items):
        x = input_items[0]
        self.n += len(x)
        if len(x):
            a = np.abs(x)
            self.peak = max(self.peak, float(a.max()))
            self.energy += float(np.sum(a * a))
        return len(x)


class usrp_source(_device):
    def __init__(self, device_addr, stream_args):
        n = len(stream_args.channels)
        gr.hier_block2.__init__(self, "fake_usrp_source", gr.io_signature(0, 0, 0),
                                gr.io_signature(n, n, gr.sizeof_gr_complex))
        self.n, self.calls = n, [["make", device_addr, stream_args.channels]]
        DEVICES.append(self)

    def wire(self, tb):
        bw, mod = float(tb.get_bandwidth()), tb.get_modulation()
        cell, seed = int(tb.get_cell_id()), int(tb.get_seed())
        src = blocks.vector_source_b(loopback.frame_bits(bw, self.n, mod, cell, seed), True)
        framer = mimodet.slot_framer(bw, self.n, mod, cell, False)
        chan = mimodet.mimo_channel(self.n, self.n, "epa", 35.0, bw, -1.0, 0.2, 777,
                                    False, 5)
        self.connect(src, framer)
        for i in range(self.n):
            level = blocks.multiply_const_cc(0.01)
            self.connect((framer, i), (chan, i))
            self.connect((chan, i), level, (self, i))


class usrp_sink(_device):
    def __init__(self, device_addr, stream_args, tsb_tag_name=""):
        n = len(stream_args.channels)
        gr.hier_block2.__init__(self, "fake_usrp_sink",
                                gr.io_signature(n, n, gr.sizeof_gr_complex),
                                gr.io_signature(0, 0, 0))
        self.n, self.calls = n, [["make", device_addr, stream_args.channels]]
        self.meters = [_level_meter() for _ in range(n)]
        for i, m in enumerate(self.meters):
            self.connect((self, i), m)
        DEVICES.append(self)

    def wire(self, tb):
        pass
'''

# Runs one generated flowgraph: argv = out_dir module slots timeout fake_uhd(0/1).
# Prints one line "RESULT <json>".
DRIVER = r'''
import importlib, json, os, sys, time, types
out_dir, name, want, timeout, fake = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    float(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, out_dir)
if fake:
    import gnuradio
    uhd = types.ModuleType("gnuradio.uhd")
    exec(open(os.path.join(out_dir, "fake_uhd.py")).read(), uhd.__dict__)
    sys.modules["gnuradio.uhd"] = uhd
    gnuradio.uhd = uhd
from PyQt5 import Qt
app = Qt.QApplication(sys.argv[:1])          # the Qt sinks need one; no event loop
mod = importlib.import_module(name)
tb = getattr(mod, name)()
devices = list(uhd.DEVICES) if fake else []
for d in devices:
    d.wire(tb)
det = getattr(tb, "mimodet_mimo_detector_0", None)


def progress():
    if det is not None:
        # Until the displays behind the detector have seen the slots too.
        return min(det.slots_processed(), tb.mimodet_throughput_meter_0.slots())
    return min(m.n for d in devices for m in d.meters) // int(
        tb.mimodet_slot_framer_0.items_per_slot())


t0 = time.time()
tb.start()
while progress() < want and time.time() - t0 < timeout:
    time.sleep(0.05)
tb.stop()
tb.wait()
r = {"seconds": time.time() - t0, "progress": progress(),
     "devices": [d.calls for d in devices]}
if det is not None:
    # loopback_4x4 has its BER meter and ZF display as embedded Python blocks.
    ber = getattr(tb, "mimodet_frame_ber_meter_0", None) or tb.epy_ber
    zf = getattr(tb, "mimodet_zf_symbols_0", None) or tb.epy_zf
    tp = tb.mimodet_throughput_meter_0
    sync = tb.mimodet_ofdm_sync_0
    r.update(slots=det.slots_processed(), bad_slots=det.bad_slots(), ber=ber.ber(),
             bits=ber.bits(), tp_slots=tp.slots(), tp_bits=tp.bits(), mbps=tp.mbps(),
             locked=sync.locked(), cfo=sync.cfo(), zf_items=zf.nitems_written(0))
else:
    r.update(tx=[{"n": m.n, "peak": m.peak, "power": m.energy / max(m.n, 1)}
                 for d in devices for m in d.meters])
print("RESULT " + json.dumps(r), flush=True)
# Tear down in a fixed order: the flowgraph (a Qt widget) first, while the QApplication
# still exists, then the application. A crash here still fails the test. Python's own
# module teardown, whose order is arbitrary and can end this process with SIGSEGV after
# the result is out, is skipped.
import gc
del tb, det, mod
devices = []
gc.collect()
del app
gc.collect()
os._exit(0)
'''


def flowgraph(name, blocks, connections, lang="python", gui="no_gui"):
    """A minimal .grc document (GRC fills in every parameter left out)."""
    def b(n, i, p):
        return {"name": n, "id": i, "parameters": {k: str(v) for k, v in p.items()},
                "states": {"coordinate": [0, 0], "rotation": 0, "state": "enabled"}}
    opts = {"id": name, "generate_options": gui, "output_language": lang,
            "title": name, "run": "True", "gen_cmake": "On", "gen_linking": "dynamic",
            "cmake_opt": ""}
    return {"options": {"parameters": opts, "states": {"coordinate": [0, 0],
                                                       "rotation": 0,
                                                       "state": "enabled"}},
            "blocks": [b(*x) for x in blocks],
            "connections": [[str(p) for p in c] for c in connections],
            "metadata": {"file_format": 1}}


# Every mimodet block in one frequency-domain chain (1.4 MHz, 2x2 QPSK, EPA at 40 dB):
# the detectors that can give LLRs do so where that is their option, so both output
# types and every template path run.
DETECTORS = {
    # block name: (block id, extra parameters, soft)
    "det_generic": ("mimodet_mimo_detector",
                    dict(algorithm="'ml'", soft_output="True", lvl="[]", exp="[]",
                         T=-1, niter=-1, sorted_qr=-1, llr_clip=20), True),
    "det_psd": ("mimodet_psd_detector", dict(lvl="[5, 3, 1]", exp="[1, 4]",
                                            sorted_qr=1), False),
    "det_fsd": ("mimodet_fsd_detector", dict(T=1), False),
    "det_sfsd": ("mimodet_sfsd_detector", dict(soft_output="True", T=-1, niter=-1,
                                              llr_clip=0), True),
    "det_mtt": ("mimodet_mtt_detector", dict(soft_output="False", sorted_qr=-1,
                                            llr_clip=0), False),
    "det_mmse": ("mimodet_mmse_detector", dict(soft_output="False", llr_clip=0), False),
    "det_zf": ("mimodet_zf_detector", dict(soft_output="True", llr_clip=8), True),
}


# The detecting blocks' parameters shared by the GRC tests' flowgraphs.
GRC_COMMON = dict(bandwidth="bandwidth", n_tx=2, n_rx=2, modulation="'qpsk'", cell_id=1,
                  backend="'cpu'", threads=1)


def front_end_graph(lang, snr_db):
    """The GRC tests' front end, (blocks, connections): one frame of bits (cell 1, seed
    3) -> slot_framer -> mimo_channel (1.4 MHz 2x2 QPSK, EPA at snr_db, grids) ->
    channel_estimator "est"; the channel's true H goes to a null sink."""
    blocks = [
        ("bandwidth", "variable", {"value": "1.4"}),
        ("src", "blocks_vector_source_x",
         {"type": "byte", "vector": "loopback.frame_bits(1.4, 2, 'qpsk', 1, 3)"
          if lang == "python" else "(0, 1, 1, 0)", "repeat": "False", "tags": "[]",
          "vlen": 1}),
        ("framer", "mimodet_slot_framer",
         dict(bandwidth="bandwidth", n_tx=2, modulation="'qpsk'", cell_id=1,
              freq_domain="True")),
        ("chan", "mimodet_mimo_channel",
         dict(n_tx=2, n_rx=2, model="'epa'", snr_db=snr_db, bandwidth="bandwidth",
              doppler_hz=-1, freq_domain="True", cfo=0, timing_offset=0, seed=3)),
        ("est", "mimodet_channel_estimator",
         dict(bandwidth="bandwidth", n_tx=2, n_rx=2, cell_id=1)),
        ("h_sink", "blocks_null_sink", dict(type="complex", vlen=72 * 4, num_inputs=1)),
    ]
    if lang == "python":
        blocks.append(("import_0", "import",
                       {"imports": "from gnuradio.mimodet import loopback"}))
    conns = [("src", 0, "framer", 0)]
    for r in range(2):
        conns += [("framer", r, "chan", r), ("chan", r, "est", r)]
    conns.append(("chan", 2, "h_sink", 0))
    return blocks, conns


def all_blocks_graph(lang):
    common = GRC_COMMON
    blocks, conns = front_end_graph(lang, 40)
    for name, (bid, extra, soft) in DETECTORS.items():
        p = dict(common)
        p.update(extra)
        blocks.append((name, bid, p))
        blocks.append((name + "_out", "blocks_vector_sink_x",
                       dict(type="float" if soft else "byte", vlen=1,
                            reserve_items=1024)))
        conns += [("chan", 0, name, 0), ("chan", 1, name, 1), ("est", 0, name, 2),
                  ("est", 1, name, 3), (name, 0, name + "_out", 0)]
    if lang == "python":
        # The Python-only display helpers, fed by the PSD's bits and the grids.
        blocks += [
            ("ber", "mimodet_frame_ber_meter",
             dict(bandwidth="bandwidth", n_tx=2, modulation="'qpsk'", cell_id=1, seed=3)),
            ("tp", "mimodet_throughput_meter", dict(itemtype="byte", window=1.0)),
            ("zf", "mimodet_zf_symbols",
             dict(bandwidth="bandwidth", n_tx=2, n_rx=2, cell_id=1)),
            ("ber_out", "blocks_null_sink", dict(type="float", vlen=1, num_inputs=1)),
            ("tp_out", "blocks_null_sink", dict(type="float", vlen=1, num_inputs=2)),
            ("zf_out", "blocks_vector_sink_x", dict(type="complex", vlen=1,
                                                   reserve_items=1024)),
        ]
        conns += [("det_psd", 0, "ber", 0), ("ber", 0, "ber_out", 0),
                  ("det_psd", 0, "tp", 0), ("tp", 0, "tp_out", 0), ("tp", 1, "tp_out", 1),
                  ("chan", 0, "zf", 0), ("chan", 1, "zf", 1), ("est", 0, "zf", 2),
                  ("zf", 0, "zf_out", 0)]
    return flowgraph("all_blocks_" + lang, blocks, conns, lang=lang)


class qa_examples(gr_unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mimodet_qa_examples_")
        cls.grc_files = sorted(glob.glob(os.path.join(EXAMPLES, "*.grc")))
        with open(os.path.join(cls.tmp, "fake_uhd.py"), "w") as f:
            f.write(FAKE_UHD)
        with open(os.path.join(cls.tmp, "driver.py"), "w") as f:
            f.write(DRIVER)
        # One grcc for all files: it loads the block library once (~1 s each time).
        t = time.time()
        cls.grcc = subprocess.run(["grcc", "-o", cls.tmp] + cls.grc_files, env=env(),
                                  capture_output=True, text=True, timeout=300)
        cls.grcc_seconds = time.time() - t

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_flowgraph(self, name, slots, fake_uhd, timeout=40):
        p = subprocess.run([sys.executable, os.path.join(self.tmp, "driver.py"), self.tmp,
                            name, str(slots), str(timeout), "1" if fake_uhd else "0"],
                           env=env(), capture_output=True, text=True, timeout=timeout + 60)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        self.assertTrue(lines, p.stdout[-3000:] + p.stderr[-3000:])
        return json.loads(lines[-1][len("RESULT "):])

    def check_receiver(self, name, r, n_ant, slots):
        print("\n%s: %d slots in %.1f s, BER %.2e over %d bits, %.2f Mbit/s, CFO %.4f"
              % (name, r["slots"], r["seconds"], r["ber"], r["bits"], r["mbps"], r["cfo"]))
        self.assertGreaterEqual(r["slots"], slots)
        self.assertEqual(r["bad_slots"], 0)
        self.assertTrue(r["locked"])
        # Every displayed number comes from the slots the detector produced.
        self.assertGreater(r["bits"], 0)
        self.assertLess(r["ber"], 1e-2)
        self.assertGreaterEqual(r["tp_slots"], slots)
        self.assertGreater(r["tp_bits"], 0)
        self.assertGreater(r["mbps"], 0.0)
        self.assertGreater(r["zf_items"], 0)

    # -- grcc ----------------------------------------------------------------------------
    def test_000_every_block_definition_loads(self):
        # GRC skips a .block.yml it cannot load (a message in its log, no error status),
        # and the block then vanishes from generated flowgraphs: every file of grc/ must
        # load into GRC's library and be listed in the MIMO Detection tree.
        code = textwrap.dedent("""
            import glob, json, os, yaml
            from gnuradio import gr
            from gnuradio.grc.core.platform import Platform
            p = Platform(name="qa", prefs=gr.prefs(), version=gr.version(),
                         version_parts=(gr.major_version(), gr.api_version(),
                                        gr.minor_version()))
            p.build_library()
            ids = [yaml.safe_load(open(f))["id"]
                   for f in glob.glob(os.path.join(%r, "*.block.yml"))]
            print("RESULT " + json.dumps({"ids": ids,
                                          "missing": [i for i in ids if i not in p.blocks]}))
            """) % os.path.join(REPO, "grc")
        p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        r = json.loads([l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1][7:])
        self.assertGreater(len(r["ids"]), 10)
        self.assertEqual(r["missing"], [])
        with open(os.path.join(REPO, "grc", "mimodet.tree.yml")) as f:
            tree = yaml.safe_load(f)["[Core]"][0]["MIMO Detection"]
        self.assertEqual(sorted(tree), sorted(r["ids"]))

    def test_001_grcc_compiles_every_example(self):
        out = self.grcc.stdout + self.grcc.stderr
        self.assertEqual(self.grcc.returncode, 0, out[-4000:])
        names = [os.path.splitext(os.path.basename(f))[0] for f in self.grc_files]
        print("\ngrcc: %d flowgraphs in %.1f s: %s" % (len(names), self.grcc_seconds,
                                                      ", ".join(names)))
        for n in ("loopback_4x4",) + HARDWARE:
            self.assertIn(n, names)
        for n in names:
            py = os.path.join(self.tmp, n + ".py")
            self.assertTrue(os.path.exists(py), n + ": " + out[-2000:])
            py_compile.compile(py, doraise=True)
            with open(py) as f:
                src = f.read()
            # The receivers detect, the transmitter frames, the split receiver's halves
            # synchronise and send, receive and detect; the USRP ones use gr-uhd.
            expect = {"split_radio_host": ("mimodet.ofdm_sync(", "zeromq.push_sink("),
                      "split_gpu_host": ("mimodet.mimo_receiver(", "zeromq.pull_source(")}
            for text in expect.get(n, ("mimodet.slot_framer(" if n.endswith("_tx") else
                                       "mimodet.mimo_detector(",)):
                self.assertIn(text, src, n)
            if n in HARDWARE:
                self.assertIn("uhd.usrp_", src, n)

    # -- non-hardware flowgraph ----------------------------------------------------------
    def test_002_loopback_runs_headless(self):
        r = self.run_flowgraph("loopback_4x4", 30, False)
        self.check_receiver("loopback_4x4", r, 4, 30)
        self.assertAlmostEqual(r["cfo"], 0.3, delta=0.02)   # the flowgraph's cfo

    # -- hardware flowgraphs with the stand-in radio -------------------------------------
    def test_003_b210_rx_with_simulated_radio(self):
        r = self.run_flowgraph("usrp_b210_2x2_rx", 30, True)
        self.check_receiver("usrp_b210_2x2_rx", r, 2, 30)
        self.assertAlmostEqual(r["cfo"], 0.2, delta=0.02)   # the stand-in's CFO
        calls = r["devices"][0]
        self.assertEqual(calls[0][2], [0, 1])               # two channels
        self.assertIn(["set_subdev_spec", "A:A A:B", 0], calls)
        self.assertIn(["set_samp_rate", 1.92e6], calls)
        for ch in (0, 1):
            self.assertIn(["set_center_freq", 2.45e9, ch], calls)
            self.assertIn(["set_antenna", "RX2", ch], calls)
        self.assertIn("master_clock_rate=30720000", calls[0][1])

    def test_004_4x4_rx_with_simulated_radio(self):
        r = self.run_flowgraph("usrp_4x4_rx", 30, True)
        self.check_receiver("usrp_4x4_rx", r, 4, 30)
        calls = r["devices"][0]
        self.assertEqual(len(r["devices"]), 1)              # one multi_usrp ...
        self.assertEqual(calls[0][2], [0, 1, 2, 3])         # ... with four channels
        self.assertIn("addr0=", calls[0][1])
        self.assertIn("addr1=", calls[0][1])
        # Both motherboards on the shared 10 MHz and PPS, the device time set on a PPS
        # edge, then a timed start: the conditions for sample-aligned antennas.
        for mb in (0, 1):
            self.assertIn(["set_clock_source", "external", mb], calls)
            self.assertIn(["set_time_source", "external", mb], calls)
            self.assertIn(["set_subdev_spec", "A:0 B:0", mb], calls)
        names = [c[0] for c in calls]
        self.assertIn("set_time_unknown_pps", names)
        start = [c for c in calls if c[0] == "set_start_time"]
        self.assertEqual(len(start), 1)
        self.assertGreater(start[0][1], 0.0)
        self.assertLess(names.index("set_clock_source"), names.index("set_time_unknown_pps"))
        self.assertLess(names.index("set_time_unknown_pps"), names.index("set_start_time"))
        for ch in range(4):
            self.assertIn(["set_center_freq", 2.45e9, ch], calls)
        self.assertIn("master_clock_rate=184320000", calls[0][1])

    def test_005_b210_tx_with_simulated_radio(self):
        r = self.run_flowgraph("usrp_b210_2x2_tx", 20, True)
        calls = r["devices"][0]
        print("\nusrp_b210_2x2_tx: %s" % ", ".join(
            "%d samples, peak %.3f, power %.1f dBFS"
            % (t["n"], t["peak"], 10 * math.log10(t["power"])) for t in r["tx"]))
        self.assertGreaterEqual(r["progress"], 20)
        self.assertEqual(len(r["tx"]), 2)
        for t in r["tx"]:
            # The default digital amplitude keeps the OFDM peaks inside the DAC's range
            # and the mean power well above its noise.
            self.assertLess(t["peak"], 1.0)
            self.assertGreater(t["power"], 10 ** (-3.0))    # > -30 dBFS
        self.assertIn(["set_subdev_spec", "A:A A:B", 0], calls)
        self.assertIn(["set_samp_rate", 1.92e6], calls)
        for ch in (0, 1):
            self.assertIn(["set_antenna", "TX/RX", ch], calls)
            self.assertIn(["set_center_freq", 2.45e9, ch], calls)

    # -- every GRC block's generated code -------------------------------------------------
    def test_006_every_block_generated_python_runs(self):
        import numpy as np
        from gnuradio.mimodet import loopback
        grc = os.path.join(self.tmp, "all_blocks_python.grc")
        with open(grc, "w") as f:
            yaml.safe_dump(all_blocks_graph("python"), f)
        p = subprocess.run(["grcc", "-o", self.tmp, grc], env=env(), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        code = textwrap.dedent("""
            import json, sys
            sys.path.insert(0, %r)
            import all_blocks_python as m
            tb = m.all_blocks_python()
            tb.run()
            names = %r
            r = {n: list(map(float, getattr(tb, n + "_out").data())) for n in names}
            r["zf"] = [[z.real, z.imag] for z in tb.zf_out.data()]
            r["ber"], r["ber_bits"] = tb.ber.ber(), tb.ber.bits()
            r["tp_slots"], r["tp_bits"] = tb.tp.slots(), tb.tp.bits()
            print("RESULT " + json.dumps(r))
            """) % (self.tmp, list(DETECTORS))
        p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        r = json.loads([l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1][7:])
        tx = np.array(loopback.frame_bits(1.4, 2, "qpsk", 1, 3), dtype=np.uint8)
        summary = []
        for name, (bid, extra, soft) in DETECTORS.items():
            out = np.array(r[name])
            # One whole frame in, one whole frame out, bit for bit in the framer's order.
            self.assertEqual(len(out), len(tx), name)
            bits = (out < 0).astype(np.uint8) if soft else out.astype(np.uint8)
            ber = float(np.mean(bits != tx))
            summary.append("%s %.1e" % (name, ber))
            self.assertLess(ber, 1e-3, name)
            if soft:
                self.assertTrue(np.all(np.isfinite(out)), name)
                clip = float(extra.get("llr_clip", 0))
                if clip > 0:
                    self.assertLessEqual(float(np.max(np.abs(out))), clip + 1e-3, name)
        print("\nevery block, 2x2 QPSK EPA 40 dB, one frame: " + ", ".join(summary))
        self.assertEqual(r["ber_bits"], len(tx))
        self.assertLess(r["ber"], 1e-3)
        self.assertEqual(r["tp_bits"], len(tx))
        self.assertEqual(r["tp_slots"], 20)
        # ZF symbols: one per data element and antenna, close to the unit-magnitude
        # QPSK points.
        z = np.array(r["zf"]) @ np.array([1, 1j])
        self.assertEqual(len(z), len(tx) // 2)
        self.assertLess(float(np.median(np.abs(np.abs(z) - 1))), 0.05)

    def test_007_every_block_generates_cpp(self):
        grc = os.path.join(self.tmp, "all_blocks_cpp.grc")
        with open(grc, "w") as f:
            yaml.safe_dump(all_blocks_graph("cpp"), f)
        p = subprocess.run(["grcc", "-o", self.tmp, grc], env=env(), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
        with open(os.path.join(self.tmp, "all_blocks_cpp", "all_blocks_cpp.cpp")) as f:
            src = f.read()
        with open(os.path.join(self.tmp, "all_blocks_cpp", "CMakeLists.txt")) as f:
            cmake = f.read()
        self.assertIn("gnuradio-mimodet", cmake)
        # C++ string literals, bools and vectors where GRC holds Python values.
        self.assertIn('gr::mimodet::slot_framer::make(bandwidth, 2, "qpsk", 1, true, '
                      'static_cast<double>(0))', src)
        self.assertIn('gr::mimodet::mimo_channel::make(2, 2, "epa", 40, bandwidth, (-1), '
                      '0, 0, true, 3)', src)
        # The detectors' C++: a detector_config of the block's parameters, then make().
        self.assertIn('block_detector_config("ml", 2, 2, "qpsk", "cpu");', src)
        self.assertIn("mimo_detector::make(cfg, bandwidth, 1, true);", src)
        psd = detector_make(src, "det_psd")
        self.assertIn('block_detector_config("psd", 2, 2, "qpsk", "cpu");', psd)
        self.assertIn("cfg.psd_lvl = {5, 3, 1};", psd)
        self.assertIn("cfg.psd_exp = {1, 4};", psd)
        self.assertIn("cfg.sorted_qr = 1;", psd)
        self.assertIn("cfg.psd_node_budget = (-1);", psd)
        self.assertIn("mimo_detector::make(cfg, bandwidth, 1, false, static_cast<double>(2500));",
                      psd)
        self.assertIn('block_detector_config("mtt", 2, 2, "qpsk", "cpu");', src)
        zf = detector_make(src, "det_zf")
        self.assertIn("cfg.llr_clip = static_cast<float>(8);", zf)
        self.assertIn("mimo_detector::make(cfg, bandwidth, 1, true);", zf)
        compile_detector_makes(self, src, "double bandwidth = 1.4;")
        self.assertNotIn("'", "".join(l for l in src.splitlines() if "mimodet" in l))
        self.assertNotIn("True", src)
        self.assertNotIn("False", src)

    # -- examples/ber_curves.py ----------------------------------------------------------
    def ber_curves(self, prefix, extra, extra_env=None):
        cmd = [sys.executable, os.path.join(EXAMPLES, "ber_curves.py"),
               "--output", prefix] + extra
        e = env()
        e.update(extra_env or {})
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        with open(prefix + ".csv") as f:
            return p, list(csv.DictReader(f))

    def test_008_ber_curves(self):
        prefix = os.path.join(self.tmp, "ber", "curves")
        snrs = [0.0, 10.0, 20.0]
        p, rows = self.ber_curves(prefix, ["--detectors", "zf,fsd", "--antennas", "2",
                                           "--modulation", "qpsk", "--snr", "0:20:10",
                                           "--vectors", "4000", "--seed", "3"])
        print("\n" + p.stdout.strip())
        self.assertEqual(len(rows), 2 * len(snrs))
        ber = {}
        for row in rows:
            b = float(row["ber"])
            self.assertGreaterEqual(b, 0.0)
            self.assertLessEqual(b, 0.5)
            self.assertEqual(int(row["vectors"]), 4000)
            self.assertEqual(int(row["bits"]), 4000 * 2 * 2)
            self.assertAlmostEqual(b, int(row["errors"]) / int(row["bits"]))
            ber.setdefault(row["detector"], []).append((float(row["snr_db"]), b))
        self.assertEqual(sorted(ber), ["fsd", "zf"])
        for name, pts in ber.items():
            self.assertEqual([s for s, _ in pts], snrs)
            b = [x for _, x in pts]
            self.assertGreater(b[0], 0.01, name)            # 0 dB: many errors
            self.assertLess(b[1], b[0], name)               # falls with the SNR ...
            self.assertLessEqual(b[2], b[1], name)          # ... to the high end
            self.assertLess(b[2], b[0] / 10, name)
        # Same channels and noise for both: the (near-)ML FSD beats ZF where noise
        # does not dominate.
        self.assertLess(dict(ber["fsd"])[20.0], dict(ber["zf"])[20.0])
        # One progress line per finished point when stdout is not a terminal.
        self.assertEqual(len([l for l in p.stdout.splitlines() if "BER" in l and
                              l.startswith("[")]), 2 * len(snrs))
        try:
            import matplotlib  # noqa: F401
            self.assertTrue(os.path.getsize(prefix + ".png") > 1000)
        except ImportError:
            self.assertIn("matplotlib", p.stderr)

    def test_009_ber_curves_without_matplotlib(self):
        # A matplotlib that fails to import stands in for a missing one: the CSV is
        # still written, and the message says why there is no plot.
        hide = os.path.join(self.tmp, "no_mpl", "matplotlib")
        os.makedirs(hide, exist_ok=True)
        with open(os.path.join(hide, "__init__.py"), "w") as f:
            f.write("raise ImportError('hidden by qa_examples')\n")
        prefix = os.path.join(self.tmp, "no_mpl_out")
        path = os.pathsep.join([os.path.dirname(hide), os.environ.get("PYTHONPATH", "")])
        p, rows = self.ber_curves(prefix, ["--detectors", "mmse", "--antennas", "2",
                                           "--modulation", "16qam", "--snr", "10",
                                           "--vectors", "500", "--quiet"],
                                  {"PYTHONPATH": path})
        self.assertEqual(len(rows), 1)
        self.assertIn("matplotlib is not installed", p.stderr)
        self.assertFalse(os.path.exists(prefix + ".png"))


if __name__ == "__main__":
    gr_unittest.run(qa_examples)
