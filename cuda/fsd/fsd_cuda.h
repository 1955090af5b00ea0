/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA fixed-complexity sphere decoder (hard output). Same algorithm, ordering, T and
// defaults as the CPU FSD (lib/detect/fsd/fsd.cc, parameters from
// lib/detect/fsd/fsd_common.h); the GPU layout follows Roger et al. 2012 (one thread per
// FSD branch).

#ifndef INCLUDED_MIMODET_CUDA_FSD_CUDA_H
#define INCLUDED_MIMODET_CUDA_FSD_CUDA_H

#include "detect/algorithm_registry.h" // cuda_unsupported
#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

//! Largest M^T the CUDA FSD handles: a vector's branches live in one thread block.
constexpr long long fsd_cuda_max_paths = 1024;

/*!
 * The CUDA FSD for cfg (algorithm "fsd", already validated). When M^T exceeds
 * fsd_cuda_max_paths: throws cuda_unsupported.
 */
detector::sptr make_fsd_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_FSD_CUDA_H */
