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

#include "../lib/core/rounded_math.h"
#include "device_math.cuh"
#include <cuda_runtime.h>
#include <cstdint>

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
 * The PSD's preprocessing of n_mat channel matrices (nrx x nt) on stream s: the real
 * model's QR (sorted: qr.cc's qr_sorted step for step), R (N x N), Q^T (N x 2 nrx) and the
 * column permutation (k_psd_max_n entries) per matrix. one_thread: the one-thread-per-
 * matrix kernel for every shape (the reference of the lane-parallel one).
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
                           bool one_thread = false);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_PSD_DEVICE_CUH */
