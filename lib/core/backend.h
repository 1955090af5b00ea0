/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The seam between the core and the CUDA backend (cuda/). Built without CUDA, the
// stubs in backend_stub.cc answer "no device".

#ifndef INCLUDED_MIMODET_CORE_BACKEND_H
#define INCLUDED_MIMODET_CORE_BACKEND_H

#include <gnuradio/mimodet/detector.h>

namespace gr {
namespace mimodet {
namespace core {

//! True when the library was built with the CUDA backend.
bool cuda_built();
//! A CUDA detector for cfg (already validated), or nullptr when the algorithm has no
//! CUDA implementation.
detector::sptr make_cuda_detector(const detector_config& cfg);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
