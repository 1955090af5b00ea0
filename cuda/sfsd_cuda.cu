/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA soft-output fixed-complexity sphere decoder (Roger et al. 2012, Sections 3-4,
// Algorithms 2-3). The FSD ordering and QR run once per channel matrix (the FSD's
// preprocessing kernel, fsd_device.cuh); then one kernel does, per block of received
// vectors, what the paper splits into two kernels, so that the list never leaves shared
// memory:
//   1. every one of the M^T FSD branches of every vector gets a thread (fsd_branch, as
//      the hard FSD); metrics and labels go to shared memory;
//   2. the N_iter best branches of each vector are selected by rank (one thread per
//      branch counts the branches before it);
//   3. the N_iter * q * (n_tx - T) extension candidates (one bit flipped on one SIC
//      level of a selected path, SIC below) get one thread each;
//   4. one thread per bit turns the per-bit minima into max-log LLRs.
// Steps 1 and 3 fold each path into the per-bit minima with shared-memory atomicMin on
// the metric's bit pattern (metrics are >= 0, where the IEEE order is the integer
// order): a minimum does not depend on the order of the folds, so the result is
// deterministic.
//
// The algorithm is the CPU's (lib/core/sfsd.cc): same list, same summation order of the
// PEDs, same LLR rule (llr.h maxlog_llr: clipping, missing counter-hypotheses), all in
// double precision so that the LLRs match to rounding and their signs (the hard bits)
// are the CPU's. Ties among the N_iter best: the lower branch index (the CPU's
// depth-first enumeration order) comes first.

#include "../lib/core/llr.h"
#include "fsd_device.cuh"
#include "sfsd_cuda.h"
#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_sfsd_threads = 256; // threads per detection block (always)
// Shared memory per block kept at or below this, so that 8 blocks (2048 threads) fit
// on one SM; only T = 0 with many bits per vector gets fewer vectors per block for it.
constexpr size_t k_sfsd_smem_target = 24 * 1024;
// Bit pattern of +inf: the initial per-bit minimum, above every finite metric.
constexpr unsigned long long k_inf_bits = 0x7ff0000000000000ULL;

// ---------------------------------------------------------------- per-vector math

MIMODET_HD inline unsigned long long double_bits(double x)
{
#ifdef __CUDA_ARCH__
    return static_cast<unsigned long long>(__double_as_longlong(x));
#else
    unsigned long long u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}

MIMODET_HD inline double bits_double(unsigned long long u)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double(static_cast<long long>(u));
#else
    double x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

//! *slot = min(*slot, metric) on bit patterns (metric >= 0 or NaN; a NaN never wins,
//! as with the CPU's "metric < slot").
MIMODET_HD inline void min_into(unsigned long long* slot, double metric)
{
    const unsigned long long u = double_bits(metric);
#ifdef __CUDA_ARCH__
    atomicMin(slot, u);
#else
    if (u < *slot)
        *slot = u;
#endif
}

/*!
 * Folds one complete path (labels packed 6 bits per ordered level) into the per-bit
 * minima of its vector: mins[k*q + b] for bit b of level k equal to 0, mins[nb + ...]
 * for 1 (sfsd.cc add_candidate, in ordered levels; the transmit order is restored when
 * the LLRs are written).
 */
MIMODET_HD inline void
fold_path(unsigned long long* mins, int nt, int q, unsigned long long lab, double metric)
{
    const int nb = nt * q;
    for (int k = 0; k < nt; ++k) {
        const int label = static_cast<int>((lab >> (k_label_bits * k)) & 63);
        for (int b = 0; b < q; ++b) {
            const int bit = (label >> (q - 1 - b)) & 1;
            min_into(mins + bit * nb + k * q + b, metric);
        }
    }
}

/*!
 * Extension candidate (sfsd.cc extend_list): the base path's labels above level l, its
 * label at l with bit b flipped, SIC below l. The PED is accumulated from the top level
 * down in the CPU's order (base PEDs, then the flipped level, then the SIC levels), so
 * the metric is the CPU's to rounding. lab gets the candidate's labels.
 */
template <int NT>
MIMODET_HD inline double sfsd_extension(const double2* z,
                                        const double2* Rm,
                                        const double* inv,
                                        const double2* pts,
                                        const double* pam,
                                        int q,
                                        unsigned long long base_lab,
                                        int l,
                                        int b,
                                        unsigned long long& lab)
{
    double2 sym[NT];
    lab = 0;
    double metric = 0.0;
#pragma unroll
    for (int k = NT - 1; k >= 0; --k) {
        double2 res = z[k];
#pragma unroll
        for (int j = k + 1; j < NT; ++j)
            res = csub(res, cmul(Rm[k * NT + j], sym[j]));
        const double rkk = Rm[k * NT + k].x;
        const int base = static_cast<int>((base_lab >> (k_label_bits * k)) & 63);
        int label;
        if (k > l)
            label = base;
        else if (k == l)
            label = base ^ (1 << (q - 1 - b));
        else
            label = slice(cscale(res, inv[k]), pam, q);
        sym[k] = pts[label];
        metric += cnorm(csub(res, cscale(sym[k], rkk)));
        lab |= static_cast<unsigned long long>(label) << (k_label_bits * k);
    }
    return metric;
}

//! True when branch a (metric ma) comes before branch b in the CPU's N_iter selection:
//! smaller metric, then the lower index (depth-first enumeration order).
MIMODET_HD inline bool path_before(double ma, int a, double mb, int b)
{
    return ma < mb || (ma == mb && a < b);
}

//! Bytes of dynamic shared memory per vector of a block (layout in sfsd_detect_kernel).
inline size_t sfsd_smem_per_vector(int nt, int q, int n_paths, int niter)
{
    return sizeof(double2) * nt                                      // y'
           + sizeof(unsigned long long) * 2 * nt * q                 // per-bit minima
           + (sizeof(double) + sizeof(unsigned long long)) * n_paths // FSD list
           + sizeof(int) * niter;                                    // selected branches
}

// ---------------------------------------------------------------- kernel

/*!
 * Block of 256 threads for vpb vectors; every step is a loop over the block's work
 * items (branches, candidates, bits) with stride 256, so any M^T (1..1024) and any
 * N_iter fit the same block. Dynamic shared memory, per block:
 *   s_z[vpb][NT]          y' = Q^H y
 *   s_min[vpb][2][NT*q]   per-bit minima (bit patterns), ordered levels
 *   s_metric[vpb][P]      FSD branch metrics
 *   s_lab[vpb][P]         FSD branch labels (6 bits per level)
 *   s_sel[vpb][niter]     indices of the N_iter best branches, best first
 * NT is a template argument so that the symbol paths stay in registers.
 */
template <int NT>
__global__ void __launch_bounds__(k_sfsd_threads)
    sfsd_detect_kernel(const float2* __restrict__ y,
                       const double2* __restrict__ Qc,
                       const double2* __restrict__ R,
                       const double* __restrict__ inv_diag,
                       const unsigned char* __restrict__ perm,
                       const float* __restrict__ noise_var,
                       int n_vec,
                       int n_sym,
                       int nr,
                       int q,
                       int full_levels,
                       int n_paths,
                       int niter,
                       int vpb,
                       float llr_clip,
                       float* __restrict__ llr)
{
    extern __shared__ double2 s_mem[];
    const int nb = NT * q;
    double2* s_z = s_mem;
    unsigned long long* s_min = reinterpret_cast<unsigned long long*>(s_z + vpb * NT);
    double* s_metric = reinterpret_cast<double*>(s_min + vpb * 2 * nb);
    unsigned long long* s_lab =
        reinterpret_cast<unsigned long long*>(s_metric + vpb * n_paths);
    int* s_sel = reinterpret_cast<int*>(s_lab + vpb * n_paths);

    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;
    const int first_se = NT - 1 - full_levels; // highest SIC level (-1: none)
    const double2* pts = c_points + points_offset(q);
    const double* pam = c_pam + pam_offset(q);

    // --- 0: y' = Q^H y, minima at +inf, selection cleared (defined even for NaN).
    for (int idx = threadIdx.x; idx < vpb * NT; idx += k_sfsd_threads) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        if (gv < n_vec) {
            const long long m = gv / n_sym;
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
        }
        s_z[idx] = acc;
    }
    for (int idx = threadIdx.x; idx < vpb * 2 * nb; idx += k_sfsd_threads)
        s_min[idx] = k_inf_bits;
    for (int idx = threadIdx.x; idx < vpb * niter; idx += k_sfsd_threads)
        s_sel[idx] = 0;
    __syncthreads();

    // --- 1: the FSD branches, one per work item (consecutive threads, same vector).
    for (int idx = threadIdx.x; idx < vpb * n_paths; idx += k_sfsd_threads) {
        const int lv = idx / n_paths, p = idx % n_paths;
        const long long gv = vbase + lv;
        if (gv >= n_vec)
            continue;
        const long long m = gv / n_sym;
        unsigned long long lab;
        const double metric = fsd_branch<NT>(s_z + lv * NT,
                                             R + m * NT * NT,
                                             inv_diag + m * NT,
                                             pts,
                                             pam,
                                             q,
                                             full_levels,
                                             p,
                                             lab);
        s_metric[idx] = metric;
        s_lab[idx] = lab;
        fold_path(s_min + lv * 2 * nb, NT, q, lab, metric);
    }

    const int per_path = q * (first_se + 1); // candidates per selected path
    const int n_extra = niter * per_path;
    if (n_extra > 0) { // uniform over the grid
        __syncthreads();

        // --- 2: rank of each branch among its vector's; the first niter are kept.
        // Counting stops at niter, so most branches stop early.
        for (int idx = threadIdx.x; idx < vpb * n_paths; idx += k_sfsd_threads) {
            const int lv = idx / n_paths, p = idx % n_paths;
            if (vbase + lv >= n_vec)
                continue;
            const double* mv = s_metric + lv * n_paths;
            const double mp = mv[p];
            int rank = 0;
            for (int o = 0; o < n_paths && rank < niter; ++o)
                rank += path_before(mv[o], o, mp, p) ? 1 : 0;
            if (rank < niter)
                s_sel[lv * niter + rank] = p;
        }
        __syncthreads();

        // --- 3: extension candidates: path i of the selection, level l, bit b.
        for (int idx = threadIdx.x; idx < vpb * n_extra; idx += k_sfsd_threads) {
            const int lv = idx / n_extra, c = idx % n_extra;
            const long long gv = vbase + lv;
            if (gv >= n_vec)
                continue;
            const long long m = gv / n_sym;
            const int i = c / per_path, r = c % per_path;
            const int l = first_se - r / q, b = r % q;
            const unsigned long long base = s_lab[lv * n_paths + s_sel[lv * niter + i]];
            unsigned long long lab;
            const double metric = sfsd_extension<NT>(s_z + lv * NT,
                                                     R + m * NT * NT,
                                                     inv_diag + m * NT,
                                                     pts,
                                                     pam,
                                                     q,
                                                     base,
                                                     l,
                                                     b,
                                                     lab);
            fold_path(s_min + lv * 2 * nb, NT, q, lab, metric);
        }
    }
    __syncthreads();

    // --- 4: LLRs, one bit per work item, written in transmit order.
    for (int idx = threadIdx.x; idx < vpb * nb; idx += k_sfsd_threads) {
        const int lv = idx / nb, j = idx % nb;
        const long long gv = vbase + lv;
        if (gv >= n_vec)
            continue;
        const long long m = gv / n_sym;
        const int k = j / q, b = j % q;
        const unsigned long long* mins = s_min + lv * 2 * nb;
        const double inv_nv = 1.0 / static_cast<double>(noise_var[m]);
        // The minima only ever go down from k_inf_bits: each is +inf or a metric.
        llr[gv * nb + perm[m * k_max_ant + k] * q + b] = maxlog_llr(
            bits_double(mins[j]), bits_double(mins[nb + j]), inv_nv, llr_clip);
    }
}

// ---------------------------------------------------------------- detector

class sfsd_cuda_detector : public fsd_cuda_detector_base
{
public:
    sfsd_cuda_detector(const detector_config& cfg, const fsd_params& p)
        : fsd_cuda_detector_base(cfg, true, p)
    {
        const int q = static_cast<int>(cfg.mod);
        const int n_paths = static_cast<int>(p.n_paths);
        // About one branch per thread; fewer vectors where shared memory would limit
        // the blocks per SM (a single vector always fits: M^T <= 1024 is ~21 kB).
        d_vpb = std::max(1, k_sfsd_threads / n_paths);
        const size_t per_vec = sfsd_smem_per_vector(cfg.n_tx, q, n_paths, p.niter);
        while (d_vpb > 1 && d_vpb * per_vec > k_sfsd_smem_target)
            d_vpb /= 2;
        d_smem = d_vpb * per_vec;
    }

protected:
    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.n_vec > static_cast<size_t>(INT_MAX))
            throw std::invalid_argument("mimodet: sfsd cuda: chunk too large");
        const fsd_prep m = preprocess(s, c);
        const unsigned blocks = static_cast<unsigned>((c.n_vec + d_vpb - 1) / d_vpb);
        dispatch_nt(d_cfg.n_tx, "sfsd", [&](auto nt_c) {
            launch_nt<decltype(nt_c)::value>(blocks, s, c, m);
        });
    }

private:
    template <int NT>
    void launch_nt(unsigned blocks,
                   cudaStream_t s,
                   const chunk& c,
                   const fsd_prep& m)
    {
        sfsd_detect_kernel<NT>
            <<<blocks, k_sfsd_threads, d_smem, s>>>(c.y,
                                                    m.Q,
                                                    m.R,
                                                    m.inv,
                                                    m.perm,
                                                    c.noise_var,
                                                    static_cast<int>(c.n_vec),
                                                    c.n_sym,
                                                    d_cfg.n_rx,
                                                    static_cast<int>(d_cfg.mod),
                                                    d_params.full_levels,
                                                    static_cast<int>(d_params.n_paths),
                                                    d_params.niter,
                                                    d_vpb,
                                                    d_cfg.llr_clip,
                                                    c.llr);
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    int d_vpb = 1;     //!< vectors per block
    size_t d_smem = 0; //!< dynamic shared memory per block
};

} // namespace

detector::sptr make_sfsd_cuda_detector(const detector_config& cfg)
{
    const int q = static_cast<int>(cfg.mod);
    // One place for the SFSD rules: T and N_iter defaults and ranges, M^T's CPU limit.
    const fsd_params p =
        resolve_fsd_params(cfg.n_tx, q, cfg.fsd_full_levels, cfg.sfsd_niter, true);
    if (p.n_paths > sfsd_cuda_max_paths) {
        if (cfg.backend == "auto")
            return nullptr; // the CPU takes it
        throw std::invalid_argument(
            "mimodet: sfsd on CUDA supports at most " +
            std::to_string(sfsd_cuda_max_paths) +
            " branches M^T per vector; T = " + std::to_string(p.full_levels) + " with " +
            to_string(cfg.mod) + " gives " + std::to_string(p.n_paths) +
            " (use a smaller fsd_full_levels, or backend 'cpu' or 'auto')");
    }
    return std::make_shared<sfsd_cuda_detector>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
