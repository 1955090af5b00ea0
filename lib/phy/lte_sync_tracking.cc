/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The fine timing (pss_fraction, frac_interp) and slot_sync's tracking once locked: the
// PSS search at every slot 0/10, the sample clock through the PSS positions and the
// switch to resampling.

#include "phy/lte_sync.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

namespace {
//! Spread of the PSS timing on a fading channel, seconds (timing_sigma).
constexpr double k_timing_floor_s = 15e-9;
} // namespace

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
// slot_sync: tracking

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

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
