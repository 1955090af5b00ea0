#!/usr/bin/env python3
#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""QA of the emulated over-the-air link (docs/OTA.md): examples/ota_record.py writes what
a radio would deliver (EPA multipath, CFO, a sample-rate offset of tens of ppm, a timing
offset, an unknown start, receiver noise) to files, examples/ota_receive.py runs the
receiver from them. At 30 dB every slot must be found and decoded without a bit error.

About 15 s on a 2-core machine. Every case prints its numbers.
"""

import os
import subprocess
import sys
import tempfile

os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "error")

from gnuradio import gr_unittest  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "examples"))
import ota_receive  # noqa: E402
import ota_record  # noqa: E402


class qa_ota(gr_unittest.TestCase):

    def link(self, **kw):
        """Records with kw to a temporary directory, receives, checks the acceptance
        (every counted slot found from slot 0 on, no bit error, the CFO and sample-rate
        offset estimates) and returns the receiver's result."""
        with tempfile.TemporaryDirectory() as d:
            meta = ota_record.record(d, **kw)
            r = ota_receive.receive(d)
        msg = ("%g MHz %dx%d %s, CFO %g, SRO %g ppm, offset %d + start %d, seed %d"
               % (meta["bandwidth"], meta["n_tx"], meta["n_rx"], meta["modulation"],
                  meta["cfo"], meta["sro_ppm"], meta["timing_offset"], meta["lead"],
                  meta["seed"]))
        print("\n%s: slots %d/%d (first %s), BER %g over %d bits, CFO est %.4f, SRO est "
              "%.2f ppm (applied %.2f), resampling %s, %.1f s"
              % (msg, r["slots_found"], r["slots_sent"], r["first_slot"], r["ber"],
                 r["bits"], r["cfo"], r["sro_ppm"], meta["sro_ppm_effective"],
                 r["resampling"], r["seconds"]))
        self.assertEqual(r["first_slot"], 0, msg)
        self.assertEqual(r["slots_found"], r["slots_sent"], msg)
        self.assertEqual(r["slots_missing"], 0, msg)
        self.assertGreater(r["bits"], 0, msg)
        self.assertEqual(r["errors"], 0, msg)
        self.assertLess(abs(r["cfo"] - meta["cfo"]), 0.01, msg)
        self.assertLess(abs(r["sro_ppm"] - meta["sro_ppm_effective"]), 2.0, msg)
        return r, meta

    def test_001_qpsk_2x2_1p4mhz(self):
        r, _ = self.link(bandwidth=1.4, antennas=2, modulation="qpsk", snr_db=30, cfo=0.3,
                         sro_ppm=20, timing_offset=1234, slots=60, seed=1)
        # 20 ppm drifts 0.019 samples per 1.4 MHz slot: enough to switch resampling on.
        self.assertTrue(r["resampling"])

    def test_002_qpsk_2x2_5mhz(self):
        r, _ = self.link(bandwidth=5, antennas=2, modulation="qpsk", snr_db=30, cfo=-0.4,
                         sro_ppm=-8, timing_offset=777, slots=40, seed=2)
        self.assertTrue(r["resampling"])

    def test_003_16qam_2x4_1p4mhz(self):
        # 16QAM with two streams: four receive antennas (on 2x2 at 30 dB an uncoded
        # 16QAM subcarrier in an EPA fade errs whatever the receiver: docs/OTA.md).
        self.link(bandwidth=1.4, antennas=2, n_rx=4, modulation="16qam", snr_db=30,
                  cfo=0.45, sro_ppm=50, timing_offset=4321, slots=60, seed=3)

    def test_004_long_run_tracks_the_drift(self):
        # 400 slots (0.2 s) at 100 ppm: the receiver's input drifts by 19 samples, two
        # CPs, against the transmitter; every slot must still come through clean.
        r, meta = self.link(bandwidth=1.4, antennas=2, modulation="qpsk", snr_db=30,
                            cfo=0.2, sro_ppm=100, timing_offset=0, slots=400, seed=4)
        drift = 400 * meta["slot_samples"] * meta["sro_ppm_effective"] * 1e-6
        self.assertGreater(drift, 2 * 9)  # cp_other = 9 samples at 1.4 MHz
        self.assertTrue(r["resampling"])

    def test_005_command_line(self):
        env = dict(os.environ)
        with tempfile.TemporaryDirectory() as d:
            rec = [sys.executable, os.path.join(REPO, "examples", "ota_record.py"),
                   "--out", d, "--bandwidth", "1.4", "--antennas", "2", "--modulation",
                   "qpsk", "--snr", "30", "--cfo", "0.25", "--sro-ppm", "30",
                   "--timing-offset", "500", "--slots", "24", "--seed", "5"]
            p = subprocess.run(rec, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            for f in ("ota.json", "rx0.c64", "rx1.c64"):
                self.assertTrue(os.path.exists(os.path.join(d, f)), f)
            self.assertEqual(os.path.getsize(os.path.join(d, "rx0.c64")),
                             os.path.getsize(os.path.join(d, "rx1.c64")))
            p = subprocess.run([sys.executable,
                                os.path.join(REPO, "examples", "ota_receive.py"), d],
                               env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            lines = p.stdout.strip().splitlines()
            print("\n(command line) " + " | ".join(lines[-2:]))
            self.assertTrue(lines[-2].startswith("slots found 24/24, first slot 0, "
                                                 "missing 0"), lines[-2])
            parts = lines[-1].split()
            self.assertEqual((parts[0], parts[2], parts[4]), ("BER", "over", "bits"))
            self.assertEqual(float(parts[1]), 0.0)
            self.assertGreater(int(parts[3]), 0)

    def test_006_parameters(self):
        with tempfile.TemporaryDirectory() as d:
            for kw in (dict(seed=0), dict(slots=0), dict(modulation="8psk"),
                       dict(sro_ppm=5000), dict(timing_offset=-1), dict(lead_max=-1)):
                with self.assertRaises(ValueError, msg=str(kw)):
                    ota_record.record(d, **kw)
            with self.assertRaises((OSError, ValueError)):
                ota_receive.receive(os.path.join(d, "missing"))


if __name__ == "__main__":
    gr_unittest.run(qa_ota)
