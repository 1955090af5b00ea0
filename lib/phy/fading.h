/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// MIMO fading channel of the simulation chain (used by the mimo_channel block):
// 3GPP TS 36.104 Annex B.2 multipath profiles (EPA, EVA, ETU) with Jakes (classical)
// Doppler per tap, flat i.i.d. Rayleigh block fading per slot, and the identity-like
// "awgn" channel; plus the seedable complex Gaussian noise source. No GNU Radio types.
//
// Why not gr-channels: selective_fading_model2 is a sync block on one stream whose tap
// gains are internal (the frequency-domain mode must output the true H), it interpolates
// delays with its own sinc filter, and gnuradio-channels is not among the libraries this
// module links. The generator here is a compact sum of sinusoids (below).

#ifndef INCLUDED_MIMODET_CORE_FADING_H
#define INCLUDED_MIMODET_CORE_FADING_H

#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

using cf = std::complex<float>;

enum class channel_model { awgn, rayleigh, epa, eva, etu };

//! "awgn", "rayleigh", "epa", "eva", "etu" (case-insensitive); throws std::invalid_argument.
channel_model parse_channel_model(const std::string& name);
std::string to_string(channel_model m);

//! A power delay profile: delays in ns and relative powers in dB.
struct tap_profile {
    std::vector<double> delay_ns;
    std::vector<double> power_db;
};

//! 36.104 Table B.2-2 (EPA, 7 taps), B.2-3 (EVA, 9), B.2-4 (ETU, 9); awgn and rayleigh:
//! one tap at 0 ns, 0 dB.
const tap_profile& tap_table(channel_model m);

//! 36.104 Table B.2-1 maximum Doppler of the usual combinations: EPA 5 Hz, EVA 70 Hz,
//! ETU 300 Hz (0 for awgn and rayleigh).
double default_doppler_hz(channel_model m);

/*!
 * \brief One Rayleigh fading process with the classical Jakes Doppler spectrum, as a sum
 * of M complex sinusoids:
 *
 *   h(n) = sqrt(P / M) sum_m exp(j (2 pi f_d cos(a_m) n / f_s + phi_m)),
 *   a_m = (2 pi m + theta) / M,  theta, phi_m ~ U[0, 2 pi) independent.
 *
 * The angles of arrival are evenly spaced with a random common offset, so the ensemble
 * autocorrelation is exactly P J0(2 pi f_d tau) (the mean of exp(j x cos a) over a
 * uniform a) for any M, and the random phases make the process wide-sense stationary;
 * h(n) tends to CN(0, P) as M grows (M = 32 by default). h is a pure function of the
 * sample index n (any block size gives the same values).
 */
class jakes_process
{
public:
    jakes_process() = default;
    //! norm_doppler = f_d / f_s (cycles per sample); power P.
    jakes_process(double norm_doppler, double power, int n_sinusoids, std::mt19937_64& rng);
    std::complex<double> at(int64_t n) const;
    const std::vector<double>& omega() const { return d_omega; }
    const std::vector<double>& phase() const { return d_phase; }
    double amp() const { return d_amp; }

private:
    std::vector<double> d_omega; //!< 2 pi f_d cos(a_m) / f_s, rad per sample
    std::vector<double> d_phase;
    double d_amp = 0; //!< sqrt(P / M)
};

/*!
 * \brief n_tx x n_rx channel: taps h_rt,p(n) at integer delays d_p (samples).
 *
 * - awgn: one tap, h_rt = 1 if r == t else 0 (needs n_rx >= n_tx).
 * - rayleigh: one tap, h_rt i.i.d. CN(0, 1), constant over each slot of slot_samples
 *   samples (slot s = floor(n / slot_samples)) and independent across slots; each slot's
 *   draw is a function of (seed, s) only.
 * - epa/eva/etu: the 36.104 taps normalised to unit total power, delays rounded to the
 *   nearest sample at sample_rate (taps that round onto the same delay stay separate,
 *   independent processes, so their powers add); every tap of every (t, r) pair is an
 *   independent jakes_process at doppler_hz. In filter() the gains are evaluated on a
 *   grid of update_interval() samples (f_d * interval <= 1/400 cycle, at most 1024
 *   samples) and interpolated linearly in between (relative error below 1e-4); on the
 *   grid each sinusoid's phasor advances by one complex rotation per point (double
 *   precision), re-anchored exactly every 64 points, so filter() gives the same values
 *   whatever its block sizes.
 *
 * Gain layout: h[(r * n_tx + t) * n_taps + p].
 */
class fading_channel
{
public:
    struct config {
        channel_model model = channel_model::awgn;
        int n_tx = 1;
        int n_rx = 1;
        double sample_rate = 1.92e6;
        double doppler_hz = 0;  //!< used by epa/eva/etu
        int slot_samples = 960; //!< block length of rayleigh
        uint64_t seed = 1;
        int n_sinusoids = 32;
    };

    explicit fading_channel(const config& cfg);

    const config& cfg() const { return d_cfg; }
    int n_taps() const { return static_cast<int>(d_delay.size()); }
    const std::vector<int>& tap_delays() const { return d_delay; }     //!< samples
    const std::vector<double>& tap_powers() const { return d_power; } //!< linear, sum 1
    int max_delay() const { return d_max_delay; }
    int update_interval() const { return d_interval; }

    //! Exact gains at sample n: n_rx * n_tx * n_taps values (layout above).
    void gains(int64_t n, cf* h) const;

    //! Frequency response at sample n for normalised frequencies f (cycles per sample):
    //! H[(k * n_rx + r) * n_tx + t] = sum_p h_rt,p(n) exp(-j 2 pi f_k d_p).
    //! The tap phasors of f are cached between calls with the same f.
    void freq_response(int64_t n, const std::vector<double>& f, cf* H);

    /*!
     * y_r[i] = sum_t sum_p h_rt,p(n0 + i) x_t[i - d_p], i = 0 .. len-1 (no noise).
     * x[t] points at sample n0 of input t; x[t][-max_delay() .. -1] must be readable
     * (the preceding samples, zeros at the start). y[r] receives len samples.
     */
    void filter(int64_t n0, int len, const cf* const* x, cf* const* y);

private:
    void draw_block(int64_t slot, cf* h) const;
    //! Gains at the interpolation grid point j (sample j * d_interval), cached.
    const std::vector<cf>& grid_gains(int64_t j);

    config d_cfg;
    std::vector<int> d_delay;
    std::vector<double> d_power;
    int d_max_delay = 0;
    std::vector<int> d_udelay;              //!< distinct delays
    std::vector<std::vector<int>> d_groups; //!< taps at each distinct delay
    int d_interval = 1;
    std::vector<jakes_process> d_proc; //!< (r * n_tx + t) * n_taps + p
    // two-entry cache of grid gains
    //! Sets d_ph to the phasors at grid point j (see the class comment).
    void phasors_at(int64_t j);
    static constexpr int k_anchor = 64;
    std::vector<std::complex<double>> d_ph;  //!< exp(j (omega n + phi)) per process, sinusoid
    std::vector<std::complex<double>> d_rot; //!< exp(j omega K)
    int64_t d_ph_j = -1;
    int64_t d_cache_idx[2] = { -1, -1 };
    std::vector<cf> d_cache[2];
    int d_cache_next = 0;
    std::vector<cf> d_tmp0, d_tmp1;
    std::vector<double> d_fr_f;               //!< frequencies of the cached phasors
    std::vector<std::complex<double>> d_fr_ph; //!< exp(-j 2 pi f_k d_u), [k][u]
    std::vector<cf> d_fr_h;
};

/*!
 * \brief Circularly-symmetric complex Gaussian noise, CN(0, var) per sample, one
 * independent generator per stream so the values of a stream do not depend on how the
 * work is split into calls. xoshiro256** uniforms and the Box-Muller transform (one
 * complex sample per two 64-bit words; magnitude from a 53-bit uniform in double, so the
 * tails reach 8.5 sigma): several times faster than std::normal_distribution on
 * std::mt19937_64, which dominated the block's run time.
 */
class gaussian_noise
{
public:
    gaussian_noise(uint64_t seed, int n_streams);
    //! x[i] += CN(0, var) for i < len, from stream s.
    void add(int s, cf* x, int len, double var);

private:
    struct xoshiro256 {
        uint64_t s[4];
        uint64_t next();
    };
    std::vector<xoshiro256> d_rng;
};

//! A seed from std::random_device (for seed = 0).
uint64_t random_seed();

} // namespace core
} // namespace mimodet
} // namespace gr

#endif
