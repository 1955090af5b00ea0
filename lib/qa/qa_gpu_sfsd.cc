/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA SFSD against the CPU SFSD (same list, same max-log LLRs; ctest label "gpu"):
// LLRs within 1e-3 relative and identical hard decisions. Every test skips where there
// is no CUDA device. Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the batches are
// smaller, with the same configurations (every list layout, chunked candidates included).

#include "qa_gpu_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

using namespace gr::mimodet;

namespace {

struct params {
    int full_levels = -1;
    int niter = -1;
    float clip = 0.0f;
};

detector::sptr make_sfsd(
    int n_tx, int n_rx, modulation mod, const std::string& backend, const params& p = {})
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.fsd_full_levels = p.full_levels;
    c.sfsd_niter = p.niter;
    c.llr_clip = p.clip;
    return qa::make("sfsd", n_tx, n_rx, mod, c);
}

bool llr_close(float gpu, float cpu)
{
    return std::isfinite(gpu) &&
           std::fabs(double(gpu) - cpu) <= 1e-3 * std::max(1.0, std::fabs(double(cpu)));
}

// GPU LLRs within 1e-3 relative of the CPU's, and GPU hard bits = CPU LLR signs.
void expect_llrs_match(const std::vector<float>& g,
                       const std::vector<float>& c,
                       const std::vector<uint8_t>* g_bits,
                       const std::string& what)
{
    ASSERT_EQ(g.size(), c.size()) << what;
    size_t off = 0, sign = 0, bits = 0, first = g.size();
    for (size_t i = 0; i < g.size(); ++i) {
        if (!llr_close(g[i], c[i])) {
            ++off;
            first = std::min(first, i);
        }
        sign += (g[i] < 0.0f) != (c[i] < 0.0f);
        if (g_bits)
            bits += (*g_bits)[i] != (c[i] < 0.0f ? 1 : 0);
    }
    EXPECT_EQ(off, 0u) << what << ": first at " << first << " gpu "
                       << (first < g.size() ? g[first] : 0.0f) << " cpu "
                       << (first < g.size() ? c[first] : 0.0f);
    EXPECT_EQ(sign, 0u) << what << ": LLR signs differ";
    EXPECT_EQ(bits, 0u) << what << ": detect_bits differs from the CPU LLR signs";
    size_t exact = 0;
    for (size_t i = 0; i < g.size(); ++i)
        exact += g[i] == c[i];
    std::printf("%s: %zu LLRs, %zu bit-identical\n", what.c_str(), g.size(), exact);
}

void expect_same_as_cpu(const qa::batch& b, const params& p, const std::string& what)
{
    auto gpu = make_sfsd(b.n_tx, b.n_rx, b.mod, "cuda", p);
    auto cpu = make_sfsd(b.n_tx, b.n_rx, b.mod, "cpu", p);
    ASSERT_EQ(gpu->backend(), "cuda");
    const auto g = qa::run_llr(*gpu, b);
    const auto gb = qa::run_bits(*gpu, b);
    const auto c = qa::run_llr(*cpu, b);
    expect_llrs_match(g, c, &gb, what);
}

std::string name(int nt, int nr, modulation mod, const params& p)
{
    return std::to_string(nt) + "x" + std::to_string(nr) + " " + to_string(mod) +
           " T=" + std::to_string(p.full_levels) + " Niter=" + std::to_string(p.niter) +
           " clip=" + std::to_string(p.clip);
}

} // namespace

TEST(gpu_sfsd, matches_cpu_default_parameters)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 1100;
    qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
        const auto b = qa::standard_batch(nt, nr, mod, ++seed);
        expect_same_as_cpu(b, {}, name(nt, nr, mod, {}));
    });
}

TEST(gpu_sfsd, matches_cpu_with_llr_clip)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 1200;
    params p;
    p.clip = 8.0f;
    qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
        const auto b = qa::standard_batch(nt, nr, mod, ++seed);
        expect_same_as_cpu(b, p, name(nt, nr, mod, p));
    });
}

TEST(gpu_sfsd, matches_cpu_other_parameters_and_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    // T = 0 (SIC only, few threads per vector), T = n_tx (no extension), N_iter = 0,
    // large N_iter (many candidates per thread), several blocks' worth of branches
    // (M^T = 256, 1024), odd antenna counts, lists processed in chunks.
    struct cse {
        int nt, nr;
        modulation mod;
        params p;
        int n_mat;
    };
    const cse cases[] = {
        { 4, 4, modulation::qam16, { 0, -1, 0.0f }, 3000 },
        { 4, 4, modulation::qpsk, { 2, 16, 0.0f }, 3000 },
        { 4, 4, modulation::qpsk, { 4, -1, 0.0f }, 3000 },
        { 4, 4, modulation::qam16, { 2, 100, 0.0f }, 500 },
        { 4, 4, modulation::qam16, { 1, 0, 0.0f }, 3000 },
        { 4, 4, modulation::qam16, { 1, 16, 5.0f }, 3000 },
        { 3, 5, modulation::qam64, { 1, 64, 0.0f }, 2000 },
        { 1, 1, modulation::qam64, { -1, -1, 0.0f }, 3000 },
        { 1, 3, modulation::qam16, { 0, -1, 0.0f }, 3000 },
        { 8, 8, modulation::qam64, { 1, -1, 0.0f }, 1500 },
        { 8, 8, modulation::qam64, { 0, -1, 3.0f }, 1500 },
        { 8, 8, modulation::qpsk, { 5, 7, 0.0f }, 300 },
        { 6, 8, modulation::qam16, { 2, 9, 0.0f }, 300 },
        { 5, 7, modulation::qpsk, { 3, -1, 0.0f }, 1000 },
        { 7, 7, modulation::qam16, { 1, -1, 0.0f }, 1000 },
        // Lists too long for one block's shared memory: candidates in chunks.
        { 4, 4, modulation::qam16, { 2, 256, 0.0f }, 200 },
        { 8, 8, modulation::qpsk, { 5, 1024, 0.0f }, 40 },
    };
    uint64_t seed = 1300;
    for (const auto& c : cases) {
        const int n_mat = qa::sanitizer_size(c.n_mat, std::min(c.n_mat, 20));
        const auto b = qa::make_batch(c.nt, c.nr, c.mod, n_mat, 7, 0.0, 30.0, ++seed);
        expect_same_as_cpu(b, c.p, name(c.nt, c.nr, c.mod, c.p));
    }
}

TEST(gpu_sfsd, odd_batch_shapes)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 1400;
    qa::for_each_odd_shape([&](int n_mat, int n_sym) {
        const auto b =
            qa::make_batch(4, 4, modulation::qam16, n_mat, n_sym, 0.0, 30.0, ++seed);
        expect_same_as_cpu(b, {}, "4x4 16qam " + qa::shape_name(n_mat, n_sym));
    });
}

TEST(gpu_sfsd, singular_channels_give_finite_llrs)
{
    QA_SKIP_WITHOUT_GPU();
    // Rank-deficient channels leave Q's null-space columns arbitrary, so the GPU's
    // Gram-Schmidt and the CPU's Householder QR may build different lists there: only
    // validity is checked.
    for (auto mod : qa::k_gpu_mods)
        for (float clip : { 0.0f, 6.0f }) {
            auto b = qa::make_batch(
                4, 4, mod, qa::sanitizer_size(60, 12), 7, 10.0, 10.0, 1500 + int(mod));
            qa::make_singular_channels(b);
            const int nt = b.n_tx, nr = b.n_rx;
            params p;
            p.clip = clip;
            auto gpu = make_sfsd(nt, nr, mod, "cuda", p);
            std::vector<float> g;
            ASSERT_NO_THROW(g = qa::run_llr(*gpu, b)) << to_string(mod);
            ASSERT_EQ(g.size(), b.bits.size());
            const float bound = clip > 0 ? clip : missing_llr;
            for (float x : g) {
                ASSERT_TRUE(std::isfinite(x)) << to_string(mod);
                ASSERT_LE(std::fabs(x), bound) << to_string(mod);
            }
            std::vector<uint8_t> bits;
            ASSERT_NO_THROW(bits = qa::run_bits(*gpu, b)) << to_string(mod);
            for (size_t i = 0; i < bits.size(); ++i)
                ASSERT_EQ(bits[i], g[i] < 0.0f ? 1 : 0) << to_string(mod);
        }
}

TEST(gpu_sfsd, buffers_are_reused_across_calls_and_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    const auto mod = modulation::qam64;
    auto gpu = make_sfsd(4, 4, mod, "cuda");
    auto cpu = make_sfsd(4, 4, mod, "cpu");
    const auto mid =
        qa::make_batch(4, 4, mod, qa::sanitizer_size(3000, 60), 7, 0.0, 30.0, 1601);
    const auto small = qa::make_batch(4, 4, mod, 5, 2, 0.0, 30.0, 1602);
    const auto large =
        qa::make_batch(4, 4, mod, qa::sanitizer_size(20000, 200), 7, 0.0, 30.0, 1603);
    // detect_bits and detect_llr interleaved; grow, shrink (buffers kept), grow past the
    // first size, then repeat: every answer must be the CPU's, a repeat must be equal.
    const auto b_mid = qa::run_bits(*gpu, mid);
    const auto l_small = qa::run_llr(*gpu, small);
    const auto b_large = qa::run_bits(*gpu, large);
    const auto l_mid = qa::run_llr(*gpu, mid);
    const auto b_small = qa::run_bits(*gpu, small);
    const auto l_large = qa::run_llr(*gpu, large);
    const auto l_small2 = qa::run_llr(*gpu, small);
    const auto b_mid2 = qa::run_bits(*gpu, mid);
    EXPECT_EQ(l_small, l_small2);
    EXPECT_EQ(b_mid, b_mid2);
    const auto c_mid = qa::run_llr(*cpu, mid);
    const auto c_small = qa::run_llr(*cpu, small);
    const auto c_large = qa::run_llr(*cpu, large);
    expect_llrs_match(l_mid, c_mid, &b_mid, "mid");
    expect_llrs_match(l_small, c_small, &b_small, "small");
    expect_llrs_match(l_large, c_large, &b_large, "large");
}

TEST(gpu_sfsd, stats_match_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 3, 2, 20.0, 20.0, 1701);
    params p;
    p.full_levels = 2;
    p.niter = 5;
    auto gpu = make_sfsd(4, 4, modulation::qam16, "cuda", p);
    auto cpu = make_sfsd(4, 4, modulation::qam16, "cpu", p);
    std::vector<float> out(b.bits.size());
    std::vector<vector_stats> sg(6), sc(6);
    gpu->detect_llr(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), sg.data());
    cpu->detect_llr(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), sc.data());
    for (int v = 0; v < 6; ++v) {
        EXPECT_EQ(sg[v].expanded, sc[v].expanded);
        EXPECT_EQ(sg[v].evaluated, sc[v].evaluated);
    }
    // Null stats are fine too.
    gpu->detect_llr(
        b.H.data(), b.y.data(), 3, 2, b.noise_var.data(), out.data(), nullptr);
}

TEST(gpu_sfsd, configuration_and_interface)
{
    QA_SKIP_WITHOUT_GPU();
    auto gpu = make_sfsd(2, 2, modulation::qpsk, "cuda");
    EXPECT_TRUE(gpu->soft());
    EXPECT_EQ(gpu->backend(), "cuda");
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 4, 2, 20.0, 20.0, 1801);
    EXPECT_NO_THROW(qa::run_llr(*gpu, b));
    EXPECT_GT(gpu->kernel_seconds(2), 0.0);
    // "auto" picks the GPU where it can.
    EXPECT_EQ(make_sfsd(4, 4, modulation::qam16, "auto")->backend(), "cuda");
    // M^T beyond 1024: "cuda" refuses with a message, "auto" falls back to the CPU.
    params big;
    big.full_levels = 2;
    EXPECT_THROW(make_sfsd(2, 2, modulation::qam64, "cuda", big), std::invalid_argument);
    EXPECT_EQ(make_sfsd(2, 2, modulation::qam64, "auto", big)->backend(), "cpu");
    // T's and N_iter's own ranges are still the shared rules (fsd_common.h).
    params bad_t;
    bad_t.full_levels = 3;
    EXPECT_THROW(make_sfsd(2, 2, modulation::qpsk, "cuda", bad_t), std::invalid_argument);
    params bad_niter;
    bad_niter.niter = 5; // M^T = 4
    EXPECT_THROW(make_sfsd(2, 2, modulation::qpsk, "cuda", bad_niter),
                 std::invalid_argument);
}
