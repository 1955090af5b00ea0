/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD deadline (detector_config::psd_deadline_us) on the CPU: no deadline is the exact
// search; with a deadline a vector's search is a prefix of the exact traversal, so an
// unflagged vector has the exact decision and node count, a flagged one at most the
// exact node count, and the call ends near the budget. Vectors started after the
// deadline (and vectors cut before their first leaf) take the SIC (Babai) point of the
// search's QR, flagged: it is checked against an independent SIC written here on the
// public QR helpers (qr.h).

#include "detect/psd/psd_params.h"
#include "detect/qr.h"
#include "qa_common.h"
#include "qa_psd_deadline_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {


detector::sptr make_psd(const qa::batch& b,
                        double deadline_us,
                        bool depth_first,
                        int threads,
                        const std::string& backend = "cpu",
                        int sorted_qr = -1)
{
    detector_config c;
    c.backend = parse_backend(backend);
    // The plain QR unless asked: the SIC references below are the Householder QR's.
    c.sorted_qr = sorted_qr == -1 ? 0 : sorted_qr;
    c.threads = threads;
    c.psd_deadline_us = deadline_us;
    c.psd_node_budget = 0; // only the deadline cuts searches here
    // depth_first: the depth-first set (the default); otherwise Algorithm 3 with the
    // paper's Table 5 set.
    const auto p = depth_first
                       ? core::psd_cpu_tuned(b.n_tx)
                       : core::psd_preset(b.n_tx, constellation::get(b.mod).pam_order());
    c.psd_lvl = p.lvl;
    c.psd_exp = p.exp;
    return qa::make("psd", b.n_tx, b.n_rx, b.mod, c);
}

using qa::run_with_stats;
using result = qa::deadline_result;

/*!
 * With a deadline: every vector has valid bits and a flag of 0 or 1; an unflagged one
 * the exact decision and exact node counts (its search was the whole exact traversal);
 * a flagged one no more expansions than the exact search (a prefix of it, plus the SIC
 * fallback's N path metrics when cut before its first leaf). A vector started after the
 * deadline (expanded = 0) is flagged, has evaluated = N and, when sic is given, the SIC
 * reference's bits. Returns the number of such vectors.
 */
size_t expect_prefix_of_exact(const qa::batch& b,
                              const result& cut,
                              const result& exact,
                              const std::vector<uint8_t>* sic = nullptr)
{
    const int nb = b.n_tx * static_cast<int>(b.mod);
    const uint32_t N = 2 * b.n_tx;
    size_t n_sic = 0;
    for (size_t v = 0; v < cut.stats.size(); ++v) {
        const auto& s = cut.stats[v];
        const auto& e = exact.stats[v];
        EXPECT_LE(s.truncated, 1u) << "vector " << v;
        for (int k = 0; k < nb; ++k)
            EXPECT_LE(cut.bits[v * nb + k], 1) << "vector " << v;
        if (s.expanded == 0) { // started after the deadline: the SIC fallback
            ++n_sic;
            EXPECT_EQ(s.truncated, 1u) << "vector " << v;
            EXPECT_EQ(s.evaluated, N) << "vector " << v;
            if (sic)
                for (int k = 0; k < nb; ++k)
                    EXPECT_EQ(cut.bits[v * nb + k], (*sic)[v * nb + k]) << "vector " << v;
        } else if (s.truncated) {
            EXPECT_LE(s.expanded, e.expanded) << "vector " << v;
            EXPECT_LE(s.evaluated, e.evaluated + N) << "vector " << v;
        } else {
            EXPECT_EQ(s.expanded, e.expanded) << "vector " << v;
            EXPECT_EQ(s.evaluated, e.evaluated) << "vector " << v;
            for (int k = 0; k < nb; ++k)
                EXPECT_EQ(cut.bits[v * nb + k], exact.bits[v * nb + k]) << "vector " << v;
        }
        if (::testing::Test::HasFailure())
            return n_sic; // one vector's report is enough
    }
    return n_sic;
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
        const result r = run_with_stats(*exact, b);
        EXPECT_EQ(qa::count_non_ml(b, r.bits, ml_bits), 0) << (df ? "depth-first" : "generic");
        EXPECT_EQ(r.truncated, 0u);
        // A budget that never runs out reads the clock but changes nothing.
        auto loose = make_psd(b, 1e8, df, 2);
        const result l = run_with_stats(*loose, b);
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
            const result exact = run_with_stats(*exact_det, b);
            ASSERT_EQ(exact.truncated, 0u) << what;

            // 1 us: spent during the first vectors (or before); all later vectors take
            // the SIC fallback, flagged (so, unlike a stop after the first descent,
            // even the easy ones: nothing certifies the SIC point as ML).
            auto tiny_det = make_psd(b, 1.0, df, threads);
            const result tiny = run_with_stats(*tiny_det, b);
            const auto sic = qa::reference_sic(b, [](const core::MatR& h) { return core::qr_householder(h); });
            const size_t tiny_sic = expect_prefix_of_exact(b, tiny, exact, &sic);
            EXPECT_GT(tiny.truncated, 0u) << what;
            EXPECT_GT(tiny_sic, tiny.stats.size() / 2) << what;

            // The time bound: a budget B ends the call after about B plus the first
            // descents of the remaining vectors, which cost no more than the 1 us run.
            // Generous factors: the build machine is shared.
            const double budget_s = std::max(0.002, exact.seconds / 4);
            auto mid_det = make_psd(b, budget_s * 1e6, df, threads);
            const result mid = run_with_stats(*mid_det, b);
            expect_prefix_of_exact(b, mid, exact, &sic);
            EXPECT_LE(mid.seconds, 2 * budget_s + 4 * tiny.seconds + 0.05)
                << what << ": exact " << exact.seconds << " s, 1 us budget " << tiny.seconds
                << " s";
            EXPECT_LE(mid.truncated, tiny.truncated) << what;
            std::printf("%s: exact %.1f ms; budget 1 us: %.1f ms, %zu of %zu truncated "
                        "(%zu SIC); budget %.1f ms: %.1f ms, %zu truncated\n",
                        what.c_str(),
                        exact.seconds * 1e3,
                        tiny.seconds * 1e3,
                        tiny.truncated,
                        tiny.stats.size(),
                        tiny_sic,
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
    const result exact_hard = run_with_stats(*exact_det, hard);
    const result exact_small = run_with_stats(*exact_det, small);
    // A budget the hard call overruns and the small one (14 vectors) does not.
    const double budget_s = exact_hard.seconds / 4;
    ASSERT_GT(budget_s, 20 * exact_small.seconds) << "the cases are not hard enough here";
    auto det = make_psd(hard, budget_s * 1e6, false, 1);
    EXPECT_GT(run_with_stats(*det, hard).truncated, 0u);
    const result again = run_with_stats(*det, small);
    EXPECT_EQ(again.truncated, 0u);
    expect_prefix_of_exact(small, again, exact_small);
}

TEST(psd_deadline, sic_fallback_after_expiry)
{
    // A budget of 1 ns is spent before the first vector starts: every vector takes the
    // SIC fallback. Its bits must be the independent SIC reference's (same QR choice),
    // for both searches, both QR choices, one and two threads; vectors left unflagged
    // (none expected here) must be exact.
    struct sys {
        modulation mod;
        double snr_lo, snr_hi;
    };
    for (const sys& y : { sys{ modulation::qam64, 6.0, 10.0 },
                          sys{ modulation::qam16, 5.0, 20.0 },
                          sys{ modulation::qpsk, 0.0, 5.0 } }) {
        const auto b = qa::make_batch(4, 4, y.mod, 150, 7, y.snr_lo, y.snr_hi, 71);
        for (int sorted : { 0, 1 }) {
            const auto sic = qa::reference_sic(b, [&](const core::MatR& h) { return sorted == 1 ? core::qr_sorted(h) : core::qr_householder(h); });
            for (bool df : { false, true })
                for (int threads : { 1, 2 }) {
                    const std::string what = "mod " + std::to_string(int(y.mod)) +
                                             (df ? " depth-first" : " generic") +
                                             (sorted ? " sorted QR" : " plain QR") + ", " +
                                             std::to_string(threads) + " threads";
                    auto exact_det = make_psd(b, 0.0, df, threads, "cpu", sorted);
                    const result exact = run_with_stats(*exact_det, b);
                    ASSERT_EQ(exact.truncated, 0u) << what;
                    auto det = make_psd(b, 1e-3, df, threads, "cpu", sorted);
                    const result cut = run_with_stats(*det, b);
                    const size_t n_sic = expect_prefix_of_exact(b, cut, exact, &sic);
                    ASSERT_FALSE(::testing::Test::HasFailure()) << what;
                    EXPECT_GE(n_sic, cut.stats.size() * 9 / 10) << what;
                    // The check can tell SIC from ML: at these SNRs they often differ.
                    size_t differ = 0;
                    const int nb = b.n_tx * static_cast<int>(b.mod);
                    for (size_t v = 0; v < exact.stats.size(); ++v)
                        differ += !std::equal(&sic[v * nb], &sic[v * nb] + nb,
                                              &exact.bits[v * nb]);
                    if (y.mod == modulation::qam64)
                        EXPECT_GT(differ, exact.stats.size() / 20) << what;
                    std::printf("%s: %zu of %zu vectors SIC, SIC != exact ML in %zu\n",
                                what.c_str(),
                                n_sic,
                                cut.stats.size(),
                                differ);
                }
        }
    }
}
