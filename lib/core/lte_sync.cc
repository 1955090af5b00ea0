/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "lte_sync.h"
#include "worker_pool.h"

#include <unsupported/Eigen/FFT>
#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace lte_sync {

namespace {
constexpr double k_two_pi = 2.0 * M_PI;
//! Spread of the PSS timing on a fading channel, seconds (timing_sigma).
constexpr double k_timing_floor_s = 15e-9;
constexpr int k_sync_len = 62;
//! Sync bins padded to a multiple of 4 (metric_sliding's lanes).
constexpr int k_pad = 64;
//! slot_sync: pushes from this many samples copy the antennas in parallel (smaller ones
//! cost less than waking the pool).
constexpr int k_parallel_push = 4096;
//! slot_sync: phasor blocks (cfo_rotator::block) per thread at least when derotating.
constexpr int k_min_blocks = 2;

//! Subcarrier of sync value i (0..61).
int sync_subcarrier(const lte_numerology& num, int i) { return num.n_sc / 2 - 31 + i; }

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

template <typename T>
bool finite(std::complex<T> z)
{
    return std::isfinite(z.real()) && std::isfinite(z.imag());
}
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

// ---------------------------------------------------------------------------------
// CFO

namespace {
//! cp_correlation's sum over each CP l of one antenna into s[l]; adding them up in
//! antenna and symbol order gives cp_correlation (slot_sync computes them in parallel).
//! With e, also the energy of the same samples and their copies, (|x(n)|^2 +
//! |x(n+N)|^2) / 2, into e[l]: |s| <= e, and s / e is the correlation coefficient.
void cp_symbol_sums(const lte_numerology& num, const cf* xa, int skip, cd* s, double* e)
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

//! The CP correlation coefficient of a slot: cp_correlation over the energy of its
//! samples (0 where they hold none). Its magnitude is the slot's, not the input's,
//! level: a burst of noise at full scale weighs no more in the smoothed CFO than a
//! quiet slot, where the plain correlation outweighed the signal's for 80 slots.
cd cp_coefficient(const lte_numerology& num, const std::vector<const cf*>& x, int skip)
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
} // namespace

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

// ---------------------------------------------------------------------------------
// Sample-rate offset

frac_interp::frac_interp() : d_table(static_cast<size_t>(phases + 1) * taps)
{
    // h_mu(k) = sinc(mu - j) w(mu - j), j = k - before, Kaiser window over +-taps/2,
    // normalised to unit DC gain per phase.
    constexpr double beta = 7.0;
    auto bessel_i0 = [](double x) {
        double sum = 1.0, term = 1.0;
        for (int k = 1; k < 40; ++k) {
            term *= (x / (2.0 * k)) * (x / (2.0 * k));
            sum += term;
        }
        return sum;
    };
    const double half = taps / 2.0;
    for (int q = 0; q <= phases; ++q) {
        const double mu = static_cast<double>(q) / phases;
        double h[taps], sum = 0.0;
        for (int k = 0; k < taps; ++k) {
            const double t = mu - (k - before);
            const double u = 1.0 - (t / half) * (t / half);
            const double w = u > 0.0 ? bessel_i0(beta * std::sqrt(u)) / bessel_i0(beta) : 0.0;
            const double sinc = t == 0.0 ? 1.0 : std::sin(M_PI * t) / (M_PI * t);
            h[k] = sinc * w;
            sum += h[k];
        }
        for (int k = 0; k < taps; ++k)
            d_table[static_cast<size_t>(q) * taps + k] = static_cast<float>(h[k] / sum);
    }
}

void frac_interp::resample(const cf* x, double p0, double rate, cf* out, int n) const
{
    // The taps are interpolated once per 4 outputs: the fraction drifts by 1.5 |rate - 1|
    // at most within a block (-50 dB at 1000 ppm and 0.35 of the sample rate).
    constexpr int block = 4;
    float h[taps];
    for (int i0 = 0; i0 < n; i0 += block) {
        const int m = std::min(block, n - i0);
        // Every position of the block has (within its drift) the fraction of
        // p0 + c (rate - 1), c the block's centre: the whole samples do not count.
        const double pc = p0 + (i0 + 0.5 * (m - 1)) * (rate - 1.0);
        const double fc = pc - std::floor(pc);
        const double qf = fc * phases;
        const int q = std::min(static_cast<int>(qf), phases - 1);
        const float g = static_cast<float>(qf - q);
        const float* t0 = &d_table[static_cast<size_t>(q) * taps];
        const float* t1 = t0 + taps;
        for (int k = 0; k < taps; ++k)
            h[k] = t0[k] + g * (t1[k] - t0[k]);
        // Integer sample of output i with the block's fraction: round(p - fc) + fc = p
        // within the block's drift.
        int64_t d[block];
        for (int j = 0; j < m; ++j)
            d[j] = std::llround(p0 + (i0 + j) * rate - fc);
        if (m == block && d[1] == d[0] + 1 && d[2] == d[0] + 2 && d[3] == d[0] + 3) {
            // Consecutive inputs (all but about one block in 1 / |rate - 1|): the 4
            // outputs' re and im side by side in two vectors, each lane the same sum over
            // the taps in the same order as below (the same values), 4 times fewer
            // instructions.
            using v4 = float __attribute__((vector_size(16)));
            const float* xs = reinterpret_cast<const float*>(x + d[0] - before);
            v4 lo = {}, hi = {}; // outputs 0, 1 and 2, 3 (re, im)
            for (int k = 0; k < taps; ++k) {
                v4 a, b;
                std::memcpy(&a, xs + 2 * k, sizeof a);
                std::memcpy(&b, xs + 2 * k + 4, sizeof b);
                lo += h[k] * a;
                hi += h[k] * b;
            }
            float* o = reinterpret_cast<float*>(out + i0);
            std::memcpy(o, &lo, sizeof lo);
            std::memcpy(o + 4, &hi, sizeof hi);
            continue;
        }
        for (int j = 0; j < m; ++j) {
            const cf* xs = x + d[j] - before;
            float re = 0.0f, im = 0.0f;
            for (int k = 0; k < taps; ++k) {
                re += h[k] * xs[k].real();
                im += h[k] * xs[k].imag();
            }
            out[i0 + j] = cf(re, im);
        }
    }
}

double pss_fraction(const std::vector<std::vector<cf>>& pss_bins,
                    const std::vector<cf>& pss,
                    int fft_size)
{
    // The delay tau maximising C(tau) = sum_a |sum_k Z_a(k) exp(j 2 pi f_k tau / N)|^2,
    // Z = Y conj(P), f_k the subcarrier's offset from DC in bins: the correlation
    // magnitude at a fractional lag (the maximum-likelihood delay on a flat channel).
    // Grid of 1/8 sample over +-2, then a parabola through the best point's neighbours.
    constexpr int half = 16;     // grid points each side
    constexpr double step = 0.125; // samples
    // exp(j 2 pi f_k tau / N) on the grid depends on N only: tabulated once per thread
    // and N (the same values as evaluating it here).
    struct phase_table {
        int n = 0;
        std::vector<cd> e; //!< [(i + half) * 62 + k]
    };
    thread_local phase_table tab;
    if (tab.n != fft_size) {
        std::vector<double> f(k_sync_len);
        for (int k = 0; k < k_sync_len; ++k)
            f[k] = k < k_sync_len / 2 ? k - k_sync_len / 2 : k - k_sync_len / 2 + 1;
        tab.e.resize(static_cast<size_t>(2 * half + 1) * k_sync_len);
        for (int i = -half; i <= half; ++i) {
            const double w = k_two_pi * (i * step) / fft_size;
            for (int k = 0; k < k_sync_len; ++k)
                tab.e[static_cast<size_t>(i + half) * k_sync_len + k] = std::polar(1.0, w * f[k]);
        }
        tab.n = fft_size;
    }
    std::vector<std::vector<cd>> z(pss_bins.size(), std::vector<cd>(k_sync_len));
    for (size_t a = 0; a < pss_bins.size(); ++a)
        for (int k = 0; k < k_sync_len; ++k)
            z[a][k] = cd(pss_bins[a][k]) * std::conj(cd(pss[k]));
    auto c = [&](int i) {
        double sum = 0.0;
        const cd* e = &tab.e[static_cast<size_t>(i + half) * k_sync_len];
        for (const auto& za : z) {
            cd acc = 0.0;
            for (int k = 0; k < k_sync_len; ++k)
                acc += za[k] * e[k];
            sum += std::norm(acc);
        }
        return sum;
    };
    int best = 0;
    double bv = -1.0;
    std::vector<double> v(2 * half + 1);
    for (int i = -half; i <= half; ++i) {
        v[i + half] = c(i);
        if (v[i + half] > bv) {
            bv = v[i + half];
            best = i;
        }
    }
    if (!(bv > 0.0) || !std::isfinite(bv))
        return 0.0;
    double tau = best * step;
    if (best > -half && best < half) {
        const double y0 = v[best + half - 1], y1 = v[best + half], y2 = v[best + half + 1];
        const double den = y0 - 2.0 * y1 + y2;
        if (den < 0.0)
            tau += 0.5 * step * (y0 - y2) / den;
    }
    return tau;
}

// ---------------------------------------------------------------------------------
// SSS

bool sss_correlations(const std::vector<std::vector<cf>>& pss_bins,
                      const std::vector<std::vector<cf>>& sss_bins,
                      const std::vector<cf>& pss,
                      const std::vector<const std::vector<cf>*>& candidates,
                      double* rho)
{
    const size_t n_rx = pss_bins.size(), n_c = candidates.size();
    // z per antenna and subcarrier first, then one sum per candidate in antenna and
    // subcarrier order.
    thread_local std::vector<cd> z;
    z.resize(n_rx * k_sync_len);
    double norm = 0.0;
    for (size_t a = 0; a < n_rx; ++a)
        for (int k = 0; k < k_sync_len; ++k) {
            const cd h = cd(pss_bins[a][k]) * std::conj(cd(pss[k]));
            z[a * k_sync_len + k] = cd(sss_bins[a][k]) * std::conj(h);
            norm += std::abs(z[a * k_sync_len + k]);
        }
    if (!(norm > 0.0) || !std::isfinite(norm))
        return false;
    for (size_t i = 0; i < n_c; ++i) {
        const std::vector<cf>& c = *candidates[i];
        double acc = 0.0;
        for (size_t a = 0; a < n_rx; ++a)
            for (int k = 0; k < k_sync_len; ++k)
                acc += (z[a * k_sync_len + k] * std::conj(cd(c[k]))).real();
        rho[i] = acc / norm;
    }
    return true;
}

sss_decision detect_sss(const std::vector<std::vector<cf>>& pss_bins,
                        const std::vector<std::vector<cf>>& sss_bins,
                        const std::vector<cf>& pss,
                        const std::vector<cf>& sss0,
                        const std::vector<cf>& sss10)
{
    sss_decision d;
    double rho[2];
    if (!sss_correlations(pss_bins, sss_bins, pss, { &sss0, &sss10 }, rho))
        return d;
    d.rho0 = rho[0];
    d.rho10 = rho[1];
    d.ns = d.rho0 >= d.rho10 ? 0 : 10;
    const double best = std::max(d.rho0, d.rho10), other = std::min(d.rho0, d.rho10);
    d.confident = best > 0.4 && best - other > 0.2;
    return d;
}

sss_hypotheses::sss_hypotheses(int n_id2) : d_n_id2(n_id2)
{
    if (n_id2 < 0 || n_id2 > 2)
        throw std::invalid_argument("mimodet: N_ID2 must be 0..2, got " + std::to_string(n_id2));
    d_pss = lte_grid::make_pss(n_id2);
    for (int n_id1 = 0; n_id1 < 168; ++n_id1)
        for (int ns : { 0, 10 })
            d_sss.push_back(lte_grid::make_sss(3 * n_id1 + n_id2, ns));
    for (const auto& v : d_sss)
        d_ptr.push_back(&v);
}

cell_decision sss_hypotheses::detect(const std::vector<std::vector<cf>>& pss_bins,
                                     const std::vector<std::vector<cf>>& sss_bins) const
{
    cell_decision d;
    std::vector<double> rho(d_sss.size());
    if (!sss_correlations(pss_bins, sss_bins, d_pss, d_ptr, rho.data()))
        return d;
    size_t best = 0;
    for (size_t i = 1; i < rho.size(); ++i)
        if (rho[i] > rho[best])
            best = i;
    double second = -1.0;
    for (size_t i = 0; i < rho.size(); ++i)
        if (i != best)
            second = std::max(second, rho[i]);
    d.n_id1 = static_cast<int>(best / 2);
    d.ns = best % 2 == 0 ? 0 : 10;
    d.rho = rho[best];
    d.runner_up = second;
    return d;
}

// ---------------------------------------------------------------------------------
// Streaming synchroniser

slot_sync::slot_sync(const lte_numerology& num,
                     int n_rx,
                     int cell_id,
                     const slot_sync_params& params,
                     int threads)
    : d_num(num),
      d_n_rx(n_rx),
      d_cell_id(cell_id),
      d_search(cell_id == -1),
      d_n_id2(0),
      d_p(params),
      d_dft(num),
      d_rot(num.fft_size)
{
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("mimodet: ofdm_sync needs 1..8 receive antennas, got " +
                                    std::to_string(n_rx));
    if (cell_id < -1 || cell_id > 503)
        throw std::invalid_argument("mimodet: cell_id must be 0..503, or -1 to search it; got " +
                                    std::to_string(cell_id));
    if (params.cfo_alpha <= 0.0 || params.cfo_alpha > 1.0)
        throw std::invalid_argument("mimodet: cfo_alpha must be in (0, 1]");
    d_n = num.fft_size;
    d_slot = num.slot_samples();
    d_half = 10 * d_slot;
    d_track = params.track_window < 0 ? num.cp_other : params.track_window;
    if (d_track < 1 || d_track > d_n / 4)
        throw std::invalid_argument("mimodet: track_window must be 1..fft_size/4");
    if (params.max_candidates < 1)
        throw std::invalid_argument("mimodet: max_candidates must be >= 1");
    if (params.sro_window < 0 || params.sro_window == 1)
        throw std::invalid_argument("mimodet: sro_window must be 0 (off) or >= 2");
    if (!(params.sro_resample_drift > 0.0) || !(params.sro_max_ppm > 0.0) ||
        params.sro_max_ppm > 1e4)
        throw std::invalid_argument("mimodet: sro_resample_drift must be > 0 and "
                                    "sro_max_ppm in (0, 1e4]");
    if (threads < 1)
        throw std::invalid_argument("mimodet: slot_sync needs threads >= 1");
    d_threads = std::min(threads, n_rx);
    if (d_search) {
        d_hyp.reserve(3);
        for (int id2 = 0; id2 < 3; ++id2) {
            d_corrs[id2] = std::make_unique<pss_correlator>(num, id2);
            d_hyp.emplace_back(id2);
        }
        d_search_corr = std::make_unique<pss_correlator>(num, std::vector<int>{ 0, 1, 2 });
        use_pss(0);
    } else {
        d_corrs[cell_id % 3] = std::make_unique<pss_correlator>(num, cell_id % 3);
        use_cell(cell_id);
    }
    if (d_threads > 1) {
        d_pool = std::make_unique<core::worker_pool>();
        // The tracking search's metric, one antenna per thread (the same values).
        for (auto& c : d_corrs)
            if (c)
                c->set_runner([this](size_t n, const std::function<void(size_t)>& f) {
                    const int t = static_cast<int>(std::min<size_t>(d_threads, n));
                    parallel(t, [&](size_t k) {
                        for (size_t a = k; a < n; a += static_cast<size_t>(t))
                            f(a);
                    });
                });
    }
    d_block = 3 * d_n;
    d_cand_half = d_n / 4;
    d_buf.resize(n_rx);
    d_raw.assign(n_rx, std::vector<cf>(d_slot));
    d_ph.resize(d_slot);
    d_cor.resize(n_rx);
    d_cp_sums.resize(static_cast<size_t>(n_rx) * lte_numerology::symbols_per_slot);
    d_cp_energy.resize(d_cp_sums.size());
    d_pss_bins.assign(n_rx, std::vector<cf>(k_sync_len));
    d_sss_bins.assign(n_rx, std::vector<cf>(k_sync_len));
    acquisition_restart(0);
}

void slot_sync::use_pss(int n_id2)
{
    d_n_id2 = n_id2;
    d_pss = lte_grid::make_pss(n_id2);
}

void slot_sync::use_cell(int cell_id)
{
    use_pss(cell_id % 3);
    d_cell_id = cell_id;
    d_sss0 = lte_grid::make_sss(cell_id, 0);
    d_sss10 = lte_grid::make_sss(cell_id, 10);
}

void slot_sync::acquisition_restart(int64_t lag)
{
    d_m0 = d_next_lag = d_cand = d_win_start = lag; // metric blocks are aligned to lag
    d_metric.clear();
    d_metric_id2.clear();
    d_win_cands.clear();
    d_win_best = 0.0f;
    d_win_tries = 0;
}

slot_sync::~slot_sync() = default;

double slot_sync::cfo() const { return d_rot.cfo(); }

void slot_sync::push(const std::vector<const cf*>& in, int n)
{
    if (static_cast<int>(in.size()) != d_n_rx)
        throw std::invalid_argument("mimodet: slot_sync::push: wrong number of antennas");
    // A slot of input is a few hundred kB: one copy per antenna in parallel.
    const int t = n >= k_parallel_push ? d_threads : 1;
    parallel(t, [&](size_t k) {
        for (int a = static_cast<int>(k); a < d_n_rx; a += t)
            d_buf[a].insert(d_buf[a].end(), in[a], in[a] + n);
    });
}

void slot_sync::parallel(int n, const std::function<void(size_t)>& fn)
{
    if (n > 1)
        d_pool->run(static_cast<size_t>(n), fn);
    else
        fn(0);
}

void slot_sync::discard_before(int64_t n)
{
    if (n <= d_base)
        return;
    const int64_t k = std::min<int64_t>(n - d_base, d_buf[0].size());
    for (auto& b : d_buf)
        b.erase(b.begin(), b.begin() + k);
    d_base += k;
}

int64_t slot_sync::input_needed() const
{
    if (!d_locked)
        return d_next_lag + d_block + d_n - 1; // the next block of metric lags
    return d_pss_pending ? pss_input_end() : slot_input_end();
}

int64_t slot_sync::samples_wanted() const
{
    return std::max<int64_t>(1, input_needed() - end());
}

int64_t slot_sync::slot_input_end() const
{
    if (!d_resample)
        return d_start + d_slot;
    // +2: a block's fraction may round the last sample's base up by one
    return static_cast<int64_t>(std::floor(clock_pos(d_n_out + d_slot - 1))) +
           frac_interp::after + 2;
}

int64_t slot_sync::pss_input_end() const
{
    return d_pss_pending->expected + d_n + d_track + 1;
}

void slot_sync::track_pss()
{
    const pss_search p = *d_pss_pending;
    d_pss_pending.reset();
    slot_info& info = d_pss_report;
    info.pss_checked = true;
    info.pss_ns = p.ns;
    int64_t pss = p.expected;
    float m = 0.0f;
    const bool ok = refine_pss(p.expected, d_track, &pss, &m);
    info.pss_metric = m;
    if (ok && m >= d_p.track_threshold && std::abs(pss - p.expected) < d_track) {
        const int step = static_cast<int>(pss - p.expected);
        if (!d_resample)
            d_start += step; // whole-sample timing; resampling follows the model
        info.pss_found = true;
        if (step != 0)
            log(0, fmt("ofdm_sync: PSS %d samples off at slot %d", step, p.ns));
        if (d_missed > 0)
            log(1, fmt("ofdm_sync: PSS found again after %d missed", d_missed));
        d_missed = 0;
        if (d_p.sro_window > 0) {
            const double t = static_cast<double>(pss) + fraction_at(pss);
            const double off = t - clock_pos(p.n_pss);
            switch (clock_update(p.n_pss, t, timing_sigma(m))) {
            case 1:
                log(0, fmt("ofdm_sync: PSS %.2f samples off the sample clock line at "
                           "slot %d: not used unless the next PSS agrees",
                           off, p.ns));
                break;
            case 2:
                log(1, fmt("ofdm_sync: timing jump of %.2f samples at slot %d", off, p.ns));
                break;
            default:
                break;
            }
        }
        set_resampling();
        if (d_resample) // the next slot on the updated clock line
            d_start = static_cast<int64_t>(std::floor(clock_pos(d_n_out)));
        const auto sss = check_sss(pss);
        if (sss.confident && sss.ns != p.ns) {
            if (++d_mismatch >= d_p.relabel_after) {
                log(2, fmt("ofdm_sync: SSS says slot %d where the count says %d; "
                           "relabeling", sss.ns, p.ns));
                // The search runs before the next slot goes out: d_ns is p.ns + 1.
                d_ns = (sss.ns + 1) % lte_numerology::slots_per_frame;
                d_mismatch = 0;
            }
        } else if (sss.confident) {
            d_mismatch = 0;
        }
    } else {
        ++d_missed;
        ++d_pss_missed_total;
        log(2, fmt("ofdm_sync: PSS not found in slot %d (metric %.2f), keeping the timing "
                   "(%d missed)", p.ns, static_cast<double>(m), d_missed));
        if (d_missed >= d_p.max_missed) {
            log(3, "ofdm_sync: sync lost, re-acquiring");
            d_locked = false;
            d_pss_report = slot_info(); // the next slot out is the new lock's
            acquisition_restart(std::max(d_start, d_base));
        }
    }
}

double slot_sync::fraction_at(int64_t pss_pos)
{
    if (pss_pos < d_base || pss_pos + d_n > end())
        return 0.0;
    if (d_pss_bins_pos != pss_pos)
        pss_bins_at(pss_pos);
    // The integer position is the metric's maximum, so the fraction is within about a
    // sample (plus the channel's mean delay); the clamp keeps a noisy estimate from
    // looking like a clock jump.
    return std::clamp(pss_fraction(d_pss_bins, d_pss, d_n), -1.5, 1.5);
}

double slot_sync::timing_sigma(float metric) const
{
    // Cramer-Rao-like spread of pss_fraction: the PSS's SNR per subcarrier from its
    // metric (M = SNR / (1 + SNR)), n_rx antennas, sum of f_k^2 = 20832 over the 62
    // subcarriers. Fading adds a floor: the PSS sees the channel's group delay at the
    // carrier centre, which wanders with the fading (measured on EPA at 5 Hz: about
    // 10-15 ns rms over 40 ms, much more near a notch).
    const double m = std::clamp(static_cast<double>(metric), 0.01, 0.999);
    const double snr = m / (1.0 - m);
    const double s = d_n / (k_two_pi * std::sqrt(2.0 * snr * d_n_rx * 20832.0));
    return std::max(s, k_timing_floor_s * d_num.sample_rate);
}

double slot_sync::jump_tolerance() const
{
    return std::max(1.5, 5.0 * k_timing_floor_s * d_num.sample_rate);
}

void slot_sync::clock_reset(int64_t n, double t, double sigma)
{
    d_clk_hist.assign(1, { n, t, 1.0 / (sigma * sigma) });
    d_clk_pending.reset();
    d_clk_outliers = 0;
    if (!d_sro_valid)
        d_clk_b = 1.0;
    d_clk_a = t - d_clk_b * static_cast<double>(n);
}

void slot_sync::clock_fit()
{
    // Weighted least-squares line through the history (centred for precision); with one
    // point only the offset moves.
    double sw = 0.0, nm = 0.0, tm = 0.0;
    for (const auto& p : d_clk_hist) {
        sw += p.w;
        nm += p.w * static_cast<double>(p.n);
        tm += p.w * p.t;
    }
    nm /= sw;
    tm /= sw;
    double snn = 0.0, snt = 0.0;
    for (const auto& p : d_clk_hist) {
        snn += p.w * (p.n - nm) * (p.n - nm);
        snt += p.w * (p.n - nm) * (p.t - tm);
    }
    if (snn > 0.0) {
        d_clk_b = snt / snn;
        d_clk_sigma_b = 1.0 / std::sqrt(snn);
        d_sro_valid = true;
    }
    d_clk_a = tm - d_clk_b * nm;
}

int slot_sync::clock_update(int64_t n, double t, double sigma)
{
    if (d_clk_hist.empty()) {
        clock_reset(n, t, sigma);
        return 0;
    }
    const clock_point p{ n, t, 1.0 / (sigma * sigma) };
    if (d_clk_hist.size() == 1 && !d_sro_valid) {
        // Two points: any line is possible, but not a rate beyond sro_max_ppm.
        const auto& p0 = d_clk_hist[0];
        const double rate = (t - p0.t) / static_cast<double>(n - p0.n);
        if (!(std::abs(rate - 1.0) <= d_p.sro_max_ppm * 1e-6)) {
            clock_reset(n, t, sigma);
            return 2;
        }
    } else if (!(std::abs(t - clock_pos(n)) <= jump_tolerance())) {
        // Off the line: an outlier (the PSS in a fade) unless the next PSS agrees with
        // it, which makes it a jump of the timing (a clock glitch, or a fade that moves
        // the PSS for longer): the line moves by it and keeps its slope, the history
        // shifted along. Three outliers in a row that do not agree: the slope itself is
        // wrong (e.g. estimated across a glitch); start again from the last two.
        const auto& q = d_clk_pending;
        if (q && std::abs(t - q->t - d_clk_b * static_cast<double>(n - q->n)) <=
                     jump_tolerance()) {
            const double delta = 0.5 * ((q->t - clock_pos(q->n)) + (t - clock_pos(n)));
            for (auto& h : d_clk_hist)
                h.t += delta;
            d_clk_hist.push_back(*q);
        } else if (++d_clk_outliers >= 3) {
            d_sro_valid = false;
            d_clk_sigma_b = 0.0;
            d_clk_b = 1.0;
            d_clk_hist.assign(1, *q);
        } else {
            d_clk_pending = p;
            return 1;
        }
        d_clk_pending.reset();
        d_clk_outliers = 0;
        d_clk_hist.push_back(p);
        while (static_cast<int>(d_clk_hist.size()) > d_p.sro_window)
            d_clk_hist.erase(d_clk_hist.begin());
        clock_fit();
        return 2;
    }
    d_clk_pending.reset();
    d_clk_outliers = 0;
    d_clk_hist.push_back(p);
    if (static_cast<int>(d_clk_hist.size()) > d_p.sro_window)
        d_clk_hist.erase(d_clk_hist.begin());
    clock_fit();
    return 0;
}

// Without any sample-rate offset the estimate still wanders with the channel's group
// delay, which fading moves slowly (EPA at 5 Hz, 5 MHz 4x4, 20 dB, 6 runs of 2000 slots:
// 0.6-0.8 ppm rms, up to 2.8 ppm, no bias: means within 0.06 ppm), so resampling may
// switch on for a while without one. That costs nothing measurable, and resampling a
// real offset of that size pays (20 MHz 64QAM), so the switch stays; below this offset
// it is only logged as a routine event.
constexpr double k_sro_fading_max = 5e-6;

void slot_sync::set_resampling()
{
    // On when the drift matters and the estimate is clearly not 0 (3 sigma), off again
    // below half the drift or 2 sigma: no resampling without a sample-rate offset.
    const double off = std::abs(d_clk_b - 1.0);
    const double drift = off * d_slot; // samples per slot
    const bool was = d_resample;
    if (d_p.sro_window == 0 || !d_sro_valid)
        d_resample = false;
    else if (!d_resample && drift >= d_p.sro_resample_drift && off >= 3.0 * d_clk_sigma_b)
        d_resample = true;
    else if (d_resample &&
             (drift < 0.5 * d_p.sro_resample_drift || off < 2.0 * d_clk_sigma_b))
        d_resample = false;
    if (was && !d_resample)
        d_start = std::llround(clock_pos(d_n_out)); // back to whole-sample timing
    if (was != d_resample)
        log(off >= k_sro_fading_max ? 1 : 0,
            fmt("ofdm_sync: sample-rate offset %.2f ppm (%.4f samples per slot): "
                "resampling %s",
                (d_clk_b - 1.0) * 1e6,
                drift,
                d_resample ? "on" : "off"));
}

void slot_sync::corrected(int64_t start, int len)
{
    d_ptr.clear();
    d_optr.clear();
    for (int a = 0; a < d_n_rx; ++a) {
        if (static_cast<int>(d_cor[a].size()) < len)
            d_cor[a].resize(len);
        d_ptr.push_back(at(a, start));
        d_optr.push_back(d_cor[a].data());
    }
    derotate(start, d_ptr, d_optr.data(), len);
}

void slot_sync::derotate(int64_t start,
                         const std::vector<const cf*>& in,
                         cf* const* out,
                         int len)
{
    if (static_cast<int>(d_ph.size()) < len)
        d_ph.resize(len);
    // Whole phasor blocks per thread, so that every thread's phasors are the values of
    // one phasors() call over the whole range; the phasors stay in cache for the antennas.
    constexpr int B = cfo_rotator::block;
    const int blocks = (len + B - 1) / B;
    const int t = std::max(1, std::min(d_threads, blocks / k_min_blocks));
    parallel(t, [&](size_t k) {
        const int i0 = static_cast<int>(blocks * k / t) * B;
        const int i1 = std::min(len, static_cast<int>(blocks * (k + 1) / t) * B);
        d_rot.phasors(start + i0, d_ph.data() + i0, i1 - i0);
        for (int a = 0; a < d_n_rx; ++a)
            cfo_rotator::multiply(in[a] + i0, d_ph.data() + i0, out[a] + i0, i1 - i0);
    });
}

bool slot_sync::sync_bins(int64_t pos, std::vector<std::vector<cf>>& bins)
{
    if (pos < d_base || pos + d_n > end())
        return false;
    corrected(pos, d_n);
    for (int a = 0; a < d_n_rx; ++a)
        d_dft(d_cor[a].data(), bins[a].data());
    return true;
}

void slot_sync::pss_bins_at(int64_t pss_pos)
{
    d_pss_bins_pos = sync_bins(pss_pos, d_pss_bins) ? pss_pos : -1;
}

bool slot_sync::refine_pss(int64_t expected, int half_width, int64_t* found, float* metric)
{
    const int64_t lo = std::max(d_base, expected - half_width);
    const int64_t hi = std::min(expected + half_width, end() - d_n); // inclusive
    if (hi < lo)
        return false;
    const int n_lags = static_cast<int>(hi - lo + 1);
    corrected(lo, n_lags + d_n - 1);
    d_ptr.clear(); // corrected() used it for its input
    for (const auto& v : d_cor)
        d_ptr.push_back(v.data());
    auto& m = d_refine;
    m.resize(n_lags);
    corr().metric(d_ptr, n_lags, m.data()); // d_ptr: the corrected samples
    int best = -1;
    float bv = -1.0f;
    for (int i = 0; i < n_lags; ++i)
        if (m[i] > bv) {
            bv = m[i];
            best = i;
        }
    if (best < 0)
        return false;
    *found = lo + best;
    *metric = bv;
    return true;
}

sss_decision slot_sync::check_sss(int64_t pss_pos)
{
    const int64_t sss_pos = pss_pos - d_n - d_num.cp_other;
    if (sss_pos < d_base || pss_pos + d_n > end())
        return sss_decision();
    if (d_pss_bins_pos != pss_pos)
        pss_bins_at(pss_pos);
    sync_bins(sss_pos, d_sss_bins);
    return detect_sss(d_pss_bins, d_sss_bins, d_pss, d_sss0, d_sss10);
}

void slot_sync::run_acquisition()
{
    const int W = d_cand_half;
    const float thr = static_cast<float>(d_p.detect_threshold);
    auto M = [this](int64_t lag) { return d_metric[static_cast<size_t>(lag - d_m0)]; };
    while (!d_locked) {
        // 1. Candidates whose neighbourhood [L - W, L + W] is known, in lag order. Each
        //    decision only looks at metric values and samples that are complete by now
        //    (try_lock needs up to L + N + N/8 < d_next_lag + N - 1 <= end()).
        while (d_cand + W < d_next_lag) {
            const int64_t L = d_cand++;
            if (L >= d_win_start + d_half) {
                if (d_search && try_candidates())
                    return;
                log(0, fmt("ofdm_sync: no PSS accepted in lags [%lld, %lld) (largest "
                           "metric %.2f, threshold %.2f, %d candidates checked)",
                           static_cast<long long>(d_win_start),
                           static_cast<long long>(d_win_start + d_half),
                           static_cast<double>(d_win_best),
                           d_p.detect_threshold, d_win_tries));
                d_win_start += d_half;
                d_win_best = 0.0f;
                d_win_tries = 0;
            }
            const float v = M(L);
            d_win_best = std::max(d_win_best, v);
            if (!(v >= thr))
                continue;
            // Local maximum: strictly above the earlier lags, not below the later ones.
            bool peak = true;
            for (int64_t j = std::max(d_m0, L - W); j <= L + W && peak; ++j)
                if ((j < L && M(j) >= v) || (j > L && M(j) > v))
                    peak = false;
            if (!peak)
                continue;
            if (d_search) { // verified once the half frame is complete
                d_win_cands.push_back({ L, v, d_metric_id2[static_cast<size_t>(L - d_m0)] });
                continue;
            }
            if (d_win_tries >= d_p.max_candidates)
                continue;
            ++d_win_tries;
            if (try_lock(L, d_n_id2))
                return;
        }
        // 2. Forget what no candidate can need any more.
        const int64_t keep = d_cand - W - 1;
        if (keep > d_m0) {
            d_metric.erase(d_metric.begin(), d_metric.begin() + (keep - d_m0));
            if (d_search)
                d_metric_id2.erase(d_metric_id2.begin(), d_metric_id2.begin() + (keep - d_m0));
            d_m0 = keep;
        }
        // Cell search: the samples of the whole half frame's candidates stay.
        discard_before((d_search ? d_win_start : d_cand) - W - 2 * d_slot);
        // 3. The next block of lags, computed in one call once all its input is there
        //    (blocks are aligned to the search start, so the values do not depend on how the
        //    input arrived).
        if (end() < d_next_lag + d_block + d_n - 1)
            return; // more input needed
        std::vector<const cf*> ptr;
        for (int a = 0; a < d_n_rx; ++a)
            ptr.push_back(at(a, d_next_lag));
        const size_t old = d_metric.size();
        d_metric.resize(old + d_block);
        if (!d_search) {
            corr().metric(ptr, d_block, d_metric.data() + old);
        } else {
            // The largest of the three N_ID2's metrics, and which one it is.
            d_metric_id2.resize(old + d_block);
            d_metric_tmp.resize(3 * static_cast<size_t>(d_block));
            d_search_corr->metric(ptr, d_block, d_metric_tmp.data());
            for (int i = 0; i < d_block; ++i) {
                int best = 0;
                for (int id2 = 1; id2 < 3; ++id2)
                    if (d_metric_tmp[id2 * static_cast<size_t>(d_block) + i] >
                        d_metric_tmp[best * static_cast<size_t>(d_block) + i])
                        best = id2;
                d_metric[old + i] = d_metric_tmp[best * static_cast<size_t>(d_block) + i];
                d_metric_id2[old + i] = static_cast<int8_t>(best);
            }
        }
        d_next_lag += d_block;
    }
}

bool slot_sync::try_candidates()
{
    auto& c = d_win_cands;
    std::stable_sort(c.begin(), c.end(), [](const candidate& a, const candidate& b) {
        return a.metric > b.metric;
    });
    bool ok = false;
    for (const auto& cand : c) {
        if (d_win_tries >= d_p.max_candidates)
            break;
        ++d_win_tries;
        if ((ok = try_lock(cand.lag, cand.n_id2)))
            break;
    }
    c.clear();
    return ok;
}

bool slot_sync::try_lock(int64_t coarse, int n_id2)
{
    const int R = d_n / 8;
    if (d_search)
        use_pss(n_id2);
    // 1. CFO from the CPs of the PSS slot (timing-free search around the coarse start).
    const int64_t s0 = coarse + d_n - d_slot;
    const int64_t th_lo = std::max(d_base, s0 - R);
    const int64_t th_hi = std::min(s0 + R, end() - d_slot);
    if (th_hi < th_lo)
        return false;
    std::vector<const cf*> ptr;
    for (int a = 0; a < d_n_rx; ++a)
        ptr.push_back(at(a, th_lo));
    cd gamma;
    bool gamma_is_coefficient = false;
    cp_search(d_num, ptr, static_cast<int>(th_hi - th_lo + 1), &gamma);
    if (!finite(gamma)) {
        log(3, "ofdm_sync: non-finite input samples around a PSS candidate");
        return false;
    }
    if (std::abs(gamma) == 0.0) {
        log(0, "ofdm_sync: PSS candidate in a silent stretch ignored");
        return false;
    }
    d_rot.reset(cfo_from_correlation(gamma), th_lo);
    d_pss_bins_pos = -1; // the PSS bins depend on the CFO correction
    // 2. Timing on the corrected samples.
    int64_t pss;
    float m;
    if (!refine_pss(coarse, R, &pss, &m) || m < d_p.verify_threshold) {
        log(0, fmt("ofdm_sync: PSS candidate at lag %lld: metric %.2f after CFO "
                   "correction (%.3f), below %.2f",
                   static_cast<long long>(coarse), m, d_rot.cfo(),
                   d_p.verify_threshold));
        return false;
    }
    // 3. The CFO again from the CPs of the slot, now that its timing is known, skipping
    //    the first quarter of every CP like the tracking does: the timing-free search
    //    above may take a window that reaches into the previous symbol's delay spread,
    //    which biased the first slots' CFO by up to 0.007 subcarrier spacings on EPA.
    const int64_t s1 = pss + d_n - d_slot;
    if (s1 >= d_base && s1 + d_slot <= end()) {
        std::vector<const cf*> sp;
        for (int a = 0; a < d_n_rx; ++a)
            sp.push_back(at(a, s1));
        const cd r = cp_coefficient(d_num, sp, d_num.cp_other / 4);
        if (finite(r) && std::abs(r) > 0.0) {
            gamma = r;
            gamma_is_coefficient = true;
            d_rot.reset(cfo_from_correlation(gamma), s1);
            d_pss_bins_pos = -1;
        }
    }
    // 4. Slot 0 or 10 (and with cell search N_ID1) from the SSS.
    double rho_best, rho_other;
    int ns, cell = d_cell_id;
    if (!d_search) {
        const auto sss = check_sss(pss);
        rho_best = std::max(sss.rho0, sss.rho10);
        rho_other = std::min(sss.rho0, sss.rho10);
        ns = sss.ns;
        if (!(rho_best >= d_p.sss_min_rho && rho_best - rho_other >= d_p.sss_min_margin)) {
            log(0, fmt("ofdm_sync: PSS at sample %lld (metric %.2f) but no clear SSS "
                       "(rho0 %.2f, rho10 %.2f)",
                       static_cast<long long>(pss), m, sss.rho0, sss.rho10));
            return false;
        }
    } else {
        cell_decision c;
        if (d_pss_bins_pos != pss)
            pss_bins_at(pss);
        const int64_t sss_pos = pss - d_n - d_num.cp_other;
        if (d_pss_bins_pos == pss && sync_bins(sss_pos, d_sss_bins))
            c = d_hyp[n_id2].detect(d_pss_bins, d_sss_bins);
        rho_best = c.rho;
        rho_other = c.runner_up;
        ns = c.ns;
        if (c.n_id1 < 0 ||
            !(rho_best >= d_p.cell_min_rho && rho_best - rho_other >= d_p.cell_min_margin)) {
            log(0, fmt("ofdm_sync: PSS of N_ID2 %d at sample %lld (metric %.2f) but no clear "
                       "SSS (best rho %.2f for N_ID1 %d, runner-up %.2f)",
                       n_id2, static_cast<long long>(pss), m, rho_best, c.n_id1, rho_other));
            return false;
        }
        cell = 3 * c.n_id1 + n_id2;
        use_cell(cell);
    }
    d_lock = lock_report{ cell, m, rho_best, rho_other, ns, pss };
    int64_t start = pss + d_n - d_slot;
    d_pss_done = start;
    if (start < d_base) { // the slot's beginning is gone: start at the next slot
        start += d_slot;
        ns += 1;
        d_pss_done = -1;
    }
    d_locked = true;
    d_first = true;
    d_level = 0.0; // the new lock's first slot sets it
    if (d_dropped_run > 0)
        log(2, fmt("ofdm_sync: %d slots dropped", d_dropped_run));
    d_dropped_run = 0;
    d_pss_pending.reset();
    d_pss_report = slot_info();
    d_start = start;
    d_ns = ns;
    // Sample clock: output sample 0 is the first emitted slot's first sample.
    d_n_out = 0;
    d_last_start = -1;
    d_sro_valid = false;
    d_resample = false;
    d_clk_hist.clear();
    d_clk_sigma_b = 0.0;
    if (d_p.sro_window > 0)
        clock_update(pss - start, static_cast<double>(pss) + fraction_at(pss),
                     timing_sigma(m));
    // The smoothed CFO holds correlation coefficients (cp_coefficient); the search's
    // plain correlation, where the slot's was not in the buffer, counts as one of
    // magnitude 1.
    d_cfo_corr = gamma_is_coefficient ? gamma : gamma / std::abs(gamma);
    d_cfo_slots = 1;
    d_lock_metric = m;
    d_missed = 0;
    d_mismatch = 0;
    log(1, fmt("ofdm_sync: locked to cell %d at input sample %lld, slot %d, CFO %.4f "
               "subcarrier spacings, PSS metric %.2f, SSS rho %.2f (next best %.2f)",
               cell, static_cast<long long>(start), ns, d_rot.cfo(), d_lock_metric, rho_best,
               rho_other));
    discard_before(d_start - d_track - 1);
    return true;
}

bool slot_sync::pop_slot(const std::vector<cf*>& out, slot_info& info)
{
    for (;;) {
        const slot_step r = next_slot(out, info);
        if (r != slot_step::dropped)
            return r == slot_step::out;
    }
}

slot_sync::slot_step slot_sync::next_slot(const std::vector<cf*>& out, slot_info& info)
{
    if (d_locked && d_pss_pending) {
        if (end() < pss_input_end())
            return slot_step::wait;
        track_pss(); // before the next slot: its timing, clock and number depend on it
    }
    if (!d_locked) {
        run_acquisition();
        if (!d_locked)
            return slot_step::wait;
    }
    if (end() < slot_input_end())
        return slot_step::wait;
    info = slot_info();
    if (lte_grid::has_sync(d_ns) && d_pss_done == d_start) {
        info.pss_checked = true; // the lock's PSS, in this slot
        info.pss_found = true;
        info.pss_ns = d_ns;
        info.pss_metric = d_lock_metric;
    } else if (lte_grid::has_sync(d_ns)) {
        // Searched once this slot is out (pss_input_end): the timing, sample clock and
        // slot count it gives apply from the next slot on.
        const int64_t n_pss = d_n_out + d_slot - d_n; // output index of the PSS
        d_pss_pending = pss_search{
            d_resample ? std::llround(clock_pos(n_pss)) : d_start + d_slot - d_n, n_pss, d_ns
        };
    }
    if (d_pss_report.pss_checked) { // the search after the previous slot
        info.pss_checked = true;
        info.pss_found = d_pss_report.pss_found;
        info.pss_ns = d_pss_report.pss_ns;
        info.pss_metric = d_pss_report.pss_metric;
        d_pss_report = slot_info();
    }
    // The slot's samples before CFO correction: as they are, or resampled onto the
    // transmitter's sample clock (positions clock_pos(d_n_out + i)).
    // (Without resampling they are read in place from the input buffer.)
    int64_t start = d_start;
    const double p0 = clock_pos(d_n_out);
    if (d_resample)
        start = std::llround(p0);
    auto& ptr = d_ptr;
    ptr.clear();
    for (int a = 0; a < d_n_rx; ++a)
        ptr.push_back(d_resample ? d_raw[a].data() : at(a, start));
    // CFO: smoothed CP correlation (skipping the first quarter of every CP, where the
    // previous symbol's delay spread lands); its per-antenna sums go with the
    // resampling, on the threads when resampling (too little work alone).
    constexpr int L = lte_numerology::symbols_per_slot;
    const int t = d_resample ? d_threads : 1;
    parallel(t, [&](size_t k) {
        for (int a = static_cast<int>(k); a < d_n_rx; a += t) {
            if (d_resample)
                d_interp.resample(at(a, start), p0 - start, d_clk_b, d_raw[a].data(), d_slot);
            cp_symbol_sums(d_num,
                           ptr[a],
                           d_num.cp_other / 4,
                           &d_cp_sums[a * L],
                           &d_cp_energy[a * L]);
        }
    });
    cd r = 0.0; // cp_correlation's order of additions
    double energy = 0.0;
    for (size_t i = 0; i < d_cp_sums.size(); ++i) {
        r += d_cp_sums[i];
        energy += d_cp_energy[i];
    }
    if (energy > 0.0)
        r /= energy; // cp_coefficient: the slot's weight does not follow its level
    // Not the transmitter's signal where the slot's cyclic prefixes do not repeat its
    // symbols' ends (SNR / (1 + SNR) for the signal, about 0 for noise, zeros, a timing
    // that is off): a slot far above the signal's level (a burst of interference, an ADC
    // at full scale), or one after a missed PSS (the signal gone, or the timing lost).
    // Its bits would be noise that nothing downstream could tell from data: it is
    // dropped (the slot numbers after it say so) and counted as lost.
    const bool burst = d_level > 0.0 && energy > d_p.burst_ratio * d_level;
    if (finite(r) && std::isfinite(energy) && (burst || d_missed > 0) &&
        std::abs(r) < d_p.drop_max_coef) {
        if (d_dropped_run++ == 0)
            log(2,
                fmt("ofdm_sync: slot %d dropped: %s (CP correlation %.2f)",
                    d_ns,
                    burst ? fmt("%.0f dB above the signal's level",
                                10.0 * std::log10(energy / d_level))
                                .c_str()
                          : "no signal after a missed PSS",
                    std::abs(r)));
        ++d_lost_pending;
        ++d_slots_lost_total;
        if (info.pss_checked) // reported with the next slot out instead
            d_pss_report = info;
        advance_slot(start);
        return slot_step::dropped;
    }
    if (d_dropped_run > 0)
        log(2, fmt("ofdm_sync: %d slots dropped", d_dropped_run));
    d_dropped_run = 0;
    if (std::isfinite(energy) && energy > 0.0) // the signal's level: a slow average
        d_level = d_level > 0.0 ? 0.9 * d_level + 0.1 * energy : energy;
    if (finite(r)) {
        // A plain mean over the first 1/cfo_alpha slots after the lock, then exponential.
        const double w = std::max(d_p.cfo_alpha, 1.0 / (++d_cfo_slots));
        d_cfo_corr = (1.0 - w) * d_cfo_corr + w * r;
        // The CP gives the CFO modulo 1 subcarrier spacing: take the value nearest the
        // current one, so that a CFO at or drifting across +-0.5 is followed, not flipped.
        const double c = cfo_from_correlation(d_cfo_corr);
        d_rot.retune(c + std::round(d_rot.cfo() - c), start);
        d_pss_bins_pos = -1;
        d_nonfinite = false;
    } else {
        info.nonfinite = true;
        if (!d_nonfinite)
            log(3, fmt("ofdm_sync: non-finite input samples in slot %d (passed on, CFO kept)",
                       d_ns));
        d_nonfinite = true;
    }
    // One set of phasors for all antennas (the same values as d_rot.apply per antenna).
    derotate(start, ptr, out.data(), d_slot);
    info.ns = d_ns;
    info.input_start = start;
    info.timing_step = d_last_start < 0 ? 0 : static_cast<int>(start - d_last_start - d_slot);
    info.cfo = d_rot.cfo();
    info.first = d_first;
    info.sro_ppm = sro_ppm();
    info.resampled = d_resample;
    info.cell_id = d_cell_id;
    info.slots_lost = d_lost_pending;
    d_lost_pending = 0;
    if (d_first && d_last_end >= 0) {
        // A re-lock: the input between the last slot out and this one was never put out.
        // Whole slots of it (on the receiver's clock: the offset is at most ppm).
        const int64_t n = std::max<int64_t>(
            0, std::llround(static_cast<double>(start - d_last_end) / d_slot));
        info.slots_lost += n;
        d_slots_lost_total += static_cast<uint64_t>(n);
        if (n > 0)
            log(1,
                fmt("ofdm_sync: %lld slots lost while unlocked",
                    static_cast<long long>(n)));
    }
    d_first = false;
    advance_slot(start);
    return slot_step::out;
}

void slot_sync::advance_slot(int64_t start)
{
    d_last_start = start;
    d_last_end = d_resample ? std::llround(clock_pos(d_n_out + d_slot)) : start + d_slot;
    d_ns = (d_ns + 1) % lte_numerology::slots_per_frame;
    d_n_out += d_slot;
    d_start = d_resample ? static_cast<int64_t>(std::floor(clock_pos(d_n_out)))
                         : d_start + d_slot;
    int64_t keep = d_start - d_track - frac_interp::taps;
    if (d_pss_pending) // its search window, and the SSS symbol before the PSS
        keep = std::min(keep, d_pss_pending->expected - d_track - d_n - d_num.cp_other);
    discard_before(keep);
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
