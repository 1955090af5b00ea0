/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// What the blocks of the receiver's back end (channel_estimator, mimo_detector,
// mimo_receiver) share: their parameter checks, the slots' tags and counters, and the
// core's log routing (their lanes: slot_lanes.h).

#ifndef INCLUDED_MIMODET_DETECTOR_BLOCK_COMMON_H
#define INCLUDED_MIMODET_DETECTOR_BLOCK_COMMON_H

#include <atomic>
#include <cstdint>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/tags.h>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

//! Checks the detector configuration of a block named block (std::invalid_argument
//! with the block's name) before any signature is built: the bandwidth, the antennas the
//! LTE grid carries, the algorithm, and soft_output against it. detector::make() checks
//! the algorithm's parameters when the block makes its lanes.
void check_block_config(const std::string& block,
                        const detector_config& cfg,
                        double bandwidth_mhz,
                        bool soft_output);

/*!
 * The slot of input item abs_item from its "slot" tags ([first, last): those on that
 * item): the last valid one (0..19), else next_ns (tagged = false). Invalid values are
 * logged.
 */
/*!
 * The configuration a block's detectors run: for psd without a deadline
 * (psd_deadline_us = 0), the stall bound, a deadline of slot_limit_us (the block then
 * detects one slot per lane and call, as with a deadline, so that it is a bound per
 * slot); else cfg. Checks slot_limit_us (finite, 0 .. 1e9; throws
 * std::invalid_argument naming block).
 */
detector_config stall_bounded(const std::string& block,
                              detector_config cfg,
                              double slot_limit_us);

int slot_from_tags(std::vector<gr::tag_t>::const_iterator first,
                   std::vector<gr::tag_t>::const_iterator last,
                   uint64_t abs_item,
                   int next_ns,
                   bool& tagged,
                   gr::logger& logger);

/*!
 * The cell of each slot for a block made with cell_id -1 (channel_estimator,
 * mimo_receiver): ofdm_sync puts a "cell_id" tag (long 0..503) on every slot's first
 * item and ofdm_demod passes it on with the slot's grid. A slot without one keeps the
 * last cell seen; before the first there is none (-1), and the block flags such slots
 * rather than estimate them with another cell's pilots. Invalid values are logged.
 */
class slot_cell
{
public:
    //! cell_id 0..503 (given: the tags are not read) or -1 (from the tags).
    explicit slot_cell(int cell_id) : d_auto(cell_id < 0), d_cell(cell_id) {}
    bool automatic() const { return d_auto; }
    //! The cell of the slot starting at abs_item, from the "cell_id" tags in tags (any
    //! order; those at other items are skipped).
    int update(const std::vector<gr::tag_t>& tags, uint64_t abs_item, gr::logger& logger);
    int cell() const { return d_cell; }

private:
    bool d_auto;
    int d_cell;
};

//! Checks a block's cell_id parameter: 0..503, or -1 (from the slots' "cell_id" tags).
int checked_cell_id(const char* block, int cell_id);

//! Counts an input item without a slot tag (what: "item", "grid item") that was given
//! slot ns; the first one of a block is logged.
void count_untagged(std::atomic<uint64_t>& untagged,
                    const char* what,
                    uint64_t abs_item,
                    int ns,
                    gr::logger& logger);

/*!
 * A detected slot with n_degenerate > 0 of its n_vectors vectors degenerate (a
 * rank-deficient or zero H, or a saturated LLR: slot_detection::degenerate_vectors):
 * counted in bad (its outputs stay, not to be trusted; the caller tags the slot
 * "degenerate" with n_degenerate). The first such slot and every 1000th bad slot are
 * logged.
 */
void count_degenerate(std::atomic<uint64_t>& bad,
                      size_t n_degenerate,
                      size_t n_vectors,
                      int ns,
                      uint64_t abs_item,
                      gr::logger& logger);

/*!
 * The slot counters of a block that detects slots (mimo_detector, mimo_receiver), read
 * by other threads (GUI probes, tests) while work() runs, and the tags of each slot's
 * first output item: "slot" (ns), "truncated" (the vectors a PSD deadline cut short)
 * and "degenerate" (count_degenerate).
 */
class slot_report
{
public:
    //! What the block learnt of one slot.
    struct outcome {
        std::string why;       //!< not empty: output as zeros, for this reason
        size_t truncated = 0;  //!< vectors the PSD deadline cut short
        size_t degenerate = 0; //!< vectors on a degenerate channel (count_degenerate)
        size_t n_vectors = 0;  //!< the slot's vectors
    };

    slot_report();
    /*!
     * Counts slot ns (first input item abs_item, first output item out_item) and
     * returns the tags of its first output item. A slot output as zeros is logged as
     * count_degenerate logs (the first one and every 1000th bad slot).
     */
    const std::vector<gr::tag_t>& add(const outcome& o,
                                      int ns,
                                      uint64_t abs_item,
                                      uint64_t out_item,
                                      gr::logger& logger);

    std::atomic<uint64_t> slots{ 0 };     //!< slots processed (bad ones included)
    std::atomic<uint64_t> bad{ 0 };       //!< output as zeros, or tagged "degenerate"
    std::atomic<uint64_t> untagged{ 0 };  //!< input items without a "slot" tag
    std::atomic<uint64_t> truncated{ 0 }; //!< slots tagged "truncated"

private:
    const pmt::pmt_t d_slot_key, d_truncated_key, d_degenerate_key;
    std::vector<gr::tag_t> d_tags; //!< add()'s
};

//! Why a slot of a block made with cell_id -1 is not detected before the first cell_id
//! tag.
extern const char* const k_no_cell;

//! The core's log lines go to one GNU Radio logger (shared by every instance).
void route_core_log();

//! The integer switch `name` of core/tuning.h: its value in lo..hi, `fallback` where
//! unset; std::invalid_argument for another value. Read when a block is made.
int env_override(const char* name, int lo, int hi, int fallback);

//! The CPU channel estimator's threads: threads (1..256), or for 0 the default
//! min(hardware threads, n_tx * n_rx, 4). std::invalid_argument (with the block's name)
//! for other values.
int estimator_threads(const std::string& block, int threads, int n_tx, int n_rx);

/*!
 * Output buffer (items) for a block that puts out up to `slots_per_call` slots of
 * `items_per_slot` items in one call. GNU Radio hands a block at most half of its output
 * buffer per call, so the buffer holds twice a call's slots, plus one slot that the next
 * block may still be reading.
 */
long output_buffer_items(size_t items_per_slot, size_t slots_per_call);

} // namespace mimodet
} // namespace gr

#endif
