/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The per-thread steps of the CUDA MTT (mtt_cuda.cu), __host__ __device__ so that a host
// harness can replay a thread block step by step and compare with the CPU MTT
// (lib/core/mtt.cc) without a GPU. Every step performs the CPU's operations in the
// CPU's order, and every arg-min keeps the first minimum, as the CPU does: the GPU then
// follows the same trellis paths and its LLRs differ only by rounding.
//
// Thread v of a received vector plays two roles at each stage: path v of the reduced
// survivors (it evaluates the Q outgoing edges of its path: one row of the Q x Q weight
// matrix) and vertex v of the next stage (it takes the minimum over one column of the
// weights: the edge reduction). Row minima give the first extension of the current
// candidate list, so every weight is computed once (journal Sec. 5).

#ifndef INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH

#include "../lib/core/llr.h" // maxlog_llr, the CPU's LLR rule
#include "device_math.cuh"
#include <math.h>

namespace gr {
namespace mimodet {
namespace core {
namespace { // each translation unit its own copy (as device_math.cuh)

//! Rows of a survivor residual that another thread may need: a reduction at position
//! pn reads rows 0..pn-1, pn <= n_tx-2.
template <int NT>
struct mtt_rows {
    static constexpr int value = NT > 1 ? NT - 1 : 1;
};

/*!
 * Stage 0 (position p = n_tx-1) for vertex label x: the single edge from the root.
 * Returns the metric |z_p - R(p,p) x|^2; res[0..p-1] = z - R(0..p-1, p) x.
 */
template <int NT>
MIMODET_HD inline double
mtt_root(const double2* z, const double2* Rm, double2 x, double2* res)
{
    constexpr int p = NT - 1;
#pragma unroll
    for (int r = 0; r < p; ++r)
        res[r] = csub(z[r], cmul(Rm[r * NT + p], x));
    return cnorm(csub(z[p], cmul(Rm[p * NT + p], x)));
}

/*!
 * The Q weights of the edges leaving one path (metric dk, residual entry a at position
 * pn with diagonal rpp) into the vertices of position pn: w_row[q] = dk + |a - rpp x_q|^2
 * (Eq. 14). Returns the least weight, best_q its first label (the path's extension).
 */
MIMODET_HD inline double mtt_edge_row(double2 a,
                                      double dk,
                                      double2 rpp,
                                      const double2* pts,
                                      int M,
                                      double* w_row,
                                      int& best_q)
{
    double best = INFINITY;
    best_q = 0;
    for (int q = 0; q < M; ++q) {
        const double2 dv = cmul(rpp, pts[q]);
        const double er = a.x - dv.x;
        const double ei = a.y - dv.y;
        const double e = dk + (er * er + ei * ei);
        w_row[q] = e;
        if (e < best) {
            best = e;
            best_q = q;
        }
    }
    return best;
}

/*!
 * Edge reduction (Eq. 9) at vertex q: the least weight of column q of the M x M weight
 * matrix (row stride `stride`), arg_k its first (lowest) incoming path, as the CPU.
 */
MIMODET_HD inline double
mtt_column_min(const double* w, int stride, int q, int M, int& arg_k)
{
    double best = INFINITY;
    arg_k = 0;
    for (int k = 0; k < M; ++k) {
        const double e = w[k * stride + q];
        if (e < best) {
            best = e;
            arg_k = k;
        }
    }
    return best;
}

//! dst[r] = src[r] - R(r,p) x for the rows r < p (may alias).
template <int NT>
MIMODET_HD inline void
mtt_cancel(const double2* src, const double2* Rm, int p, double2 x, double2* dst)
{
#pragma unroll
    for (int r = 0; r < NT; ++r)
        if (r < p)
            dst[r] = csub(src[r], cmul(Rm[r * NT + p], x));
}

/*!
 * One unshared path extension (Eqs. 10-11) at position ps: the best outgoing edge of
 * the path with residual ext (first label on ties); cancels it from ext and returns its
 * weight.
 */
template <int NT>
MIMODET_HD inline double
mtt_extend_step(double2* ext, const double2* Rm, int ps, const double2* pts, int M)
{
    const double2 a = ext[ps];
    const double2 rpp = Rm[ps * NT + ps];
    double best = INFINITY;
    int best_q = 0;
    for (int q = 0; q < M; ++q) {
        const double2 dv = cmul(rpp, pts[q]);
        const double er = a.x - dv.x;
        const double ei = a.y - dv.y;
        const double e = er * er + ei * ei;
        if (e < best) {
            best = e;
            best_q = q;
        }
    }
    mtt_cancel<NT>(ext, Rm, ps, pts[best_q], ext);
    return best;
}

//! Per-bit minima of bit b (b0 = label MSB) over the list metrics d[0..M-1].
MIMODET_HD inline void
mtt_bit_minima(const double* d, int M, int q, int b, double& m0, double& m1)
{
    m0 = INFINITY;
    m1 = INFINITY;
    const int shift = q - 1 - b;
    for (int v = 0; v < M; ++v) {
        const double x = d[v];
        if ((v >> shift) & 1)
            m1 = x < m1 ? x : m1;
        else
            m0 = x < m0 ? x : m0;
    }
}

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH */
