/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD node budget (detector_config::psd_node_budget) on the CPU: a budget ends one
// vector's search as the deadline does, so a vector's search is a prefix of the exact
// traversal: an unflagged vector has the exact decision and node counts, a flagged one
// at most the exact counts and no more path metrics than the budget plus one Expand and
// Evaluate. The default budget leaves realistic inputs exact, and bounds hostile ones.
// A call on one vector whose unbounded search is very long is still cancelled promptly.

#include "detect/psd/psd_params.h"
#include "qa_common.h"
#include "qa_psd_deadline_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

using namespace gr::mimodet;

namespace {

using result = qa::deadline_result;

detector::sptr make_psd(const qa::batch& b, int64_t budget, bool depth_first, int threads = 1)
{
    detector_config c;
    c.threads = threads;
    c.psd_node_budget = budget;
    const auto p = depth_first
                       ? core::psd_cpu_tuned(b.n_tx)
                       : core::psd_preset(b.n_tx, constellation::get(b.mod).pam_order());
    c.psd_lvl = p.lvl;
    c.psd_exp = p.exp;
    return qa::make("psd", b.n_tx, b.n_rx, b.mod, c);
}

//! Largest Expand and Evaluate of the set: how far one vector may pass the budget. The
//! depth-first search's starting radius (psd_radius) may leave it without a leaf when
//! the budget ends it: the SIC fallback then adds its 2 n_tx path metrics.
uint32_t largest_step(const qa::batch& b, bool depth_first)
{
    const int omega = constellation::get(b.mod).pam_order();
    if (depth_first)
        return static_cast<uint32_t>(omega + 2 * b.n_tx);
    const auto p = core::psd_preset(b.n_tx, omega);
    const auto eval = core::psd_eval(p, omega);
    return static_cast<uint32_t>(*std::max_element(eval.begin(), eval.end()));
}

/*!
 * cut against the unbounded search: unflagged vectors exact (bits and counts), flagged
 * ones a prefix (counts at most the exact ones) that stopped at the budget (evaluated
 * within one step of it). Returns the flagged count.
 */
size_t expect_budget_prefix(const qa::batch& b,
                            const result& cut,
                            const result& exact,
                            uint32_t budget,
                            uint32_t step,
                            const std::string& what)
{
    const int nb = b.n_tx * static_cast<int>(b.mod);
    size_t flagged = 0;
    for (size_t v = 0; v < cut.stats.size(); ++v) {
        const auto& s = cut.stats[v];
        const auto& e = exact.stats[v];
        EXPECT_LE(s.truncated, 1u) << what << ", vector " << v;
        EXPECT_LT(s.evaluated, budget + step) << what << ", vector " << v;
        if (s.truncated) {
            ++flagged;
            EXPECT_GE(s.evaluated, budget) << what << ", vector " << v;
            EXPECT_LE(s.expanded, e.expanded) << what << ", vector " << v;
            for (int k = 0; k < nb; ++k)
                EXPECT_LE(cut.bits[v * nb + k], 1) << what << ", vector " << v;
        } else {
            EXPECT_EQ(s.expanded, e.expanded) << what << ", vector " << v;
            EXPECT_EQ(s.evaluated, e.evaluated) << what << ", vector " << v;
            for (int k = 0; k < nb; ++k)
                EXPECT_EQ(cut.bits[v * nb + k], exact.bits[v * nb + k])
                    << what << ", vector " << v;
        }
        if (::testing::Test::HasFailure())
            break; // one vector's report is enough
    }
    return flagged;
}

} // namespace

TEST(psd_budget, validation)
{
    detector_config c;
    c.algorithm = "psd";
    c.n_tx = c.n_rx = 2;
    for (int64_t bad : { int64_t(-2), int64_t(-100), core::psd_max_node_budget + 1 }) {
        c.psd_node_budget = bad;
        try {
            detector::make(c);
            ADD_FAILURE() << "budget " << bad << " accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("psd_node_budget"), std::string::npos)
                << e.what();
        }
    }
    for (int64_t ok : { int64_t(-1), int64_t(0), int64_t(1), core::psd_max_node_budget }) {
        c.psd_node_budget = ok;
        EXPECT_NO_THROW(detector::make(c)) << ok;
    }
    // Other detectors' work does not depend on the input: a budget there would do
    // nothing, so only "default" and "none" are accepted.
    c.algorithm = "fsd";
    c.psd_node_budget = 1000;
    EXPECT_THROW(detector::make(c), std::invalid_argument);
    for (int64_t ok : { int64_t(-1), int64_t(0) }) {
        c.psd_node_budget = ok;
        EXPECT_NO_THROW(detector::make(c)) << ok;
    }
    // The default resolves to the configuration's budget, 0 to none.
    for (int omega : { 2, 4, 8 }) {
        EXPECT_EQ(core::psd_node_budget(-1, 4, omega), core::psd_default_node_budget(4, omega));
        EXPECT_GT(core::psd_default_node_budget(4, omega), 10000u);
        EXPECT_EQ(core::psd_node_budget(0, 4, omega), 0u);
        EXPECT_EQ(core::psd_node_budget(77, 4, omega), 77u);
    }
}

TEST(psd_budget, default_leaves_realistic_inputs_exact)
{
    // The operating SNRs of the configurations (RELIABILITY.md has the measured tails):
    // the default budget changes nothing here.
    struct point {
        modulation mod;
        double snr;
    };
    for (const point p : { point{ modulation::qpsk, 0.0 },
                           point{ modulation::qam16, 5.0 },
                           point{ modulation::qam64, 10.0 } }) {
        const auto b = qa::make_batch(4, 4, p.mod, 200, 7, p.snr, p.snr + 10.0, 5);
        for (bool df : { true, false }) {
            const std::string what = std::string(df ? "depth-first" : "generic") + " " +
                                     to_string(p.mod);
            const result exact = qa::run_with_stats(*make_psd(b, 0, df, 2), b);
            const result dflt = qa::run_with_stats(*make_psd(b, -1, df, 2), b);
            EXPECT_EQ(dflt.truncated, 0u) << what;
            EXPECT_EQ(dflt.bits, exact.bits) << what;
        }
    }
}

TEST(psd_budget, small_budget_ends_long_searches_only)
{
    // 4x4 64QAM at 6-10 dB: long searches. A budget in the body of the distribution
    // flags some vectors and leaves the others exact.
    const auto b = qa::make_batch(4, 4, modulation::qam64, 200, 7, 6.0, 10.0, 29);
    for (bool df : { true, false }) {
        const std::string what = df ? "depth-first" : "generic";
        const result exact = qa::run_with_stats(*make_psd(b, 0, df, 2), b);
        ASSERT_EQ(exact.truncated, 0u) << what;
        std::vector<uint32_t> ev;
        for (const auto& s : exact.stats)
            ev.push_back(s.evaluated);
        std::sort(ev.begin(), ev.end());
        const uint32_t budget = ev[ev.size() * 9 / 10]; // about 10 % reach it
        for (int threads : { 1, 2 }) {
            const result cut = qa::run_with_stats(*make_psd(b, budget, df, threads), b);
            const size_t flagged =
                expect_budget_prefix(b, cut, exact, budget, largest_step(b, df), what);
            EXPECT_GT(flagged, 0u) << what;
            EXPECT_LT(flagged, ev.size() / 5) << what;
        }
    }
}

TEST(psd_budget, hostile_vectors_are_bounded_and_flagged)
{
    // y scaled by 30 (a gain step, an interferer burst, a saturated ADC): the exact
    // search of such a vector can run for seconds to minutes (8x8 64QAM). The default
    // budget ends each within one step of the budget, flagged.
    for (int nt : { 4, 8 }) {
        auto b = qa::make_batch(nt, nt, modulation::qam64, 4, 1, 20.0, 20.0, 31);
        for (auto& y : b.y)
            y *= 30.0f;
        auto d = make_psd(b, -1, true);
        const result r = qa::run_with_stats(*d, b);
        const uint32_t budget = core::psd_default_node_budget(nt, 8);
        for (const auto& s : r.stats) {
            EXPECT_LT(s.evaluated, budget + 8u) << nt << "x" << nt;
            EXPECT_EQ(s.truncated, s.evaluated >= budget ? 1u : 0u) << nt << "x" << nt;
        }
        EXPECT_GT(r.truncated, 0u) << nt << "x" << nt;
    }
}

TEST(psd_budget, unbounded_single_vector_is_cancelled_promptly)
{
    // No budget: one 8x8 64QAM vector with y x 9 searches for minutes. cancel() from
    // another thread ends the call within the cancellation's check period.
    auto b = qa::make_batch(8, 8, modulation::qam64, 1, 1, 20.0, 20.0, 37);
    for (auto& y : b.y)
        y *= 9.0f;
    auto d = make_psd(b, 0, true);
    std::vector<uint8_t> bits(b.bits.size());
    auto call = std::async(std::launch::async, [&] {
        try {
            d->detect_bits(b.H.data(), b.y.data(), 1, 1, b.noise_var.data(), bits.data());
            return false;
        } catch (const cancelled&) {
            return true;
        }
    });
    // The search is well under way (or done, which the assertion below reports).
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    d->cancel();
    ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "the call did not react to cancel()";
    EXPECT_TRUE(call.get()) << "the search ended on its own within 200 ms; pick a longer one";
    // The detector stays usable.
    auto small = qa::make_batch(8, 8, modulation::qam64, 1, 1, 30.0, 30.0, 41);
    EXPECT_NO_THROW(d->detect_bits(
        small.H.data(), small.y.data(), 1, 1, small.noise_var.data(), bits.data()));
}
