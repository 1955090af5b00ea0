/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detector_block_common.h"
#include "mimo_receiver_impl.h"
#include "phy/pilot_ratio.h"
#include <algorithm>
#include <cstring>
#include <gnuradio/block_detail.h>
#include <gnuradio/buffer.h>
#include <gnuradio/buffer_reader.h>
#include <gnuradio/io_signature.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <optional>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

mimo_receiver::sptr mimo_receiver::make(const detector_config& cfg,
                                        double bandwidth_mhz,
                                        int cell_id,
                                        bool soft_output,
                                        int est_threads,
                                        bool time_domain,
                                        int fft_backoff,
                                        double pilot_ratio_db,
                                        double slot_limit_us)
{
    check_block_config("mimo_receiver", cfg, bandwidth_mhz, soft_output);
    const int n_est = estimator_threads("mimo_receiver", est_threads, cfg.n_tx, cfg.n_rx);
    if (!time_domain && fft_backoff != -1)
        throw std::invalid_argument("mimo_receiver: fft_backoff applies to time_domain "
                                    "input only (-1 for grids), got " +
                                    std::to_string(fft_backoff));
    const double ratio = core::pilot_ratio::checked_db(pilot_ratio_db, "mimo_receiver", true);
    // One slot per detect call: the stall bound is a deadline of slot_limit_us.
    const detector_config run_cfg = stall_bounded("mimo_receiver", cfg, slot_limit_us);
    const bool exact_psd = cfg.algorithm == "psd" && !(cfg.psd_deadline_us > 0.0);
    return gnuradio::make_block_sptr<mimo_receiver_impl>(run_cfg,
                                                         bandwidth_mhz,
                                                         cell_id,
                                                         soft_output,
                                                         n_est,
                                                         time_domain,
                                                         fft_backoff,
                                                         ratio,
                                                         receiver_gpu_lanes(exact_psd));
}

namespace {
//! Bytes of one input item: a grid, or a time-domain sample.
int input_item_size(double bandwidth_mhz, bool time_domain)
{
    return static_cast<int>(sizeof(gr_complex)) *
           (time_domain ? 1 : 7 * lte_numerology::from_bandwidth(bandwidth_mhz).n_sc);
}
} // namespace

mimo_receiver_impl::mimo_receiver_impl(const detector_config& cfg,
                                       double bandwidth_mhz,
                                       int cell_id,
                                       bool soft_output,
                                       int est_threads,
                                       bool time_domain,
                                       int fft_backoff,
                                       double pilot_ratio_db,
                                       int gpu_lanes)
    : gr::block(
          "mimo_receiver",
          gr::io_signature::make(
              cfg.n_rx, cfg.n_rx, input_item_size(bandwidth_mhz, time_domain)),
          gr::io_signature::make(1, 1, soft_output ? sizeof(float) : sizeof(uint8_t))),
      d_soft(soft_output), d_count_truncated(cfg.algorithm == "psd"),
      d_time_domain(time_domain), d_n_rx(cfg.n_rx),
      d_n_sc(lte_numerology::from_bandwidth(bandwidth_mhz).n_sc),
      d_slot_samples(lte_numerology::from_bandwidth(bandwidth_mhz).slot_samples()),
      d_slot_key(pmt::mp("slot")), d_cell_key(pmt::mp("cell_id")),
      d_aligner(d_slot_samples), d_cell(checked_cell_id("mimo_receiver", cell_id)),
      d_lanes(cfg,
              lte_numerology::from_bandwidth(bandwidth_mhz),
              gpu_lanes,
              [n_rx = cfg.n_rx,
               est_threads,
               backoff = time_domain ? std::optional<int>(fft_backoff) : std::nullopt,
               pilot_ratio_db](const lte_grid& grid, detector::sptr det) {
                  // The estimator follows the detector's backend: on the GPU, both stages
                  // run back to back on the device (slot_receiver's fused path).
                  const bool gpu = det->backend() == "cuda";
                  try {
                      return std::make_unique<core::slot_receiver>(grid,
                                                                   n_rx,
                                                                   std::move(det),
                                                                   est_threads,
                                                                   gpu,
                                                                   backoff,
                                                                   pilot_ratio_db);
                  } catch (const std::invalid_argument& e) { // the back-off, named as
                                                             // the block's
                      throw std::invalid_argument(std::string("mimo_receiver: ") +
                                                  e.what());
                  }
              })
{
    route_core_log();
    // cell_id -1: lanes of cell 0 until a slot's tag tells its cell (the sizes do not
    // depend on it; no slot is received before).
    make_lanes(d_cell.automatic() ? 0 : cell_id);
    const bool gpu = backend() == "cuda";
    if (gpu && d_lanes[0].estimation().estimates_pilot_ratio())
        d_logger->debug("estimated pilot ratio: measured from the grids on the host, "
                        "so H goes through the host");
    else if (gpu && !d_lanes[0].fused())
        d_logger->warn("the GPU detector does not gather on its device for this "
                       "configuration: H goes through the host");
    d_max_per_slot = d_lanes[0].detection().max_values_per_slot();
    set_output_multiple(static_cast<int>(d_max_per_slot));
    set_min_output_buffer(0, output_buffer_items(d_max_per_slot, d_lanes.size()));
    set_relative_rate(static_cast<uint64_t>(d_max_per_slot),
                      time_domain ? static_cast<uint64_t>(d_slot_samples) : 1);
    set_tag_propagation_policy(TPP_DONT);
    d_timeline = core::call_timeline::make("receiver", { "t0_ns", "work_ns", "slots" });
    d_logger->debug("{} receiver on {}{}{}: {}x{}, {} lane(s)",
                    cfg.algorithm,
                    backend(),
                    time_domain ? ", time-domain input" : "",
                    d_lanes[0].gpu_demodulation()
                        ? " (demodulation, estimation and detection on the device)"
                    : d_lanes[0].fused() ? " (estimation and detection on the device)"
                                         : "",
                    cfg.n_tx,
                    cfg.n_rx,
                    d_lanes.size());
}

void mimo_receiver_impl::make_lanes(int cell_id)
{
    d_lanes.make(cell_id);
    // The GPU buffers and the filters of a typical slot now rather than in the middle of
    // a stream.
    if (backend() == "cuda")
        for (size_t l = 0; l < d_lanes.size(); ++l)
            d_lanes[l].prepare();
    if (d_started)
        register_inputs();
}

bool mimo_receiver_impl::start()
{
    d_lanes.cancel(false);
    d_started = true;
    register_inputs();
    return block::start();
}

void mimo_receiver_impl::register_inputs()
{
    // MIMODET_INPUT_REGISTER=0: copy the slots instead (measurements only).
    if (d_time_domain && d_lanes[0].gpu_demodulation() &&
        env_override("MIMODET_INPUT_REGISTER", 0, 1, 1) == 1) {
        // GNU Radio's default buffers map their memory twice, back to back (a read may
        // run past the end into the second mapping): the first mapping is page-locked and
        // the second known as its mirror. The lanes share the registration.
        int direct = 0;
        for (int r = 0; r < d_n_rx; ++r) {
            const gr::buffer_sptr buf = detail()->input(r)->buffer();
            const size_t bytes = static_cast<size_t>(buf->bufsize()) * buf->get_sizeof_item();
            const bool mirrored =
                buf->get_mapping_type() == gr::buffer_mapping_type::double_mapped;
            bool ok = true;
            for (size_t l = 0; l < d_lanes.size(); ++l)
                ok &= d_lanes[l].register_input_memory(buf->base(), bytes, mirrored);
            direct += ok;
        }
        if (direct == d_n_rx)
            d_logger->debug("time-domain slots uploaded from the input buffers directly");
        else
            d_logger->info("{} of {} input buffers could not be page-locked: their slots "
                           "are copied before the upload",
                           d_n_rx - direct,
                           d_n_rx);
    }
}

bool mimo_receiver_impl::stop()
{
    d_started = false;
    // The scheduler calls stop() on the block's own thread once work() has returned;
    // a caller that stops the block from another thread ends a running detect here.
    d_lanes.cancel(true);
    for (size_t l = 0; l < d_lanes.size(); ++l)
        d_lanes[l].unregister_input_memory();
    return block::stop();
}

int mimo_receiver_impl::items_per_slot(int ns) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19");
    return static_cast<int>(d_lanes[0].detection().values_per_slot(ns));
}

void mimo_receiver_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    const int slots = std::max(1, static_cast<int>(noutput_items / d_max_per_slot));
    std::fill(ninput_items_required.begin(),
              ninput_items_required.end(),
              d_time_domain ? slots * d_slot_samples : slots);
}

int mimo_receiver_impl::slot_of_item(uint64_t abs_item, bool& tagged)
{
    d_item_tags.clear();
    get_tags_in_range(d_item_tags, 0, abs_item, abs_item + 1, d_slot_key);
    return slot_from_tags(
        d_item_tags.cbegin(), d_item_tags.cend(), abs_item, d_next_ns, tagged, *d_logger);
}

int mimo_receiver_impl::collect_grid_jobs(int avail, int noutput_items, size_t& produced)
{
    const size_t grid_len = 7 * static_cast<size_t>(d_n_sc);
    const uint64_t first = nitems_read(0);
    while (static_cast<int>(d_jobs.size()) < avail && d_jobs.size() < d_lanes.size()) {
        const int item = static_cast<int>(d_jobs.size());
        bool tagged;
        const int ns = slot_of_item(first + item, tagged);
        const size_t n_out = d_lanes[0].detection().values_per_slot(ns);
        if (produced + n_out > static_cast<size_t>(noutput_items))
            break;
        const int cell = cell_of_slot(first + item);
        if (!d_jobs.empty() && cell != d_jobs[0].cell)
            break; // one cell per call: the lanes are made for it
        if (!tagged)
            count_untagged(d_report.untagged, "grid item", first + item, ns, *d_logger);
        const gr_complex** grids = d_input_ptrs.data() + static_cast<size_t>(item) * d_n_rx;
        for (int r = 0; r < d_n_rx; ++r)
            grids[r] = d_inputs[r] + item * grid_len;
        d_jobs.push_back({ ns, produced, grids, first + item, cell });
        produced += n_out;
        d_next_ns = (ns + 1) % lte_numerology::slots_per_frame;
    }
    return static_cast<int>(d_jobs.size());
}

int mimo_receiver_impl::collect_time_jobs(int avail, int noutput_items, size_t& produced)
{
    const uint64_t base = nitems_read(0);
    d_item_tags.clear();
    get_tags_in_range(d_item_tags, 0, base, base + avail, d_slot_key);
    std::sort(d_item_tags.begin(), d_item_tags.end(), tag_t::offset_compare);
    int consumed = 0, ns = 0;
    bool tagged = false;
    while (d_jobs.size() < d_lanes.size() &&
           d_aligner.next(d_item_tags, base, avail, consumed, ns, tagged, *d_logger)) {
        const size_t n_out = d_lanes[0].detection().values_per_slot(ns);
        if (produced + n_out > static_cast<size_t>(noutput_items))
            break; // the aligner hands this slot out again in the next call
        const int cell = cell_of_slot(base + consumed);
        if (!d_jobs.empty() && cell != d_jobs[0].cell)
            break; // one cell per call (as above, the slot comes again)
        if (!tagged)
            count_untagged(d_report.untagged, "slot", base + consumed, ns, *d_logger);
        const gr_complex** samples =
            d_input_ptrs.data() + d_jobs.size() * static_cast<size_t>(d_n_rx);
        for (int r = 0; r < d_n_rx; ++r)
            samples[r] = d_inputs[r] + consumed;
        d_jobs.push_back({ ns, produced, samples, base + consumed, cell });
        produced += n_out;
        consumed += d_slot_samples;
        d_aligner.slot_done();
    }
    return consumed;
}

int mimo_receiver_impl::general_work(int noutput_items,
                                     gr_vector_int& ninput_items,
                                     gr_vector_const_void_star& input_items,
                                     gr_vector_void_star& output_items)
{
    const int64_t t_start = d_timeline ? core::call_timeline::now_ns() : 0;
    const int avail = *std::min_element(ninput_items.begin(), ninput_items.end());
    const size_t elem = d_soft ? sizeof(float) : sizeof(uint8_t);
    auto* out = static_cast<char*>(output_items[0]);

    // Up to one slot per lane in this call (the jobs' storage is reused across calls).
    auto& jobs = d_jobs;
    jobs.clear();
    d_input_ptrs.resize(d_lanes.size() * d_n_rx);
    d_inputs.resize(d_n_rx);
    for (int r = 0; r < d_n_rx; ++r)
        d_inputs[r] = static_cast<const gr_complex*>(input_items[r]);
    size_t produced = 0;
    if (d_cell.automatic()) {
        const uint64_t first = nitems_read(0);
        d_cell_tags.clear();
        get_tags_in_range(d_cell_tags, 0, first, first + avail, d_cell_key);
    }
    // Restored where the call is abandoned (the time-domain aligner is not: on a restart
    // it follows the next slot tag).
    const int next_ns0 = d_next_ns;
    const uint64_t untagged0 = d_report.untagged;
    const int consumed = d_time_domain ? collect_time_jobs(avail, noutput_items, produced)
                                       : collect_grid_jobs(avail, noutput_items, produced);

    d_results.assign(jobs.size(), core::slot_receiver::result{});
    const int cell = jobs.empty() ? d_lanes.cell() : jobs[0].cell;
    if (cell >= 0 && cell != d_lanes.cell())
        make_lanes(cell);
    // One slot per lane: slot i on lane i.
    const auto receive_part = [&](size_t l, size_t i, size_t) {
        const slot_job& j = jobs[i];
        core::slot_receiver& rx = d_lanes[l];
        if (d_soft) {
            auto* llr = reinterpret_cast<float*>(out) + j.offset;
            d_results[i] = d_time_domain ? rx.receive_time_llr(j.ns, j.inputs, llr)
                                         : rx.receive_llr(j.ns, j.inputs, llr);
        } else {
            auto* bits = reinterpret_cast<uint8_t*>(out) + j.offset;
            d_results[i] = d_time_domain
                               ? rx.receive_time_bits(j.ns, j.inputs, bits, d_count_truncated)
                               : rx.receive_bits(j.ns, j.inputs, bits, d_count_truncated);
        }
    };
    const auto zero_slot = [&](size_t i, const std::string& why) {
        d_results[i] = core::slot_receiver::result{};
        d_results[i].why = why;
        std::memset(out + jobs[i].offset * elem,
                    0,
                    d_lanes[0].detection().values_per_slot(jobs[i].ns) * elem);
    };
    const auto part_failed = [&](size_t, size_t i, size_t, const std::string& what) {
        zero_slot(i, "receiver failed: " + what);
    };
    if (!jobs.empty() && cell < 0) { // the CRS and the data map are unknown
        for (size_t i = 0; i < jobs.size(); ++i)
            zero_slot(i, k_no_cell);
    } else if (!d_lanes.run(jobs.size(), receive_part, part_failed)) {
        // The flowgraph is stopping (top_block::stop): the call is abandoned, its slots
        // neither produced nor consumed.
        d_next_ns = next_ns0;
        d_report.untagged = untagged0;
        d_logger->debug("{} slot(s) left undetected: the flowgraph is stopping",
                        jobs.size());
        return 0;
    }

    const auto& det0 = d_lanes[0].detection();
    for (size_t i = 0; i < jobs.size(); ++i) {
        const int ns = jobs[i].ns;
        const auto& res = d_results[i];
        slot_report::outcome o;
        o.why = res.why;
        o.truncated = res.truncated;
        o.degenerate = res.degenerate;
        o.n_vectors = det0.values_per_slot(ns) / det0.values_per_element();
        const uint64_t tag_at = nitems_written(0) + jobs[i].offset;
        for (const auto& t : d_report.add(o, ns, jobs[i].item, tag_at, *d_logger))
            add_item_tag(0, t.offset, t.key, t.value, alias_pmt());
    }
    consume_each(consumed);
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(jobs.size()) });
    return static_cast<int>(produced);
}

} // namespace mimodet
} // namespace gr
