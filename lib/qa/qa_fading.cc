/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Fading channel core of mimo_channel: 36.104 tap tables, Jakes processes, block
// Rayleigh, time-domain filter vs frequency response, seeds, noise.

#include "phy/fading.h"
#include <gtest/gtest.h>
#include <cmath>
#include <complex>
#include <vector>

using namespace gr::mimodet::core;
using cd = std::complex<double>;

namespace {

fading_channel::config make_cfg(channel_model m,
                                int n_tx,
                                int n_rx,
                                double fs,
                                double fd,
                                uint64_t seed)
{
    fading_channel::config c;
    c.model = m;
    c.n_tx = n_tx;
    c.n_rx = n_rx;
    c.sample_rate = fs;
    c.doppler_hz = fd;
    c.slot_samples = static_cast<int>(fs / 2000);
    c.seed = seed;
    return c;
}

} // namespace

TEST(fading, tables_follow_36104)
{
    EXPECT_EQ(tap_table(channel_model::epa).delay_ns.size(), 7u);
    EXPECT_EQ(tap_table(channel_model::eva).delay_ns.size(), 9u);
    EXPECT_EQ(tap_table(channel_model::etu).delay_ns.size(), 9u);
    EXPECT_DOUBLE_EQ(tap_table(channel_model::epa).delay_ns.back(), 410);
    EXPECT_DOUBLE_EQ(tap_table(channel_model::eva).delay_ns.back(), 2510);
    EXPECT_DOUBLE_EQ(tap_table(channel_model::etu).delay_ns.back(), 5000);
    EXPECT_DOUBLE_EQ(tap_table(channel_model::eva).power_db[4], -0.6);
    EXPECT_DOUBLE_EQ(default_doppler_hz(channel_model::epa), 5);
    EXPECT_DOUBLE_EQ(default_doppler_hz(channel_model::eva), 70);
    EXPECT_DOUBLE_EQ(default_doppler_hz(channel_model::etu), 300);
    EXPECT_EQ(parse_channel_model("ETU"), channel_model::etu);
    EXPECT_THROW(parse_channel_model("tdl-a"), std::invalid_argument);

    // ETU at 20 MHz (30.72 MHz): 5000 ns = 153.6 samples -> 154; 50 ns -> 2 (1.536).
    fading_channel etu(make_cfg(channel_model::etu, 1, 1, 30.72e6, 300, 1));
    EXPECT_EQ(etu.tap_delays().back(), 154);
    EXPECT_EQ(etu.tap_delays()[1], 2);
    EXPECT_EQ(etu.max_delay(), 154);
    // EPA at 1.4 MHz (1.92 MHz): everything but 410 ns (0.79 -> 1) rounds to 0.
    fading_channel epa(make_cfg(channel_model::epa, 1, 1, 1.92e6, 5, 1));
    EXPECT_EQ(epa.tap_delays(), (std::vector<int>{ 0, 0, 0, 0, 0, 0, 1 }));
    for (auto m : { channel_model::epa, channel_model::eva, channel_model::etu }) {
        fading_channel ch(make_cfg(m, 1, 1, 15.36e6, 70, 1));
        double s = 0;
        for (double p : ch.tap_powers())
            s += p;
        EXPECT_NEAR(s, 1.0, 1e-12) << to_string(m);
        const auto& tab = tap_table(m);
        for (int p = 1; p < ch.n_taps(); ++p)
            EXPECT_NEAR(10 * std::log10(ch.tap_powers()[p] / ch.tap_powers()[0]),
                        tab.power_db[p] - tab.power_db[0],
                        1e-9);
    }
}

TEST(fading, tap_power_profile_and_unit_total_power)
{
    // Mean |h_p|^2 over seeds, (t, r) pairs and well-separated times.
    for (auto m : { channel_model::epa, channel_model::eva, channel_model::etu }) {
        const int P = static_cast<int>(tap_table(m).delay_ns.size());
        std::vector<double> acc(P, 0.0);
        double total = 0;
        int count = 0;
        for (uint64_t seed = 1; seed <= 150; ++seed) {
            fading_channel ch(make_cfg(m, 2, 2, 7.68e6, 70, seed));
            std::vector<cf> h(4 * P);
            for (int64_t n : { 0LL, 768000LL, 1536000LL, 2304000LL, 3072000LL }) {
                ch.gains(n, h.data());
                for (int rt = 0; rt < 4; ++rt) {
                    double sum = 0;
                    for (int p = 0; p < P; ++p) {
                        acc[p] += std::norm(h[rt * P + p]);
                        sum += std::norm(h[rt * P + p]);
                    }
                    total += sum;
                    ++count;
                }
            }
        }
        fading_channel ref(make_cfg(m, 2, 2, 7.68e6, 70, 1));
        for (int p = 0; p < P; ++p)
            EXPECT_NEAR(acc[p] / count / ref.tap_powers()[p], 1.0, 0.10)
                << to_string(m) << " tap " << p;
        EXPECT_NEAR(total / count, 1.0, 0.05) << to_string(m);
    }
}

TEST(fading, jakes_autocorrelation_is_j0)
{
    const double fs = 1.92e6, fd = 100;
    const double xs[] = { 0.5, 1.0, 2.405, 3.832, 5.52 }; // 2 pi fd tau
    std::vector<cd> acc(5, 0.0);
    double p0 = 0;
    for (uint64_t seed = 1; seed <= 60; ++seed) {
        fading_channel ch(make_cfg(channel_model::etu, 4, 4, fs, fd, seed));
        const int G = 16 * ch.n_taps();
        std::vector<cf> a(G), b(G);
        for (int64_t n0 : { 0LL, 500000LL }) {
            ch.gains(n0, a.data());
            for (int g = 0; g < G; ++g)
                p0 += std::norm(a[g]) / ch.tap_powers()[g % ch.n_taps()];
            for (int i = 0; i < 5; ++i) {
                const int64_t lag = std::llround(xs[i] / (2 * M_PI * fd) * fs);
                ch.gains(n0 + lag, b.data());
                for (int g = 0; g < G; ++g)
                    acc[i] += cd(b[g]) * std::conj(cd(a[g])) / ch.tap_powers()[g % ch.n_taps()];
            }
        }
    }
    for (int i = 0; i < 5; ++i) {
        const cd r = acc[i] / p0;
        EXPECT_NEAR(r.real(), std::cyl_bessel_j(0.0, xs[i]), 0.05) << "x = " << xs[i];
        EXPECT_NEAR(r.imag(), 0.0, 0.05) << "x = " << xs[i];
    }
}

TEST(fading, rayleigh_block_constant_and_independent)
{
    fading_channel ch(make_cfg(channel_model::rayleigh, 2, 4, 1.92e6, 0, 7));
    const int S = 960;
    ASSERT_EQ(ch.n_taps(), 1);
    std::vector<cf> a(8), b(8);
    double pow = 0;
    cd corr = 0;
    const int n_slots = 2000;
    std::vector<cf> prev(8);
    for (int s = 0; s < n_slots; ++s) {
        ch.gains(int64_t(s) * S, a.data());
        for (int64_t off : { 1, 480, 959 }) {
            ch.gains(int64_t(s) * S + off, b.data());
            EXPECT_EQ(a, b);
        }
        for (int g = 0; g < 8; ++g) {
            pow += std::norm(a[g]);
            if (s > 0)
                corr += cd(a[g]) * std::conj(cd(prev[g]));
        }
        prev = a;
    }
    EXPECT_NEAR(pow / (8.0 * n_slots), 1.0, 0.05);
    EXPECT_LT(std::abs(corr) / (8.0 * (n_slots - 1)), 0.05); // across slots
    // A slot's filter output uses that slot's matrix.
    std::vector<cf> x(3 * S, cf(1, 0)), y0(3 * S), y1(3 * S);
    const cf* xp[2] = { x.data(), x.data() };
    cf* yp[4] = { y0.data(), y1.data(), y1.data(), y1.data() };
    ch.filter(0, 3 * S, xp, yp); // y1 written thrice; only y0 (rx 0) checked
    for (int s = 0; s < 3; ++s) {
        ch.gains(int64_t(s) * S, a.data());
        for (int i = 0; i < S; i += 97)
            EXPECT_NEAR(std::abs(y0[s * S + i] - (a[0] + a[1])), 0.0, 1e-6);
    }
}

TEST(fading, awgn_is_identity)
{
    fading_channel ch(make_cfg(channel_model::awgn, 2, 3, 1.92e6, 0, 1));
    std::vector<cf> h(6);
    ch.gains(12345, h.data());
    for (int r = 0; r < 3; ++r)
        for (int t = 0; t < 2; ++t)
            EXPECT_EQ(h[r * 2 + t], r == t ? cf(1, 0) : cf(0, 0));
    EXPECT_THROW(fading_channel(make_cfg(channel_model::awgn, 3, 2, 1.92e6, 0, 1)),
                 std::invalid_argument);
    EXPECT_THROW(fading_channel(make_cfg(channel_model::eva, 0, 2, 1.92e6, 0, 1)),
                 std::invalid_argument);
    EXPECT_THROW(fading_channel(make_cfg(channel_model::eva, 1, 2, 1.92e6, -3, 1)),
                 std::invalid_argument);
    EXPECT_THROW(fading_channel(make_cfg(channel_model::eva, 1, 2, 1.92e6, 1e6, 1)),
                 std::invalid_argument);
}

TEST(fading, seed_reproducibility)
{
    for (auto m : { channel_model::rayleigh, channel_model::eva }) {
        fading_channel a(make_cfg(m, 2, 2, 3.84e6, 70, 42));
        fading_channel b(make_cfg(m, 2, 2, 3.84e6, 70, 42));
        fading_channel c(make_cfg(m, 2, 2, 3.84e6, 70, 43));
        const int G = 4 * a.n_taps();
        std::vector<cf> ha(G), hb(G), hc(G);
        for (int64_t n : { 0LL, 1000LL, 99999LL }) {
            a.gains(n, ha.data());
            b.gains(n, hb.data());
            c.gains(n, hc.data());
            EXPECT_EQ(ha, hb);
            EXPECT_NE(ha, hc);
        }
    }
    gaussian_noise n1(5, 2), n2(5, 2), n3(6, 2);
    std::vector<cf> x1(100), x2(100), x3(100);
    n1.add(1, x1.data(), 100, 1.0);
    n2.add(1, x2.data(), 40, 1.0);
    n2.add(1, x2.data() + 40, 60, 1.0); // split calls: same values
    n3.add(1, x3.data(), 100, 1.0);
    EXPECT_EQ(x1, x2);
    EXPECT_NE(x1, x3);
}

TEST(fading, noise_variance)
{
    gaussian_noise n(11, 1);
    const int N = 200000;
    std::vector<cf> x(N);
    n.add(0, x.data(), N, 0.25);
    double p = 0, re = 0, im = 0;
    cd pseudo = 0;
    for (const auto& v : x) {
        p += std::norm(v);
        re += double(v.real()) * v.real();
        im += double(v.imag()) * v.imag();
        pseudo += cd(v) * cd(v);
    }
    EXPECT_NEAR(p / N, 0.25, 0.25 * 0.02);
    EXPECT_NEAR(re / N, 0.125, 0.125 * 0.03);
    EXPECT_NEAR(im / N, 0.125, 0.125 * 0.03);
    EXPECT_LT(std::abs(pseudo) / N, 0.01); // circular
    // Gaussian: E|n|^4 = 2 var^2; tails: P(|Re n| > 3 sigma) = 0.0027.
    double m4 = 0;
    int tail = 0;
    const double sigma = std::sqrt(0.125);
    for (const auto& v : x) {
        m4 += std::norm(v) * std::norm(v);
        tail += std::abs(v.real()) > 3 * sigma;
    }
    EXPECT_NEAR(m4 / N / (2 * 0.25 * 0.25), 1.0, 0.05);
    EXPECT_NEAR(tail / double(N), 0.0027, 0.0006);
}

TEST(fading, filter_matches_gains_and_is_chunk_invariant)
{
    // Constant input 1 after the longest delay: y_r(n) = sum_t sum_p h_rt,p(n).
    fading_channel ch(make_cfg(channel_model::etu, 2, 2, 1.92e6, 300, 3));
    fading_channel ch2(make_cfg(channel_model::etu, 2, 2, 1.92e6, 300, 3));
    const int D = ch.max_delay(), N = 20000;
    std::vector<cf> x(D + N, cf(1, 0));
    std::vector<cf> y0(N), y1(N), z0(N), z1(N);
    const cf* xp[2] = { x.data() + D, x.data() + D };
    cf* yp[2] = { y0.data(), y1.data() };
    ch.filter(0, N, xp, yp);
    for (int start = 0; start < N;) {
        const int len = std::min(N - start, 137 + (start % 300));
        const cf* xq[2] = { x.data() + D + start, x.data() + D + start };
        cf* zq[2] = { z0.data() + start, z1.data() + start };
        ch2.filter(start, len, xq, zq);
        start += len;
    }
    const int G = 4 * ch.n_taps();
    std::vector<cf> h(G);
    double err = 0, chunk_err = 0;
    for (int n = 0; n < N; n += 11) {
        ch.gains(n, h.data());
        cf s = 0;
        for (int g = 0; g < 2 * ch.n_taps(); ++g) // r = 0: (t = 0, 1) x taps
            s += h[g];
        err = std::max(err, double(std::abs(y0[n] - s)));
    }
    for (int n = 0; n < N; ++n)
        chunk_err = std::max(chunk_err, double(std::abs(y0[n] - z0[n]) + std::abs(y1[n] - z1[n])));
    EXPECT_LT(err, 1e-3);
    EXPECT_EQ(chunk_err, 0.0); // bit-exact whatever the block sizes
    // Random access (backwards) gives the same values too.
    fading_channel ch3(make_cfg(channel_model::etu, 2, 2, 1.92e6, 300, 3));
    std::vector<cf> w0(1000), w1(1000);
    cf* wp[2] = { w0.data(), w1.data() };
    for (int start : { 15000, 3000, 3500, 100 }) {
        const cf* xq[2] = { x.data() + D + start, x.data() + D + start };
        ch3.filter(start, 1000, xq, wp);
        for (int n = 0; n < 1000; ++n)
            ASSERT_EQ(w0[n], y0[start + n]) << start + n;
    }
}

TEST(fading, frequency_response_matches_time_filter)
{
    // Static EVA (f_d = 0) at 1.4 MHz: one OFDM symbol with CP through filter(), unitary
    // DFT, equals H(k) X(k) on every bin (max delay 5 samples < CP 9).
    const int N = 128, cp = 9;
    fading_channel ch(make_cfg(channel_model::eva, 2, 2, 1.92e6, 0, 9));
    ASSERT_LT(ch.max_delay(), cp);
    std::mt19937_64 rng(1);
    std::normal_distribution<double> g(0, 1);
    std::vector<std::vector<cd>> X(2, std::vector<cd>(N));
    std::vector<std::vector<cf>> x(2, std::vector<cf>(N + cp + 16, cf(0, 0)));
    const int pre = 16; // zeros before the symbol as history
    for (int t = 0; t < 2; ++t) {
        for (int k = 0; k < N; ++k)
            X[t][k] = cd(g(rng), g(rng));
        for (int n = 0; n < N; ++n) {
            cd s = 0;
            for (int k = 0; k < N; ++k)
                s += X[t][k] * std::polar(1.0, 2 * M_PI * k * n / N);
            x[t][pre + cp + n] = cf(s / std::sqrt(double(N)));
        }
        for (int n = 0; n < cp; ++n)
            x[t][pre + n] = x[t][pre + N + n];
    }
    std::vector<std::vector<cf>> y(2, std::vector<cf>(N + cp));
    const cf* xp[2] = { x[0].data() + pre, x[1].data() + pre };
    cf* yp[2] = { y[0].data(), y[1].data() };
    ch.filter(0, N + cp, xp, yp);
    std::vector<double> f(N);
    for (int k = 0; k < N; ++k)
        f[k] = (k < N / 2 ? k : k - N) / double(N);
    std::vector<cf> H(N * 4);
    ch.freq_response(0, f, H.data());
    double err = 0;
    for (int r = 0; r < 2; ++r)
        for (int k = 0; k < N; ++k) {
            cd Y = 0;
            for (int n = 0; n < N; ++n)
                Y += cd(y[r][cp + n]) * std::polar(1.0, -2 * M_PI * k * n / N);
            Y /= std::sqrt(double(N));
            cd ref = 0;
            for (int t = 0; t < 2; ++t)
                ref += cd(H[(k * 2 + r) * 2 + t]) * X[t][k];
            err = std::max(err, std::abs(Y - ref));
        }
    EXPECT_LT(err, 1e-4);
}
