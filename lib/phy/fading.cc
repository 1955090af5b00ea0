/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/fading.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr double k_two_pi = 6.283185307179586476925286766559;
constexpr int k_max_interval = 1024;
// Salts that keep the generators of one seed independent of each other.
constexpr uint32_t k_salt_taps = 0x7461'7073;  // "taps"
constexpr uint32_t k_salt_block = 0x626c'6b73; // "blks"
constexpr uint32_t k_salt_noise = 0x6e6f'6973; // "nois"

std::mt19937_64 make_rng(uint64_t seed, uint64_t a, uint64_t b, uint32_t salt)
{
    std::seed_seq seq{ static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32),
                       static_cast<uint32_t>(a),
                       static_cast<uint32_t>(a >> 32),
                       static_cast<uint32_t>(b),
                       static_cast<uint32_t>(b >> 32),
                       salt };
    return std::mt19937_64(seq);
}

} // namespace

channel_model parse_channel_model(const std::string& name)
{
    std::string s(name);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    if (s == "awgn")
        return channel_model::awgn;
    if (s == "rayleigh")
        return channel_model::rayleigh;
    if (s == "epa")
        return channel_model::epa;
    if (s == "eva")
        return channel_model::eva;
    if (s == "etu")
        return channel_model::etu;
    throw std::invalid_argument("mimodet: unknown channel model '" + name +
                                "' (expected awgn, rayleigh, epa, eva or etu)");
}

std::string to_string(channel_model m)
{
    switch (m) {
    case channel_model::awgn:
        return "awgn";
    case channel_model::rayleigh:
        return "rayleigh";
    case channel_model::epa:
        return "epa";
    case channel_model::eva:
        return "eva";
    case channel_model::etu:
        return "etu";
    }
    return "?";
}

const tap_profile& tap_table(channel_model m)
{
    // 3GPP TS 36.104 Annex B.2, Tables B.2-2 (EPA), B.2-3 (EVA), B.2-4 (ETU).
    static const tap_profile flat{ { 0 }, { 0.0 } };
    static const tap_profile epa{ { 0, 30, 70, 90, 110, 190, 410 },
                                  { 0.0, -1.0, -2.0, -3.0, -8.0, -17.2, -20.8 } };
    static const tap_profile eva{ { 0, 30, 150, 310, 370, 710, 1090, 1730, 2510 },
                                  { 0.0, -1.5, -1.4, -3.6, -0.6, -9.1, -7.0, -12.0, -16.9 } };
    static const tap_profile etu{ { 0, 50, 120, 200, 230, 500, 1600, 2300, 5000 },
                                  { -1.0, -1.0, -1.0, 0.0, 0.0, 0.0, -3.0, -5.0, -7.0 } };
    switch (m) {
    case channel_model::epa:
        return epa;
    case channel_model::eva:
        return eva;
    case channel_model::etu:
        return etu;
    default:
        return flat;
    }
}

double default_doppler_hz(channel_model m)
{
    switch (m) {
    case channel_model::epa:
        return 5.0;
    case channel_model::eva:
        return 70.0;
    case channel_model::etu:
        return 300.0;
    default:
        return 0.0;
    }
}

// ---------------------------------------------------------------------------------------

jakes_process::jakes_process(double norm_doppler,
                             double power,
                             int n_sinusoids,
                             std::mt19937_64& rng)
    : d_omega(n_sinusoids), d_phase(n_sinusoids), d_amp(std::sqrt(power / n_sinusoids))
{
    std::uniform_real_distribution<double> u(0.0, k_two_pi);
    const double theta = u(rng);
    for (int m = 0; m < n_sinusoids; ++m) {
        const double a = (k_two_pi * m + theta) / n_sinusoids;
        d_omega[m] = k_two_pi * norm_doppler * std::cos(a);
        d_phase[m] = u(rng);
    }
}

std::complex<double> jakes_process::at(int64_t n) const
{
    double re = 0, im = 0;
    const double dn = static_cast<double>(n);
    for (size_t m = 0; m < d_omega.size(); ++m) {
        // Reduce the phase before the sine/cosine: n can be large.
        const double ph = std::fmod(d_omega[m] * dn, k_two_pi) + d_phase[m];
        re += std::cos(ph);
        im += std::sin(ph);
    }
    return { d_amp * re, d_amp * im };
}

// ---------------------------------------------------------------------------------------

fading_channel::fading_channel(const config& cfg) : d_cfg(cfg)
{
    if (cfg.n_tx < 1 || cfg.n_rx < 1)
        throw std::invalid_argument("mimodet: fading_channel needs n_tx, n_rx >= 1");
    if (!(cfg.sample_rate > 0) || !std::isfinite(cfg.sample_rate))
        throw std::invalid_argument("mimodet: fading_channel sample rate must be > 0");
    if (!(cfg.doppler_hz >= 0) || !std::isfinite(cfg.doppler_hz) ||
        cfg.doppler_hz >= cfg.sample_rate / 2)
        throw std::invalid_argument("mimodet: fading_channel Doppler must be in [0, fs/2)");
    if (cfg.slot_samples < 1)
        throw std::invalid_argument("mimodet: fading_channel slot_samples must be >= 1");
    if (cfg.n_sinusoids < 1)
        throw std::invalid_argument("mimodet: fading_channel needs >= 1 sinusoid");
    if (cfg.model == channel_model::awgn && cfg.n_rx < cfg.n_tx)
        throw std::invalid_argument("mimodet: the awgn channel (identity H) needs n_rx >= n_tx");

    const auto& tab = tap_table(cfg.model);
    double total = 0;
    for (double p : tab.power_db)
        total += std::pow(10.0, p / 10.0);
    for (size_t i = 0; i < tab.delay_ns.size(); ++i) {
        d_delay.push_back(static_cast<int>(std::lround(tab.delay_ns[i] * 1e-9 * cfg.sample_rate)));
        d_power.push_back(std::pow(10.0, tab.power_db[i] / 10.0) / total);
    }
    d_max_delay = *std::max_element(d_delay.begin(), d_delay.end());
    for (int p = 0; p < n_taps(); ++p) {
        const auto it = std::find(d_udelay.begin(), d_udelay.end(), d_delay[p]);
        if (it == d_udelay.end()) {
            d_udelay.push_back(d_delay[p]);
            d_groups.push_back({ p });
        } else {
            d_groups[it - d_udelay.begin()].push_back(p);
        }
    }

    const int n_gain = cfg.n_rx * cfg.n_tx * n_taps();
    if (cfg.model == channel_model::epa || cfg.model == channel_model::eva ||
        cfg.model == channel_model::etu) {
        const double fd = cfg.doppler_hz / cfg.sample_rate;
        d_interval = fd > 0 ? static_cast<int>(std::min<double>(
                                  k_max_interval, std::max(1.0, std::floor(1.0 / (400 * fd)))))
                            : k_max_interval;
        auto rng = make_rng(cfg.seed, 0, 0, k_salt_taps);
        d_proc.reserve(n_gain);
        for (int rt = 0; rt < cfg.n_rx * cfg.n_tx; ++rt)
            for (int p = 0; p < n_taps(); ++p)
                d_proc.emplace_back(fd, d_power[p], cfg.n_sinusoids, rng);
        for (const auto& pr : d_proc)
            for (double w : pr.omega())
                d_rot.push_back(std::polar(1.0, w * d_interval));
        d_ph.resize(d_rot.size());
    }
    d_cache[0].resize(n_gain);
    d_cache[1].resize(n_gain);
    d_tmp0.resize(n_gain);
    d_tmp1.resize(n_gain);
}

void fading_channel::draw_block(int64_t slot, cf* h) const
{
    auto rng = make_rng(d_cfg.seed, static_cast<uint64_t>(slot), 1, k_salt_block);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    for (int i = 0; i < d_cfg.n_rx * d_cfg.n_tx; ++i) {
        const double re = g(rng);
        const double im = g(rng);
        h[i] = cf(static_cast<float>(re), static_cast<float>(im));
    }
}

void fading_channel::gains(int64_t n, cf* h) const
{
    const int nrt = d_cfg.n_rx * d_cfg.n_tx;
    switch (d_cfg.model) {
    case channel_model::awgn:
        for (int r = 0; r < d_cfg.n_rx; ++r)
            for (int t = 0; t < d_cfg.n_tx; ++t)
                h[r * d_cfg.n_tx + t] = r == t ? cf(1, 0) : cf(0, 0);
        return;
    case channel_model::rayleigh:
        draw_block(n / d_cfg.slot_samples, h);
        return;
    default:
        for (int i = 0; i < nrt * n_taps(); ++i)
            h[i] = cf(d_proc[i].at(n));
    }
}

void fading_channel::freq_response(int64_t n, const std::vector<double>& f, cf* H)
{
    const int P = n_taps(), nt = d_cfg.n_tx, nr = d_cfg.n_rx;
    const size_t U = d_udelay.size();
    if (d_fr_f != f) {
        d_fr_f = f;
        d_fr_ph.resize(f.size() * U);
        for (size_t k = 0; k < f.size(); ++k)
            for (size_t u = 0; u < U; ++u) {
                // d_u integer: reduce f * d to [0, 1) before the exponential.
                double x = f[k] * d_udelay[u];
                x -= std::floor(x);
                d_fr_ph[k * U + u] = std::polar(1.0, -k_two_pi * x);
            }
    }
    d_fr_h.resize(static_cast<size_t>(nr) * nt * P);
    gains(n, d_fr_h.data());
    // Gains summed per distinct delay: hu[rt][u].
    std::vector<std::complex<double>> hu(static_cast<size_t>(nr) * nt * U, 0.0);
    for (int rt = 0; rt < nr * nt; ++rt)
        for (size_t u = 0; u < U; ++u)
            for (int p : d_groups[u])
                hu[rt * U + u] += std::complex<double>(d_fr_h[rt * P + p]);
    for (size_t k = 0; k < f.size(); ++k) {
        const std::complex<double>* ph = &d_fr_ph[k * U];
        for (int rt = 0; rt < nr * nt; ++rt) {
            const std::complex<double>* h = &hu[rt * U];
            double re = 0, im = 0;
            for (size_t u = 0; u < U; ++u) {
                re += h[u].real() * ph[u].real() - h[u].imag() * ph[u].imag();
                im += h[u].real() * ph[u].imag() + h[u].imag() * ph[u].real();
            }
            H[k * nr * nt + rt] = cf(static_cast<float>(re), static_cast<float>(im));
        }
    }
}

void fading_channel::phasors_at(int64_t j)
{
    if (d_ph_j >= 0 && j == d_ph_j + 1 && j % k_anchor != 0) {
        for (size_t i = 0; i < d_ph.size(); ++i)
            d_ph[i] *= d_rot[i];
        d_ph_j = j;
        return;
    }
    // Exact at the anchor, then the same rotations as the sequential path.
    const int64_t a = j - j % k_anchor;
    const double n = static_cast<double>(a * d_interval);
    const int M = d_cfg.n_sinusoids;
    for (size_t q = 0; q < d_proc.size(); ++q)
        for (int m = 0; m < M; ++m)
            d_ph[q * M + m] = std::polar(
                1.0, std::fmod(d_proc[q].omega()[m] * n, k_two_pi) + d_proc[q].phase()[m]);
    for (int64_t s = a; s < j; ++s)
        for (size_t i = 0; i < d_ph.size(); ++i)
            d_ph[i] *= d_rot[i];
    d_ph_j = j;
}

const std::vector<cf>& fading_channel::grid_gains(int64_t j)
{
    for (int c = 0; c < 2; ++c)
        if (d_cache_idx[c] == j)
            return d_cache[c];
    const int c = d_cache_next;
    d_cache_next ^= 1;
    phasors_at(j);
    const int M = d_cfg.n_sinusoids;
    for (size_t q = 0; q < d_proc.size(); ++q) {
        std::complex<double> acc = 0;
        for (int m = 0; m < M; ++m)
            acc += d_ph[q * M + m];
        d_cache[c][q] = cf(acc * d_proc[q].amp());
    }
    d_cache_idx[c] = j;
    return d_cache[c];
}

void fading_channel::filter(int64_t n0, int len, const cf* const* x, cf* const* y)
{
    const int nt = d_cfg.n_tx, nr = d_cfg.n_rx, P = n_taps();
    const int n_gain = nr * nt * P;
    for (int r = 0; r < nr; ++r)
        std::fill(y[r], y[r] + len, cf(0, 0));

    const bool sos = !d_proc.empty();
    int i = 0;
    while (i < len) {
        const int64_t n = n0 + i;
        int seg_end;
        int off = 0;
        bool ramp = false;
        if (d_cfg.model == channel_model::awgn) {
            seg_end = len;
            gains(n, d_tmp0.data());
        } else if (d_cfg.model == channel_model::rayleigh) {
            const int64_t s = n / d_cfg.slot_samples;
            seg_end = static_cast<int>(
                std::min<int64_t>(len, (s + 1) * d_cfg.slot_samples - n0));
            gains(n, d_tmp0.data());
        } else {
            // Linear interpolation between the grid points j K and (j + 1) K.
            const int64_t K = d_interval;
            const int64_t j = n / K;
            seg_end = static_cast<int>(std::min<int64_t>(len, (j + 1) * K - n0));
            d_tmp0 = grid_gains(j); // copied: the next call may reuse its cache entry
            const std::vector<cf>& b = grid_gains(j + 1);
            // Gains a + slope * (n - j K): the same floats whatever the block sizes.
            off = static_cast<int>(n - j * K);
            for (int g = 0; g < n_gain; ++g)
                d_tmp1[g] = (b[g] - d_tmp0[g]) / static_cast<float>(K); // slope per sample
            ramp = sos;
        }
        const int m_len = seg_end - i;
        // Taps that share a delay (rounding) are combined first. Complex products are
        // written out: std::complex<float> * would call __mulsc3 (NaN/Inf recovery).
        for (int r = 0; r < nr; ++r) {
            float* yp = reinterpret_cast<float*>(y[r] + i);
            for (int t = 0; t < nt; ++t) {
                for (size_t u = 0; u < d_groups.size(); ++u) {
                    cf c0(0, 0), sl(0, 0);
                    for (int p : d_groups[u]) {
                        const int g = (r * nt + t) * P + p;
                        c0 += d_tmp0[g];
                        if (ramp)
                            sl += d_tmp1[g];
                    }
                    const float* xp = reinterpret_cast<const float*>(x[t] + i - d_udelay[u]);
                    if (ramp) {
                        const float cr = c0.real(), ci = c0.imag();
                        const float sr = sl.real(), si = sl.imag();
                        for (int m = 0; m < m_len; ++m) {
                            const float fm = static_cast<float>(off + m);
                            const float gr_ = cr + sr * fm, gi = ci + si * fm;
                            const float xr = xp[2 * m], xi = xp[2 * m + 1];
                            yp[2 * m] += gr_ * xr - gi * xi;
                            yp[2 * m + 1] += gr_ * xi + gi * xr;
                        }
                    } else {
                        if (c0 == cf(0, 0))
                            continue;
                        const float cr = c0.real(), ci = c0.imag();
                        for (int m = 0; m < m_len; ++m) {
                            const float xr = xp[2 * m], xi = xp[2 * m + 1];
                            yp[2 * m] += cr * xr - ci * xi;
                            yp[2 * m + 1] += cr * xi + ci * xr;
                        }
                    }
                }
            }
        }
        i = seg_end;
    }
}

// ---------------------------------------------------------------------------------------

uint64_t gaussian_noise::xoshiro256::next()
{
    auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

gaussian_noise::gaussian_noise(uint64_t seed, int n_streams) : d_rng(n_streams)
{
    for (int s = 0; s < n_streams; ++s) {
        auto seeder = make_rng(seed, static_cast<uint64_t>(s), 2, k_salt_noise);
        for (auto& w : d_rng[s].s)
            w = seeder();
        if ((d_rng[s].s[0] | d_rng[s].s[1] | d_rng[s].s[2] | d_rng[s].s[3]) == 0)
            d_rng[s].s[0] = 1; // the all-zero state is a fixed point
    }
}

void gaussian_noise::add(int s, cf* x, int len, double var)
{
    // Box-Muller: r = sqrt(-var ln u1) (u1 in (0, 1]), angle 2 pi u2: r e^{j angle} is
    // CN(0, var).
    auto& g = d_rng[s];
    constexpr double k_2m53 = 1.0 / 9007199254740992.0; // 2^-53
    constexpr float k_2m32 = 1.0f / 4294967296.0f;      // 2^-32
    for (int i = 0; i < len; ++i) {
        const double u1 = static_cast<double>((g.next() >> 11) + 1) * k_2m53;
        const float u2 = static_cast<float>(g.next() >> 32) * k_2m32;
        const float r = static_cast<float>(std::sqrt(-var * std::log(u1)));
        const float a = static_cast<float>(k_two_pi) * u2;
        x[i] += cf(r * std::cos(a), r * std::sin(a));
    }
}

uint64_t random_seed()
{
    std::random_device rd;
    uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    return s == 0 ? 1 : s;
}

} // namespace core
} // namespace mimodet
} // namespace gr
