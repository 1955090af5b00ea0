/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD deadline on the GPU (ctest label "gpu"; skips without a CUDA device): no deadline
// is the exact search (the CPU's decisions, no flags); with one, each vector's search
// is a prefix of the exact traversal (unflagged: the exact bits and node counts,
// flagged: at most the exact node counts), flagged vectors exist for a tiny budget, and
// the call's time stays bounded. Both kernel variants (warp, block).

#include "psd_params.h"
#include "qa_common.h"
#include <gtest/gtest.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

using clk = std::chrono::steady_clock;

#define SKIP_WITHOUT_GPU()                                                               \
    do {                                                                                 \
        if (gr::mimodet::cuda_device_count() == 0)                                       \
            GTEST_SKIP() << "no CUDA device";                                            \
    } while (0)

//! Sets MIMODET_PSD_KERNEL while alive (read when a detector is made).
struct kernel_variant {
    explicit kernel_variant(const char* v) { setenv("MIMODET_PSD_KERNEL", v, 1); }
    ~kernel_variant() { unsetenv("MIMODET_PSD_KERNEL"); }
};

detector::sptr make_psd(const qa::batch& b, const std::string& backend, double deadline_us)
{
    detector_config c;
    c.backend = backend;
    c.psd_deadline_us = deadline_us;
    // The CUDA default set on both, so that decisions and node counts compare.
    const auto g = core::psd_gpu_preset(b.n_tx, constellation::get(b.mod).pam_order());
    c.psd_lvl = g.lvl;
    c.psd_exp = g.exp;
    return qa::make("psd", b.n_tx, b.n_rx, b.mod, c);
}

struct result {
    std::vector<uint8_t> bits;
    std::vector<vector_stats> stats;
    double seconds = 0;
    size_t truncated = 0;
};

result run(detector& d, const qa::batch& b)
{
    result r;
    r.bits.assign(b.bits.size(), 0xff); // a vector left unwritten fails the checks
    r.stats.assign(static_cast<size_t>(b.n_mat) * b.n_sym, vector_stats{});
    const auto t0 = clk::now();
    d.detect_bits(b.H.data(),
                  b.y.data(),
                  b.n_mat,
                  b.n_sym,
                  b.noise_var.data(),
                  r.bits.data(),
                  r.stats.data());
    r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
    for (const auto& s : r.stats)
        r.truncated += s.truncated;
    return r;
}

void expect_prefix_of_exact(const qa::batch& b,
                            const result& cut,
                            const result& exact,
                            const std::string& what)
{
    const int nb = b.n_tx * static_cast<int>(b.mod);
    for (size_t v = 0; v < cut.stats.size(); ++v) {
        const auto& s = cut.stats[v];
        const auto& e = exact.stats[v];
        ASSERT_LE(s.truncated, 1u) << what << " vector " << v;
        for (int k = 0; k < nb; ++k)
            ASSERT_LE(cut.bits[v * nb + k], 1) << what << " vector " << v;
        ASSERT_GE(s.expanded, 1u) << what << " vector " << v;
        if (s.truncated) {
            ASSERT_LE(s.expanded, e.expanded) << what << " vector " << v;
        } else {
            ASSERT_EQ(s.expanded, e.expanded) << what << " vector " << v;
            ASSERT_EQ(s.evaluated, e.evaluated) << what << " vector " << v;
            for (int k = 0; k < nb; ++k)
                ASSERT_EQ(cut.bits[v * nb + k], exact.bits[v * nb + k])
                    << what << " vector " << v;
        }
    }
}

} // namespace

TEST(gpu_psd_deadline, none_is_exact)
{
    SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 300, 7, 5.0, 20.0, 31);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    const auto ml_bits = qa::run_bits(*ml, b);
    for (const char* variant : { "warp", "block" }) {
        const kernel_variant kv(variant);
        auto exact = make_psd(b, "cuda", 0.0);
        ASSERT_EQ(exact->backend(), "cuda");
        const result r = run(*exact, b);
        EXPECT_EQ(qa::count_non_ml(b, r.bits, ml_bits), 0) << variant;
        EXPECT_EQ(r.truncated, 0u) << variant;
        // A budget that never runs out reads the timer but changes nothing.
        auto loose = make_psd(b, "cuda", 1e8);
        const result l = run(*loose, b);
        EXPECT_EQ(l.bits, r.bits) << variant;
        EXPECT_EQ(l.truncated, 0u) << variant;
        for (size_t v = 0; v < l.stats.size(); ++v)
            ASSERT_EQ(l.stats[v].expanded, r.stats[v].expanded) << variant << " vector " << v;
    }
}

TEST(gpu_psd_deadline, tiny_budget_truncates_and_stays_bounded)
{
    SKIP_WITHOUT_GPU();
    // 4x4 64QAM at low SNR, a 20 MHz slot's worth of vectors four times over (several
    // chunks on several streams: they share the call's deadline).
    const auto b = qa::make_batch(4, 4, modulation::qam64, 4 * 1200, 7, 6.0, 10.0, 47);
    for (const char* variant : { "warp", "block" }) {
        const kernel_variant kv(variant);
        auto exact_det = make_psd(b, "cuda", 0.0);
        (void)run(*exact_det, b); // warm-up: module load, buffers
        const result exact = run(*exact_det, b);
        ASSERT_EQ(exact.truncated, 0u) << variant;

        auto tiny_det = make_psd(b, "cuda", 1.0);
        (void)run(*tiny_det, b);
        const result tiny = run(*tiny_det, b);
        expect_prefix_of_exact(b, tiny, exact, std::string(variant) + " 1 us");
        EXPECT_GT(tiny.truncated, 0u) << variant;
        // With 1 us, about all the work is the first descents: much less than exact.
        EXPECT_LT(tiny.seconds, exact.seconds) << variant;

        // A budget of a quarter of the exact time: the call ends after about the budget
        // plus the remaining first descents (no more than the 1 us call), plus the copies.
        const double budget_s = exact.seconds / 4;
        auto mid_det = make_psd(b, "cuda", budget_s * 1e6);
        (void)run(*mid_det, b);
        const result mid = run(*mid_det, b);
        expect_prefix_of_exact(b, mid, exact, std::string(variant) + " mid");
        EXPECT_LE(mid.seconds, 1.5 * budget_s + 2 * tiny.seconds + 0.005)
            << variant << ": exact " << exact.seconds << " s, 1 us budget " << tiny.seconds;
        EXPECT_LE(mid.truncated, tiny.truncated) << variant;
        std::printf("%s: %zu vectors; exact %.2f ms; budget 1 us: %.2f ms, %zu truncated; "
                    "budget %.2f ms: %.2f ms, %zu truncated\n",
                    variant,
                    exact.stats.size(),
                    exact.seconds * 1e3,
                    tiny.seconds * 1e3,
                    tiny.truncated,
                    budget_s * 1e3,
                    mid.seconds * 1e3,
                    mid.truncated);
    }
}
