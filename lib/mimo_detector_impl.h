/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H
#define INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H

#include "core/call_timeline.h"
#include "core/slot_detection.h"
#include "core/worker_pool.h"
#include "detector_block_common.h"
#include <atomic>
#include <gnuradio/mimodet/mimo_detector.h>
#include <pmt/pmt.h>
#include <memory>
#include <vector>

namespace gr {
namespace mimodet {

class mimo_detector_impl : public mimo_detector
{
public:
    mimo_detector_impl(const detector_config& cfg,
                       double bandwidth_mhz,
                       int cell_id,
                       bool soft_output);

    int items_per_slot(int ns) const override;
    std::string backend() const override { return d_slots_det->det().backend(); }
    uint64_t slots_processed() const override { return d_slots.load(); }
    uint64_t bad_slots() const override { return d_bad.load(); }
    uint64_t untagged_slots() const override { return d_untagged.load(); }
    uint64_t truncated_slots() const override { return d_truncated.load(); }

    //! start(): withdraws a cancellation left by stop(); stop(): cancels a running detect.
    bool start() override;
    bool stop() override;

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    //! The lanes for a cell (again when the cell changes: cell_id -1), and their GPU
    //! buffers.
    void make_lanes(int cell_id);
    void prepare_lanes();
    //! Every lane's detector: cancel (on) or withdraw a cancellation (off).
    void cancel_lanes(bool on);
    //! The scheduler thread's interruption (top_block::stop): cancels every lane.
    bool interrupted();

    //! ns of an input item: its slot tag, else the previous slot + 1.
    int slot_of_item(uint64_t abs_item, bool& tagged);

    std::unique_ptr<core::slot_detection> d_slots_det; //!< lane 0
    std::vector<std::unique_ptr<core::slot_detection>> d_extra_lanes; //!< GPU lanes 1..
    std::vector<std::vector<std::string>> d_lane_why;
    std::vector<std::vector<size_t>> d_lane_trunc;
    bool d_soft;
    int d_n_rx, d_n_sc;
    size_t d_max_per_slot;
    const pmt::pmt_t d_slot_key;
    int d_next_ns = 0;
    std::vector<gr::tag_t> d_item_tags; //!< reused by slot_of_item()
    // Read by other threads (GUI probes, tests) while work() runs.
    std::atomic<uint64_t> d_slots{ 0 }, d_bad{ 0 }, d_untagged{ 0 }, d_truncated{ 0 };
    std::vector<const gr_complex*> d_grid_ptrs; //!< [slot of the call][n_rx]
    std::vector<core::slot_detection::slot_input> d_batch; //!< the slots of a call
    bool d_deadline; //!< psd with a deadline: count and tag truncated vectors
    int d_max_slots_per_call;
    const pmt::pmt_t d_truncated_key, d_cell_key;
    const detector_config d_cfg;
    const lte_numerology d_num;
    slot_cell d_cell;     //!< the cell given, or of the slots' cell_id tags (cell_id -1)
    int d_lane_cell = -1; //!< the cell the lanes are made for
    std::vector<gr::tag_t> d_cell_tags; //!< this call's cell_id tags (cell_id -1)
    const pmt::pmt_t d_degenerate_key; //!< slots with degenerate vectors (count_degenerate)
    //! MIMODET_CALL_TIMELINE only: per general_work() call, its start, duration and slots.
    std::unique_ptr<core::call_timeline> d_timeline;
    // Last member: its workers are joined before the lanes they use are destroyed.
    core::worker_pool d_lane_pool;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_DETECTOR_IMPL_H */
