/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// FSD pieces shared by the hard (fsd_cuda.cu) and soft (SFSD) CUDA detectors: the FSD
// ordering + QR per channel matrix (its kernel, launch and scratch buffers in
// fsd_cuda_detector_base), and the metric of one FSD branch. The math is the CPU's
// (lib/detect/fsd/fsd.cc, qr.cc).

#ifndef INCLUDED_MIMODET_CUDA_FSD_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_FSD_DEVICE_CUH

#include "cuda/common/batch_detector.h"
#include "cuda/common/qr_device.cuh"
#include "detect/fsd/fsd_common.h"

namespace gr {
namespace mimodet {
namespace core {
namespace { // each translation unit its own copy (constant tables)

// Threads (= matrices) per preprocessing block: small, so that a few thousand matrices
// (one thread each, a long serial chain) spread over every SM instead of a few.
constexpr int k_prep_threads = 32;


// ---------------------------------------------------------------- preprocessing

/*!
 * FSD ordering (qr.cc fsd_ordering) and QR of the permuted matrix with a real positive
 * diagonal, for one channel matrix hm (row-major n_rx x n_tx). Outputs:
 *   Qo[k][r] = Q(r,k) (column k contiguous: one row of Q^H), Ro[i][j] (upper triangle,
 *   zeros below), inv[k] = 1/R(k,k) or 0, pm[k] = column of H at position k.
 * NT_C / NR_C: compile-time sizes or 0, as in qr_device.cuh (the columns are moved
 * within w, in registers, rather than indexed through rem or p, for that reason).
 */
template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void fsd_preprocess_one(const float2* hm,
                                   int nr_rt,
                                   int nt_rt,
                                   int full_levels,
                                   double2* Qo,
                                   double2* Ro,
                                   double* inv_diag,
                                   unsigned char* pm)
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    // h[c][r]: column-major, a column is contiguous.
    double2 h[k_max_ant][k_max_ant];
    qr_load_columns<NT_C, NR_C>(hm, nr, nt, h);

    // --- FSD ordering: positions filled from the last (detected first) to the first.
    // rem[a]: the a-th remaining column (increasing), w[a] = h[rem[a]]; placed columns
    // collect above them.
    int rem[k_max_ant];
    int p[k_max_ant];
    double2 w[k_max_ant][k_max_ant];
    MIMODET_UNROLL
    for (int c = 0; c < nt; ++c) {
        rem[c] = c;
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            w[c][r] = h[c][r];
    }
    double2 L[k_max_ant][k_max_ant]; // Gram matrix, then its Cholesky factor (lower)
    MIMODET_UNROLL
    for (int step = 0; step < nt; ++step) {
        const int pos = nt - 1 - step;
        const int n = nt - step; // remaining columns
        double maxd = 0.0;
        MIMODET_UNROLL
        for (int a = 0; a < n; ++a)
            MIMODET_UNROLL
            for (int b = 0; b <= a; ++b) {
                double2 g = make_double2(0.0, 0.0);
                MIMODET_UNROLL
                for (int r = 0; r < nr; ++r)
                    g = cadd(g, cmulc(w[a][r], w[b][r]));
                L[a][b] = g;
                if (a == b)
                    maxd = fmax(maxd, fabs(g.x));
            }
        // Same ridge as the CPU: keeps rank-deficient channels finite.
        const double ridge = fsd_ordering_ridge(maxd);
        MIMODET_UNROLL
        for (int a = 0; a < n; ++a)
            L[a][a].x += ridge;
        // Cholesky G = L L^H in place.
        MIMODET_UNROLL
        for (int j = 0; j < n; ++j) {
            double d = L[j][j].x;
            MIMODET_UNROLL
            for (int k = 0; k < j; ++k)
                d -= cnorm(L[j][k]);
            const double ljj = sqrt(d > 0.0 ? d : ridge);
            L[j][j] = make_double2(ljj, 0.0);
            MIMODET_UNROLL
            for (int i = j + 1; i < n; ++i) {
                double2 v = L[i][j];
                MIMODET_UNROLL
                for (int k = 0; k < j; ++k)
                    v = csub(v, cmul(L[i][k], make_double2(L[j][k].x, -L[j][k].y)));
                L[i][j] = cscale(v, 1.0 / ljj);
            }
        }
        // diag(G^-1)_c = ||L^-1 e_c||^2 (forward substitution per column).
        double amp[k_max_ant];
        MIMODET_UNROLL
        for (int c = 0; c < n; ++c) {
            double2 x[k_max_ant];
            x[c] = make_double2(1.0 / L[c][c].x, 0.0);
            double s = cnorm(x[c]);
            MIMODET_UNROLL
            for (int k = c + 1; k < n; ++k) {
                double2 acc = make_double2(0.0, 0.0);
                MIMODET_UNROLL
                for (int j = c; j < k; ++j)
                    acc = cadd(acc, cmul(L[k][j], x[j]));
                x[k] = cscale(acc, -1.0 / L[k][k].x);
                s += cnorm(x[k]);
            }
            amp[c] = s;
        }
        int pick = 0;
        double best = amp[0];
        MIMODET_UNROLL
        for (int c = 1; c < n; ++c) {
            const double a = amp[c];
            if (step < full_levels ? a > best : a < best) {
                pick = c;
                best = a;
            }
        }
        // p[pos] = rem[pick]. Entry pick bubbles up to a = n - 1 = pos, the others keep
        // their order below it: the next step sees the remaining columns in order, and
        // in the end w[k] = h[p[k]] for every k.
        MIMODET_UNROLL
        for (int c = 0; c + 1 < n; ++c)
            if (c >= pick) {
                const int t = rem[c];
                rem[c] = rem[c + 1];
                rem[c + 1] = t;
                MIMODET_UNROLL
                for (int r = 0; r < nr; ++r) {
                    const double2 v = w[c][r];
                    w[c][r] = w[c + 1][r];
                    w[c + 1][r] = v;
                }
            }
        p[pos] = rem[n - 1];
    }

    // --- QR of the permuted matrix, w (CGS2, qr_device.cuh), orthogonal to working
    // precision like the CPU's Householder QR.
    double2 q[k_max_ant][k_max_ant]; // q[k][r] = Q(r,k)
    double2 Rm[k_max_ant][k_max_ant];
    int in_order[k_max_ant];
    MIMODET_UNROLL
    for (int k = 0; k < nt; ++k)
        in_order[k] = k;
    qr_cgs2<NT_C, NR_C>(w, in_order, nr, nt, q, Rm);

    double scale = 0.0;
    MIMODET_UNROLL
    for (int i = 0; i < nt; ++i)
        MIMODET_UNROLL
        for (int j = 0; j < nt; ++j)
            scale = fmax(scale, hypot(Rm[i][j].x, Rm[i][j].y));

    qr_store<NT_C, NR_C>(q, Rm, p, nr, nt, Qo, Ro, pm);
    MIMODET_UNROLL
    for (int k = 0; k < nt; ++k)
        inv_diag[k] = sic_inverse(Rm[k][k].x, scale); // as the CPU (qr.h)
}

//! One thread per channel matrix; per-matrix strides as in fsd_preprocess_one, perm's 8.
template <int NT_C, int NR_C>
__global__ void __launch_bounds__(k_prep_threads)
    fsd_preprocess_kernel(const float2* __restrict__ H,
                          int n_mat,
                          int nr,
                          int nt,
                          int full_levels,
                          double2* __restrict__ Qc,
                          double2* __restrict__ R,
                          double* __restrict__ inv_diag,
                          unsigned char* __restrict__ perm)
{
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n_mat)
        return;
    const size_t mm = static_cast<size_t>(m);
    fsd_preprocess_one<NT_C, NR_C>(H + mm * nr * nt,
                                   nr,
                                   nt,
                                   full_levels,
                                   Qc + mm * nt * nr,
                                   R + mm * nt * nt,
                                   inv_diag + mm * nt,
                                   perm + mm * k_max_ant);
}

//! Enqueues fsd_preprocess_kernel for n_mat matrices on stream s (launch checked). A
//! lane-parallel twin (one lane per column, the ordering's Gram, Cholesky and inverse
//! steps spread over the lanes through shared memory) took 17.6 us for 8000 4x4 matrices
//! on an H100 against this kernel's 11.3 us: its barriers lengthen the chain that bounds
//! both.
inline void launch_fsd_preprocess(cudaStream_t s,
                                  const float2* H,
                                  size_t n_mat,
                                  int nr,
                                  int nt,
                                  int full_levels,
                                  double2* Qc,
                                  double2* R,
                                  double* inv_diag,
                                  unsigned char* perm)
{
    const unsigned blocks =
        static_cast<unsigned>((n_mat + k_prep_threads - 1) / k_prep_threads);
    dispatch_prep_shape(nt, nr, [&](auto nt_c, auto nr_c) {
        fsd_preprocess_kernel<decltype(nt_c)::value, decltype(nr_c)::value>
            <<<blocks, k_prep_threads, 0, s>>>(
                H, static_cast<int>(n_mat), nr, nt, full_levels, Qc, R, inv_diag, perm);
    });
    MIMODET_CUDA_CHECK_LAUNCH();
}

/*!
 * What the hard (fsd_cuda.cu) and soft (sfsd_cuda.cu) CUDA FSD detectors share: the
 * FSD parameters and per-vector complexity counters (the CPU's), and the per-matrix
 * preprocessing with its scratch buffers. A derived launch() calls preprocess() and
 * then its detection kernel on the same stream.
 */
class fsd_cuda_detector_base : public cuda_batch_detector
{
protected:
    //! Preprocessed matrices of one chunk (device pointers into the scratch buffers).
    struct fsd_prep {
        double2* Q;
        double2* R;
        double* inv;
        unsigned char* perm;
    };

    fsd_cuda_detector_base(const detector_config& cfg, bool soft, const fsd_params& p)
        : cuda_batch_detector(cfg, soft), d_params(p)
    {
        upload_tables(device());
        fsd_counts(cfg.n_tx, static_cast<int>(cfg.mod), p, d_expanded, d_evaluated);
    }

    void reserve_scratch(size_t n_mat, size_t n_vec) override
    {
        (void)n_vec;
        const size_t nr = d_cfg.n_rx, nt = d_cfg.n_tx;
        d_Q.reserve(n_mat * nr * nt);
        d_R.reserve(n_mat * nt * nt);
        d_inv.reserve(n_mat * nt);
        d_perm.reserve(n_mat * k_max_ant);
    }

    //! Enqueues the FSD ordering + QR of chunk c's matrices on stream s.
    fsd_prep preprocess(cudaStream_t s, const chunk& c)
    {
        const int nr = d_cfg.n_rx, nt = d_cfg.n_tx;
        const fsd_prep out = { d_Q.get() + c.m0 * nr * nt,
                               d_R.get() + c.m0 * nt * nt,
                               d_inv.get() + c.m0 * nt,
                               d_perm.get() + c.m0 * k_max_ant };
        launch_fsd_preprocess(s,
                              c.H,
                              c.n_mat,
                              nr,
                              nt,
                              d_params.full_levels,
                              out.Q,
                              out.R,
                              out.inv,
                              out.perm);
        return out;
    }

    vector_stats host_stats() const override
    {
        vector_stats s;
        s.expanded = d_expanded;
        s.evaluated = d_evaluated;
        return s;
    }

    const fsd_params d_params;

private:
    unsigned d_expanded = 0, d_evaluated = 0;
    device_buffer<double2> d_Q, d_R;
    device_buffer<double> d_inv;
    device_buffer<unsigned char> d_perm;
};

/*!
 * Metric of branch p of one vector (z = Q^H y): levels n_tx-1 .. first_se+1 take the
 * labels given by p's base-M digits (most significant first, the CPU's depth-first
 * order), the levels below the SIC slicer's (Eq. 6). lab gets the labels, 6 bits per
 * level. Summation order as in the CPU (Eqs. 4-5).
 */
template <int NT>
MIMODET_HD inline double fsd_branch(const double2* z,
                                    const double2* Rm,
                                    const double* inv,
                                    const double2* pts,
                                    const double* pam,
                                    int q,
                                    int full_levels,
                                    int p,
                                    unsigned long long& lab)
{
    const int M = 1 << q;
    const int first_se = NT - 1 - full_levels; // highest SIC level
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
        int label;
        if (k > first_se)
            label = (p >> (q * (k - first_se - 1))) & (M - 1);
        else
            label = slice(cscale(res, inv[k]), pam, q);
        sym[k] = pts[label];
        metric += cnorm(csub(res, cscale(sym[k], rkk)));
        lab |= static_cast<unsigned long long>(label) << (k_label_bits * k);
    }
    return metric;
}

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif
