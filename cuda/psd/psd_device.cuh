/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Device pieces shared by the two CUDA PSD searches (psd_cuda.cu: the paper's Algorithm
// 3; psd_se_cuda.cu: the depth-first search): the received vector's rotation, the bits
// of a decision, the deadline's clock, and the preprocessing launcher.

#ifndef INCLUDED_MIMODET_CUDA_PSD_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_PSD_DEVICE_CUH

#include "cuda/common/cuda_memory.h"
#include "cuda/common/device_math.cuh"
#include "detect/rounded_math.h"
#include <cuda_runtime.h>
#include <cstdint>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

//! Real levels of the largest system (8 antennas).
constexpr int k_psd_max_n = 2 * k_max_ant;

//! z_k = (Q^T y_r)_k, the CPU's summation order.
MIMODET_HD inline double psd_rotate(const double* qt, const float2* yv, int nrx)
{
    double acc = 0.0;
    for (int i = 0; i < nrx; ++i)
        acc = rn_add(acc,
                     rn_add(rn_mul(qt[i], static_cast<double>(yv[i].x)),
                            rn_mul(qt[nrx + i], static_cast<double>(yv[i].y))));
    return acc;
}

//! Hard bits of a decision: best (sorted-PAM index per row of the search), undo the
//! column permutation perm, pair the I and Q PAM labels (label[j]: label of level j).
MIMODET_HD inline void psd_bits_of(int N,
                                   int nt,
                                   int q,
                                   const int* label,
                                   const uint8_t* best,
                                   const uint8_t* perm,
                                   uint8_t* out)
{
    int real_label[k_psd_max_n];
    for (int k = 0; k < N; ++k)
        real_label[perm[k]] = label[best[k]];
    const int nb = q / 2;
    for (int t = 0; t < nt; ++t) {
        const int il = real_label[t], ql = real_label[nt + t];
        for (int b = 0; b < q; ++b) {
            const int lab = (b & 1) ? ql : il;
            out[t * q + b] = static_cast<uint8_t>((lab >> (nb - 1 - b / 2)) & 1);
        }
    }
}

//! The GPU's nanosecond global timer (the clock of the deadline).
__device__ inline unsigned long long psd_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

//! The call's start (one thread per block or warp calls it): the first caller of the
//! call claims the zeroed word with its own time, every later one reads that time.
__device__ inline unsigned long long psd_call_start(unsigned long long* call_start)
{
    const unsigned long long now = psd_globaltimer();
    const unsigned long long old = atomicCAS(call_start, 0ull, now);
    return old != 0 ? old : now;
}

/*!
 * Host side of a PSD detector's deadline clock and streams: the device word that holds
 * the call's start (psd_call_start), armed before each chunk's search kernels, and the
 * streams its chunks have used (each stream gets its own counters and scratch).
 */
class psd_call_clock
{
public:
    //! budget_ns 0: no deadline (arm() does nothing).
    explicit psd_call_clock(unsigned long long budget_ns);
    ~psd_call_clock();
    psd_call_clock(const psd_call_clock&) = delete;
    psd_call_clock& operator=(const psd_call_clock&) = delete;

    /*!
     * Before a chunk's search kernels on stream s. A call's chunks are launched in order,
     * chunk 0 (first) first: it zeroes the start word, and the other chunks' streams wait
     * for that, so no block of this call sees the previous call's start. The previous
     * call has completed (its results were collected), so nothing of it reads the word.
     */
    void arm(cudaStream_t s, bool first);
    unsigned long long budget_ns() const { return d_budget_ns; }
    unsigned long long* start() const { return d_start.get(); }

    //! Index of stream s among the streams seen (a new one is appended), < max; throws
    //! std::logic_error past max.
    int stream_index(cudaStream_t s, int max);

private:
    const unsigned long long d_budget_ns;
    cudaEvent_t d_armed = nullptr; //!< the call's start word has been zeroed
    device_buffer<unsigned long long> d_start;
    std::vector<cudaStream_t> d_streams;
};

/*!
 * The PSD's preprocessing of n_mat channel matrices (nrx x nt) on stream s: the real
 * model's QR (sorted: qr.cc's qr_sorted step for step), R (N x N), Q^T (N x 2 nrx) and the
 * column permutation (k_psd_max_n entries) per matrix; with w (not null) also the
 * depth-first search's row weights psd_se_weight(R_kk, inv_scale) (N per matrix), once
 * per matrix instead of once per vector. one_thread: the one-thread-per-matrix kernel
 * for every shape (the reference of the lane-parallel one).
 */
void launch_psd_preprocess(cudaStream_t s,
                           const float2* H,
                           int n_mat,
                           int nrx,
                           int nt,
                           bool sorted,
                           double* R,
                           double* Qt,
                           uint8_t* perm,
                           double* w,
                           double inv_scale,
                           bool one_thread = false);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_PSD_DEVICE_CUH */
