#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the algorithm registry as Python and GRC see it: mimodet.algorithms() and
mimodet.algorithm_soft() are the library's registry, and every GRC block's algorithm
dropdown, its "(soft)" labels, its soft-output assert and its backend dropdown agree
with it (GRC cannot call the library, so its YAML is held to the registry here)."""

import ast
import glob
import os
import re

import yaml
from gnuradio import gr_unittest

from gnuradio import mimodet

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GRC = os.path.join(REPO, "grc")


def block_parameters(path):
    with open(path) as f:
        block = yaml.safe_load(f)
    return block, {p["id"]: p for p in block.get("parameters", [])}


def algorithm_blocks():
    """(file name, block, parameters) of every GRC block with an algorithm dropdown."""
    found = []
    for path in sorted(glob.glob(os.path.join(GRC, "*.block.yml"))):
        block, params = block_parameters(path)
        if "options" in params.get("algorithm", {}):
            found.append((os.path.basename(path), block, params))
    return found


class qa_algorithm_registry(gr_unittest.TestCase):
    def test_001_python_reads_the_registry(self):
        names = list(mimodet.algorithms())
        self.assertEqual(len(names), len(set(names)))
        self.assertIn("mmse", names)
        for name in names:
            d = mimodet.detector(name, 2, 2, "qpsk")
            self.assertEqual(d.soft, mimodet.algorithm_soft(name), name)
        with self.assertRaisesRegex(ValueError, "unknown algorithm 'viterbi'") as cm:
            mimodet.algorithm_soft("viterbi")
        for name in names:
            self.assertIn(name, str(cm.exception))

    def test_002_backend_strings(self):
        cfg = mimodet.detector_config()
        self.assertEqual(cfg.backend, "cpu")
        for name in ("cpu", "cuda", "auto"):
            cfg.backend = name
            self.assertEqual(cfg.backend, name)
        with self.assertRaisesRegex(ValueError,
                                    "unknown backend 'tpu'.*cpu, cuda or auto"):
            cfg.backend = "tpu"
        self.assertEqual(cfg.backend, "auto")  # a refused name leaves the value

    def test_003_grc_algorithm_dropdowns_are_the_registry(self):
        blocks = algorithm_blocks()
        self.assertGreaterEqual(len(blocks), 2)  # mimo_detector, mimo_receiver
        registry = sorted(mimodet.algorithms())
        for name, _, params in blocks:
            p = params["algorithm"]
            options = [str(o) for o in p["options"]]
            self.assertEqual(sorted(options), registry, name)
            self.assertEqual(len(options), len(set(options)), name)
            self.assertIn(str(p["default"]).strip("'\""), options, name)
            # A label says "(soft)" exactly for the soft algorithms.
            labels = p.get("option_labels", [])
            self.assertEqual(len(labels), len(options), name)
            for alg, label in zip(options, labels):
                self.assertEqual("(soft)" in str(label), mimodet.algorithm_soft(alg),
                                 "%s: %s labelled %r" % (name, alg, label))

    def test_004_grc_soft_output_asserts_name_the_hard_algorithms(self):
        hard = sorted(a for a in mimodet.algorithms() if not mimodet.algorithm_soft(a))
        pattern = re.compile(r"not soft_output or algorithm not in (\([^)]*\))")
        for name, block, params in algorithm_blocks():
            if "soft_output" not in params:
                continue
            found = [pattern.search(str(a)) for a in block.get("asserts", [])]
            found = [m for m in found if m]
            self.assertEqual(len(found), 1, "%s: no soft_output assert" % name)
            self.assertEqual(sorted(ast.literal_eval(found[0].group(1))), hard, name)

    def test_005_grc_backend_dropdowns_parse(self):
        for path in sorted(glob.glob(os.path.join(GRC, "*.block.yml"))):
            _, params = block_parameters(path)
            p = params.get("backend")
            if not p or "options" not in p:
                continue
            cfg = mimodet.detector_config()
            for option in p["options"]:
                cfg.backend = str(option)  # ValueError for a name the library refuses
                self.assertEqual(cfg.backend, str(option))
            self.assertIn(str(p["default"]).strip("'\""), [str(o) for o in p["options"]])

    def test_006_single_algorithm_blocks_name_registered_algorithms(self):
        # mimodet_<algorithm>_detector.block.yml: a block for one algorithm.
        for path in glob.glob(os.path.join(GRC, "mimodet_*_detector.block.yml")):
            alg = re.match(r"mimodet_(\w+)_detector\.block\.yml", os.path.basename(path))
            if alg.group(1) == "mimo":
                continue
            self.assertIn(alg.group(1), mimodet.algorithms(), path)

    def test_007_grc_gpu_device_beside_every_backend(self):
        # Every block with a backend takes the CUDA device: an int parameter (default 0,
        # hidden with the CPU backend), asserted >= 0 and passed by both templates.
        found = 0
        for path in sorted(glob.glob(os.path.join(GRC, "*.block.yml"))):
            block, params = block_parameters(path)
            if "backend" not in params:
                continue
            found += 1
            name = os.path.basename(path)
            p = params.get("device")
            self.assertIsNotNone(p, "%s: no device parameter" % name)
            self.assertEqual(p["dtype"], "int", name)
            self.assertEqual(str(p["default"]).strip("'\""), "0", name)
            self.assertIn("backend == 'cpu'", str(p.get("hide", "")), name)
            self.assertIn("${ device >= 0 }", [str(a) for a in block.get("asserts", [])], name)
            self.assertIn("device=${device}", block["templates"]["make"], name)
            self.assertIn("${device}", block["cpp_templates"]["make"], name)
            self.assertIn("GPU device:", block["documentation"], name)
        self.assertGreaterEqual(found, 3)  # mimo_detector, mimo_receiver, channel_estimator

if __name__ == "__main__":
    gr_unittest.run(qa_algorithm_registry)
