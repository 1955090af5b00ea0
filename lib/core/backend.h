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
#include <cstddef>

namespace gr {
namespace mimodet {
namespace core {

//! True when the library was built with the CUDA backend.
bool cuda_built();
//! A CUDA detector for cfg (already validated), or nullptr when the algorithm has no
//! CUDA implementation.
detector::sptr make_cuda_detector(const detector_config& cfg);

//! Host memory for batches: page-locked where the CUDA backend is built and a device
//! exists (the GPU pipeline then copies from and to it directly, without staging), else
//! ordinary memory. Throws std::bad_alloc when none can be had.
void* host_alloc(size_t bytes);
void host_free(void* p);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
