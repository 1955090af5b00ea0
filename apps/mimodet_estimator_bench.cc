/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Time per slot of the channel estimation core (the channel_estimator block's work per
// item, without the scheduler) for bandwidths, antenna configurations and thread counts.
//
// Slots: a random EPA-like channel per slot (the 36.101 EPA delays, Rayleigh taps), CRS
// and QPSK data on every port, AWGN at --snr; --slots distinct slots (default 40, two
// frames, as the flowgraph benchmark replays) are generated once and cycled. Per
// configuration the first pass over them is reported apart ("first pass": it designs the
// Wiener filters the slots need, each cached afterwards), then the slots are repeated
// for --seconds and each estimate() call is timed (steady_clock): mean, median, p90, p99.
// With --period-us P the calls start every P us, the thread sleeping in between, as the
// channel_estimator block idles between slots in a real-time flowgraph (500: 2000
// slots/s); the pool's workers then sleep between calls too, so their wake-up is timed.
// The H and noise_var of every thread count are checked against one thread's, bit for
// bit.
// --gpu 1 adds a row per configuration for the GPU version (backend cuda of the block:
// cuda/phy/channel_estimation_cuda.cu), checked against the first thread count's results
// within float rounding (its largest relative difference in H is printed).

#include "bench_cli.h"
#include "detect/backend.h"
#include "phy/channel_estimation.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using clk = std::chrono::steady_clock;

namespace {

using bench_cli::percentile;

struct options {
    std::vector<double> bandwidths = { 1.4, 5, 20 };
    std::vector<std::pair<int, int>> configs = { { 2, 2 }, { 4, 4 } }; // n_tx, n_rx
    std::vector<int> threads; // empty: 1, 2, 4, .. hw
    double snr_db = 20;
    int slots = 40;
    double seconds = 1;
    double period_us = 0; // 0: back to back
    int gpu = 0;          // 1: a row for the GPU version too
    std::string csv;
};

bool parse(int argc, char** argv, options& o)
{
    bench_cli::parser p("mimodet_estimator_bench",
                        "Time per slot of the channel estimator core.");
    bench_cli::stage_options(p, o.bandwidths, o.configs)
        .numbers("--threads",
                 o.threads,
                 "LIST",
                 "threads per slot (default 1, 2, 4, ... up to the CPU threads,\n"
                 "and the CPU threads)",
                 1,
                 256)
        .number("--snr", o.snr_db, "DB", "SNR n_tx / noise_var", -20, 100)
        .number("--slots", o.slots, "N", "distinct random slots, cycled", 1, 2000)
        .number("--seconds",
                o.seconds,
                "S",
                "timed per configuration and thread count",
                1e-3,
                600)
        .number("--period-us",
                o.period_us,
                "P",
                "start a call every P us, sleeping in between (0:\n"
                "back to back; 500 is a slot's time at 2000 slots/s)",
                0,
                1e6)
        .number("--gpu", o.gpu, "0|1", "also time the GPU version", 0, 1)
        .text("--csv", o.csv, "FILE", "also write the rows as CSV");
    if (!p.parse(argc, argv))
        return false;
    for (double b : o.bandwidths)
        lte_numerology::from_bandwidth(b); // throws for anything else
    if (o.threads.empty()) {
        const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
        for (int t = 1; t < hw; t *= 2)
            o.threads.push_back(t);
        o.threads.push_back(hw);
    }
    return true;
}

//! Received grids [slot][r][7 * n_sc] and slot numbers.
struct slot_set {
    std::vector<int> ns;
    std::vector<std::vector<std::vector<cf>>> y;
};

slot_set make_slots(const lte_numerology& num, int n_tx, int n_rx, int n, double snr_db)
{
    const int cell_id = 0;
    lte_grid grid(num, n_tx, cell_id);
    // 3GPP TS 36.101 B.2 EPA delays (ns) and powers (dB).
    const double delay_ns[] = { 0, 30, 70, 90, 110, 190, 410 };
    const double power_db[] = { 0, -1, -2, -3, -8, -17.2, -20.8 };
    double total = 0;
    for (double p : power_db)
        total += std::pow(10.0, p / 10);
    std::mt19937 rng(2026);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::uniform_int_distribution<int> bit(0, 1);
    const double nv = n_tx * std::pow(10.0, -snr_db / 10);
    const int n_sc = num.n_sc;
    const float q = static_cast<float>(std::sqrt(0.5));
    slot_set s;
    std::vector<std::complex<double>> H(static_cast<size_t>(n_sc) * n_rx * n_tx);
    for (int i = 0; i < n; ++i) {
        const int ns = i % lte_numerology::slots_per_frame;
        for (int r = 0; r < n_rx; ++r)
            for (int t = 0; t < n_tx; ++t) {
                std::complex<double> a[7];
                for (int d = 0; d < 7; ++d)
                    a[d] = std::complex<double>(g(rng), g(rng)) *
                           std::sqrt(std::pow(10.0, power_db[d] / 10) / total);
                for (int k = 0; k < n_sc; ++k) {
                    const double f =
                        15e3 * (k < n_sc / 2 ? k - n_sc / 2 : k - n_sc / 2 + 1);
                    std::complex<double> h = 0;
                    for (int d = 0; d < 7; ++d)
                        h += a[d] * std::polar(1.0, -2 * M_PI * f * delay_ns[d] * 1e-9);
                    H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] = h;
                }
            }
        std::vector<std::vector<cf>> x(n_tx, std::vector<cf>(7 * n_sc, cf(0, 0)));
        for (int t = 0; t < n_tx; ++t) {
            for (int re : grid.data_elements(ns))
                x[t][re] = cf(bit(rng) ? q : -q, bit(rng) ? q : -q);
            for (int re : grid.crs_elements(ns, t))
                x[t][re] = grid.crs_value(ns, t, re / n_sc, re % n_sc);
        }
        std::vector<std::vector<cf>> y(n_rx, std::vector<cf>(7 * n_sc));
        const double sd = std::sqrt(nv);
        for (int r = 0; r < n_rx; ++r)
            for (int l = 0; l < 7; ++l)
                for (int k = 0; k < n_sc; ++k) {
                    std::complex<double> v(sd * g(rng), sd * g(rng));
                    for (int t = 0; t < n_tx; ++t)
                        v += H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] *
                             std::complex<double>(x[t][l * n_sc + k]);
                    y[r][l * n_sc + k] = cf(v);
                }
        s.ns.push_back(ns);
        s.y.push_back(std::move(y));
    }
    return s;
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_estimator_bench",
                                                    [&] { return parse(argc, argv, o); }))
        return *status;
    std::ofstream csv;
    if (!o.csv.empty()) {
        csv.open(o.csv);
        csv << "bandwidth_mhz,n_tx,n_rx,threads,first_pass_ms,mean_ms,p50_ms,p99_ms,"
               "slots_per_s,same_as_1_thread,p90_ms,period_us,backend,max_rel_diff\n";
    }
    std::printf("CPU threads: %u; SNR %.1f dB, %d distinct slots, %.1f s per row, "
                "a call every %.0f us (0: back to back)\n",
                std::thread::hardware_concurrency(),
                o.snr_db,
                o.slots,
                o.seconds,
                o.period_us);
    if (o.gpu && cuda_device_count() == 0) {
        std::fprintf(stderr, "mimodet_estimator_bench: --gpu 1 needs a CUDA device\n");
        return 2;
    }
    std::printf("%-8s %-6s %7s %14s %9s %9s %9s %9s %10s %s\n",
                "MHz",
                "config",
                "threads",
                "first pass ms",
                "mean ms",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "slots/s",
                "H, noise_var vs 1 thread");
    for (double mhz : o.bandwidths)
        for (const auto& c : o.configs) {
            const auto num = lte_numerology::from_bandwidth(mhz);
            const slot_set s = make_slots(num, c.first, c.second, o.slots, o.snr_db);
            std::vector<std::vector<cf>> H_first; // per slot, the first thread count's H
            std::vector<float> nv_first;
            // The thread counts, then (-1) the GPU version.
            std::vector<int> rows = o.threads;
            if (o.gpu)
                rows.push_back(-1);
            for (int threads : rows) {
                const bool on_gpu = threads < 0;
                core::channel_estimation est(
                    num, c.first, c.second, 0, 4.7, on_gpu ? 1 : threads);
                std::unique_ptr<core::gpu_channel_estimation> gpu;
                if (on_gpu)
                    gpu = core::make_cuda_channel_estimation(est);
                std::vector<cf> H(est.h_size());
                std::vector<const cf*> grids(c.second);
                double max_rel = 0; // GPU row: largest |H - H_first| / max |H_first|
                auto one = [&](size_t i) {
                    for (int r = 0; r < c.second; ++r)
                        grids[r] = s.y[i][r].data();
                    return gpu ? gpu->estimate(s.ns[i], grids.data(), H.data())
                               : est.estimate(s.ns[i], grids.data(), H.data());
                };
                // First pass: designs and caches the Wiener filters; also the check.
                bool same = true;
                const auto t0 = clk::now();
                for (size_t i = 0; i < s.ns.size(); ++i) {
                    const float nv = one(i);
                    if (H_first.size() < s.ns.size()) {
                        H_first.push_back(H);
                        nv_first.push_back(nv);
                    } else if (on_gpu) {
                        float scale = 0;
                        for (const cf& v : H_first[i])
                            scale = std::max(scale, std::abs(v));
                        for (size_t j = 0; j < H.size(); ++j)
                            max_rel = std::max(
                                max_rel, double(std::abs(H[j] - H_first[i][j])) / scale);
                        same = same && std::abs(nv - nv_first[i]) <= 1e-6 * nv_first[i];
                    } else {
                        same = same &&
                               std::memcmp(H.data(),
                                           H_first[i].data(),
                                           H.size() * sizeof(cf)) == 0 &&
                               std::memcmp(&nv, &nv_first[i], sizeof(float)) == 0;
                    }
                }
                const double first_ms =
                    std::chrono::duration<double, std::milli>(clk::now() - t0).count() /
                    s.ns.size();
                std::vector<double> ms;
                const auto start = clk::now();
                const auto end = start + std::chrono::duration<double>(o.seconds);
                const auto period = std::chrono::duration_cast<clk::duration>(
                    std::chrono::duration<double, std::micro>(o.period_us));
                auto next = start;
                for (size_t i = 0; clk::now() < end || ms.size() < s.ns.size();
                     i = (i + 1) % s.ns.size()) {
                    if (o.period_us > 0) {
                        next += period;
                        std::this_thread::sleep_until(next);
                    }
                    const auto a = clk::now();
                    one(i);
                    ms.push_back(std::chrono::duration<double, std::milli>(clk::now() - a)
                                     .count());
                }
                double mean = 0;
                for (double v : ms)
                    mean += v;
                mean /= ms.size();
                const bool reference = threads == o.threads.front();
                char check[64];
                if (on_gpu)
                    std::snprintf(check,
                                  sizeof check,
                                  "GPU: H within %.1e, noise_var %s",
                                  max_rel,
                                  same ? "within 1e-6" : "DIFFERENT");
                else
                    std::snprintf(check,
                                  sizeof check,
                                  "%s",
                                  reference ? "(reference)"
                                  : same    ? "identical"
                                            : "DIFFERENT");
                const double p50 = percentile(ms, 0.5), p90 = percentile(ms, 0.9),
                             p99 = percentile(ms, 0.99);
                const std::string label = on_gpu ? "cuda" : std::to_string(threads);
                std::printf(
                    "%-8.1f %dx%-4d %7s %14.3f %9.4f %9.4f %9.4f %9.4f %10.0f %s\n",
                    mhz,
                    c.first,
                    c.second,
                    label.c_str(),
                    first_ms,
                    mean,
                    p50,
                    p90,
                    p99,
                    1e3 / mean,
                    check);
                std::fflush(stdout);
                if (csv)
                    csv << mhz << ',' << c.first << ',' << c.second << ','
                        << (on_gpu ? 0 : threads) << ',' << first_ms << ',' << mean << ','
                        << p50 << ',' << p99 << ',' << 1e3 / mean << ','
                        << (reference ? "reference"
                            : same    ? "yes"
                                      : "no")
                        << ',' << p90 << ',' << o.period_us << ','
                        << (on_gpu ? "cuda" : "cpu") << ',' << max_rel << '\n';
                // The GPU's H may differ by float rounding (1e-5; a neighbouring filter:
                // up to 5e-2 of max |H|, see qa_gpu_channel_estimation).
                if (!same || max_rel > 5e-2)
                    return 1;
            }
        }
    return 0;
}
