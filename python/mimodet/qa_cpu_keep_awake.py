#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of cpu_keep_awake (the GRC block Keep CPUs Awake): its spinning threads (one per CPU
given, pinned there, at SCHED_IDLE), confinement of the process's threads and of a
flowgraph started afterwards, stop() giving the CPUs back, time slices for the process's
threads (set, inherited, given back), bad arguments, and the GRC definition through
grcc."""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

from gnuradio import blocks, gr, gr_unittest

from gnuradio import mimodet
from qa_examples import env as grc_env, flowgraph  # noqa: E402


def threads():
    return [int(t) for t in os.listdir("/proc/self/task")]


def spinners():
    """Thread ids of this process at SCHED_IDLE, with their CPUs."""
    out = {}
    for tid in threads():
        try:
            if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                out[tid] = os.sched_getaffinity(tid)
        except ProcessLookupError:
            pass
    return out


class _sched_attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64),
                ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)
_SYS_SCHED_GETATTR = 315  # x86_64


def slice_ns(tid):
    """A thread's time slice as sched_getattr reports it (sched_runtime; Linux 6.12+
    reports a fair thread's slice there), or None where the call fails."""
    a = _sched_attr()
    if _libc.syscall(_SYS_SCHED_GETATTR, tid, ctypes.byref(a), ctypes.sizeof(a), 0) != 0:
        return None
    return a.runtime


def fair_threads():
    out = []
    for tid in threads():
        try:
            if os.sched_getscheduler(tid) == os.SCHED_OTHER:
                out.append(tid)
        except ProcessLookupError:
            pass
    return out


class qa_cpu_keep_awake(gr_unittest.TestCase):

    def setUp(self):
        self.allowed = sorted(os.sched_getaffinity(0))
        self.cpu = self.allowed[0]

    def tearDown(self):
        # Whatever a test did, the process keeps its CPUs.
        self.assertEqual(sorted(os.sched_getaffinity(0)), self.allowed)

    def test_001_spin_on_the_cpus_given(self):
        self.assertEqual(spinners(), {})
        cpus = self.allowed[:2]
        k = mimodet.cpu_keep_awake("spin", ",".join(map(str, cpus)))
        try:
            self.assertTrue(k.active())
            self.assertEqual(k.mode(), "spin")
            self.assertEqual(k.cpus(), cpus)
            s = spinners()
            # One thread per CPU, each pinned to its own CPU.
            self.assertEqual(sorted(tuple(sorted(a)) for a in s.values()),
                             [(c,) for c in cpus])
            # Nothing else was confined.
            self.assertEqual(sorted(os.sched_getaffinity(0)), self.allowed)
            time.sleep(0.05)
            self.assertGreater(k.spinner_cpu_seconds(), 0.0)
        finally:
            k.stop()
        self.assertFalse(k.active())
        self.assertEqual(spinners(), {})
        used = k.spinner_cpu_seconds()
        time.sleep(0.02)
        self.assertEqual(k.spinner_cpu_seconds(), used)   # kept at stop()
        k.stop()                                            # idempotent

    def test_002_every_cpu_by_default_and_a_list(self):
        with mimodet.cpu_keep_awake() as k:
            self.assertEqual(k.cpus(), self.allowed)
            self.assertEqual(len(spinners()), len(self.allowed))
        self.assertEqual(spinners(), {})
        with mimodet.cpu_keep_awake("spin", [self.cpu]) as k:
            self.assertEqual(k.cpus(), [self.cpu])

    def test_003_confine_process_and_flowgraph(self):
        k = mimodet.cpu_keep_awake("spin", str(self.cpu), True)
        try:
            for tid in threads():
                self.assertEqual(os.sched_getaffinity(tid), {self.cpu}, tid)
            # A flowgraph started now runs its threads there too.
            before = set(threads())
            tb = gr.top_block()
            src = blocks.vector_source_f(list(range(1000)), True)
            thr = blocks.throttle(gr.sizeof_float, 1e5)
            head = blocks.head(gr.sizeof_float, 20000)
            dst = blocks.vector_sink_f()
            tb.connect(src, thr, head, dst)
            tb.start()
            time.sleep(0.05)
            new = [t for t in threads() if t not in before]
            self.assertGreater(len(new), 0)
            for tid in new:
                try:
                    self.assertEqual(os.sched_getaffinity(tid), {self.cpu}, tid)
                except ProcessLookupError:
                    pass
            tb.wait()
            self.assertEqual(list(dst.data()[:1000]), list(map(float, range(1000))))
        finally:
            k.stop()
        for tid in threads():
            self.assertEqual(sorted(os.sched_getaffinity(tid)), self.allowed, tid)

    def test_004_bad_arguments(self):
        not_allowed = next((c for c in range(1023, -1, -1) if c not in self.allowed))
        for args in [("idle",), ("spin", "3-1"), ("spin", "0,0"), ("spin", "x"),
                     ("spin", "4095"), ("spin", str(not_allowed)), ("spin", [self.cpu] * 2),
                     ("qos", str(self.cpu)), ("none", "", True), ("none", "", False, 99),
                     ("none", "", False, 100001), ("spin", "", False, -1)]:
            with self.assertRaises(ValueError, msg=str(args)):
                mimodet.cpu_keep_awake(*args)
            self.assertEqual(spinners(), {}, args)
        self.assertEqual(mimodet.cpu_keep_awake.parse_cpu_list("0-2,5"), [0, 1, 2, 5])
        self.assertEqual(mimodet.cpu_keep_awake.parse_cpu_list(""), [])
        self.assertEqual(mimodet.cpu_keep_awake.allowed_cpus(), self.allowed)

    def test_005_qos_and_none(self):
        if os.access("/dev/cpu_dma_latency", os.W_OK):
            with mimodet.cpu_keep_awake("qos") as k:
                self.assertTrue(k.active())
                self.assertEqual(k.cpus(), [])
                self.assertEqual(spinners(), {})
        else:
            with self.assertRaisesRegex(RuntimeError, "cpu_dma_latency"):
                mimodet.cpu_keep_awake("qos")
        k = mimodet.cpu_keep_awake("none")
        self.assertFalse(k.active())
        self.assertEqual(spinners(), {})

    def test_006_grc_block(self):
        # Keep CPUs Awake in a flowgraph: grcc writes its make line for both modes, and
        # the generated flowgraph runs with its threads confined to the CPU given.
        if shutil.which("grcc") is None:
            self.skipTest("grcc not found")
        import yaml
        tmp = tempfile.mkdtemp(prefix="mimodet_qa_keep_awake_")
        try:
            blks = [
                ("awake", "mimodet_keep_awake",
                 dict(mode="'spin'", cpus=str(self.cpu), confine="True")),
                ("awake_off", "mimodet_keep_awake",
                 dict(mode="'none'", cpus="0-5", confine="True")),
                ("src", "blocks_vector_source_x",
                 dict(type="float", vector="list(range(100))", repeat="False", tags="[]",
                      vlen=1)),
                ("dst", "blocks_vector_sink_x", dict(type="float", vlen=1,
                                                     reserve_items=1024)),
            ]
            grc = os.path.join(tmp, "keep_awake_fg.grc")
            with open(grc, "w") as f:
                yaml.safe_dump(flowgraph("keep_awake_fg", blks, [("src", 0, "dst", 0)]), f)
            p = subprocess.run(["grcc", "-o", tmp, grc], env=grc_env(), capture_output=True,
                               text=True, timeout=180)
            self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
            with open(os.path.join(tmp, "keep_awake_fg.py")) as f:
                src = f.read()
            self.assertIn("mimodet.cpu_keep_awake('spin', '%d', True)" % self.cpu, src)
            self.assertIn("mimodet.cpu_keep_awake('none')", src)
            code = textwrap.dedent("""
                import os, sys
                sys.path.insert(0, %r)
                import keep_awake_fg as m
                tb = m.keep_awake_fg()
                print("CPUS", sorted(os.sched_getaffinity(0)), tb.awake.active(),
                      tb.awake_off.active())
                tb.run()
                print("DATA", list(tb.dst.data()) == list(map(float, range(100))))
                """) % tmp
            p = subprocess.run([sys.executable, "-c", code], env=grc_env(),
                               capture_output=True, text=True, timeout=180)
            self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-3000:])
            self.assertIn("CPUS [%d] True False" % self.cpu, p.stdout)
            self.assertIn("DATA True", p.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_007_slice_for_every_thread(self):
        if os.uname().machine != "x86_64":
            self.skipTest("the test reads slices with x86_64's syscall number")
        before = {t: slice_ns(t) for t in fair_threads()}
        default = slice_ns(threading.get_native_id())
        try:
            k = mimodet.cpu_keep_awake("none", slice_us=250)
        except RuntimeError as e:  # a kernel before 6.12: said so, nothing changed
            self.assertIn("Linux 6.12", str(e))
            self.assertEqual({t: slice_ns(t) for t in fair_threads()}, before)
            self.skipTest(str(e))
        self.assertEqual(k.slice_us(), 250)
        self.assertFalse(k.active())  # none keeps no CPU awake; the slice is apart
        for t in fair_threads():
            self.assertEqual(slice_ns(t), 250000, t)
        # Threads started later inherit it: a Python thread, and a flowgraph's.
        got = []
        th = threading.Thread(target=lambda: got.append(slice_ns(threading.get_native_id())))
        th.start()
        th.join()
        self.assertEqual(got, [250000])
        before_tb = set(threads())
        tb = gr.top_block()
        src = blocks.null_source(gr.sizeof_float)
        thr = blocks.throttle(gr.sizeof_float, 1e5)
        tb.connect(src, thr, blocks.null_sink(gr.sizeof_float))
        tb.start()
        try:
            time.sleep(0.05)
            new = [t for t in fair_threads() if t not in before_tb]
            self.assertGreater(len(new), 0)
            for t in fair_threads():
                self.assertEqual(slice_ns(t), 250000, t)
        finally:
            tb.stop()
            tb.wait()
        k.stop()
        for t in fair_threads():
            self.assertEqual(slice_ns(t), default, t)
        # With spin: the spinners keep SCHED_IDLE, the others get the slice.
        with mimodet.cpu_keep_awake("spin", [self.cpu], slice_us=100) as k:
            self.assertEqual(list(spinners().values()), [{self.cpu}])
            for t in fair_threads():
                self.assertEqual(slice_ns(t), 100000, t)
        for t in fair_threads():
            self.assertEqual(slice_ns(t), default, t)


if __name__ == "__main__":
    gr_unittest.run(qa_cpu_keep_awake)
