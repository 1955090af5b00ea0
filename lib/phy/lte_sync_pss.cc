/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/lte_sync_pss.h"

#include <unsupported/Eigen/FFT>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

namespace {
//! Sync bins padded to a multiple of 4 (metric_sliding's lanes).
constexpr int k_pad = 64;

//! Subcarrier of sync value i (0..61).
int sync_subcarrier(const lte_numerology& num, int i) { return num.n_sc / 2 - 31 + i; }
} // namespace

// ---------------------------------------------------------------------------------
// Reference signals and DFTs

std::vector<cf> pss_symbol(const lte_numerology& num, int n_id2)
{
    const auto d = lte_grid::make_pss(n_id2);
    const int N = num.fft_size;
    std::vector<cd> tw(N);
    for (int m = 0; m < N; ++m)
        tw[m] = std::polar(1.0, k_two_pi * m / N);
    std::vector<cf> out(N);
    const double scale = 1.0 / std::sqrt(static_cast<double>(N));
    for (int n = 0; n < N; ++n) {
        cd acc = 0.0;
        for (int i = 0; i < k_sync_len; ++i) {
            const int b = num.bin(sync_subcarrier(num, i));
            acc += cd(d[i]) * tw[(static_cast<int64_t>(b) * n) % N];
        }
        out[n] = cf(acc * scale);
    }
    return out;
}

// The 62 bins come from a pruned DFT: with n = l + L m (L = N / 64, m < 64),
//   X(f) = N^-1/2 sum_l exp(-j 2 pi f l / N) Y_l(f mod 64),
//   Y_l(k) = sum_m x(l + L m) exp(-j 2 pi k m / 64),
// the 64-point DFTs of the L decimated sequences (one radix-2 FFT over the rows of the
// 64 x L matrix x(L m + l), each butterfly a vector operation along a row) and then 62
// dot products of length L: about a third of a full N-point FFT's work, in single
// precision like the FFT it replaces. Sizes that are not a multiple of 64 (none of the
// LTE presets) take the full FFT.
struct sync_dft::impl {
    static constexpr int M = 64;
    int L = 0;
    std::vector<float> a;  //!< M rows of L complex values (re, im interleaved)
    std::vector<float> w;  //!< exp(-j 2 pi k / M), k < M / 2 (re, im)
    std::vector<int> rev;  //!< 6-bit bit reversal
    std::vector<int> row;  //!< f_i mod M of sync value i
    std::vector<float> t;  //!< [62][L]: N^-1/2 exp(-j 2 pi f_i l / N) (re, im)
    // fallback
    Eigen::FFT<float> fft;
    std::vector<cf> spec;
    float scale = 1.0f;
};

sync_dft::sync_dft(const lte_numerology& num)
    : d_n(num.fft_size), d_bins(k_sync_len), d_impl(new impl)
{
    auto& I = *d_impl;
    for (int i = 0; i < k_sync_len; ++i)
        d_bins[i] = num.bin(sync_subcarrier(num, i));
    I.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d_n)));
    if (d_n % impl::M != 0 || d_n < 2 * impl::M) {
        I.spec.resize(d_n);
        return;
    }
    constexpr int M = impl::M;
    I.L = d_n / M;
    I.a.resize(2 * M * I.L);
    for (int k = 0; k < M / 2; ++k) {
        I.w.push_back(static_cast<float>(std::cos(k_two_pi * k / M)));
        I.w.push_back(static_cast<float>(-std::sin(k_two_pi * k / M)));
    }
    for (int m = 0; m < M; ++m) {
        int r = 0;
        for (int bit = 0; bit < 6; ++bit)
            r |= ((m >> bit) & 1) << (5 - bit);
        I.rev.push_back(r);
    }
    const double s = 1.0 / std::sqrt(static_cast<double>(d_n));
    for (int i = 0; i < k_sync_len; ++i) {
        const int f = d_bins[i] < d_n / 2 ? d_bins[i] : d_bins[i] - d_n; // signed bin
        I.row.push_back(((f % M) + M) % M);
        for (int l = 0; l < I.L; ++l) {
            const double ph = -k_two_pi * static_cast<double>(f) * l / d_n;
            I.t.push_back(static_cast<float>(s * std::cos(ph)));
            I.t.push_back(static_cast<float>(s * std::sin(ph)));
        }
    }
}

sync_dft::~sync_dft() = default;

void sync_dft::operator()(const cf* x, cf* out)
{
    auto& I = *d_impl;
    if (I.L == 0) {
        I.fft.fwd(I.spec.data(), x, d_n);
        for (int i = 0; i < k_sync_len; ++i)
            out[i] = I.spec[d_bins[i]] * I.scale;
        return;
    }
    constexpr int M = impl::M;
    const int L = I.L, row = 2 * L; // floats per row
    const float* xs = reinterpret_cast<const float*>(x);
    float* a = I.a.data();
    // Rows in bit-reversed order, then the radix-2 butterflies on whole rows.
    for (int m = 0; m < M; ++m)
        std::copy(xs + m * row, xs + (m + 1) * row, a + I.rev[m] * row);
    for (int len = 2; len <= M; len <<= 1) {
        const int half = len / 2, step = M / len;
        for (int s0 = 0; s0 < M; s0 += len)
            for (int j = 0; j < half; ++j) {
                const float wr = I.w[2 * j * step], wi = I.w[2 * j * step + 1];
                float* u = a + (s0 + j) * row;
                float* v = u + half * row;
                for (int l = 0; l < L; ++l) {
                    const float vr = v[2 * l], vi = v[2 * l + 1];
                    const float tr = vr * wr - vi * wi, ti = vr * wi + vi * wr;
                    const float ur = u[2 * l], ui = u[2 * l + 1];
                    u[2 * l] = ur + tr;
                    u[2 * l + 1] = ui + ti;
                    v[2 * l] = ur - tr;
                    v[2 * l + 1] = ui - ti;
                }
            }
    }
    for (int i = 0; i < k_sync_len; ++i) {
        const float* y = a + I.row[i] * row;
        const float* t = &I.t[static_cast<size_t>(i) * row];
        float re = 0.0f, im = 0.0f;
        for (int l = 0; l < L; ++l) {
            re += y[2 * l] * t[2 * l] - y[2 * l + 1] * t[2 * l + 1];
            im += y[2 * l] * t[2 * l + 1] + y[2 * l + 1] * t[2 * l];
        }
        out[i] = cf(re, im);
    }
}

// ---------------------------------------------------------------------------------
// PSS correlator

//! One antenna's part of metric_sliding: its sums per lag, and its own DFT and scratch,
//! so that antennas can run on different threads.
struct pss_correlator::antenna_sums {
    explicit antenna_sums(const lte_numerology& num) : dft(num) {}
    sync_dft dft;
    std::vector<cf> x0;
    std::vector<double> prefix, acc, band, energy, x_re, x_im;
    double total = 0.0;
};

struct pss_correlator::impl {
    explicit impl(const lte_numerology& n) : num(n) {}
    lte_numerology num;
    std::vector<std::unique_ptr<antenna_sums>> ant; //!< metric_sliding, per antenna
    Eigen::FFT<float> fft;
    //! Per reference: conj(FFT(reference zero-padded to P))
    std::vector<std::vector<cf>> ref_f;
    std::vector<cf> buf, win_f, spec, corr; //!< win_f: FFT of a chunk (shared by the references)
    std::vector<double> acc, prefix, energy, band;
    std::vector<cf> flat_f;        //!< conj(FFT(g)), g: unit spectrum on the sync bins
    std::vector<cf> flat_spec, flat; //!< S(d) = sum_n x(d+n) g*(n) of one chunk
    std::vector<int> bins;         //!< FFT bins of the sync subcarriers
    std::vector<cf> win, win_spec; //!< N-point DFT that starts the recursion of a chunk
    // metric_sliding: conj of the reference's unitary DFT on the sync bins and the bins'
    // one-sample shift exp(j 2 pi b / N).
    std::vector<double> ref_re, ref_im, w_re, w_im;
};

pss_correlator::pss_correlator(const lte_numerology& num, int n_id2)
    : pss_correlator(num, std::vector<int>{ n_id2 })
{
}

pss_correlator::pss_correlator(const lte_numerology& num, const std::vector<int>& n_id2s)
    : d_n(num.fft_size), d_p(1), d_impl(new impl(num))
{
    if (n_id2s.empty())
        throw std::invalid_argument("mimodet: pss_correlator needs a PSS");
    for (int id2 : n_id2s)
        d_refs.push_back(pss_symbol(num, id2));
    d_ref = d_refs[0];
    while (d_p < 4 * d_n)
        d_p <<= 1;
    auto& I = *d_impl;
    for (const auto& ref : d_refs) {
        I.buf.assign(d_p, cf(0.0f, 0.0f));
        std::copy(ref.begin(), ref.end(), I.buf.begin());
        std::vector<cf> f(d_p);
        I.fft.fwd(f.data(), I.buf.data(), d_p);
        for (auto& v : f)
            v = std::conj(v);
        I.ref_f.push_back(std::move(f));
    }
    I.win_f.resize(d_p);
    I.spec.resize(d_p);
    I.corr.resize(d_p);
    // g(n) = N^-1/2 sum_b exp(j 2 pi b n / N) over the sync bins b: the "PSS" whose every
    // value is 1, so that S(d) = sum_n x(d+n) g*(n) = sum_b X_d(b) (band_energy).
    for (int i = 0; i < k_sync_len; ++i)
        I.bins.push_back(num.bin(sync_subcarrier(num, i)));
    std::fill(I.buf.begin(), I.buf.end(), cf(0.0f, 0.0f));
    for (int n = 0; n < d_n; ++n) {
        cd g = 0.0;
        for (int b : I.bins)
            g += std::polar(1.0, k_two_pi * ((static_cast<int64_t>(b) * n) % d_n) / d_n);
        I.buf[n] = cf(g / std::sqrt(static_cast<double>(d_n)));
    }
    I.flat_f.resize(d_p);
    I.fft.fwd(I.flat_f.data(), I.buf.data(), d_p);
    for (auto& v : I.flat_f)
        v = std::conj(v);
    I.flat_spec.resize(d_p);
    I.flat.resize(d_p);
    I.win.resize(d_n);
    I.win_spec.resize(d_n);
    // R(b) = N^-1/2 sum_n p(n) exp(-j 2 pi b n / N) of the (single precision) reference,
    // in double: sum_n x(d+n) p*(n) = sum_b X_d(b) R*(b) (p lives on the sync bins).
    std::vector<cd> tw(d_n);
    for (int m = 0; m < d_n; ++m)
        tw[m] = std::polar(1.0, -k_two_pi * m / d_n);
    const double s = 1.0 / std::sqrt(static_cast<double>(d_n));
    for (int b : I.bins) {
        cd r = 0.0;
        for (int n = 0; n < d_n; ++n)
            r += cd(d_ref[n]) * tw[(static_cast<int64_t>(b) * n) % d_n];
        r *= s;
        I.ref_re.push_back(r.real());
        I.ref_im.push_back(-r.imag()); // conjugated
        const cd w = std::polar(1.0, k_two_pi * b / d_n);
        I.w_re.push_back(w.real());
        I.w_im.push_back(w.imag());
    }
    // Padding bins: zero reference and shift, so they stay 0 and add nothing.
    for (auto* v : { &I.ref_re, &I.ref_im, &I.w_re, &I.w_im })
        v->resize(k_pad, 0.0);
}

pss_correlator::~pss_correlator() = default;

cf pss_correlator::correlate(const cf* x) const
{
    float re = 0.0f, im = 0.0f;
    for (int n = 0; n < d_n; ++n) {
        const cf p = d_ref[n];
        re += x[n].real() * p.real() + x[n].imag() * p.imag();
        im += x[n].imag() * p.real() - x[n].real() * p.imag();
    }
    return cf(re, im);
}

void pss_correlator::metric(const std::vector<const cf*>& x, int n_lags, float* out)
{
    if (n_lags <= d_n) {
        metric_sliding(x, n_lags, out);
        return;
    }
    auto& I = *d_impl;
    const int chunk = d_p - d_n + 1;
    const int K = references();
    std::vector<double> ep(K, 0.0);
    for (int k = 0; k < K; ++k)
        for (const auto& v : d_refs[k])
            ep[k] += std::norm(cd(v));
    for (int d0 = 0; d0 < n_lags; d0 += chunk) {
        const int m = std::min(chunk, n_lags - d0);
        const int len = m + d_n - 1;
        I.acc.assign(static_cast<size_t>(K) * m, 0.0); // [k * m + d]
        I.energy.assign(m, 0.0);
        I.band.assign(m, 0.0);
        double total = 0.0; // energy of the chunk (all antennas)
        for (const cf* xa : x) {
            std::fill(I.buf.begin(), I.buf.end(), cf(0.0f, 0.0f));
            std::copy(xa + d0, xa + d0 + len, I.buf.begin());
            I.fft.fwd(I.win_f.data(), I.buf.data(), d_p);
            for (int i = 0; i < d_p; ++i)
                I.flat_spec[i] = I.win_f[i] * I.flat_f[i];
            I.fft.inv(I.flat.data(), I.flat_spec.data(), d_p);
            for (int k = 0; k < K; ++k) {
                const std::vector<cf>& rf = I.ref_f[k];
                for (int i = 0; i < d_p; ++i)
                    I.spec[i] = I.win_f[i] * rf[i];
                I.fft.inv(I.corr.data(), I.spec.data(), d_p);
                double* acc = I.acc.data() + static_cast<size_t>(k) * m;
                for (int d = 0; d < m; ++d)
                    acc[d] += std::norm(cd(I.corr[d]));
            }
            band_energy(xa + d0, m);
            I.prefix.resize(len + 1);
            I.prefix[0] = 0.0;
            for (int i = 0; i < len; ++i)
                I.prefix[i + 1] = I.prefix[i] + std::norm(cd(xa[d0 + i]));
            total += I.prefix[len];
            for (int d = 0; d < m; ++d)
                I.energy[d] += I.prefix[d + d_n] - I.prefix[d];
        }
        // The FFT correlation has a rounding error of about 1e-6 of the chunk's amplitude:
        // lags whose window holds (almost) no energy, e.g. exact zeros before a signal,
        // would get a huge metric from it. They get 0 (a window of real samples holds at
        // least ~1/4 of the chunk's energy, far above the floor); so do windows with
        // (almost) nothing in the sync band, where the ratio is rounding error too.
        const double floor = 1e-6 * total;
        for (int k = 0; k < K; ++k) {
            const double* acc = I.acc.data() + static_cast<size_t>(k) * m;
            float* o = out + static_cast<size_t>(k) * n_lags + d0;
            for (int d = 0; d < m; ++d)
                o[d] = (total > 0.0 && I.energy[d] > floor && I.band[d] > 1e-9 * I.energy[d])
                           ? static_cast<float>(std::min(1.0, acc[d] / (I.band[d] * ep[k])))
                           : 0.0f;
        }
    }
}

void pss_correlator::metric_sliding(const std::vector<const cf*>& x, int n_lags, float* out)
{
    // The same M(d) as the FFT correlation (one chunk of n_lags lags), from the sync bins
    // X_d(b) of every window: X_0 from sync_dft, then sliding the window by one
    // sample, X_{d+1}(b) = (X_d(b) + delta_d) exp(j 2 pi b / N), delta_d = (x[d+N] -
    // x[d]) / sqrt(N) (see band_energy), in double. Per lag: c(d) = sum_b X_d(b) R*(b)
    // and E(d) = sum_b |X_d(b)|^2, O(62) instead of three FFTs of 4N per antenna.
    auto& I = *d_impl;
    const int m = n_lags, len = m + d_n - 1;
    double ep = 0.0;
    for (const auto& v : d_ref)
        ep += std::norm(cd(v));
    const double s = 1.0 / std::sqrt(static_cast<double>(d_n));
    const double* rr = I.ref_re.data();
    const double* ri = I.ref_im.data();
    const double* wr = I.w_re.data();
    const double* wi = I.w_im.data();
    while (I.ant.size() < x.size())
        I.ant.push_back(std::make_unique<antenna_sums>(I.num));
    auto one_antenna = [&](size_t a) {
        const cf* xa = x[a];
        antenna_sums& A = *I.ant[a];
        A.acc.resize(m);
        A.band.resize(m);
        A.energy.resize(m);
        A.x_re.assign(k_pad, 0.0);
        A.x_im.assign(k_pad, 0.0);
        double* xr = A.x_re.data();
        double* xi = A.x_im.data();
        A.x0.resize(k_sync_len);
        A.dft(xa, A.x0.data()); // unitary
        for (int i = 0; i < k_sync_len; ++i) {
            xr[i] = A.x0[i].real();
            xi[i] = A.x0[i].imag();
        }
        A.prefix.resize(len + 1);
        A.prefix[0] = 0.0;
        for (int i = 0; i < len; ++i)
            A.prefix[i + 1] = A.prefix[i] + std::norm(cd(xa[i]));
        A.total = A.prefix[len];
        for (int d = 0; d < m; ++d) {
            // Partial sums in 4 lanes (independent chains the compiler can keep in
            // vector registers); the padding bins hold zeros.
            double cr4[4] = { 0.0, 0.0, 0.0, 0.0 }, ci4[4] = { 0.0, 0.0, 0.0, 0.0 };
            double e4[4] = { 0.0, 0.0, 0.0, 0.0 };
            for (int i0 = 0; i0 < k_pad; i0 += 4)
                for (int j = 0; j < 4; ++j) {
                    const int i = i0 + j;
                    cr4[j] += xr[i] * rr[i] - xi[i] * ri[i];
                    ci4[j] += xr[i] * ri[i] + xi[i] * rr[i];
                    e4[j] += xr[i] * xr[i] + xi[i] * xi[i];
                }
            const double cr = (cr4[0] + cr4[1]) + (cr4[2] + cr4[3]);
            const double ci = (ci4[0] + ci4[1]) + (ci4[2] + ci4[3]);
            A.acc[d] = cr * cr + ci * ci;
            A.band[d] = (e4[0] + e4[1]) + (e4[2] + e4[3]);
            A.energy[d] = A.prefix[d + d_n] - A.prefix[d];
            if (d + 1 == m)
                break;
            const double dr = (static_cast<double>(xa[d + d_n].real()) - xa[d].real()) * s;
            const double di = (static_cast<double>(xa[d + d_n].imag()) - xa[d].imag()) * s;
            for (int i = 0; i < k_pad; ++i) {
                const double ar = xr[i] + dr, ai = xi[i] + di;
                xr[i] = ar * wr[i] - ai * wi[i];
                xi[i] = ar * wi[i] + ai * wr[i];
            }
        }
    };
    if (d_runner && x.size() > 1)
        d_runner(x.size(), one_antenna);
    else
        for (size_t a = 0; a < x.size(); ++a)
            one_antenna(a);
    // The antennas' sums in antenna order, as one loop over the antennas adds them.
    I.acc.assign(m, 0.0);
    I.energy.assign(m, 0.0);
    I.band.assign(m, 0.0);
    double total = 0.0; // energy of the chunk (all antennas)
    for (size_t a = 0; a < x.size(); ++a) {
        const antenna_sums& A = *I.ant[a];
        total += A.total;
        for (int d = 0; d < m; ++d) {
            I.acc[d] += A.acc[d];
            I.band[d] += A.band[d];
            I.energy[d] += A.energy[d];
        }
    }
    // As in metric(): windows without energy, or without energy in the sync band, get 0.
    const double floor = 1e-6 * total;
    for (int d = 0; d < m; ++d)
        out[d] = (total > 0.0 && I.energy[d] > floor && I.band[d] > 1e-9 * I.energy[d])
                     ? static_cast<float>(std::min(1.0, I.acc[d] / (I.band[d] * ep)))
                     : 0.0f;
}

void pss_correlator::band_energy(const cf* x, int m)
{
    // E(d) = sum_b |X_d(b)|^2, X_d the unitary DFT of x[d .. d+N) on the sync bins b. Sliding
    // the window by one sample, X_{d+1}(b) = (X_d(b) + delta_d) exp(j 2 pi b / N) with
    // delta_d = (x[d+N] - x[d]) / sqrt(N), the same for every bin, so
    //   E(d+1) = E(d) + 2 Re(conj(delta_d) S(d)) + 62 |delta_d|^2,  S(d) = sum_b X_d(b),
    // and S is one more FFT correlation (impl::flat): O(1) per lag instead of O(62).
    // E(0) comes from an exact DFT, and the recursion runs in double over one chunk only.
    auto& I = *d_impl;
    std::copy(x, x + d_n, I.win.begin());
    I.fft.fwd(I.win_spec.data(), I.win.data(), d_n);
    double e = 0.0;
    for (int b : I.bins)
        e += std::norm(cd(I.win_spec[b]));
    const double s = 1.0 / std::sqrt(static_cast<double>(d_n));
    e /= d_n;
    for (int d = 0; d < m; ++d) {
        I.band[d] += std::max(e, 0.0);
        if (d + 1 == m)
            break;
        const cd delta = (cd(x[d + d_n]) - cd(x[d])) * s;
        e += 2.0 * (std::conj(delta) * cd(I.flat[d])).real() + k_sync_len * std::norm(delta);
    }
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
