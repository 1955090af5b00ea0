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
#include <complex>
#include <cstddef>
#include <memory>

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

class channel_estimation;

//! Channel estimation on the GPU (cuda/channel_estimation_cuda.cu): channel_estimation's
//! method and tables, with the results of channel_estimation::estimate() up to float
//! rounding (the pilot statistics are summed in another order, and the phase rotations
//! use the GPU's sinf / cosf).
class gpu_channel_estimation
{
public:
    virtual ~gpu_channel_estimation() = default;
    //! As channel_estimation::estimate(); not reentrant (one call at a time).
    virtual float
    estimate(int ns, const std::complex<float>* const* grids, std::complex<float>* H) = 0;
    /*!
     * The fused receiver's path (slot_receiver): as estimate(), from a packed slot
     * already on the device (dev_packed: the n_rx grids of 7 * n_sc values one after
     * another), writing H right after the grids, on the caller's stream (a
     * cudaStream_t): the statistics are waited for, the Wiener step is only enqueued.
     * Returns NaN where the slot is unusable (H not written: the caller takes the CPU
     * path, estimate()'s fallback). Once the stream has passed this call's work,
     * h_finite() says whether every value of that H was finite.
     */
    virtual float estimate_packed(int ns, void* dev_packed, void* stream) = 0;
    virtual bool h_finite() const = 0;
};

//! A GPU estimator with cpu's configuration (cpu must outlive it: its tables, filter
//! cache and, for unusable slots, its estimate() are used), or nullptr when the library
//! has no CUDA backend or no device exists.
std::unique_ptr<gpu_channel_estimation>
make_cuda_channel_estimation(const channel_estimation& cpu);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
