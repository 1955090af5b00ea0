#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""
gr-mimodet: MIMO-OFDM detection (exact ML and near-ML) on CPU and CUDA GPUs.

Batch detection API::

    from gnuradio import mimodet
    det = mimodet.detector("psd", n_tx=4, n_rx=4, modulation="16qam", backend="cpu")
    bits = det.detect_bits(H, y, noise_var)   # H (B, n_rx, n_tx) complex64
    llr = det.detect_llr(H, y, noise_var)     # soft detectors: sfsd, mtt, ml, zf, mmse

See docs/CONVENTIONS.md for the system model, SNR, bit order and LLR sign/scale.

GNU Radio blocks of the LTE-style slot chain (docs/SLOT_LAYOUT.md): slot_framer,
mimo_channel, ofdm_sync, ofdm_demod, channel_estimator, mimo_detector, mimo_receiver
(estimator + detector in one block); numerology and grid map: lte_numerology, lte_grid.
Helpers: gnuradio.mimodet.loopback (the whole link as a top block, BER counters, the ZF
constellation helper) and
gnuradio.mimodet.gui_probes (throughput meter), used by examples/ (examples/README.md).
"""


def _wrong_interpreter(err):
    """An ImportError naming the fix when this Python can't load the extension.

    The extension is built for one interpreter, GNU Radio's (CMake's PYTHON_EXECUTABLE,
    /usr/bin/python3 on Debian). Another python3 first on PATH (pyenv, a venv, conda)
    either has no gnuradio.gr, and the extension's initialisation fails with the bare
    "initialization failed", or is another Python version, and the extension is not
    found at all. Returns None when neither is the cause."""
    import glob
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    built = sorted(
        os.path.basename(f) for f in glob.glob(os.path.join(here, "mimodet_python*.so"))
    )
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    if built and not any(f == "mimodet_python" + s for f in built for s in suffixes):
        why = "its extension module (%s) was built for another Python version" % ", ".join(built)
    else:
        try:
            found = importlib.util.find_spec("gnuradio.gr") is not None
        except ImportError:
            found = False
        if found:
            return None
        why = "this Python cannot import GNU Radio (gnuradio.gr)"
    return ImportError(
        "gnuradio.mimodet cannot be loaded by %s (Python %d.%d): %s (%s). Run it with GNU "
        "Radio's Python, the interpreter the module was built with (CMake's "
        "PYTHON_EXECUTABLE; /usr/bin/python3 on Debian), e.g. /usr/bin/python3 script.py; "
        "build and install with -DPYTHON_EXECUTABLE=<that python> to use another one."
        % (sys.executable, sys.version_info[0], sys.version_info[1], why, err)
    )


try:
    from .mimodet_python import *  # noqa: F401,F403
    from .mimodet_python import detector_config, make_detector, modulation
except ImportError as _err:
    _hint = _wrong_interpreter(_err)
    if _hint is None:
        raise
    raise _hint from _err
# api also gives mimo_detector and mimo_receiver their keyword face (algorithm, ...,
# **params) next to the bound config-taking one (config, bandwidth_mhz, ...).
from .api import detector, psd_default, snr_to_noise_var  # noqa: F401

del _wrong_interpreter
