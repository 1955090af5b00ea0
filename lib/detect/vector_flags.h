/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The per-vector flags of vector_stats (vector_flag): one rule for every detector and
// backend, applied on the host to the inputs and outputs of a call, so the CPU and the
// CUDA backends flag the same vectors. The rank rule is linear_common.h's zf rank rule
// (explicitly rounded, __host__ __device__), so a device-side check would decide alike.

#ifndef INCLUDED_MIMODET_CORE_VECTOR_FLAGS_H
#define INCLUDED_MIMODET_CORE_VECTOR_FLAGS_H

#include <gnuradio/mimodet/detector.h>
#include <complex>
#include <cstddef>
#include <cstdint>

namespace gr {
namespace mimodet {
namespace core {

//! True when H (n_rx x n_tx, row-major) is rank-deficient or all zeros by the zf rank
//! rule (linear::zf_rank < n_tx).
bool rank_deficient(const std::complex<float>* H, int n_rx, int n_tx);

/*!
 * Sets vector_stats::flags (no backend writes them) of a segmented batch (the non-empty
 * segments the backend saw, H and outputs laid out as detector::run's):
 * vector_flag_rank_deficient for every vector of a rank-deficient matrix,
 * vector_flag_saturated for a vector with an LLR at +-llr_saturation (llr non-null:
 * scaled LLRs, before any unscaling).
 */
void flag_vectors(const std::complex<float>* H,
                  int n_rx,
                  int n_tx,
                  const batch_segment* segments,
                  size_t n_seg,
                  const float* llr,
                  int bits_per_vector,
                  vector_stats* stats);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CORE_VECTOR_FLAGS_H */
