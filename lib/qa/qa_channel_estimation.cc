/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Pilot channel estimation: LS + interpolation against a known H per subcarrier, and the
// pilot-residual noise estimate, on frequency-domain test grids (y = sum_t H_t X_t + n).

#include "phy/channel_estimation.h"
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using cd = std::complex<double>;

namespace {

struct profile {
    const char* name;
    std::vector<double> delay_ns;
    std::vector<double> power_db;
};

// 3GPP TS 36.101 Annex B.2 delay profiles, and a flat channel.
const profile k_flat{ "flat", { 0 }, { 0 } };
const profile k_epa{ "EPA",
                     { 0, 30, 70, 90, 110, 190, 410 },
                     { 0, -1, -2, -3, -8, -17.2, -20.8 } };
const profile k_eva{ "EVA",
                     { 0, 30, 150, 310, 370, 710, 1090, 1730, 2510 },
                     { 0, -1.5, -1.4, -3.6, -0.6, -9.1, -7, -12, -16.9 } };

//! Subcarrier frequency in Hz (DC excluded).
double sc_freq(const lte_numerology& num, int k)
{
    const int n = k < num.n_sc / 2 ? k - num.n_sc / 2 : k - num.n_sc / 2 + 1;
    return 15000.0 * n;
}

//! True H[(k * n_rx + r) * n_tx + t]: independent Rayleigh taps per link, unit total power.
std::vector<cf> make_channel(const lte_numerology& num,
                             const profile& p,
                             int n_tx,
                             int n_rx,
                             std::mt19937& rng)
{
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    double total = 0;
    for (double db : p.power_db)
        total += std::pow(10.0, db / 10);
    std::vector<cf> H(static_cast<size_t>(num.n_sc) * n_rx * n_tx);
    for (int r = 0; r < n_rx; ++r)
        for (int t = 0; t < n_tx; ++t) {
            std::vector<cd> a(p.delay_ns.size());
            for (size_t i = 0; i < a.size(); ++i)
                a[i] = cd(g(rng), g(rng)) * std::sqrt(std::pow(10.0, p.power_db[i] / 10) / total);
            for (int k = 0; k < num.n_sc; ++k) {
                cd h = 0;
                for (size_t i = 0; i < a.size(); ++i)
                    h += a[i] * std::polar(1.0, -2 * M_PI * sc_freq(num, k) * p.delay_ns[i] * 1e-9);
                H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] = cf(h);
            }
        }
    return H;
}

//! Port t's transmitted grid of slot ns: random 16QAM data, CRS, PSS/SSS on port 0.
std::vector<cf> make_tx_grid(const lte_grid& grid, int ns, int t, std::mt19937& rng)
{
    const auto& num = grid.numerology();
    const auto& pts = constellation::get(modulation::qam16).points();
    std::uniform_int_distribution<int> lab(0, 15);
    std::vector<cf> x(7 * num.n_sc, cf(0, 0));
    for (int l = 0; l < 7; ++l)
        for (int k = 0; k < num.n_sc; ++k) {
            const int n = k - num.n_sc / 2 + 31;
            switch (grid.kind(ns, t, l, k)) {
            case re_kind::data:
                x[l * num.n_sc + k] = cf(pts[lab(rng)]);
                break;
            case re_kind::crs:
                x[l * num.n_sc + k] = grid.crs_value(ns, t, l, k);
                break;
            case re_kind::pss:
                if (t == 0)
                    x[l * num.n_sc + k] = grid.pss()[n];
                break;
            case re_kind::sss:
                if (t == 0)
                    x[l * num.n_sc + k] = grid.sss(ns)[n];
                break;
            default:
                break;
            }
        }
    return x;
}

struct result {
    double nmse_db, nv_ratio, nmse_over_nv; //!< the last: NMSE / true noise_var (linear)
};

//! Mean NMSE (dB) and mean estimated/true noise variance over n_slots slots.
result run(double mhz,
           const profile& p,
           int n_tx,
           int n_rx,
           double snr_db,
           int n_slots,
           unsigned seed,
           int cell_id = 7)
{
    const auto num = lte_numerology::from_bandwidth(mhz);
    core::channel_estimation est(num, n_tx, n_rx, cell_id);
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const double nv = n_tx * std::pow(10.0, -snr_db / 10);
    double err = 0, pow_h = 0, nv_sum = 0;
    std::vector<cf> Hest(est.h_size());
    for (int s = 0; s < n_slots; ++s) {
        const int ns = s % 20;
        const auto H = make_channel(num, p, n_tx, n_rx, rng);
        std::vector<std::vector<cf>> x(n_tx), y(n_rx, std::vector<cf>(7 * num.n_sc));
        for (int t = 0; t < n_tx; ++t)
            x[t] = make_tx_grid(est.grid(), ns, t, rng);
        const float sd = static_cast<float>(std::sqrt(nv / 2));
        for (int r = 0; r < n_rx; ++r)
            for (int l = 0; l < 7; ++l)
                for (int k = 0; k < num.n_sc; ++k) {
                    cf v(sd * g(rng), sd * g(rng));
                    for (int t = 0; t < n_tx; ++t)
                        v += H[(k * n_rx + r) * n_tx + t] * x[t][l * num.n_sc + k];
                    y[r][l * num.n_sc + k] = v;
                }
        std::vector<const cf*> ptr;
        for (auto& v : y)
            ptr.push_back(v.data());
        nv_sum += est.estimate(ns, ptr.data(), Hest.data());
        for (size_t i = 0; i < H.size(); ++i) {
            err += std::norm(cd(Hest[i]) - cd(H[i]));
            pow_h += std::norm(cd(H[i]));
        }
    }
    result res{ 10 * std::log10(err / pow_h), nv_sum / n_slots / nv, err / pow_h / nv };
    std::printf("%-4s %4.1f MHz %dx%d %4.1f dB: NMSE %6.2f dB = %.3f x noise_var, "
                "noise_var est/true %.3f\n",
                p.name, mhz, n_tx, n_rx, snr_db, res.nmse_db, res.nmse_over_nv, res.nv_ratio);
    return res;
}

} // namespace

TEST(channel_estimation, interpolation_linear_and_flat_edges)
{
    const std::vector<int> pk = { 2, 5, 8 };
    const std::vector<cf> v = { cf(1, 0), cf(4, 1), cf(-2, 2) };
    std::vector<cf> out(11);
    core::channel_estimation::interpolate(pk, v.data(), 11, out.data(), 1);
    EXPECT_EQ(out[0], v[0]);
    EXPECT_EQ(out[2], v[0]);
    EXPECT_NEAR(std::abs(out[3] - cf(2, 1.0f / 3)), 0, 1e-6);
    EXPECT_EQ(out[5], v[1]);
    EXPECT_NEAR(std::abs(out[7] - cf(0, 5.0f / 3)), 0, 1e-6);
    EXPECT_EQ(out[8], v[2]);
    EXPECT_EQ(out[10], v[2]);
}

TEST(channel_estimation, difference_filters_cancel_polynomials)
{
    // A channel linear in k: orders 2 and 3 give zero; white noise: unit normalised energy.
    std::vector<cf> h(50);
    for (int i = 0; i < 50; ++i)
        h[i] = cf(0.5f + 0.01f * i, -0.02f * i);
    for (int d = 2; d <= 3; ++d) {
        double s;
        size_t c;
        core::channel_estimation::difference_energy(h.data(), h.size(), d, s, c);
        EXPECT_EQ(c, 50u - d);
        EXPECT_LT(s / c, 1e-10);
    }
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0.0f, std::sqrt(0.5f));
    std::vector<cf> n(200000);
    for (auto& v : n)
        v = cf(g(rng), g(rng));
    for (int d = 1; d <= 3; ++d) {
        double s;
        size_t c;
        core::channel_estimation::difference_energy(n.data(), n.size(), d, s, c);
        EXPECT_NEAR(s / c, 1.0, 0.02) << "order " << d;
    }
}

TEST(channel_estimation, pilot_positions)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    core::channel_estimation est(num, 4, 4, 1);
    // Ports 0/1: symbols 0 and 4 merged, every 3 subcarriers; ports 2/3: every 6.
    for (int ns : { 0, 1 }) {
        for (int t = 0; t < 4; ++t) {
            const auto& k = est.pilot_subcarriers(ns, t);
            const int step = t < 2 ? 3 : 6;
            ASSERT_EQ(static_cast<int>(k.size()), num.n_sc / step);
            for (size_t i = 1; i < k.size(); ++i)
                EXPECT_EQ(k[i] - k[i - 1], step);
        }
    }
}

TEST(channel_estimation, noiseless_flat_channel_exact)
{
    const auto num = lte_numerology::from_bandwidth(3);
    for (int n_tx : { 1, 2, 4 }) {
        core::channel_estimation est(num, n_tx, 2, 42);
        std::mt19937 rng(9);
        std::vector<cf> h(2 * n_tx);
        std::normal_distribution<float> g;
        for (auto& v : h)
            v = cf(g(rng), g(rng));
        for (int ns : { 0, 5, 10 }) {
            std::vector<std::vector<cf>> y(2, std::vector<cf>(7 * num.n_sc, cf(0, 0)));
            for (int t = 0; t < n_tx; ++t) {
                const auto x = make_tx_grid(est.grid(), ns, t, rng);
                for (int r = 0; r < 2; ++r)
                    for (size_t i = 0; i < x.size(); ++i)
                        y[r][i] += h[r * n_tx + t] * x[i];
            }
            const cf* ptr[2] = { y[0].data(), y[1].data() };
            std::vector<cf> H(est.h_size());
            const float nv = est.estimate(ns, ptr, H.data());
            // The Wiener smoother shrinks by ~1/SNR: with the 60 dB SNR cap of a
            // noiseless slot the relative error stays below 1e-3.
            for (int k = 0; k < num.n_sc; ++k)
                for (int i = 0; i < 2 * n_tx; ++i)
                    EXPECT_NEAR(std::abs(H[k * 2 * n_tx + i] - h[i]), 0, 1e-3 * std::abs(h[i]));
            EXPECT_GT(nv, 0.0f);
            EXPECT_LT(nv, 1e-4f);
        }
    }
}

TEST(channel_estimation, nmse_and_noise_at_30db)
{
    // The acceptance numbers: NMSE < -20 dB and noise_var within 20 % at 30 dB.
    for (const profile* p : { &k_flat, &k_epa, &k_eva })
        for (int n : { 2, 4 }) {
            const auto r = run(5, *p, n, n, 30, 40, 100 + n);
            EXPECT_LT(r.nmse_db, -20) << p->name << " " << n << "x" << n;
            // Wiener smoothing: error well below the LS noise level (linear
            // interpolation: ~0.6 x noise_var).
            EXPECT_LT(r.nmse_over_nv, p == &k_eva ? 0.6 : 0.25) << p->name << " " << n;
            EXPECT_NEAR(r.nv_ratio, 1.0, 0.2) << p->name << " " << n << "x" << n;
        }
}

TEST(channel_estimation, snr_sweep_and_bandwidths)
{
    // The noise estimate tracks the SNR; the NMSE stays below the LS noise level
    // noise_var / E|H|^2 (interpolation averages neighbouring pilots); every bandwidth
    // works (printed for the record).
    for (double snr : { 0.0, 10.0, 20.0 }) {
        const auto r = run(5, k_epa, 2, 2, snr, 20, 7);
        EXPECT_NEAR(r.nv_ratio, 1.0, 0.1) << snr << " dB";
        EXPECT_LT(r.nmse_db, 10 * std::log10(2.0) - snr) << snr << " dB";
        EXPECT_LT(r.nmse_over_nv, 0.25) << snr << " dB";
    }
    for (double mhz : { 1.4, 3.0, 10.0, 20.0 }) {
        const auto r = run(mhz, k_epa, 2, 4, 30, 4, 11, 3);
        EXPECT_LT(r.nmse_db, -20) << mhz << " MHz";
        EXPECT_LT(r.nmse_over_nv, 0.3) << mhz << " MHz";
        EXPECT_NEAR(r.nv_ratio, 1.0, 0.2) << mhz << " MHz";
    }
}

TEST(channel_estimation, bad_input_gives_nan)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    core::channel_estimation est(num, 2, 2, 0);
    std::vector<cf> a(7 * num.n_sc, cf(0, 0)), b(7 * num.n_sc, cf(1, 0));
    std::vector<cf> H(est.h_size());
    const cf* zero[2] = { a.data(), a.data() };
    EXPECT_TRUE(std::isnan(est.estimate(3, zero, H.data())));
    b[est.grid().crs_elements(3, 0)[0]] = cf(NAN, 0);
    const cf* nan[2] = { b.data(), b.data() };
    EXPECT_TRUE(std::isnan(est.estimate(3, nan, H.data())));
    EXPECT_THROW(est.estimate(20, zero, H.data()), std::invalid_argument);
    EXPECT_THROW(core::channel_estimation(num, 3, 2, 0), std::invalid_argument);
}

TEST(channel_estimation, max_delay_parameter)
{
    const auto num = lte_numerology::from_bandwidth(5);
    EXPECT_THROW(core::channel_estimation(num, 2, 2, 0, 0.0), std::invalid_argument);
    EXPECT_THROW(core::channel_estimation(num, 2, 2, 0, -1.0), std::invalid_argument);
    EXPECT_NO_THROW(core::channel_estimation(num, 2, 2, 0, 1.0));
}

TEST(channel_estimation, etu_like_long_profile)
{
    // A 5 us tap (ETU's last) must survive the smoother (bounded by max_delay = CP).
    const profile etu{ "ETU",
                       { 0, 50, 120, 200, 230, 500, 1600, 2300, 5000 },
                       { -1, -1, -1, 0, 0, 0, -3, -5, -7 } };
    const auto r = run(5, etu, 2, 2, 20, 20, 5);
    EXPECT_LT(r.nmse_over_nv, 0.7);
    // Known limitation (unchanged by the smoother): ETU's curvature between pilots
    // biases the difference-filter noise estimate up (~1.4x at 20 dB).
    EXPECT_GT(r.nv_ratio, 0.9);
    EXPECT_LT(r.nv_ratio, 1.7);
}
