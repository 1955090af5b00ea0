/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_psd_search: the PSD paper's parameter search (its Sec. 7, Table 5) re-run for
// the machine at hand. Every valid (lvl, exp) set with at most --max-levels evaluated
// levels and exp values from --exp-values is timed on the same random slots; the fastest
// are printed (kernel-only time on a GPU, wall time on the CPU) with their node counts.
// All sets are exact ML, so only speed differs.

#include "bench_cli.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

struct candidate {
    std::vector<int> lvl, exp;
    double vectors_per_s = 0;
    double nodes_mean = 0;
};

std::string join(const std::vector<int>& v)
{
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}

// All lvl = {N+1, l_1, ..., 1} with at most max_levels evaluated levels, and for each the
// exp vectors {1, e_1, ...} with e_x from exp_values (validity is left to the detector).
std::vector<candidate>
enumerate(int N, int max_levels, const std::vector<int>& exp_values)
{
    std::vector<candidate> out;
    const int inner = N - 1; // candidate intermediate levels N .. 2
    for (int mask = 0; mask < (1 << inner); ++mask) {
        std::vector<int> lvl = { N + 1 };
        for (int l = N; l >= 2; --l)
            if (mask & (1 << (l - 2)))
                lvl.push_back(l);
        lvl.push_back(1);
        const int nr = static_cast<int>(lvl.size()) - 1;
        if (nr > max_levels)
            continue;
        std::vector<size_t> idx(nr - 1, 0);
        while (true) {
            candidate c;
            c.lvl = lvl;
            c.exp = { 1 };
            for (size_t i : idx)
                c.exp.push_back(exp_values[i]);
            out.push_back(c);
            size_t k = 0;
            while (k < idx.size() && ++idx[k] == exp_values.size())
                idx[k++] = 0;
            if (k == idx.size())
                break;
        }
    }
    return out;
}

} // namespace

int main(int argc, char** argv)
{
    int n_tx = 4, n_sym = 7, subcarriers = 1200, slots = 4, max_levels = 4, top = 15;
    int samples = 0;              // 0: every set; else that many, drawn at random
    double seconds_per_set = 0.1; // GPU kernel time per timed set
    std::string mod_name = "16qam", backend = "cuda";
    double snr = 20;
    std::vector<int> exp_values = { 1, 2, 4, 8, 16, 32 };
    const auto status = bench_cli::command_line("mimodet_psd_search", [&] {
        bench_cli::parser p(
            "mimodet_psd_search",
            "Searches PSD parameter sets (lvl, exp) for speed at exact ML.");
        p.number("--ntx", n_tx, "N", "transmit (= receive) antennas", 1, 8)
            .text("--mod", mod_name, "M", "modulation", { "qpsk", "16qam", "64qam" })
            .number("--snr", snr, "DB", "SNR in dB", -20, 100)
            .text(
                "--backend", backend, "B", "detector backend", { "cpu", "cuda", "auto" })
            .number("--subcarriers", subcarriers, "N", "subcarriers per slot", 1, 1e5)
            .number("--slots", slots, "N", "slots per timed call", 1, 1e4)
            .number(
                "--max-levels", max_levels, "N", "most levels of a candidate set", 2, 16)
            .numbers("--exp-values", exp_values, "LIST", "candidate exp values", 1, 1e6)
            .number("--top", top, "N", "sets listed", 1, 1e6)
            .number("--samples",
                    samples,
                    "N",
                    "0: every set; else that many, drawn at random",
                    0,
                    1e9)
            .number("--seconds-per-set",
                    seconds_per_set,
                    "S",
                    "GPU kernel time per timed set",
                    1e-4,
                    600);
        return p.parse(argc, argv);
    });
    if (status)
        return *status;
    const modulation mod = parse_modulation(mod_name);
    const int n_mat = subcarriers * slots;
    const auto pool = make_batch(n_tx, n_tx, mod, n_mat, n_sym, snr, snr, 7);
    std::vector<uint8_t> bits(pool.bits.size());
    std::vector<vector_stats> stats(static_cast<size_t>(n_mat) * n_sym);
    std::vector<uint8_t> reference;
    auto cands = enumerate(2 * n_tx, max_levels, exp_values);
    if (samples > 0 && samples < static_cast<int>(cands.size())) {
        std::mt19937 rng(1);
        std::shuffle(cands.begin(), cands.end(), rng);
        cands.resize(samples);
    }
    // The backend's default preset (empty lvl/exp: Table 5 on the CPU, the H100 set on
    // the GPU) and the depth-first set always compete.
    cands.insert(cands.begin(), candidate{});
    {
        candidate df;
        for (int l = 2 * n_tx + 1; l >= 1; --l)
            df.lvl.push_back(l);
        df.exp.assign(2 * n_tx, 1);
        cands.insert(cands.begin() + 1, df);
    }
    std::vector<candidate> timed;
    int invalid = 0;
    for (auto& c : cands) {
        detector_config cfg;
        cfg.algorithm = "psd";
        cfg.n_tx = n_tx;
        cfg.n_rx = n_tx;
        cfg.mod = mod;
        cfg.backend = parse_backend(backend);
        cfg.psd_lvl = c.lvl;
        cfg.psd_exp = c.exp;
        detector::sptr det;
        try {
            det = detector::make(cfg);
        } catch (const std::exception&) {
            ++invalid; // violates Table 1, or does not fit the device
            continue;
        }
        det->detect_bits(pool.H.data(),
                         pool.y.data(),
                         n_mat,
                         n_sym,
                         pool.noise_var.data(),
                         bits.data(),
                         stats.data());
        // Every set is exact ML: the bits must agree (up to exact metric ties, which are
        // rare enough on continuous random data to flag).
        if (reference.empty())
            reference = bits;
        else if (bits != reference)
            std::fprintf(stderr,
                         "note: lvl {%s} exp {%s} differs from the first set\n",
                         join(c.lvl).c_str(),
                         join(c.exp).c_str());
        double seconds;
        if (det->config().backend == backend_kind::cuda) {
            const double once = det->kernel_seconds(1);
            seconds = det->kernel_seconds(
                std::max(1, std::min(50, int(seconds_per_set / once))));
        } else {
            const auto t0 = std::chrono::steady_clock::now();
            det->detect_bits(pool.H.data(),
                             pool.y.data(),
                             n_mat,
                             n_sym,
                             pool.noise_var.data(),
                             bits.data());
            seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                          .count();
        }
        c.vectors_per_s = double(n_mat) * n_sym / seconds;
        double sum = 0;
        for (const auto& s : stats)
            sum += s.evaluated;
        c.nodes_mean = sum / stats.size();
        timed.push_back(c);
    }
    std::sort(timed.begin(), timed.end(), [](const candidate& a, const candidate& b) {
        return a.vectors_per_s > b.vectors_per_s;
    });
    const int q = static_cast<int>(mod);
    std::printf(
        "# psd parameter search: %dx%d %s %.1f dB, %d x %d x %d vectors, backend %s; "
        "%zu sets timed, %d refused\n",
        n_tx,
        n_tx,
        mod_name.c_str(),
        snr,
        subcarriers,
        slots,
        n_sym,
        backend.c_str(),
        timed.size(),
        invalid);
    std::printf(
        "%-22s %-16s %12s %10s %10s\n", "lvl", "exp", "vectors/s", "Mbit/s", "nodes");
    for (int i = 0; i < std::min<int>(top, timed.size()); ++i)
        std::printf("%-22s %-16s %12.0f %10.1f %10.1f\n",
                    timed[i].lvl.empty() ? "default-preset" : join(timed[i].lvl).c_str(),
                    join(timed[i].exp).c_str(),
                    timed[i].vectors_per_s,
                    timed[i].vectors_per_s * n_tx * q / 1e6,
                    timed[i].nodes_mean);
    return 0;
}
