/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_OFDM_DEMOD_H
#define INCLUDED_MIMODET_OFDM_DEMOD_H

#include <gnuradio/block.h>
#include <gnuradio/mimodet/api.h>

namespace gr {
namespace mimodet {

/*!
 * \brief LTE-style OFDM demodulator: time-domain slots -> resource grids
 * (docs/SLOT_LAYOUT.md). \ingroup mimodet
 *
 * \details
 * Inputs: n_rx complex streams with a tag "slot" (long ns) on the first sample of every
 * slot (as ofdm_sync emits them). Outputs: n_rx grid streams, one item per slot:
 * gr_complex[7 * n_sc], element l * n_sc + k = bin lte_numerology::bin(k) of the
 * unitary FFT (1/sqrt(fft_size), gr::fft::fft_complex_fwd) of symbol l, with the "slot"
 * tag (same ns) on it.
 *
 * FFT window back-off: the window of symbol l starts fft_backoff samples before the end
 * of its CP (inside the CP), which protects against a late timing estimate and against
 * pre-cursor paths. The back-off is a cyclic shift, i.e. the linear phase
 * exp(-j 2 pi bin(k) fft_backoff / fft_size) on subcarrier k; with compensate_backoff
 * (the default) it is multiplied out, so a grid passes slot_framer + ofdm_demod
 * unchanged, otherwise it is left for the channel estimation to absorb.
 * Default (fft_backoff = -1): cp_other / 4 = 2, 4, 9, 18, 27, 36 samples at 1.4, 3, 5,
 * 10, 15, 20 MHz (about 1.2 us, a quarter of the CP).
 *
 * Alignment: samples before the first "slot" tag are dropped. A slot without a tag at
 * its start gets ns = previous + 1; a tag inside a slot (the stream jumped) logs a
 * warning and re-aligns to it (the partial slot is dropped). Tags are read on input 0.
 */
class MIMODET_API ofdm_demod : virtual public gr::block
{
public:
    typedef std::shared_ptr<ofdm_demod> sptr;

    /*!
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15 or 20 (MHz).
     * \param n_rx receive antennas (inputs and outputs): 1..8.
     * \param fft_backoff FFT window back-off into the CP in samples, 0..cp_other;
     *        -1 for the default cp_other / 4.
     * \param compensate_backoff remove the back-off's linear phase (default true).
     *
     * Throws std::invalid_argument for any other value.
     */
    static sptr make(double bandwidth_mhz,
                     int n_rx,
                     int fft_backoff = -1,
                     bool compensate_backoff = true);

    //! The back-off in use (samples).
    virtual int fft_backoff() const = 0;
    //! Vector length of an output item: 7 * n_sc.
    virtual int vlen() const = 0;
    //! Slots demodulated so far.
    virtual uint64_t slots_out() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_OFDM_DEMOD_H */
