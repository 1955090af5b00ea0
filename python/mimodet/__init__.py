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

from .mimodet_python import *  # noqa: F401,F403
from .mimodet_python import detector_config, make_detector, modulation
from .api import detector, psd_default, snr_to_noise_var  # noqa: F401
