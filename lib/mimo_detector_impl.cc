/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "mimo_detector_impl.h"
#include "detector_block_common.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <gnuradio/io_signature.h>
#include <gnuradio/logger.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
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

int grid_bytes(double mhz)
{
    return sizeof(gr_complex) * 7 * lte_numerology::from_bandwidth(mhz).n_sc;
}

} // namespace

mimo_detector::sptr mimo_detector::make(const detector_config& cfg,
                                        double bandwidth_mhz,
                                        int cell_id,
                                        bool soft_output,
                                        double slot_limit_us)
{
    check_block_config("mimo_detector", cfg, bandwidth_mhz, soft_output);
    return gnuradio::make_block_sptr<mimo_detector_impl>(
        stall_bounded("mimo_detector", cfg, slot_limit_us),
        bandwidth_mhz,
        cell_id,
        soft_output,
        cfg.psd_deadline_us > 0.0);
}

mimo_detector_impl::mimo_detector_impl(const detector_config& cfg,
                                       double bandwidth_mhz,
                                       int cell_id,
                                       bool soft_output,
                                       bool user_deadline)
    : gr::block(
          "mimo_detector",
          gr::io_signature::makev(
              cfg.n_rx + 2,
              cfg.n_rx + 2,
              [&] {
                  std::vector<int> s(cfg.n_rx, grid_bytes(bandwidth_mhz));
                  s.push_back(static_cast<int>(sizeof(gr_complex)) *
                              lte_numerology::from_bandwidth(bandwidth_mhz).n_sc *
                              cfg.n_rx * cfg.n_tx);
                  s.push_back(sizeof(float));
                  return s;
              }()),
          gr::io_signature::make(1, 1, soft_output ? sizeof(float) : sizeof(uint8_t))),
      d_soft(soft_output), d_n_rx(cfg.n_rx),
      d_n_sc(lte_numerology::from_bandwidth(bandwidth_mhz).n_sc),
      d_slot_key(pmt::mp("slot")), d_deadline(cfg.psd_deadline_us > 0.0),
      d_count_truncated(cfg.algorithm == "psd"),
      // A PSD deadline (the user's or the stall bound's) is a budget per detector call:
      // one slot per lane and call makes it one per slot. Otherwise queued slots share
      // calls (fewer, larger GPU batches).
      d_max_slots_per_call(1), d_cell_key(pmt::mp("cell_id")),
      d_cell(checked_cell_id("mimo_detector", cell_id)),
      d_lanes(cfg,
              lte_numerology::from_bandwidth(bandwidth_mhz),
              gpu_lanes(user_deadline),
              [n_rx = cfg.n_rx](const lte_grid& grid, detector::sptr det) {
                  return std::make_unique<core::slot_detection>(
                      grid, n_rx, std::move(det));
              })
{
    route_core_log();
    // cell_id -1: lanes of cell 0 until a slot's tag tells its cell (the sizes do not
    // depend on it; no slot is detected before).
    d_lanes.make(d_cell.automatic() ? 0 : cell_id);
    d_max_per_slot = d_lanes[0].max_values_per_slot();
    d_max_slots_per_call =
        d_deadline ? static_cast<int>(d_lanes.size()) : max_slots_per_call();
    // Room for at least one whole slot in every call; one input item per slot gives up to
    // d_max_per_slot output items (the rate also keeps the upstream buffers small: with
    // the default rate 1 the runtime would size them for d_max_per_slot input items).
    set_output_multiple(static_cast<int>(d_max_per_slot));
    // Room for a full call's slots, so a backlog is worked off in large batches.
    set_min_output_buffer(0, output_buffer_items(d_max_per_slot, d_max_slots_per_call));
    set_relative_rate(static_cast<uint64_t>(d_max_per_slot), 1);
    set_tag_propagation_policy(TPP_DONT);
    prepare_lanes();
    d_timeline = core::call_timeline::make("block", { "t0_ns", "work_ns", "slots" });
    d_logger->debug("{} detector on {}: {}x{}, up to {} output items per slot",
                    cfg.algorithm,
                    backend(),
                    cfg.n_tx,
                    cfg.n_rx,
                    d_max_per_slot);
}

void mimo_detector_impl::prepare_lanes()
{
    // The GPU pipeline's buffers at their full size now rather than in the middle of a
    // stream (the CPU backend's only grow host vectors, which is cheap).
    if (backend() == "cuda") {
        const int n_lanes = static_cast<int>(d_lanes.size());
        const int per_lane = (d_max_slots_per_call + n_lanes - 1) / n_lanes;
        for (size_t l = 0; l < d_lanes.size(); ++l)
            d_lanes[l].prepare(per_lane);
    }
}

bool mimo_detector_impl::start()
{
    d_lanes.cancel(false);
    return block::start();
}

bool mimo_detector_impl::stop()
{
    // The scheduler calls stop() on the block's own thread once work() has returned;
    // a caller that stops the block from another thread ends a running detect here.
    d_lanes.cancel(true);
    return block::stop();
}

int mimo_detector_impl::items_per_slot(int ns) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19");
    return static_cast<int>(d_lanes[0].values_per_slot(ns));
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
    const size_t h_len = static_cast<size_t>(d_n_sc) * d_n_rx * d_lanes[0].n_tx();
    const auto* H = static_cast<const gr_complex*>(input_items[d_n_rx]);
    const auto* nv = static_cast<const float*>(input_items[d_n_rx + 1]);
    const uint64_t first = nitems_read(0);
    const size_t elem = d_soft ? sizeof(float) : sizeof(uint8_t);
    auto* out = static_cast<char*>(output_items[0]);

    // The slots of this call go into ONE detector call (one batch of all their
    // subcarrier groups: for the CUDA backend one round of copies and one wait).
    d_batch.clear();
    d_offsets.clear();
    d_grid_ptrs.resize(static_cast<size_t>(d_max_slots_per_call) * d_n_rx);
    const int next_ns0 = d_next_ns; // restored where the call is abandoned
    const uint64_t untagged0 = d_report.untagged;
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
        const size_t n_out = d_lanes[0].values_per_slot(ns);
        if (produced + n_out > static_cast<size_t>(noutput_items))
            break;
        const int c = d_cell.update(d_cell_tags, first + done, *d_logger);
        if (done > 0 && c != cell)
            break;
        cell = c;
        if (!tagged)
            count_untagged(d_report.untagged, "grid item", first + done, ns, *d_logger);
        const gr_complex** grids =
            d_grid_ptrs.data() + static_cast<size_t>(done) * d_n_rx;
        for (int r = 0; r < d_n_rx; ++r)
            grids[r] = static_cast<const gr_complex*>(input_items[r]) + done * grid_len;
        d_batch.push_back({ ns, grids, H + done * h_len, nv[done] });
        d_offsets.push_back(produced);
        produced += n_out;
        d_next_ns = (ns + 1) % lte_numerology::slots_per_frame;
        ++done;
    }
    d_offsets.push_back(produced); // the end of the last slot

    // Unusable slots come back with their reason and zeros as output. The slots are cut
    // into contiguous parts, one per lane (lane 0 on this thread); a PSD deadline keeps
    // one slot per lane.
    const size_t n = d_batch.size();
    std::vector<std::string> why(n);
    std::vector<size_t> truncated(n, 0);
    d_lane_why.resize(d_lanes.size());
    d_lane_trunc.resize(d_lanes.size());
    if (n > 0 && cell >= 0 && cell != d_lanes.cell()) {
        d_lanes.make(cell);
        prepare_lanes();
    }
    const auto detect_part = [&](size_t l, size_t b, size_t e) {
        core::slot_detection& sd = d_lanes[l];
        std::vector<core::slot_detection::slot_input> part(d_batch.begin() + b,
                                                           d_batch.begin() + e);
        if (d_soft)
            d_lane_why[l] =
                sd.detect_llr(part, reinterpret_cast<float*>(out) + d_offsets[b]);
        else
            d_lane_why[l] =
                sd.detect_bits(part,
                               reinterpret_cast<uint8_t*>(out) + d_offsets[b],
                               d_count_truncated ? &d_lane_trunc[l] : nullptr);
        for (size_t i = b; i < e; ++i) {
            why[i] = d_lane_why[l][i - b];
            if (i - b < d_lane_trunc[l].size())
                truncated[i] = d_lane_trunc[l][i - b];
        }
    };
    const auto part_failed = [&](size_t, size_t b, size_t e, const std::string& what) {
        std::fill(why.begin() + b, why.begin() + e, "detector failed: " + what);
        std::memset(out + d_offsets[b] * elem, 0, (d_offsets[e] - d_offsets[b]) * elem);
    };
    if (n > 0 && cell < 0) { // the data map is unknown
        std::fill(why.begin(), why.end(), k_no_cell);
        std::memset(out, 0, produced * elem);
    } else if (!d_lanes.run(n, detect_part, part_failed)) {
        // The flowgraph is stopping (top_block::stop): the call is abandoned, its slots
        // neither produced nor consumed, as if it had not begun.
        d_next_ns = next_ns0;
        d_report.untagged = untagged0;
        d_logger->debug("{} slot(s) left undetected: the flowgraph is stopping", n);
        return 0;
    }

    const auto& lane0 = d_lanes[0];
    for (size_t i = 0; i < n; ++i) {
        const int ns = d_batch[i].ns;
        const size_t at = d_offsets[i];
        slot_report::outcome o;
        o.why = why[i];
        o.truncated = truncated[i];
        if (o.why.empty()) {
            const float* llr =
                d_soft ? reinterpret_cast<const float*>(out) + at : nullptr;
            o.degenerate = lane0.degenerate_vectors(ns, d_batch[i].H, llr);
            o.n_vectors = lane0.values_per_slot(ns) / lane0.values_per_element();
        }
        for (const auto& t :
             d_report.add(o, ns, first + i, nitems_written(0) + at, *d_logger))
            add_item_tag(0, t.offset, t.key, t.value, alias_pmt());
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
