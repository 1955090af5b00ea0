/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The per-thread steps of the CUDA MTT (mtt_cuda.cu). Every step performs the operations
// of the CPU MTT (lib/detect/mtt/mtt.cc) in its order (nvcc fuses some multiply-adds),
// and every arg-min keeps the first minimum, as the CPU does: the GPU then follows the
// same trellis paths and its LLRs differ only by rounding.
//
// Thread v of a received vector plays two roles at each stage: path v of the reduced
// survivors (it extends its path to the last stage, one slicer decision per position)
// and vertex v of the next stage (it evaluates the M incoming edges of the vertex and
// keeps the least: the edge reduction).

#ifndef INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH

#include "cuda/common/device_math.cuh"
#include "detect/llr.h" // maxlog_llr, the CPU's LLR rule
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
 * Path k's key for the edge reductions at position pn: w_k = d_k + |a_k|^2, its metric
 * plus the squared residual entry at pn (mtt_reduce).
 */
MIMODET_HD inline double mtt_reduce_key(double d, double2 a) { return d + cnorm(a); }

/*!
 * Edge reduction (Eq. 9) into vertex label x of position pn: the least weight
 * d_k + |a_k - u|^2, u = R(pn,pn) x, over the M paths k of the previous stage (keys
 * w[k] = mtt_reduce_key(d_k, a_k), residual entries at pn a[k * a_stride]), arg_k its
 * first (lowest) path, as the CPU. The weight is taken as w_k - 2 Re(conj(a_k) u), plus
 * |u|^2 once (the same for every k): two multiply-adds per edge instead of five
 * operations (the edge reductions are most of the MTT's arithmetic).
 */
MIMODET_HD inline double mtt_reduce(const double* w,
                                    const double2* a,
                                    int a_stride,
                                    double2 rpp,
                                    double2 x,
                                    int M,
                                    int& arg_k)
{
    const double2 u = cmul(rpp, x);
    const double mx = -2.0 * u.x, my = -2.0 * u.y; // exact
    double best = INFINITY;
    arg_k = 0;
    for (int k = 0; k < M; ++k) {
        const double2 ak = a[k * a_stride];
        const double e = w[k] + ak.y * my + ak.x * mx;
        if (e < best) {
            best = e;
            arg_k = k;
        }
    }
    return best + cnorm(u);
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
 * One path extension (Eqs. 10-11) at position ps: the path's best outgoing edge, the
 * point nearest ext[ps] / R(ps,ps) (inv = sic_inverse), as the CPU's
 * best_edge; cancels it from ext and returns its weight |ext[ps] - R(ps,ps) x|^2.
 */
template <int NT>
MIMODET_HD inline double mtt_extend_step(double2* ext,
                                         const double2* Rm,
                                         int ps,
                                         double inv,
                                         const double2* pts,
                                         const double* pam,
                                         int q)
{
    const double2 a = ext[ps];
    const double2 x = pts[slice(cscale(a, inv), pam, q)];
    const double2 dv = cmul(Rm[ps * NT + ps], x);
    const double er = a.x - dv.x;
    const double ei = a.y - dv.y;
    mtt_cancel<NT>(ext, Rm, ps, x, ext);
    return er * er + ei * ei;
}

/*!
 * Work split of the per-bit minima of a list of M = 2^q metrics: 2q columns (bit b,
 * hypothesis h: the M/2 metrics whose label has bit b = h), each scanned in `chunks`
 * pieces by adjacent threads (column c = 2b + h, piece k: thread c * chunks + k). chunks
 * is the largest power of two with 2q * chunks <= M, so the pieces of a column, and the
 * two columns of a bit, are lanes of one warp (for M <= 64).
 */
MIMODET_HD inline int mtt_bit_chunks(int q)
{
    int chunks = 1;
    while (2 * q * chunks * 2 <= (1 << q))
        chunks *= 2;
    return chunks;
}

/*!
 * Least of the metrics d[v] over the labels v whose bit b (b0 = label MSB) is h, for
 * the n labels starting at index i0 of that set (in increasing label order). A NaN never
 * wins, as with the CPU's std::min(m, d[v]).
 */
MIMODET_HD inline double
mtt_bit_partial(const double* d, int q, int b, int h, int i0, int n)
{
    const int shift = q - 1 - b;
    const int low = (1 << shift) - 1;
    double m = INFINITY;
    for (int i = i0; i < i0 + n; ++i) {
        const int v = ((i >> shift) << (shift + 1)) | (h << shift) | (i & low);
        const double x = d[v];
        m = x < m ? x : m;
    }
    return m;
}

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_MTT_DEVICE_CUH */
