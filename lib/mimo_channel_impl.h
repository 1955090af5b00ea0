/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#ifndef INCLUDED_MIMODET_MIMO_CHANNEL_IMPL_H
#define INCLUDED_MIMODET_MIMO_CHANNEL_IMPL_H

#include "phy/fading.h"
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_channel.h>
#include <memory>
#include <vector>

namespace gr {
namespace mimodet {

class mimo_channel_impl : public mimo_channel
{
public:
    mimo_channel_impl(int n_tx,
                      int n_rx,
                      const std::string& model,
                      double snr_db,
                      double bandwidth_mhz,
                      double doppler_hz,
                      double cfo,
                      int timing_offset,
                      bool freq_domain,
                      int seed);

    double noise_var() const override;
    double snr_db() const override { return d_snr_db; }
    void set_snr_db(double snr_db) override;
    double doppler_hz() const override { return d_doppler; }
    std::vector<int> tap_delays() const override { return d_fading->tap_delays(); }
    std::vector<double> tap_powers() const override { return d_fading->tap_powers(); }

    int work(int noutput_items,
             gr_vector_const_void_star& input_items,
             gr_vector_void_star& output_items) override;

private:
    int work_time(int n, gr_vector_const_void_star& in, gr_vector_void_star& out, double nv);
    int work_freq(int n, gr_vector_const_void_star& in, gr_vector_void_star& out, double nv);
    void copy_tags(int n, uint64_t shift);

    const int d_n_tx, d_n_rx;
    const lte_numerology d_num;
    const bool d_freq;
    const double d_cfo;
    const int d_timing;
    double d_snr_db;
    double d_doppler;
    std::unique_ptr<core::fading_channel> d_fading;
    std::unique_ptr<core::gaussian_noise> d_noise;

    // time mode
    std::vector<std::vector<gr_complex>> d_z;    //!< channel output before the delay
    std::vector<std::vector<gr_complex>> d_fifo; //!< timing-offset delay line per rx
    int d_fifo_pos = 0;
    size_t d_n_out_connected = 0; //!< output ports in use (set by work)
    // frequency mode
    std::vector<double> d_freqs; //!< subcarrier frequencies, cycles per sample
    std::vector<gr_complex> d_H;
};

} // namespace mimodet
} // namespace gr

#endif
