/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The body of qr_sorted_group (qr_lanes.cc), included once per instruction set with
// V, the vector operations of that set, MIMODET_LANES_TARGET, its target attribute, and
// MIMODET_QR_GROUP_SIZES, the sizes to instantiate, defined. Lane l of every register
// belongs to matrix l, and each lane runs exactly the operations of qr.cc's
// sorted_qr_loops in the same order (every sum a sequential loop, correctly rounded sqrt
// and division, no fused multiply-add), so its Q, R and permutation equal
// qr_sorted_real's bit for bit. Only the pivot differs in form: each lane picks its own
// column, and the column swap is a blend.
//
// Q: M x N registers, column-major (Q[k * M + e] is row e of column k); on entry H.
// R: N x N registers, row-major. P: N registers, the permutation as doubles.

//! a and b exchanged in the lanes of swap.
MIMODET_LANES_TARGET inline void
exchange_where(typename V::mask swap, typename V::reg& a, typename V::reg& b)
{
    const typename V::reg ta = a;
    a = V::blend(swap, a, b);
    b = V::blend(swap, b, ta);
}

template <int M, int N>
MIMODET_LANES_TARGET void sorted_qr_lanes(typename V::reg* __restrict Q,
                                          typename V::reg* __restrict R,
                                          typename V::reg* __restrict P)
{
    using reg = typename V::reg;
    using mask = typename V::mask;
    const reg zero = V::zero();
    reg norm2[N];
    for (int j = 0; j < N * N; ++j)
        R[j] = zero;
    for (int k = 0; k < N; ++k)
        P[k] = V::set1(k);
    for (int k = 0; k < N; ++k) {
        reg s = zero;
        for (int e = 0; e < M; ++e)
            s = V::add(s, V::mul(Q[k * M + e], Q[k * M + e]));
        norm2[k] = s;
    }
    for (int i = 0; i < N; ++i) {
        // The least norm among columns i..N-1, the first of equal ones.
        reg least = norm2[i], pivot = V::set1(i);
        for (int j = i + 1; j < N; ++j) {
            const mask lt = V::less(norm2[j], least);
            least = V::blend(lt, least, norm2[j]);
            pivot = V::blend(lt, pivot, V::set1(j));
        }
        for (int j = i + 1; j < N; ++j) {
            const mask swap = V::equal(pivot, V::set1(j));
            if (V::none(swap))
                continue;
            for (int e = 0; e < M; ++e)
                exchange_where(swap, Q[i * M + e], Q[j * M + e]);
            // Rows i.. of both columns are still zero.
            for (int e = 0; e < i; ++e)
                exchange_where(swap, R[e * N + i], R[e * N + j]);
            exchange_where(swap, norm2[i], norm2[j]);
            exchange_where(swap, P[i], P[j]);
        }
        // max(0, x) keeps a NaN as std::max(x, 0.0) does.
        const reg nrm = V::sqrt(V::max(zero, norm2[i]));
        R[i * N + i] = nrm;
        const mask positive = V::less(zero, nrm);
        // A rank-deficient column carries nothing: zero where nrm is not > 0.
        for (int e = 0; e < M; ++e)
            Q[i * M + e] = V::zero_unless(positive, V::div(Q[i * M + e], nrm));
        for (int l = i + 1; l < N; ++l) {
            reg d = zero;
            for (int e = 0; e < M; ++e)
                d = V::add(d, V::mul(Q[i * M + e], Q[l * M + e]));
            R[i * N + l] = d;
            reg s = zero;
            for (int e = 0; e < M; ++e) {
                const reg v = V::sub(Q[l * M + e], V::mul(d, Q[i * M + e]));
                Q[l * M + e] = v;
                s = V::add(s, V::mul(v, v));
            }
            norm2[l] = s;
        }
    }
}

//! count <= V::lanes matrices: AoS in and out around sorted_qr_lanes.
template <int M, int N>
MIMODET_LANES_TARGET void sorted_qr_group(
    double* const* Q, int count, double* const* R, int r_row, int r_col, int* const* perm)
{
    using reg = typename V::reg;
    constexpr int L = V::lanes;
    alignas(64) double q[M * N * L];
    alignas(64) double r[N * N * L];
    alignas(64) double p[N * L];
    for (int x = 0; x < M * N; ++x)
        for (int l = 0; l < L; ++l)
            q[x * L + l] = l < count ? Q[l][x] : 0.0; // unused lanes: a zero matrix
    sorted_qr_lanes<M, N>(
        reinterpret_cast<reg*>(q), reinterpret_cast<reg*>(r), reinterpret_cast<reg*>(p));
    for (int l = 0; l < count; ++l) {
        for (int x = 0; x < M * N; ++x)
            Q[l][x] = q[x * L + l];
        for (int i = 0; i < N; ++i)
            for (int j = 0; j < N; ++j)
                R[l][i * r_row + j * r_col] = r[(i * N + j) * L + l];
        for (int k = 0; k < N; ++k)
            perm[l][k] = static_cast<int>(p[k * L + l]);
    }
}

//! The sizes of qr_sorted_group; false for others.
MIMODET_LANES_TARGET bool sorted_qr_group_sized(double* const* Q,
                                                int count,
                                                int m,
                                                int n,
                                                double* const* R,
                                                int r_row,
                                                int r_col,
                                                int* const* perm)
{
#define MIMODET_QR_GROUP_SIZE(MM, NN)                             \
    if (m == MM && n == NN) {                                     \
        sorted_qr_group<MM, NN>(Q, count, R, r_row, r_col, perm); \
        return true;                                              \
    }
    MIMODET_QR_GROUP_SIZES(MIMODET_QR_GROUP_SIZE)
#undef MIMODET_QR_GROUP_SIZE
    return false;
}
