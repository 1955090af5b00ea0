/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detect/fsd/fsd_common.h"
#include "detect/qr.h"
#include <algorithm>
#include <cmath>
#include <numeric>

namespace gr {
namespace mimodet {
namespace core {

void real_model(const MatC& H, double* Hr)
{
    const int nr = static_cast<int>(H.rows()), nt = static_cast<int>(H.cols());
    const int m = 2 * nr; // leading dimension
    for (int c = 0; c < nt; ++c)
        for (int i = 0; i < nr; ++i) {
            const cd h = H(i, c);
            Hr[c * m + i] = h.real();
            Hr[c * m + nr + i] = h.imag();
            Hr[(nt + c) * m + i] = -h.imag();
            Hr[(nt + c) * m + nr + i] = h.real();
        }
}

MatR real_model(const MatC& H)
{
    MatR Hr(2 * H.rows(), 2 * H.cols());
    real_model(H, Hr.data());
    return Hr;
}

VecR real_model(const cd* y, int n_rx)
{
    VecR yr(2 * n_rx);
    for (int i = 0; i < n_rx; ++i) {
        yr[i] = y[i].real();
        yr[n_rx + i] = y[i].imag();
    }
    return yr;
}

namespace {

template <typename Scalar>
Scalar unit_phase(Scalar x)
{
    using std::abs;
    const double a = abs(x);
    return a > 0 ? x / a : Scalar(1);
}

// Makes diag(R) real and non-negative by moving phases into Q (Q R unchanged).
template <typename Mat>
void normalise_diagonal(qr_result<Mat>& r)
{
    for (Eigen::Index k = 0; k < r.R.rows(); ++k) {
        const auto ph = unit_phase(r.R(k, k));
        if (ph != typename Mat::Scalar(1)) {
            r.R.row(k) *= Eigen::numext::conj(ph);
            r.Q.col(k) *= ph;
        }
    }
}

} // namespace

template <typename Mat>
qr_result<Mat> qr_householder(const Mat& H)
{
    const auto n = H.cols(), m = H.rows();
    Eigen::HouseholderQR<Mat> hqr(H);
    qr_result<Mat> r;
    r.R = hqr.matrixQR().topRows(n).template triangularView<Eigen::Upper>();
    r.Q = hqr.householderQ() * Mat::Identity(m, n);
    r.perm.resize(n);
    std::iota(r.perm.begin(), r.perm.end(), 0);
    normalise_diagonal(r);
    return r;
}

template <typename Mat>
qr_result<Mat> qr_permuted(const Mat& H, const std::vector<int>& perm)
{
    Mat Hp(H.rows(), H.cols());
    for (Eigen::Index k = 0; k < H.cols(); ++k)
        Hp.col(k) = H.col(perm[k]);
    qr_result<Mat> r = qr_householder(Hp);
    r.perm = perm;
    return r;
}

template <typename Mat>
qr_result<Mat> qr_sorted(const Mat& H)
{
    // Wuebben's SQRD: modified Gram-Schmidt, at step k pick the remaining column with the
    // smallest residual norm; it lands at position k, so the last positions (detected
    // first) hold the strongest streams.
    const auto m = H.rows(), n = H.cols();
    qr_result<Mat> r;
    r.Q = H;
    r.R = Mat::Zero(n, n);
    r.perm.resize(n);
    std::iota(r.perm.begin(), r.perm.end(), 0);
    std::vector<double> norm2(n);
    for (Eigen::Index k = 0; k < n; ++k)
        norm2[k] = r.Q.col(k).squaredNorm();
    for (Eigen::Index i = 0; i < n; ++i) {
        const auto k = std::min_element(norm2.begin() + i, norm2.end()) - norm2.begin();
        if (k != i) {
            r.Q.col(i).swap(r.Q.col(k));
            r.R.col(i).swap(r.R.col(k));
            std::swap(norm2[i], norm2[k]);
            std::swap(r.perm[i], r.perm[k]);
        }
        const double nrm = std::sqrt(std::max(norm2[i], 0.0));
        r.R(i, i) = nrm;
        if (nrm > 0)
            r.Q.col(i) /= nrm;
        else
            r.Q.col(i).setZero(); // rank-deficient: R(i,i) = 0, column carries nothing
        for (Eigen::Index l = i + 1; l < n; ++l) {
            r.R(i, l) = r.Q.col(i).dot(r.Q.col(l)); // Eigen's dot conjugates the first
            r.Q.col(l) -= r.R(i, l) * r.Q.col(i);
            norm2[l] = r.Q.col(l).squaredNorm();
        }
    }
    (void)m;
    return r;
}

template <typename Mat>
std::vector<int> fsd_ordering(const Mat& H, int full_levels)
{
    // Positions are filled from the last (detected first) to the first. At each step the
    // candidate streams are the not-yet-placed ones; the noise amplification of stream j
    // is the diagonal entry of (H_rem^H H_rem)^-1 where H_rem holds the remaining columns.
    const int n = static_cast<int>(H.cols());
    std::vector<int> remaining(n);
    std::iota(remaining.begin(), remaining.end(), 0);
    std::vector<int> perm(n);
    for (int pos = n - 1, step = 0; pos >= 0; --pos, ++step) {
        Mat Hrem(H.rows(), remaining.size());
        for (size_t c = 0; c < remaining.size(); ++c)
            Hrem.col(c) = H.col(remaining[c]);
        Mat G = Hrem.adjoint() * Hrem;
        const double ridge = fsd_ordering_ridge(G.diagonal().real().cwiseAbs().maxCoeff());
        G.diagonal().array() += typename Mat::Scalar(ridge);
        const Mat Ginv = G.ldlt().solve(Mat::Identity(G.rows(), G.cols()));
        size_t pick = 0;
        for (size_t c = 1; c < remaining.size(); ++c) {
            using std::real;
            const double a = real(Ginv(c, c)), b = real(Ginv(pick, pick));
            if (step < full_levels ? a > b : a < b)
                pick = c;
        }
        perm[pos] = remaining[pick];
        remaining.erase(remaining.begin() + pick);
    }
    return perm;
}

void sic_inverse_diagonal(const MatC& R, double* inv)
{
    const double scale = R.cwiseAbs().maxCoeff();
    for (int k = 0; k < R.cols(); ++k)
        inv[k] = sic_inverse(R(k, k).real(), scale);
}

template qr_result<MatR> qr_householder(const MatR&);
template qr_result<MatC> qr_householder(const MatC&);
// The real model's sorted QR (the PSD's) as plain loops in a fixed order: the CUDA PSD's
// preprocessing (psd_cuda.cu, psd_preprocess_one) does the same operations in the same
// order, so R, Q and the ordering are equal on both bit for bit (Eigen's vectorised
// norms would sum in another order and break ties between equal-norm columns otherwise).
namespace {

// qr_sorted_real's body. M, N > 0 fix m and n at compile time so that the loops over the
// small sizes unroll and vectorise element by element (the same operations in the same
// order: every sum stays a sequential loop); M = N = 0 takes them from m_, n_.
template <int M, int N>
void sorted_qr_loops(double* __restrict Q,
                     int m_,
                     int n_,
                     double* __restrict R,
                     int r_row,
                     int r_col,
                     int* __restrict perm,
                     double* __restrict norm2)
{
    const int m = M > 0 ? M : m_, n = N > 0 ? N : n_;
    const auto q = [Q, m](int e, int k) -> double& {
        return Q[static_cast<size_t>(k) * m + e];
    };
    const auto r = [R, r_row, r_col](int i, int j) -> double& {
        return R[i * r_row + j * r_col];
    };
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
            r(i, j) = 0.0;
    for (int k = 0; k < n; ++k)
        perm[k] = k;
    for (int k = 0; k < n; ++k) {
        double s = 0.0;
        for (int i = 0; i < m; ++i)
            s += q(i, k) * q(i, k);
        norm2[k] = s;
    }
    for (int i = 0; i < n; ++i) {
        int k = i;
        for (int j = i + 1; j < n; ++j)
            if (norm2[j] < norm2[k])
                k = j;
        if (k != i) {
            for (int e = 0; e < m; ++e)
                std::swap(q(e, i), q(e, k));
            for (int e = 0; e < n; ++e)
                std::swap(r(e, i), r(e, k));
            std::swap(norm2[i], norm2[k]);
            std::swap(perm[i], perm[k]);
        }
        const double nrm = std::sqrt(std::max(norm2[i], 0.0));
        r(i, i) = nrm;
        if (nrm > 0.0)
            for (int e = 0; e < m; ++e)
                q(e, i) /= nrm;
        else
            for (int e = 0; e < m; ++e)
                q(e, i) = 0.0; // rank-deficient: the column carries nothing
        for (int l = i + 1; l < n; ++l) {
            double d = 0.0;
            for (int e = 0; e < m; ++e)
                d += q(e, i) * q(e, l);
            r(i, l) = d;
            double s = 0.0;
            for (int e = 0; e < m; ++e) {
                q(e, l) -= d * q(e, i);
                s += q(e, l) * q(e, l);
            }
            norm2[l] = s;
        }
    }
}

} // namespace

void qr_sorted_real(
    double* Q, int m, int n, double* R, int r_row, int r_col, int* perm, double* norm2)
{
    // The real models of 2, 4 and 8 antennas square.
    if (m == 4 && n == 4)
        sorted_qr_loops<4, 4>(Q, m, n, R, r_row, r_col, perm, norm2);
    else if (m == 8 && n == 8)
        sorted_qr_loops<8, 8>(Q, m, n, R, r_row, r_col, perm, norm2);
    else if (m == 16 && n == 16)
        sorted_qr_loops<16, 16>(Q, m, n, R, r_row, r_col, perm, norm2);
    else
        sorted_qr_loops<0, 0>(Q, m, n, R, r_row, r_col, perm, norm2);
}

template <>
qr_result<MatR> qr_sorted(const MatR& H)
{
    const int m = static_cast<int>(H.rows()), n = static_cast<int>(H.cols());
    qr_result<MatR> r;
    r.Q = H;
    r.R.resize(n, n);
    r.perm.resize(n);
    std::vector<double> norm2(n);
    qr_sorted_real(r.Q.data(), m, n, r.R.data(), 1, n, r.perm.data(), norm2.data());
    return r;
}
template qr_result<MatC> qr_sorted(const MatC&);
template qr_result<MatR> qr_permuted(const MatR&, const std::vector<int>&);
template qr_result<MatC> qr_permuted(const MatC&, const std::vector<int>&);
template std::vector<int> fsd_ordering(const MatR&, int);
template std::vector<int> fsd_ordering(const MatC&, int);

} // namespace core
} // namespace mimodet
} // namespace gr
