/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "latency_stats.h"
#include <algorithm>
#include <cmath>

namespace fg_bench {

double percentile(std::vector<double>& v, double p)
{
    if (v.empty())
        return NAN;
    // Nearest rank: the smallest value with at least a fraction p of the values <= it.
    const double rank = std::ceil(p * static_cast<double>(v.size()));
    const size_t i =
        static_cast<size_t>(std::max(1.0, std::min<double>(rank, v.size()))) - 1;
    std::nth_element(v.begin(), v.begin() + i, v.end());
    return v[i];
}

//! p99 latency (ms) of each consecutive sub-window of `sub_s` seconds of the recording
//! (from `start_ns`, `span_ns` long), by exit time; a remainder shorter than a sub-window
//! joins the last one. So one long run also gives the statistic of several short windows.
std::vector<double> sub_window_p99s(const std::vector<slot_meter::slot_times>& slots,
                                    int64_t start_ns,
                                    int64_t span_ns,
                                    double sub_s)
{
    // The small allowance keeps a span of exactly k sub-windows (plus the recording's
    // overhead) at k, not k - 1.
    const size_t n =
        std::max<size_t>(1, static_cast<size_t>(span_ns * 1e-9 / sub_s + 0.01));
    std::vector<std::vector<double>> lat(n);
    for (const auto& s : slots) {
        const double t_s = std::max<int64_t>(0, s.exit_ns - start_ns) * 1e-9;
        lat[std::min(n - 1, static_cast<size_t>(t_s / sub_s))].push_back(
            (s.exit_ns - s.entry_ns) * 1e-6);
    }
    std::vector<double> p99s;
    // A sub-window that no slot left counts as missed.
    for (auto& l : lat)
        p99s.push_back(l.empty() ? INFINITY : percentile(l, 0.99));
    return p99s;
}

namespace {
constexpr int k_linear_bins = 10000; // 1 us each, to 10 ms
constexpr double k_linear_ms = 10;
constexpr double k_ratio = 1.001; // above: each bin 0.1 % wider than the one before
const int k_log_bins = static_cast<int>(std::ceil(std::log(1e5) / std::log(k_ratio)));
} // namespace

latency_histogram::latency_histogram() : d_bins(k_linear_bins + k_log_bins + 1, 0) {}

int latency_histogram::bin(double ms)
{
    if (!(ms >= 0))
        return 0;
    if (ms < k_linear_ms)
        return static_cast<int>(ms * 1e3);
    const int b = static_cast<int>(std::log(ms / k_linear_ms) / std::log(k_ratio));
    return k_linear_bins + std::min(b, k_log_bins); // the last bin: all beyond
}

double latency_histogram::upper_edge(int b)
{
    if (b < k_linear_bins)
        return (b + 1) * 1e-3;
    return k_linear_ms * std::pow(k_ratio, b - k_linear_bins + 1);
}

void latency_histogram::add(double ms)
{
    d_bins[bin(ms)]++;
    d_max = d_n ? std::max(d_max, ms) : ms;
    ++d_n;
}

double latency_histogram::percentile(double p) const
{
    if (d_n == 0)
        return NAN;
    const uint64_t rank = std::max<uint64_t>(
        1, std::min<uint64_t>(d_n, static_cast<uint64_t>(std::ceil(p * d_n))));
    uint64_t seen = 0;
    for (size_t b = 0; b < d_bins.size(); ++b) {
        seen += d_bins[b];
        if (seen >= rank)
            return std::min(d_max, upper_edge(static_cast<int>(b)));
    }
    return d_max;
}

uint64_t latency_histogram::above(double ms) const
{
    uint64_t n = 0;
    for (size_t b = static_cast<size_t>(bin(ms)); b < d_bins.size(); ++b)
        n += d_bins[b];
    return n;
}

} // namespace fg_bench
