/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "mimo_channel_impl.h"
#include <gnuradio/io_signature.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {

namespace {

constexpr int k_max_antennas = 8;
constexpr double k_max_doppler_hz = 7500; // half the subcarrier spacing
constexpr int k_max_timing_frames = 10;

lte_numerology checked_numerology(double mhz)
{
    // from_bandwidth throws std::invalid_argument with the list of presets.
    return lte_numerology::from_bandwidth(mhz);
}

int checked_antennas(int n, const char* what)
{
    if (n < 1 || n > k_max_antennas)
        throw std::invalid_argument(std::string("mimo_channel: ") + what + " must be 1.." +
                                    std::to_string(k_max_antennas) + ", got " +
                                    std::to_string(n));
    return n;
}

std::vector<int> grid_sizes(int n, int item_bytes) { return std::vector<int>(n, item_bytes); }

gr::io_signature::sptr in_sig(int n_tx, const lte_numerology& num, bool freq)
{
    if (!freq)
        return gr::io_signature::make(n_tx, n_tx, sizeof(gr_complex));
    return gr::io_signature::makev(
        n_tx, n_tx, grid_sizes(n_tx, 7 * num.n_sc * static_cast<int>(sizeof(gr_complex))));
}

gr::io_signature::sptr out_sig(int n_tx, int n_rx, const lte_numerology& num, bool freq)
{
    if (!freq)
        return gr::io_signature::make(n_rx, n_rx, sizeof(gr_complex));
    auto sizes = grid_sizes(n_rx, 7 * num.n_sc * static_cast<int>(sizeof(gr_complex)));
    sizes.push_back(num.n_sc * n_rx * n_tx * static_cast<int>(sizeof(gr_complex)));
    return gr::io_signature::makev(n_rx, n_rx + 1, sizes);
}

} // namespace

mimo_channel::sptr mimo_channel::make(int n_tx,
                                      int n_rx,
                                      const std::string& model,
                                      double snr_db,
                                      double bandwidth_mhz,
                                      double doppler_hz,
                                      double cfo,
                                      int timing_offset,
                                      bool freq_domain,
                                      int seed)
{
    return gnuradio::make_block_sptr<mimo_channel_impl>(n_tx,
                                                        n_rx,
                                                        model,
                                                        snr_db,
                                                        bandwidth_mhz,
                                                        doppler_hz,
                                                        cfo,
                                                        timing_offset,
                                                        freq_domain,
                                                        seed);
}

mimo_channel_impl::mimo_channel_impl(int n_tx,
                                     int n_rx,
                                     const std::string& model,
                                     double snr_db,
                                     double bandwidth_mhz,
                                     double doppler_hz,
                                     double cfo,
                                     int timing_offset,
                                     bool freq_domain,
                                     int seed)
    : gr::sync_block("mimo_channel",
                     in_sig(checked_antennas(n_tx, "n_tx"),
                            checked_numerology(bandwidth_mhz),
                            freq_domain),
                     out_sig(n_tx,
                             checked_antennas(n_rx, "n_rx"),
                             checked_numerology(bandwidth_mhz),
                             freq_domain)),
      d_n_tx(n_tx),
      d_n_rx(n_rx),
      d_num(lte_numerology::from_bandwidth(bandwidth_mhz)),
      d_freq(freq_domain),
      d_cfo(cfo),
      d_timing(timing_offset),
      d_snr_db(snr_db),
      d_doppler(0)
{
    const core::channel_model m = core::parse_channel_model(model);
    if (m == core::channel_model::awgn && n_rx < n_tx)
        throw std::invalid_argument("mimo_channel: model 'awgn' (H = identity) needs n_rx >= "
                                    "n_tx, got n_tx = " +
                                    std::to_string(n_tx) + ", n_rx = " + std::to_string(n_rx));
    if (!std::isfinite(snr_db))
        throw std::invalid_argument("mimo_channel: snr_db must be finite");
    if (doppler_hz == -1) {
        d_doppler = core::default_doppler_hz(m);
    } else if (!std::isfinite(doppler_hz) || doppler_hz < 0 || doppler_hz > k_max_doppler_hz) {
        throw std::invalid_argument("mimo_channel: doppler_hz must be -1 (model default) or in "
                                    "[0, 7500] Hz, got " +
                                    std::to_string(doppler_hz));
    } else if (m == core::channel_model::epa || m == core::channel_model::eva ||
               m == core::channel_model::etu) {
        d_doppler = doppler_hz;
    }
    if (!std::isfinite(cfo) || std::abs(cfo) >= d_num.fft_size / 2.0)
        throw std::invalid_argument("mimo_channel: cfo (in subcarrier spacings) must be finite "
                                    "with |cfo| < fft_size/2 = " +
                                    std::to_string(d_num.fft_size / 2));
    const int max_timing = k_max_timing_frames * lte_numerology::slots_per_frame *
                           d_num.slot_samples();
    if (timing_offset < 0 || timing_offset > max_timing)
        throw std::invalid_argument("mimo_channel: timing_offset must be 0.." +
                                    std::to_string(max_timing) + " samples (10 frames), got " +
                                    std::to_string(timing_offset));
    if (freq_domain && (cfo != 0 || timing_offset != 0))
        throw std::invalid_argument("mimo_channel: cfo and timing_offset apply to time-domain "
                                    "streams only; they must be 0 with freq_domain=True");
    if (seed < 0)
        throw std::invalid_argument("mimo_channel: seed must be >= 0 (0: random seed)");

    const uint64_t s = seed == 0 ? core::random_seed() : static_cast<uint64_t>(seed);
    core::fading_channel::config cfg;
    cfg.model = m;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.sample_rate = d_num.sample_rate;
    cfg.doppler_hz = d_doppler;
    cfg.slot_samples = d_num.slot_samples();
    cfg.seed = s;
    d_fading = std::make_unique<core::fading_channel>(cfg);
    d_noise = std::make_unique<core::gaussian_noise>(s, n_rx);

    // Tags of input 0 go to every output (moved by the timing offset in time mode).
    set_tag_propagation_policy(TPP_DONT);
    if (d_freq) {
        d_freqs.resize(d_num.n_sc);
        for (int k = 0; k < d_num.n_sc; ++k) {
            const int b = d_num.bin(k);
            d_freqs[k] = (b < d_num.fft_size / 2 ? b : b - d_num.fft_size) /
                         static_cast<double>(d_num.fft_size);
        }
        d_H.resize(static_cast<size_t>(d_num.n_sc) * n_rx * n_tx);
    } else {
        set_history(d_fading->max_delay() + 1);
        d_z.resize(n_rx);
        d_fifo.assign(n_rx, std::vector<gr_complex>(timing_offset, gr_complex(0, 0)));
    }
    d_logger->debug("{:s} channel, {:d}x{:d}, {:g} MHz, SNR {:g} dB (noise_var {:g}), "
                    "Doppler {:g} Hz, {:d} taps (max delay {:d} samples), {:s} domain",
                    core::to_string(m),
                    n_tx,
                    n_rx,
                    d_num.bandwidth_mhz,
                    snr_db,
                    noise_var(),
                    d_doppler,
                    d_fading->n_taps(),
                    d_fading->max_delay(),
                    d_freq ? "frequency" : "time");
}

double mimo_channel_impl::noise_var() const
{
    return d_n_tx / std::pow(10.0, d_snr_db / 10.0);
}

void mimo_channel_impl::set_snr_db(double snr_db)
{
    if (!std::isfinite(snr_db))
        throw std::invalid_argument("mimo_channel: snr_db must be finite");
    gr::thread::scoped_lock lock(d_setlock);
    d_snr_db = snr_db;
}

void mimo_channel_impl::copy_tags(int n, uint64_t shift)
{
    std::vector<tag_t> tags;
    get_tags_in_range(tags, 0, nitems_read(0), nitems_read(0) + n);
    for (const auto& tag : tags)
        for (size_t o = 0; o < d_n_out_connected; ++o)
            add_item_tag(static_cast<unsigned>(o), tag.offset + shift, tag.key, tag.value,
                         tag.srcid);
}

int mimo_channel_impl::work(int noutput_items,
                            gr_vector_const_void_star& input_items,
                            gr_vector_void_star& output_items)
{
    double nv;
    {
        gr::thread::scoped_lock lock(d_setlock);
        nv = noise_var();
    }
    d_n_out_connected = output_items.size();
    return d_freq ? work_freq(noutput_items, input_items, output_items, nv)
                  : work_time(noutput_items, input_items, output_items, nv);
}

int mimo_channel_impl::work_time(int n,
                                 gr_vector_const_void_star& input_items,
                                 gr_vector_void_star& output_items,
                                 double nv)
{
    const int hist = d_fading->max_delay();
    const uint64_t n0 = nitems_read(0);
    std::vector<const gr_complex*> x(d_n_tx);
    for (int t = 0; t < d_n_tx; ++t)
        x[t] = static_cast<const gr_complex*>(input_items[t]) + hist;
    std::vector<gr_complex*> z(d_n_rx);
    for (int r = 0; r < d_n_rx; ++r) {
        if (d_timing == 0) {
            z[r] = static_cast<gr_complex*>(output_items[r]);
        } else {
            d_z[r].resize(n);
            z[r] = d_z[r].data();
        }
    }
    d_fading->filter(static_cast<int64_t>(n0), n, x.data(), z.data());
    for (int r = 0; r < d_n_rx; ++r)
        d_noise->add(r, z[r], n, nv);

    if (d_cfo != 0) {
        // exp(j 2 pi cfo 15 kHz n / fs) = exp(j 2 pi (cfo / fft_size) n), phase reduced
        // in double precision from the absolute sample index.
        const double step = d_cfo / d_num.fft_size;
        for (int i = 0; i < n; ++i) {
            double c = step * static_cast<double>(n0 + i);
            c -= std::floor(c);
            const float ph = static_cast<float>(2 * M_PI * c);
            const gr_complex rot(std::cos(ph), std::sin(ph));
            for (int r = 0; r < d_n_rx; ++r)
                z[r][i] *= rot;
        }
    }

    if (d_timing > 0) {
        for (int r = 0; r < d_n_rx; ++r) {
            auto* out = static_cast<gr_complex*>(output_items[r]);
            auto& fifo = d_fifo[r];
            int pos = d_fifo_pos;
            for (int i = 0; i < n; ++i) {
                out[i] = fifo[pos];
                fifo[pos] = z[r][i];
                if (++pos == d_timing)
                    pos = 0;
            }
        }
        d_fifo_pos = static_cast<int>((d_fifo_pos + static_cast<int64_t>(n)) % d_timing);
    }
    copy_tags(n, static_cast<uint64_t>(d_timing));
    return n;
}

int mimo_channel_impl::work_freq(int n,
                                 gr_vector_const_void_star& input_items,
                                 gr_vector_void_star& output_items,
                                 double nv)
{
    const int n_sc = d_num.n_sc;
    const int G = 7 * n_sc;
    const int S = d_num.slot_samples();
    const bool h_out = static_cast<int>(output_items.size()) > d_n_rx;
    const uint64_t m0 = nitems_read(0);
    const int nrt = d_n_rx * d_n_tx;
    for (int i = 0; i < n; ++i) {
        const int64_t n_mid = static_cast<int64_t>(m0 + i) * S + S / 2;
        d_fading->freq_response(n_mid, d_freqs, d_H.data());
        for (int r = 0; r < d_n_rx; ++r) {
            gr_complex* y = static_cast<gr_complex*>(output_items[r]) + static_cast<size_t>(i) * G;
            std::fill(y, y + G, gr_complex(0, 0));
            for (int t = 0; t < d_n_tx; ++t) {
                const gr_complex* xg =
                    static_cast<const gr_complex*>(input_items[t]) + static_cast<size_t>(i) * G;
                for (int l = 0; l < 7; ++l) {
                    const gr_complex* xl = xg + l * n_sc;
                    gr_complex* yl = y + l * n_sc;
                    const gr_complex* h = d_H.data() + r * d_n_tx + t;
                    // written out: std::complex * would call __mulsc3
                    for (int k = 0; k < n_sc; ++k) {
                        const gr_complex hk = h[static_cast<size_t>(k) * nrt];
                        const gr_complex xk = xl[k];
                        yl[k] += gr_complex(hk.real() * xk.real() - hk.imag() * xk.imag(),
                                            hk.real() * xk.imag() + hk.imag() * xk.real());
                    }
                }
            }
            d_noise->add(r, y, G, nv);
        }
        if (h_out)
            std::copy(d_H.begin(),
                      d_H.end(),
                      static_cast<gr_complex*>(output_items[d_n_rx]) +
                          static_cast<size_t>(i) * d_H.size());
    }
    copy_tags(n, 0);
    return n;
}

} // namespace mimodet
} // namespace gr
