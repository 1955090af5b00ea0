/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_DETECTOR_H
#define INCLUDED_MIMODET_MIMO_DETECTOR_H

#include <cstdint>
#include <gnuradio/block.h>
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/block_config.h>
#include <gnuradio/mimodet/detector.h>
#include <string>

namespace gr {
namespace mimodet {

/*!
 * \brief MIMO detector of the LTE-style slot chain: grids + H + noise_var -> bits or
 * LLRs (docs/SLOT_LAYOUT.md), a thin adapter over the batch detector core
 * (gnuradio/mimodet/detector.h).
 * \ingroup mimodet
 *
 * \details
 * Inputs, one item per slot each:
 * - 0 .. n_rx-1: the receive grids, gr_complex[7 * n_sc] (element l * n_sc + k); input 0
 *   carries the "slot" tag (value: long ns) that selects the slot's data map;
 * - n_rx: H, gr_complex[n_sc * n_rx * n_tx], element (k * n_rx + r) * n_tx + t (the
 *   channel_estimator's output 0);
 * - n_rx + 1: noise_var (float) per grid element (the channel_estimator's output 1).
 *
 * Output: per slot ns, n_data(ns) * n_tx * q items: for each data element of
 * lte_grid::data_elements(ns) in order, the n_tx * q bits (uint8 0/1) or max-log LLRs
 * (float, positive means 0, scaled by 1/noise_var) of transmit antennas 0, 1, ...
 * (b0 first, docs/CONVENTIONS.md). The first item of each slot gets a "slot" tag.
 * soft_output = false gives bits: the hard decisions of psd/fsd, the LLR signs of the
 * soft detectors.
 *
 * The subcarriers of a slot are grouped by their number of data symbols (every
 * subcarrier's H shared by its symbols), and every group of every slot the block has at
 * hand (up to 8 queued slots; one per lane for psd with a deadline or the stall bound
 * below) goes to the detector as ONE segmented batch call
 * (detector.h, batch_segment): on the GPU one round of host-device copies and one wait
 * per call, so a backlog is worked off in large batches while a lone slot is detected at
 * once. With backend cuda the block runs two detector lanes (each its own streams and
 * buffers) that detect halves of a call's slots at the same time, so one lane's host work
 * overlaps the other's kernels (one lane with a PSD deadline); the GPU buffers are sized
 * for the largest call when the block is made (a dummy detection), so none grows while
 * streaming.
 *
 * A slot whose noise_var is not finite and > 0, or whose H or data elements are not
 * finite, is logged as an error, output as zeros (bits 0 / LLRs 0) and counted in
 * bad_slots(). A detected slot with vectors on a rank-deficient or zero channel (the
 * subcarrier's H) or with an LLR saturated at +-llr_saturation keeps its outputs, gets a
 * "degenerate" tag (value: the number of such vectors) and is counted in bad_slots() too
 * (docs/CONVENTIONS.md). Items of input 0 without a slot tag take the previous slot + 1
 * (mod 20).
 *
 * Real-time deadline (psd only, detector_config::psd_deadline_us > 0): each slot may
 * search for that long (the block then gives each detect call one slot); vectors still
 * searching then end with the best decision found so far, vectors not started yet with
 * the SIC point. A slot with such vectors gets a "truncated" tag (value: long, the number
 * of truncated vectors) on its first output item and is counted in truncated_slots().
 * psd_deadline_us = 0: the exact search.
 *
 * Stall bound (psd with psd_deadline_us = 0): the exact search's work depends on the
 * input (detector_config::psd_node_budget bounds each vector, but a slot of hostile
 * vectors, y far outside the constellation, still holds thousands of them), so the
 * block detects one slot per call with a deadline of slot_limit_us (default 2500 us,
 * five slot times). Within it every slot is the exact search; a slot it cuts short gets
 * the "truncated" tag and is counted in truncated_slots(), as with a deadline. A
 * detector slower than that per slot (the CPU's exact search of a large 4x4 64QAM grid)
 * has its slots cut short and tagged: slot_limit_us = 0, no bound, for offline runs that
 * want the exact search whatever it costs. The other algorithms' work per slot is fixed
 * by their parameters.
 */
class MIMODET_API mimo_detector : virtual public gr::block
{
public:
    typedef std::shared_ptr<mimo_detector> sptr;

    /*!
     * \param cfg the detector: algorithm, n_tx (transmit antenna ports: 1, 2 or 4), n_rx
     * (receive antennas, the grid inputs: n_tx .. 8), modulation, backend ("cpu", "cuda"
     * or "auto") and the algorithm's parameters, including the PSD deadline
     * (detector_config::psd_deadline_us, psd only); see detector.h.
     * block_detector_config() makes one from the parameters' names.
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param cell_id physical cell id 0..503 (data map), or -1: the cell of each slot
     * from the "cell_id" tag on its grid (ofdm_sync's with cell search, passed on by
     * ofdm_demod; a slot without one keeps the last cell seen); slots before the first
     * such tag are output as zeros, counted in bad_slots() and logged.
     * \param soft_output float LLRs instead of bits (soft detectors only: psd and fsd
     *        are refused).
     * \param slot_limit_us psd without a deadline: the most microseconds a slot's
     *        detection may take (see above), finite, 0 (none) .. 1e9.
     *
     * Throws std::invalid_argument for an invalid configuration.
     */
    static sptr make(const detector_config& cfg,
                     double bandwidth_mhz,
                     int cell_id,
                     bool soft_output = false,
                     double slot_limit_us = 2500.0);

    //! Output items of slot ns (0..19): n_data(ns) * n_tx * q.
    virtual int items_per_slot(int ns) const = 0;
    //! "cpu" or "cuda": the backend actually running.
    virtual std::string backend() const = 0;
    //! Slots detected so far (bad ones included).
    virtual uint64_t slots_processed() const = 0;
    //! Slots that were output as zeros because of unusable input, and slots tagged
    //! "degenerate".
    virtual uint64_t bad_slots() const = 0;
    //! Items of input 0 that had no "slot" tag.
    virtual uint64_t untagged_slots() const = 0;
    //! Slots in which the PSD deadline truncated at least one vector's search.
    virtual uint64_t truncated_slots() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_DETECTOR_H */
