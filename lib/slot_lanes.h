/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The detector lanes of the slot blocks (mimo_detector, mimo_receiver) and the split of
// a general_work() call's slots among them.

#ifndef INCLUDED_MIMODET_SLOT_LANES_H
#define INCLUDED_MIMODET_SLOT_LANES_H

#include "util/worker_pool.h"
#include <algorithm>
#include <exception>
#include <functional>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <memory>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

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
 * exact_psd (psd without the user's deadline): 4. A slot of the exact search waits on its
 * chain of search kernels, each as long as its longest task, not on the GPU's
 * throughput, so slots in flight together share the GPU almost for free: measured on an
 * H100, 20 MHz 4x4 64QAM 20 dB, 2680, 3556 and 4181 slots/s with 2, 3 and 4 lanes
 * (docs/PERFORMANCE.md, "In the flowgraph, exact").
 * MIMODET_GPU_LANES=1..4 overrides it (measurements only).
 */
int receiver_gpu_lanes(bool exact_psd);

//! True where the calling thread is a GNU Radio scheduler thread asked to stop
//! (top_block::stop interrupts it).
bool stop_requested();

/*!
 * The lanes of a block: Lane (core::slot_detection, core::slot_receiver) is one
 * detector's worth of state, made for one cell (its data map, the receiver's pilots).
 * Lane 0 always exists and runs on the block's thread. Where its detector runs on the
 * GPU, up to max_gpu_lanes - 1 further lanes, each with its own detector (streams, device
 * and pinned buffers), work on other slots of the same call at once, so one lane's host
 * work (gather, copies, scatter) overlaps another's kernels. The CPU backend already uses
 * every core inside one lane.
 *
 * Cancellation: top_block::stop() interrupts the block's thread, which a long detection
 * (large slots, exhaustive search) sees only through its detector's cancel poll: lane 0's
 * detector polls it, and the block's thread polls it while it waits for the other lanes;
 * either cancels every lane, so work() returns soon rather than after the whole call.
 */
template <class Lane>
class slot_lanes
{
public:
    //! A lane for grid running detector det (made from the block's configuration).
    using lane_factory =
        std::function<std::unique_ptr<Lane>(const lte_grid&, detector::sptr)>;
    //! Runs slots [begin, end) of a call on lane `lane`.
    using part_fn = std::function<void(size_t lane, size_t begin, size_t end)>;
    //! A part's detection threw (what: the exception's message): its slots' outputs.
    using failed_fn = std::function<void(
        size_t lane, size_t begin, size_t end, const std::string& what)>;

    slot_lanes(const detector_config& cfg,
               const lte_numerology& num,
               int max_gpu_lanes,
               lane_factory make_lane)
        : d_cfg(cfg), d_num(num), d_max_gpu_lanes(max_gpu_lanes),
          d_make(std::move(make_lane))
    {
    }
    slot_lanes(const slot_lanes&) = delete;
    slot_lanes& operator=(const slot_lanes&) = delete;

    //! The lanes for cell (0..503): the old ones are dropped first.
    void make(int cell)
    {
        d_lanes.clear();
        d_dets.clear();
        d_cell = cell;
        const lte_grid grid(d_num, d_cfg.n_tx, cell);
        auto det = detector::make(d_cfg);
        det->set_cancel_poll([this] { return interrupted(); });
        const bool gpu = det->backend() == "cuda";
        d_dets.push_back(det);
        d_lanes.push_back(d_make(grid, std::move(det)));
        if (gpu)
            for (int l = 1; l < d_max_gpu_lanes; ++l) {
                d_dets.push_back(detector::make(d_cfg));
                d_lanes.push_back(d_make(grid, d_dets.back()));
            }
    }

    //! The cell the lanes are made for (-1: none yet).
    int cell() const { return d_cell; }
    size_t size() const { return d_lanes.size(); }
    Lane& operator[](size_t l) { return *d_lanes[l]; }
    const Lane& operator[](size_t l) const { return *d_lanes[l]; }
    //! "cpu" or "cuda": the backend the lanes run.
    std::string backend() const { return d_dets[0]->backend(); }

    //! Every lane's detector: cancel (on) or withdraw a cancellation (off).
    void cancel(bool on)
    {
        for (auto& d : d_dets)
            if (on)
                d->cancel();
            else
                d->clear_cancel();
    }

    //! stop_requested(), and then every lane cancelled.
    bool interrupted()
    {
        if (!stop_requested())
            return false;
        cancel(true);
        return true;
    }

    /*!
     * Runs a call's n slots, cut into min(n, size()) contiguous parts, one per lane (lane
     * 0 on this thread, the others at the same time on the lanes' workers). Returns false
     * where a lane's detection was cancelled (the flowgraph is stopping: the call is to
     * be abandoned), true otherwise. A part that throws anything else is handed to
     * failed, and the other parts go on.
     */
    bool run(size_t n, const part_fn& part, const failed_fn& failed)
    {
        const size_t n_lanes = std::min(n, d_lanes.size());
        d_stopped.assign(n_lanes, 0);
        const std::function<void(size_t)> share = [&](size_t l) {
            const size_t begin = n * l / n_lanes, end = n * (l + 1) / n_lanes;
            try {
                part(l, begin, end);
            } catch (const cancelled&) {
                d_stopped[l] = 1;
            } catch (const std::exception& ex) {
                failed(l, begin, end, ex.what());
            }
        };
        if (n_lanes > 1) {
            const std::function<void()> poll = [this] { interrupted(); };
            d_pool.run(n_lanes, share, &poll);
        } else if (n_lanes == 1) {
            share(0);
        }
        return std::find(d_stopped.begin(), d_stopped.end(), 1) == d_stopped.end();
    }

private:
    const detector_config d_cfg;
    const lte_numerology d_num;
    const int d_max_gpu_lanes;
    const lane_factory d_make;
    int d_cell = -1;
    std::vector<detector::sptr> d_dets; //!< the lanes' detectors, for cancel()
    std::vector<std::unique_ptr<Lane>> d_lanes;
    std::vector<char> d_stopped; //!< per lane of a run: its detection was cancelled
    // Last member: its workers are joined before the lanes they use are destroyed.
    core::worker_pool d_pool;
};

} // namespace mimodet
} // namespace gr

#endif
