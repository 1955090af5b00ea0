/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_RECEIVER_IMPL_H
#define INCLUDED_MIMODET_MIMO_RECEIVER_IMPL_H

#include "detector_block_common.h"
#include "receiver/slot_receiver.h"
#include "slot_aligner.h"
#include "slot_lanes.h"
#include "util/call_timeline.h"
#include "util/lane_threads.h"
#include <atomic>
#include <deque>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <memory>
#include <pmt/pmt.h>
#include <vector>

namespace gr {
namespace mimodet {

class mimo_receiver_impl : public mimo_receiver
{
public:
    mimo_receiver_impl(const detector_config& cfg,
                       double bandwidth_mhz,
                       int cell_id,
                       bool soft_output,
                       int est_threads,
                       bool time_domain,
                       int fft_backoff,
                       double pilot_ratio_db,
                       int gpu_lanes,
                       bool slots_in_flight);

    int items_per_slot(int ns) const override;
    std::string backend() const override { return d_lanes.backend(); }
    uint64_t slots_processed() const override { return d_report.slots.load(); }
    uint64_t bad_slots() const override { return d_report.bad.load(); }
    uint64_t untagged_slots() const override { return d_report.untagged.load(); }
    uint64_t truncated_slots() const override { return d_report.truncated.load(); }
    bool time_domain() const override { return d_time_domain; }
    double pilot_ratio_db() const override
    {
        return d_lanes[0].estimation().last_pilot_ratio_db();
    }

    //! Time domain on the GPU: the input buffers page-locked for direct uploads.
    bool start() override;
    bool stop() override;

    void forecast(int noutput_items, gr_vector_int& ninput_items_required) override;
    int general_work(int noutput_items,
                     gr_vector_int& ninput_items,
                     gr_vector_const_void_star& input_items,
                     gr_vector_void_star& output_items) override;

private:
    //! The lanes for a cell (again when the cell changes: cell_id -1).
    void make_lanes(int cell_id);
    //! Time domain on the GPU: page-locks the input buffers for the lanes.
    void register_inputs();
    //! The cell of the slot starting at input item abs_item (d_cell_tags: this call's).
    int cell_of_slot(uint64_t abs_item)
    {
        return d_cell.update(d_cell_tags, abs_item, *d_logger);
    }

    //! The slot of input item abs_item (its "slot" tag, else the previous + 1).
    int slot_of_item(uint64_t abs_item, bool& tagged);
    //! This call's slots (one per lane at most) into d_jobs; returns the items of input
    //! consumed and sets produced (output items). Grids or time-domain samples.
    int collect_grid_jobs(int avail, int noutput_items, size_t& produced);
    int collect_time_jobs(int avail, int noutput_items, size_t& produced);

    //! The general_work() of a block whose slots stay in flight across calls (d_async);
    //! started: the slots it started.
    int work_async(int noutput_items, int avail, char* out, int& started);
    //! Slot ns from inputs on lane receiver rx: bits or LLRs into out_at.
    core::slot_receiver::result receive(core::slot_receiver& rx,
                                        int ns,
                                        const gr_complex* const* inputs,
                                        char* out_at);
    //! Counts a received slot and tags its output (first item out_item).
    void report(int ns,
                uint64_t item,
                uint64_t out_item,
                const core::slot_receiver::result& res);
    //! Puts the finished slots at the head of d_flight out, in order; returns the output
    //! items they fill, from this call's first. abandoned: a slot was cancelled (the
    //! flowgraph is stopping) and it and every slot after it are dropped.
    size_t emit_finished(bool& abandoned);
    //! Starts the slots after those in flight on idle lanes (grids or time-domain
    //! samples), their outputs after the produced items this call puts out; returns how
    //! many.
    int start_slots(int noutput_items, int avail, char* out, size_t produced);
    //! Starts one slot on an idle lane (d_flight's new back) or, without a known cell,
    //! flags it at once.
    void start_slot(int ns,
                    bool tagged,
                    int cell,
                    uint64_t item,
                    size_t input_offset,
                    uint64_t out_item,
                    char* out_at);
    //! Drops the slots in flight once their lanes have stopped (stop(), a cancellation).
    void drop_flight();

    //! A slot of a general_work() call.
    struct slot_job {
        int ns;
        size_t offset;              //!< its first output item
        const gr_complex* const* inputs; //!< [n_rx] grids or samples, in d_input_ptrs
        uint64_t item;                   //!< its first input item (grid or sample)
        int cell;                        //!< its cell id (-1: none known)
    };
    std::vector<slot_job> d_jobs;
    std::vector<const gr_complex*> d_input_ptrs; //!< [job][n_rx]
    std::vector<const gr_complex*> d_inputs;     //!< this call's input buffers
    std::vector<core::slot_receiver::result> d_results; //!< per slot of a call
    bool d_soft;
    //! psd: count and tag truncated vectors (the deadline, the stall bound, the node
    //! budget)
    bool d_count_truncated;
    bool d_time_domain;
    int d_n_rx, d_n_sc;
    int d_slot_samples; //!< time domain: input items per slot
    size_t d_max_per_slot;
    const pmt::pmt_t d_slot_key, d_cell_key;
    int d_next_ns = 0;
    std::vector<gr::tag_t> d_item_tags; //!< reused by slot_of_item(), collect_time_jobs()
    slot_aligner d_aligner;             //!< time domain
    slot_cell d_cell; //!< the cell given, or of the slots' cell_id tags (cell_id -1)
    bool d_started = false;
    std::vector<gr::tag_t> d_cell_tags; //!< this call's cell_id tags (cell_id -1)
    slot_report d_report;               //!< the counters and the slots' output tags
    //! MIMODET_CALL_TIMELINE only: per general_work() call, its start, duration and
    //! slots.
    std::unique_ptr<core::call_timeline> d_timeline;
    //! One receiver per lane; with the CUDA backend, lanes work on different slots of a
    //! call at once.
    slot_lanes<core::slot_receiver> d_lanes;

    /*!
     * Slots in flight (d_async): a slot starts on an idle lane as soon as its input is
     * there, while earlier ones still run, and stays in flight across general_work()
     * calls. Its input stays unconsumed and its output is written in place, past the
     * output items already produced, until it is put out (in input order). A finishing
     * lane wakes the block's thread (forecast() then asks for no input).
     */
    struct flight_slot {
        size_t lane; //!< its lane (SIZE_MAX: flagged without detection)
        int ns;
        bool tagged;
        uint64_t item;     //!< its first input item
        uint64_t out_item; //!< its first output item
        size_t n_out;
        std::vector<const gr_complex*> inputs; //!< [n_rx]
        core::slot_receiver::result res;
        bool cancelled = false;
        //! Set by its lane last, once res and its output are written.
        std::atomic<bool> done{ false };
    };
    bool d_async;
    std::deque<flight_slot> d_flight; //!< in input order (references stay valid)
    uint64_t d_scan_item = 0; //!< the input item where the next slot is looked for
    bool d_scan_reset = true; //!< d_scan_item from nitems_read() at the next call
    //! Last member: its threads, which use the lanes, end first.
    std::unique_ptr<core::lane_threads> d_lane_threads;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_RECEIVER_IMPL_H */
