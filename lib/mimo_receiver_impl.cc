/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "mimo_receiver_impl.h"
#include "detector_block_common.h"
#include "phy/pilot_ratio.h"
#include "util/tuning.h"
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
                                                         receiver_gpu_lanes(exact_psd),
                                                         exact_psd);
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
                                       int gpu_lanes,
                                       bool slots_in_flight)
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
    // Slots in flight across calls for exact psd on the GPU (slots_in_flight): its lone
    // slot takes longer than the 0.5 ms between slots at 20 MHz 4x4 64QAM, so a slot
    // that waited for the call in progress would be late; started as it arrives, its p99
    // stays under 1 ms (docs/PERFORMANCE.md, "In the flowgraph, exact"). The near-ML
    // detectors' slots finish within the period, and there the hand-over to a lane's
    // thread and back costs more latency than it saves. The CPU detector uses every core
    // inside its one lane. MIMODET_RECEIVER_ASYNC=0|1 overrides it (measurements, and the
    // CPU's tests).
    const int async = core::tuning::receiver_async();
    d_async = async < 0 ? gpu && slots_in_flight : async == 1;
    if (d_async)
        d_lane_threads = std::make_unique<core::lane_threads>(d_lanes.size());
    set_output_multiple(static_cast<int>(d_max_per_slot));
    set_min_output_buffer(0, output_buffer_items(d_max_per_slot, d_lanes.size()));
    set_relative_rate(static_cast<uint64_t>(d_max_per_slot),
                      time_domain ? static_cast<uint64_t>(d_slot_samples) : 1);
    set_tag_propagation_policy(TPP_DONT);
    d_timeline = core::call_timeline::make("receiver", { "t0_ns", "work_ns", "slots" });
    d_logger->debug("{} receiver on {}{}{}: {}x{}, {} lane(s){}",
                    cfg.algorithm,
                    backend(),
                    time_domain ? ", time-domain input" : "",
                    d_lanes[0].gpu_demodulation()
                        ? " (demodulation, estimation and detection on the device)"
                    : d_lanes[0].fused() ? " (estimation and detection on the device)"
                                         : "",
                    cfg.n_tx,
                    cfg.n_rx,
                    d_lanes.size(),
                    d_async ? ", slots in flight across calls" : "");
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
    d_scan_reset = true; // a new flowgraph run counts its items from 0
    if (d_lane_threads) {
        // A slot in flight reads its input, and writes its output, in place across
        // calls: only where GNU Radio never moves buffered items (its default,
        // double-mapped buffers; a single-mapped one may move unread items).
        bool fixed = detail()->output(0)->get_mapping_type() ==
                     gr::buffer_mapping_type::double_mapped;
        for (int r = 0; r < d_n_rx; ++r)
            fixed = fixed && detail()->input(r)->buffer()->get_mapping_type() ==
                                 gr::buffer_mapping_type::double_mapped;
        d_async = fixed;
        if (!fixed)
            d_logger->info("single-mapped buffers: slots are detected within each call");
        // A finishing lane wakes the block's thread wherever it waits in the scheduler
        // (for input, for output room): the same notice a posted message gives.
        gr::tpb_detail* tpb = &detail()->d_tpb;
        d_lane_threads->set_on_finish([tpb] { tpb->notify_msg(); });
    }
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
    if (d_lane_threads) {
        d_lane_threads->wait_all();
        d_lane_threads->set_on_finish(nullptr);
        drop_flight();
    }
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
    if (d_async) {
        // Work is called where it can make progress: a finished slot to put out, or the
        // input of a slot after those in flight; else the scheduler waits for input or
        // a lane's wake-up. Where no more input can come (upstream done, or the buffer
        // full with the slots in flight), work waits for a lane instead.
        const int one = d_time_domain ? d_slot_samples : 1;
        bool wait_in_work = !d_flight.empty() && d_flight.front().done.load();
        for (size_t i = 0; i < ninput_items_required.size() && !d_flight.empty(); ++i)
            wait_in_work = wait_in_work || detail()->input(i)->done();
        for (size_t i = 0; i < ninput_items_required.size(); ++i) {
            const uint64_t held = d_flight.empty() ? 0 : d_scan_item - nitems_read(i);
            const uint64_t need = held + one;
            const bool room =
                need <=
                static_cast<uint64_t>(detail()->input(i)->max_possible_items_available());
            ninput_items_required[i] = d_flight.empty()        ? one
                                       : wait_in_work || !room ? 0
                                                               : static_cast<int>(need);
        }
        return;
    }
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
    d_inputs.resize(d_n_rx);
    for (int r = 0; r < d_n_rx; ++r)
        d_inputs[r] = static_cast<const gr_complex*>(input_items[r]);
    if (d_cell.automatic()) {
        const uint64_t first = nitems_read(0);
        d_cell_tags.clear();
        get_tags_in_range(d_cell_tags, 0, first, first + avail, d_cell_key);
    }
    if (d_async) {
        int started = 0;
        const int produced = work_async(noutput_items, avail, out, started);
        if (d_timeline)
            d_timeline->add({ double(t_start),
                              double(core::call_timeline::now_ns() - t_start),
                              double(started) });
        return produced;
    }

    // Up to one slot per lane in this call (the jobs' storage is reused across calls).
    auto& jobs = d_jobs;
    jobs.clear();
    d_input_ptrs.resize(d_lanes.size() * d_n_rx);
    size_t produced = 0;
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
        d_results[i] =
            receive(d_lanes[l], jobs[i].ns, jobs[i].inputs, out + jobs[i].offset * elem);
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

    for (size_t i = 0; i < jobs.size(); ++i)
        report(
            jobs[i].ns, jobs[i].item, nitems_written(0) + jobs[i].offset, d_results[i]);
    consume_each(consumed);
    if (d_timeline)
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(jobs.size()) });
    return static_cast<int>(produced);
}

core::slot_receiver::result mimo_receiver_impl::receive(core::slot_receiver& rx,
                                                        int ns,
                                                        const gr_complex* const* inputs,
                                                        char* out_at)
{
    if (d_soft) {
        auto* llr = reinterpret_cast<float*>(out_at);
        return d_time_domain ? rx.receive_time_llr(ns, inputs, llr)
                             : rx.receive_llr(ns, inputs, llr);
    }
    auto* bits = reinterpret_cast<uint8_t*>(out_at);
    return d_time_domain ? rx.receive_time_bits(ns, inputs, bits, d_count_truncated)
                         : rx.receive_bits(ns, inputs, bits, d_count_truncated);
}

void mimo_receiver_impl::report(int ns,
                                uint64_t item,
                                uint64_t out_item,
                                const core::slot_receiver::result& res)
{
    const auto& det0 = d_lanes[0].detection();
    slot_report::outcome o;
    o.why = res.why;
    o.truncated = res.truncated;
    o.degenerate = res.degenerate;
    o.n_vectors = det0.values_per_slot(ns) / det0.values_per_element();
    for (const auto& t : d_report.add(o, ns, item, out_item, *d_logger))
        add_item_tag(0, t.offset, t.key, t.value, alias_pmt());
}

int mimo_receiver_impl::work_async(int noutput_items, int avail, char* out, int& started)
{
    const uint64_t read0 = nitems_read(0);
    if (d_scan_reset) {
        d_scan_item = read0;
        d_scan_reset = false;
    }
    size_t produced = 0;
    for (;;) {
        // Read first, so a lane that finishes after the checks below ends the wait.
        const uint64_t seen = d_lane_threads->finishes();
        bool abandoned = false;
        produced = emit_finished(abandoned);
        if (abandoned)
            break;
        started = start_slots(noutput_items, avail, out, produced);
        if (produced > 0 || started > 0 || d_flight.empty())
            break;
        // Nothing to put out and nothing to start (every lane busy, the input all in
        // flight, or a cell change waiting for the lanes to drain): wait for a lane.
        // top_block::stop() interrupts this thread: the lanes are cancelled then, and
        // their slots come back cancelled.
        while (!d_lane_threads->wait_finish(seen, std::chrono::milliseconds(20)))
            d_lanes.interrupted();
    }
    // Every input item before the first slot in flight is put out or dropped.
    const uint64_t done_to = d_flight.empty() ? d_scan_item : d_flight.front().item;
    consume_each(static_cast<int>(done_to - read0));
    return static_cast<int>(produced);
}

size_t mimo_receiver_impl::emit_finished(bool& abandoned)
{
    const uint64_t written0 = nitems_written(0);
    size_t produced = 0;
    while (!d_flight.empty()) {
        flight_slot& s = d_flight.front();
        if (!s.done.load(std::memory_order_acquire))
            break;
        if (s.cancelled) {
            // The flowgraph is stopping: this slot and those after it are neither
            // produced nor consumed.
            d_lane_threads->wait_all();
            d_logger->debug("{} slot(s) left undetected: the flowgraph is stopping",
                            d_flight.size());
            drop_flight();
            abandoned = true;
            break;
        }
        if (!s.tagged)
            count_untagged(d_report.untagged,
                           d_time_domain ? "slot" : "grid item",
                           s.item,
                           s.ns,
                           *d_logger);
        report(s.ns, s.item, s.out_item, s.res);
        produced = s.out_item + s.n_out - written0;
        d_flight.pop_front();
    }
    return produced;
}

int mimo_receiver_impl::start_slots(int noutput_items,
                                    int avail,
                                    char* out,
                                    size_t produced)
{
    const uint64_t read0 = nitems_read(0), written0 = nitems_written(0);
    const size_t elem = d_soft ? sizeof(float) : sizeof(uint8_t);
    const size_t grid_len = 7 * static_cast<size_t>(d_n_sc);
    int started = 0;
    // The checks every slot passes before it starts: an idle lane, output room after the
    // slots in flight, its cell the lanes' (else they first drain, and are made anew).
    // Where one fails, the slot is looked for again in a later call.
    const auto can_start = [&](int ns, uint64_t item, int& cell, uint64_t& out_item) {
        if (d_lane_threads->idle_lane() == d_lane_threads->size())
            return false;
        out_item = d_flight.empty() ? written0 + produced
                                    : d_flight.back().out_item + d_flight.back().n_out;
        // Not held across make_lanes(), which replaces the lanes.
        if (out_item - written0 + d_lanes[0].detection().values_per_slot(ns) >
            static_cast<uint64_t>(noutput_items))
            return false;
        cell = cell_of_slot(item);
        if (cell >= 0 && cell != d_lanes.cell()) {
            if (!d_flight.empty())
                return false;
            // The last lane may still be returning from its slot's job.
            d_lane_threads->wait_all();
            make_lanes(cell);
        }
        return true;
    };
    if (!d_time_domain) {
        while (d_scan_item < read0 + static_cast<uint64_t>(avail)) {
            bool tagged;
            const int ns = slot_of_item(d_scan_item, tagged);
            int cell;
            uint64_t out_item;
            if (!can_start(ns, d_scan_item, cell, out_item))
                break;
            start_slot(ns,
                       tagged,
                       cell,
                       d_scan_item,
                       (d_scan_item - read0) * grid_len,
                       out_item,
                       out + (out_item - written0) * elem);
            ++d_scan_item;
            d_next_ns = (ns + 1) % lte_numerology::slots_per_frame;
            ++started;
        }
    } else {
        d_item_tags.clear();
        get_tags_in_range(d_item_tags, 0, read0, read0 + avail, d_slot_key);
        std::sort(d_item_tags.begin(), d_item_tags.end(), tag_t::offset_compare);
        int consumed = static_cast<int>(d_scan_item - read0), ns = 0;
        bool tagged = false;
        while (
            d_aligner.next(d_item_tags, read0, avail, consumed, ns, tagged, *d_logger)) {
            int cell;
            uint64_t out_item;
            const uint64_t item = read0 + consumed;
            if (!can_start(ns, item, cell, out_item))
                break; // the aligner hands this slot out again
            start_slot(ns,
                       tagged,
                       cell,
                       item,
                       static_cast<size_t>(consumed),
                       out_item,
                       out + (out_item - written0) * elem);
            consumed += d_slot_samples;
            d_aligner.slot_done();
            ++started;
        }
        d_scan_item = read0 + consumed; // past the slots started and samples dropped
    }
    return started;
}

void mimo_receiver_impl::start_slot(int ns,
                                    bool tagged,
                                    int cell,
                                    uint64_t item,
                                    size_t input_offset,
                                    uint64_t out_item,
                                    char* out_at)
{
    const size_t elem = d_soft ? sizeof(float) : sizeof(uint8_t);
    flight_slot& s = d_flight.emplace_back();
    s.ns = ns;
    s.tagged = tagged;
    s.item = item;
    s.out_item = out_item;
    s.n_out = d_lanes[0].detection().values_per_slot(ns);
    s.inputs.resize(d_n_rx);
    for (int r = 0; r < d_n_rx; ++r)
        s.inputs[r] = d_inputs[r] + input_offset;
    if (cell < 0) { // the CRS and the data map are unknown
        s.lane = SIZE_MAX;
        s.res.why = k_no_cell;
        std::memset(out_at, 0, s.n_out * elem);
        s.done = true;
        return;
    }
    s.lane = d_lane_threads->idle_lane();
    d_lane_threads->post(s.lane, [this, &s, out_at, elem] {
        try {
            s.res = receive(d_lanes[s.lane], s.ns, s.inputs.data(), out_at);
        } catch (const cancelled&) {
            s.cancelled = true;
        } catch (const std::exception& e) {
            s.res = core::slot_receiver::result{};
            s.res.why = std::string("receiver failed: ") + e.what();
            std::memset(out_at, 0, s.n_out * elem);
        }
        s.done.store(true, std::memory_order_release);
    });
}

void mimo_receiver_impl::drop_flight()
{
    if (!d_flight.empty()) { // looked for again from the first dropped slot
        d_next_ns = d_flight.front().ns;
        d_scan_item = d_flight.front().item;
    }
    d_flight.clear();
}

} // namespace mimodet
} // namespace gr
