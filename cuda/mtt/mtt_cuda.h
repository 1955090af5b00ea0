/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA multi-pass trellis traversal soft detector (LLR output). Same algorithm, QR and
// defaults as the CPU MTT (lib/detect/mtt/mtt.cc, parameters from
// lib/detect/mtt/mtt_common.h); the GPU layout follows the journal paper (Q threads per
// received vector, several vectors per block, the Q^2 edge weights of a stage shared in
// shared memory).

#ifndef INCLUDED_MIMODET_CUDA_MTT_CUDA_H
#define INCLUDED_MIMODET_CUDA_MTT_CUDA_H

#include "detect/algorithm_registry.h" // cuda_unsupported
#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

/*!
 * The CUDA MTT for cfg (algorithm "mtt", already validated). Supports n_tx 1..8,
 * n_rx n_tx..8 and QPSK/16QAM/64QAM; outside that: throws cuda_unsupported.
 */
detector::sptr make_mtt_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_MTT_CUDA_H */
