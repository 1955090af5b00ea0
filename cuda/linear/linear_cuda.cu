/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA linear detectors (zf, mmse) on the shared batch pipeline (batch_detector.h), two
// kernels per chunk:
//   - linear_prep_kernel, one thread per channel matrix: W (n_tx x n_rx), the per-stream
//     gain and post-equalisation variance, in double, with the code of
//     lib/detect/linear/linear_common.h: zf = R^-1 Q^H from a thin QR of H where the
//     shared rank rule (pivoted LDL^H of H^H H, the CPU takes the same decision) finds
//     full rank, else the minimum-norm pseudo-inverse of the rank truncation (the CPU's
//     code too); mmse = (H^H H + noise_var I)^-1 H^H by LDL^H, unbiased (gain mu_k = Re
//     (W H)_kk, variance (1 - mu_k) / mu_k);
//   - linear_detect_kernel, one thread per (received vector, stream): x_k = W_k y in
//     double, then the shared per-stream max-log demapper (linear::demap_stream, the
//     CPU's very code: maxlog_llr, clipping, LLR 0 for an unusable stream).
// The CPU's full-rank zf uses Eigen's complete orthogonal decomposition and its mmse
// Eigen's LDLT: the weights agree to rounding (about 1e-16 cond(H) for zf, 1e-16
// cond(H^H H + noise_var I) for mmse), so the LLRs agree far inside the tests' tolerance
// and their signs agree except for LLRs within rounding of 0.

#include "cuda/common/batch_detector.h"
#include "cuda/common/device_math.cuh"
#include "cuda/linear/linear_cuda.h"
#include "detect/linear/linear_common.h"
#include <climits>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr int k_prep_threads = 64;    // matrices per preprocessing block
constexpr int k_detect_threads = 256; // (vector, stream) pairs per detection block

static_assert(sizeof(linear::cplx) == sizeof(double2), "cplx has double2's layout");

/*!
 * One thread per matrix: W[m] (NT x nr, row-major), gain[m][k], post_var[m][k]. NT (the
 * scratch arrays' size) is a template argument; nr <= k_max_ant at run time.
 */
template <int NT>
__global__ void __launch_bounds__(k_prep_threads)
    linear_prep_kernel(const float2* __restrict__ H,
                       const float* __restrict__ noise_var,
                       int n_mat,
                       int nr,
                       bool mmse,
                       double2* __restrict__ W,
                       double* __restrict__ gain,
                       double* __restrict__ post_var)
{
    const int m = blockIdx.x * k_prep_threads + threadIdx.x;
    if (m >= n_mat)
        return;
    linear::cplx Hc[k_max_ant * NT];
    const float2* h = H + static_cast<size_t>(m) * nr * NT;
    for (int i = 0; i < nr * NT; ++i)
        Hc[i] = { static_cast<double>(h[i].x), static_cast<double>(h[i].y) };
    linear::cplx* Wm = reinterpret_cast<linear::cplx*>(W + static_cast<size_t>(m) * NT * nr);
    const double nv = noise_var[m];
    if (mmse)
        linear::mmse_weights<NT>(Hc, nr, NT, nv, Wm);
    else
        linear::zf_weights<NT>(Hc, nr, NT, Wm);
    for (int k = 0; k < NT; ++k) {
        double g, pv;
        if (mmse) {
            double mu = 0.0; // Re (W H)_kk
            for (int r = 0; r < nr; ++r) {
                const linear::cplx w = Wm[k * nr + r], x = Hc[r * NT + k];
                mu += w.re * x.re - w.im * x.im;
            }
            g = mu;
            pv = linear::mmse_post_var(mu);
        } else {
            double s = 0.0; // ||W_k||^2
            for (int r = 0; r < nr; ++r) {
                const linear::cplx w = Wm[k * nr + r];
                s += w.re * w.re + w.im * w.im;
            }
            g = 1.0;
            pv = nv * s;
        }
        gain[static_cast<size_t>(m) * NT + k] = g;
        post_var[static_cast<size_t>(m) * NT + k] = pv;
    }
}

/*!
 * One thread per (vector, stream) pair p = v * NT + k: x_k = W_k y_v, then the q LLRs of
 * stream k at llr[p * q ..] (the output order: all bits of antenna 0, then 1, ...).
 */
template <int NT>
__global__ void __launch_bounds__(k_detect_threads)
    linear_detect_kernel(const float2* __restrict__ y,
                         const double2* __restrict__ W,
                         const double* __restrict__ gain,
                         const double* __restrict__ post_var,
                         long long n_pairs,
                         const __grid_constant__ segment_map map,
                         int nr,
                         int q,
                         float llr_clip,
                         float* __restrict__ llr)
{
    const long long p = static_cast<long long>(blockIdx.x) * k_detect_threads + threadIdx.x;
    if (p >= n_pairs)
        return;
    const long long v = p / NT;
    const int k = static_cast<int>(p - v * NT);
    const long long m = map.matrix_of(v);
    const double2* w = W + (m * NT + k) * nr;
    const float2* yv = y + v * nr;
    double xr = 0.0, xi = 0.0;
    for (int r = 0; r < nr; ++r) {
        const double2 a = w[r];
        const float2 b = yv[r];
        xr += a.x * b.x - a.y * b.y;
        xi += a.x * b.y + a.y * b.x;
    }
    linear::demap_stream(xr,
                         xi,
                         gain[m * NT + k],
                         post_var[m * NT + k],
                         c_pam + pam_offset(q),
                         q / 2,
                         q,
                         llr_clip,
                         llr + p * q);
}

// ---------------------------------------------------------------- detector

class linear_cuda_detector : public cuda_batch_detector
{
public:
    explicit linear_cuda_detector(const detector_config& cfg)
        : cuda_batch_detector(cfg, true), d_mmse(cfg.algorithm == "mmse")
    {
        upload_tables(device());
    }

protected:
    void reserve_scratch(size_t n_mat, size_t n_vec) override
    {
        (void)n_vec;
        const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
        d_W.reserve(n_mat * nt * nr);
        d_gain.reserve(n_mat * nt);
        d_post_var.reserve(n_mat * nt);
    }

    void launch(cudaStream_t s, const chunk& c) override
    {
        if (c.n_mat > static_cast<size_t>(INT_MAX) ||
            c.n_vec > static_cast<size_t>(LLONG_MAX / k_max_ant))
            throw std::invalid_argument("mimodet: linear cuda: chunk too large");
        dispatch_nt(d_cfg.n_tx, d_mmse ? "mmse" : "zf", [&](auto nt_c) {
            launch_nt<decltype(nt_c)::value>(s, c);
        });
    }

private:
    template <int NT>
    void launch_nt(cudaStream_t s, const chunk& c)
    {
        const int nr = d_cfg.n_rx;
        double2* W = d_W.get() + c.m0 * NT * nr;
        double* gain = d_gain.get() + c.m0 * NT;
        double* pv = d_post_var.get() + c.m0 * NT;
        const unsigned prep_blocks =
            static_cast<unsigned>((c.n_mat + k_prep_threads - 1) / k_prep_threads);
        linear_prep_kernel<NT><<<prep_blocks, k_prep_threads, 0, s>>>(
            c.H, c.noise_var, static_cast<int>(c.n_mat), nr, d_mmse, W, gain, pv);
        MIMODET_CUDA_CHECK_LAUNCH();
        const long long n_pairs = static_cast<long long>(c.n_vec) * NT;
        const unsigned blocks =
            static_cast<unsigned>((n_pairs + k_detect_threads - 1) / k_detect_threads);
        const int q = static_cast<int>(d_cfg.mod);
        linear_detect_kernel<NT><<<blocks, k_detect_threads, 0, s>>>(
            c.y, W, gain, pv, n_pairs, c.map, nr, q, d_cfg.llr_clip, c.llr);
        MIMODET_CUDA_CHECK_LAUNCH();
    }

    const bool d_mmse;
    device_buffer<double2> d_W;
    device_buffer<double> d_gain, d_post_var;
};

} // namespace

detector::sptr make_linear_cuda_detector(const detector_config& cfg)
{
    if (cfg.algorithm != "zf" && cfg.algorithm != "mmse")
        throw std::logic_error("mimodet: make_linear_cuda_detector: algorithm '" +
                               cfg.algorithm + "' is not zf or mmse");
    // n_tx, n_rx (1..8, n_rx >= n_tx) and the modulation are checked by the core.
    return std::make_shared<linear_cuda_detector>(cfg);
}

} // namespace core
} // namespace mimodet
} // namespace gr
