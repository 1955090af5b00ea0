/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Random LTE slots for the channel estimation tests (the CPU reference test and the GPU
// test): received grids of random multipath channels with CRS and QPSK data.

#ifndef INCLUDED_MIMODET_QA_ESTIMATION_SLOTS_H
#define INCLUDED_MIMODET_QA_ESTIMATION_SLOTS_H

#include <gnuradio/mimodet/lte_grid.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace qa {

using gr::mimodet::lte_grid;
using gr::mimodet::lte_numerology;

struct test_slot {
    int ns;
    std::vector<std::vector<std::complex<float>>> y; // [r][7 * n_sc]
};

//! Random slots: a channel with a random delay profile (up to taps spread over
//! max_ns) per slot, CRS and QPSK data on every port, AWGN at snr_db (per slot: uniform
//! in [snr_db, snr_db + snr_spread]); snr_db = inf: no noise. The CRS are sent at
//! pilot_ratio_db above the data (docs/SLOT_LAYOUT.md).
inline std::vector<test_slot> make_slots(const lte_numerology& num,
                                  int n_tx,
                                  int n_rx,
                                  int cell_id,
                                  int n_slots,
                                  double snr_db,
                                  double snr_spread,
                                  double max_ns,
                                  unsigned seed,
                                  double pilot_ratio_db = 0.0)
{
    const float crs_amp = static_cast<float>(std::pow(10.0, pilot_ratio_db / 20));
    lte_grid grid(num, n_tx, cell_id);
    std::mt19937 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const int n_sc = num.n_sc;
    std::vector<test_slot> out;
    for (int s = 0; s < n_slots; ++s) {
        const int ns = s % 20;
        const double snr = snr_db + snr_spread * u(rng);
        const double nv = std::isinf(snr) ? 0.0 : n_tx * std::pow(10.0, -snr / 10);
        std::vector<std::complex<double>> H(static_cast<size_t>(n_sc) * n_rx * n_tx);
        const int taps = 1 + static_cast<int>(u(rng) * 6);
        std::vector<double> delay(taps);
        for (auto& d : delay)
            d = u(rng) * max_ns * 1e-9;
        for (int r = 0; r < n_rx; ++r)
            for (int t = 0; t < n_tx; ++t) {
                std::vector<std::complex<double>> a(taps);
                for (auto& v : a)
                    v = std::complex<double>(g(rng), g(rng)) / std::sqrt(double(taps));
                for (int k = 0; k < n_sc; ++k) {
                    const double f = 15e3 * (k < n_sc / 2 ? k - n_sc / 2 : k - n_sc / 2 + 1);
                    std::complex<double> h = 0;
                    for (int i = 0; i < taps; ++i)
                        h += a[i] * std::polar(1.0, -2 * M_PI * f * delay[i]);
                    H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] = h;
                }
            }
        std::vector<std::vector<std::complex<float>>> x(n_tx, std::vector<std::complex<float>>(7 * n_sc, std::complex<float>(0, 0)));
        const float q = static_cast<float>(std::sqrt(0.5));
        for (int t = 0; t < n_tx; ++t) {
            for (int re : grid.data_elements(ns))
                x[t][re] = std::complex<float>(u(rng) < 0.5 ? q : -q, u(rng) < 0.5 ? q : -q);
            for (int re : grid.crs_elements(ns, t))
                x[t][re] = crs_amp * grid.crs_value(ns, t, re / n_sc, re % n_sc);
        }
        test_slot ts{ ns, std::vector<std::vector<std::complex<float>>>(n_rx, std::vector<std::complex<float>>(7 * n_sc)) };
        const double sd = std::sqrt(nv);
        for (int r = 0; r < n_rx; ++r)
            for (int l = 0; l < 7; ++l)
                for (int k = 0; k < n_sc; ++k) {
                    std::complex<double> v(sd * g(rng), sd * g(rng));
                    for (int t = 0; t < n_tx; ++t)
                        v += H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] *
                             std::complex<double>(x[t][l * n_sc + k]);
                    ts.y[r][l * n_sc + k] = std::complex<float>(v);
                }
        out.push_back(std::move(ts));
    }
    return out;
}

//! n_slots (>= 4) random slots at 3 MHz, 2x2, cell 9, 20 dB, of which slot 1 has a NaN
//! pilot, slot 2 is all zero and slot 3 has an infinite pilot: the estimators' bad input.
inline std::vector<test_slot> bad_input_slots(int n_slots)
{
    const auto num = lte_numerology::from_bandwidth(3);
    lte_grid grid(num, 2, 9);
    auto slots = make_slots(num, 2, 2, 9, n_slots, 20.0, 0.0, 1000.0, 5);
    slots[1].y[0][grid.crs_elements(slots[1].ns, 0)[2]] = std::complex<float>(NAN, 0);
    for (auto& v : slots[2].y)
        std::fill(v.begin(), v.end(), std::complex<float>(0, 0));
    slots[3].y[1][grid.crs_elements(slots[3].ns, 1)[0]] = std::complex<float>(INFINITY, 0);
    return slots;
}

} // namespace qa

#endif
