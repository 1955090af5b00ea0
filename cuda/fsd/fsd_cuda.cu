/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA fixed-complexity sphere decoder (Roger et al. 2012, Section 4): the FSD ordering
// and QR run once per channel matrix (one thread per matrix), then the M^T branches of a
// received vector are shared among a few threads of one block (the paper gives each
// branch a thread; several a thread is faster, fsd_threads_log2), which share y' = Q^H y
// through shared memory, and the least metric is found with warp shuffles. The algorithm
// is the CPU's (lib/detect/fsd/fsd.cc, qr.cc):
//   - ordering: at each step the remaining stream with the largest (first T detected
//     levels) or smallest (the others) diagonal of (H_rem^H H_rem + ridge I)^-1;
//   - QR with real positive diagonal (unique, so Gram-Schmidt gives the CPU's R);
//   - SIC slicer on residual / R(k,k), with 1/R(k,k) = 0 where R(k,k) <= 1e-13 max|R|;
//   - among equal metrics the branch enumerated first (lowest index) wins.
// Everything is double precision: the test asks for the CPU's bits, and float rounding
// would flip SIC slicing decisions near region borders (and gained at most 1.05x at
// 16QAM, docs/PERFORMANCE.md).

#include "cuda/fsd/fsd_cuda.h"
#include "cuda/fsd/fsd_device.cuh"
#include "util/tuning.h"
#include <math_constants.h>
#include <climits>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_detect_threads = 256; // threads per detection block (always)

//! Blocks per SM the detection kernel for q bits per symbol is compiled for: 3 at 16QAM,
//! 2 at QPSK and 64QAM, the fastest of 2-5 for each on an H100 with the threads per
//! vector of fsd_threads_log2 (docs/PERFORMANCE.md).
template <int Q>
constexpr int k_fsd_detect_min_blocks = Q == 4 ? 3 : 2;

/*!
 * Threads per received vector (log2) for M^T = 2^paths_log2 branches of n_tx levels:
 * about n_tx M^T / 16 (some 16 level steps a thread), from 1 to 4. A thread that walks
 * several branches spreads its set-up (the vector's matrix, R's entries through L1) and
 * the vector's arg-min over fewer lanes: at 4x4 16QAM 4 threads of 4 branches ran 1.4x
 * as fast as 16 threads of one, at 64QAM 4 threads 1.7x 64 (docs/PERFORMANCE.md).
 */
inline int fsd_threads_log2(int nt, int paths_log2)
{
    const long long steps = (1LL << paths_log2) * nt;
    return steps >= 64 ? 2 : steps >= 32 ? 1 : 0;
}

/*!
 * Block of 256 threads = V vectors x tpv threads (fsd_threads_log2, or
 * MIMODET_FSD_THREADS up to min(M^T, 256)), each thread walks M^T / tpv branches (branch
 * index p = lane + i * tpv; p's base-M digits, most significant first, are the labels of
 * the fully expanded levels n_tx-1, n_tx-2, ...). Shared memory: y' = Q^H y of the
 * block's V vectors, the constellation, and one (metric, branch) pair per warp for
 * vectors that span several warps. NT is a template argument so that the symbol path
 * stays in registers, Q (bits per symbol) so that the slicer and the label loops unroll.
 */
template <int NT, int Q>
__global__ void __launch_bounds__(k_detect_threads, k_fsd_detect_min_blocks<Q>)
    fsd_detect_kernel(const float2* __restrict__ y,
                      const double2* __restrict__ Qc,
                      const double2* __restrict__ R,
                      const double* __restrict__ inv_diag,
                      const unsigned char* __restrict__ perm,
                      int n_vec,
                      const __grid_constant__ segment_map map,
                      int nr,
                      int full_levels,
                      int tpv_log2,
                      int paths_per_thread,
                      uint8_t* __restrict__ bits)
{
    constexpr int q = Q;
    __shared__ double2 s_z[k_detect_threads * NT];
    __shared__ double2 s_pts[1 << Q];
    __shared__ double s_warp_metric[k_detect_threads / 32];
    __shared__ int s_warp_path[k_detect_threads / 32];

    const int tpv = 1 << tpv_log2;
    const int vpb = k_detect_threads >> tpv_log2; // vectors per block
    const long long vbase = static_cast<long long>(blockIdx.x) * vpb;

    // y' = Q^H y, one entry per thread.
    for (int idx = threadIdx.x; idx < vpb * NT; idx += k_detect_threads) {
        const int lv = idx / NT, k = idx % NT;
        const long long gv = vbase + lv;
        double2 acc = make_double2(0.0, 0.0);
        if (gv < n_vec) {
            const long long m = map.matrix_of(gv);
            acc = rotate_entry(Qc + (m * NT + k) * nr, y + gv * nr, nr);
        }
        s_z[idx] = acc;
    }
    load_points<Q>(s_pts);
    __syncthreads();

    const int lv = threadIdx.x >> tpv_log2;
    const int lane = threadIdx.x & (tpv - 1);
    const long long gv = vbase + lv;
    const bool valid = gv < n_vec;
    const long long m = valid ? map.matrix_of(gv) : 0;
    double best = CUDART_INF;
    int best_p = INT_MAX;
    unsigned long long best_lab = 0;
    if (valid) {
        const double2* Rm = R + m * NT * NT;
        const double* inv = inv_diag + m * NT;
        const double* pam = c_pam + pam_offset(q);
        const double2* z = s_z + lv * NT;
        for (int i = 0; i < paths_per_thread; ++i) {
            const int p = lane + (i << tpv_log2);
            unsigned long long lab;
            const double metric =
                fsd_branch<NT>(z, Rm, inv, s_pts, pam, q, full_levels, p, lab);
            // Increasing p with strict "<": the lowest branch index wins ties (CPU
            // order).
            if (i == 0 || metric < best) {
                best = metric;
                best_p = p;
                best_lab = lab;
            }
        }
    }

    // Least (metric, branch index) over the vector's threads.
    const int my_p = best_p;
    const int width = tpv < 32 ? tpv : 32;
    for (int off = width >> 1; off > 0; off >>= 1) {
        const double om = __shfl_xor_sync(0xffffffffu, best, off);
        const int op = __shfl_xor_sync(0xffffffffu, best_p, off);
        if (om < best || (om == best && op < best_p)) {
            best = om;
            best_p = op;
        }
    }
    if (tpv > 32) { // uniform over the block
        const int warp = threadIdx.x >> 5;
        if ((threadIdx.x & 31) == 0) {
            s_warp_metric[warp] = best;
            s_warp_path[warp] = best_p;
        }
        __syncthreads();
        const int w0 = (lv << tpv_log2) >> 5, nw = tpv >> 5;
        best = s_warp_metric[w0];
        best_p = s_warp_path[w0];
        for (int w = w0 + 1; w < w0 + nw; ++w) {
            const double om = s_warp_metric[w];
            const int op = s_warp_path[w];
            if (om < best || (om == best && op < best_p)) {
                best = om;
                best_p = op;
            }
        }
    }

    // The owner of the winning branch writes its labels in transmit order.
    if (valid && my_p == best_p) {
        uint8_t* out = bits + gv * NT * q;
        const unsigned char* pm = perm + m * k_max_ant;
#pragma unroll
        for (int k = 0; k < NT; ++k) {
            const int label = static_cast<int>((best_lab >> (k_label_bits * k)) & 63);
            uint8_t* o = out + pm[k] * q;
            for (int b = 0; b < q; ++b)
                o[b] = static_cast<uint8_t>((label >> (q - 1 - b)) & 1);
        }
    }
}

// ---------------------------------------------------------------- detector

class fsd_cuda_detector : public fsd_cuda_detector_base
{
public:
    fsd_cuda_detector(const detector_config& cfg, const fsd_params& p)
        : fsd_cuda_detector_base(cfg, false, p)
    {
        const int q = static_cast<int>(cfg.mod);
        const int paths_log2 = q * p.full_levels; // M^T <= 1024 checked by the factory
        const int forced = tuning::fsd_threads(); // a power of two, or 0
        int forced_log2 = 0;
        while (forced >> (forced_log2 + 1))
            ++forced_log2;
        // 2^8 = k_detect_threads
        d_tpv_log2 =
            std::min(forced ? forced_log2 : fsd_threads_log2(cfg.n_tx, paths_log2),
                     std::min(paths_log2, 8));
        d_paths_per_thread = 1 << (paths_log2 - d_tpv_log2);
    }

protected:
    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.map.max_n_sym() > INT_MAX / k_detect_threads ||
            c.n_vec > static_cast<size_t>(INT_MAX))
            throw std::invalid_argument("mimodet: fsd cuda: chunk too large");
        const fsd_prep m = preprocess(s, c);
        const int vpb = k_detect_threads >> d_tpv_log2;
        const unsigned blocks = static_cast<unsigned>((c.n_vec + vpb - 1) / vpb);
        dispatch_nt_q(
            d_cfg.n_tx, static_cast<int>(d_cfg.mod), "fsd", [&](auto nt_c, auto q_c) {
                launch_nt<decltype(nt_c)::value, decltype(q_c)::value>(blocks, s, c, m);
            });
    }

private:
    template <int NT, int Q>
    void launch_nt(unsigned blocks, cudaStream_t s, const chunk& c, const fsd_prep& m)
    {
        fsd_detect_kernel<NT, Q>
            <<<blocks, k_detect_threads, 0, s>>>(c.y,
                                                 m.Q,
                                                 m.R,
                                                 m.inv,
                                                 m.perm,
                                                 static_cast<int>(c.n_vec),
                                                 c.map,
                                                 d_cfg.n_rx,
                                                 d_params.full_levels,
                                                 d_tpv_log2,
                                                 d_paths_per_thread,
                                                 c.bits);
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    int d_tpv_log2 = 0, d_paths_per_thread = 1;
};

} // namespace

detector::sptr make_fsd_cuda_detector(const detector_config& cfg)
{
    const int q = static_cast<int>(cfg.mod);
    // One place for the FSD rules: T's default and range, and M^T's CPU limit.
    const fsd_params p = resolve_fsd_params(cfg.n_tx, q, cfg.fsd_full_levels, -1, false);
    if (p.n_paths > fsd_cuda_max_paths) {
        throw cuda_unsupported(
            "mimodet: fsd on CUDA supports at most " +
            std::to_string(fsd_cuda_max_paths) +
            " branches M^T per vector; T = " + std::to_string(p.full_levels) + " with " +
            to_string(cfg.mod) + " gives " + std::to_string(p.n_paths) +
            " (use a smaller fsd_full_levels, or backend 'cpu' or 'auto')");
    }
    return std::make_shared<fsd_cuda_detector>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
