/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD node budget on the GPU (ctest label "gpu"; skips without a CUDA device).
//  - Algorithm 3 (warp and block kernels) checks the budget where the CPU's generic
//    search does: with any budget the GPU's bits, counts and flags equal the CPU's.
//  - The depth-first (SE) kernels: a budget the first pass reaches stops the vector as
//    the CPU does (the same bits, counts and flags); a budget a spread search reaches
//    counts its tasks together, so there only the unflagged vectors must be the exact
//    decision.
//  - The default budget leaves realistic inputs exact, and bounds hostile ones.
// Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the batches are smaller: a budget
// still ends searches in each case, and most vectors of the one hostile 64QAM matrix still
// reach the default budget (a few million path metrics each).

#include "detect/psd/psd_params.h"
#include "qa_common.h"
#include "qa_gpu_common.h"
#include "qa_psd_deadline_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

using result = qa::deadline_result;

detector::sptr make_psd(const qa::batch& b,
                        const std::string& backend,
                        int64_t budget,
                        const core::psd_params& p)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.psd_node_budget = budget;
    c.psd_lvl = p.lvl;
    c.psd_exp = p.exp;
    return qa::make_counts_as_cuda("psd", b.n_tx, b.n_rx, b.mod, c);
}

//! The evaluated count at fraction f of the exact search's distribution.
uint32_t quantile(const result& exact, double f)
{
    std::vector<uint32_t> ev;
    for (const auto& s : exact.stats)
        ev.push_back(s.evaluated);
    std::sort(ev.begin(), ev.end());
    return ev[static_cast<size_t>(f * (ev.size() - 1))];
}

void expect_same(const result& g, const result& c, const std::string& what)
{
    ASSERT_EQ(g.bits, c.bits) << what;
    size_t differ = 0;
    for (size_t v = 0; v < g.stats.size(); ++v)
        differ += g.stats[v].expanded != c.stats[v].expanded ||
                  g.stats[v].evaluated != c.stats[v].evaluated ||
                  g.stats[v].truncated != c.stats[v].truncated;
    EXPECT_EQ(differ, 0u) << what;
}

struct env_kernel {
    explicit env_kernel(const char* v) { setenv("MIMODET_PSD_KERNEL", v, 1); }
    ~env_kernel() { unsetenv("MIMODET_PSD_KERNEL"); }
};

} // namespace

TEST(gpu_psd_budget, algorithm3_stops_where_the_cpu_does)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(
        4, 4, modulation::qam16, qa::sanitizer_size(300, 40), 7, 0.0, 8.0, 51);
    const auto p = core::psd_gpu_preset(4, 4);
    ASSERT_FALSE(core::psd_is_depth_first(p));
    const result exact = qa::run_with_stats(*make_psd(b, "cpu", 0, p), b);
    for (const char* variant : { "warp", "block" }) {
        env_kernel k(variant);
        for (double f : { 0.5, 0.9 }) {
            const uint32_t budget = quantile(exact, f);
            const std::string what = std::string(variant) + ", budget " + std::to_string(budget);
            const result c = qa::run_with_stats(*make_psd(b, "cpu", budget, p), b);
            const result g = qa::run_with_stats(*make_psd(b, "cuda", budget, p), b);
            EXPECT_GT(c.truncated, 0u) << what;
            expect_same(g, c, what);
        }
    }
}

TEST(gpu_psd_budget, depth_first_first_pass_stops_where_the_cpu_does)
{
    QA_SKIP_WITHOUT_GPU();
    // Budgets below the first pass's spread point (qa::psd_se_spread_nodes expansions,
    // |Omega| path metrics each): every vector the budget ends, ends in the first pass.
    for (modulation mod : { modulation::qam16, modulation::qam64 }) {
        const auto b =
            qa::make_batch(4, 4, mod, qa::sanitizer_size(300, 40), 7, 0.0, 10.0, 53);
        const auto p = core::psd_cpu_tuned(4);
        const uint32_t spread =
            qa::psd_se_spread_nodes() *
            static_cast<uint32_t>(constellation::get(mod).pam_order());
        for (uint32_t budget : { spread / 8, spread / 2 }) {
            const std::string what = to_string(mod) + ", budget " + std::to_string(budget);
            const result c = qa::run_with_stats(*make_psd(b, "cpu", budget, p), b);
            const result g = qa::run_with_stats(*make_psd(b, "cuda", budget, p), b);
            EXPECT_GT(c.truncated, 0u) << what;
            expect_same(g, c, what);
        }
    }
}

TEST(gpu_psd_budget, depth_first_spread_searches_stay_exact_where_unflagged)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(
        4, 4, modulation::qam64, qa::sanitizer_size(300, 40), 7, -5.0, 8.0, 57);
    const auto p = core::psd_cpu_tuned(4);
    const result exact = qa::run_with_stats(*make_psd(b, "cpu", 0, p), b);
    const uint32_t budget = std::max(quantile(exact, 0.95), 4096u);
    const result g = qa::run_with_stats(*make_psd(b, "cuda", budget, p), b);
    const int nb = 4 * 6;
    size_t flagged = 0, differ = 0;
    for (size_t v = 0; v < g.stats.size(); ++v) {
        if (g.stats[v].truncated) {
            ++flagged;
            continue;
        }
        differ += !std::equal(g.bits.begin() + v * nb, g.bits.begin() + (v + 1) * nb,
                              exact.bits.begin() + v * nb);
    }
    EXPECT_EQ(differ, 0u) << "budget " << budget;
    EXPECT_GT(flagged, 0u) << "budget " << budget;
    EXPECT_LT(flagged, g.stats.size() / 5) << "budget " << budget;
    for (uint8_t x : g.bits)
        ASSERT_LE(x, 1);
    std::printf("budget %u: %zu of %zu flagged\n", budget, flagged, g.stats.size());
}

TEST(gpu_psd_budget, default_leaves_realistic_inputs_exact_and_bounds_hostile_ones)
{
    QA_SKIP_WITHOUT_GPU();
    for (modulation mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        const double snr = mod == modulation::qpsk ? 0.0 : (mod == modulation::qam16 ? 5.0 : 10.0);
        const auto b = qa::make_batch(
            4, 4, mod, qa::sanitizer_size(400, 40), 7, snr, snr + 10.0, 59);
        const auto p = core::psd_resolve({}, {}, 4, constellation::get(mod).pam_order());
        const result exact = qa::run_with_stats(*make_psd(b, "cpu", 0, p), b);
        const result g = qa::run_with_stats(*make_psd(b, "cuda", -1, p), b);
        EXPECT_EQ(g.truncated, 0u) << to_string(mod);
        EXPECT_EQ(g.bits, exact.bits) << to_string(mod);

        // y x 30: the default budget ends the long searches; every vector gets bits.
        auto h = qa::make_batch(4, 4, mod, qa::sanitizer_size(50, 1), 7, 20.0, 20.0, 61);
        for (auto& y : h.y)
            y *= 30.0f;
        const result hg = qa::run_with_stats(*make_psd(h, "cuda", -1, p), h);
        for (uint8_t x : hg.bits)
            ASSERT_LE(x, 1) << to_string(mod);
        if (mod == modulation::qam64)
            EXPECT_GT(hg.truncated, 0u);
        std::printf("%s: hostile y x 30: %zu of %zu vectors flagged\n", to_string(mod).c_str(),
                    hg.truncated, hg.stats.size());
    }
}
