/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Random i.i.d. Rayleigh test vectors for tests, benchmarks and BER simulations.

#ifndef INCLUDED_MIMODET_RAYLEIGH_H
#define INCLUDED_MIMODET_RAYLEIGH_H

#include <gnuradio/mimodet/constellation.h>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

namespace gr {
namespace mimodet {

using cf = std::complex<float>;

//! A batch of y = H s + n: H i.i.d. CN(0,1), unit-energy symbols, SNR per receive
//! antenna = n_tx / noise_var (docs/CONVENTIONS.md), drawn uniformly in [snr_lo, snr_hi] dB
//! per matrix.
struct rayleigh_batch {
    int n_tx, n_rx, n_mat, n_sym;
    modulation mod;
    std::vector<cf> H, y;
    std::vector<float> noise_var;
    std::vector<uint8_t> bits; //!< transmitted bits [n_mat][n_sym][n_tx*q]
    std::vector<double> snr_db;
};

inline rayleigh_batch make_batch(int n_tx,
                        int n_rx,
                        modulation mod,
                        int n_mat,
                        int n_sym,
                        double snr_lo,
                        double snr_hi,
                        uint64_t seed)
{
    rayleigh_batch b{ n_tx, n_rx, n_mat, n_sym, mod, {}, {}, {}, {}, {} };
    const auto& c = constellation::get(mod);
    const int q = c.bits_per_symbol();
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::uniform_real_distribution<double> u(snr_lo, snr_hi);
    std::uniform_int_distribution<int> lab(0, c.order() - 1);
    b.H.resize(static_cast<size_t>(n_mat) * n_rx * n_tx);
    b.y.resize(static_cast<size_t>(n_mat) * n_sym * n_rx);
    b.noise_var.resize(n_mat);
    b.bits.resize(static_cast<size_t>(n_mat) * n_sym * n_tx * q);
    b.snr_db.resize(n_mat);
    for (int m = 0; m < n_mat; ++m) {
        cf* h = &b.H[static_cast<size_t>(m) * n_rx * n_tx];
        for (int i = 0; i < n_rx * n_tx; ++i)
            h[i] = cf(g(rng), g(rng));
        b.snr_db[m] = u(rng);
        const double nv = n_tx / std::pow(10.0, b.snr_db[m] / 10.0);
        b.noise_var[m] = static_cast<float>(nv);
        std::normal_distribution<double> ng(0.0, std::sqrt(nv / 2));
        for (int s = 0; s < n_sym; ++s) {
            std::vector<std::complex<double>> x(n_tx);
            uint8_t* bb = &b.bits[(static_cast<size_t>(m) * n_sym + s) * n_tx * q];
            for (int t = 0; t < n_tx; ++t) {
                const int l = lab(rng);
                x[t] = c.points()[l];
                for (int k = 0; k < q; ++k)
                    bb[t * q + k] = (l >> (q - 1 - k)) & 1;
            }
            cf* yy = &b.y[(static_cast<size_t>(m) * n_sym + s) * n_rx];
            for (int r = 0; r < n_rx; ++r) {
                std::complex<double> acc(ng(rng), ng(rng));
                for (int t = 0; t < n_tx; ++t)
                    acc += std::complex<double>(h[r * n_tx + t]) * x[t];
                yy[r] = cf(acc);
            }
        }
    }
    return b;
}

} // namespace mimodet
} // namespace gr

#endif
