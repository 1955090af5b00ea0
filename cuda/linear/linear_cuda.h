/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA linear detectors zf and mmse (LLR output). Same weights, gains, post-equalisation
// variances, demapper, clipping and zf rank rule as the CPU (lib/detect/linear/linear.cc,
// with the shared pieces in lib/detect/linear/linear_common.h), in double precision.

#ifndef INCLUDED_MIMODET_CUDA_LINEAR_CUDA_H
#define INCLUDED_MIMODET_CUDA_LINEAR_CUDA_H

#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

//! The CUDA zf or mmse detector for cfg (algorithm "zf" or "mmse", already validated).
detector::sptr make_linear_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CUDA_LINEAR_CUDA_H */
