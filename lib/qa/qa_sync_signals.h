/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Time-domain test signals of the LTE-style link (lte_grid slots, OFDM modulation, flat
// or EPA channel, CFO, AWGN) and the loops that run lte_sync::slot_sync over them: the
// synchroniser's and the cell search's tests share them. One test binary per source
// file, so the helpers stay local to it.

#ifndef INCLUDED_MIMODET_QA_SYNC_SIGNALS_H
#define INCLUDED_MIMODET_QA_SYNC_SIGNALS_H

#include "phy/fading.h"
#include "phy/lte_sync.h"

#include <gnuradio/mimodet/lte_grid.h>
#include <unsupported/Eigen/FFT>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace gr::mimodet;
using namespace gr::mimodet::lte_sync;


//! One slot's grids (per port, 7 n_sc) with random QPSK data, CRS and PSS/SSS.
std::vector<std::vector<cf>> make_grids(const lte_grid& g, int ns, std::mt19937& rng)
{
    const auto& num = g.numerology();
    const int n_sc = num.n_sc, P = g.n_ports();
    const float a = static_cast<float>(1.0 / std::sqrt(2.0));
    std::vector<std::vector<cf>> grids(P, std::vector<cf>(7 * n_sc, cf(0, 0)));
    std::uniform_int_distribution<int> bit(0, 1);
    for (int p = 0; p < P; ++p) {
        for (int l = 0; l < 7; ++l)
            for (int k = 0; k < n_sc; ++k) {
                const int n = k - n_sc / 2 + 31;
                cf v(0, 0);
                switch (g.kind(ns, p, l, k)) {
                case re_kind::data:
                    v = cf(bit(rng) ? -a : a, bit(rng) ? -a : a);
                    break;
                case re_kind::crs:
                    v = g.crs_value(ns, p, l, k);
                    break;
                case re_kind::pss:
                    v = p == 0 ? g.pss()[n] : cf(0, 0);
                    break;
                case re_kind::sss:
                    v = p == 0 ? g.sss(ns)[n] : cf(0, 0);
                    break;
                default:
                    break;
                }
                grids[p][l * n_sc + k] = v;
            }
    }
    return grids;
}

//! OFDM modulation of one grid (unitary IFFT, CPs).
std::vector<cf> modulate(const lte_numerology& num, const std::vector<cf>& grid)
{
    const int N = num.fft_size;
    Eigen::FFT<float> fft;
    std::vector<cf> out, X(N), x(N);
    const float s = std::sqrt(static_cast<float>(N));
    for (int l = 0; l < 7; ++l) {
        std::fill(X.begin(), X.end(), cf(0, 0));
        for (int k = 0; k < num.n_sc; ++k)
            X[num.bin(k)] = grid[l * num.n_sc + k];
        fft.inv(x.data(), X.data(), N);
        for (auto& v : x)
            v *= s;
        const int cp = num.cp_length(l);
        out.insert(out.end(), x.end() - cp, x.end());
        out.insert(out.end(), x.begin(), x.end());
    }
    return out;
}

struct test_signal {
    std::vector<std::vector<cf>> rx; //!< per receive antenna
    int64_t start;                   //!< first sample of the first slot
    int first_ns;
    int n_slots;
};

/*!
 * n_slots slots from first_ns on n_tx ports through a flat channel h[r][t] =
 * exp(j theta_rt)/sqrt(n_tx) (unit received power per subcarrier), after `offset`
 * leading samples (noise, or zeros), with CFO `cfo` subcarrier spacings and AWGN of
 * variance 10^(-snr/10) per sample (per grid element).
 */
test_signal make_signal(double bw,
                        int n_tx,
                        int n_rx,
                        int cell,
                        int n_slots,
                        int first_ns,
                        int offset,
                        double cfo,
                        double snr_db,
                        unsigned seed,
                        bool zero_lead = false,
                        int tail = 0)
{
    const auto num = lte_numerology::from_bandwidth(bw);
    const lte_grid g(num, n_tx, cell);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uni(0.0, 2 * M_PI);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<std::vector<cf>> tx(n_tx);
    for (int s = 0; s < n_slots; ++s) {
        const auto grids = make_grids(g, (first_ns + s) % 20, rng);
        for (int t = 0; t < n_tx; ++t) {
            const auto x = modulate(num, grids[t]);
            tx[t].insert(tx[t].end(), x.begin(), x.end());
        }
    }
    const int64_t len = offset + static_cast<int64_t>(tx[0].size()) + tail;
    const float sigma = static_cast<float>(std::sqrt(std::pow(10.0, -snr_db / 10) / 2));
    test_signal sig;
    sig.start = offset;
    sig.first_ns = first_ns;
    sig.n_slots = n_slots;
    sig.rx.assign(n_rx, std::vector<cf>(len));
    for (int r = 0; r < n_rx; ++r) {
        std::vector<cf> h(n_tx);
        for (int t = 0; t < n_tx; ++t)
            h[t] = std::polar(static_cast<float>(1.0 / std::sqrt(n_tx)),
                              static_cast<float>(uni(rng)));
        for (int64_t n = 0; n < len; ++n) {
            cf v(0, 0);
            const int64_t i = n - offset;
            if (i >= 0 && i < static_cast<int64_t>(tx[0].size()))
                for (int t = 0; t < n_tx; ++t)
                    v += h[t] * tx[t][i];
            v *= cf(std::polar(1.0, 2 * M_PI * cfo * n / num.fft_size));
            if (!(zero_lead && n < offset))
                v += sigma * cf(gauss(rng), gauss(rng));
            sig.rx[r][n] = v;
        }
    }
    return sig;
}

/*!
 * n_slots slots from slot 0 on n_tx ports through the mimo_channel fading core
 * (core::fading_channel: 36.104 EPA, 5 Hz Jakes Doppler, taps of unit total power per
 * (t, r) pair), CFO `cfo` subcarrier spacings, after `offset` samples of noise, AWGN
 * everywhere with noise_var = n_tx 10^(-snr/10) per sample (docs/CONVENTIONS.md).
 */
test_signal make_faded_signal(double bw,
                              int n_tx,
                              int n_rx,
                              int cell,
                              int n_slots,
                              int offset,
                              double cfo,
                              double snr_db,
                              unsigned seed)
{
    using namespace gr::mimodet::core;
    const auto num = lte_numerology::from_bandwidth(bw);
    const lte_grid g(num, n_tx, cell);
    std::mt19937 rng(seed);
    fading_channel::config cfg;
    cfg.model = channel_model::epa;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.sample_rate = num.sample_rate;
    cfg.doppler_hz = default_doppler_hz(cfg.model);
    cfg.slot_samples = num.slot_samples();
    cfg.seed = seed;
    fading_channel chan(cfg);
    const int hist = chan.max_delay(); // filter() reads this many samples before each input
    std::vector<std::vector<cf>> tx(n_tx, std::vector<cf>(hist, cf(0, 0)));
    for (int s = 0; s < n_slots; ++s) {
        const auto grids = make_grids(g, s % 20, rng);
        for (int t = 0; t < n_tx; ++t) {
            const auto x = modulate(num, grids[t]);
            tx[t].insert(tx[t].end(), x.begin(), x.end());
        }
    }
    const int len = static_cast<int>(tx[0].size()) - hist;
    std::vector<const cf*> xp;
    for (const auto& v : tx)
        xp.push_back(v.data() + hist);
    std::vector<std::vector<cf>> y(n_rx, std::vector<cf>(len));
    std::vector<cf*> yp;
    for (auto& v : y)
        yp.push_back(v.data());
    chan.filter(0, len, xp.data(), yp.data());
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    const float sigma =
        static_cast<float>(std::sqrt(n_tx * std::pow(10.0, -snr_db / 10) / 2));
    test_signal sig;
    sig.start = offset;
    sig.first_ns = 0;
    sig.n_slots = n_slots;
    sig.rx.assign(n_rx, std::vector<cf>(offset + len));
    for (int r = 0; r < n_rx; ++r)
        for (int64_t n = 0; n < offset + len; ++n) {
            cf v = n >= offset ? y[r][n - offset] : cf(0, 0);
            v *= cf(std::polar(1.0, 2 * M_PI * cfo * n / num.fft_size));
            sig.rx[r][n] = v + sigma * cf(gauss(rng), gauss(rng));
        }
    return sig;
}

//! Runs the synchroniser over the signal in random chunks; returns the slots' infos.
std::vector<slot_info> run_sync(slot_sync& sync, const test_signal& sig, unsigned seed)
{
    const int n_rx = static_cast<int>(sig.rx.size());
    const int slot = sync.numerology().slot_samples();
    std::vector<std::vector<cf>> out(n_rx, std::vector<cf>(slot));
    std::vector<cf*> optr;
    for (auto& o : out)
        optr.push_back(o.data());
    std::vector<slot_info> infos;
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> chunk(1, 3 * slot);
    const int64_t len = sig.rx[0].size();
    int64_t pos = 0;
    while (pos < len) {
        const int n = static_cast<int>(std::min<int64_t>(chunk(rng), len - pos));
        std::vector<const cf*> in;
        for (const auto& x : sig.rx)
            in.push_back(x.data() + pos);
        sync.push(in, n);
        pos += n;
        slot_info info;
        while (sync.pop_slot(optr, info))
            infos.push_back(info);
    }
    return infos;
}

//! Pushes the whole signal at once, then pops everything.
std::vector<slot_info> run_sync_whole(slot_sync& sync, const test_signal& sig)
{
    const int slot = sync.numerology().slot_samples();
    std::vector<std::vector<cf>> out(sig.rx.size(), std::vector<cf>(slot));
    std::vector<cf*> optr;
    for (auto& o : out)
        optr.push_back(o.data());
    std::vector<const cf*> in;
    for (const auto& x : sig.rx)
        in.push_back(x.data());
    sync.push(in, static_cast<int>(sig.rx[0].size()));
    std::vector<slot_info> infos;
    slot_info info;
    while (sync.pop_slot(optr, info))
        infos.push_back(info);
    return infos;
}
} // namespace

#endif
