/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD code shared by the CPU (lib/detect/psd/psd.cc) and the CUDA kernels
// (cuda/psd/psd_cuda.cu): __host__ __device__ under nvcc, plain inline C++ elsewhere (no
// Eigen).
//
//  - arithmetic through rounded_math.h (rn_mul, rn_add, rn_sub, rn_div): explicitly
//    rounded, so the GPU's metrics equal the CPU's to the last bit.
//  - psd_sic: the deadline fallback of both PSDs, the successive-interference-
//    cancellation (Babai) point of the search's own QR and ordering.

#ifndef INCLUDED_MIMODET_CORE_PSD_COMMON_H
#define INCLUDED_MIMODET_CORE_PSD_COMMON_H

#include "detect/rounded_math.h"

#include "util/host_device.h"

namespace gr {
namespace mimodet {
namespace core {

/*!
 * The SIC (Babai) point of the PSD's real-valued system z = R s + noise: for each real
 * level k = N-1 (the search's first, the last column of R) down to 0,
 *   c_k = (z_k - sum_{j > k} R_kj value[out_j]) / R_kk,
 * sliced to the nearest PAM level (value[], increasing; on a tie the lower one).
 * R_kk <= 0 or NaN (a column that carries nothing) gives c_k = 0; a NaN c_k gives
 * level 0. The interference is summed in increasing j, every operation explicitly
 * rounded, so the host and the device compute the same decision from the same R and z.
 *
 * R: N x N row-major (upper triangular, the search's R, positive diagonal); z: Q^T y_r;
 * value: the P PAM levels in increasing order (the search's sorted-PAM order); out: N
 * sorted-PAM indices, one per row (the layout of the search's best vector). Counts as
 * evaluated = N (one partial metric per level along the single path) and expanded = 0
 * (no node has its |Omega| children evaluated), the convention of both PSDs.
 */
template <typename Idx>
MIMODET_HD inline void
psd_sic(const double* R, const double* z, const double* value, int N, int P, Idx* out)
{
    for (int k = N - 1; k >= 0; --k) {
        double b = z[k];
        for (int j = k + 1; j < N; ++j)
            b = rn_sub(b, rn_mul(R[k * N + j], value[out[j]]));
        const double r = R[k * N + k];
        const double c = r > 0.0 ? rn_div(b, r) : 0.0;
        int best = 0;
        double bd = rn_sub(c, value[0]);
        bd = bd < 0.0 ? -bd : bd;
        for (int v = 1; v < P; ++v) {
            double d = rn_sub(c, value[v]);
            d = d < 0.0 ? -d : d;
            if (d < bd) {
                bd = d;
                best = v;
            }
        }
        out[k] = static_cast<Idx>(best);
    }
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_PSD_COMMON_H */
