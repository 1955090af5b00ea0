/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "soak.h"
#include "machine.h"
#include <algorithm>
#include <cstdio>
#include <thread>
#ifdef MIMODET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fg_bench {

double gpu_used_bytes(int device)
{
#ifdef MIMODET_HAVE_CUDA
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return static_cast<double>(total_b - free_b);
#else
    (void)device;
    return -1;
#endif
}

namespace {

//! Memory that settles during the first minute (buffers, pools, the CUDA context) is not
//! a leak: flatness is judged on the samples after it.
constexpr double k_settle_s = 60;
//! Growth below this is page-level noise (allocator arenas, stacks), not a leak.
constexpr double k_flat_mib = 2;
constexpr double k_mib = 1024.0 * 1024.0;

struct sample {
    double t_s, rss, gpu;
};

//! "rss max - min 0.4 MiB (flat)" over the samples from `first`, or why not.
void print_spread(const char* what, const std::vector<sample>& s, size_t first, bool gpu)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = first; i < s.size(); ++i) {
        const double v = gpu ? s[i].gpu : s[i].rss;
        if (v < 0)
            continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (!(hi >= lo)) {
        std::printf(" %s -;", what);
        return;
    }
    const double d = (hi - lo) / k_mib;
    std::printf(
        " %s max - min %.1f MiB (%s);", what, d, d <= k_flat_mib ? "flat" : "grew");
}

} // namespace

soak_result soak_window(slot_meter& meter, double seconds, double every, int gpu_device)
{
    soak_result res;
    std::vector<sample> samples;
    std::vector<double> lat;
    lat.reserve(1 << 16);
    const auto c0 = meter.counters();
    const auto t0 = steady::now();
    double next = every;
    for (;;) {
        const double at = std::min(next, seconds);
        std::this_thread::sleep_until(t0 + std::chrono::duration_cast<steady::duration>(
                                               std::chrono::duration<double>(at)));
        meter.drain_latencies(lat);
        const auto c = meter.counters();
        const double t = std::chrono::duration<double>(steady::now() - t0).count();
        res.all.add(lat);
        const double p50 = percentile(lat, 0.50), p99 = percentile(lat, 0.99);
        res.window_p99.push_back(lat.empty() ? INFINITY : p99);
        const sample s{ t,
                        resident_bytes(),
                        gpu_device >= 0 ? gpu_used_bytes(gpu_device) : -1.0 };
        samples.push_back(s);
        char gpu_s[32] = "-";
        if (s.gpu >= 0)
            std::snprintf(gpu_s, sizeof gpu_s, "%.1f MiB", s.gpu / k_mib);
        std::printf("soak %7.1f s slots %llu lost %llu rss %.1f MiB gpu %s window "
                    "slots %zu p50 %.3f p99 %.3f ms\n",
                    t,
                    static_cast<unsigned long long>(c.slots - c0.slots),
                    static_cast<unsigned long long>(c.lost - c0.lost),
                    s.rss / k_mib,
                    gpu_s,
                    lat.size(),
                    p50,
                    p99);
        std::fflush(stdout);
        if (at >= seconds)
            break;
        next += every;
    }
    // Flatness after the first minute; a shorter run is judged from its second sample.
    size_t first = 0;
    while (first < samples.size() && samples[first].t_s <= k_settle_s)
        ++first;
    const bool settled = samples.size() - first >= 2;
    if (!settled)
        first = std::min<size_t>(1, samples.size());
    std::printf("soak summary: %zu samples; after %s:",
                samples.size(),
                settled ? "the first 60 s" : "the first sample (run shorter than 60 s)");
    print_spread("rss", samples, first, false);
    print_spread("gpu", samples, first, true);
    const auto mm = std::minmax_element(res.window_p99.begin(), res.window_p99.end());
    std::printf(" window p99 min %.3f max %.3f ms\n",
                res.window_p99.empty() ? NAN : *mm.first,
                res.window_p99.empty() ? NAN : *mm.second);
    std::fflush(stdout);
    return res;
}

} // namespace fg_bench
