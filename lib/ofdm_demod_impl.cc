/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "ofdm_demod_impl.h"
#include <gnuradio/io_signature.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {
int checked_n_rx(int n_rx)
{
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("ofdm_demod: n_rx must be 1..8, got " +
                                    std::to_string(n_rx));
    return n_rx;
}
int grid_size(double bw) { return 7 * lte_numerology::from_bandwidth(bw).n_sc; }
} // namespace

ofdm_demod::sptr
ofdm_demod::make(double bandwidth_mhz, int n_rx, int fft_backoff, bool compensate_backoff)
{
    return gnuradio::make_block_sptr<ofdm_demod_impl>(
        bandwidth_mhz, n_rx, fft_backoff, compensate_backoff);
}

ofdm_demod_impl::ofdm_demod_impl(double bandwidth_mhz,
                                 int n_rx,
                                 int fft_backoff,
                                 bool compensate_backoff)
    : gr::block("ofdm_demod",
                gr::io_signature::make(checked_n_rx(n_rx), n_rx, sizeof(gr_complex)),
                gr::io_signature::make(
                    n_rx, n_rx, sizeof(gr_complex) * grid_size(bandwidth_mhz))),
      d_demod(lte_numerology::from_bandwidth(bandwidth_mhz),
              fft_backoff,
              compensate_backoff,
              "ofdm_demod"),
      d_n_rx(n_rx),
      d_slot(d_demod.slot_samples()),
      d_vlen(d_demod.grid_len()),
      d_slot_key(pmt::mp("slot")),
      d_cell_key(pmt::mp("cell_id")),
      d_aligner(d_slot)
{
    for (int a = 0; a < n_rx; ++a)
        d_ffts.push_back(d_demod.make_fft());
    // A slot's antennas in parallel where the FFTs are long enough to pay for the hand
    // over (10 MHz and up): at 20 MHz 4 antennas are 28 FFTs of 2048 points, the
    // receiver's latency is a chain of such per-slot stages.
    d_threads = core::antenna_threads(d_demod.numerology().fft_size, n_rx);
    set_tag_propagation_policy(TPP_DONT);
    d_timeline = core::call_timeline::make("demod", { "t0_ns", "work_ns", "slots" });
    set_relative_rate(1, static_cast<uint64_t>(d_slot));
}

void ofdm_demod_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    for (auto& r : ninput_items_required)
        r = noutput_items * d_slot;
}

int ofdm_demod_impl::general_work(int noutput_items,
                                  gr_vector_int& ninput_items,
                                  gr_vector_const_void_star& input_items,
                                  gr_vector_void_star& output_items)
{
    const int64_t t_start = d_timeline ? core::call_timeline::now_ns() : 0;
    const int avail = *std::min_element(ninput_items.begin(), ninput_items.end());
    const uint64_t base = nitems_read(0);
    std::vector<tag_t> tags;
    get_tags_in_range(tags, 0, base, base + avail, d_slot_key);
    std::sort(tags.begin(), tags.end(), tag_t::offset_compare);
    // ofdm_sync's "cell_id" tags go on with their slot's grid (to the blocks that take
    // the cell from them).
    auto& cells = d_cell_tags;
    cells.clear();
    get_tags_in_range(cells, 0, base, base + avail, d_cell_key);

    int consumed = 0, produced = 0;
    int ns = 0;
    bool tagged = false;
    while (produced < noutput_items &&
           d_aligner.next(tags, base, avail, consumed, ns, tagged, *d_logger)) {
        if (!tagged && !d_warned_missing) {
            d_logger->warn("slot without a 'slot' tag at item {}: counting on (slot {})",
                           base + consumed,
                           ns);
            d_warned_missing = true;
        }
        d_pool.run(static_cast<size_t>(d_threads), [&](size_t t) {
            for (int a = static_cast<int>(t); a < d_n_rx; a += d_threads)
                d_demod.demodulate(*d_ffts[a],
                                   static_cast<const gr_complex*>(input_items[a]) + consumed,
                                   static_cast<gr_complex*>(output_items[a]) +
                                       static_cast<size_t>(produced) * d_vlen);
        });
        for (int a = 0; a < d_n_rx; ++a)
            add_item_tag(a, nitems_written(a) + produced, d_slot_key, pmt::from_long(ns));
        for (const auto& t : cells)
            if (t.offset == base + consumed)
                for (int a = 0; a < d_n_rx; ++a)
                    add_item_tag(a, nitems_written(a) + produced, d_cell_key, t.value);
        d_aligner.slot_done();
        consumed += d_slot;
        ++produced;
        d_slots++;
    }
    consume_each(consumed);
    if (d_timeline && produced > 0)
        d_timeline->add({ double(t_start),
                          double(core::call_timeline::now_ns() - t_start),
                          double(produced) });
    return produced;
}

} // namespace mimodet
} // namespace gr
