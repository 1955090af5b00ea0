/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Channel estimation and detection of one LTE slot (no GNU Radio types): the core of the
// mimo_receiver block.

#ifndef INCLUDED_MIMODET_CORE_SLOT_RECEIVER_H
#define INCLUDED_MIMODET_CORE_SLOT_RECEIVER_H

#include "detect/backend.h"
#include "phy/channel_estimation.h"
#include "phy/ofdm_demodulation.h"
#include "receiver/slot_detection.h"
#include "util/host_memory.h"
#include <gnuradio/mimodet/api.h>
#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

/*!
 * \brief channel_estimation, then slot_detection, on one slot. The results are those of
 * the two in sequence (estimate(), then detect_bits / detect_llr with its H and noise
 * variance).
 *
 * Fused (fused()): the detector gathers on its CUDA device and the GPU estimator exists.
 * The slot's grids are uploaded once, the estimator's kernels read the pilots there and
 * write H next to them, and the detector's kernels read it there
 * (slot_detection::detect_estimated): H never comes back to the host. A slot whose
 * pilots the GPU finds unusable takes the host path below (as the GPU estimator's
 * estimate() does).
 * Otherwise: the slot is estimated into a host H (on the GPU where gpu_estimation and a
 * device exist, else on the CPU), then detected.
 *
 * Not thread safe: one call at a time per object.
 */
class MIMODET_API slot_receiver
{
public:
    using cf = std::complex<float>;

    /*!
     * grid: the cell (n_tx = its ports); det: the detector (n_tx x n_rx); est_threads:
     * the CPU estimator's threads (>= 1); gpu_estimation: estimate on the GPU where a
     * device exists (fused with a detector that gathers on its device);
     * time_domain_backoff: where set, the receiver also takes time-domain slots
     * (receive_time_bits / receive_time_llr), demodulated with this FFT back-off
     * (ofdm_demodulation: -1 default, compensated; std::invalid_argument outside
     * -1..cp_other), on the GPU where fused; pilot_ratio_db: the estimator's
     * (channel_estimation: the transmitter's pilot-to-data ratio in dB, NaN to estimate
     * it; an estimated ratio is measured from the grids on the host, so the receiver is
     * then not fused: the GPU estimator, where used, takes the host's grids).
     */
    slot_receiver(const lte_grid& grid,
                  int n_rx,
                  detector::sptr det,
                  int est_threads,
                  bool gpu_estimation,
                  std::optional<int> time_domain_backoff = std::nullopt,
                  double pilot_ratio_db = 0.0);
    ~slot_receiver();

    const slot_detection& detection() const { return d_det; }
    slot_detection& detection() { return d_det; }
    const channel_estimation& estimation() const { return d_est; }
    //! True where estimation and detection run back to back on the device.
    bool fused() const { return d_fused; }
    //! True where the channel is estimated on the GPU (fused or not).
    bool gpu_estimation() const { return d_gpu != nullptr; }
    //! The OFDM demodulation of time-domain slots, or nullptr (grids only).
    const ofdm_demodulation* demodulation() const { return d_ofdm.get(); }
    //! True where time-domain slots are demodulated on the GPU (fused).
    bool gpu_demodulation() const { return d_gpu_ofdm != nullptr; }

    struct result {
        std::string why;     //!< why the slot was not detected (outputs zeros), or empty
        float noise_var = 0; //!< the estimate (NaN for unusable pilots)
        size_t truncated = 0; //!< vectors a PSD deadline cut short (count_truncated)
        //! Detected vectors on a rank-deficient or zero channel, or with a saturated LLR
        //! (slot_detection::degenerate_vectors; where H is estimated on the device, the
        //! saturated LLRs only).
        size_t degenerate = 0;
    };
    //! Slot ns: n_rx grids of 7 * n_sc -> detection().values_per_slot(ns) bits (hard
    //! decisions, or a soft detector's LLR signs).
    result receive_bits(int ns, const cf* const* grids, uint8_t* out, bool count_truncated = false);
    //! As receive_bits, with max-log LLRs (soft detectors only: std::logic_error else).
    result receive_llr(int ns, const cf* const* grids, float* out);

    /*!
     * Time-domain input (demodulation() only, else std::logic_error): slot ns's n_rx
     * time-domain slots (slot_samples() values each, from the first sample of symbol
     * 0's CP) -> as receive_bits / receive_llr with the grids ofdm_demodulation makes of
     * them. Fused, the samples go to the device and are demodulated there; samples that
     * are not finite, and slots the GPU estimator refuses, are demodulated on the CPU
     * and take the grid path, so the results are those of ofdm_demod followed by this
     * receiver up to float rounding (the FFTs).
     */
    result receive_time_bits(int ns,
                             const cf* const* samples,
                             uint8_t* out,
                             bool count_truncated = false);
    result receive_time_llr(int ns, const cf* const* samples, float* out);

    /*!
     * GPU demodulation only (else false): page-locks [p, p + bytes), the block's input
     * buffer, so that time-domain slots lying in it are uploaded from there without a
     * copy on the host (gpu_ofdm_demodulation::register_host_memory, which says what
     * mirrored means). The memory must stay mapped until unregister_input_memory() or
     * the receiver's end.
     */
    bool register_input_memory(const void* p, size_t bytes, bool mirrored = false);
    void unregister_input_memory();

    //! One dummy slot through every stage, so the GPU buffers and the estimator's filters
    //! of a typical slot are in place before real-time operation.
    void prepare();

private:
    result receive(int ns, const cf* const* grids, uint8_t* bits, float* llr, bool count_truncated);
    result receive_time(
        int ns, const cf* const* samples, uint8_t* bits, float* llr, bool count_truncated);

    channel_estimation d_est;
    slot_detection d_det;
    std::unique_ptr<gpu_channel_estimation> d_gpu;
    bool d_fused = false;
    host_vector<cf> d_H; //!< the host path's H
    // Time-domain input: the tables, the CPU path's FFT and grids, the GPU demodulator.
    std::unique_ptr<ofdm_demodulation> d_ofdm;
    std::unique_ptr<ofdm_demodulation::fft_type> d_fft;
    std::vector<cf> d_time_grids;
    std::vector<const cf*> d_time_grid_ptrs;
    std::unique_ptr<gpu_ofdm_demodulation> d_gpu_ofdm;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
