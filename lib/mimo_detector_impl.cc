/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "mimo_detector_impl.h"
#include "detector_block_common.h"
#include <gnuradio/io_signature.h>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <boost/thread/thread.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {

//! Most slots the block detects in one call (when that many are queued).
constexpr int k_max_slots_per_call = 8;
//! Most slots per call without a PSD deadline: k_max_slots_per_call;
//! MIMODET_MAX_SLOTS_PER_CALL=1..8 overrides it (measurements only).
int max_slots_per_call()
{
    return env_override(
        "MIMODET_MAX_SLOTS_PER_CALL", 1, k_max_slots_per_call, k_max_slots_per_call);
}

int grid_bytes(double mhz) { return sizeof(gr_complex) * 7 * lte_numerology::from_bandwidth(mhz).n_sc; }

//! Why a slot has no detection when the flowgraph stopped in the middle of it.
const char* const k_stopped = "detection stopped: the flowgraph is stopping";

} // namespace

mimo_detector::sptr mimo_detector::make(const std::string& algorithm,
                                        double bandwidth_mhz,
                                        int n_tx,
                                        int n_rx,
                                        const std::string& modulation,
                                        int cell_id,
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
                                        double deadline_us)
{
    const detector_config cfg = make_detector_block_config("mimo_detector",
                                                           algorithm,
                                            bandwidth_mhz,
                                            n_tx,
                                            n_rx,
                                            modulation,
                                            backend,
                                            soft_output,
                                            lvl,
                                            exp,
                                            T,
                                            niter,
                                            sorted_qr,
                                            llr_clip,
                                            threads,
                                            llr_scaled,
                                            deadline_us);
    return gnuradio::make_block_sptr<mimo_detector_impl>(cfg, bandwidth_mhz, cell_id, soft_output);
}

mimo_detector_impl::mimo_detector_impl(const detector_config& cfg,
                                       double bandwidth_mhz,
                                       int cell_id,
                                       bool soft_output)
    : gr::block(
          "mimo_detector",
          gr::io_signature::makev(
              cfg.n_rx + 2,
              cfg.n_rx + 2,
              [&] {
                  std::vector<int> s(cfg.n_rx, grid_bytes(bandwidth_mhz));
                  s.push_back(static_cast<int>(sizeof(gr_complex)) *
                              lte_numerology::from_bandwidth(bandwidth_mhz).n_sc * cfg.n_rx *
                              cfg.n_tx);
                  s.push_back(sizeof(float));
                  return s;
              }()),
          gr::io_signature::make(1, 1, soft_output ? sizeof(float) : sizeof(uint8_t))),
      d_soft(soft_output),
      d_n_rx(cfg.n_rx),
      d_n_sc(lte_numerology::from_bandwidth(bandwidth_mhz).n_sc),
      d_slot_key(pmt::mp("slot")),
      d_deadline(cfg.psd_deadline_us > 0.0),
      // A PSD deadline is a budget per detector call: one slot per lane and call makes it
      // one per slot. Otherwise queued slots share calls (fewer, larger GPU batches).
      d_max_slots_per_call(1),
      d_truncated_key(pmt::mp("truncated")),
      d_cell_key(pmt::mp("cell_id")),
      d_cfg(cfg),
      d_num(lte_numerology::from_bandwidth(bandwidth_mhz)),
      d_cell(checked_cell_id("mimo_detector", cell_id)),
      d_degenerate_key(pmt::mp("degenerate"))
{
    route_core_log();
    // cell_id -1: lanes of cell 0 until a slot's tag tells its cell (the sizes do not
    // depend on it; no slot is detected before).
    make_lanes(d_cell.automatic() ? 0 : cell_id);
    d_max_per_slot = d_slots_det->max_values_per_slot();
    d_max_slots_per_call = d_deadline ? 1 + static_cast<int>(d_extra_lanes.size())
                                      : max_slots_per_call();
    // Room for at least one whole slot in every call; one input item per slot gives up to
    // d_max_per_slot output items (the rate also keeps the upstream buffers small: with
    // the default rate 1 the runtime would size them for d_max_per_slot input items).
    set_output_multiple(static_cast<int>(d_max_per_slot));
    // Room for a full call's slots, so a backlog is worked off in large batches.
    set_min_output_buffer(0, output_buffer_items(d_max_per_slot, d_max_slots_per_call));
    set_relative_rate(static_cast<uint64_t>(d_max_per_slot), 1);
    set_tag_propagation_policy(TPP_DONT);
    prepare_lanes();
    d_timeline =
        core::call_timeline::make("block", { "t0_ns", "work_ns", "slots" });
    d_logger->debug("{} detector on {}: {}x{}, up to {} output items per slot",
                    cfg.algorithm,
                    backend(),
                    cfg.n_tx,
                    cfg.n_rx,
                    d_max_per_slot);
}

void mimo_detector_impl::make_lanes(int cell_id)
{
    d_extra_lanes.clear();
    d_slots_det.reset();
    d_lane_cell = cell_id;
    const lte_grid grid(d_num, d_cfg.n_tx, cell_id);
    d_slots_det = std::make_unique<core::slot_detection>(grid, d_cfg.n_rx, detector::make(d_cfg));
    // top_block::stop() interrupts the scheduler's threads, which a detection that runs
    // for long (large slots, exhaustive search) checks only through this poll: work()
    // then returns soon rather than after the whole call.
    d_slots_det->det().set_cancel_poll([this] { return interrupted(); });
    // GPU: further lanes, each with its own detector (streams, device and pinned buffers),
    // detect parts of a call's slots at the same time, so one lane's host work (gather,
    // copies, scatter) overlaps another's kernels. The CPU backend already uses every
    // core inside one call.
    if (backend() == "cuda")
        for (int l = 1; l < gpu_lanes(d_deadline); ++l)
            d_extra_lanes.push_back(std::make_unique<core::slot_detection>(
                grid, d_cfg.n_rx, detector::make(d_cfg)));
}

void mimo_detector_impl::prepare_lanes()
{
    // The GPU pipeline's buffers at their full size now rather than in the middle of a
    // stream (the CPU backend's only grow host vectors, which is cheap).
    if (backend() == "cuda") {
        const int per_lane =
            (d_max_slots_per_call + static_cast<int>(d_extra_lanes.size())) /
            (1 + static_cast<int>(d_extra_lanes.size()));
        d_slots_det->prepare(per_lane);
        for (auto& lane : d_extra_lanes)
            lane->prepare(per_lane);
    }
}

void mimo_detector_impl::cancel_lanes(bool on)
{
    for (size_t l = 0; l <= d_extra_lanes.size(); ++l) {
        detector& d = l == 0 ? d_slots_det->det() : d_extra_lanes[l - 1]->det();
        if (on)
            d.cancel();
        else
            d.clear_cancel();
    }
}

bool mimo_detector_impl::interrupted()
{
    if (!boost::this_thread::interruption_requested())
        return false;
    cancel_lanes(true);
    return true;
}

bool mimo_detector_impl::start()
{
    cancel_lanes(false);
    return block::start();
}

bool mimo_detector_impl::stop()
{
    // The scheduler calls stop() on the block's own thread once work() has returned;
    // a caller that stops the block from another thread ends a running detect here.
    cancel_lanes(true);
    return block::stop();
}

int mimo_detector_impl::items_per_slot(int ns) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19");
    return static_cast<int>(d_slots_det->values_per_slot(ns));
}

void mimo_detector_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    const int slots = std::max(1, static_cast<int>(noutput_items / d_max_per_slot));
    std::fill(ninput_items_required.begin(), ninput_items_required.end(), slots);
}

int mimo_detector_impl::slot_of_item(uint64_t abs_item, bool& tagged)
{
    d_item_tags.clear();
    get_tags_in_range(d_item_tags, 0, abs_item, abs_item + 1, d_slot_key);
    return slot_from_tags(
        d_item_tags.cbegin(), d_item_tags.cend(), abs_item, d_next_ns, tagged, *d_logger);
}

int mimo_detector_impl::general_work(int noutput_items,
                                     gr_vector_int& ninput_items,
                                     gr_vector_const_void_star& input_items,
                                     gr_vector_void_star& output_items)
{
    const int64_t t_start = d_timeline ? core::call_timeline::now_ns() : 0;
    const int avail = *std::min_element(ninput_items.begin(), ninput_items.end());
    const size_t grid_len = 7 * static_cast<size_t>(d_n_sc);
    const size_t h_len = static_cast<size_t>(d_n_sc) * d_n_rx * d_slots_det->n_tx();
    const auto* H = static_cast<const gr_complex*>(input_items[d_n_rx]);
    const auto* nv = static_cast<const float*>(input_items[d_n_rx + 1]);
    const uint64_t first = nitems_read(0);
    const size_t elem = d_soft ? sizeof(float) : sizeof(uint8_t);
    auto* out = static_cast<char*>(output_items[0]);

    // The slots of this call go into ONE detector call (one batch of all their
    // subcarrier groups: for the CUDA backend one round of copies and one wait).
    d_batch.clear();
    d_grid_ptrs.resize(static_cast<size_t>(d_max_slots_per_call) * d_n_rx);
    const int next_ns0 = d_next_ns; // restored where the call is abandoned
    const uint64_t untagged0 = d_untagged;
    int done = 0;
    size_t produced = 0;
    if (d_cell.automatic()) {
        d_cell_tags.clear();
        get_tags_in_range(d_cell_tags, 0, first, first + avail, d_cell_key);
    }
    int cell = -1; // of this call's slots: one cell per call (the lanes are made for it)
    while (done < avail && done < d_max_slots_per_call) {
        bool tagged;
        const int ns = slot_of_item(first + done, tagged);
        const size_t n_out = d_slots_det->values_per_slot(ns);
        if (produced + n_out > static_cast<size_t>(noutput_items))
            break;
        const int c = d_cell.update(d_cell_tags, first + done, *d_logger);
        if (done > 0 && c != cell)
            break;
        cell = c;
        if (!tagged)
            count_untagged(d_untagged, "grid item", first + done, ns, *d_logger);
        const gr_complex** grids = d_grid_ptrs.data() + static_cast<size_t>(done) * d_n_rx;
        for (int r = 0; r < d_n_rx; ++r)
            grids[r] = static_cast<const gr_complex*>(input_items[r]) + done * grid_len;
        d_batch.push_back({ ns, grids, H + done * h_len, nv[done] });
        produced += n_out;
        d_next_ns = (ns + 1) % lte_numerology::slots_per_frame;
        ++done;
    }

    // Unusable slots come back with their reason and zeros as output. The slots are cut
    // into contiguous parts, one per lane (lane 0 on this thread); a PSD deadline keeps
    // one slot per lane.
    const size_t n = d_batch.size();
    const size_t n_lanes = std::min(n, 1 + d_extra_lanes.size());
    std::vector<std::string> why(n);
    std::vector<size_t> truncated(n, 0);
    d_lane_why.resize(n_lanes);
    d_lane_trunc.resize(n_lanes);
    if (n > 0 && cell >= 0 && cell != d_lane_cell) {
        make_lanes(cell);
        prepare_lanes();
    }
    auto lane_run = [&](size_t l) {
        const size_t b = n * l / n_lanes, e = n * (l + 1) / n_lanes;
        core::slot_detection& sd = l == 0 ? *d_slots_det : *d_extra_lanes[l - 1];
        std::vector<core::slot_detection::slot_input> part(d_batch.begin() + b,
                                                           d_batch.begin() + e);
        size_t offset = 0;
        for (size_t i = 0; i < b; ++i)
            offset += d_slots_det->values_per_slot(d_batch[i].ns);
        size_t count = 0;
        for (size_t i = b; i < e; ++i)
            count += d_slots_det->values_per_slot(d_batch[i].ns);
        try {
            if (d_soft)
                d_lane_why[l] = sd.detect_llr(part, reinterpret_cast<float*>(out) + offset);
            else
                d_lane_why[l] = sd.detect_bits(part,
                                               reinterpret_cast<uint8_t*>(out) + offset,
                                               d_deadline ? &d_lane_trunc[l] : nullptr);
        } catch (const cancelled&) {
            d_lane_why[l].assign(e - b, k_stopped);
            d_lane_trunc[l].clear();
        } catch (const std::exception& ex) {
            d_lane_why[l].assign(e - b, std::string("detector failed: ") + ex.what());
            std::memset(out + offset * elem, 0, count * elem);
            d_lane_trunc[l].clear();
        }
        for (size_t i = b; i < e; ++i) {
            why[i] = d_lane_why[l][i - b];
            if (i - b < d_lane_trunc[l].size())
                truncated[i] = d_lane_trunc[l][i - b];
        }
    };
    if (n > 0 && cell < 0) { // the data map is unknown
        std::fill(why.begin(), why.end(), "no cell id known (cell_id -1 and no cell_id tag so far)");
        std::memset(out, 0, produced * elem);
    } else if (n_lanes > 1) {
        const std::function<void()> poll = [this] { interrupted(); };
        d_lane_pool.run(n_lanes, lane_run, &poll);
    } else if (n > 0) {
        lane_run(0);
    }
    if (std::find(why.begin(), why.end(), k_stopped) != why.end()) {
        // The flowgraph is stopping (top_block::stop): the call is abandoned, its slots
        // neither produced nor consumed, as if it had not begun.
        d_next_ns = next_ns0;
        d_untagged = untagged0;
        d_logger->debug("{} slot(s) left undetected: the flowgraph is stopping", n);
        return 0;
    }

    size_t at = 0;
    for (size_t i = 0; i < d_batch.size(); ++i) {
        const int ns = d_batch[i].ns;
        if (!why[i].empty()) {
            if (d_bad == 0 || (d_bad + 1) % 1000 == 0)
                d_logger->error("slot {} (item {}): {}; output set to zeros ({} bad slots "
                                "so far)",
                                ns,
                                first + i,
                                why[i],
                                d_bad + 1);
            ++d_bad;
        }
        const uint64_t tag_at = nitems_written(0) + at;
        add_item_tag(0, tag_at, d_slot_key, pmt::from_long(ns), alias_pmt());
        const size_t n_trunc = i < truncated.size() ? truncated[i] : 0;
        if (why[i].empty() && n_trunc > 0) {
            // The deadline cut some searches short: downstream may weigh this slot's
            // bits accordingly (they are valid decisions, not necessarily ML).
            add_item_tag(0,
                         tag_at,
                         d_truncated_key,
                         pmt::from_long(static_cast<long>(n_trunc)),
                         alias_pmt());
            ++d_truncated;
        }
        const float* llr = d_soft ? reinterpret_cast<const float*>(out) + at : nullptr;
        const size_t n_deg =
            why[i].empty() ? d_slots_det->degenerate_vectors(ns, d_batch[i].H, llr) : 0;
        if (n_deg > 0) {
            count_degenerate(d_bad,
                             n_deg,
                             d_slots_det->values_per_slot(ns) /
                                 d_slots_det->values_per_element(),
                             ns,
                             first + i,
                             *d_logger);
            add_item_tag(0,
                         tag_at,
                         d_degenerate_key,
                         pmt::from_long(static_cast<long>(n_deg)),
                         alias_pmt());
        }
        at += d_slots_det->values_per_slot(ns);
        ++d_slots;
    }
    consume_each(done);
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(done) });
    return static_cast<int>(produced);
}

} // namespace mimodet
} // namespace gr
