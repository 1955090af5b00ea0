/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA MTT against the CPU MTT (same algorithm, same QR and tie rules: the same LLRs up
// to rounding) and, for two transmit antennas, against exhaustive max-log ML (ctest label
// "gpu"); every test skips where there is no CUDA device.

#include "detect/backend.h"
#include "qa_gpu_common.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <gtest/gtest.h>
#include <stdexcept>

using namespace gr::mimodet;

namespace {

detector::sptr make_mtt(int n_tx,
                        int n_rx,
                        modulation mod,
                        const std::string& backend,
                        int sorted_qr = -1,
                        float llr_clip = 0.0f)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.sorted_qr = sorted_qr;
    c.llr_clip = llr_clip;
    return qa::make("mtt", n_tx, n_rx, mod, c);
}

struct llr_diff {
    size_t n = 0;         //!< LLRs compared
    size_t outside = 0;   //!< |a-b| > tol * max(1,|b|), or a not finite
    size_t sign = 0;      //!< sign differs where the reference is not ~0
    double max_rel = 0.0; //!< largest |a-b| / max(1,|b|)
};

llr_diff
compare_llrs(const std::vector<float>& a, const std::vector<float>& b, double tol)
{
    llr_diff d;
    d.n = b.size();
    for (size_t i = 0; i < b.size(); ++i) {
        const double x = a[i], ref = b[i];
        const double rel = std::abs(x - ref) / std::max(1.0, std::abs(ref));
        if (!std::isfinite(x) || !(rel <= tol))
            ++d.outside;
        d.max_rel = std::max(d.max_rel, std::isfinite(rel) ? rel : 1e300);
        // A reference within rounding of 0 has no meaningful sign.
        if (std::abs(ref) > 1e-6 && (x < 0) != (ref < 0))
            ++d.sign;
    }
    return d;
}

std::string name(int nt, int nr, modulation mod, int sorted, float clip)
{
    return std::to_string(nt) + "x" + std::to_string(nr) + " " + to_string(mod) +
           " sorted_qr=" + std::to_string(sorted) + " llr_clip=" + std::to_string(clip);
}

void expect_same_as_cpu(const qa::batch& b,
                        int sorted,
                        float clip,
                        const std::string& what)
{
    auto gpu = make_mtt(b.n_tx, b.n_rx, b.mod, "cuda", sorted, clip);
    auto cpu = make_mtt(b.n_tx, b.n_rx, b.mod, "cpu", sorted, clip);
    ASSERT_EQ(gpu->backend(), "cuda");
    const auto g = qa::run_llr(*gpu, b);
    const auto c = qa::run_llr(*cpu, b);
    const llr_diff d = compare_llrs(g, c, 1e-3);
    EXPECT_EQ(d.outside, 0u) << what;
    EXPECT_EQ(d.sign, 0u) << what;
    if (clip > 0)
        for (float x : g)
            ASSERT_LE(std::abs(x), clip) << what;
    std::printf("%s: %zu LLRs, max rel diff %.3g\n", what.c_str(), d.n, d.max_rel);
}

} // namespace

TEST(gpu_mtt, matches_cpu_sorted_and_plain_qr)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 100;
    qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
        for (int sorted : { 0, 1 })
            expect_same_as_cpu(qa::standard_batch(nt, nr, mod, ++seed),
                               sorted,
                               0.0f,
                               name(nt, nr, mod, sorted, 0.0f));
    });
}

TEST(gpu_mtt, lane_parallel_preprocessing_equals_one_thread_per_matrix)
{
    QA_SKIP_WITHOUT_GPU();
    // The detector's preprocessing (one lane per column) against the
    // one-thread-per-matrix kernel: the same expressions in the same order, so Q, R,
    // 1/R(k,k) and the permutation must be equal bit for bit, in every case of
    // qa::expect_lanes_equal_one_thread (random, singular, tied and scaled channels).
    qa::expect_lanes_equal_one_thread(2028, core::mtt_cuda_preprocess_differences);
}

TEST(gpu_mtt, matches_cpu_with_llr_clip)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 150;
    qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
        const auto b = qa::standard_batch(nt, nr, mod, ++seed);
        const int sorted = static_cast<int>(seed & 1);
        expect_same_as_cpu(b, sorted, 8.0f, name(nt, nr, mod, sorted, 8.0f));
    });
}

TEST(gpu_mtt, matches_cpu_all_antenna_counts)
{
    QA_SKIP_WITHOUT_GPU();
    // Every NT instantiation of the kernel; several vectors per warp (QPSK), two per warp
    // (16QAM) and one vector over two warps (64QAM).
    struct cse {
        int nt, nr;
        modulation mod;
        int n_mat;
    };
    const cse cases[] = {
        { 1, 1, modulation::qam64, 3000 }, { 1, 3, modulation::qam16, 3000 },
        { 3, 5, modulation::qam64, 3000 }, { 3, 3, modulation::qpsk, 3000 },
        { 5, 7, modulation::qpsk, 2000 },  { 6, 8, modulation::qam16, 1000 },
        { 7, 7, modulation::qam16, 1000 }, { 8, 8, modulation::qpsk, 2000 },
        { 8, 8, modulation::qam16, 1000 }, { 8, 8, modulation::qam64, 300 },
    };
    uint64_t seed = 200;
    for (const auto& c : cases)
        for (int sorted : { 0, 1 }) {
            const auto b =
                qa::make_batch(c.nt, c.nr, c.mod, c.n_mat, 7, 0.0, 30.0, ++seed);
            expect_same_as_cpu(b, sorted, 0.0f, name(c.nt, c.nr, c.mod, sorted, 0.0f));
        }
}

TEST(gpu_mtt, two_tx_gives_exact_maxlog_llrs)
{
    QA_SKIP_WITHOUT_GPU();
    // With two antennas every path through every vertex is in the lists: exact max-log.
    for (auto mod : qa::k_gpu_mods)
        for (int nr : { 2, 4 }) {
            const auto b =
                qa::make_batch(2, nr, mod, 15000, 7, 0.0, 30.0, 300 + nr + int(mod));
            auto gpu = make_mtt(2, nr, mod, "cuda");
            auto ml = qa::make("ml", 2, nr, mod);
            const llr_diff d =
                compare_llrs(qa::run_llr(*gpu, b), qa::run_llr(*ml, b), 1e-3);
            EXPECT_EQ(d.outside, 0u) << "2x" << nr << " " << to_string(mod);
            EXPECT_EQ(d.sign, 0u) << "2x" << nr << " " << to_string(mod);
        }
}

TEST(gpu_mtt, bits_are_llr_signs)
{
    QA_SKIP_WITHOUT_GPU();
    for (auto mod : qa::k_gpu_mods) {
        const auto b = qa::make_batch(4, 4, mod, 3000, 7, 0.0, 30.0, 350 + int(mod));
        auto gpu = make_mtt(4, 4, mod, "cuda");
        const auto llr = qa::run_llr(*gpu, b);
        const auto bits = qa::run_bits(*gpu, b);
        ASSERT_EQ(llr.size(), bits.size());
        size_t bad = 0;
        for (size_t i = 0; i < llr.size(); ++i)
            bad += bits[i] != (llr[i] < 0 ? 1 : 0);
        EXPECT_EQ(bad, 0u) << to_string(mod);
    }
}

TEST(gpu_mtt, odd_batch_shapes)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 400;
    // A single vector is a block with one valid vector.
    for (auto mod : { modulation::qpsk, modulation::qam64 })
        qa::for_each_odd_shape([&](int n_mat, int n_sym) {
            const auto b = qa::make_batch(4, 4, mod, n_mat, n_sym, 0.0, 30.0, ++seed);
            expect_same_as_cpu(b,
                               -1,
                               0.0f,
                               "4x4 " + to_string(mod) + " " +
                                   qa::shape_name(n_mat, n_sym));
        });
}

TEST(gpu_mtt, singular_channels_give_finite_llrs)
{
    QA_SKIP_WITHOUT_GPU();
    for (auto mod : qa::k_gpu_mods)
        for (int sorted : { 0, 1 }) {
            auto b = qa::make_batch(4, 4, mod, 60, 7, 10.0, 10.0, 500 + int(mod));
            qa::make_singular_channels(b);
            const int nt = b.n_tx, nr = b.n_rx;
            auto gpu = make_mtt(nt, nr, mod, "cuda", sorted);
            std::vector<float> g;
            ASSERT_NO_THROW(g = qa::run_llr(*gpu, b)) << to_string(mod);
            ASSERT_EQ(g.size(), b.bits.size());
            for (float x : g)
                ASSERT_TRUE(std::isfinite(x))
                    << to_string(mod) << " sorted_qr=" << sorted;
        }
}

TEST(gpu_mtt, buffers_are_reused_across_batch_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    const auto mod = modulation::qam16;
    auto gpu = make_mtt(4, 4, mod, "cuda");
    auto cpu = make_mtt(4, 4, mod, "cpu");
    const auto mid = qa::make_batch(4, 4, mod, 3000, 7, 0.0, 30.0, 601);
    const auto small = qa::make_batch(4, 4, mod, 5, 2, 0.0, 30.0, 602);
    const auto large = qa::make_batch(4, 4, mod, 20000, 7, 0.0, 30.0, 603);
    // Grow, shrink (buffers kept), grow past the first size, then repeat: every answer
    // must be the CPU's and a repeated batch must give identical LLRs.
    const auto g_mid = qa::run_llr(*gpu, mid);
    const auto g_small = qa::run_llr(*gpu, small);
    const auto g_large = qa::run_llr(*gpu, large);
    const auto g_mid2 = qa::run_llr(*gpu, mid);
    const auto g_small2 = qa::run_llr(*gpu, small);
    EXPECT_EQ(g_mid, g_mid2);
    EXPECT_EQ(g_small, g_small2);
    const std::pair<const qa::batch*, const std::vector<float>*> runs[] = {
        { &mid, &g_mid }, { &small, &g_small }, { &large, &g_large }
    };
    for (const auto& r : runs) {
        const llr_diff d = compare_llrs(*r.second, qa::run_llr(*cpu, *r.first), 1e-3);
        EXPECT_EQ(d.outside, 0u);
        EXPECT_EQ(d.sign, 0u);
    }
}

TEST(gpu_mtt, stats_match_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 3, 2, 20.0, 20.0, 701);
    auto gpu = make_mtt(4, 4, modulation::qam16, "cuda");
    auto cpu = make_mtt(4, 4, modulation::qam16, "cpu");
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
}

TEST(gpu_mtt, configuration_and_interface)
{
    QA_SKIP_WITHOUT_GPU();
    auto gpu = make_mtt(4, 4, modulation::qam64, "cuda");
    EXPECT_TRUE(gpu->soft());
    EXPECT_EQ(gpu->backend(), "cuda");
    // "auto" picks the GPU.
    EXPECT_EQ(make_mtt(4, 4, modulation::qam16, "auto")->backend(), "cuda");
    EXPECT_EQ(make_mtt(8, 8, modulation::qam64, "auto")->backend(), "cuda");
    // The shared validation still applies.
    EXPECT_THROW(make_mtt(2, 2, modulation::qpsk, "cuda", 2), std::invalid_argument);
    // kernel_seconds re-runs the last batch.
    const auto b = qa::make_batch(4, 4, modulation::qam64, 1000, 7, 0.0, 30.0, 801);
    qa::run_llr(*gpu, b);
    EXPECT_GT(gpu->kernel_seconds(3), 0.0);
}
