/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// OFDM demodulation of one LTE slot (time-domain samples -> resource grid): the tables
// that the CPU version (the ofdm_demod block, slot_receiver) and the GPU version
// (cuda/phy/ofdm_demod_cuda.cu, mimo_receiver with time-domain input) share.

#ifndef INCLUDED_MIMODET_CORE_OFDM_DEMODULATION_H
#define INCLUDED_MIMODET_CORE_OFDM_DEMODULATION_H

#include <complex>
#include <gnuradio/mimodet/api.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <memory>
#include <string>
#include <vector>

namespace gr {
namespace fft {
template <class T, bool forward>
class fft; // <gnuradio/fft/fft.h>, kept out of this header for the CUDA sources
} // namespace fft
namespace mimodet {
namespace core {

/*!
 * \brief A slot's 7 OFDM symbols -> a grid of 7 * n_sc (element l * n_sc + k = bin
 * numerology.bin(k) of the unitary FFT of symbol l), as docs/SLOT_LAYOUT.md and the
 * ofdm_demod block describe.
 *
 * The FFT window of symbol l starts backoff() samples before the end of its CP; with
 * compensate_backoff, the back-off's linear phase exp(-j 2 pi bin(k) backoff / N) is
 * multiplied out (weights()).
 */
class MIMODET_API ofdm_demodulation
{
public:
    using cf = std::complex<float>;

    /*!
     * fft_backoff: 0..cp_other samples, or -1 for cp_other / 4. who: the block or
     * function named in the message of the std::invalid_argument thrown otherwise.
     */
    ofdm_demodulation(const lte_numerology& num,
                      int fft_backoff,
                      bool compensate_backoff,
                      const std::string& who);
    ~ofdm_demodulation();
    ofdm_demodulation(const ofdm_demodulation&) = delete;
    ofdm_demodulation& operator=(const ofdm_demodulation&) = delete;

    const lte_numerology& numerology() const { return d_num; }
    int backoff() const { return d_backoff; }
    int slot_samples() const { return d_num.slot_samples(); }
    int grid_len() const { return 7 * d_num.n_sc; }
    //! FFT bin of subcarrier k.
    const std::vector<int>& bins() const { return d_bins; }
    //! Per subcarrier: 1 / sqrt(N), times the back-off compensation.
    const std::vector<cf>& weights() const { return d_weights; }
    //! Per symbol: the first sample of its FFT window in the slot.
    const std::vector<int>& windows() const { return d_windows; }

    /*!
     * One antenna's slot (slot_samples() values) into its grid (grid_len() values), on
     * the CPU. fft: an FFT of numerology().fft_size points; one per thread (make_fft()).
     */
    using fft_type = gr::fft::fft<cf, true>;
    std::unique_ptr<fft_type> make_fft() const;
    void demodulate(fft_type& fft, const cf* slot, cf* grid) const;

private:
    const lte_numerology d_num;
    int d_backoff;
    std::vector<int> d_bins;
    std::vector<cf> d_weights;
    std::vector<int> d_windows;
};

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
