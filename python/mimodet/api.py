#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The keyword-argument front of the detector factory."""

from .mimodet_python import detector_config, make_detector, parse_modulation

# Python keyword -> detector_config field. One table, so the names users type are
# defined in one place (the C++ fields are documented in detector.h).
_PARAMS = {
    "lvl": "psd_lvl",
    "exp": "psd_exp",
    "T": "fsd_full_levels",
    "niter": "sfsd_niter",
    "sorted_qr": "sorted_qr",
    "llr_clip": "llr_clip",
    "llr_scaled": "llr_scaled",
    "threads": "threads",
    "deadline_us": "psd_deadline_us",
}


def detector(algorithm, n_tx, n_rx, modulation="16qam", backend="cpu", **params):
    """Make a batch MIMO detector.

    algorithm: "ml", "zf", "mmse", "psd", "fsd", "sfsd" or "mtt".
    n_tx, n_rx: antennas (n_rx >= n_tx, up to 8).
    modulation: "qpsk", "16qam" or "64qam" (3GPP TS 36.211 maps).
    backend: "cpu", "cuda" or "auto" (GPU when one is present, else CPU).
    Keyword parameters (unset ones take the algorithm's default):
      lvl, exp   PSD tree levels and expansion counts (PSD paper, Table 1)
      T          FSD/SFSD fully expanded levels
      niter      SFSD list-extension iterations
      sorted_qr  PSD/MTT channel ordering: 1 sorted QR, 0 plain QR, -1 default
      llr_clip   LLR clipping magnitude (0 = off), in units of the scaled LLR
      llr_scaled True (default): LLRs scaled by 1/noise_var; False: raw metric
                 differences (noise_var times the scaled LLR) for decoders that
                 apply their own noise scaling
      threads    CPU worker threads (0 = all cores)
      deadline_us PSD real-time budget per detect call in microseconds (0 = none,
                 exact ML): vectors still searching when it is spent end with the
                 best decision found so far, flagged in the 'truncated' stats
                 (detect_bits(..., return_stats=True))
    LLRs are finite, saturated at +-1e10; the 'flags' stats of detect_bits and
    detect_llr(..., return_stats=True) mark a rank-deficient or zero H (1) and a
    saturated LLR (2), docs/CONVENTIONS.md.
    Raises ValueError for an invalid configuration.
    """
    cfg = detector_config()
    cfg.algorithm = algorithm
    cfg.n_tx = int(n_tx)
    cfg.n_rx = int(n_rx)
    cfg.mod = parse_modulation(modulation) if isinstance(modulation, str) else modulation
    cfg.backend = backend
    for key, value in params.items():
        field = _PARAMS.get(key)
        if field is None:
            raise TypeError(
                "detector() got an unexpected keyword argument '%s' (known: %s)"
                % (key, ", ".join(sorted(_PARAMS)))
            )
        setattr(cfg, field, value)
    return make_detector(cfg)


def snr_to_noise_var(snr_db, n_tx):
    """noise_var for a receive SNR in dB: SNR = n_tx / noise_var (unit-energy symbols,
    unit-variance channel taps), as in docs/CONVENTIONS.md."""
    return n_tx / (10.0 ** (snr_db / 10.0))
