#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The keyword-argument fronts of the detector factory and of the slot blocks that take a
detector (mimo_detector, mimo_receiver)."""

import numbers

from .mimodet_python import block_detector_config, detector_config
from .mimodet_python import make_detector, mimo_detector, mimo_receiver
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
    "device": "device",
    "deadline_us": "psd_deadline_us",
    "budget": "psd_node_budget",
    "start_rows": "psd_start_rows",
    "radius": "psd_radius",
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
    "device": "int",
    "deadline_us": "float",
    "budget": "int",
    "start_rows": "int",
    "radius": "float",
}

_PSD_RULES = (
    "lvl = [2*n_tx+1, ..., 1] strictly decreasing from the root (2*n_tx+1) to the leaves "
    "(1); exp has one entry per lvl entry but the last, exp[0] = 1, and 1 <= exp[x] <= "
    "exp[x-1] * sqrt(M)**(lvl[x-1] - lvl[x]) (the paths kept at level lvl[x]); the "
    "default for n_tx=%d, %s: lvl=%s, exp=%s. mimodet.psd_presets() lists the paper's "
    "sets and the defaults")


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _checked(who, name, value):
    """value as the detector_config field wants it; TypeError naming who and name
    otherwise."""
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
        raise TypeError("%s: %s must be a %s, got %r (%s)"
                        % (who, name, kind, value, type(value).__name__))
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
      device     CUDA device index of backend "cuda" or "auto" (default 0; one
                 carrier per GPU on a machine with several). "cuda": RuntimeError
                 for an index without a device; "auto": the CPU then. "cpu"
                 ignores it; ValueError where negative
      deadline_us PSD real-time budget per detect call in microseconds (0 = none,
                 exact ML): vectors still searching when it is spent end with the
                 best decision found so far, flagged in the 'truncated' stats
                 (detect_bits(..., return_stats=True))
      budget     PSD node budget: the most path metrics one vector's search may
                 compute (-1, the default: a budget per configuration that
                 realistic inputs almost never reach, docs/RELIABILITY.md; 0:
                 none, the unbounded exact search); a vector that reaches it ends
                 with its best decision so far, flagged 'truncated'
      start_rows PSD depth-first search: rows whose every combination, with
                 successive interference cancellation below, gives the search a
                 starting bound; the same decisions, other node counts and speed
                 (-1, the default: the backend's own; 0: none; else 1..8; all
                 2 n_tx rows of at most 256 leaves enumerate them first)
      radius     PSD depth-first search: starting radius as a multiple of
                 n_rx * noise_var, doubled until the best leaf lies well inside
                 it; the same decisions, other node counts and speed (-1, the
                 default: the backend's own, CPU 1.5, CUDA none; 0: none; a
                 value > 0 runs on the CPU only)
    LLRs are finite, saturated at +-1e10; the 'flags' stats of detect_bits and
    detect_llr(..., return_stats=True) mark a rank-deficient or zero H (1) and a
    saturated LLR (2), docs/CONVENTIONS.md.
    Raises TypeError for a parameter of the wrong type, ValueError for an invalid
    configuration.
    """
    cfg = _config("detector()", algorithm, n_tx, n_rx, modulation, backend, params)
    try:
        return make_detector(cfg)
    except ValueError as e:
        _raise_with_psd_rule(e, cfg)
        raise


def _config(who, algorithm, n_tx, n_rx, modulation, backend, params):
    """The detector_config of a factory's arguments (who: the factory, for the errors):
    TypeError for an argument of the wrong type or an unknown keyword, ValueError for an
    unknown modulation. The values are checked when a detector is made."""
    for name, value in (("algorithm", algorithm), ("backend", backend)):
        if not isinstance(value, str):
            raise TypeError("%s: %s must be a str, got %r" % (who, name, value))
    for name, value in (("n_tx", n_tx), ("n_rx", n_rx)):
        if not _is_int(value):
            raise TypeError("%s: %s must be an int, got %r (%s)"
                            % (who, name, value, type(value).__name__))
    if not isinstance(modulation, (str, _modulation_enum)):
        raise TypeError("%s: modulation must be 'qpsk', '16qam', '64qam' or a "
                        "mimodet.modulation, got %r" % (who, modulation))
    if not isinstance(modulation, str):
        modulation = modulation_name(modulation)
    cfg = block_detector_config(algorithm, int(n_tx), int(n_rx), modulation, backend)
    for key, value in params.items():
        field = _PARAMS.get(key)
        if field is None:
            raise TypeError(
                "%s got an unexpected keyword argument '%s' (known: %s)"
                % (who, key, ", ".join(sorted(_PARAMS)))
            )
        setattr(cfg, field, _checked(who, key, value))
    return cfg


def _raise_with_psd_rule(e, cfg):
    """A ValueError about the PSD parameters again, with the rule and the defaults."""
    if "psd parameters" in str(e) or "psd_lvl" in str(e):
        d = psd_default(cfg.n_tx, cfg.mod)
        raise ValueError("%s. The rule: %s" % (e, _PSD_RULES % (
            cfg.n_tx, modulation_name(cfg.mod), d["lvl"], d["exp"]))) from None


def psd_default(n_tx, modulation="16qam", backend="cpu"):
    """The PSD parameters a detector uses when lvl and exp are left unset, as a dict
    {"lvl": [...], "exp": [...]}: the depth-first set (lvl = 2 n_tx + 1, ..., 1, exp all
    1), the default of every backend ("cpu", "cuda" or "auto")."""
    if backend not in ("cpu", "cuda", "auto"):
        raise ValueError("psd_default: backend must be 'cpu', 'cuda' or 'auto', got %r"
                         % (backend,))
    mod = parse_modulation(modulation) if isinstance(modulation, str) else modulation
    lvl, exp = psd_default_params(int(n_tx), mod)
    return {"lvl": list(lvl), "exp": list(exp)}


def snr_to_noise_var(snr_db, n_tx):
    """noise_var for a receive SNR in dB: SNR = n_tx / noise_var (unit-energy symbols,
    unit-variance channel taps), as in docs/CONVENTIONS.md."""
    return n_tx / (10.0 ** (snr_db / 10.0))


# The slot blocks' positional parameters in order, and the defaults of those that have
# one. After soft_output every parameter is a keyword.
_BLOCK_POSITIONAL = ("algorithm", "bandwidth_mhz", "n_tx", "n_rx", "modulation", "cell_id",
                     "backend", "soft_output")
_BLOCK_DEFAULTS = {"modulation": "16qam", "backend": "cpu"}
# The parameters of the config-taking make besides the config (mimo_receiver adds its own).
_BLOCK_OWN = ("bandwidth_mhz", "cell_id", "soft_output")


def _keyword_face(cls, block_only):
    """Gives the block class cls, bound with the config-taking make (config,
    bandwidth_mhz, cell_id, soft_output, *block_only), its keyword face too. The
    detector is then built from the keywords as detector() builds it, so the two faces
    make the same block."""
    make = cls.__init__
    own = _BLOCK_OWN + tuple(block_only)
    name = cls.__name__

    def __init__(self, *args, config=None, **kw):
        who = name + "()"
        if args and isinstance(args[0], detector_config):
            if config is not None:
                raise TypeError("%s got the detector_config twice (positional and "
                                "config=)" % who)
            config, args = args[0], args[1:]
        names = own if config is not None else _BLOCK_POSITIONAL
        if len(args) > len(names):
            raise TypeError("%s takes at most %d positional arguments (%s), got %d; "
                            "the others are keywords" % (who, len(names), ", ".join(names),
                                                         len(args)))
        given = dict(zip(names, args))
        for key, value in kw.items():
            if key in given:
                raise TypeError("%s got multiple values for argument '%s'" % (who, key))
            given[key] = value
        known = set(_BLOCK_POSITIONAL) | set(own) | set(_PARAMS)
        for key in given:
            if key not in known:
                raise TypeError("%s got an unexpected keyword argument '%s' (known: "
                                "config, %s)" % (who, key, ", ".join(sorted(known))))
        block = {k: given.pop(k) for k in own if k in given}
        if "bandwidth_mhz" not in block:
            raise TypeError("%s missing required argument 'bandwidth_mhz'" % who)
        if config is None:
            for req in ("algorithm", "n_tx", "n_rx"):
                if req not in given:
                    raise TypeError("%s missing required argument '%s' (or config=, a "
                                    "mimodet.detector_config)" % (who, req))
            det = {k: given.pop(k, _BLOCK_DEFAULTS.get(k))
                   for k in ("algorithm", "n_tx", "n_rx", "modulation", "backend")}
            config = _config(who, det["algorithm"], det["n_tx"], det["n_rx"],
                             det["modulation"], det["backend"], given)
        elif given:
            raise TypeError("%s: with a detector_config the detector's parameters are the "
                            "config's; got %s too" % (who, ", ".join(sorted(given))))
        try:
            make(self, config, **block)
        except ValueError as e:
            _raise_with_psd_rule(e, config)
            raise

    __init__.__doc__ = (
        "%s(algorithm, bandwidth_mhz, n_tx, n_rx, modulation='16qam', cell_id=0, "
        "backend='cpu', soft_output=False, **params), or %s(config, bandwidth_mhz, "
        "cell_id=0, soft_output=False, ...) with a mimodet.detector_config.\n\n"
        "params: the detector's keywords as detector() takes them (%s)%s. The keyword "
        "face builds the detector_config as detector() does, so both faces make the same "
        "block. TypeError for an argument of the wrong type or an unknown keyword, "
        "ValueError for an invalid configuration.\n\n%s"
        % (name, name, ", ".join(sorted(_PARAMS)),
           "; block keywords: " + ", ".join(block_only) if block_only else "",
           make.__doc__ or ""))
    cls.__init__ = __init__


_keyword_face(mimo_detector, ("slot_limit_us",))
_keyword_face(mimo_receiver, ("est_threads", "time_domain", "fft_backoff", "pilot_ratio_db",
                              "slot_limit_us"))
