/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The linear detectors (zf, mmse) in one place for the CPU (linear.cc) and the CUDA
// backend (cuda/linear/linear_cuda.cu): __host__ __device__ under nvcc, plain inline C++
// elsewhere (no Eigen). Double precision throughout.
//
//  - The per-stream max-log demapper (demap_stream): both backends demap with this code.
//  - The rank rule of zf: H is rank-deficient when the pivoted LDL^H of H^H H (diagonal
//    pivoting, the largest remaining diagonal first) meets a pivot <= zf_rank_rtol times
//    its first pivot (the largest squared column norm of H); the rank is the number of
//    pivots before it. Gram matrix and factorisation use explicitly rounded operations in
//    a fixed order (no FMA contraction on the GPU), so the CPU and the GPU take the same
//    decision for the same float H.
//  - zf for a rank-deficient H (rank r < n_tx): the minimum-norm pseudo-inverse of the
//    rank-r truncation, W = pinv(G_r) H^H with G_r = P^T L_r D_r L_r^H P from that same
//    factorisation (ldl_weights). For an exactly rank-deficient H this is H's
//    pseudo-inverse: a stream that carries nothing (zero column) gets W row 0 and LLRs 0,
//    the others their zero-forcing LLRs; an all-zero H gives LLRs 0.
//  - zf for a full-rank H: the CPU keeps Eigen's pseudo-inverse (complete orthogonal
//    decomposition), the GPU uses R^-1 Q^H from a thin QR (qr_weights); both are H's
//    pseudo-inverse and differ by rounding only (about 1e-16 cond(H)).
//  - mmse: W = (H^H H + noise_var I)^-1 H^H (CPU: Eigen's LDLT; GPU: ldl_weights with
//    tolerance 0), unbiased: gain mu_k = Re (W H)_kk, post-equalisation variance
//    mmse_post_var(mu_k) = (1 - mu_k) / mu_k.

#ifndef INCLUDED_MIMODET_CORE_LINEAR_COMMON_H
#define INCLUDED_MIMODET_CORE_LINEAR_COMMON_H

#include "detect/llr.h"          // maxlog_llr, MIMODET_HD
#include "detect/rounded_math.h" // rn_mul, rn_add, rn_sub: no FMA contraction on the GPU
#include <math.h>

namespace gr {
namespace mimodet {
namespace core {
namespace linear {

//! Most transmit / receive antennas (detector_config's limit).
constexpr int max_ant = 8;

//! zf rank rule: a pivot of the LDL^H of H^H H at or below this times the first (largest)
//! pivot ends the factorisation; H counts as rank-deficient (squared singular-value
//! ratio about 1e-10, far beyond what float channel estimates resolve).
constexpr double zf_rank_rtol = 1e-10;

//! Complex double on host and device (the layout of double2 and std::complex<double>).
struct cplx {
    double re, im;
};

MIMODET_HD inline cplx cconj(cplx a) { return { a.re, -a.im }; }
MIMODET_HD inline cplx cmul(cplx a, cplx b)
{
    return { a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re };
}

/*!
 * G = H^H H (n_tx x n_tx, row-major, full Hermitian storage) for H row-major
 * n_rx x n_tx. Explicitly rounded, summed over r in order; the diagonal is real.
 */
MIMODET_HD inline void gram(const cplx* H, int nr, int nt, cplx* G)
{
    for (int i = 0; i < nt; ++i) {
        double dd = 0.0;
        for (int r = 0; r < nr; ++r) {
            const cplx h = H[r * nt + i];
            dd = rn_add(dd, rn_add(rn_mul(h.re, h.re), rn_mul(h.im, h.im)));
        }
        G[i * nt + i] = { dd, 0.0 };
        for (int j = i + 1; j < nt; ++j) {
            double re = 0.0, im = 0.0;
            for (int r = 0; r < nr; ++r) {
                const cplx a = H[r * nt + i], b = H[r * nt + j]; // conj(a) * b
                re = rn_add(re, rn_add(rn_mul(a.re, b.re), rn_mul(a.im, b.im)));
                im = rn_add(im, rn_sub(rn_mul(a.re, b.im), rn_mul(a.im, b.re)));
            }
            G[i * nt + j] = { re, im };
            G[j * nt + i] = { re, -im };
        }
    }
}

/*!
 * Pivoted LDL^H of the n x n Hermitian positive semi-definite A (row-major, full
 * storage, overwritten): P A P^T = L D L^H, at each step the largest remaining diagonal
 * (the first on ties). Stops at the first pivot that is not > rtol times the first
 * pivot (and > 0); returns the rank r (the pivots taken). On return perm[i] is the
 * original index of position i, d[0..r-1] the pivots, and the strictly lower part of
 * columns 0..r-1 of A holds L (unit diagonal implied). Explicitly rounded.
 */
MIMODET_HD inline int pivoted_ldl(cplx* A, int n, double rtol, int* perm, double* d)
{
    for (int i = 0; i < n; ++i)
        perm[i] = i;
    double limit = 0.0;
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = A[k * n + k].re;
        for (int i = k + 1; i < n; ++i)
            if (A[i * n + i].re > best) {
                best = A[i * n + i].re;
                p = i;
            }
        if (k == 0)
            limit = rn_mul(rtol, best);
        if (!(best > 0.0) || !(best > limit))
            return k;
        if (p != k) {
            for (int c = 0; c < n; ++c) { // rows (L's earlier columns move with them)
                const cplx t = A[k * n + c];
                A[k * n + c] = A[p * n + c];
                A[p * n + c] = t;
            }
            for (int r = 0; r < n; ++r) { // columns
                const cplx t = A[r * n + k];
                A[r * n + k] = A[r * n + p];
                A[r * n + p] = t;
            }
            const int t = perm[k];
            perm[k] = perm[p];
            perm[p] = t;
        }
        d[k] = best;
        // Trailing update A_ij -= v_i conj(v_j) / d with v = A(k+1.., k), then L = v / d.
        for (int i = k + 1; i < n; ++i) {
            const cplx vi = A[i * n + k];
            const cplx li = { vi.re / best, vi.im / best };
            A[i * n + i].re =
                rn_sub(A[i * n + i].re, rn_add(rn_mul(li.re, vi.re), rn_mul(li.im, vi.im)));
            A[i * n + i].im = 0.0;
            for (int j = i + 1; j < n; ++j) {
                const cplx vj = A[j * n + k]; // li * conj(vj)
                const double re = rn_add(rn_mul(li.re, vj.re), rn_mul(li.im, vj.im));
                const double im = rn_sub(rn_mul(li.im, vj.re), rn_mul(li.re, vj.im));
                A[i * n + j] = { rn_sub(A[i * n + j].re, re), rn_sub(A[i * n + j].im, im) };
                A[j * n + i] = { A[i * n + j].re, -A[i * n + j].im };
            }
        }
        for (int i = k + 1; i < n; ++i)
            A[i * n + k] = { A[i * n + k].re / best, A[i * n + k].im / best };
    }
    return n;
}

//! L(row, col) of pivoted_ldl's output: unit diagonal, zero above.
MIMODET_HD inline cplx ldl_L(const cplx* A, int n, int row, int col)
{
    if (row == col)
        return { 1.0, 0.0 };
    if (row < col)
        return { 0.0, 0.0 };
    return A[row * n + col];
}

/*!
 * W = pinv(A_r) H^H (n x nr, row-major) from pivoted_ldl's output (A, perm, d, rank r)
 * of A = H^H H (zf) or H^H H + noise_var I (mmse): the inverse for r = n, else the
 * minimum-norm pseudo-inverse of the rank-r truncation P^T L_r D_r L_r^H P, written as
 * Y^H D_r^-1 Y with Y = (C C^H)^-1 C, C = L_r^H (r x n); for r = n, Y = L^-1. r = 0
 * gives W = 0. MAXN >= n sizes the scratch arrays.
 */
template <int MAXN = max_ant>
MIMODET_HD inline void ldl_weights(const cplx* A,
                                   const int* perm,
                                   const double* d,
                                   int r,
                                   const cplx* H,
                                   int nr,
                                   int n,
                                   cplx* W)
{
    cplx Y[MAXN * MAXN]; // r x n
    if (r == n) {
        // Y = L^-1, column by column (forward substitution of e_j).
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) {
                if (i < j) {
                    Y[i * n + j] = { 0.0, 0.0 };
                    continue;
                }
                cplx s = { i == j ? 1.0 : 0.0, 0.0 };
                for (int c = j; c < i; ++c) {
                    const cplx t = cmul(A[i * n + c], Y[c * n + j]);
                    s.re -= t.re;
                    s.im -= t.im;
                }
                Y[i * n + j] = s;
            }
    } else if (r > 0) {
        // M = C C^H = L_r^H L_r (r x r, positive definite: L_r's top block is unit
        // triangular), factorised M = U^H U (Cholesky), then Y = M^-1 C.
        cplx M[MAXN * MAXN];
        for (int a = 0; a < r; ++a)
            for (int c = 0; c < r; ++c) {
                cplx s = { 0.0, 0.0 };
                for (int b = 0; b < n; ++b) {
                    const cplx t = cmul(cconj(ldl_L(A, n, b, a)), ldl_L(A, n, b, c));
                    s.re += t.re;
                    s.im += t.im;
                }
                M[a * r + c] = s;
            }
        // In place: upper triangle of M becomes U (M = U^H U).
        for (int a = 0; a < r; ++a) {
            double dd = M[a * r + a].re;
            for (int c = 0; c < a; ++c)
                dd -= M[c * r + a].re * M[c * r + a].re + M[c * r + a].im * M[c * r + a].im;
            const double u = sqrt(dd);
            M[a * r + a] = { u, 0.0 };
            for (int b = a + 1; b < r; ++b) {
                cplx s = M[a * r + b];
                for (int c = 0; c < a; ++c) {
                    const cplx t = cmul(cconj(M[c * r + a]), M[c * r + b]);
                    s.re -= t.re;
                    s.im -= t.im;
                }
                M[a * r + b] = { s.re / u, s.im / u };
            }
        }
        for (int j = 0; j < n; ++j) {
            // Solve U^H z = C(:, j), then U y = z.
            cplx z[MAXN];
            for (int a = 0; a < r; ++a) {
                cplx s = cconj(ldl_L(A, n, j, a)); // C(a, j) = conj(L(j, a))
                for (int c = 0; c < a; ++c) {
                    const cplx t = cmul(cconj(M[c * r + a]), z[c]);
                    s.re -= t.re;
                    s.im -= t.im;
                }
                const double u = M[a * r + a].re;
                z[a] = { s.re / u, s.im / u };
            }
            for (int a = r - 1; a >= 0; --a) {
                cplx s = z[a];
                for (int c = a + 1; c < r; ++c) {
                    const cplx t = cmul(M[a * r + c], Y[c * n + j]);
                    s.re -= t.re;
                    s.im -= t.im;
                }
                const double u = M[a * r + a].re;
                Y[a * n + j] = { s.re / u, s.im / u };
            }
        }
    }
    // X = P^T (Y^H D^-1 Y) P, then W = X H^H.
    cplx X[MAXN * MAXN];
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            cplx s = { 0.0, 0.0 };
            for (int a = 0; a < r; ++a) {
                const cplx t = cmul(cconj(Y[a * n + i]), Y[a * n + j]);
                s.re += t.re / d[a];
                s.im += t.im / d[a];
            }
            X[perm[i] * n + perm[j]] = s;
        }
    for (int i = 0; i < n; ++i)
        for (int rr = 0; rr < nr; ++rr) {
            cplx s = { 0.0, 0.0 };
            for (int j = 0; j < n; ++j) {
                const cplx t = cmul(X[i * n + j], cconj(H[rr * n + j]));
                s.re += t.re;
                s.im += t.im;
            }
            W[i * nr + rr] = s;
        }
}

/*!
 * W = R^-1 Q^H (nt x nr, row-major) for a full-rank H = Q R (thin QR by classical
 * Gram-Schmidt with one reorthogonalisation, CGS2: Q orthonormal to rounding, so W is
 * H's pseudo-inverse to about 1e-16 cond(H), like a Householder-based one). Scratch for
 * Q (nr x nt) and R (nt x nt) is the caller's: MAXN sizes it (nt <= MAXN, nr <= max_ant).
 */
template <int MAXN = max_ant>
MIMODET_HD inline void qr_weights(const cplx* H, int nr, int nt, cplx* W)
{
    cplx Q[max_ant * MAXN]; // nr x nt
    cplx R[MAXN * MAXN];    // nt x nt, upper
    for (int j = 0; j < nt; ++j) {
        for (int r = 0; r < nr; ++r)
            Q[r * nt + j] = H[r * nt + j];
        for (int i = 0; i < nt; ++i)
            R[i * nt + j] = { 0.0, 0.0 };
        for (int pass = 0; pass < 2; ++pass) {
            cplx c[MAXN];
            for (int i = 0; i < j; ++i) { // c_i = q_i^H v (classical: all from one v)
                cplx s = { 0.0, 0.0 };
                for (int r = 0; r < nr; ++r) {
                    const cplx t = cmul(cconj(Q[r * nt + i]), Q[r * nt + j]);
                    s.re += t.re;
                    s.im += t.im;
                }
                c[i] = s;
            }
            for (int i = 0; i < j; ++i) {
                for (int r = 0; r < nr; ++r) {
                    const cplx t = cmul(Q[r * nt + i], c[i]);
                    Q[r * nt + j].re -= t.re;
                    Q[r * nt + j].im -= t.im;
                }
                R[i * nt + j].re += c[i].re;
                R[i * nt + j].im += c[i].im;
            }
        }
        double nn = 0.0;
        for (int r = 0; r < nr; ++r)
            nn += Q[r * nt + j].re * Q[r * nt + j].re + Q[r * nt + j].im * Q[r * nt + j].im;
        const double rjj = sqrt(nn);
        R[j * nt + j] = { rjj, 0.0 };
        for (int r = 0; r < nr; ++r)
            Q[r * nt + j] = { Q[r * nt + j].re / rjj, Q[r * nt + j].im / rjj };
    }
    // R W = Q^H, back substitution row by row from the bottom.
    for (int i = nt - 1; i >= 0; --i)
        for (int r = 0; r < nr; ++r) {
            cplx s = cconj(Q[r * nt + i]);
            for (int c = i + 1; c < nt; ++c) {
                const cplx t = cmul(R[i * nt + c], W[c * nr + r]);
                s.re -= t.re;
                s.im -= t.im;
            }
            const double u = R[i * nt + i].re;
            W[i * nr + r] = { s.re / u, s.im / u };
        }
}

/*!
 * zf weights by the rank rule: H's pseudo-inverse R^-1 Q^H (qr_weights) when H has full
 * rank, else the minimum-norm pseudo-inverse of the rank truncation (ldl_weights).
 * Returns the rank. (The CPU computes the full-rank case with Eigen's complete
 * orthogonal decomposition instead; the two agree to rounding.)
 */
template <int MAXN = max_ant>
MIMODET_HD inline int zf_weights(const cplx* H, int nr, int nt, cplx* W)
{
    cplx G[MAXN * MAXN];
    int perm[MAXN];
    double d[MAXN];
    gram(H, nr, nt, G);
    const int r = pivoted_ldl(G, nt, zf_rank_rtol, perm, d);
    if (r == nt)
        qr_weights<MAXN>(H, nr, nt, W);
    else
        ldl_weights<MAXN>(G, perm, d, r, H, nr, nt, W);
    return r;
}

//! The rank of H by the zf rank rule (the CPU's switch between its two pseudo-inverses).
template <int MAXN = max_ant>
MIMODET_HD inline int zf_rank(const cplx* H, int nr, int nt)
{
    cplx G[MAXN * MAXN];
    int perm[MAXN];
    double d[MAXN];
    gram(H, nr, nt, G);
    return pivoted_ldl(G, nt, zf_rank_rtol, perm, d);
}

/*!
 * mmse weights W = (H^H H + noise_var I)^-1 H^H (the matrix is positive definite; a
 * non-positive pivot, possible only when noise_var is below the rounding of H^H H,
 * truncates as in zf). Returns the rank of the factorisation (n_tx normally).
 */
template <int MAXN = max_ant>
MIMODET_HD inline int
mmse_weights(const cplx* H, int nr, int nt, double noise_var, cplx* W)
{
    cplx G[MAXN * MAXN];
    int perm[MAXN];
    double d[MAXN];
    gram(H, nr, nt, G);
    for (int i = 0; i < nt; ++i)
        G[i * nt + i].re += noise_var;
    const int r = pivoted_ldl(G, nt, 0.0, perm, d);
    ldl_weights<MAXN>(G, perm, d, r, H, nr, nt, W);
    return r;
}

//! The least post-equalisation variance of an mmse stream: 1 - mu rounds to 0 below it
//! (2^-53, half of double's epsilon).
constexpr double mmse_min_post_var = 1.0 / 9007199254740992.0;

//! Unbiased MMSE: x_k / mu_k = s_k + e with var(e) = (1 - mu_k) / mu_k for unit-energy
//! symbols; 0 (the stream is unusable) for mu <= 0 or not a number. mu at or above 1 (a
//! noise_var below the rounding of H^H H: a noise-free stream) gives mmse_min_post_var,
//! so its LLRs saturate as those of the other detectors do, instead of being erased.
MIMODET_HD inline double mmse_post_var(double mu)
{
    if (!(mu > 0))
        return 0.0;
    return mu < 1 ? (1.0 - mu) / mu : mmse_min_post_var;
}

/*!
 * Max-log LLRs of one equalised stream: x = (x_re, x_im) is W_k y, gain the stream's
 * gain (zf 1, mmse mu_k) and post_var the variance of x / gain around the symbol. A
 * stream with gain <= 0 or a post_var that is not finite and > 0 gets LLRs 0. Bit b of
 * the q lives on the I (even b) or Q (odd b) PAM of pam[0 .. 2^pam_bits - 1]; the LLR
 * is maxlog_llr of the two per-bit minimum squared distances (clip and all).
 */
MIMODET_HD inline void demap_stream(double x_re,
                                    double x_im,
                                    double gain,
                                    double post_var,
                                    const double* pam,
                                    int pam_bits,
                                    int q,
                                    float llr_clip,
                                    float* out)
{
    const bool usable = gain > 0 && post_var > 0 && isfinite(post_var);
    const double xr = usable ? x_re / gain : 0.0;
    const double xi = usable ? x_im / gain : 0.0;
    const double inv_var = usable ? 1.0 / post_var : 0.0;
    const int n_levels = 1 << pam_bits;
    for (int b = 0; b < q; ++b) {
        const double v = (b % 2 == 0) ? xr : xi;
        const int pb = b / 2; // bit index within the PAM label
        double m0 = INFINITY, m1 = INFINITY;
        for (int l = 0; l < n_levels; ++l) {
            const double e = v - pam[l];
            const double dist = e * e;
            if ((l >> (pam_bits - 1 - pb)) & 1) {
                if (dist < m1)
                    m1 = dist;
            } else if (dist < m0) {
                m0 = dist;
            }
        }
        out[b] = inv_var > 0 ? maxlog_llr(m0, m1, inv_var, llr_clip) : 0.0f;
    }
}

} // namespace linear
} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_LINEAR_COMMON_H */
