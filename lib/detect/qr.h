/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Channel preprocessing shared by the detectors: the real-valued model (PSD paper Eq. 3),
// QR by Householder, sorted QR (SQRD, Wuebben et al. 2001) and the FSD ordering
// (Barbero & Thompson). Each decomposition returns the column permutation it applied:
// H(:, perm[k]) is column k of Q R, so a detector that finds s' for the permuted system
// recovers s[perm[k]] = s'[k].

#ifndef INCLUDED_MIMODET_CORE_QR_H
#define INCLUDED_MIMODET_CORE_QR_H

#include "detect/kernel.h"
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

//! Real-valued model: H_r = [Re H, -Im H; Im H, Re H], y_r = [Re y; Im y],
//! s_r = [Re s; Im s]. Real index k < n_tx is Re s_k, k >= n_tx is Im s_(k-n_tx).
MatR real_model(const MatC& H);
//! The same H_r written column-major (leading dimension 2 n_rx) into Hr, which holds
//! 4 n_rx n_tx doubles: for callers that keep the buffer from one matrix to the next.
void real_model(const MatC& H, double* Hr);
VecR real_model(const cd* y, int n_rx);

template <typename Mat>
struct qr_result {
    Mat R;                 //!< n_tx x n_tx upper triangular (thin)
    Mat Q;                 //!< n_rx x n_tx, orthonormal columns
    std::vector<int> perm; //!< column k of Q R is column perm[k] of H
};

//! Thin QR by Householder reflections (Eigen), no reordering; diag(R) made real >= 0.
template <typename Mat>
qr_result<Mat> qr_householder(const Mat& H);

//! Sorted QR decomposition (Wuebben): modified Gram-Schmidt that picks, at each step,
//! the remaining column of least norm, so the detection order (last column first)
//! starts with the strongest stream.
template <typename Mat>
qr_result<Mat> qr_sorted(const Mat& H);

//! qr_sorted of a real matrix on caller-owned storage, without allocating
//! (qr_sorted<MatR> runs this). Q: on entry H, m x n column-major (leading dimension m),
//! on return Q. R(i, j) is stored at R[i * r_row + j * r_col] (r_row = 1, r_col = n:
//! column-major; r_row = n, r_col = 1: row-major), n x n, fully written. perm: n entries.
//! norm2: n doubles of scratch. The four buffers must not overlap.
void qr_sorted_real(
    double* Q, int m, int n, double* R, int r_row, int r_col, int* perm, double* norm2);

//! QR with the column order given (perm[k] = column of H placed at position k).
template <typename Mat>
qr_result<Mat> qr_permuted(const Mat& H, const std::vector<int>& perm);

//! FSD ordering (Barbero & Thompson 2008): detection proceeds from the last column
//! (level n_tx-1) to the first. The first `full_levels` detected levels take the streams
//! with the largest post-detection noise amplification (largest diagonal of
//! (H_k^H H_k)^-1 over the remaining streams), the remaining levels the smallest.
//! Returns perm as in qr_result.
template <typename Mat>
std::vector<int> fsd_ordering(const Mat& H, int full_levels);

//! inv[k] = sic_inverse(R(k,k), max |R(i,j)|) (fsd_common.h) for k < R.cols().
void sic_inverse_diagonal(const MatC& R, double* inv);

//! y' = Q^H y for one received vector.
template <typename Mat, typename Vec>
Vec rotate(const qr_result<Mat>& qr, const Vec& y)
{
    return qr.Q.adjoint() * y;
}

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
