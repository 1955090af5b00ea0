/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Parameters of the parallel sphere detector (PSD paper, Table 1 notation), shared by
// the CPU and CUDA kernels: plain C++ only (no Eigen, no GNU Radio types).
//
// The tree is the real-valued one of Eq. 3: N = 2 n_tx levels, level N (the last column
// of R) detected first, level 1 last; every level takes |Omega| = sqrt(M) PAM values.
//
// How the user passes them (detector_config::psd_lvl / psd_exp):
//   lvl = { lvl_0, lvl_1, ..., lvl_nr }  with lvl_0 = N+1 (the root), strictly
//         decreasing, lvl_nr = 1 (the leaves); partial vectors are evaluated (and
//         buffered) only on the levels lvl_1..lvl_nr, the levels in between are
//         expanded jointly (|Omega|^(lvl_(x-1) - lvl_x) children per parent).
//   exp = { exp_0, exp_1, ..., exp_(nr-1) }  with exp_0 = 1 (the root) and
//         1 <= exp_x <= eval_x: how many of the best (sorted) partial vectors of level
//         lvl_x are expanded together. There is no exp for the leaf level.
//   eval_x = exp_(x-1) * |Omega|^(lvl_(x-1) - lvl_x) is the buffer size of level lvl_x.
// Both empty: the fastest exact setting, the depth-first set on both backends
// (psd_cpu_tuned: every level evaluated, exp all 1, a Schnorr-Euchner search) on a sorted
// QR; each backend runs it with its own defaults (the CPU's starting radius, the GPU's
// enumeration and spread searches). The paper's sets (Table 2, Table 5) and the
// H100-tuned Algorithm 3 sets are given by value.

#ifndef INCLUDED_MIMODET_CORE_PSD_PARAMS_H
#define INCLUDED_MIMODET_CORE_PSD_PARAMS_H

#include <cstdint>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

struct psd_params {
    std::vector<int> lvl; //!< lvl_0 = N+1 > lvl_1 > ... > lvl_nr = 1
    std::vector<int> exp; //!< exp_0 = 1, exp_1 .. exp_(nr-1)
};

//! A parameter set from the paper, with the system it was given for.
struct psd_paper_set {
    std::string name; //!< e.g. "table2-config4", "table5-4x4-omega4"
    int n_tx;         //!< antennas (N = 2 n_tx real levels)
    int omega;        //!< |Omega|: PAM levels per real dimension (2, 4, 8)
    psd_params params;
};

//! Largest buffer (eval_x) accepted, to keep the kernel's memory bounded.
constexpr int64_t psd_max_eval = int64_t(1) << 20;

//! eval_1 .. eval_nr (index 0 of the result is eval_1). Assumes lvl is decreasing.
std::vector<int64_t> psd_eval(const psd_params& p, int omega);

//! Checks p against Table 1 for n_tx antennas and |Omega| = omega; throws
//! std::invalid_argument naming the violated constraint.
void validate_psd_params(const psd_params& p, int n_tx, int omega);

//! Table 2 (configurations 1-6), as printed (see psd_params.cc for the paper's eval typos).
const std::vector<psd_paper_set>& psd_table2_configurations();

//! Table 5 (parameters optimised for 20 dB on the GTX 690), one per (n_tx, omega).
const std::vector<psd_paper_set>& psd_table5_presets();

//! Scheme for systems Table 5 does not cover: one evaluated level per complex antenna
//! (lvl = N+1, N-1, ..., 3, 1), exp all 1, so eval_x = |Omega|^2 = M everywhere.
psd_params psd_default_params(int n_tx);

//! Table 5's set for (n_tx, omega), else psd_default_params(n_tx).
psd_params psd_preset(int n_tx, int omega);

//! The paper's parameter search re-run on an H100 (apps/mimodet_psd_search, results in
//! docs/PERFORMANCE.md): the fastest set per (n_tx, omega) at 20 dB for the CUDA kernel.
const std::vector<psd_paper_set>& psd_gpu_presets();

//! psd_gpu_presets()' set for (n_tx, omega), else psd_preset() (`--psd-preset
//! h100-alg3`).
psd_params psd_gpu_preset(int n_tx, int omega);

//! The depth-first set, the default of both backends: every level evaluated (lvl = N+1,
//! N, ..., 1), exp all 1. PSD then is a depth-first Schnorr-Euchner sphere decoder
//! (sorted children, radius update).
psd_params psd_cpu_tuned(int n_tx);

//! True for lvl = N+1, N, ..., 1 with exp all 1 (the depth-first special case).
bool psd_is_depth_first(const psd_params& p);

//! Whether the PSD runs on a sorted QR: detector_config::sorted_qr = 1, or -1 (the
//! default) with the depth-first set, whose node counts a sorted QR cuts most. The paper's
//! sets keep the paper's plain QR by default.
bool psd_uses_sorted_qr(int sorted_qr, const psd_params& p);

//! Largest detector_config::psd_start_rows accepted.
constexpr int psd_max_start_rows = 8;

//! detector_config::psd_start_rows resolved for n_tx antennas and |Omega| = omega on the
//! CUDA backend (gpu) or the CPU: the rows of the depth-first search's starting bound
//! (psd_se_start_bound). -1: psd_se_start_rows; at most N = 2 n_tx rows and
//! psd_se_max_start_paths paths. Throws std::invalid_argument outside
//! -1..psd_max_start_rows. The one definition for the CPU and the CUDA PSD.
int psd_start_rows(int requested, int n_tx, int omega, bool gpu);

//! The CPU's default psd_radius (detector_config::psd_radius): measured fastest of 0.5-3
//! at 4x4 16QAM and 64QAM, 10 and 20 dB (docs/PERFORMANCE.md).
constexpr double psd_cpu_radius = 1.5;

//! Factor by which psd_radius grows where no leaf was found well inside it.
constexpr double psd_radius_growth = 2.0;

//! Searches below a radius before the last one without it (the radius having grown
//! 2^5 = 32 times): inputs far outside the noise (a wrong noise_var) cost a few short
//! searches, not one per doubling.
constexpr int psd_radius_tries = 6;

//! Relative margin below the radius that a leaf's metric must keep for the bounded
//! search's decision to stand: far above the rounding that can reorder siblings of
//! nearly equal metric, so that a bound between them cannot change the decision.
constexpr double psd_radius_guard = 1e-9;

//! detector_config::psd_radius resolved for the CUDA backend (gpu) or the CPU: -1 the
//! backend's default (psd_cpu_radius on the CPU, 0 on CUDA), 0 none, else the value.
//! Throws std::invalid_argument for a value that is not -1, 0 or finite and > 0. The one
//! definition for both backends; the CUDA backend refuses a result > 0
//! (cuda_unsupported: backend 'auto' then takes the CPU).
double psd_radius(double requested, bool gpu);

//! User parameters (both empty: psd_cpu_tuned, the default of both backends) validated;
//! throws std::invalid_argument.
psd_params psd_resolve(const std::vector<int>& lvl,
                       const std::vector<int>& exp,
                       int n_tx,
                       int omega);

//! Largest PSD deadline accepted, in microseconds (1000 s: "no deadline" is 0, not a
//! huge value; the bound keeps the nanosecond count far from overflow).
constexpr double psd_max_deadline_us = 1e9;

//! detector_config::psd_deadline_us checked (finite, 0 <= us <= psd_max_deadline_us;
//! throws std::invalid_argument) and converted to nanoseconds, rounded up so that any
//! positive budget stays positive. 0: no deadline. The one definition for the CPU and
//! the CUDA PSD.
int64_t psd_deadline_ns(double deadline_us);

//! Largest explicit node budget accepted (vector_stats::evaluated is 32-bit).
constexpr int64_t psd_max_node_budget = 4000000000LL;

/*!
 * The default per-vector node budget (path metrics evaluated, vector_stats::evaluated)
 * for n_tx antennas and |Omega| = omega: large enough that realistic inputs at the SNRs
 * each configuration is used at almost never reach it (docs/RELIABILITY.md has the
 * measured tails), small enough that one pathological vector ends within a few
 * milliseconds on one CPU core.
 */
uint32_t psd_default_node_budget(int n_tx, int omega);

//! detector_config::psd_node_budget resolved: -1 the default above, 0 none (0 returned:
//! the unbounded exact search), else the value; throws std::invalid_argument outside
//! -1..psd_max_node_budget. The one definition for the CPU and the CUDA PSD.
uint32_t psd_node_budget(int64_t requested, int n_tx, int omega);

//! "{9, 6, 4, 1}" style text for messages and test names.
std::string psd_to_string(const std::vector<int>& v);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_PSD_PARAMS_H */
