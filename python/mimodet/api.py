#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The keyword-argument front of the detector factory."""

import numbers

from .mimodet_python import cuda_device_count, detector_config, make_detector
from .mimodet_python import modulation as _modulation_enum
from .mimodet_python import modulation_name, parse_modulation, psd_default_params

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
    "budget": "psd_node_budget",
}

# What each keyword takes, for a TypeError that names the parameter instead of
# pybind11's "incompatible function arguments".
_KINDS = {
    "lvl": "list of int",
    "exp": "list of int",
    "T": "int",
    "niter": "int",
    "sorted_qr": "int",
    "llr_clip": "float",
    "llr_scaled": "bool",
    "threads": "int",
    "deadline_us": "float",
    "budget": "int",
}

_PSD_RULES = (
    "lvl = [2*n_tx+1, ..., 1] strictly decreasing from the root (2*n_tx+1) to the leaves "
    "(1); exp has one entry per lvl entry but the last, exp[0] = 1, and 1 <= exp[x] <= "
    "exp[x-1] * sqrt(M)**(lvl[x-1] - lvl[x]) (the paths kept at level lvl[x]); the "
    "default for n_tx=%d, %s: lvl=%s, exp=%s. mimodet.psd_presets() lists the paper's "
    "sets and the defaults")


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _checked(name, value):
    """value as the detector_config field wants it; TypeError naming name otherwise."""
    kind = _KINDS[name]
    ok = True
    if kind == "list of int":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            ok = False
        else:
            value = list(value)
            ok = all(_is_int(v) for v in value)
            value = [int(v) for v in value] if ok else value
    elif kind == "int":
        ok = _is_int(value)
        value = int(value) if ok else value
    elif kind == "float":
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif kind == "bool":
        ok = isinstance(value, bool) or type(value).__name__ == "bool_"
        value = bool(value) if ok else value
    if not ok:
        raise TypeError("detector(): %s must be a %s, got %r (%s)"
                        % (name, kind, value, type(value).__name__))
    return value


def detector(algorithm, n_tx, n_rx, modulation="16qam", backend="cpu", **params):
    """Make a batch MIMO detector.

    algorithm: "ml", "zf", "mmse", "psd", "fsd", "sfsd" or "mtt".
    n_tx, n_rx: antennas (n_rx >= n_tx, up to 8).
    modulation: "qpsk", "16qam" or "64qam" (3GPP TS 36.211 maps).
    backend: "cpu", "cuda" or "auto" (GPU when one is present, else CPU).
    Keyword parameters (unset ones take the algorithm's default):
      lvl, exp   PSD tree levels and expansion counts (PSD paper, Table 1), lists
                 of int: lvl = [2*n_tx+1, ..., 1] strictly decreasing, exp one
                 entry per lvl entry but the last, exp[0] = 1; e.g. 4x4 16QAM
                 lvl=[9, 6, 4, 1], exp=[1, 4, 1]; unset: psd_default();
                 psd_presets() lists the paper's sets
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
      budget     PSD node budget: the most path metrics one vector's search may
                 compute (-1, the default: a budget per configuration that
                 realistic inputs almost never reach, docs/RELIABILITY.md; 0:
                 none, the unbounded exact search); a vector that reaches it ends
                 with its best decision so far, flagged 'truncated'
    LLRs are finite, saturated at +-1e10; the 'flags' stats of detect_bits and
    detect_llr(..., return_stats=True) mark a rank-deficient or zero H (1) and a
    saturated LLR (2), docs/CONVENTIONS.md.
    Raises TypeError for a parameter of the wrong type, ValueError for an invalid
    configuration.
    """
    for name, value in (("algorithm", algorithm), ("backend", backend)):
        if not isinstance(value, str):
            raise TypeError("detector(): %s must be a str, got %r" % (name, value))
    for name, value in (("n_tx", n_tx), ("n_rx", n_rx)):
        if not _is_int(value):
            raise TypeError("detector(): %s must be an int, got %r (%s)"
                            % (name, value, type(value).__name__))
    if not isinstance(modulation, (str, _modulation_enum)):
        raise TypeError("detector(): modulation must be 'qpsk', '16qam', '64qam' or a "
                        "mimodet.modulation, got %r" % (modulation,))
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
        setattr(cfg, field, _checked(key, value))
    try:
        return make_detector(cfg)
    except ValueError as e:
        if "psd parameters" in str(e) or "psd_lvl" in str(e):
            d = psd_default(cfg.n_tx, cfg.mod, cfg.backend)
            raise ValueError("%s. The rule: %s" % (e, _PSD_RULES % (
                cfg.n_tx, modulation_name(cfg.mod), d["lvl"], d["exp"]))) from None
        raise


def psd_default(n_tx, modulation="16qam", backend="cpu"):
    """The PSD parameters a detector uses when lvl and exp are left unset, as a dict
    {"lvl": [...], "exp": [...]}: the CPU's (the paper's Table 5 set, else one level per
    antenna) or, for backend "cuda" ("auto" with a GPU), the CUDA backend's."""
    mod = parse_modulation(modulation) if isinstance(modulation, str) else modulation
    gpu = backend == "cuda" or (backend == "auto" and cuda_device_count() > 0)
    lvl, exp = psd_default_params(int(n_tx), mod, gpu)
    return {"lvl": list(lvl), "exp": list(exp)}


def snr_to_noise_var(snr_db, n_tx):
    """noise_var for a receive SNR in dB: SNR = n_tx / noise_var (unit-energy symbols,
    unit-variance channel taps), as in docs/CONVENTIONS.md."""
    return n_tx / (10.0 ** (snr_db / 10.0))
