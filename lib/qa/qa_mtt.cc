/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Multi-pass trellis traversal: exact max-log LLRs for two transmit antennas (every path
// through a vertex of either stage is enumerated), near-ML decisions for 4x4, parameter
// validation and singular channels.

#include "detect/mtt/mtt_common.h"
#include "qa_common.h"
#include <gtest/gtest.h>
#include <cmath>

using namespace gr::mimodet;

namespace {

detector_config mtt_config(int sorted_qr = -1)
{
    detector_config cfg;
    cfg.sorted_qr = sorted_qr;
    cfg.llr_clip = 0.0f;
    return cfg;
}

//! Vectors with at least one LLR outside |a-b| <= tol*max(1,|b|).
int count_llr_mismatches(const std::vector<float>& a, const std::vector<float>& b, int nb)
{
    int bad = 0;
    for (size_t v = 0; v < a.size() / nb; ++v) {
        bool ok = true;
        for (int k = 0; k < nb; ++k) {
            const double x = a[v * nb + k], ref = b[v * nb + k];
            ok &= std::isfinite(x) && std::abs(x - ref) <= 1e-4 * std::max(1.0, std::abs(ref));
        }
        bad += ok ? 0 : 1;
    }
    return bad;
}

} // namespace

TEST(mtt, two_antennas_give_exact_maxlog_llrs)
{
    // 2000 vectors per configuration (500 matrices x 4 symbols), 0-30 dB.
    struct shape {
        int n_tx, n_rx;
    };
    uint64_t seed = 100;
    for (auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 })
        for (auto sh : { shape{ 2, 2 }, shape{ 2, 3 }, shape{ 2, 4 }, shape{ 1, 2 } }) {
            const auto b = qa::make_batch(sh.n_tx, sh.n_rx, mod, 500, 4, 0.0, 30.0, ++seed);
            auto ml = qa::make("ml", sh.n_tx, sh.n_rx, mod, mtt_config());
            auto mtt = qa::make("mtt", sh.n_tx, sh.n_rx, mod, mtt_config());
            const auto ref = qa::run_llr(*ml, b);
            const auto got = qa::run_llr(*mtt, b);
            EXPECT_EQ(count_llr_mismatches(got, ref, sh.n_tx * static_cast<int>(mod)), 0)
                << sh.n_tx << "x" << sh.n_rx << " " << to_string(mod);
        }
}

TEST(mtt, plain_qr_ordering_is_also_exact_for_two_antennas)
{
    const auto b = qa::make_batch(2, 2, modulation::qam16, 500, 4, 0.0, 30.0, 7);
    auto ml = qa::make("ml", 2, 2, modulation::qam16, mtt_config());
    auto mtt = qa::make("mtt", 2, 2, modulation::qam16, mtt_config(0));
    EXPECT_EQ(count_llr_mismatches(qa::run_llr(*mtt, b), qa::run_llr(*ml, b), 8), 0);
}

TEST(mtt, four_by_four_16qam_signs_agree_with_ml)
{
    const auto b = qa::make_batch(4, 4, modulation::qam16, 300, 5, 20.0, 20.0, 42);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    auto mtt = qa::make("mtt", 4, 4, modulation::qam16, mtt_config());
    const auto ml_bits = qa::run_bits(*ml, b);
    std::vector<vector_stats> stats(b.n_mat * b.n_sym);
    std::vector<float> llr(b.bits.size());
    mtt->detect_llr(b.H.data(),
                    b.y.data(),
                    b.n_mat,
                    b.n_sym,
                    b.noise_var.data(),
                    llr.data(),
                    stats.data());
    size_t agree = 0;
    for (size_t i = 0; i < llr.size(); ++i) {
        ASSERT_TRUE(std::isfinite(llr[i]));
        agree += (llr[i] < 0.0f ? 1 : 0) == ml_bits[i] ? 1 : 0;
    }
    const double ratio = static_cast<double>(agree) / llr.size();
    EXPECT_GE(ratio, 0.99) << agree << " of " << llr.size() << " bits agree";
    // 16 root edges, 3 reductions of 16 x 16 edges, and one edge per path for each of
    // the 3 + 3 extension steps (the slicer's choice).
    EXPECT_EQ(stats[0].evaluated, 16u + 3u * 256u + 6u * 16u);
    EXPECT_EQ(stats[0].expanded, 1u + 3u * 16u);
    EXPECT_EQ(stats[0].evaluated, core::mtt::edge_weights_per_vector(4, 16));

    // Hard decisions through detect_bits are the LLR signs.
    const auto bits = qa::run_bits(*mtt, b);
    for (size_t i = 0; i < llr.size(); ++i)
        ASSERT_EQ(bits[i], llr[i] < 0.0f ? 1 : 0);
}

TEST(mtt, llr_clip_bounds_the_output)
{
    const auto b = qa::make_batch(4, 4, modulation::qpsk, 50, 4, 10.0, 30.0, 3);
    detector_config cfg = mtt_config();
    cfg.llr_clip = 5.0f;
    auto mtt = qa::make("mtt", 4, 4, modulation::qpsk, cfg);
    for (float l : qa::run_llr(*mtt, b))
        EXPECT_LE(std::abs(l), 5.0f);
}

TEST(mtt, rejects_bad_parameters)
{
    for (int v : { -2, 2, 100 }) {
        detector_config cfg = mtt_config(v);
        EXPECT_THROW(qa::make("mtt", 2, 2, modulation::qam16, cfg), std::invalid_argument)
            << v;
    }
    EXPECT_THROW(qa::make("mtt", 9, 9, modulation::qpsk), std::invalid_argument);
    EXPECT_THROW(qa::make("mtt", 4, 2, modulation::qpsk), std::invalid_argument);
    detector_config neg = mtt_config();
    neg.llr_clip = -1.0f;
    EXPECT_THROW(qa::make("mtt", 2, 2, modulation::qpsk, neg), std::invalid_argument);
    for (int v : { -1, 0, 1 })
        EXPECT_NO_THROW(qa::make("mtt", 4, 4, modulation::qam64, mtt_config(v))) << v;
}

TEST(mtt, singular_channels_give_finite_llrs)
{
    for (int sorted : { 0, 1 })
        for (int nt : { 2, 4 })
            for (auto mod : { modulation::qpsk, modulation::qam64 }) {
                auto b = qa::make_batch(nt, nt, mod, 2, 3, 20.0, 20.0, 11);
                // Matrix 0: all zero; matrix 1: column 1 duplicates column 0.
                for (int i = 0; i < nt * nt; ++i)
                    b.H[i] = 0.0f;
                qa::cf* h1 = &b.H[nt * nt];
                for (int r = 0; r < nt; ++r)
                    h1[r * nt + 1] = h1[r * nt + 0];
                auto mtt = qa::make("mtt", nt, nt, mod, mtt_config(sorted));
                const auto llr = qa::run_llr(*mtt, b);
                const size_t per_mat = llr.size() / 2;
                for (size_t i = 0; i < llr.size(); ++i)
                    ASSERT_TRUE(std::isfinite(llr[i])) << i;
                // Without a channel every hypothesis has the same metric.
                for (size_t i = 0; i < per_mat; ++i)
                    EXPECT_EQ(llr[i], 0.0f);
            }
}
