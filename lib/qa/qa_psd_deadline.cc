/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD deadline (detector_config::psd_deadline_us) on the CPU: no deadline is the exact
// search; with a deadline a vector's search is a prefix of the exact traversal, so an
// unflagged vector has the exact decision and node count, a flagged one at most the
// exact node count, and the call ends near the budget.

#include "psd_params.h"
#include "qa_common.h"
#include <gtest/gtest.h>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

using clk = std::chrono::steady_clock;

detector::sptr make_psd(const qa::batch& b,
                        double deadline_us,
                        bool depth_first,
                        int threads,
                        const std::string& backend = "cpu")
{
    detector_config c;
    c.backend = backend;
    c.threads = threads;
    c.psd_deadline_us = deadline_us;
    if (depth_first) {
        const auto p = core::psd_cpu_tuned(b.n_tx);
        c.psd_lvl = p.lvl;
        c.psd_exp = p.exp;
    }
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
    r.bits.assign(b.bits.size(), 0xff); // 0xff: a vector left unwritten fails the checks
    r.stats.resize(static_cast<size_t>(b.n_mat) * b.n_sym);
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

/*!
 * With a deadline: every vector has valid bits and a flag of 0 or 1; an unflagged one
 * the exact decision and exact node counts (its search was the whole exact traversal);
 * a flagged one no more nodes than the exact search (a prefix of it).
 */
void expect_prefix_of_exact(const qa::batch& b, const result& cut, const result& exact)
{
    const int nb = b.n_tx * static_cast<int>(b.mod);
    for (size_t v = 0; v < cut.stats.size(); ++v) {
        const auto& s = cut.stats[v];
        const auto& e = exact.stats[v];
        ASSERT_LE(s.truncated, 1u) << "vector " << v;
        for (int k = 0; k < nb; ++k)
            ASSERT_LE(cut.bits[v * nb + k], 1) << "vector " << v;
        ASSERT_GE(s.expanded, 1u) << "vector " << v;
        if (s.truncated) {
            ASSERT_LE(s.expanded, e.expanded) << "vector " << v;
            ASSERT_LE(s.evaluated, e.evaluated) << "vector " << v;
        } else {
            ASSERT_EQ(s.expanded, e.expanded) << "vector " << v;
            ASSERT_EQ(s.evaluated, e.evaluated) << "vector " << v;
            for (int k = 0; k < nb; ++k)
                ASSERT_EQ(cut.bits[v * nb + k], exact.bits[v * nb + k]) << "vector " << v;
        }
    }
}

} // namespace

TEST(psd_deadline, validation)
{
    EXPECT_EQ(core::psd_deadline_ns(0.0), 0);
    EXPECT_EQ(core::psd_deadline_ns(1.0), 1000);
    EXPECT_EQ(core::psd_deadline_ns(1e-6), 1); // any positive budget stays positive
    for (double bad : { -1.0,
                        std::nan(""),
                        std::numeric_limits<double>::infinity(),
                        core::psd_max_deadline_us * 2 })
        EXPECT_THROW(core::psd_deadline_ns(bad), std::invalid_argument) << bad;

    detector_config c;
    c.algorithm = "psd";
    c.n_tx = c.n_rx = 2;
    c.psd_deadline_us = -5;
    EXPECT_THROW(detector::make(c), std::invalid_argument);
    c.psd_deadline_us = 100;
    EXPECT_NO_THROW(detector::make(c));
    // The other detectors' work does not depend on the channel: a budget is refused.
    c.algorithm = "mmse";
    EXPECT_THROW(detector::make(c), std::invalid_argument);
    c.psd_deadline_us = 0;
    EXPECT_NO_THROW(detector::make(c));
}

TEST(psd_deadline, none_is_exact_ml)
{
    // 4x4 16QAM: small enough for the exhaustive ML reference.
    const auto b = qa::make_batch(4, 4, modulation::qam16, 40, 7, 5.0, 20.0, 11);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    const auto ml_bits = qa::run_bits(*ml, b);
    for (bool df : { false, true }) {
        auto exact = make_psd(b, 0.0, df, 1);
        const result r = run(*exact, b);
        EXPECT_EQ(qa::count_non_ml(b, r.bits, ml_bits), 0) << (df ? "depth-first" : "generic");
        EXPECT_EQ(r.truncated, 0u);
        // A budget that never runs out reads the clock but changes nothing.
        auto loose = make_psd(b, 1e8, df, 2);
        const result l = run(*loose, b);
        EXPECT_EQ(l.bits, r.bits);
        EXPECT_EQ(l.truncated, 0u);
        for (size_t v = 0; v < l.stats.size(); ++v)
            ASSERT_EQ(l.stats[v].expanded, r.stats[v].expanded) << "vector " << v;
    }
}

TEST(psd_deadline, tiny_budget_truncates_and_stays_valid)
{
    // 4x4 64QAM at low SNR: long searches. 300 matrices x 7 symbols.
    const auto b = qa::make_batch(4, 4, modulation::qam64, 300, 7, 6.0, 10.0, 23);
    for (bool df : { false, true })
        for (int threads : { 1, 2 }) {
            const std::string what = std::string(df ? "depth-first" : "generic") + ", " +
                                     std::to_string(threads) + " threads";
            auto exact_det = make_psd(b, 0.0, df, threads);
            const result exact = run(*exact_det, b);
            ASSERT_EQ(exact.truncated, 0u) << what;

            // 1 us: spent during the first vectors; all later vectors stop after their
            // first descent.
            auto tiny_det = make_psd(b, 1.0, df, threads);
            const result tiny = run(*tiny_det, b);
            expect_prefix_of_exact(b, tiny, exact);
            EXPECT_GT(tiny.truncated, 0u) << what;
            EXPECT_LT(tiny.truncated, tiny.stats.size()) << what; // easy vectors stay exact

            // The time bound: a budget B ends the call after about B plus the first
            // descents of the remaining vectors, which cost no more than the 1 us run.
            // Generous factors: the build machine is shared.
            const double budget_s = std::max(0.002, exact.seconds / 4);
            auto mid_det = make_psd(b, budget_s * 1e6, df, threads);
            const result mid = run(*mid_det, b);
            expect_prefix_of_exact(b, mid, exact);
            EXPECT_LE(mid.seconds, 2 * budget_s + 4 * tiny.seconds + 0.05)
                << what << ": exact " << exact.seconds << " s, 1 us budget " << tiny.seconds
                << " s";
            EXPECT_LE(mid.truncated, tiny.truncated) << what;
            std::printf("%s: exact %.1f ms; budget 1 us: %.1f ms, %zu of %zu truncated; "
                        "budget %.1f ms: %.1f ms, %zu truncated\n",
                        what.c_str(),
                        exact.seconds * 1e3,
                        tiny.seconds * 1e3,
                        tiny.truncated,
                        tiny.stats.size(),
                        budget_s * 1e3,
                        mid.seconds * 1e3,
                        mid.truncated);
        }
}

TEST(psd_deadline, every_call_gets_its_own_budget)
{
    // A call that runs out of its budget must not leave the next call out of time.
    const auto hard = qa::make_batch(4, 4, modulation::qam64, 300, 7, 6.0, 6.0, 5);
    const auto small = qa::make_batch(4, 4, modulation::qam64, 2, 7, 6.0, 6.0, 6);
    auto exact_det = make_psd(hard, 0.0, false, 1);
    const result exact_hard = run(*exact_det, hard);
    const result exact_small = run(*exact_det, small);
    // A budget the hard call overruns and the small one (14 vectors) does not.
    const double budget_s = exact_hard.seconds / 4;
    ASSERT_GT(budget_s, 20 * exact_small.seconds) << "the cases are not hard enough here";
    auto det = make_psd(hard, budget_s * 1e6, false, 1);
    EXPECT_GT(run(*det, hard).truncated, 0u);
    const result again = run(*det, small);
    EXPECT_EQ(again.truncated, 0u);
    expect_prefix_of_exact(small, again, exact_small);
}
