/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA FSD against the CPU FSD (same algorithm: same bits up to exact metric ties) and
// exhaustive ML (ctest label "gpu"); every test skips where there is no CUDA device.

#include "detect/fsd/fsd_common.h"
#include "qa_gpu_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cstdio>
#include <stdexcept>

using namespace gr::mimodet;

namespace {

detector::sptr make_fsd(
    int n_tx, int n_rx, modulation mod, const std::string& backend, int full_levels = -1)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.fsd_full_levels = full_levels;
    return qa::make("fsd", n_tx, n_rx, mod, c);
}

int count_different(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int nb)
{
    int n = 0;
    for (size_t v = 0; v < a.size() / nb; ++v)
        n +=
            !std::equal(a.begin() + v * nb, a.begin() + (v + 1) * nb, b.begin() + v * nb);
    return n;
}

// GPU and CPU agree except where both decisions have the same metric (1e-9 relative):
// checked in both directions, so neither may be worse than the other.
void expect_same_as_cpu(const qa::batch& b, int full_levels, const std::string& what)
{
    auto gpu = make_fsd(b.n_tx, b.n_rx, b.mod, "cuda", full_levels);
    auto cpu = make_fsd(b.n_tx, b.n_rx, b.mod, "cpu", full_levels);
    ASSERT_EQ(gpu->backend(), "cuda");
    const auto g = qa::run_bits(*gpu, b);
    const auto c = qa::run_bits(*cpu, b);
    for (uint8_t x : g)
        ASSERT_LE(x, 1) << what;
    EXPECT_EQ(qa::count_non_ml(b, g, c, 1e-9), 0) << what << ": GPU worse than CPU";
    EXPECT_EQ(qa::count_non_ml(b, c, g, 1e-9), 0) << what << ": CPU worse than GPU";
    const int nb = b.n_tx * static_cast<int>(b.mod);
    std::printf("%s: %d of %zu vectors differ (metric ties)\n",
                what.c_str(),
                count_different(g, c, nb),
                g.size() / nb);
}

std::string name(int nt, int nr, modulation mod, int t)
{
    return std::to_string(nt) + "x" + std::to_string(nr) + " " + to_string(mod) +
           " T=" + std::to_string(t);
}

} // namespace

TEST(gpu_fsd, matches_cpu_default_t)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 100;
    qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
        const auto b = qa::standard_batch(nt, nr, mod, ++seed);
        expect_same_as_cpu(b, -1, name(nt, nr, mod, -1));
    });
}

TEST(gpu_fsd, matches_cpu_other_t_and_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    // T = 0 (plain SIC, one thread per vector), several vectors per warp, branches
    // spread over several warps (256) and several branches per thread (1024).
    struct cse {
        int nt, nr;
        modulation mod;
        int t, n_mat;
    };
    const cse cases[] = {
        { 4, 4, modulation::qam16, 0, 3000 }, { 4, 4, modulation::qpsk, 2, 3000 },
        { 4, 4, modulation::qpsk, 4, 3000 },  { 4, 4, modulation::qam16, 2, 2000 },
        { 3, 5, modulation::qam64, 1, 3000 }, { 1, 1, modulation::qam64, -1, 3000 },
        { 1, 3, modulation::qam16, 0, 3000 }, { 8, 8, modulation::qam64, 1, 1500 },
        { 8, 8, modulation::qpsk, 5, 300 },   { 6, 8, modulation::qam16, 2, 500 },
        { 5, 7, modulation::qpsk, 3, 1000 },  { 7, 7, modulation::qam16, 1, 1000 },
    };
    uint64_t seed = 200;
    for (const auto& c : cases) {
        const auto b = qa::make_batch(c.nt, c.nr, c.mod, c.n_mat, 7, 0.0, 30.0, ++seed);
        expect_same_as_cpu(b, c.t, name(c.nt, c.nr, c.mod, c.t));
    }
}

TEST(gpu_fsd, two_tx_t1_is_ml)
{
    QA_SKIP_WITHOUT_GPU();
    for (auto mod : qa::k_gpu_mods) {
        const auto b = qa::make_batch(2, 2, mod, 3000, 7, 0.0, 30.0, 300 + int(mod));
        auto gpu = make_fsd(2, 2, mod, "cuda", 1);
        auto ml = qa::make("ml", 2, 2, mod);
        const auto g = qa::run_bits(*gpu, b), m = qa::run_bits(*ml, b);
        EXPECT_EQ(qa::count_non_ml(b, g, m), 0) << to_string(mod);
        EXPECT_EQ(qa::count_non_ml(b, m, g), 0) << to_string(mod);
    }
}

TEST(gpu_fsd, odd_batch_shapes)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 400;
    qa::for_each_odd_shape([&](int n_mat, int n_sym) {
        const auto b =
            qa::make_batch(4, 4, modulation::qam16, n_mat, n_sym, 0.0, 30.0, ++seed);
        expect_same_as_cpu(b, -1, "4x4 16qam " + qa::shape_name(n_mat, n_sym));
    });
}

TEST(gpu_fsd, every_thread_count_gives_the_same_bits)
{
    // MIMODET_FSD_THREADS from one thread per vector to one per branch (several warps a
    // vector at 64QAM, T = 2 at QPSK): a thread's branches and the vector's arg-min
    // over its threads keep the lowest branch among equal metrics, so the bits are
    // those of the default split, ties included.
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 700;
    struct config {
        int nt;
        modulation mod;
        int full_levels;
    };
    for (const config c : { config{ 4, modulation::qam16, -1 },
                            config{ 4, modulation::qam64, -1 },
                            config{ 2, modulation::qam16, -1 },
                            config{ 4, modulation::qpsk, 2 } }) {
        for (const bool singular : { false, true }) {
            const std::string what = name(c.nt, c.nt, c.mod, c.full_levels) +
                                     (singular ? ", rank-deficient channels" : "");
            auto b = qa::make_batch(c.nt, c.nt, c.mod, 300, 7, 0.0, 30.0, ++seed);
            if (singular) // metric ties
                qa::make_singular_channels(b);
            const auto ref =
                qa::run_bits(*make_fsd(c.nt, c.nt, c.mod, "cuda", c.full_levels), b);
            const int t = c.full_levels < 0 ? 1 : c.full_levels;
            const int paths = 1 << (static_cast<int>(c.mod) * t);
            for (int threads = 1; threads <= std::min(paths, 256); threads *= 2) {
                const qa::env_override force("MIMODET_FSD_THREADS",
                                             std::to_string(threads).c_str());
                auto gpu = make_fsd(c.nt, c.nt, c.mod, "cuda", c.full_levels);
                EXPECT_EQ(qa::run_bits(*gpu, b), ref) << what << ", " << threads;
            }
        }
    }
}

TEST(gpu_fsd, singular_channels_give_valid_bits)
{
    QA_SKIP_WITHOUT_GPU();
    for (auto mod : qa::k_gpu_mods) {
        auto b = qa::make_batch(4, 4, mod, 60, 7, 10.0, 10.0, 500 + int(mod));
        qa::make_singular_channels(b);
        const int nt = b.n_tx, nr = b.n_rx;
        auto gpu = make_fsd(nt, nr, mod, "cuda");
        std::vector<uint8_t> g;
        ASSERT_NO_THROW(g = qa::run_bits(*gpu, b)) << to_string(mod);
        ASSERT_EQ(g.size(), b.bits.size());
        for (uint8_t x : g)
            ASSERT_LE(x, 1) << to_string(mod);
    }
}

TEST(gpu_fsd, buffers_are_reused_across_batch_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    const auto mod = modulation::qam64;
    auto gpu = make_fsd(4, 4, mod, "cuda");
    auto cpu = make_fsd(4, 4, mod, "cpu");
    const auto mid = qa::make_batch(4, 4, mod, 3000, 7, 0.0, 30.0, 601);
    const auto small = qa::make_batch(4, 4, mod, 5, 2, 0.0, 30.0, 602);
    const auto large = qa::make_batch(4, 4, mod, 20000, 7, 0.0, 30.0, 603);
    // Grow, shrink (buffers kept), grow past the first size, then repeat: every answer
    // must be the CPU's and a repeated batch must give identical bits.
    const auto g_mid = qa::run_bits(*gpu, mid);
    const auto g_small = qa::run_bits(*gpu, small);
    const auto g_large = qa::run_bits(*gpu, large);
    const auto g_mid2 = qa::run_bits(*gpu, mid);
    const auto g_small2 = qa::run_bits(*gpu, small);
    EXPECT_EQ(g_mid, g_mid2);
    EXPECT_EQ(g_small, g_small2);
    const std::pair<const qa::batch*, const std::vector<uint8_t>*> runs[] = {
        { &mid, &g_mid }, { &small, &g_small }, { &large, &g_large }
    };
    for (const auto& r : runs) {
        const auto c = qa::run_bits(*cpu, *r.first);
        EXPECT_EQ(qa::count_non_ml(*r.first, *r.second, c, 1e-9), 0);
        EXPECT_EQ(qa::count_non_ml(*r.first, c, *r.second, 1e-9), 0);
    }
}

TEST(gpu_fsd, stats_match_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 3, 2, 20.0, 20.0, 701);
    auto gpu = make_fsd(4, 4, modulation::qam16, "cuda", 2);
    auto cpu = make_fsd(4, 4, modulation::qam16, "cpu", 2);
    std::vector<uint8_t> out(b.bits.size());
    std::vector<vector_stats> sg(6), sc(6);
    gpu->detect_bits(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), sg.data());
    cpu->detect_bits(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), sc.data());
    for (int v = 0; v < 6; ++v) {
        EXPECT_EQ(sg[v].expanded, sc[v].expanded);
        EXPECT_EQ(sg[v].evaluated, sc[v].evaluated);
    }
    // Null stats are fine too.
    gpu->detect_bits(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), nullptr);
}

TEST(gpu_fsd, configuration_and_interface)
{
    QA_SKIP_WITHOUT_GPU();
    // Hard output only.
    auto gpu = make_fsd(2, 2, modulation::qpsk, "cuda");
    EXPECT_FALSE(gpu->soft());
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 4, 2, 20.0, 20.0, 801);
    EXPECT_THROW(qa::run_llr(*gpu, b), std::logic_error);
    // "auto" picks the GPU where it can.
    EXPECT_EQ(make_fsd(4, 4, modulation::qam16, "auto")->backend(), "cuda");
    // M^T beyond 1024: "cuda" refuses with a message, "auto" falls back to the CPU.
    EXPECT_THROW(make_fsd(2, 2, modulation::qam64, "cuda", 2), std::invalid_argument);
    EXPECT_EQ(make_fsd(2, 2, modulation::qam64, "auto", 2)->backend(), "cpu");
    // T's own range is still the shared rule (fsd_common.h).
    EXPECT_THROW(make_fsd(2, 2, modulation::qpsk, "cuda", 3), std::invalid_argument);
}
