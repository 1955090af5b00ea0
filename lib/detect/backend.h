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

#include "detect/algorithm_registry.h"
#include <gnuradio/mimodet/detector.h>
#include <complex>
#include <cstddef>
#include <memory>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

//! True when the library was built with the CUDA backend.
bool cuda_built();
//! The one check of a CUDA device index (detector_config::device) against the devices
//! present: empty where `device` can be used, else why not ("no CUDA device is
//! available", or the index and how many devices exist), for the caller's message.
std::string cuda_device_problem(int device);
//! std::invalid_argument ("<who>: device must be >= 0 ...") for a negative device index:
//! the check at construction of every detector and block that takes one.
void check_device_index(int device, const std::string& who);
//! The CUDA backend's one hook into the algorithm registry (algorithm_registry.h): gives
//! add the factory of every algorithm with a CUDA detector; built without CUDA, none.
void register_cuda_detectors(const cuda_registrar& add);

//! Host memory for batches: page-locked where the CUDA backend is built and a device
//! exists (the GPU pipeline then copies from and to it directly, without staging), else
//! ordinary memory. Throws std::bad_alloc when none can be had.
void* host_alloc(size_t bytes);
void host_free(void* p);

class channel_estimation;

//! Channel estimation on the GPU (cuda/phy/channel_estimation_cuda.cu):
//! channel_estimation's method and tables, with the results of
//! channel_estimation::estimate() up to float rounding (the pilot statistics are summed
//! in another order, and the phase rotations use the GPU's sinf / cosf).
class gpu_channel_estimation
{
public:
    virtual ~gpu_channel_estimation() = default;
    //! As channel_estimation::estimate(); not reentrant (one call at a time).
    virtual float
    estimate(int ns, const std::complex<float>* const* grids, std::complex<float>* H) = 0;
    /*!
     * For the fused receiver (slot_receiver, which uses enqueue_packed below and this
     * for a slot whose filter was not on the device yet): as estimate(), from a packed
     * slot already on the device (dev_packed: the n_rx grids of 7 * n_sc values one after
     * another), writing H right after the grids, on the caller's stream (a
     * cudaStream_t): the statistics are waited for (the model is decided on the host),
     * the Wiener step is only enqueued.
     * Returns NaN where the slot is unusable (H not written: the caller takes the CPU
     * path, estimate()'s fallback). Once the stream has passed this call's work,
     * h_finite() says whether every value of that H was finite.
     */
    virtual float estimate_packed(int ns, void* dev_packed, void* stream) = 0;
    /*!
     * As estimate_packed, with the model (noise variance, Wiener filter) decided on the
     * device too, so that nothing waits: all enqueued on stream. Returns the device
     * address of the slot's noise variance (a float the stream writes; 1 where the slot
     * gets no H), for the detection to read.
     */
    virtual const float* enqueue_packed(int ns, void* dev_packed, void* stream) = 0;
    /*!
     * Once the stream has passed enqueue_packed's work: the slot's noise variance, NaN
     * where it got no H (zeros were written instead). filter_missing: its Wiener filter was not on the device yet
     * (the slot may be fine): estimate it again with estimate_packed(), which uploads
     * the filter. Otherwise NaN means an unusable slot, as estimate_packed's.
     */
    virtual float packed_result(bool& filter_missing) const = 0;
    virtual bool h_finite() const = 0;
};

//! A GPU estimator with cpu's configuration (cpu must outlive it: its tables, filter
//! cache and, for unusable slots, its estimate() are used) on CUDA device `device`
//! (everything it allocates, and every call, whatever the calling thread's current
//! device), or nullptr when the library has no CUDA backend or `device` does not exist
//! (cuda_device_problem).
std::unique_ptr<gpu_channel_estimation>
make_cuda_channel_estimation(const channel_estimation& cpu, int device = 0);

class ofdm_demodulation;

//! OFDM demodulation on the GPU (cuda/phy/ofdm_demod_cuda.cu): ofdm_demodulation's
//! tables, with cuFFT for the FFTs, so its grids equal ofdm_demodulation::demodulate()'s
//! up to float rounding (the FFT's order of operations).
class gpu_ofdm_demodulation
{
public:
    virtual ~gpu_ofdm_demodulation() = default;
    /*!
     * The n_rx time-domain slots (slot_samples() values each, host memory): copied to
     * page-locked memory and uploaded on stream (a cudaStream_t), then demodulated into
     * dev_grids (device memory: the n_rx grids of grid_len() values one after another),
     * all enqueued on stream. Returns false, having enqueued nothing that is still
     * pending, where a value is NaN or Inf (the caller demodulates on the CPU, where
     * only the FFT windows count); slots uploaded from registered memory
     * (register_host_memory) are checked on the device instead (samples_finite()). Not
     * reentrant.
     */
    virtual bool demodulate_packed(const std::complex<float>* const* slots,
                                   void* dev_grids,
                                   void* stream) = 0;
    /*!
     * Page-locks [p, p + bytes) (the mimo_receiver block's input buffers) so that slots
     * lying wholly inside it are uploaded straight from there, with no copy on the host;
     * their samples are then checked for NaN and Inf on the device (demodulate_packed
     * still refuses them, once the stream has passed the check: samples_finite()). False
     * where CUDA refuses (the samples are then copied, as any others). Not reentrant with
     * demodulate_packed. mirrored: [p + bytes, p + 2 bytes) maps the same memory again
     * (GNU Radio's double-mapped buffers): only [p, p + bytes) is page-locked (CUDA
     * refuses the alias of registered pages), and a slot that runs from the first mapping
     * into the second is uploaded in two pieces. Memory already page-locked by another
     * user (another lane or receiver) is shared, not registered again: CUDA reports a
     * second registration as an error (cudaErrorHostMemoryAlreadyRegistered).
     */
    virtual bool
    register_host_memory(const void* p, size_t bytes, bool mirrored = false) = 0;
    //! Gives back every range of register_host_memory.
    virtual void unregister_host_memory() = 0;
    //! For the last demodulate_packed that uploaded straight from registered memory: once
    //! its stream has passed that call's work, whether its samples were all finite (true
    //! for calls that copied, which checked on the host).
    virtual bool samples_finite() const = 0;
    //! As demodulate_packed, host to host (tests, benchmarks): the grids into grids[r]
    //! (grid_len() values each), on the demodulator's own stream, waited for.
    virtual bool demodulate(const std::complex<float>* const* slots,
                            std::complex<float>* const* grids) = 0;
};

//! A GPU demodulator with cpu's tables for n_rx antennas (cpu must outlive it) on CUDA
//! device `device`, as make_cuda_channel_estimation, or nullptr when the library has no
//! CUDA backend or `device` does not exist.
std::unique_ptr<gpu_ofdm_demodulation> make_cuda_ofdm_demodulation(const ofdm_demodulation& cpu,
                                                                   int n_rx,
                                                                   int device = 0);

//! Test hook (cuda/psd/psd_cuda.cu): the CUDA PSD's preprocessing (real model, QR,
//! permutation) of n_mat channel matrices H (n_rx x n_tx each, row-major) by the
//! lane-parallel kernel the detector runs and by the one-thread-per-matrix kernel (the
//! other shapes' path); returns how many output values (R, Q^T, the depth-first
//! search's row weights and permutation entries) differ bit for bit. Throws
//! std::runtime_error without a CUDA backend or device.
size_t psd_cuda_preprocess_differences(
    const std::complex<float>* H, int n_mat, int n_rx, int n_tx, bool sorted);

//! Test hook (cuda/mtt/mtt_cuda.cu): the CUDA MTT's preprocessing (complex sorted or
//! plain QR, 1/R(k,k), permutation) of n_mat channel matrices H as above, by the
//! lane-parallel kernel the detector runs and by the one-thread-per-matrix kernel (the
//! other shapes' path); returns how many output values differ bit for bit. Throws
//! std::runtime_error without a CUDA backend or device.
size_t mtt_cuda_preprocess_differences(
    const std::complex<float>* H, int n_mat, int n_rx, int n_tx, bool sorted);

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
