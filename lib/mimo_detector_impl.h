/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H
#define INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H

#include "detector_block_common.h"
#include "receiver/slot_detection.h"
#include "slot_lanes.h"
#include "util/call_timeline.h"
#include <atomic>
#include <gnuradio/mimodet/mimo_detector.h>
#include <memory>
#include <pmt/pmt.h>
#include <vector>

namespace gr {
namespace mimodet {

class mimo_detector_impl : public mimo_detector
{
public:
    //! cfg: the configuration the detectors run (with the stall bound's deadline, see
    //! stall_bounded); user_deadline: the user gave psd a deadline (one GPU lane).
    mimo_detector_impl(const detector_config& cfg,
                       double bandwidth_mhz,
                       int cell_id,
                       bool soft_output,
                       bool user_deadline);

    int items_per_slot(int ns) const override;
    std::string backend() const override { return d_lanes.backend(); }
    uint64_t slots_processed() const override { return d_report.slots.load(); }
    uint64_t bad_slots() const override { return d_report.bad.load(); }
    uint64_t untagged_slots() const override { return d_report.untagged.load(); }
    uint64_t truncated_slots() const override { return d_report.truncated.load(); }

    //! start(): withdraws a cancellation left by stop(); stop(): cancels a running
    //! detect.
    bool start() override;
    bool stop() override;

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    //! The lanes' GPU buffers for a call of d_max_slots_per_call slots.
    void prepare_lanes();

    //! ns of an input item: its slot tag, else the previous slot + 1.
    int slot_of_item(uint64_t abs_item, bool& tagged);

    bool d_soft;
    int d_n_rx, d_n_sc;
    size_t d_max_per_slot;
    const pmt::pmt_t d_slot_key;
    int d_next_ns = 0;
    std::vector<gr::tag_t> d_item_tags; //!< reused by slot_of_item()
    slot_report d_report;               //!< the counters and the slots' output tags
    std::vector<const gr_complex*> d_grid_ptrs;            //!< [slot of the call][n_rx]
    std::vector<core::slot_detection::slot_input> d_batch; //!< the slots of a call
    std::vector<size_t> d_offsets; //!< [slot of the call]: its first output item; + end
    std::vector<std::vector<std::string>> d_lane_why; //!< per lane: its slots' errors
    std::vector<std::vector<size_t>> d_lane_trunc;    //!< per lane: truncated vectors
    bool d_deadline; //!< psd with a deadline (the user's or the stall bound): one slot
                     //!< per lane and call
    //! psd: count and tag truncated vectors (the deadline, the stall bound, the node
    //! budget)
    bool d_count_truncated;
    int d_max_slots_per_call;
    const pmt::pmt_t d_cell_key;
    slot_cell d_cell; //!< the cell given, or of the slots' cell_id tags (cell_id -1)
    std::vector<gr::tag_t> d_cell_tags; //!< this call's cell_id tags (cell_id -1)
    //! MIMODET_CALL_TIMELINE only: per general_work() call, its start, duration and
    //! slots.
    std::unique_ptr<core::call_timeline> d_timeline;
    //! Lane 0, and with the CUDA backend further lanes for other slots of a call.
    slot_lanes<core::slot_detection> d_lanes;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H */
