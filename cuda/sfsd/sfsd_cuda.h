/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA soft-output fixed-complexity sphere decoder (max-log LLRs). Same list, LLRs,
// parameters and defaults as the CPU SFSD (lib/detect/sfsd/sfsd.cc,
// lib/detect/fsd/fsd_common.h); the GPU layout follows Roger et al. 2012 (one thread per
// FSD branch, then one thread per list-extension candidate).

#ifndef INCLUDED_MIMODET_CUDA_SFSD_CUDA_H
#define INCLUDED_MIMODET_CUDA_SFSD_CUDA_H

#include "detect/algorithm_registry.h" // cuda_unsupported
#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

//! Largest M^T the CUDA SFSD handles: a vector's FSD list lives in one block's shared
//! memory (the CUDA FSD's bound too).
constexpr long long sfsd_cuda_max_paths = 1024;

/*!
 * The CUDA SFSD for cfg (algorithm "sfsd", already validated). When M^T exceeds
 * sfsd_cuda_max_paths: throws cuda_unsupported. Invalid T / N_iter throw
 * std::invalid_argument (the CPU's rules, fsd_common.h).
 */
detector::sptr make_sfsd_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_SFSD_CUDA_H */
