/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_bench: throughput (vectors/s, Mbit/s), BER and tree complexity of the
// detectors on random i.i.d. Rayleigh vectors, per detector, configuration, SNR and
// thread count. One channel matrix is shared by --nsym symbols (an OFDM slot: 7).
// Prints a table and, with --csv, writes one CSV row per measurement.
//
// With --subcarriers, batches are LTE slots: Nc channel matrices (one per subcarrier)
// times 7 OFDM symbols, --slots slots per call. GPU detectors then also report the
// kernel-only throughput (the kernels re-run on data already on the device), the latency
// of one-slot calls (p50, p99, max, host transfers included) and how many LTE 20 MHz 4x4
// carriers (1200 x 14000 = 16.8 M vectors/s) the measured rate with transfers sustains.

#include "bench_cli.h"
#include "detect/psd/psd_params.h"
#include "util/host_memory.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

struct options {
    std::vector<std::string> detectors = { "zf", "mmse", "fsd", "sfsd", "mtt", "psd" };
    std::vector<int> n_tx = { 4 };
    int n_rx = 0; // 0: = n_tx
    std::vector<std::string> mods = { "16qam", "64qam" };
    std::vector<double> snrs = { 10, 20 };
    std::vector<int> threads = { 1 };
    std::vector<std::string> backends = { "cpu" };
    int device = 0;                     //!< CUDA device of backend cuda / auto
    std::string psd_preset = "default"; // default, se, table5, h100-alg3
    int psd_start_rows = -1;            //!< detector_config::psd_start_rows
    double psd_radius = -1.0;           //!< detector_config::psd_radius
    int n_sym = 7;
    double min_seconds = 1.0;
    int pool_matrices = 4096;
    int max_ml_matrices = 256;
    std::string csv;
    uint64_t seed = 1;
    std::vector<int> subcarriers; //!< slot mode when non-empty
    int slots = 20;
    int latency_calls = 200;
    std::vector<double> deadlines = { 0 }; //!< psd budgets per call (us); 0: exact
    int pinned = 0; //!< 1: the timed calls' buffers in host_alloc memory
};

// LTE 20 MHz: 1200 subcarriers x 14 symbols per 1 ms subframe.
constexpr double k_lte20_vectors_per_s = 1200.0 * 14000.0;

bool parse(int argc, char** argv, options& o)
{
    bench_cli::parser p("mimodet_bench",
                        "Detector throughput on random channel matrices.");
    const std::vector<std::string> algs = algorithms();
    p.words("--detectors",
            o.detectors,
            "LIST",
            "comma list of " + bench_cli::join(algs, ","),
            algs)
        .numbers("--ntx", o.n_tx, "LIST", "transmit antennas", 1, 8)
        .number("--nrx", o.n_rx, "N", "receive antennas (0: = n_tx)", 0, 16)
        .words("--mod", o.mods, "LIST", "qpsk,16qam,64qam", bench_cli::k_modulations)
        .numbers("--snr", o.snrs, "LIST", "SNR in dB", -20, 100)
        .numbers("--threads", o.threads, "LIST", "CPU threads", 1, 4096)
        .words("--backend",
               o.backends,
               "LIST",
               "cpu, cuda, auto; several compare them in one run",
               { "cpu", "cuda", "auto" })
        .text("--psd-preset",
              o.psd_preset,
              "P",
              "default (the depth-first set, run with the backend's own\n"
              "settings), se (the same set given by value: depth-first\n"
              "Schnorr-Euchner search on a sorted QR), table5 (the paper's\n"
              "Algorithm 3 with its Table 5 set, plain QR) or h100-alg3\n"
              "(Algorithm 3 with the set tuned on an H100)",
              { "default", "se", "table5", "h100-alg3" })
        .number("--psd-start-rows",
                o.psd_start_rows,
                "N",
                "psd's depth-first search: rows of its starting bound\n"
                "(detector_config::psd_start_rows; -1: the backend's default)",
                -1,
                8)
        .number("--psd-radius",
                o.psd_radius,
                "R",
                "psd's depth-first search: starting radius over n_rx noise_var\n"
                "(detector_config::psd_radius; -1: the backend's default, 0: none)",
                -1,
                1e6)
        .number("--nsym", o.n_sym, "N", "symbols sharing one channel matrix", 1, 1e6)
        .number("--seconds",
                o.min_seconds,
                "S",
                "minimum timed seconds per measurement",
                1e-3,
                3600)
        .number("--device", o.device, "N", "CUDA device of backend cuda or auto", 0, 63)
        .number("--pool",
                o.pool_matrices,
                "N",
                "random matrices generated per configuration",
                1,
                1e8)
        .numbers("--subcarriers",
                 o.subcarriers,
                 "LIST",
                 "slot mode: Nc subcarriers per slot (e.g.\n"
                 "150,300,600,900,1200), 7 symbols per slot",
                 1,
                 1e6)
        .number("--slots", o.slots, "N", "slots per call in slot mode", 1, 1e6)
        .number("--latency-calls",
                o.latency_calls,
                "N",
                "one-slot calls timed for the latency",
                1,
                1e8)
        .numbers("--deadline-us",
                 o.deadlines,
                 "LIST",
                 "psd search budgets per detect call in us (0:\n"
                 "exact); rows with a budget also give the fraction of truncated\n"
                 "vectors and the bit differences from the exact psd's decisions",
                 0,
                 1e9)
        .number("--pinned",
                o.pinned,
                "0|1",
                "1: the timed calls' inputs and outputs in page-locked memory\n"
                "(host_alloc), as the blocks hand them over: the GPU pipeline\n"
                "copies them without staging",
                0,
                1)
        .text("--csv", o.csv, "FILE", "write CSV rows to FILE")
        .number("--seed", o.seed, "N", "random seed", 0, 9e15);
    return p.parse(argc, argv);
}

struct result {
    size_t vectors = 0;
    double seconds = 0;
    size_t bit_errors = 0, bits = 0;
    size_t truncated = 0, exact_diffs = 0; //!< psd deadline: flags, bits != exact psd's
    double nodes_mean = 0, nodes_p99 = 0, nodes_max = 0, expanded_mean = 0;
    double kernel_seconds_per_batch = 0; //!< GPU: kernels only, whole pool per batch
    double lat_p50 = 0, lat_p99 = 0, lat_max = 0; //!< seconds per one-slot call
};

//! exact (may be empty): the exact psd's bits of the whole pool, to count the bits a
//! deadline changed.
result measure(detector& det,
               const rayleigh_batch& pool,
               double min_seconds,
               bool whole_pool,
               bool pinned,
               const std::vector<uint8_t>& exact = {})
{
    using clock = std::chrono::steady_clock;
    using core::host_vector;
    const int nb = det.bits_per_vector();
    const bool stats_wanted = det.config().algorithm == "psd";
    result r;
    // The buffers: the pool's own, or page-locked copies (--pinned).
    host_vector<cf> pinned_H, pinned_y;
    host_vector<float> pinned_nv;
    const size_t n_stats =
        stats_wanted ? static_cast<size_t>(pool.n_mat) * pool.n_sym : 0;
    host_vector<uint8_t> pinned_bits(pinned ? pool.bits.size() : 0);
    host_vector<vector_stats> pinned_stats(pinned ? n_stats : 0);
    std::vector<uint8_t> plain_bits(pinned ? 0 : pool.bits.size());
    std::vector<vector_stats> plain_stats(pinned ? 0 : n_stats);
    if (pinned) {
        pinned_H.assign(pool.H.begin(), pool.H.end());
        pinned_y.assign(pool.y.begin(), pool.y.end());
        pinned_nv.assign(pool.noise_var.begin(), pool.noise_var.end());
    }
    const cf* H = pinned ? pinned_H.data() : pool.H.data();
    const cf* y = pinned ? pinned_y.data() : pool.y.data();
    const float* noise_var = pinned ? pinned_nv.data() : pool.noise_var.data();
    uint8_t* out = pinned ? pinned_bits.data() : plain_bits.data();
    vector_stats* out_stats = pinned ? pinned_stats.data() : plain_stats.data();
    std::vector<uint32_t> nodes;
    // Warm-up call (thread start, first-touch of buffers), then grow the batch until a
    // call lasts long enough to time; repeat over the pool until min_seconds.
    size_t n_mat = whole_pool ? pool.n_mat : std::min<size_t>(8, pool.n_mat);
    det.detect_bits(H, y, n_mat, pool.n_sym, noise_var, out);
    size_t offset = 0;
    while (r.seconds < min_seconds) {
        if (offset + n_mat > static_cast<size_t>(pool.n_mat))
            offset = 0;
        const size_t h_off = offset * pool.n_rx * pool.n_tx;
        const size_t y_off = offset * pool.n_sym * pool.n_rx;
        const size_t b_off = offset * pool.n_sym * nb;
        const auto t0 = clock::now();
        det.detect_bits(H + h_off,
                        y + y_off,
                        n_mat,
                        pool.n_sym,
                        noise_var + offset,
                        out + b_off,
                        stats_wanted ? out_stats + offset * pool.n_sym : nullptr);
        const double dt = std::chrono::duration<double>(clock::now() - t0).count();
        r.seconds += dt;
        r.vectors += n_mat * pool.n_sym;
        for (size_t i = 0; i < n_mat * pool.n_sym * nb; ++i)
            r.bit_errors += out[b_off + i] != pool.bits[b_off + i];
        if (!exact.empty())
            for (size_t i = 0; i < n_mat * pool.n_sym * nb; ++i)
                r.exact_diffs += out[b_off + i] != exact[b_off + i];
        r.bits += n_mat * pool.n_sym * nb;
        if (stats_wanted)
            for (size_t i = 0; i < n_mat * pool.n_sym; ++i) {
                nodes.push_back(out_stats[offset * pool.n_sym + i].evaluated);
                r.expanded_mean += out_stats[offset * pool.n_sym + i].expanded;
                r.truncated += out_stats[offset * pool.n_sym + i].truncated;
            }
        offset += n_mat;
        if (dt < 0.05 && n_mat * 2 <= static_cast<size_t>(pool.n_mat))
            n_mat *= 2;
    }
    if (det.config().backend == backend_kind::cuda) {
        // The last call must be the whole pool for the kernel-only rerun.
        det.detect_bits(H, y, pool.n_mat, pool.n_sym, noise_var, out);
        const double once = det.kernel_seconds(1);
        const int reps = std::max(1, std::min(1000, static_cast<int>(0.3 / once)));
        r.kernel_seconds_per_batch = det.kernel_seconds(reps);
    }
    if (!nodes.empty()) {
        double sum = 0;
        for (auto n : nodes)
            sum += n;
        r.nodes_mean = sum / nodes.size();
        r.expanded_mean /= nodes.size();
        std::sort(nodes.begin(), nodes.end());
        r.nodes_p99 = nodes[std::min(nodes.size() - 1, nodes.size() * 99 / 100)];
        r.nodes_max = nodes.back();
    }
    return r;
}

//! Wall time of one-slot calls (n_mat = nc), cycling over the pool's slots.
void measure_latency(
    detector& det, const rayleigh_batch& pool, int nc, int calls, result& r)
{
    using clock = std::chrono::steady_clock;
    const int nb = det.bits_per_vector();
    const int n_slots = pool.n_mat / nc;
    std::vector<uint8_t> bits(static_cast<size_t>(nc) * pool.n_sym * nb);
    std::vector<double> t;
    for (int i = -1; i < calls; ++i) { // i = -1: warm-up with the one-slot size
        const size_t m0 = static_cast<size_t>((i < 0 ? 0 : i) % n_slots) * nc;
        const auto t0 = clock::now();
        det.detect_bits(pool.H.data() + m0 * pool.n_rx * pool.n_tx,
                        pool.y.data() + m0 * pool.n_sym * pool.n_rx,
                        nc,
                        pool.n_sym,
                        pool.noise_var.data() + m0,
                        bits.data());
        if (i >= 0)
            t.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    r.lat_p50 = t[t.size() / 2];
    r.lat_p99 = t[std::min(t.size() - 1, t.size() * 99 / 100)];
    r.lat_max = t.back();
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_bench",
                                                    [&] { return parse(argc, argv, o); }))
        return *status;
    std::ofstream csv;
    if (!bench_cli::open_csv(
            "mimodet_bench",
            o.csv,
            "detector,backend,n_tx,n_rx,modulation,snr_db,threads,n_sym,vectors,"
            "seconds,"
            "vectors_per_s,mbit_per_s,ber,nodes_mean,nodes_p99,nodes_max,expanded_"
            "mean,psd_"
            "preset,"
            "subcarriers,slots,kernel_vectors_per_s,kernel_mbit_per_s,latency_p50_ms,"
            "latency_p99_ms,latency_max_ms,lte20_carriers,deadline_us,truncated_frac,"
            "ber_vs_exact,psd_start_rows",
            csv))
        return 2;
    const bool slot_mode = !o.subcarriers.empty();
    // Without --subcarriers: one run over a pool of --pool random matrices.
    const std::vector<int> ncs = slot_mode ? o.subcarriers : std::vector<int>{ 0 };
    std::printf("%-6s %-4s %-5s %-6s %5s %3s %5s %12s %10s %10s %9s %9s %10s %10s %8s "
                "%8s %6s %8s %7s %10s\n",
                "det",
                "bk",
                "ant",
                "mod",
                "snr",
                "thr",
                "Nc",
                "vectors/s",
                "Mbit/s",
                "BER",
                "nodes",
                "nodes_p99",
                "nodes_max",
                "kern_Mb/s",
                "p50_ms",
                "p99_ms",
                "LTE20",
                "dl_us",
                "trunc",
                "BER_exact");
    for (int nt : o.n_tx)
        for (const auto& mod_name : o.mods) {
            const modulation mod = parse_modulation(mod_name);
            const int nr = o.n_rx > 0 ? o.n_rx : nt;
            for (double snr : o.snrs)
                for (int nc : ncs) {
                    const int n_mat = slot_mode ? nc * o.slots : o.pool_matrices;
                    const int n_sym = slot_mode ? 7 : o.n_sym;
                    const auto pool =
                        make_batch(nt, nr, mod, n_mat, n_sym, snr, snr, o.seed);
                    for (const auto& alg : o.detectors)
                        for (const auto& backend : o.backends)
                            for (int th :
                                 backend == "cpu" ? o.threads : std::vector<int>{ 0 })
                                for (double dl : alg == "psd"
                                                     ? o.deadlines
                                                     : std::vector<double>{ 0 }) {
                                    detector_config cfg;
                                    cfg.algorithm = alg;
                                    cfg.n_tx = nt;
                                    cfg.n_rx = nr;
                                    cfg.mod = mod;
                                    cfg.backend = parse_backend(backend);
                                    cfg.threads = th;
                                    cfg.device = o.device;
                                    if (alg == "psd") {
                                        cfg.psd_start_rows = o.psd_start_rows;
                                        cfg.psd_radius = o.psd_radius;
                                    }
                                    if (alg == "psd" && o.psd_preset != "default") {
                                        // A named set by value: the depth-first search,
                                        // or the paper's Algorithm 3 with a Table 5 or
                                        // H100 set.
                                        const int omega =
                                            constellation::get(mod).pam_order();
                                        const auto p =
                                            o.psd_preset == "se" ? core::psd_cpu_tuned(nt)
                                            : o.psd_preset == "table5"
                                                ? core::psd_preset(nt, omega)
                                                : core::psd_gpu_preset(nt, omega);
                                        cfg.psd_lvl = p.lvl;
                                        cfg.psd_exp = p.exp;
                                    }
                                    detector::sptr det;
                                    std::vector<uint8_t> exact;
                                    try {
                                        if (dl > 0) {
                                            // The same psd without a deadline: reference
                                            // decisions for the bits the budget changed.
                                            exact.resize(pool.bits.size());
                                            detector::make(cfg)->detect_bits(
                                                pool.H.data(),
                                                pool.y.data(),
                                                pool.n_mat,
                                                pool.n_sym,
                                                pool.noise_var.data(),
                                                exact.data());
                                        }
                                        cfg.psd_deadline_us = dl;
                                        det = detector::make(cfg);
                                    } catch (const std::exception& e) {
                                        std::printf(
                                            "%-6s skipped: %s\n", alg.c_str(), e.what());
                                        continue;
                                    }
                                    result r = measure(*det,
                                                       pool,
                                                       o.min_seconds,
                                                       slot_mode,
                                                       o.pinned != 0,
                                                       exact);
                                    if (slot_mode)
                                        measure_latency(
                                            *det, pool, nc, o.latency_calls, r);
                                    const int nb = det->bits_per_vector();
                                    const double vps = r.vectors / r.seconds;
                                    const double mbps = vps * nb / 1e6;
                                    const double ber =
                                        r.bits ? double(r.bit_errors) / r.bits : 0.0;
                                    const double kvps =
                                        r.kernel_seconds_per_batch > 0
                                            ? double(n_mat) * n_sym /
                                                  r.kernel_seconds_per_batch
                                            : 0.0;
                                    const double carriers = vps / k_lte20_vectors_per_s;
                                    const double trunc_frac =
                                        r.vectors ? double(r.truncated) / r.vectors : 0.0;
                                    const double ber_exact =
                                        dl > 0 && r.bits ? double(r.exact_diffs) / r.bits
                                                         : 0.0;
                                    char ant[16];
                                    std::snprintf(ant, sizeof ant, "%dx%d", nt, nr);
                                    std::printf(
                                        "%-6s %-4s %-5s %-6s %5.1f %3d %5d %12.0f %10.2f "
                                        "%10.3e %9.1f %9.0f %10.0f %10.1f %8.3f %8.3f "
                                        "%6.2f %8.0f %7.4f "
                                        "%10.3e\n",
                                        alg.c_str(),
                                        det->backend().c_str(),
                                        ant,
                                        mod_name.c_str(),
                                        snr,
                                        th,
                                        nc,
                                        vps,
                                        mbps,
                                        ber,
                                        r.nodes_mean,
                                        r.nodes_p99,
                                        r.nodes_max,
                                        kvps * nb / 1e6,
                                        r.lat_p50 * 1e3,
                                        r.lat_p99 * 1e3,
                                        carriers,
                                        dl,
                                        trunc_frac,
                                        ber_exact);
                                    std::fflush(stdout);
                                    if (csv)
                                        csv << alg << ',' << det->backend() << ',' << nt
                                            << ',' << nr << ',' << mod_name << ',' << snr
                                            << ',' << th << ',' << n_sym << ','
                                            << r.vectors << ',' << r.seconds << ',' << vps
                                            << ',' << mbps << ',' << ber << ','
                                            << r.nodes_mean << ',' << r.nodes_p99 << ','
                                            << r.nodes_max << ',' << r.expanded_mean
                                            << ',' << (alg == "psd" ? o.psd_preset : "")
                                            << ',' << nc << ','
                                            << (slot_mode ? o.slots : 0) << ',' << kvps
                                            << ',' << kvps * nb / 1e6 << ','
                                            << r.lat_p50 * 1e3 << ',' << r.lat_p99 * 1e3
                                            << ',' << r.lat_max * 1e3 << ',' << carriers
                                            << ',' << dl << ',' << trunc_frac << ','
                                            << ber_exact << ','
                                            << (alg == "psd" ? o.psd_start_rows : -1)
                                            << '\n';
                                }
                }
        }
    return 0;
}
