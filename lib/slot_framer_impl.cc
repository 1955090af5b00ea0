/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/pilot_ratio.h"
#include "slot_framer_impl.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <gnuradio/io_signature.h>
#include <limits>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {

void check_n_tx(int n_tx)
{
    if (n_tx != 1 && n_tx != 2 && n_tx != 4)
        throw std::invalid_argument("slot_framer: n_tx must be 1, 2 or 4, got " +
                                    std::to_string(n_tx));
}

// Validates bandwidth and n_tx before the base class is built.
gr::io_signature::sptr framer_output_signature(double bandwidth_mhz, int n_tx, bool freq)
{
    const auto num =
        lte_numerology::from_bandwidth(bandwidth_mhz); // throws invalid_argument
    check_n_tx(n_tx);
    const int vlen = freq ? lte_numerology::symbols_per_slot * num.n_sc : 1;
    return gr::io_signature::make(n_tx, n_tx, sizeof(gr_complex) * vlen);
}

core::slot_mapper make_mapper(double bandwidth_mhz,
                              int n_tx,
                              const std::string& modulation,
                              int cell_id,
                              double pilot_ratio_db)
{
    const auto num = lte_numerology::from_bandwidth(bandwidth_mhz);
    check_n_tx(n_tx);
    if (cell_id < 0 || cell_id > 503)
        throw std::invalid_argument("slot_framer: cell_id must be 0..503, got " +
                                    std::to_string(cell_id));
    const double ratio = core::pilot_ratio::checked_db(pilot_ratio_db, "slot_framer", false);
    return core::slot_mapper(num, n_tx, parse_modulation(modulation), cell_id, ratio);
}

int items_per_slot_of(const core::slot_mapper& m, bool freq)
{
    return freq ? 1 : m.numerology().slot_samples();
}

} // namespace

slot_framer::sptr slot_framer::make(double bandwidth_mhz,
                                    int n_tx,
                                    const std::string& modulation,
                                    int cell_id,
                                    bool freq_domain,
                                    double pilot_ratio_db)
{
    return gnuradio::make_block_sptr<slot_framer_impl>(
        bandwidth_mhz, n_tx, modulation, cell_id, freq_domain, pilot_ratio_db);
}

slot_framer_impl::slot_framer_impl(double bandwidth_mhz,
                                   int n_tx,
                                   const std::string& modulation,
                                   int cell_id,
                                   bool freq_domain,
                                   double pilot_ratio_db)
    : gr::block("slot_framer",
                gr::io_signature::make(1, 1, sizeof(uint8_t)),
                framer_output_signature(bandwidth_mhz, n_tx, freq_domain)),
      d_mapper(make_mapper(bandwidth_mhz, n_tx, modulation, cell_id, pilot_ratio_db)),
      d_freq(freq_domain), d_n_tx(n_tx),
      d_items_per_slot(items_per_slot_of(d_mapper, freq_domain)),
      d_slot_key(pmt::mp("slot"))
{
    set_output_multiple(d_items_per_slot);
    // Exact long-run rate: items_per_slot * 20 output items per frame of input bits.
    set_relative_rate(static_cast<uint64_t>(d_items_per_slot) *
                          lte_numerology::slots_per_frame,
                      static_cast<uint64_t>(d_mapper.bits_per_frame()));
    set_tag_propagation_policy(TPP_DONT);
    if (!d_freq) {
        d_grids.assign(d_n_tx, std::vector<gr_complex>(d_mapper.grid_size()));
        d_ifft =
            std::make_unique<gr::fft::fft_complex_rev>(d_mapper.numerology().fft_size, 1);
    }
}

int slot_framer_impl::bits_per_slot(int ns) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::out_of_range("slot_framer: slot index must be 0..19, got " +
                                std::to_string(ns));
    return d_mapper.bits_per_slot(ns);
}

void slot_framer_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    // Whole slots only: the bits of the next max(1, noutput_items / items_per_slot)
    // slots.
    const int n_slots = std::max(1, noutput_items / d_items_per_slot);
    long need = 0;
    for (int s = 0; s < n_slots; ++s) {
        need += d_mapper.bits_per_slot((d_ns + s) % lte_numerology::slots_per_frame);
        if (need >= std::numeric_limits<int>::max())
            break;
    }
    ninput_items_required[0] =
        static_cast<int>(std::min<long>(need, std::numeric_limits<int>::max()));
}

void slot_framer_impl::modulate(gr_complex* const* out)
{
    const auto& num = d_mapper.numerology();
    const int N = num.fft_size;
    const float scale = 1.0f / std::sqrt(static_cast<float>(N));
    gr_complex* in = d_ifft->get_inbuf();
    const gr_complex* res = d_ifft->get_outbuf();
    for (int t = 0; t < d_n_tx; ++t) {
        gr_complex* o = out[t];
        for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
            d_mapper.symbol_to_bins(d_grids[t].data(), l, scale, in);
            d_ifft->execute();
            const int cp = num.cp_length(l);
            std::memcpy(o, res + N - cp, sizeof(gr_complex) * cp);
            std::memcpy(o + cp, res, sizeof(gr_complex) * N);
            o += cp + N;
        }
    }
}

int slot_framer_impl::general_work(int noutput_items,
                                   gr_vector_int& ninput_items,
                                   gr_vector_const_void_star& input_items,
                                   gr_vector_void_star& output_items)
{
    const uint8_t* in = static_cast<const uint8_t*>(input_items[0]);
    const int max_slots = noutput_items / d_items_per_slot;
    const int gsize = d_mapper.grid_size();
    std::vector<gr_complex*> grids(d_n_tx), outs(d_n_tx);

    int consumed = 0, slots = 0;
    while (slots < max_slots) {
        const int nb = d_mapper.bits_per_slot(d_ns);
        if (consumed + nb > ninput_items[0])
            break;
        const size_t off = static_cast<size_t>(slots) * d_items_per_slot;
        for (int t = 0; t < d_n_tx; ++t) {
            gr_complex* o = static_cast<gr_complex*>(output_items[t]);
            outs[t] = o + off * (d_freq ? gsize : 1);
            grids[t] = d_freq ? outs[t] : d_grids[t].data();
        }
        const long bad = d_mapper.map(d_ns, in + consumed, grids.data());
        if (bad) {
            if (d_invalid.load() == 0)
                d_logger->error(
                    "input bytes must be 0 or 1: got {:d} other value(s) in slot "
                    "{:d}; each is used as its low bit (counted in "
                    "invalid_bits(), further ones are not logged)",
                    bad,
                    d_slots_sent.load());
            d_invalid += bad;
        }
        if (!d_freq)
            modulate(outs.data());
        for (int t = 0; t < d_n_tx; ++t)
            add_item_tag(t, nitems_written(t) + off, d_slot_key, pmt::from_long(d_ns));
        consumed += nb;
        ++slots;
        ++d_slots_sent;
        d_ns = (d_ns + 1) % lte_numerology::slots_per_frame;
    }
    consume_each(consumed);
    return slots * d_items_per_slot;
}

} // namespace mimodet
} // namespace gr
