/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/lte_sync_cfo.h"

#include <algorithm>
#include <cmath>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

void detail::cp_symbol_sums(const lte_numerology& num, const cf* xa, int skip, cd* s, double* e)
{
    const int N = num.fft_size;
    int off = 0;
    for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
        const int cp = num.cp_length(l);
        double re = 0.0, im = 0.0, en = 0.0;
        for (int n = off + std::min(skip, cp - 1); n < off + cp; ++n) {
            const cf a = xa[n], b = xa[n + N];
            re += a.real() * b.real() + a.imag() * b.imag();
            im += a.real() * b.imag() - a.imag() * b.real();
            if (e)
                en += 0.5 * (std::norm(a) + std::norm(b));
        }
        s[l] = cd(re, im);
        if (e)
            e[l] = en;
        off += cp + N;
    }
}

cd detail::cp_coefficient(const lte_numerology& num, const std::vector<const cf*>& x, int skip)
{
    cd r = 0.0, s[lte_numerology::symbols_per_slot];
    double en = 0.0, e[lte_numerology::symbols_per_slot];
    for (const cf* xa : x) {
        cp_symbol_sums(num, xa, skip, s, e);
        for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
            r += s[l];
            en += e[l];
        }
    }
    return en > 0.0 ? r / en : cd(0.0);
}

cd cp_correlation(const lte_numerology& num, const std::vector<const cf*>& x, int skip)
{
    cd r = 0.0;
    cd s[lte_numerology::symbols_per_slot];
    for (const cf* xa : x) {
        cp_symbol_sums(num, xa, skip, s, nullptr);
        for (const cd& v : s)
            r += v;
    }
    return r;
}

double cfo_from_correlation(cd r) { return std::arg(r) / k_two_pi; }

int cp_search(const lte_numerology& num, const std::vector<const cf*>& x, int n_theta, cd* gamma)
{
    const int N = num.fft_size, slot = num.slot_samples();
    const int len = n_theta + slot - N; // products q(n), n = 0..len-1
    std::vector<cd> prefix(len + 1, 0.0);
    for (int n = 0; n < len; ++n) {
        cd q = 0.0;
        for (const cf* xa : x)
            q += std::conj(cd(xa[n])) * cd(xa[n + N]);
        prefix[n + 1] = prefix[n] + q;
    }
    int best = 0;
    double best_mag = -1.0;
    cd best_g = 0.0;
    for (int th = 0; th < n_theta; ++th) {
        cd g = 0.0;
        int off = 0;
        for (int l = 0; l < lte_numerology::symbols_per_slot; ++l) {
            const int cp = num.cp_length(l);
            const int e = th + off + cp; // end of the CP
            g += prefix[e] - prefix[e - num.cp_other];
            off += cp + N;
        }
        if (std::abs(g) > best_mag) {
            best_mag = std::abs(g);
            best = th;
            best_g = g;
        }
    }
    if (gamma)
        *gamma = best_g;
    return best;
}

void cfo_rotator::reset(double cfo, int64_t n0, double phase0)
{
    d_cfo = cfo;
    d_n0 = n0;
    d_phase0 = phase0;
}

double cfo_rotator::phase(int64_t n) const
{
    return d_phase0 + k_two_pi * d_cfo * static_cast<double>(n - d_n0) / d_n;
}

void cfo_rotator::retune(double cfo, int64_t n)
{
    d_phase0 = std::remainder(phase(n), k_two_pi);
    d_n0 = n;
    d_cfo = cfo;
}

namespace {
//! G recursions p *= step side by side, each over one block of `block` samples starting
//! from p0[k], into o[k * block + i] (single precision). p *= step is written out: the
//! same products and sums as std::complex<double> for finite values.
template <int G>
void phasor_blocks(const double* p0r, const double* p0i, double sr, double si, int block, cf* o)
{
    double pr[G], pi[G];
    for (int k = 0; k < G; ++k) {
        pr[k] = p0r[k];
        pi[k] = p0i[k];
    }
    for (int i = 0; i < block; ++i)
        for (int k = 0; k < G; ++k) {
            o[k * block + i] = cf(static_cast<float>(pr[k]), static_cast<float>(pi[k]));
            const double r = pr[k] * sr - pi[k] * si;
            pi[k] = pr[k] * si + pi[k] * sr;
            pr[k] = r;
        }
}
} // namespace

void cfo_rotator::phasors(int64_t index0, cf* ph, int n) const
{
    // Blocks of 1024 samples, each from its exact phase and then a recursion in double.
    // The blocks are independent, so up to 8 run side by side (groups of 8, 4, 2, 1
    // blocks): one recursion alone is a chain of dependent multiplications that leaves
    // the FPU mostly idle.
    const cd step = std::polar(1.0, -k_two_pi * d_cfo / d_n);
    const double sr = step.real(), si = step.imag();
    const int full = n / block;
    double p0r[8], p0i[8];
    for (int g0 = 0; g0 < n;) {
        const int left = full - g0 / block;
        const int g = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        const int len = left >= 1 ? block : n - g0; // the last, partial block alone
        for (int k = 0; k < g; ++k) {
            const cd p = std::polar(1.0, -phase(index0 + g0 + static_cast<int64_t>(k) * block));
            p0r[k] = p.real();
            p0i[k] = p.imag();
        }
        switch (g) {
        case 8:
            phasor_blocks<8>(p0r, p0i, sr, si, len, ph + g0);
            break;
        case 4:
            phasor_blocks<4>(p0r, p0i, sr, si, len, ph + g0);
            break;
        case 2:
            phasor_blocks<2>(p0r, p0i, sr, si, len, ph + g0);
            break;
        default:
            phasor_blocks<1>(p0r, p0i, sr, si, len, ph + g0);
        }
        g0 += g * len;
    }
}

void cfo_rotator::multiply(const cf* in, const cf* ph, cf* out, int n)
{
    // Plain float arrays so that the compiler vectorises it (std::complex's operator*
    // would add the C99 inf/NaN recovery); the same products and sums as before.
    const float* a = reinterpret_cast<const float*>(in);
    const float* p = reinterpret_cast<const float*>(ph);
    float* o = reinterpret_cast<float*>(out);
    for (int i = 0; i < n; ++i) {
        const float vr = a[2 * i], vi = a[2 * i + 1], pr = p[2 * i], pi = p[2 * i + 1];
        o[2 * i] = vr * pr - vi * pi;
        o[2 * i + 1] = vr * pi + vi * pr;
    }
}

void cfo_rotator::apply(int64_t index0, const cf* in, cf* out, int n) const
{
    constexpr int chunk = 4096; // four of phasors()' blocks
    cf ph[chunk];
    for (int i0 = 0; i0 < n; i0 += chunk) {
        const int m = std::min(chunk, n - i0);
        phasors(index0 + i0, ph, m);
        multiply(in + i0, ph, out + i0, m);
    }
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
