/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "channel_estimation.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

channel_estimation::channel_estimation(const lte_numerology& num,
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

const channel_estimation::wiener_filter&
channel_estimation::filter(int pattern, int b_idx, int snr_idx) const
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

void channel_estimation::interpolate(
    const std::vector<int>& pk, const cf* values, int n_sc, cf* out, size_t stride)
{
    const size_t P = pk.size();
    if (P == 0)
        return;
    for (int k = 0; k <= pk[0] && k < n_sc; ++k)
        out[k * stride] = values[0];
    for (size_t i = 0; i + 1 < P; ++i) {
        const int k0 = pk[i], k1 = pk[i + 1];
        const cf h0 = values[i], h1 = values[i + 1];
        const float inv = 1.0f / static_cast<float>(k1 - k0);
        for (int k = k0 + 1; k <= k1; ++k) {
            const float w = static_cast<float>(k - k0) * inv;
            out[k * stride] = (1.0f - w) * h0 + w * h1;
        }
    }
    for (int k = pk[P - 1] + 1; k < n_sc; ++k)
        out[k * stride] = values[P - 1];
}

void channel_estimation::difference_energy(
    const cf* h, size_t n, int order, double& sum, size_t& count)
{
    static const double coef[4][4] = {
        { 1, 0, 0, 0 }, { 1, -1, 0, 0 }, { 1, -2, 1, 0 }, { 1, -3, 3, -1 }
    };
    static const double gain[4] = { 1, 2, 6, 20 };
    if (order < 1 || order > 3)
        throw std::invalid_argument("mimodet: difference order must be 1..3");
    sum = 0.0;
    count = 0;
    if (n < static_cast<size_t>(order) + 1)
        return;
    for (size_t i = 0; i + order < n; ++i) {
        std::complex<double> e = 0.0;
        for (int j = 0; j <= order; ++j)
            e += coef[order][j] * std::complex<double>(h[i + j]);
        sum += std::norm(e) / gain[order];
        ++count;
    }
}

float channel_estimation::estimate(int ns, const cf* const* grids, cf* H) const
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

} // namespace core
} // namespace mimodet
} // namespace gr
