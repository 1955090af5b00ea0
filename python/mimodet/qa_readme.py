#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of what a newcomer copies from README.md and of the Python front's help:

- the README's Python snippet (its first ```python block, taken from README.md itself so
  that it cannot drift from the library) runs and gives sensible results;
- mimodet.psd_presets() lists the paper's parameter sets and the backends' defaults,
  and every set it lists makes a working detector;
- keyword parameters of the wrong type are refused with a message that names the
  parameter and the type it takes.
"""

import contextlib
import io
import os
import re

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

import numpy as np  # noqa: E402
from gnuradio import gr_unittest  # noqa: E402
from gnuradio import mimodet  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def readme_python_blocks():
    with open(os.path.join(REPO, "README.md")) as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)


class qa_readme(gr_unittest.TestCase):
    @staticmethod
    def _set(name):
        return [s for s in mimodet.psd_presets() if s["name"] == name][0]

    def _dict_params(self, name):
        s = self._set(name)
        return {"lvl": s["lvl"], "exp": s["exp"]}

    def test_001_readme_snippet_runs(self):
        blocks = readme_python_blocks()
        self.assertGreaterEqual(len(blocks), 1, "README.md has no ```python block")
        ns = {}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(blocks[0], "README.md (python block 1)", "exec"), ns)
        B, n_tx = ns["B"], ns["n_tx"]
        bits, llr, tx = ns["bits"], ns["llr"], ns["tx_bits"].reshape(B, -1)
        self.assertEqual(bits.shape, (B, n_tx * 4))
        self.assertEqual(bits.dtype, np.uint8)
        self.assertEqual(llr.shape, (B, n_tx * 4))
        self.assertEqual(llr.dtype, np.float32)
        # 4x4 16QAM at 20 dB: exact ML (psd) and sfsd leave well under 1 % bit errors; a
        # wrong bit order, sign or noise scale in the snippet gives about 50 %.
        self.assertLess(np.mean(bits != tx), 0.01)
        self.assertLess(np.mean((llr < 0) != tx), 0.01)
        self.assertIn("psd BER", out.getvalue())

    def test_002_hard_detector_refuses_llr_clearly(self):
        # What the README says: psd is hard only, detect_llr raises ValueError.
        det = mimodet.detector("psd", n_tx=2, n_rx=2, modulation="qpsk")
        H = np.eye(2, dtype=np.complex64)[None]
        y = np.ones((1, 2), np.complex64)
        with self.assertRaises(ValueError):
            det.detect_llr(H, y, 0.1)

    def test_003_psd_presets(self):
        sets = mimodet.psd_presets()
        names = [s["name"] for s in sets]
        self.assertEqual(len(names), len(set(names)), "preset names must be unique")
        kinds = {s["kind"] for s in sets}
        self.assertEqual(kinds, {"table2", "table5", "gpu", "cpu-tuned"})
        for s in sets:
            self.assertEqual(set(s), {"name", "kind", "n_tx", "omega", "lvl", "exp"})
            N = 2 * s["n_tx"]
            # Table 1's rules, checked independently of the C++ validation.
            self.assertEqual(s["lvl"][0], N + 1, s["name"])
            self.assertEqual(s["lvl"][-1], 1, s["name"])
            self.assertTrue(all(a > b for a, b in zip(s["lvl"], s["lvl"][1:])), s["name"])
            self.assertEqual(len(s["exp"]), len(s["lvl"]) - 1, s["name"])
            self.assertEqual(s["exp"][0], 1, s["name"])
        # Every set of Table 5, of the GPU search and the depth-first one (up to 4x4)
        # makes a detector that finds the ML decision; Table 2's are accepted.
        mods = {2: "qpsk", 4: "16qam", 8: "64qam"}
        for s in sets:
            if s["kind"] == "table2":
                mimodet.detector("psd", n_tx=s["n_tx"], n_rx=s["n_tx"],
                                 modulation=mods[s["omega"]], lvl=s["lvl"], exp=s["exp"])
        rng = np.random.default_rng(3)
        for s in sets:
            omega = s["omega"] or 4   # the depth-first sets ('cpu-tuned') fit any omega
            if s["kind"] == "table2" or s["n_tx"] > 4 or omega not in mods:
                continue
            n = s["n_tx"]
            det = mimodet.detector("psd", n_tx=n, n_rx=n, modulation=mods[omega],
                                   lvl=s["lvl"], exp=s["exp"])
            # The reference: exhaustive ML where its search is small enough, else the
            # depth-first PSD (itself checked against ml in qa_detector).
            if omega ** (2 * n) <= 1 << 18:
                ref = mimodet.detector("ml", n_tx=n, n_rx=n, modulation=mods[omega])
            else:
                ref = mimodet.detector("psd", n_tx=n, n_rx=n, modulation=mods[omega],
                                       **self._dict_params("cpu-tuned-%dtx" % n))
            H = ((rng.standard_normal((20, n, n)) + 1j * rng.standard_normal((20, n, n)))
                 / np.sqrt(2)).astype(np.complex64)
            y = ((rng.standard_normal((20, n)) + 1j * rng.standard_normal((20, n)))
                 ).astype(np.complex64)
            np.testing.assert_array_equal(det.detect_bits(H, y, 0.5),
                                          ref.detect_bits(H, y, 0.5), s["name"])

    def test_004_presets_are_read_only(self):
        # Every backend's default is the depth-first set.
        for backend in ("cpu", "cuda", "auto"):
            for mod in ("qpsk", "16qam", "64qam"):
                self.assertEqual(mimodet.psd_default(4, mod, backend),
                                 self._dict_params("cpu-tuned-4tx"), (backend, mod))
        with self.assertRaisesRegex(ValueError, "backend must be"):
            mimodet.psd_default(4, "16qam", "gpu")

        sets = mimodet.psd_presets()
        sets[0]["lvl"].append(99)
        self.assertNotIn(99, mimodet.psd_presets()[0]["lvl"])

    def test_005_wrong_types_name_the_parameter(self):
        cases = [
            (dict(lvl=5), "lvl", "list of int"),
            (dict(lvl=[9, 7, 5, 3, 1], exp="1,1,1,1"), "exp", "list of int"),
            (dict(lvl=[9.0, 7, 5, 3, 1], exp=[1, 1, 1, 1]), "lvl", "list of int"),
            (dict(threads="4"), "threads", "int"),
            (dict(deadline_us="50"), "deadline_us", "float"),
            (dict(llr_scaled="no"), "llr_scaled", "bool"),
        ]
        for kw, name, typ in cases:
            with self.assertRaises(TypeError, msg=str(kw)) as cm:
                mimodet.detector("psd", n_tx=4, n_rx=4, modulation="16qam", **kw)
            msg = str(cm.exception)
            self.assertIn(name, msg)
            self.assertIn(typ, msg)
        with self.assertRaises(TypeError) as cm:
            mimodet.detector("psd", n_tx="four", n_rx=4)
        self.assertIn("n_tx", str(cm.exception))
        # Right types still work, numpy integers included.
        det = mimodet.detector("psd", n_tx=np.int64(2), n_rx=2, modulation="qpsk",
                               lvl=np.array([5, 3, 1]), exp=(1, 4), threads=np.int32(1),
                               deadline_us=10)
        self.assertEqual(det.n_tx, 2)

    def test_006_psd_value_errors_say_the_rule(self):
        with self.assertRaises(ValueError) as cm:
            mimodet.detector("psd", n_tx=4, n_rx=4, modulation="16qam",
                             lvl=[9, 5, 7, 1], exp=[1, 1, 1])
        msg = str(cm.exception)
        self.assertIn("decreasing", msg)
        self.assertIn("psd_presets", msg)


if __name__ == "__main__":
    gr_unittest.run(qa_readme)
