/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Shared helpers of the C++ tests: random Rayleigh instances and exact metrics.

#ifndef INCLUDED_MIMODET_QA_COMMON_H
#define INCLUDED_MIMODET_QA_COMMON_H

#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

namespace qa {

using cf = std::complex<float>;
using gr::mimodet::constellation;
using gr::mimodet::modulation;

using batch = gr::mimodet::rayleigh_batch;
using gr::mimodet::make_batch;

//! ||y - H s(bits)||^2 in double precision, for one vector.
inline double metric(const cf* H,
                     const cf* y,
                     const uint8_t* bits,
                     int n_tx,
                     int n_rx,
                     modulation mod)
{
    const auto& c = constellation::get(mod);
    const int q = c.bits_per_symbol();
    std::vector<std::complex<double>> x(n_tx);
    for (int t = 0; t < n_tx; ++t) {
        int l = 0;
        for (int k = 0; k < q; ++k)
            l = (l << 1) | bits[t * q + k];
        x[t] = c.points()[l];
    }
    double m = 0;
    for (int r = 0; r < n_rx; ++r) {
        std::complex<double> e(y[r]);
        for (int t = 0; t < n_tx; ++t)
            e -= std::complex<double>(H[r * n_tx + t]) * x[t];
        m += std::norm(e);
    }
    return m;
}

//! Count of vectors whose bits differ from the reference AND whose metric is worse than
//! the reference's by more than rel_tol (relative): ties within rounding are not errors.
inline int count_non_ml(const batch& b,
                        const std::vector<uint8_t>& bits,
                        const std::vector<uint8_t>& ml_bits,
                        double rel_tol = 1e-6)
{
    const int q = static_cast<int>(b.mod);
    const int nb = b.n_tx * q;
    int bad = 0;
    for (int m = 0; m < b.n_mat; ++m)
        for (int s = 0; s < b.n_sym; ++s) {
            const size_t v = static_cast<size_t>(m) * b.n_sym + s;
            bool same = true;
            for (int k = 0; k < nb; ++k)
                same &= bits[v * nb + k] == ml_bits[v * nb + k];
            if (same)
                continue;
            const cf* H = &b.H[static_cast<size_t>(m) * b.n_rx * b.n_tx];
            const cf* y = &b.y[v * b.n_rx];
            const double a = metric(H, y, &bits[v * nb], b.n_tx, b.n_rx, b.mod);
            const double r = metric(H, y, &ml_bits[v * nb], b.n_tx, b.n_rx, b.mod);
            if (a > r * (1 + rel_tol) + 1e-12)
                ++bad;
        }
    return bad;
}

inline gr::mimodet::detector::sptr make(const std::string& algorithm,
                                        int n_tx,
                                        int n_rx,
                                        modulation mod,
                                        gr::mimodet::detector_config base = {})
{
    base.algorithm = algorithm;
    base.n_tx = n_tx;
    base.n_rx = n_rx;
    base.mod = mod;
    return gr::mimodet::detector::make(base);
}

inline std::vector<uint8_t> run_bits(gr::mimodet::detector& d, const batch& b)
{
    std::vector<uint8_t> out(b.bits.size());
    d.detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data());
    return out;
}

inline std::vector<float> run_llr(gr::mimodet::detector& d, const batch& b)
{
    std::vector<float> out(b.bits.size());
    d.detect_llr(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data());
    return out;
}

} // namespace qa

#endif
