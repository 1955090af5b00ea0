/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/ofdm_demodulation.h"
#include <cmath>
#include <cstring>
#include <gnuradio/fft/fft.h>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

ofdm_demodulation::ofdm_demodulation(const lte_numerology& num,
                                     int fft_backoff,
                                     bool compensate_backoff,
                                     const std::string& who)
    : d_num(num)
{
    const int N = d_num.fft_size;
    if (fft_backoff == -1)
        fft_backoff = d_num.cp_other / 4;
    if (fft_backoff < 0 || fft_backoff > d_num.cp_other)
        throw std::invalid_argument(who + ": fft_backoff must be -1 (default) or 0.." +
                                    std::to_string(d_num.cp_other) + " samples, got " +
                                    std::to_string(fft_backoff));
    d_backoff = fft_backoff;
    d_bins.resize(d_num.n_sc);
    d_weights.resize(d_num.n_sc);
    const double scale = 1.0 / std::sqrt(static_cast<double>(N));
    for (int k = 0; k < d_num.n_sc; ++k) {
        d_bins[k] = d_num.bin(k);
        // A window b samples early sees the symbol cyclically shifted by b: bin m gets
        // exp(-j 2 pi m b / N), undone here when compensating.
        const double ph = compensate_backoff ? 2.0 * M_PI * d_bins[k] *
                                                   static_cast<double>(d_backoff) / N
                                             : 0.0;
        d_weights[k] = cf(std::polar(scale, ph));
    }
    int off = 0;
    for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
        d_windows.push_back(off + d_num.cp_length(l) - d_backoff);
        off += d_num.cp_length(l) + N;
    }
}

ofdm_demodulation::~ofdm_demodulation() = default;

std::unique_ptr<ofdm_demodulation::fft_type> ofdm_demodulation::make_fft() const
{
    return std::make_unique<fft_type>(d_num.fft_size, 1);
}

void ofdm_demodulation::demodulate(fft_type& fft, const cf* slot, cf* grid) const
{
    const int N = d_num.fft_size, n_sc = d_num.n_sc;
    if (fft.inbuf_length() != N)
        throw std::invalid_argument("mimodet: ofdm_demodulation needs an FFT of " +
                                    std::to_string(N) + " points");
    for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
        std::memcpy(fft.get_inbuf(), slot + d_windows[l], sizeof(cf) * N);
        fft.execute();
        const cf* X = fft.get_outbuf();
        cf* o = grid + l * n_sc;
        for (int k = 0; k < n_sc; ++k)
            o[k] = X[d_bins[k]] * d_weights[k];
    }
}

} // namespace core
} // namespace mimodet
} // namespace gr
