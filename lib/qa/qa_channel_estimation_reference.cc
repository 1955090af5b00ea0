/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The parallel, vectorised channel estimation (lib/phy/channel_estimation.cc) against
// a plain serial implementation of the same method (ref::ref_estimation below): H and
// noise_var on random slots, every thread count, the cached-filter path and the cache
// clearing, and bad input. Also the block's threads parameter.

#include "phy/channel_estimation.h"
#include "qa_estimation_slots.h"
#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;

namespace ref {

// The serial estimator: one thread, scalar sums in the natural order, a Wiener filter
// solved per subcarrier; interpolate and difference_energy are taken from the core. The
// reference for the results of the parallel, vectorised code.
class ref_estimation
{
public:
    using cf = std::complex<float>;
    ref_estimation(const lte_numerology& num, int n_tx, int n_rx, int cell_id, double max_delay_us = 4.7);
    int n_sc() const { return d_grid.numerology().n_sc; }
    size_t h_size() const { return static_cast<size_t>(n_sc()) * d_n_rx * d_n_tx; }
    float estimate(int ns, const cf* const* grids, cf* H) const;

private:
    static void interpolate(const std::vector<int>& pk, const cf* values, int n_sc, cf* out, size_t stride)
    {
        core::channel_estimation::interpolate(pk, values, n_sc, out, stride);
    }
    static void difference_energy(const cf* h, size_t n, int order, double& sum, size_t& count)
    {
        core::channel_estimation::difference_energy(h, n, order, sum, count);
    }
    struct port_pilots {
        std::vector<int> k;
        std::vector<std::vector<int>> re;
        std::vector<std::vector<cf>> inv_x;
        int pattern;
    };
    struct wiener_filter {
        int M;
        std::vector<int> start;
        std::vector<float> w;
    };
    const wiener_filter& filter(int pattern, int b_idx, int snr_idx) const;

    lte_grid d_grid;
    int d_n_tx, d_n_rx;
    double d_max_delay_s;
    std::vector<const port_pilots*> d_patterns;
    mutable std::map<std::tuple<int, int, int>, wiener_filter> d_filters;
    std::vector<port_pilots> d_ports;
    int d_noise_ports;
};

ref_estimation::ref_estimation(const lte_numerology& num,
                                       int n_tx,
                                       int n_rx,
                                       int cell_id,
                                       double max_delay_us)
    : d_grid(num, n_tx, cell_id), d_n_tx(n_tx), d_n_rx(n_rx), d_max_delay_s(max_delay_us * 1e-6)
{
    if (!(max_delay_us > 0.0 && max_delay_us <= 100.0))
        throw std::invalid_argument("mimodet: max_delay_us must be in (0, 100], got " +
                                    std::to_string(max_delay_us));
    if (n_rx < 1 || n_rx > 8)
        throw std::invalid_argument("mimodet: receive antennas must be 1..8, got " +
                                    std::to_string(n_rx));
    const int n_sc = num.n_sc;
    const int S = lte_numerology::slots_per_frame;
    d_ports.resize(static_cast<size_t>(S) * n_tx);
    for (int ns = 0; ns < S; ++ns)
        for (int t = 0; t < n_tx; ++t) {
            std::map<int, std::vector<int>> by_k;
            for (int re : d_grid.crs_elements(ns, t))
                by_k[re % n_sc].push_back(re);
            auto& p = d_ports[ns * n_tx + t];
            for (const auto& kv : by_k) {
                p.k.push_back(kv.first);
                p.re.push_back(kv.second);
                std::vector<cf> inv;
                for (int re : kv.second)
                    inv.push_back(cf(1.0f, 0.0f) /
                                  d_grid.crs_value(ns, t, re / n_sc, re % n_sc));
                p.inv_x.push_back(inv);
            }
            if (p.k.empty())
                throw std::logic_error("mimodet: port without CRS in slot " +
                                       std::to_string(ns));
        }
    d_noise_ports = std::min(n_tx, 2);
    // Distinct pilot patterns (same subcarriers and pilot counts share Wiener weights).
    for (auto& p : d_ports) {
        p.pattern = -1;
        for (size_t q = 0; q < d_patterns.size() && p.pattern < 0; ++q) {
            const auto& o = *d_patterns[q];
            if (o.k != p.k)
                continue;
            bool same = true;
            for (size_t i = 0; i < p.k.size() && same; ++i)
                same = o.re[i].size() == p.re[i].size();
            if (same)
                p.pattern = static_cast<int>(q);
        }
        if (p.pattern < 0) {
            p.pattern = static_cast<int>(d_patterns.size());
            d_patterns.push_back(&p);
        }
    }
}

namespace {
constexpr double kSubcarrierHz = 15e3;
constexpr double kPi = 3.14159265358979323846;
constexpr double kBMin = 10e-9;   // smallest model spread b (s)
constexpr double kBStep = 1.26;   // b grid ratio
constexpr double kSnrStepDb = 1.5; // SNR grid step
constexpr int kWindow = 32;        // pilots per Wiener window
constexpr double kBRef = 250e-9;   // spread above which the margin is 2x
constexpr size_t kMaxFilters = 128; // cache bound (weights: n_sc * kWindow floats each)

// Physical frequency of subcarrier k in subcarrier spacings (the DC subcarrier is not
// part of the grid: k = n_sc / 2 is one above DC, k = n_sc / 2 - 1 one below).
double pos(int k, int n_sc) { return k < n_sc / 2 ? k : k + 1; }

double b_of_idx(int i) { return kBMin * std::pow(kBStep, i); }

// Frequency correlation of a two-sided exponential PDP exp(-|tau| / b).
double corr(double dk, double b)
{

    const double x = 2.0 * kPi * dk * kSubcarrierHz * b;
    return 1.0 / (1.0 + x * x);
}
} // namespace

const ref_estimation::wiener_filter&
ref_estimation::filter(int pattern, int b_idx, int snr_idx) const
{
    const auto key = std::make_tuple(pattern, b_idx, snr_idx);
    auto it = d_filters.find(key);
    if (it != d_filters.end())
        return it->second;
    const port_pilots& p = *d_patterns[pattern];
    const int P = static_cast<int>(p.k.size());
    const int M = std::min(kWindow, P);
    const int n_sc = this->n_sc();
    const double b = b_of_idx(b_idx);
    const double inv_snr = std::pow(10.0, -kSnrStepDb * snr_idx / 10.0);
    wiener_filter f;
    f.M = M;
    f.start.resize(n_sc);
    f.w.resize(static_cast<size_t>(n_sc) * M);
    std::vector<double> R(static_cast<size_t>(M) * M), L(R.size()), rhs(M), y(M);
    for (int k = 0; k < n_sc; ++k) {
        const int c = static_cast<int>(std::lower_bound(p.k.begin(), p.k.end(), k) - p.k.begin());
        const int s = std::max(0, std::min(c - M / 2, P - M));
        f.start[k] = s;
        for (int i = 0; i < M; ++i) {
            for (int j = 0; j < M; ++j)
                R[i * M + j] = corr(pos(p.k[s + i], n_sc) - pos(p.k[s + j], n_sc), b);
            R[i * M + i] += inv_snr / static_cast<double>(p.re[s + i].size());
            rhs[i] = corr(pos(k, n_sc) - pos(p.k[s + i], n_sc), b);
        }
        // Cholesky R = L L^T, then L y = rhs, L^T w = y.
        for (int i = 0; i < M; ++i)
            for (int j = 0; j <= i; ++j) {
                double v = R[i * M + j];
                for (int q = 0; q < j; ++q)
                    v -= L[i * M + q] * L[j * M + q];
                if (i == j)
                    L[i * M + i] = std::sqrt(std::max(v, 1e-12));
                else
                    L[i * M + j] = v / L[j * M + j];
            }
        for (int i = 0; i < M; ++i) {
            double v = rhs[i];
            for (int q = 0; q < i; ++q)
                v -= L[i * M + q] * y[q];
            y[i] = v / L[i * M + i];
        }
        for (int i = M - 1; i >= 0; --i) {
            double v = y[i];
            for (int q = i + 1; q < M; ++q)
                v -= L[q * M + i] * f.w[static_cast<size_t>(k) * M + q];
            f.w[static_cast<size_t>(k) * M + i] = static_cast<float>(v / L[i * M + i]);
        }
    }
    if (d_filters.size() >= kMaxFilters)
        d_filters.clear(); // callers hold no reference across filter() calls
    return d_filters.emplace(key, std::move(f)).first->second;
}

float ref_estimation::estimate(int ns, const cf* const* grids, cf* H) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::invalid_argument("mimodet: slot index must be 0..19, got " +
                                    std::to_string(ns));
    const int n_sc = this->n_sc();
    const size_t stride = static_cast<size_t>(d_n_rx) * d_n_tx;
    double sum[4] = { 0, 0, 0, 0 }, power = 0.0;
    size_t count[4] = { 0, 0, 0, 0 }, n_power = 0;
    // 1. LS at the pilots, ls[t * n_rx + r][i]; noise from the ports 0/1 residuals.
    std::vector<std::vector<cf>> ls(static_cast<size_t>(d_n_tx) * d_n_rx);
    for (int t = 0; t < d_n_tx; ++t) {
        const auto& p = d_ports[ns * d_n_tx + t];
        for (int r = 0; r < d_n_rx; ++r) {
            auto& v = ls[t * d_n_rx + r];
            v.resize(p.k.size());
            const cf* y = grids[r];
            for (size_t i = 0; i < p.k.size(); ++i) {
                cf acc(0.0f, 0.0f);
                for (size_t e = 0; e < p.re[i].size(); ++e)
                    acc += y[p.re[i][e]] * p.inv_x[i][e];
                v[i] = acc / static_cast<float>(p.re[i].size());
            }
            if (t < d_noise_ports) {
                for (int d = 2; d <= 3; ++d) {
                    double s;
                    size_t c;
                    difference_energy(v.data(), v.size(), d, s, c);
                    sum[d] += s;
                    count[d] += c;
                }
                for (const cf& x : v)
                    power += std::norm(x);
                n_power += v.size();
            }
        }
    }
    double nv = std::numeric_limits<double>::infinity();
    for (int d = 2; d <= 3; ++d)
        if (count[d] > 0)
            nv = std::min(nv, sum[d] / count[d]);
    bool ok = std::isfinite(power) && std::isfinite(nv);
    if (ok) {
        const double floor = 1e-6 * (n_power ? power / n_power : 0.0);
        nv = std::max(nv, floor);
        ok = nv > 0.0;
    }
    if (!ok) {
        // Unusable slot: plain interpolation (propagates NaN / zeros), NaN noise.
        for (int t = 0; t < d_n_tx; ++t)
            for (int r = 0; r < d_n_rx; ++r)
                interpolate(d_ports[ns * d_n_tx + t].k,
                            ls[t * d_n_rx + r].data(),
                            n_sc,
                            H + r * d_n_tx + t,
                            stride);
        return std::numeric_limits<float>::quiet_NaN();
    }

    // 2. Mean delay: phase slope of the adjacent-pilot correlation (ports 0/1).
    std::complex<double> s1 = 0.0;
    for (int t = 0; t < d_noise_ports; ++t) {
        const auto& k = d_ports[ns * d_n_tx + t].k;
        for (int r = 0; r < d_n_rx; ++r) {
            const auto& v = ls[t * d_n_rx + r];
            for (size_t i = 0; i + 1 < v.size(); ++i)
                if (k[i + 1] - k[i] == (k.size() > 1 ? k[1] - k[0] : 0) &&
                    pos(k[i + 1], n_sc) - pos(k[i], n_sc) == k[i + 1] - k[i])
                    s1 += std::conj(std::complex<double>(v[i])) * std::complex<double>(v[i + 1]);
        }
    }
    const int d0 = d_ports[ns * d_n_tx].k.size() > 1
                       ? d_ports[ns * d_n_tx].k[1] - d_ports[ns * d_n_tx].k[0]
                       : 1;
    const double theta = std::abs(s1) > 0.0 ? std::arg(s1) / d0 : 0.0;
    std::vector<cf> rot(n_sc);
    for (int k = 0; k < n_sc; ++k)
        rot[k] = std::polar(1.0f, static_cast<float>(theta * pos(k, n_sc)));
    double pw = 0.0;
    size_t n_pw = 0;
    for (int t = 0; t < d_n_tx; ++t) {
        const auto& k = d_ports[ns * d_n_tx + t].k;
        for (int r = 0; r < d_n_rx; ++r) {
            auto& v = ls[t * d_n_rx + r];
            for (size_t i = 0; i < v.size(); ++i) {
                v[i] *= std::conj(rot[k[i]]);
                pw += std::norm(v[i]);
            }
            n_pw += v.size();
        }
    }
    // 3. Spread: measured correlation at growing lags, two-sided exponential fit.
    const double P = std::max(pw / n_pw - nv, 1e-3 * nv);
    const double b_max = d_max_delay_s / 4.0;
    double b = b_max;
    static const int lags[] = { 6, 12, 24, 48, 96 };
    for (int L : lags) {
        double sL = 0.0;
        size_t cL = 0;
        for (int t = 0; t < d_n_tx; ++t) {
            const auto& k = d_ports[ns * d_n_tx + t].k;
            for (int r = 0; r < d_n_rx; ++r) {
                const auto& v = ls[t * d_n_rx + r];
                size_t j = 0;
                for (size_t i = 0; i < v.size(); ++i) {
                    while (j < v.size() && k[j] < k[i] + L)
                        ++j;
                    if (j == v.size())
                        break;
                    if (k[j] == k[i] + L) {
                        sL += std::real(std::conj(std::complex<double>(v[i])) *
                                        std::complex<double>(v[j]));
                        ++cL;
                    }
                }
            }
        }
        if (cL < 8)
            break;
        const double rho = sL / (cL * P);
        if (rho < 0.3)
            break;
        b = rho >= 1.0 ? 0.0 : std::sqrt(1.0 / rho - 1.0) / (2.0 * kPi * kSubcarrierHz * L);
    }
    // Safety margin: the fit sees the core of the profile; long profiles (EVA, ETU) have
    // sparse late taps it under-weights, so their b is widened up to 2x.
    b = std::min(std::max((1.0 + std::min(1.0, b / kBRef)) * b, kBMin), b_max);
    const int b_idx = static_cast<int>(std::ceil(std::log(b / kBMin) / std::log(kBStep) - 1e-9));
    const double snr_db = 10.0 * std::log10(P / nv);
    const int snr_idx = std::max(
        -10, std::min(40, static_cast<int>(std::lround(snr_db / kSnrStepDb))));

    // 4. Wiener smoothing / interpolation, then the mean-delay phase back.
    for (int t = 0; t < d_n_tx; ++t) {
        const auto& f = filter(d_ports[ns * d_n_tx + t].pattern, b_idx, snr_idx);
        const int M = f.M;
        for (int r = 0; r < d_n_rx; ++r) {
            const cf* v = ls[t * d_n_rx + r].data();
            cf* out = H + r * d_n_tx + t;
            for (int k = 0; k < n_sc; ++k) {
                const float* w = &f.w[static_cast<size_t>(k) * M];
                const cf* g = v + f.start[k];
                cf acc(0.0f, 0.0f);
                for (int j = 0; j < M; ++j)
                    acc += w[j] * g[j];
                out[k * stride] = acc * rot[k];
            }
        }
    }
    return static_cast<float>(nv);
}


} // namespace ref

namespace {

using qa::make_slots;
using qa::test_slot;

//! Runs the reference and the core estimator (at each thread count) over the slots and
//! compares: H within float rounding of the reference (same operations in the same
//! order: on one build they agree bit for bit, which is counted and printed), noise_var
//! likewise, and every thread count bit for bit equal to one thread.
void compare(double mhz,
             int n_tx,
             int n_rx,
             const std::vector<test_slot>& slots,
             const std::vector<int>& thread_counts,
             int cell_id)
{
    const auto num = lte_numerology::from_bandwidth(mhz);
    ref::ref_estimation old_est(num, n_tx, n_rx, cell_id);
    std::vector<std::vector<cf>> H_ref;
    std::vector<float> nv_ref;
    for (const auto& s : slots) {
        std::vector<const cf*> p;
        for (const auto& v : s.y)
            p.push_back(v.data());
        H_ref.emplace_back(old_est.h_size());
        nv_ref.push_back(old_est.estimate(s.ns, p.data(), H_ref.back().data()));
    }
    std::vector<std::vector<cf>> H_one;
    for (int threads : thread_counts) {
        core::channel_estimation est(num, n_tx, n_rx, cell_id, 4.7, threads);
        ASSERT_EQ(est.threads(), threads);
        size_t exact = 0, total = 0;
        double worst = 0;
        for (size_t i = 0; i < slots.size(); ++i) {
            std::vector<const cf*> p;
            for (const auto& v : slots[i].y)
                p.push_back(v.data());
            std::vector<cf> H(est.h_size(), cf(-7, -7));
            const float nv = est.estimate(slots[i].ns, p.data(), H.data());
            const auto& R = H_ref[i];
            if (std::isnan(nv_ref[i])) {
                EXPECT_TRUE(std::isnan(nv)) << "slot " << i;
            } else {
                EXPECT_NEAR(nv, nv_ref[i], 1e-6 * nv_ref[i]) << "slot " << i;
            }
            float scale = 0;
            for (const cf& v : R)
                if (std::isfinite(std::abs(v)))
                    scale = std::max(scale, std::abs(v));
            for (size_t j = 0; j < R.size(); ++j) {
                ++total;
                if (std::memcmp(&H[j], &R[j], sizeof(cf)) == 0) {
                    ++exact;
                    continue;
                }
                if (std::isnan(R[j].real()) || std::isnan(R[j].imag())) {
                    EXPECT_TRUE(std::isnan(H[j].real()) || std::isnan(H[j].imag()));
                    continue;
                }
                const double d = std::abs(std::complex<double>(H[j]) - std::complex<double>(R[j]));
                worst = std::max(worst, d / scale);
                EXPECT_LE(d, 1e-5 * scale) << "slot " << i << " element " << j;
            }
            if (threads == thread_counts.front())
                H_one.push_back(H);
            else
                EXPECT_EQ(std::memcmp(H.data(), H_one[i].data(), H.size() * sizeof(cf)), 0)
                    << threads << " threads, slot " << i;
        }
        std::printf("%4.1f MHz %dx%d, %2d threads, %zu slots: %zu of %zu H values bit-equal "
                    "to the reference, worst relative difference %.2g\n",
                    mhz, n_tx, n_rx, threads, slots.size(), exact, total, worst);
    }
}

} // namespace

TEST(channel_estimation_reference, random_slots_all_sizes)
{
    const std::vector<int> threads = { 1, 2, 3, 8 };
    for (double mhz : { 1.4, 5.0 })
        for (int n_tx : { 1, 2, 4 })
            for (int n_rx : { 1, 2, 3, 4 }) {
                const auto num = lte_numerology::from_bandwidth(mhz);
                const auto slots =
                    make_slots(num, n_tx, n_rx, 17, 20, 0.0, 30.0, 3000.0, 11 * n_tx + n_rx);
                compare(mhz, n_tx, n_rx, slots, threads, 17);
            }
}

TEST(channel_estimation_reference, twenty_mhz_and_eight_antennas)
{
    const auto num = lte_numerology::from_bandwidth(20);
    compare(20, 4, 4, make_slots(num, 4, 4, 1, 8, 20.0, 5.0, 500.0, 1), { 1, 4, 16 }, 1);
    const auto num10 = lte_numerology::from_bandwidth(10);
    compare(10, 2, 8, make_slots(num10, 2, 8, 301, 6, 10.0, 20.0, 4000.0, 2), { 1, 5 }, 301);
}

TEST(channel_estimation_reference, noiseless_and_filter_cache_clearing)
{
    // SNRs spread over 60 dB and delay spreads up to 5 us: more distinct Wiener filters
    // than the cache holds (128), so it is cleared while slots keep running; repeated
    // slots take the cached filters.
    const auto num = lte_numerology::from_bandwidth(1.4);
    auto slots = make_slots(num, 4, 2, 5, 200, -10.0, 60.0, 5000.0, 3);
    const auto again = make_slots(num, 4, 2, 5, 40, -10.0, 60.0, 5000.0, 3);
    slots.insert(slots.end(), again.begin(), again.end());
    const auto clean = make_slots(num, 4, 2, 5, 4, std::numeric_limits<double>::infinity(), 0.0, 300.0, 4);
    slots.insert(slots.end(), clean.begin(), clean.end());
    compare(1.4, 4, 2, slots, { 1, 4 }, 5);
}

TEST(channel_estimation_reference, bad_input)
{
    // NaN and all-zero slots take the interpolation path: NaN noise_var, same H.
    const auto slots = qa::bad_input_slots(4);
    compare(3, 2, 2, slots, { 1, 3 }, 9);
}

TEST(channel_estimation_reference, threads_parameter)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    EXPECT_THROW(core::channel_estimation(num, 2, 2, 0, 4.7, 0), std::invalid_argument);
    EXPECT_THROW(core::channel_estimation(num, 2, 2, 0, 4.7, 257), std::invalid_argument);
    EXPECT_THROW(channel_estimator::make(1.4, 2, 2, 0, -1), std::invalid_argument);
    EXPECT_THROW(channel_estimator::make(1.4, 2, 2, 0, 257), std::invalid_argument);
    EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0, 3)->threads(), 3);
    const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0)->threads(), std::min(hw, 4));
    EXPECT_EQ(channel_estimator::make(20, 4, 8, 0)->threads(), std::min(hw, 4));
    EXPECT_EQ(channel_estimator::make(20, 1, 2, 0)->threads(), std::min(hw, 2));
}

TEST(channel_estimation_reference, backend_parameter)
{
    EXPECT_THROW(channel_estimator::make(1.4, 2, 2, 0, 0, "gpu"), std::invalid_argument);
    EXPECT_THROW(channel_estimator::make(1.4, 2, 2, 0, 0, ""), std::invalid_argument);
    EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0)->backend(), "cpu");
    EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0, 0, "cpu")->backend(), "cpu");
    if (cuda_device_count() == 0) {
        // Without a device: cuda is refused at construction, auto falls back to the CPU.
        EXPECT_THROW(channel_estimator::make(1.4, 2, 2, 0, 0, "cuda"), std::runtime_error);
        EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0, 0, "auto")->backend(), "cpu");
    } else {
        EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0, 0, "cuda")->backend(), "cuda");
        EXPECT_EQ(channel_estimator::make(1.4, 2, 2, 0, 0, "auto")->backend(), "cuda");
    }
}
