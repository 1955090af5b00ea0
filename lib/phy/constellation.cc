/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include <gnuradio/mimodet/constellation.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace gr {
namespace mimodet {

modulation parse_modulation(const std::string& name)
{
    std::string s;
    for (char c : name)
        if (c != '-' && c != '_' && c != ' ')
            s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "qpsk" || s == "4qam" || s == "qam4")
        return modulation::qpsk;
    if (s == "16qam" || s == "qam16")
        return modulation::qam16;
    if (s == "64qam" || s == "qam64")
        return modulation::qam64;
    throw std::invalid_argument("mimodet: unknown modulation '" + name +
                                "' (expected qpsk, 16qam or 64qam)");
}

std::string to_string(modulation m)
{
    switch (m) {
    case modulation::qpsk:
        return "qpsk";
    case modulation::qam16:
        return "16qam";
    case modulation::qam64:
        return "64qam";
    }
    throw std::invalid_argument("mimodet: invalid modulation value");
}

const constellation& constellation::get(modulation m)
{
    static const constellation qpsk(modulation::qpsk), q16(modulation::qam16),
        q64(modulation::qam64);
    switch (m) {
    case modulation::qpsk:
        return qpsk;
    case modulation::qam16:
        return q16;
    case modulation::qam64:
        return q64;
    }
    throw std::invalid_argument("mimodet: invalid modulation value");
}

constellation::constellation(modulation m) : d_mod(m), d_q(static_cast<int>(m))
{
    // 36.211 7.1.2-7.1.4: per dimension, amplitude bits (b0, b2, b4) give
    //   QPSK  (1-2b0)
    //   16QAM (1-2b0)(2-(1-2b2))
    //   64QAM (1-2b0)(4-(1-2b2)(2-(1-2b4)))
    // on the odd-integer grid, normalised by 1/sqrt(2), 1/sqrt(10), 1/sqrt(42).
    const int nb = d_q / 2;
    const double energy = d_q == 2 ? 2.0 : d_q == 4 ? 10.0 : 42.0;
    d_scale = 1.0 / std::sqrt(energy);
    d_pam.resize(1 << nb);
    for (int label = 0; label < (1 << nb); ++label) {
        int bits[3] = { 0, 0, 0 };
        for (int b = 0; b < nb; ++b)
            bits[b] = (label >> (nb - 1 - b)) & 1;
        double a;
        if (nb == 1)
            a = 1.0;
        else if (nb == 2)
            a = 2.0 - (1 - 2 * bits[1]);
        else
            a = 4.0 - (1 - 2 * bits[1]) * (2.0 - (1 - 2 * bits[2]));
        d_pam[label] = (1 - 2 * bits[0]) * a * d_scale;
    }
    d_points.resize(1 << d_q);
    for (int label = 0; label < (1 << d_q); ++label) {
        int il = 0, ql = 0;
        for (int b = 0; b < d_q; ++b) {
            const int bit = (label >> (d_q - 1 - b)) & 1;
            if (b % 2 == 0)
                il = (il << 1) | bit;
            else
                ql = (ql << 1) | bit;
        }
        d_points[label] = { d_pam[il], d_pam[ql] };
    }
}

int constellation::label_from_pam(int i_label, int q_label) const
{
    const int nb = d_q / 2;
    int label = 0;
    for (int b = 0; b < nb; ++b) {
        label = (label << 1) | ((i_label >> (nb - 1 - b)) & 1);
        label = (label << 1) | ((q_label >> (nb - 1 - b)) & 1);
    }
    return label;
}

int constellation::slice_pam(double x) const
{
    int best = 0;
    double bd = std::abs(x - d_pam[0]);
    for (size_t l = 1; l < d_pam.size(); ++l) {
        const double d = std::abs(x - d_pam[l]);
        if (d < bd) {
            bd = d;
            best = static_cast<int>(l);
        }
    }
    return best;
}

int constellation::slice(std::complex<double> x) const
{
    return label_from_pam(slice_pam(x.real()), slice_pam(x.imag()));
}

} // namespace mimodet
} // namespace gr
