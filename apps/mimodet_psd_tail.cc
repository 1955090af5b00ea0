/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The exact PSD's work tail and its node budget (detector_config::psd_node_budget):
// per configuration and SNR, the distribution of path metrics per vector of the
// unbounded exact search on i.i.d. Rayleigh vectors (how often realistic inputs reach
// the default budget), and the CPU time one vector takes when the budget ends its
// search: hostile vectors (y scaled by 30, a gain step or an interferer burst) detected
// one at a time on one thread.

#include "bench_cli.h"
#include "detect/psd/psd_params.h"
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using gr::mimodet::detector;
using gr::mimodet::detector_config;
using gr::mimodet::modulation;
using gr::mimodet::vector_stats;
using clk = std::chrono::steady_clock;

struct point {
    int n_tx;
    modulation mod;
    std::string mod_name;
    double snr;
};

struct options {
    long vectors = 1000000;
    long hostile = 2000;
    int threads = 0;
    std::string params = "cpu";
    std::vector<point> points;
};

//! The options; false after --help.
bool parse(int argc, char** argv, options& o)
{
    std::string points =
        "2:qpsk:0,2:16qam:5,2:64qam:10,4:qpsk:0,4:16qam:5,4:64qam:10,4:64qam:20";
    bench_cli::parser p("mimodet_psd_tail",
                        "The exact PSD's path metrics per vector (the tail the node budget\n"
                        "cuts) and the CPU time of a hostile vector the budget ends.");
    p.text("--points", points, "LIST", "NTX:MOD:SNR items")
        .number("--vectors", o.vectors, "N", "vectors per point for the tail", 1, 1e9)
        .number("--hostile",
                o.hostile,
                "N",
                "y x 30 vectors per point timed one at a time",
                0,
                1e7)
        .number(
            "--threads", o.threads, "N", "CPU threads of the tail run (0: all)", 0, 1024)
        .text("--params",
              o.params,
              "SET",
              "cpu: the default of both backends (the depth-first set on a\n"
              "sorted QR); h100-alg3: Algorithm 3's H100 set; table5: the\n"
              "paper's preset; both on the plain QR. The counts of both backends\n"
              "are those of the CPU search with the same set",
              { "cpu", "h100-alg3", "table5" });
    if (!p.parse(argc, argv))
        return false;
    for (const auto& item : bench_cli::split(points)) {
        const auto p1 = item.find(':'), p2 = item.rfind(':');
        if (p1 == std::string::npos || p2 == p1)
            throw std::invalid_argument("--points: NTX:MOD:SNR, got " + item);
        point pt;
        pt.n_tx = static_cast<int>(bench_cli::to_int("--points", item.substr(0, p1)));
        pt.mod_name = item.substr(p1 + 1, p2 - p1 - 1);
        pt.mod = gr::mimodet::parse_modulation(pt.mod_name);
        pt.snr = bench_cli::to_double("--points", item.substr(p2 + 1));
        o.points.push_back(pt);
    }
    return true;
}

detector_config config(const options& o, const point& p, int64_t budget, int threads)
{
    detector_config cfg;
    cfg.algorithm = "psd";
    cfg.n_tx = cfg.n_rx = p.n_tx;
    cfg.mod = p.mod;
    cfg.threads = threads;
    cfg.psd_node_budget = budget;
    const int omega = gr::mimodet::constellation::get(p.mod).pam_order();
    if (o.params != "cpu") {
        const auto params = o.params == "h100-alg3"
                                ? gr::mimodet::core::psd_gpu_preset(p.n_tx, omega)
                                : gr::mimodet::core::psd_preset(p.n_tx, omega);
        cfg.psd_lvl = params.lvl;
        cfg.psd_exp = params.exp;
    }
    return cfg;
}

void run_point(const options& o, const point& p)
{
    const int omega = gr::mimodet::constellation::get(p.mod).pam_order();
    const uint32_t budget = gr::mimodet::core::psd_default_node_budget(p.n_tx, omega);

    // Tail of the unbounded exact search, in matrices of 7 vectors (a slot's subcarrier).
    const int n_sym = 7;
    const int n_mat = static_cast<int>((o.vectors + n_sym - 1) / n_sym);
    const auto b = gr::mimodet::make_batch(p.n_tx, p.n_tx, p.mod, n_mat, n_sym, p.snr, p.snr, 11);
    const size_t n_vec = static_cast<size_t>(n_mat) * n_sym;
    auto exact = detector::make(config(o, p, 0, o.threads));
    std::vector<uint8_t> bits(n_vec * exact->bits_per_vector());
    std::vector<vector_stats> st(n_vec);
    const auto t0 = clk::now();
    exact->detect_bits(b.H.data(), b.y.data(), n_mat, n_sym, b.noise_var.data(), bits.data(), st.data());
    const double secs = std::chrono::duration<double>(clk::now() - t0).count();
    std::vector<double> ev(n_vec);
    double sum = 0;
    size_t reach = 0;
    for (size_t v = 0; v < n_vec; ++v) {
        ev[v] = st[v].evaluated;
        sum += ev[v];
        reach += st[v].evaluated >= budget ? 1 : 0;
    }
    std::sort(ev.begin(), ev.end());
    auto q = [&](double f) { return ev[std::min(n_vec - 1, static_cast<size_t>(f * (n_vec - 1) + 0.5))]; };

    // Hostile vectors: y x 30, one per call on one thread, with the default budget.
    double worst_ms = 0, sum_ms = 0;
    size_t capped = 0;
    if (o.hostile > 0) {
        auto bounded = detector::make(config(o, p, -1, 1));
        const auto h = gr::mimodet::make_batch(p.n_tx, p.n_tx, p.mod, static_cast<int>(o.hostile), 1, p.snr, p.snr, 13);
        std::vector<uint8_t> hb(bounded->bits_per_vector());
        for (long v = 0; v < o.hostile; ++v) {
            std::vector<std::complex<float>> y(h.y.begin() + v * p.n_tx, h.y.begin() + (v + 1) * p.n_tx);
            for (auto& x : y)
                x *= 30.0f;
            vector_stats s;
            const auto h0 = clk::now();
            bounded->detect_bits(h.H.data() + v * p.n_tx * p.n_tx, y.data(), 1, 1, h.noise_var.data() + v, hb.data(), &s);
            const double ms = std::chrono::duration<double, std::milli>(clk::now() - h0).count();
            worst_ms = std::max(worst_ms, ms);
            sum_ms += ms;
            capped += s.truncated ? 1 : 0;
        }
    }
    std::printf("%dx%d,%s,%g,%zu,%.1f,%.0f,%.0f,%.0f,%.0f,%u,%zu,%.2e,%.3f,%ld,%zu,%.3f,%.3f\n",
                p.n_tx, p.n_tx, p.mod_name.c_str(), p.snr, n_vec, sum / n_vec, q(0.99), q(0.9999),
                q(0.99999), ev.back(), budget, reach, double(reach) / n_vec, secs,
                o.hostile, capped, o.hostile ? sum_ms / o.hostile : 0.0, worst_ms);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_psd_tail", [&] { return parse(argc, argv, o); }))
        return *status;
    try {
        std::printf("config,mod,snr_db,vectors,metrics_mean,p99,p99.99,p99.999,max,default_budget,"
                    "reach_budget,reach_fraction,tail_seconds,hostile,hostile_capped,"
                    "hostile_ms_mean,hostile_ms_max\n");
        for (const auto& p : o.points)
            run_point(o, p);
    } catch (const std::exception& e) {
        std::cerr << "mimodet_psd_tail: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
