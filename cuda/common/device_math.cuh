/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Device-side building blocks shared by the CUDA detectors: complex arithmetic in
// double2, the 36.211 constellations in constant memory and the slicers. Everything is
// __host__ __device__ where it can be, so the per-vector math can be checked against
// the CPU without a GPU. Each .cu file that includes it gets its own constant tables
// (no separable compilation), uploaded by its own upload_tables(): hence the anonymous
// namespace.

#ifndef INCLUDED_MIMODET_CUDA_DEVICE_MATH_CUH
#define INCLUDED_MIMODET_CUDA_DEVICE_MATH_CUH

#include "cuda/common/cuda_check.h"
#include "util/host_device.h"
#include <gnuradio/mimodet/constellation.h>
#include <cuda_runtime.h>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {
namespace { // each translation unit its own copy (constant tables)

// The per-matrix and per-branch math is host-callable too (MIMODET_HD), so it can be
// checked against the CPU FSD without a GPU.
// Per-matrix functions whose arrays only stay in registers once inlined into the kernel.
#define MIMODET_HD_INLINE __host__ __device__ __forceinline__


constexpr int k_max_ant = 8;
constexpr int k_label_bits = 6; // a packed label per level (q <= 6)

// All three 36.211 maps at once, so detectors of different modulations can coexist:
// points at offsets 0 (QPSK), 4 (16QAM), 20 (64QAM); PAM levels at 0, 2, 6.
__constant__ double2 c_points[4 + 16 + 64];
__constant__ double c_pam[2 + 4 + 8];

MIMODET_HD inline int points_offset(int q)
{
    return q == 2 ? 0 : q == 4 ? 4 : 20;
}
MIMODET_HD inline int pam_offset(int q)
{
    return q == 2 ? 0 : q == 4 ? 2 : 6;
}

// ---------------------------------------------------------------- complex helpers

MIMODET_HD inline double2 cadd(double2 a, double2 b)
{
    return make_double2(a.x + b.x, a.y + b.y);
}
MIMODET_HD inline double2 csub(double2 a, double2 b)
{
    return make_double2(a.x - b.x, a.y - b.y);
}
MIMODET_HD inline double2 cmul(double2 a, double2 b)
{
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
//! conj(a) * b
MIMODET_HD inline double2 cmulc(double2 a, double2 b)
{
    return make_double2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
MIMODET_HD inline double2 cscale(double2 a, double s)
{
    return make_double2(a.x * s, a.y * s);
}
MIMODET_HD inline double cnorm(double2 a)
{
    return a.x * a.x + a.y * a.y;
}

//! Nearest of the 2^NB PAM levels, first one on ties (constellation::slice_pam).
template <int NB>
MIMODET_HD inline int slice_pam(double x, const double* pam)
{
    int best = 0;
    double bd = fabs(x - pam[0]);
    MIMODET_UNROLL
    for (int l = 1; l < (1 << NB); ++l) {
        const double d = fabs(x - pam[l]);
        if (d < bd) {
            bd = d;
            best = l;
        }
    }
    return best;
}

/*!
 * constellation::slice for q = 2 NB bits: separable slicer, labels interleaved I/Q with
 * b0 first. The kernels are instantiated per modulation (dispatch_q), so the level scan
 * and the interleaving unroll into straight-line code.
 */
template <int NB>
MIMODET_HD inline int slice_nb(double2 x, const double* pam)
{
    const int il = slice_pam<NB>(x.x, pam);
    const int ql = slice_pam<NB>(x.y, pam);
    int label = 0;
    MIMODET_UNROLL
    for (int b = 0; b < NB; ++b) {
        label = (label << 1) | ((il >> (NB - 1 - b)) & 1);
        label = (label << 1) | ((ql >> (NB - 1 - b)) & 1);
    }
    return label;
}

//! slice_nb for q = 2, 4 or 6 bits; q is a constant wherever a kernel is instantiated
//! per modulation, and the choice folds away.
MIMODET_HD inline int slice(double2 x, const double* pam, int q)
{
    return q == 2   ? slice_nb<1>(x, pam)
           : q == 4 ? slice_nb<2>(x, pam)
                    : slice_nb<3>(x, pam);
}

//! y'_k = (Q^H y)_k from column k of Q.
MIMODET_HD inline double2 rotate_entry(const double2* qk, const float2* yv, int nr)
{
    double2 acc = make_double2(0.0, 0.0);
    for (int r = 0; r < nr; ++r)
        acc = cadd(acc, cmulc(qk[r], make_double2(yv[r].x, yv[r].y)));
    return acc;
}


/*!
 * Calls f(std::integral_constant<int, NT>{}) for NT = nt, so that a kernel templated on
 * the antenna count (symbol paths in registers) can be launched for a run-time n_tx.
 * Throws std::logic_error (naming `who`) outside 1..k_max_ant.
 */
template <typename F>
void dispatch_nt(int nt, const char* who, F&& f)
{
    switch (nt) {
    case 1:
        return f(std::integral_constant<int, 1>{});
    case 2:
        return f(std::integral_constant<int, 2>{});
    case 3:
        return f(std::integral_constant<int, 3>{});
    case 4:
        return f(std::integral_constant<int, 4>{});
    case 5:
        return f(std::integral_constant<int, 5>{});
    case 6:
        return f(std::integral_constant<int, 6>{});
    case 7:
        return f(std::integral_constant<int, 7>{});
    case 8:
        return f(std::integral_constant<int, 8>{});
    default:
        throw std::logic_error(std::string("mimodet: ") + who +
                               " cuda: n_tx out of range");
    }
}
static_assert(k_max_ant == 8, "dispatch_nt covers 1..8 transmit antennas");

/*!
 * Calls f(std::integral_constant<int, Q>{}) for the bits per symbol q = 2, 4 or 6, so
 * that a detection kernel is instantiated per modulation (its slicer, label loops and
 * constellation table sized at compile time). Throws std::logic_error (naming `who`)
 * for another q.
 */
template <typename F>
void dispatch_q(int q, const char* who, F&& f)
{
    switch (q) {
    case 2:
        return f(std::integral_constant<int, 2>{});
    case 4:
        return f(std::integral_constant<int, 4>{});
    case 6:
        return f(std::integral_constant<int, 6>{});
    default:
        throw std::logic_error(std::string("mimodet: ") + who +
                               " cuda: modulation out of range");
    }
}

/*!
 * Calls f(std::integral_constant<int, NT>{}, std::integral_constant<int, Q>{}) for
 * NT = nt and Q = q (dispatch_nt, dispatch_q): a kernel templated on both.
 */
template <typename F>
void dispatch_nt_q(int nt, int q, const char* who, F&& f)
{
    dispatch_nt(
        nt, who, [&](auto nt_c) { dispatch_q(q, who, [&](auto q_c) { f(nt_c, q_c); }); });
}

#ifdef __CUDACC__
/*!
 * Copies the 2^Q points of the modulation into a block's shared memory (the caller's
 * barrier publishes them). Threads index the points by their own labels; constant
 * memory serialises a warp's distinct addresses, shared memory serves them at once.
 */
template <int Q>
__device__ inline void load_points(double2* s_pts)
{
    for (int l = threadIdx.x; l < (1 << Q); l += blockDim.x)
        s_pts[l] = c_points[points_offset(Q) + l];
}
#endif

/*!
 * Calls f(std::integral_constant<int, NT>, std::integral_constant<int, NR>) with the
 * compile-time sizes of the LTE shapes 4x4, 2x2 and 2 tx x 4 rx, else with 0, 0 (the
 * run-time-sized code): how the preprocessing kernels pick their instantiation.
 */
template <class F>
inline void dispatch_prep_shape(int nt, int nr, const F& f)
{
    if (nt == 4 && nr == 4)
        f(std::integral_constant<int, 4>(), std::integral_constant<int, 4>());
    else if (nt == 2 && nr == 2)
        f(std::integral_constant<int, 2>(), std::integral_constant<int, 2>());
    else if (nt == 2 && nr == 4)
        f(std::integral_constant<int, 2>(), std::integral_constant<int, 4>());
    else
        f(std::integral_constant<int, 0>(), std::integral_constant<int, 0>());
}

// The constant tables are per device; every detector writes the same values.
void upload_tables(int device)
{
    static std::mutex mutex;
    static std::set<int> done;
    std::lock_guard<std::mutex> lock(mutex);
    if (done.count(device))
        return;
    std::vector<double2> pts;
    std::vector<double> pam;
    for (modulation mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        const constellation& c = constellation::get(mod);
        for (const auto& x : c.points())
            pts.push_back(make_double2(x.real(), x.imag()));
        for (double a : c.pam_levels())
            pam.push_back(a);
    }
    MIMODET_CUDA_CHECK(
        cudaMemcpyToSymbol(c_points, pts.data(), pts.size() * sizeof(double2)));
    MIMODET_CUDA_CHECK(
        cudaMemcpyToSymbol(c_pam, pam.data(), pam.size() * sizeof(double)));
    done.insert(device);
}

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
