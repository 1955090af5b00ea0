/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Batched complex QR decompositions on the GPU, double precision, one thread per channel
// matrix: the sorted QR (Wuebben's SQRD) and the plain QR in antenna order, both with a
// real non-negative diagonal of R, so they reproduce lib/detect/qr.cc (qr_sorted,
// qr_householder) up to rounding. The per-matrix functions are __host__ __device__ so
// that they can be checked against the CPU without a GPU.
//
// Layout (shared with fsd_device.cuh, which builds on qr_cgs2 and qr_store):
//   H:  float2, row-major n_rx x n_tx per matrix;
//   Qc: double2 [n_tx][n_rx], Qc[k * n_rx + r] = Q(r,k): column k of Q contiguous (one
//       row of Q^H, what rotate_entry() wants);
//   R:  double2 [n_tx][n_tx] row-major, upper triangle, zeros below;
//   perm: k_max_ant bytes per matrix, perm[k] = column of H placed at position k.

#ifndef INCLUDED_MIMODET_CUDA_QR_DEVICE_CUH
#define INCLUDED_MIMODET_CUDA_QR_DEVICE_CUH

#include "cuda/common/device_math.cuh"

namespace gr {
namespace mimodet {
namespace core {
namespace { // each translation unit its own copy (as device_math.cuh)

// NT_C / NR_C below: the antenna counts as compile-time constants (0: nt / nr at run
// time). With constants every loop unrolls and every array index is static, so the
// working arrays live in registers instead of a local-memory frame (ptxas: 3.2 KB); data-
// dependent picks (pivot, permuted column) are loops over the candidates for that
// reason. The arithmetic, and so the result, is the same either way.

//! Loads matrix hm into h[c][r] (a column contiguous), in double.
template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void
qr_load_columns(const float2* hm, int nr_rt, int nt_rt, double2 (*h)[k_max_ant])
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    MIMODET_UNROLL
    for (int r = 0; r < nr; ++r)
        MIMODET_UNROLL
        for (int c = 0; c < nt; ++c) {
            const float2 v = hm[r * nt + c];
            h[c][r] = make_double2(v.x, v.y);
        }
}

template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void qr_store(const double2 (*q)[k_max_ant],
                                const double2 (*Rm)[k_max_ant],
                                const int* p,
                                int nr_rt,
                                int nt_rt,
                                double2* Qc,
                                double2* Ro,
                                unsigned char* pm)
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    MIMODET_UNROLL
    for (int k = 0; k < nt; ++k) {
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            Qc[k * nr + r] = q[k][r];
        MIMODET_UNROLL
        for (int j = 0; j < nt; ++j)
            Ro[k * nt + j] = Rm[k][j];
        pm[k] = static_cast<unsigned char>(p[k]);
    }
}

/*!
 * Sorted QR (qr.cc qr_sorted, Wuebben 2001): modified Gram-Schmidt that moves, at step
 * i, the remaining column with the least residual norm to position i. The pivot is the
 * FIRST minimum (std::min_element), and the residual norms are recomputed (not
 * downdated) after every projection, exactly as on the CPU, so the permutation is the
 * CPU's except where two norms agree to the last bit.
 */
template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void qr_sorted_one(
    const float2* hm, int nr_rt, int nt_rt, double2* Qc, double2* Ro, unsigned char* pm)
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    double2 q[k_max_ant][k_max_ant]; // q[c][r]: working column c
    double2 Rm[k_max_ant][k_max_ant];
    qr_load_columns<NT_C, NR_C>(hm, nr, nt, q);
    int p[k_max_ant];
    double norm2[k_max_ant];
    MIMODET_UNROLL
    for (int c = 0; c < nt; ++c) {
        p[c] = c;
        MIMODET_UNROLL
        for (int j = 0; j < nt; ++j)
            Rm[c][j] = make_double2(0.0, 0.0);
        double s = 0.0;
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            s += cnorm(q[c][r]);
        norm2[c] = s;
    }
    MIMODET_UNROLL
    for (int i = 0; i < nt; ++i) {
        int k = i;
        MIMODET_UNROLL
        for (int c = i + 1; c < nt; ++c)
            if (norm2[c] < norm2[k])
                k = c;
        MIMODET_UNROLL
        for (int c = i + 1; c < nt; ++c) {
            if (c != k)
                continue;
            MIMODET_UNROLL
            for (int r = 0; r < nr; ++r) {
                const double2 t = q[i][r];
                q[i][r] = q[c][r];
                q[c][r] = t;
            }
            MIMODET_UNROLL
            for (int r = 0; r < nt; ++r) { // whole columns of R, as the CPU
                const double2 t = Rm[r][i];
                Rm[r][i] = Rm[r][c];
                Rm[r][c] = t;
            }
            const double tn = norm2[i];
            norm2[i] = norm2[c];
            norm2[c] = tn;
            const int tp = p[i];
            p[i] = p[c];
            p[c] = tp;
        }
        const double nrm = sqrt(norm2[i] > 0.0 ? norm2[i] : 0.0);
        Rm[i][i] = make_double2(nrm, 0.0);
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            // Rank-deficient: R(i,i) = 0 and the column carries nothing.
            q[i][r] = nrm > 0.0 ? make_double2(q[i][r].x / nrm, q[i][r].y / nrm)
                                : make_double2(0.0, 0.0);
        MIMODET_UNROLL
        for (int l = i + 1; l < nt; ++l) {
            double2 c = make_double2(0.0, 0.0);
            MIMODET_UNROLL
            for (int r = 0; r < nr; ++r)
                c = cadd(c, cmulc(q[i][r], q[l][r]));
            Rm[i][l] = c;
            double s = 0.0;
            MIMODET_UNROLL
            for (int r = 0; r < nr; ++r) {
                q[l][r] = csub(q[l][r], cmul(c, q[i][r]));
                s += cnorm(q[l][r]);
            }
            norm2[l] = s;
        }
    }
    qr_store<NT_C, NR_C>(q, Rm, p, nr, nt, Qc, Ro, pm);
}

/*!
 * QR of the columns h[p[0]], ..., h[p[nt-1]] (h[c][r], a column contiguous) with a real
 * non-negative diagonal of R, by classical Gram-Schmidt with one re-orthogonalisation
 * pass (CGS2, orthogonal to working precision). That QR is unique for a full-rank matrix,
 * so it is the CPU's Householder R and Q up to rounding. q[k][r] = Q(r,k); Rm upper
 * triangular, zeros below. Used by qr_plain_one and by the FSD preprocessing
 * (fsd_device.cuh) on its permuted columns.
 */
template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void qr_cgs2(const double2 (*h)[k_max_ant],
                               const int* p,
                               int nr_rt,
                               int nt_rt,
                               double2 (*q)[k_max_ant],
                               double2 (*Rm)[k_max_ant])
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    MIMODET_UNROLL
    for (int i = 0; i < nt; ++i)
        MIMODET_UNROLL
        for (int j = 0; j < nt; ++j)
            Rm[i][j] = make_double2(0.0, 0.0);
    MIMODET_UNROLL
    for (int i = 0; i < nt; ++i) {
        double2 v[k_max_ant];
        MIMODET_UNROLL
        for (int c = 0; c < nt; ++c) // v = column p[i], picked without a dynamic index
            if (c == p[i])
                MIMODET_UNROLL
                for (int r = 0; r < nr; ++r)
                    v[r] = h[c][r];
        MIMODET_UNROLL
        for (int pass = 0; pass < 2; ++pass)
            MIMODET_UNROLL
            for (int j = 0; j < i; ++j) {
                double2 c = make_double2(0.0, 0.0);
                MIMODET_UNROLL
                for (int r = 0; r < nr; ++r)
                    c = cadd(c, cmulc(q[j][r], v[r]));
                Rm[j][i] = cadd(Rm[j][i], c);
                MIMODET_UNROLL
                for (int r = 0; r < nr; ++r)
                    v[r] = csub(v[r], cmul(c, q[j][r]));
            }
        double nrm2 = 0.0;
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            nrm2 += cnorm(v[r]);
        const double nrm = sqrt(nrm2);
        Rm[i][i] = make_double2(nrm, 0.0);
        // Rank-deficient: R(i,i) = 0 and the column carries nothing.
        const double inv = nrm > 0.0 ? 1.0 / nrm : 0.0;
        MIMODET_UNROLL
        for (int r = 0; r < nr; ++r)
            q[i][r] = cscale(v[r], inv);
    }
}

//! Plain QR in antenna order with real non-negative diagonal (qr_cgs2, no permutation).
template <int NT_C = 0, int NR_C = 0>
MIMODET_HD_INLINE void qr_plain_one(
    const float2* hm, int nr_rt, int nt_rt, double2* Qc, double2* Ro, unsigned char* pm)
{
    const int nr = NR_C ? NR_C : nr_rt, nt = NT_C ? NT_C : nt_rt;
    double2 h[k_max_ant][k_max_ant];
    double2 q[k_max_ant][k_max_ant];
    double2 Rm[k_max_ant][k_max_ant];
    qr_load_columns<NT_C, NR_C>(hm, nr, nt, h);
    int p[k_max_ant];
    MIMODET_UNROLL
    for (int i = 0; i < nt; ++i)
        p[i] = i;
    qr_cgs2<NT_C, NR_C>(h, p, nr, nt, q, Rm);
    qr_store<NT_C, NR_C>(q, Rm, p, nr, nt, Qc, Ro, pm);
}

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_QR_DEVICE_CUH */
