/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The library's side of gr::mimodet::detector that its public header leaves out: the
// slot detection's call on inputs it already checked, and the fused GPU path (a backend
// that gathers a packed slot on its device, optionally after a device stage such as the
// GPU channel estimator). A backend offers the fused path by implementing device_gather
// next to detector; detector_access::gather() finds it.

#ifndef INCLUDED_MIMODET_CORE_DETECTOR_INTERNAL_H
#define INCLUDED_MIMODET_CORE_DETECTOR_INTERNAL_H

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <gnuradio/mimodet/detector.h>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

//! What became of a slot on the fused path: the one answer its caller decides on.
enum class staged_outcome {
    detected,      //!< detected on the device: the outputs hold the slot's results
    retry_on_host, //!< the device path cannot take the slot (its pilots or samples):
                   //!< nothing usable was detected, the host path decides
    unusable,      //!< no path can detect the slot (its H is not finite)
};

//! A stage's or a staged call's result: the outcome and, where detected, the slot's
//! noise variance.
struct staged_result {
    staged_outcome outcome = staged_outcome::retry_on_host;
    float noise_var = 0.0f;
};

//! A noise variance from the host as a stage result: detected where it is finite and
//! > 0, else retry_on_host (the estimator found the slot unusable).
inline staged_result staged_noise_var(float noise_var)
{
    const bool usable = std::isfinite(noise_var) && noise_var > 0.0f;
    return { usable ? staged_outcome::detected : staged_outcome::retry_on_host,
             noise_var };
}

/*!
 * Work on the device between a packed slot's upload and its detection: a fused
 * receiver's channel estimation, which writes the slot's H on the device next to its
 * grids (slot_receiver; see device_gather::run_staged).
 */
class device_stage
{
public:
    virtual ~device_stage() = default;
    /*!
     * dev_packed: the packed slot on the device, its n_rx grids already there; writes
     * its H after them. stream: the cudaStream_t the detection follows on (work enqueued
     * there needs no wait; the stage may synchronise it). detected with the slot's noise
     * variance, or another outcome where the slot cannot be detected on the device
     * (nothing is then detected).
     */
    virtual staged_result run(void* dev_packed, void* stream) = 0;
    /*!
     * Where the last run() left the slot's noise variance on the device (a float its
     * work on the stream writes), for the detection to read instead of run()'s value;
     * nullptr (the default): run()'s value.
     */
    virtual const float* device_noise_var() const { return nullptr; }
    /*!
     * Called once the stream has passed the detection that followed a detected run()
     * (result): the slot's final result, which may say the slot turned out not
     * detectable (its outputs are then not used). The default returns result.
     */
    virtual staged_result finish(const staged_result& result) { return result; }
};

/*!
 * A slot's layout for a backend that gathers on its device (slot_detection, one slot per
 * call): the batch's segments and, per batch vector and matrix, where its inputs lie in a
 * packed slot (n_rx grids of grid_len values, then the slot's H) and where its outputs go
 * in the slot's output order.
 */
struct gather_layout {
    std::vector<batch_segment> segments; //!< none empty
    //! Per vector: its grid element (antenna r: + r * grid_len).
    std::vector<int32_t> y_src;
    std::vector<int32_t> h_src;   //!< per matrix: its H's first value in the packed slot
    std::vector<int32_t> out_pos; //!< per vector: its place among the slot's vectors
    size_t grid_len = 0;
    size_t packed_len = 0; //!< values of a packed slot
};

//! The fused path of a backend that gathers on its device (the CUDA backend).
class device_gather
{
public:
    //! Registers a layout: its id, or -1 where the backend does not gather this layout
    //! (the caller then gathers on the host).
    virtual int add_gather_layout(const gather_layout& layout) = 0;
    /*!
     * Detects one packed slot (checked: finite, noise_var > 0) with layout id. Exactly
     * one of bits / llr non-null; outputs in the slot's order (out_pos) and as a detect
     * call's (LLRs scaled alike); stats (optional) in batch order.
     */
    virtual void run_gathered(int layout,
                              const std::complex<float>* packed,
                              float noise_var,
                              uint8_t* bits,
                              float* llr,
                              vector_stats* stats) = 0;
    /*!
     * As run_gathered, but only the grids of packed (the first n_rx * grid_len values)
     * are uploaded, or nothing where packed is nullptr (the stage then writes the grids
     * on the device first); stage writes H on the device and gives the noise variance.
     * Returns the stage's result: where it is not detected, nothing usable was detected.
     */
    virtual staged_result run_staged(int layout,
                                     const std::complex<float>* packed,
                                     device_stage& stage,
                                     uint8_t* bits,
                                     float* llr,
                                     vector_stats* stats) = 0;

protected:
    ~device_gather() = default;
};

//! The library's access to a detector beyond its public interface.
class detector_access
{
public:
    using cf = std::complex<float>;
    //! A segmented detect call whose input values the caller already checked (finite,
    //! noise_var > 0): the buffers' presence is checked, their values are not scanned.
    static void detect_checked(detector& det,
                               const cf* H,
                               const cf* y,
                               const std::vector<batch_segment>& segments,
                               const float* noise_var,
                               uint8_t* bits,
                               float* llr,
                               vector_stats* stats)
    {
        det.run_checked(
            H, y, segments, noise_var, bits, llr, stats, llr != nullptr, true);
    }
    //! The detector's fused path, or nullptr where its backend gathers on the host.
    static device_gather* gather(detector& det)
    {
        return dynamic_cast<device_gather*>(&det);
    }
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
