/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// What the blocks of the receiver's back end (channel_estimator, mimo_detector,
// mimo_receiver) share: their parameter checks, the core's log routing and the GPU lane
// counts.

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

//! The detector's configuration of a block named block, checked (std::invalid_argument
//! with the block's name) before any signature is built.
detector_config make_detector_block_config(const std::string& block,
                                           const std::string& algorithm,
                                           double bandwidth_mhz,
                                           int n_tx,
                                           int n_rx,
                                           const std::string& modulation,
                                           const std::string& backend,
                                           bool soft_output,
                                           const std::vector<int>& lvl,
                                           const std::vector<int>& exp,
                                           int T,
                                           int niter,
                                           int sorted_qr,
                                           float llr_clip,
                                           int threads,
                                           bool llr_scaled,
                                           double deadline_us);

/*!
 * The slot of input item abs_item from its "slot" tags ([first, last): those on that
 * item): the last valid one (0..19), else next_ns (tagged = false). Invalid values are
 * logged.
 */
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
 * Detector lanes of a CUDA mimo_detector: 2, or 1 with a PSD deadline (the budgeted
 * search fills the GPU until its deadline, so a second lane's search only waits for it:
 * measured on an H100, two lanes left more of psd's slots late than one).
 * MIMODET_GPU_LANES=1..4 overrides it (measurements only).
 */
int gpu_lanes(bool deadline);

/*!
 * Lanes of a CUDA mimo_receiver: 2, also with a PSD deadline. ofdm_sync takes the next
 * slot's input in early, so a backlog after a stall reaches the receiver two slots at a
 * time, and psd's second lane drains it faster: measured on an H100, a 4 ms stall costs
 * 12.7 late slots against 19.6 with one lane, with the same latency on time
 * (docs/PERFORMANCE.md, "Late slots a stall costs").
 * MIMODET_GPU_LANES=1..4 overrides it (measurements only).
 */
int receiver_gpu_lanes();

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
