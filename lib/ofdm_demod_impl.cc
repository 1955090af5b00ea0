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
      d_num(lte_numerology::from_bandwidth(bandwidth_mhz)),
      d_n_rx(n_rx),
      d_slot(d_num.slot_samples()),
      d_vlen(7 * d_num.n_sc),
      d_slot_key(pmt::mp("slot"))
{
    const int N = d_num.fft_size;
    if (fft_backoff == -1)
        fft_backoff = d_num.cp_other / 4;
    if (fft_backoff < 0 || fft_backoff > d_num.cp_other)
        throw std::invalid_argument("ofdm_demod: fft_backoff must be -1 (default) or 0.." +
                                    std::to_string(d_num.cp_other) + " samples, got " +
                                    std::to_string(fft_backoff));
    d_backoff = fft_backoff;
    d_bins.resize(d_num.n_sc);
    d_weight.resize(d_num.n_sc);
    const double scale = 1.0 / std::sqrt(static_cast<double>(N));
    for (int k = 0; k < d_num.n_sc; ++k) {
        d_bins[k] = d_num.bin(k);
        // A window b samples early sees the symbol cyclically shifted by b: bin m gets
        // exp(-j 2 pi m b / N), undone here when compensating.
        const double ph =
            compensate_backoff ? 2.0 * M_PI * d_bins[k] * static_cast<double>(d_backoff) / N
                               : 0.0;
        d_weight[k] = gr_complex(std::polar(scale, ph));
    }
    int off = 0;
    for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
        d_window.push_back(off + d_num.cp_length(l) - d_backoff);
        off += d_num.cp_length(l) + N;
    }
    for (int a = 0; a < n_rx; ++a)
        d_ffts.push_back(std::make_unique<gr::fft::fft_complex_fwd>(N, 1));
    // A slot's antennas in parallel where the FFTs are long enough to pay for the hand
    // over (10 MHz and up): at 20 MHz 4 antennas are 28 FFTs of 2048 points, the
    // receiver's latency is a chain of such per-slot stages.
    d_threads = core::antenna_threads(N, n_rx);
    set_tag_propagation_policy(TPP_DONT);
    d_timeline = core::call_timeline::make("demod", { "t0_ns", "work_ns", "slots" });
    set_relative_rate(1, static_cast<uint64_t>(d_slot));
}

void ofdm_demod_impl::forecast(int noutput_items, gr_vector_int& ninput_items_required)
{
    for (auto& r : ninput_items_required)
        r = noutput_items * d_slot;
}

void ofdm_demod_impl::demod_slot(gr::fft::fft_complex_fwd& fft,
                                 const gr_complex* in,
                                 gr_complex* out)
{
    const int N = d_num.fft_size, n_sc = d_num.n_sc;
    for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
        std::memcpy(fft.get_inbuf(), in + d_window[l], sizeof(gr_complex) * N);
        fft.execute();
        const gr_complex* X = fft.get_outbuf();
        gr_complex* o = out + l * n_sc;
        for (int k = 0; k < n_sc; ++k)
            o[k] = X[d_bins[k]] * d_weight[k];
    }
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
    // The first tag at or after a position and its value (ns), or -1 if none.
    auto next_tag = [&](uint64_t from, long* ns) -> int64_t {
        for (const auto& t : tags)
            if (t.offset >= from) {
                *ns = pmt::is_integer(t.value) ? pmt::to_long(t.value) : -1;
                return static_cast<int64_t>(t.offset - base);
            }
        return -1;
    };

    int consumed = 0, produced = 0;
    while (true) {
        long ns = -1;
        if (!d_aligned) {
            const int64_t pos = next_tag(base + consumed, &ns);
            if (pos < 0) {
                consumed = avail; // nothing to align to: drop
                break;
            }
            consumed = static_cast<int>(pos);
            d_aligned = true;
        }
        if (produced >= noutput_items || avail - consumed < d_slot)
            break;
        const int64_t pos = next_tag(base + consumed, &ns);
        if (pos > consumed && pos < consumed + d_slot) {
            d_logger->warn("slot tag {} samples into a slot: re-aligning (partial slot "
                           "dropped)",
                           pos - consumed);
            consumed = static_cast<int>(pos);
            continue;
        }
        if (pos == consumed) {
            if (ns < 0 || ns >= lte_numerology::slots_per_frame)
                d_logger->error("invalid slot tag value at item {}: using slot {}",
                                base + consumed,
                                d_ns);
            else
                d_ns = static_cast<int>(ns);
        } else if (!d_warned_missing) {
            d_logger->warn("slot without a 'slot' tag at item {}: counting on (slot {})",
                           base + consumed,
                           d_ns);
            d_warned_missing = true;
        }
        d_pool.run(static_cast<size_t>(d_threads), [&](size_t t) {
            for (int a = static_cast<int>(t); a < d_n_rx; a += d_threads)
                demod_slot(*d_ffts[a],
                           static_cast<const gr_complex*>(input_items[a]) + consumed,
                           static_cast<gr_complex*>(output_items[a]) +
                               static_cast<size_t>(produced) * d_vlen);
        });
        for (int a = 0; a < d_n_rx; ++a)
            add_item_tag(a, nitems_written(a) + produced, d_slot_key, pmt::from_long(d_ns));
        d_ns = (d_ns + 1) % lte_numerology::slots_per_frame;
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
