/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_CHANNEL_H
#define INCLUDED_MIMODET_MIMO_CHANNEL_H

#include <gnuradio/mimodet/api.h>
#include <gnuradio/sync_block.h>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {

/*!
 * \brief MIMO fading channel of the LTE-style link: n_tx inputs, n_rx outputs.
 * \ingroup mimodet
 *
 * \details
 * Models (taps normalised to unit total power, docs/SLOT_LAYOUT.md):
 * - "awgn": H = identity-like, h_rt = 1 if r == t else 0 (needs n_rx >= n_tx);
 * - "rayleigh": flat, h_rt i.i.d. CN(0, 1), redrawn every slot (block fading);
 * - "epa", "eva", "etu": 3GPP TS 36.104 Annex B.2 tap delays and powers, delays rounded
 *   to the nearest sample at the bandwidth's sample rate; each tap of each (t, r) pair an
 *   independent Rayleigh process with the classical Jakes Doppler spectrum (sum of
 *   sinusoids).
 *
 * Noise: CN(0, noise_var) per sample or grid element, noise_var = n_tx / 10^(snr_db/10)
 * (SNR per data resource element, docs/CONVENTIONS.md).
 *
 * Time mode (freq_domain = false): n_tx complex streams in, n_rx out, sample n of the
 * stream (counted from the start) at the bandwidth's sample rate:
 *   y_r[n] = sum_t sum_p h_rt,p(n) x_t[n - d_p] + w_r[n],
 * then multiplied by exp(j 2 pi cfo 15 kHz n / fs), then delayed by timing_offset samples
 * (zeros first). Rayleigh H changes every slot_samples samples from the stream start.
 * Tags of input 0 are copied to every output, moved by timing_offset.
 *
 * Frequency mode (freq_domain = true): n_tx grid inputs (gr_complex[7 n_sc], one item per
 * slot), n_rx grid outputs and optionally (connect it or not) output n_rx: the true H
 * of the slot, gr_complex[n_sc n_rx n_tx], element (k n_rx + r) n_tx + t, with
 * H_rt(k) = sum_p h_rt,p(n_mid) exp(-j 2 pi f_k d_p / fs) at the middle sample n_mid of
 * the slot (slot m of the stream spans samples m slot_samples .. (m+1) slot_samples - 1),
 * f_k the frequency of subcarrier k; Y_r(l, k) = sum_t H_rt(k) X_t(l, k) + W. Tags of
 * input 0 ("slot") are copied to every output. cfo and timing_offset must be 0.
 *
 * Same nonzero seed, same output (whatever the scheduler's block sizes).
 */
class MIMODET_API mimo_channel : virtual public gr::sync_block
{
public:
    typedef std::shared_ptr<mimo_channel> sptr;

    /*!
     * \param n_tx transmit antennas (inputs), 1..8
     * \param n_rx receive antennas (outputs), 1..8
     * \param model "awgn", "rayleigh", "epa", "eva" or "etu"
     * \param snr_db SNR per data resource element in dB (finite)
     * \param bandwidth_mhz LTE bandwidth: 1.4, 3, 5, 10, 15, 20 (sets n_sc and fs)
     * \param doppler_hz maximum Doppler of epa/eva/etu, >= 0; -1: the model's default
     *        (EPA 5, EVA 70, ETU 300 Hz); ignored by awgn and rayleigh
     * \param cfo carrier frequency offset in subcarrier spacings (x 15 kHz), |cfo| < fft/2;
     *        time mode only
     * \param timing_offset samples of delay (zeros) at the start, 0 .. 10 frames; time mode
     *        only
     * \param freq_domain work on grids (true) or time samples (false)
     * \param seed >= 1 for reproducible output, 0 for a random seed
     */
    static sptr make(int n_tx,
                     int n_rx,
                     const std::string& model,
                     double snr_db,
                     double bandwidth_mhz,
                     double doppler_hz = -1,
                     double cfo = 0,
                     int timing_offset = 0,
                     bool freq_domain = false,
                     int seed = 0);

    //! Noise variance per sample / grid element.
    virtual double noise_var() const = 0;
    virtual double snr_db() const = 0;
    //! Change the SNR (thread-safe; applies from the next work call).
    virtual void set_snr_db(double snr_db) = 0;
    //! The Doppler actually used (Hz).
    virtual double doppler_hz() const = 0;
    //! Tap delays in samples at the bandwidth's sample rate.
    virtual std::vector<int> tap_delays() const = 0;
    //! Tap powers (linear, sum 1).
    virtual std::vector<double> tap_powers() const = 0;
};

} // namespace mimodet
} // namespace gr

#endif /* INCLUDED_MIMODET_MIMO_CHANNEL_H */
