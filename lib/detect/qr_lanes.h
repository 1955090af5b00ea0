/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// qr_sorted_real of several matrices at once, each in a SIMD lane (AVX2: 4, AVX-512: 8),
// with the same Q, R and permutation bit for bit: the CPU PSD preprocesses the matrices
// of a detect call in groups (cpu_kernel::preprocess).

#ifndef INCLUDED_MIMODET_CORE_QR_LANES_H
#define INCLUDED_MIMODET_CORE_QR_LANES_H

#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

//! Matrices qr_sorted_group takes at once for m x n matrices on this CPU, at most
//! `limit`: 8 or 4; 0 where it has no such instruction set or the size is not one of
//! the real models of 2x2, 4x2, 4x4, 8x4 and 8x8 channels.
int qr_sorted_group_lanes(int m, int n, int limit = 8);

/*!
 * qr_sorted_real (qr.h) of `count` matrices, 1 <= count <= lanes, lanes =
 * qr_sorted_group_lanes(m, n, lanes): Q[i], R[i] and perm[i] as qr_sorted_real's Q, R
 * and perm of matrix i (its norm2 scratch is internal). Throws std::invalid_argument for
 * a lane count, count or size it does not take.
 */
void qr_sorted_group(double* const* Q,
                     int count,
                     int lanes,
                     int m,
                     int n,
                     double* const* R,
                     int r_row,
                     int r_col,
                     int* const* perm);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_QR_LANES_H */
