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
 * The sorted QR's update of column v against the finished (unit) column u: r = u^H v
 * (summed in row order), v -= r u; returns v's new squared norm (the next pivot's key),
 * summed as v is updated.
 */
template <int NR_C = 0>
MIMODET_HD_INLINE double
qr_sorted_update(const double2* u, double2* v, int nr_rt, double2& r)
{
    const int nr = NR_C ? NR_C : nr_rt;
    double2 c = make_double2(0.0, 0.0);
    MIMODET_UNROLL
    for (int k = 0; k < nr; ++k)
        c = cadd(c, cmulc(u[k], v[k]));
    r = c;
    double s = 0.0;
    MIMODET_UNROLL
    for (int k = 0; k < nr; ++k) {
        v[k] = csub(v[k], cmul(c, u[k]));
        s += cnorm(v[k]);
    }
    return s;
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
        for (int l = i + 1; l < nt; ++l)
            norm2[l] = qr_sorted_update<NR_C>(q[i], q[l], nr, Rm[i][l]);
    }
    qr_store<NT_C, NR_C>(q, Rm, p, nr, nt, Qc, Ro, pm);
}

/*!
 * One Gram-Schmidt update of column v against the finished (unit) column u, in the order
 * every CGS2 pass here uses: c = u^H v (summed in row order), r += c, v -= c u.
 */
template <int NR_C = 0>
MIMODET_HD_INLINE void qr_gs_update(const double2* u, double2* v, int nr_rt, double2& r)
{
    const int nr = NR_C ? NR_C : nr_rt;
    double2 c = make_double2(0.0, 0.0);
    MIMODET_UNROLL
    for (int k = 0; k < nr; ++k)
        c = cadd(c, cmulc(u[k], v[k]));
    r = cadd(r, c);
    MIMODET_UNROLL
    for (int k = 0; k < nr; ++k)
        v[k] = csub(v[k], cmul(c, u[k]));
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
        for (int j = 0; j < i; ++j)
            qr_gs_update<NR_C>(q[j], v, nr, Rm[j][i]);
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

#ifdef __CUDACC__
// ------------------------------------------------------------- lane-parallel QRs
//
// The QRs above with one lane per column: a group of NT consecutive lanes of a warp works
// on one matrix and exchanges columns by shuffles within the group, so every lane of the
// warp must call (lanes past the last matrix work on zeros). Lane c enters with column c
// of the input in v and leaves with column c of Q in v, column c of R in Rc (Rc[j] =
// R(j,c), zeros below the diagonal). Every value is computed by the same expression, in
// the same order, as in the one-thread versions, so the results are theirs bit for bit;
// what changes is who computes what: step i finishes column i, then every later column
// takes its update from column i at once instead of one after another. Shuffles rather
// than shared memory: there the lanes of a warp read their groups' columns with bank
// conflicts (74 % of the wavefronts in excess at 4x4, Nsight Compute), and every step
// would wait on the whole block's barriers.

//! Threads per block of the lane-parallel preprocessing kernels (n_tx lanes per matrix):
//! a few thousand matrices spread over every SM.
constexpr int k_prep_lane_threads = 64;
static_assert(k_prep_lane_threads % 32 == 0, "whole warps: a lane group never spans two");

//! x of lane src of the caller's group of W lanes (every lane of the warp takes part).
template <int W>
__device__ __forceinline__ double lanes_shfl(double x, int src)
{
    return __shfl_sync(0xffffffffu, x, src, W);
}
template <int W>
__device__ __forceinline__ double2 lanes_shfl(double2 x, int src)
{
    return make_double2(lanes_shfl<W>(x.x, src), lanes_shfl<W>(x.y, src));
}

//! qr_cgs2 of the columns in their order (in_order = 0, 1, ...).
template <int NT, int NR>
__device__ __forceinline__ void qr_cgs2_lanes(int c, double2 (&v)[NR], double2 (&Rc)[NT])
{
    MIMODET_UNROLL
    for (int j = 0; j < NT; ++j)
        Rc[j] = make_double2(0.0, 0.0);
    MIMODET_UNROLL
    for (int i = 0; i < NT; ++i) {
        // The second pass over the finished columns (the first ran at their steps); lane
        // j holds column j of Q.
        MIMODET_UNROLL
        for (int j = 0; j < i; ++j) {
            double2 qj[NR];
            MIMODET_UNROLL
            for (int r = 0; r < NR; ++r)
                qj[r] = lanes_shfl<NT>(v[r], j);
            if (c == i)
                qr_gs_update<NR>(qj, v, NR, Rc[j]);
        }
        if (c == i) {
            double nrm2 = 0.0;
            MIMODET_UNROLL
            for (int r = 0; r < NR; ++r)
                nrm2 += cnorm(v[r]);
            const double nrm = sqrt(nrm2);
            Rc[i] = make_double2(nrm, 0.0);
            // Rank-deficient: R(i,i) = 0 and the column carries nothing.
            const double inv = nrm > 0.0 ? 1.0 / nrm : 0.0;
            MIMODET_UNROLL
            for (int r = 0; r < NR; ++r)
                v[r] = cscale(v[r], inv);
        }
        double2 qi[NR];
        MIMODET_UNROLL
        for (int r = 0; r < NR; ++r)
            qi[r] = lanes_shfl<NT>(v[r], i);
        if (c > i) // the first pass against column i
            qr_gs_update<NR>(qi, v, NR, Rc[i]);
    }
}

/*!
 * qr_sorted_one: at step i the remaining column of least residual norm (the first on
 * ties) moves to position i, by an exchange of the two lanes' state. p is lane c's
 * permutation entry (p[c] on return).
 */
template <int NT, int NR>
__device__ __forceinline__ void
qr_sorted_lanes(int c, double2 (&v)[NR], double2 (&Rc)[NT], int& p)
{
    p = c;
    MIMODET_UNROLL
    for (int j = 0; j < NT; ++j)
        Rc[j] = make_double2(0.0, 0.0);
    double n2 = 0.0;
    MIMODET_UNROLL
    for (int r = 0; r < NR; ++r)
        n2 += cnorm(v[r]);
    MIMODET_UNROLL
    for (int i = 0; i < NT; ++i) {
        // The pivot: the same scan in every lane.
        int k = i;
        double nk = lanes_shfl<NT>(n2, i);
        MIMODET_UNROLL
        for (int l = i + 1; l < NT; ++l) {
            const double nl = lanes_shfl<NT>(n2, l);
            if (nl < nk) {
                nk = nl;
                k = l;
            }
        }
        // Columns i and k swap (Q's column, R's column, norm, permutation); R's rows i..
        // are still zero in every lane.
        if (__any_sync(0xffffffffu, k != i)) {
            const int src = c == i ? k : (c == k ? i : c);
            n2 = lanes_shfl<NT>(n2, src);
            p = __shfl_sync(0xffffffffu, p, src, NT);
            MIMODET_UNROLL
            for (int r = 0; r < NR; ++r)
                v[r] = lanes_shfl<NT>(v[r], src);
            MIMODET_UNROLL
            for (int j = 0; j < i; ++j)
                Rc[j] = lanes_shfl<NT>(Rc[j], src);
        }
        // Column i normalised, in every lane from lane i's values; its norm is the
        // pivot's, nk, which every lane holds.
        const double nrm = sqrt(nk > 0.0 ? nk : 0.0);
        double2 qi[NR];
        MIMODET_UNROLL
        for (int r = 0; r < NR; ++r) {
            const double2 x = lanes_shfl<NT>(v[r], i);
            qi[r] =
                nrm > 0.0 ? make_double2(x.x / nrm, x.y / nrm) : make_double2(0.0, 0.0);
        }
        if (c == i) {
            Rc[i] = make_double2(nrm, 0.0);
            MIMODET_UNROLL
            for (int r = 0; r < NR; ++r)
                v[r] = qi[r];
        } else if (c > i) {
            n2 = qr_sorted_update<NR>(qi, v, NR, Rc[i]);
        }
    }
}

/*!
 * Lane c's outputs in qr_store's layout (column c of Q and of R, perm[c] = p) for matrix
 * m, where live. Returns max |R(i,j)| over the matrix (fmax: the order does not matter)
 * and R(c,c) in diag: what 1/R(k,k) (sic_inverse) needs.
 */
template <int NT, int NR>
__device__ __forceinline__ double qr_lanes_store(int c,
                                                 const double2 (&v)[NR],
                                                 const double2 (&Rc)[NT],
                                                 int p,
                                                 bool live,
                                                 size_t m,
                                                 double2* Qc,
                                                 double2* R,
                                                 unsigned char* perm,
                                                 double& diag)
{
    double mx = 0.0;
    diag = 0.0;
    MIMODET_UNROLL
    for (int j = 0; j < NT; ++j) {
        mx = fmax(mx, hypot(Rc[j].x, Rc[j].y));
        diag = j == c ? Rc[j].x : diag; // constant indices: Rc stays in registers
    }
    double scale = 0.0;
    MIMODET_UNROLL
    for (int a = 0; a < NT; ++a)
        scale = fmax(scale, lanes_shfl<NT>(mx, a));
    if (live) {
        MIMODET_UNROLL
        for (int r = 0; r < NR; ++r)
            Qc[m * NT * NR + c * NR + r] = v[r];
        MIMODET_UNROLL
        for (int j = 0; j < NT; ++j)
            R[m * NT * NT + j * NT + c] = Rc[j];
        perm[m * k_max_ant + c] = static_cast<unsigned char>(p);
    }
    return scale;
}
#endif

} // namespace
} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_QR_DEVICE_CUH */
