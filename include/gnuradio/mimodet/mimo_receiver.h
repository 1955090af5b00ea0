/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_RECEIVER_H
#define INCLUDED_MIMODET_MIMO_RECEIVER_H

#include <cstdint>
#include <gnuradio/block.h>
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/block_config.h>
#include <gnuradio/mimodet/detector.h>
#include <string>

namespace gr {
namespace mimodet {

/*!
 * \brief Channel estimation and MIMO detection in one block: grids -> bits or LLRs. The
 * same results as channel_estimator followed by mimo_detector, with the GPU stages back
 * to back.
 * \ingroup mimodet
 *
 * \details
 * Inputs: the n_rx receive grids, gr_complex[7 * n_sc] per slot (element l * n_sc + k);
 * input 0 carries the "slot" tag (value: long ns). Output: as mimo_detector's (per slot
 * n_data(ns) * n_tx * q bits or LLRs, docs/SLOT_LAYOUT.md), with the "slot" tag on each
 * slot's first item, and the "truncated" tag where a PSD deadline cut searches short.
 *
 * With backend cuda, a slot's grids go to the GPU once: the channel estimator's kernels
 * (channel_estimator with backend cuda) read its pilots there and write H next to the
 * grids, where the detector's kernels read it. The slot's H never comes back to the host,
 * and there is no hand-over between two blocks. The device decides the noise and filter
 * model too, so the host waits once per slot, for the outputs (a slot whose filter is
 * not on the device yet runs again through the host's model).
 * With backend cpu the block runs the CPU estimator, then the CPU detector, one after the
 * other in its thread (channel_estimator and mimo_detector overlap them in two threads,
 * and sustain more slots per second on the CPU: docs/PERFORMANCE.md). The results are
 * those of the two blocks with the same backend. Two lanes (also with a PSD deadline)
 * work on two slots at once on the GPU; four for psd without the user's deadline, whose
 * slots wait on their search kernels' latency rather than the GPU's throughput
 * (docs/PERFORMANCE.md). For those, a slot also starts on an idle lane as soon as it
 * arrives, while earlier slots still run, and the slots go out in input order; a slot in
 * flight keeps its input unconsumed until then (docs/ARCHITECTURE.md).
 *
 * With time_domain, the inputs are instead the n_rx time-domain streams of ofdm_sync
 * (gr_complex samples, the "slot" tag on each slot's first sample, read on input 0 and
 * aligned to as ofdm_demod does), and the block demodulates them as ofdm_demod does
 * (FFT back-off fft_backoff, compensated). With backend cuda the samples go to the GPU
 * and are demodulated there (cuFFT), next to the estimator and the detector: one block
 * and one upload per slot between ofdm_sync and the bits. The results are those of
 * ofdm_demod followed by this block, up to float rounding in the FFTs.
 *
 * A slot whose pilots are unusable (non-finite or all zero: no noise variance), or whose
 * data elements or estimated channel are not finite, is logged as an error, output as
 * zeros and counted in bad_slots(). A detected slot with vectors on a rank-deficient or
 * zero estimated channel or with an LLR saturated at +-llr_saturation keeps its outputs,
 * gets a "degenerate" tag (value: the number of such vectors) and is counted in
 * bad_slots() too (docs/CONVENTIONS.md; where H is estimated on the GPU, only the
 * saturated LLRs are seen). Items without a slot tag take the previous slot + 1.
 *
 * Stall bound: as mimo_detector's (psd without a deadline): each slot's detection may
 * take slot_limit_us (default 2500 us, five slot times); a slot it cuts short gets the
 * "truncated" tag.
 */
class MIMODET_API mimo_receiver : virtual public gr::block
{
public:
    typedef std::shared_ptr<mimo_receiver> sptr;
    /*!
     * \param cfg the detector, as mimo_detector::make()'s; its backend runs both stages.
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param cell_id physical cell id 0..503 (pilots and data map), or -1: the cell of
     * each slot from the "cell_id" tag on its first item (ofdm_sync's; ofdm_demod passes
     * it on with the grid; a slot without one keeps the last cell seen); slots before
     * the first such tag are output as zeros, counted in bad_slots() and logged.
     * \param soft_output float LLRs instead of bits (not psd, fsd).
     * \param est_threads threads of the CPU channel estimator (0: its default), as
     *        channel_estimator::make(); unused by the GPU estimator.
     * \param time_domain inputs are time-domain slots (ofdm_sync's outputs), not grids.
     * \param fft_backoff with time_domain: the FFT window back-off into the CP in
     *        samples, 0..cp_other, or -1 for ofdm_demod's default (cp_other / 4).
     * \param pilot_ratio_db the transmitter's pilot-to-data power ratio in dB (the
     *        framer's pilot_ratio_db; -10..10, default 0), or NaN to estimate it per
     *        slot, as channel_estimator::make(). An estimated ratio is measured from the
     *        grids on the host, so with backend cuda the estimator's H then comes
     *        through the host (the stages are not fused).
     * \param slot_limit_us psd without a deadline: the most microseconds a slot's
     *        detection may take, as mimo_detector::make()'s; 0: none.
     *
     * Throws std::invalid_argument for an invalid configuration, std::runtime_error for
     * backend cuda without a device.
     */
    static sptr make(const detector_config& cfg,
                     double bandwidth_mhz,
                     int cell_id,
                     bool soft_output = false,
                     int est_threads = 0,
                     bool time_domain = false,
                     int fft_backoff = -1,
                     double pilot_ratio_db = 0.0,
                     double slot_limit_us = 2500.0);
    //! Output items of slot ns (0..19): n_data(ns) * n_tx * q.
    virtual int items_per_slot(int ns) const = 0;
    //! "cpu" or "cuda": the backend actually running (both stages).
    virtual std::string backend() const = 0;
    //! Slots received so far (bad ones included).
    virtual uint64_t slots_processed() const = 0;
    //! Slots output as zeros because of unusable input, and slots tagged "degenerate".
    virtual uint64_t bad_slots() const = 0;
    //! Slots of input 0 that had no "slot" tag.
    virtual uint64_t untagged_slots() const = 0;
    //! True where the inputs are time-domain slots.
    virtual bool time_domain() const = 0;
    //! Slots in which the PSD deadline truncated at least one vector's search.
    virtual uint64_t truncated_slots() const = 0;
    //! The pilot-to-data ratio (dB) the last slot (of the first lane) was estimated with:
    //! the known one, or with pilot_ratio_db NaN that slot's estimate (NaN before the
    //! first slot).
    virtual double pilot_ratio_db() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_RECEIVER_H */
