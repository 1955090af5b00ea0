/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Parameters of the fixed-complexity sphere decoder (FSD, Barbero & Thompson 2008) and
// its soft-output extension (SFSD, Barbero, Ratnarajah & Cowan 2008), as implemented by
// Roger et al. 2012 ("An efficient GPU implementation of fixed-complexity sphere
// decoders"). Plain C++ (no Eigen) so the CUDA backend can share the same rules.
//
// Tree: n_tx complex levels, detected from the last column of the ordered R (level
// n_tx-1) down to level 0. The first T detected levels are fully expanded (all M
// children), the remaining n_tx-T levels are single-expanded by SIC (Eq. 6), giving M^T
// paths. The SFSD takes the N_iter best of them and, at every single-expanded level,
// branches off one new path per flipped bit, completed by SIC again: N_iter*q*(n_tx-T)
// extra paths (the paper's P = M + N_iter log2(M) (n_T-1) for T = 1).

#ifndef INCLUDED_MIMODET_CORE_FSD_COMMON_H
#define INCLUDED_MIMODET_CORE_FSD_COMMON_H

#include "util/host_device.h"
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

//! 1/R(k,k) for a SIC slicer, or 0 where R(k,k) vanishes (rank-deficient H; scale =
//! max |R(i,j)|): the slicer then sees 0 and any symbol costs the same at that level, so
//! the choice is harmless and finite. One rule for the FSD, the SFSD and the MTT's
//! extensions, on the CPU (qr.h sic_inverse_diagonal) and in their CUDA kernels.
#ifdef __CUDACC__
__host__ __device__
#endif
inline double sic_inverse(double rkk, double scale)
{
    return rkk > 1e-13 * scale ? 1.0 / rkk : 0.0;
}

/*!
 * The ridge added to the diagonal of H_rem^H H_rem in the FSD ordering (qr.h
 * fsd_ordering, and its CUDA twin in fsd_device.cuh), from its largest diagonal entry
 * max_diag: it keeps a rank-deficient channel from producing NaNs and does not change
 * the order of a well-conditioned one. Relative to max_diag, so that scaling H leaves the
 * order as it is; for an all-zero H (max_diag 0) any positive value does (every order
 * is the same).
 */
#ifdef __CUDACC__
__host__ __device__
#endif
inline double fsd_ordering_ridge(double max_diag)
{
    return max_diag > 0.0 ? 1e-12 * max_diag : 1.0;
}

//! Default number of fully expanded levels (the paper's examples; Eq. 7 asks for
//! T >= sqrt(n_tx) - 1, which T = 1 meets up to n_tx = 4).
constexpr int fsd_default_full_levels = 1;

//! Largest M^T accepted (same bound as exhaustive ML: the list is stored per vector).
constexpr long long fsd_max_paths = 262144; // 2^18

//! The paper's N_iter for a 4x4 system: 2, 4, 6 for QPSK, 16QAM, 64QAM.
inline int sfsd_default_niter(int bits_per_symbol)
{
    return bits_per_symbol == 2 ? 2 : bits_per_symbol == 4 ? 4 : 6;
}

//! Resolved FSD/SFSD parameters.
struct fsd_params {
    int full_levels;   //!< T, 0..n_tx (0: plain SIC; n_tx: exhaustive ML)
    int niter;         //!< N_iter (SFSD only; 0 for the hard FSD)
    long long n_paths; //!< M^T, the hard FSD's list size
    int n_extra;       //!< N_iter * q * (n_tx - T), the SFSD's added paths
};

/*!
 * Validates and resolves the parameters; throws std::invalid_argument.
 * full_levels: -1 or 0..n_tx. niter (soft only): -1 or 0..M^T; the default is
 * min(sfsd_default_niter(q), M^T) so that T = 0 (one path) stays valid.
 */
inline fsd_params
resolve_fsd_params(int n_tx, int bits_per_symbol, int full_levels, int niter, bool soft)
{
    const std::string who = soft ? "sfsd" : "fsd";
    if (n_tx < 1)
        throw std::invalid_argument("mimodet: " + who + " needs n_tx >= 1");
    if (bits_per_symbol != 2 && bits_per_symbol != 4 && bits_per_symbol != 6)
        throw std::invalid_argument("mimodet: " + who +
                                    " supports QPSK, 16QAM and 64QAM only");
    fsd_params p{};
    p.full_levels = full_levels == -1 ? std::min(fsd_default_full_levels, n_tx) : full_levels;
    if (p.full_levels < 0 || p.full_levels > n_tx)
        throw std::invalid_argument(
            "mimodet: " + who + ": fsd_full_levels (T) must be -1 (default " +
            std::to_string(fsd_default_full_levels) + ") or in 0.." + std::to_string(n_tx) +
            " (0: plain SIC, n_tx: exhaustive ML); got " + std::to_string(full_levels));
    long long paths = 1;
    for (int t = 0; t < p.full_levels; ++t) {
        paths <<= bits_per_symbol;
        if (paths > fsd_max_paths)
            throw std::invalid_argument(
                "mimodet: " + who + ": M^T with T = " + std::to_string(p.full_levels) +
                " exceeds the limit of 2^18 (262144) paths; use a smaller "
                "fsd_full_levels");
    }
    p.n_paths = paths;
    if (soft) {
        if (niter == -1)
            p.niter = static_cast<int>(
                std::min<long long>(sfsd_default_niter(bits_per_symbol), paths));
        else if (niter < 0 || niter > paths)
            throw std::invalid_argument(
                "mimodet: sfsd: sfsd_niter (N_iter) must be -1 (default 2/4/6 for "
                "QPSK/16QAM/64QAM) or in 0.." +
                std::to_string(paths) + " (the M^T paths of the FSD list); got " +
                std::to_string(niter));
        else
            p.niter = niter;
        p.n_extra = p.niter * bits_per_symbol * (n_tx - p.full_levels);
    } else {
        p.niter = 0;
        p.n_extra = 0;
    }
    return p;
}

//! Complexity counters of one vector (vector_stats convention of the ML kernel:
//! expanded = nodes whose children were generated, evaluated = complete path metrics).
//! Hard FSD: the full tree over T levels, then one SIC child per level and path.
inline void fsd_counts(int n_tx,
                       int bits_per_symbol,
                       const fsd_params& p,
                       unsigned& expanded,
                       unsigned& evaluated)
{
    const long long M = 1LL << bits_per_symbol;
    const int se_levels = n_tx - p.full_levels;
    long long nodes = 0, level_nodes = 1;
    for (int t = 0; t < p.full_levels; ++t, level_nodes *= M)
        nodes += level_nodes;
    nodes += p.n_paths * se_levels;
    long long leaves = p.n_paths;
    // SFSD: per base path and single-expanded level, the branching node is expanded again
    // (q children) and each new path needs one SIC expansion per level below it.
    nodes += static_cast<long long>(p.niter) *
             (se_levels + bits_per_symbol * static_cast<long long>(se_levels) *
                              (se_levels - 1) / 2);
    leaves += p.n_extra;
    expanded = static_cast<unsigned>(nodes);
    evaluated = static_cast<unsigned>(leaves);
}

/*!
 * SFSD's order of its FSD paths when it picks the N_iter best for the list extension
 * (CPU and GPU): by metric, exact ties to the lower path index, NaN metrics (non-finite
 * input) after every number. A strict total order, so that each rank is taken by one path
 * (the GPU's threads write the selection by rank) and std::partial_sort is defined.
 */
MIMODET_HD inline bool sfsd_path_before(double ma, int a, double mb, int b)
{
    const bool nan_a = !(ma == ma), nan_b = !(mb == mb);
    if (nan_a || nan_b)
        return nan_a == nan_b ? a < b : nan_b;
    return ma < mb || (ma == mb && a < b);
}

/*!
 * sfsd_path_before as integers (the GPU's selection compares these): a key per metric
 * that orders like the metrics, -0 and +0 one key, every NaN one key above +inf; then
 * path a is before path b exactly when sfsd_key_before(key(ma), a, key(mb), b).
 */
MIMODET_HD inline uint64_t sfsd_rank_key(double m)
{
    constexpr uint64_t k_sign = 0x8000000000000000ULL;
    if (!(m == m))
        return 0xfff8000000000000ULL; // above +inf's 0xfff0...
    const double z = m + 0.0;         // -0 + 0 = +0
    uint64_t u;
#ifdef __CUDA_ARCH__
    u = static_cast<uint64_t>(__double_as_longlong(z));
#else
    std::memcpy(&u, &z, sizeof u);
#endif
    return (u & k_sign) ? ~u : (u | k_sign); // negatives reversed, below positives
}

//! Path a (key ka) before path b (key kb): by key, equal keys by index. kb is at most the
//! NaN key, so kb + 1 does not wrap.
MIMODET_HD inline bool sfsd_key_before(uint64_t ka, int a, uint64_t kb, int b)
{
    return ka < kb + (a < b ? 1u : 0u);
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_FSD_COMMON_H */
