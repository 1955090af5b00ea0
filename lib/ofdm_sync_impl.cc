/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "detector_block_common.h"
#include "ofdm_sync_impl.h"
#include "util/tuning.h"
#include "util/worker_pool.h"
#include <gnuradio/io_signature.h>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {
int checked_n_rx(int n_rx)
{
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("ofdm_sync: n_rx must be 1..8, got " +
                                    std::to_string(n_rx));
    return n_rx;
}
int checked_cell(int cell_id)
{
    if (cell_id < -1 || cell_id > 503)
        throw std::invalid_argument("ofdm_sync: cell_id must be 0..503, or -1 to search "
                                    "the cell, got " +
                                    std::to_string(cell_id));
    return cell_id;
}
//! Slots of room in each output buffer: about 1 MB per antenna at 20 MHz.
constexpr int k_slots_buffered = 8;
} // namespace

ofdm_sync::sptr ofdm_sync::make(double bandwidth_mhz, int n_rx, int cell_id)
{
    return gnuradio::make_block_sptr<ofdm_sync_impl>(bandwidth_mhz, n_rx, cell_id);
}

ofdm_sync_impl::ofdm_sync_impl(double bandwidth_mhz, int n_rx, int cell_id)
    : gr::block("ofdm_sync",
                gr::io_signature::make(checked_n_rx(n_rx), n_rx, sizeof(gr_complex)),
                gr::io_signature::make(n_rx, n_rx, sizeof(gr_complex))),
      d_num(lte_numerology::from_bandwidth(bandwidth_mhz)),
      d_n_rx(n_rx),
      d_slot(d_num.slot_samples()),
      d_sync(d_num,
             n_rx,
             checked_cell(cell_id),
             lte_sync::slot_sync_params(),
             // A slot's per-antenna work in parallel from 10 MHz on: the block is on the
             // receiver's per-slot latency path.
             core::antenna_threads(lte_numerology::from_bandwidth(bandwidth_mhz).fft_size,
                                   n_rx)),
      d_slot_key(pmt::mp("slot")),
      d_cell_key(pmt::mp("cell_id")),
      // MIMODET_SYNC_AHEAD=0: the next slot's input only in the call that puts it out
      // (measurements only).
      d_take_ahead(core::tuning::sync_ahead() != 0),
      d_in(n_rx),
      d_out(n_rx)
{
    // Whole slots only; samples are dropped or repeated around timing steps, so input
    // tags cannot be mapped and are not propagated.
    set_output_multiple(d_slot);
    // GNU Radio hands a block at most half of its output buffer per call, and by default
    // sizes it for two output multiples: the synchroniser could not write a slot while
    // the receiver still held the one before, so the two ran one after the other. Room
    // for k_slots_buffered slots lets it run ahead (and keep working through a stall of
    // the receiver), and lets the receiver take several queued slots in one call.
    set_min_output_buffer(static_cast<long>(k_slots_buffered) * d_slot);
    set_tag_propagation_policy(TPP_DONT);
    d_cell = d_sync.cell_id();
    message_port_register_out(d_cell_key);
    d_timeline = core::call_timeline::make("sync", { "t0_ns", "work_ns", "slots" });
    // The synchroniser's level 0 are routine events (per-slot tracking, acquisition
    // candidates, resampling switched by fading); they go to trace, since Debian's GNU
    // Radio configuration logs at debug by default and a running flowgraph would print
    // one or two of them a second.
    d_sync.set_logger([this](int level, const std::string& m) {
        switch (level) {
        case 0:
            d_logger->trace("{}", m);
            break;
        case 1:
            d_logger->info("{}", m);
            break;
        case 2:
            d_logger->warn("{}", m);
            break;
        default:
            d_logger->error("{}", m);
        }
    });
}

void ofdm_sync_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    // What the synchroniser needs for its next step (the rest of the next slot and a
    // little lookahead when locked), at most noutput_items; nothing when that step's
    // input was taken in already (a slot is ready to go out).
    const int64_t want = d_sync.step_ready() && !d_idle_call
                             ? 0
                             : std::min<int64_t>(d_sync.samples_wanted(), noutput_items);
    for (auto& r : ninput_items_required)
        r = static_cast<int>(want);
}

void ofdm_sync_impl::publish_lock()
{
    const lte_sync::lock_report& r = d_sync.last_lock();
    d_cell = r.cell_id;
    pmt::pmt_t d = pmt::make_dict();
    d = pmt::dict_add(d, pmt::mp("cell_id"), pmt::from_long(r.cell_id));
    d = pmt::dict_add(d, pmt::mp("n_id1"), pmt::from_long(r.cell_id / 3));
    d = pmt::dict_add(d, pmt::mp("n_id2"), pmt::from_long(r.cell_id % 3));
    d = pmt::dict_add(d, pmt::mp("metric"), pmt::from_double(r.pss_metric));
    d = pmt::dict_add(d, pmt::mp("sss_rho"), pmt::from_double(r.sss_rho));
    d = pmt::dict_add(d, pmt::mp("sss_runner_up"), pmt::from_double(r.sss_runner_up));
    d = pmt::dict_add(d, pmt::mp("searched"), pmt::from_bool(d_sync.cell_search()));
    message_port_pub(d_cell_key, d);
}

int ofdm_sync_impl::general_work(int noutput_items,
                                 gr_vector_int& ninput_items,
                                 gr_vector_const_void_star& input_items,
                                 gr_vector_void_star& output_items)
{
    const int64_t t_start = d_timeline ? core::call_timeline::now_ns() : 0;
    const int avail = *std::min_element(ninput_items.begin(), ninput_items.end());
    int consumed = 0, produced = 0;
    lte_sync::slot_info info;
    // One slot per call: a slot goes downstream as soon as it is out, before the PSS
    // search that follows a slot 0/10 (lte_sync::slot_sync) runs in the next call. The
    // call that puts a slot out still takes in the input of the next step (without
    // running it), so that the upstream block gets its buffer space back now: after a
    // stall, a radio source blocked on a full buffer then writes the next slot while
    // this block works on the one before, instead of after it.
    for (;;) {
        if (produced == 0) {
            if (d_slot > noutput_items)
                break;
            for (int a = 0; a < d_n_rx; ++a)
                d_out[a] = static_cast<gr_complex*>(output_items[a]);
            if (d_sync.pop_slot(d_out, info)) {
                // The cell found goes downstream with every slot; with a given cell id
                // the stream stays as it was (the receivers are given it too).
                const pmt::pmt_t cell = pmt::from_long(info.cell_id);
                for (int a = 0; a < d_n_rx; ++a) {
                    add_item_tag(a, nitems_written(a), d_slot_key, pmt::from_long(info.ns));
                    if (d_sync.cell_search())
                        add_item_tag(a, nitems_written(a), d_cell_key, cell);
                }
                if (info.first)
                    publish_lock();
                d_slots++;
                d_cfo = info.cfo;
                d_sro = info.sro_ppm;
                d_resampling = info.resampled;
                produced = d_slot;
                continue;
            }
        } else if (!d_take_ahead || d_sync.step_ready()) {
            break; // the next step runs in the next call
        }
        // Feed only what the next step needs, so that unprocessed input stays upstream.
        const int n = static_cast<int>(
            std::min<int64_t>(avail - consumed, d_sync.samples_wanted()));
        if (n <= 0)
            break;
        for (int a = 0; a < d_n_rx; ++a)
            d_in[a] = static_cast<const gr_complex*>(input_items[a]) + consumed;
        d_sync.push(d_in, n);
        consumed += n;
    }
    // A call that neither took input nor put a slot out must not be repeated at once
    // (forecast's 0 would make the scheduler spin): the next one waits for input.
    d_idle_call = produced == 0 && consumed == 0;
    d_locked = d_sync.locked();
    d_missed = d_sync.pss_missed();
    d_lost = d_sync.slots_lost();
    consume_each(consumed);
    if (d_timeline && produced > 0) // the calls that only took samples in are not kept
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(produced / d_slot) });
    return produced;
}

} // namespace mimodet
} // namespace gr
