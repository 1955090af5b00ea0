/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_CHANNEL_ESTIMATOR_IMPL_H
#define INCLUDED_MIMODET_CHANNEL_ESTIMATOR_IMPL_H

#include "detect/backend.h"
#include "detector_block_common.h"
#include "phy/channel_estimation.h"
#include "util/call_timeline.h"
#include <atomic>
#include <gnuradio/mimodet/channel_estimator.h>
#include <pmt/pmt.h>
#include <vector>

namespace gr {
namespace mimodet {

class channel_estimator_impl : public channel_estimator
{
public:
    channel_estimator_impl(double bandwidth_mhz,
                           int n_tx,
                           int n_rx,
                           int cell_id,
                           int threads,
                           const std::string& backend,
                           double pilot_ratio_db,
                           int device);

    int n_sc() const override { return d_est->n_sc(); }
    int threads() const override { return d_est->threads(); }
    std::string backend() const override { return d_gpu ? "cuda" : "cpu"; }
    uint64_t slots_processed() const override { return d_slots.load(); }
    uint64_t bad_slots() const override { return d_bad.load(); }
    uint64_t untagged_slots() const override { return d_untagged.load(); }
    double pilot_ratio_db() const override { return d_est->last_pilot_ratio_db(); }

    int work(int noutput_items,
             gr_vector_const_void_star& input_items,
             gr_vector_void_star& output_items) override;

private:
    //! The estimator of a cell (and its GPU version); made again when the cell changes.
    void make_estimator(int cell_id);
    const lte_numerology d_num;
    const int d_n_tx, d_n_rx, d_threads;
    const std::string d_backend;
    const int d_device;            //!< the GPU estimator's CUDA device
    const double d_pilot_ratio_db; //!< NaN: estimated per slot
    std::unique_ptr<core::channel_estimation> d_est;
    //! The GPU version (backend cuda), built on d_est's tables.
    std::unique_ptr<core::gpu_channel_estimation> d_gpu;
    //! cell_id -1: the slots' cell from their "cell_id" tags (d_est is made for it).
    slot_cell d_cell;
    const pmt::pmt_t d_cell_key;
    std::vector<gr::tag_t> d_cell_tags;
    const pmt::pmt_t d_slot_key;
    int d_next_ns = 0;
    // Read by other threads (GUI probes, tests) while work() runs.
    std::atomic<uint64_t> d_slots{ 0 }, d_bad{ 0 }, d_untagged{ 0 };
    std::vector<const gr_complex*> d_grids;
    std::vector<gr::tag_t> d_tags; //!< reused by work() (no allocation per call)
    //! MIMODET_CALL_TIMELINE only: per work() call, its start, duration and slots.
    std::unique_ptr<core::call_timeline> d_timeline;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_CHANNEL_ESTIMATOR_IMPL_H */
