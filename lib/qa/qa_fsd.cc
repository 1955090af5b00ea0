/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Fixed-complexity sphere decoder (fsd) and its soft-output extension (sfsd), checked
// against exhaustive ML.

#include "detect/fsd/fsd_common.h"
#include "detect/qr.h"
#include "qa_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

using namespace gr::mimodet;

namespace {

const modulation k_mods[] = { modulation::qpsk, modulation::qam16, modulation::qam64 };

detector_config fsd_config(int full_levels, int niter = -1, float clip = 0.0f)
{
    detector_config c;
    c.fsd_full_levels = full_levels;
    c.sfsd_niter = niter;
    c.llr_clip = clip;
    return c;
}

std::vector<uint8_t> signs(const std::vector<float>& llr)
{
    std::vector<uint8_t> b(llr.size());
    for (size_t i = 0; i < llr.size(); ++i)
        b[i] = llr[i] < 0 ? 1 : 0;
    return b;
}

// |a - b| within rel of the larger magnitude (absolute near zero).
bool close(float a, float b, double rel)
{
    return std::abs(a - b) <= rel * std::max({ 1.0, std::abs(double(a)), std::abs(double(b)) });
}

} // namespace

TEST(fsd, two_tx_with_t1_is_ml)
{
    // With n_tx = 2 and T = 1 every top symbol is tried and SIC on the last level is the
    // exact minimiser for it, so FSD is ML.
    for (auto mod : k_mods) {
        const auto b = qa::make_batch(2, 2, mod, 500, 4, 0.0, 30.0, 11 + int(mod));
        auto fsd = qa::make("fsd", 2, 2, mod, fsd_config(1));
        auto ml = qa::make("ml", 2, 2, mod);
        EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*fsd, b), qa::run_bits(*ml, b)), 0)
            << to_string(mod);
    }
}

TEST(fsd, more_receive_antennas_and_full_expansion_are_ml)
{
    // n_rx > n_tx: the thin QR drops the part of y outside span(H), a constant.
    for (auto mod : k_mods) {
        const auto b = qa::make_batch(2, 4, mod, 200, 3, 0.0, 30.0, 21 + int(mod));
        auto fsd = qa::make("fsd", 2, 4, mod);
        auto ml = qa::make("ml", 2, 4, mod);
        EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*fsd, b), qa::run_bits(*ml, b)), 0)
            << to_string(mod);
    }
    // T = n_tx expands every level: exhaustive ML.
    const auto b = qa::make_batch(3, 3, modulation::qam16, 100, 2, 0.0, 20.0, 31);
    auto fsd = qa::make("fsd", 3, 3, modulation::qam16, fsd_config(3));
    auto ml = qa::make("ml", 3, 3, modulation::qam16);
    EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*fsd, b), qa::run_bits(*ml, b)), 0);
}

TEST(fsd, plain_sic_and_noiseless_detection)
{
    // T = 0 is SIC in the FSD (V-BLAST-like) order; without noise every T is exact.
    for (int T : { 0, 1, 2 }) {
        const auto b = qa::make_batch(4, 4, modulation::qam16, 50, 2, 200.0, 200.0, 41);
        auto fsd = qa::make("fsd", 4, 4, modulation::qam16, fsd_config(T));
        EXPECT_EQ(qa::run_bits(*fsd, b), b.bits) << "T=" << T;
    }
}

TEST(fsd, stats_count_the_fixed_tree)
{
    const auto b = qa::make_batch(4, 4, modulation::qam16, 2, 3, 10.0, 10.0, 51);
    auto fsd = qa::make("fsd", 4, 4, modulation::qam16);
    auto sfsd = qa::make("sfsd", 4, 4, modulation::qam16);
    std::vector<uint8_t> bits(b.bits.size());
    std::vector<float> llr(b.bits.size());
    std::vector<vector_stats> st(6), st_soft(6);
    fsd->detect_bits(b.H.data(), b.y.data(), 2, 3, b.noise_var.data(), bits.data(), st.data());
    sfsd->detect_llr(
        b.H.data(), b.y.data(), 2, 3, b.noise_var.data(), llr.data(), st_soft.data());
    for (int v = 0; v < 6; ++v) {
        // Root + 16 paths x 3 SIC levels; 16 leaves.
        EXPECT_EQ(st[v].expanded, 1u + 16 * 3);
        EXPECT_EQ(st[v].evaluated, 16u);
        // + N_iter=4 paths x (3 branching nodes + 4 bits x (2+1+0) SIC nodes);
        // + 4 x 4 bits x 3 levels leaves.
        EXPECT_EQ(st_soft[v].expanded, 49u + 4 * (3 + 4 * 3));
        EXPECT_EQ(st_soft[v].evaluated, 16u + 4 * 4 * 3);
    }
}

TEST(sfsd, signs_are_the_fsd_decision_or_a_better_list_path)
{
    // The LLR signs give the least-metric path of the SFSD list. That list contains the
    // FSD list, so the signs are the FSD decision unless an extension path (a bit flip
    // on a single-expanded level followed by a different SIC tail) has a lower metric.
    // With n_tx = 2, T = 1 the FSD decision is ML, so the signs must equal it.
    int total = 0, better = 0;
    for (int nt : { 2, 4 })
        for (auto mod : k_mods)
            for (int T : { 1, 2 }) {
                if (T >= nt || (mod == modulation::qam64 && T == 2))
                    continue;
                const auto b =
                    qa::make_batch(nt, nt, mod, 150, 4, 0.0, 30.0, 61 + nt + int(mod) + T);
                auto fsd = qa::make("fsd", nt, nt, mod, fsd_config(T));
                auto sfsd = qa::make("sfsd", nt, nt, mod, fsd_config(T));
                const auto hard = qa::run_bits(*fsd, b);
                const auto soft = signs(qa::run_llr(*sfsd, b));
                const int q = int(mod), nb = nt * q;
                int differ = 0, worse = 0;
                for (int m = 0; m < b.n_mat; ++m)
                    for (int s = 0; s < b.n_sym; ++s) {
                        const size_t v = size_t(m) * b.n_sym + s;
                        if (std::equal(&hard[v * nb], &hard[v * nb] + nb, &soft[v * nb]))
                            continue;
                        ++differ;
                        const cf* H = &b.H[size_t(m) * nt * nt];
                        const cf* y = &b.y[v * nt];
                        const double ms = qa::metric(H, y, &soft[v * nb], nt, nt, mod);
                        const double mh = qa::metric(H, y, &hard[v * nb], nt, nt, mod);
                        if (!(ms < mh * (1 + 1e-6) + 1e-12))
                            ++worse;
                    }
                if (nt == 2)
                    EXPECT_EQ(differ, 0) << to_string(mod);
                EXPECT_EQ(worse, 0) << nt << "x" << nt << " " << to_string(mod) << " T=" << T;
                total += b.n_mat * b.n_sym;
                better += differ;
                std::printf("  sfsd vs fsd %dx%d %s T=%d: %d of %d vectors improved\n",
                            nt,
                            nt,
                            to_string(mod).c_str(),
                            T,
                            differ,
                            b.n_mat * b.n_sym);
            }
    RecordProperty("vectors", total);
    RecordProperty("improved_by_extension", better);
}

TEST(sfsd, signs_agree_with_ml_4x4_16qam_20db)
{
    const auto b = qa::make_batch(4, 4, modulation::qam16, 375, 4, 20.0, 20.0, 71);
    auto sfsd = qa::make("sfsd", 4, 4, modulation::qam16);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    const auto soft = signs(qa::run_llr(*sfsd, b));
    const auto ref = qa::run_bits(*ml, b);
    size_t agree = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        agree += soft[i] == ref[i];
    const double frac = double(agree) / ref.size();
    std::printf("  sfsd 4x4 16QAM 20 dB: %zu of %zu bits agree with ML\n", agree, ref.size());
    EXPECT_GE(frac, 0.99);
    // The hard FSD (T = 1, FSD ordering) is quasi-ML here too.
    auto fsd = qa::make("fsd", 4, 4, modulation::qam16);
    const auto hard = qa::run_bits(*fsd, b);
    size_t agree_hard = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        agree_hard += hard[i] == ref[i];
    std::printf("  fsd 4x4 16QAM 20 dB: %zu of %zu bits agree with ML\n", agree_hard, ref.size());
    EXPECT_GE(double(agree_hard) / ref.size(), 0.99);
}

TEST(fsd, ordering_puts_the_weakest_stream_on_the_full_level)
{
    // Barbero & Thompson: the first detected level (last column) takes the stream of
    // largest noise amplification diag((H^H H)^-1) when fully expanded (T >= 1), the
    // smallest when it is a SIC level (T = 0, as V-BLAST).
    std::mt19937_64 rng(5);
    std::normal_distribution<double> g(0, std::sqrt(0.5));
    for (int trial = 0; trial < 50; ++trial) {
        core::MatC H(4, 4);
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c)
                H(r, c) = { g(rng), g(rng) };
        const Eigen::VectorXd amp = (H.adjoint() * H).inverse().diagonal().real();
        Eigen::Index hi, lo;
        amp.maxCoeff(&hi);
        amp.minCoeff(&lo);
        EXPECT_EQ(core::fsd_ordering(H, 1).back(), hi);
        EXPECT_EQ(core::fsd_ordering(H, 0).back(), lo);
    }
}

TEST(sfsd, complete_list_gives_ml_maxlog_llrs)
{
    // n_tx = 1, T = 1: the list is the whole constellation, so the LLRs are exact max-log.
    for (auto mod : k_mods)
        for (float clip : { 0.0f, 8.0f }) {
            const auto b = qa::make_batch(1, 2, mod, 200, 2, 0.0, 30.0, 81 + int(mod));
            auto sfsd = qa::make("sfsd", 1, 2, mod, fsd_config(-1, -1, clip));
            detector_config mc;
            mc.llr_clip = clip;
            auto ml = qa::make("ml", 1, 2, mod, mc);
            const auto a = qa::run_llr(*sfsd, b), r = qa::run_llr(*ml, b);
            int bad = 0;
            for (size_t i = 0; i < a.size(); ++i)
                bad += !close(a[i], r[i], 1e-4);
            EXPECT_EQ(bad, 0) << to_string(mod) << " clip " << clip;
        }
}

TEST(sfsd, two_by_two_qpsk_llrs)
{
    // 2x2 QPSK, T = 1: 4 FSD paths + N_iter x 2 bits flipped on the bottom level; the
    // list never holds all 16 vectors. With N_iter = 4 it holds, for every top symbol,
    // the SIC bottom symbol and both one-bit flips of it, which for QPSK (one bit per
    // real dimension) are the best counter-hypotheses: the LLRs are exact max-log.
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 500, 4, 0.0, 30.0, 91);
    auto ml = qa::make("ml", 2, 2, modulation::qpsk);
    const auto r = qa::run_llr(*ml, b);
    auto full = qa::make("sfsd", 2, 2, modulation::qpsk, fsd_config(1, 4));
    const auto a = qa::run_llr(*full, b);
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i)
        bad += !close(a[i], r[i], 1e-4);
    EXPECT_EQ(bad, 0);

    // The paper's N_iter = 2: the top level's LLRs stay exact, a bottom-level LLR can be
    // too large in magnitude (its counter-hypothesis lies below a worse top symbol).
    auto dflt = qa::make("sfsd", 2, 2, modulation::qpsk);
    const auto d = qa::run_llr(*dflt, b);
    int differ = 0, smaller = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        if (close(d[i], r[i], 1e-4))
            continue;
        ++differ;
        smaller += std::abs(d[i]) < std::abs(r[i]) * (1 - 1e-4);
        EXPECT_EQ(d[i] < 0, r[i] < 0) << i;
    }
    EXPECT_EQ(smaller, 0); // a sub-list can only miss counter-hypotheses
    std::printf("  2x2 QPSK N_iter=2: %d of %zu LLRs differ from max-log ML\n",
                differ,
                d.size());
}

TEST(fsd, rejects_bad_parameters)
{
    using gr::mimodet::core::resolve_fsd_params;
    EXPECT_THROW(qa::make("fsd", 2, 2, modulation::qpsk, fsd_config(-2)),
                 std::invalid_argument);
    EXPECT_THROW(qa::make("fsd", 2, 2, modulation::qpsk, fsd_config(3)),
                 std::invalid_argument);
    EXPECT_THROW(qa::make("sfsd", 4, 4, modulation::qam16, fsd_config(5)),
                 std::invalid_argument);
    EXPECT_THROW(qa::make("sfsd", 2, 2, modulation::qpsk, fsd_config(1, -2)),
                 std::invalid_argument);
    EXPECT_THROW(qa::make("sfsd", 2, 2, modulation::qpsk, fsd_config(1, 5)), // > M^T = 4
                 std::invalid_argument);
    EXPECT_THROW(qa::make("sfsd", 8, 8, modulation::qam64, fsd_config(4)), // 2^24 paths
                 std::invalid_argument);
    EXPECT_NO_THROW(qa::make("fsd", 4, 4, modulation::qam64, fsd_config(3))); // 2^18
    EXPECT_NO_THROW(qa::make("sfsd", 4, 4, modulation::qpsk, fsd_config(0)));
    EXPECT_NO_THROW(qa::make("sfsd", 2, 2, modulation::qpsk, fsd_config(1, 4)));
    EXPECT_EQ(resolve_fsd_params(4, 4, -1, -1, true).niter, 4);
    EXPECT_EQ(resolve_fsd_params(4, 6, -1, -1, true).niter, 6);
    EXPECT_EQ(resolve_fsd_params(4, 2, 0, -1, true).niter, 1); // one SIC path
    EXPECT_EQ(resolve_fsd_params(4, 6, -1, -1, true).n_extra, 6 * 6 * 3);
    // Hard-only: no LLRs.
    auto fsd = qa::make("fsd", 2, 2, modulation::qpsk);
    EXPECT_FALSE(fsd->soft());
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 1, 1, 10.0, 10.0, 1);
    std::vector<float> llr(b.bits.size());
    EXPECT_THROW(fsd->detect_llr(b.H.data(), b.y.data(), 1, 1, b.noise_var.data(), llr.data()),
                 std::logic_error);
}

TEST(fsd, singular_channels_give_valid_output)
{
    for (auto mod : k_mods)
        for (int kind = 0; kind < 3; ++kind) {
            auto b = qa::make_batch(4, 4, mod, 4, 3, 15.0, 15.0, 101 + kind);
            for (int m = 0; m < b.n_mat; ++m) {
                cf* h = &b.H[size_t(m) * 16];
                for (int r = 0; r < 4; ++r) {
                    if (kind == 0) // all zero
                        std::fill(h + 4 * r, h + 4 * r + 4, cf(0));
                    else if (kind == 1) // duplicate columns
                        h[4 * r + 3] = h[4 * r + 1];
                    else // rank one
                        for (int c = 1; c < 4; ++c)
                            h[4 * r + c] = h[4 * r] * float(c + 1);
                }
            }
            for (int T : { 0, 1, 2 }) {
                if (mod == modulation::qam64 && T == 2)
                    continue;
                auto fsd = qa::make("fsd", 4, 4, mod, fsd_config(T));
                auto sfsd = qa::make("sfsd", 4, 4, mod, fsd_config(T));
                for (uint8_t x : qa::run_bits(*fsd, b))
                    EXPECT_LE(x, 1);
                for (float l : qa::run_llr(*sfsd, b))
                    EXPECT_TRUE(std::isfinite(l)) << kind;
            }
        }
}

TEST(sfsd, path_order_is_a_strict_total_order_with_nan_metrics)
{
    // The GPU writes its N_iter selection by rank, one thread per path: two paths with
    // one rank would race. Every pair must be ordered one way exactly, NaN included.
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    const double metrics[] = { 0.0, 1.0, 1.0, nan, -inf, inf, nan, 2.5, inf };
    const int n = static_cast<int>(sizeof(metrics) / sizeof(metrics[0]));
    std::vector<int> rank(n, 0);
    for (int a = 0; a < n; ++a) {
        EXPECT_FALSE(core::sfsd_path_before(metrics[a], a, metrics[a], a)) << a;
        for (int b = 0; b < n; ++b) {
            if (a == b)
                continue;
            const bool ab = core::sfsd_path_before(metrics[a], a, metrics[b], b);
            const bool ba = core::sfsd_path_before(metrics[b], b, metrics[a], a);
            EXPECT_NE(ab, ba) << "paths " << a << " and " << b;
            rank[a] += ba ? 1 : 0;
        }
    }
    // Ranks as the GPU counts them: a permutation, numbers first, NaN last by index.
    std::vector<int> by_rank(n, -1);
    for (int a = 0; a < n; ++a) {
        ASSERT_GE(rank[a], 0);
        ASSERT_LT(rank[a], n);
        EXPECT_EQ(by_rank[rank[a]], -1) << "rank " << rank[a] << " taken twice";
        by_rank[rank[a]] = a;
    }
    EXPECT_EQ(by_rank, (std::vector<int>{ 4, 0, 1, 2, 7, 5, 8, 3, 6 }));
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            for (int c = 0; c < n; ++c)
                if (core::sfsd_path_before(metrics[a], a, metrics[b], b) &&
                    core::sfsd_path_before(metrics[b], b, metrics[c], c))
                    EXPECT_TRUE(core::sfsd_path_before(metrics[a], a, metrics[c], c))
                        << a << " < " << b << " < " << c;
}

TEST(sfsd, rank_keys_give_the_path_order)
{
    // The GPU ranks its FSD paths by integer keys: for every pair of metrics (NaN, both
    // zeros, infinities, subnormals, ties) and both index orders, the keys must say what
    // sfsd_path_before says.
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    const double big = std::numeric_limits<double>::max();
    const double tiny = std::numeric_limits<double>::denorm_min();
    const double metrics[] = { 0.0,  -0.0, 1.0, 1.0,   nan,  -nan, inf,  -inf, 2.5,
                               tiny, -tiny, big, -big, 1e-300, -7.0, 7.0, 7.0 };
    const int n = static_cast<int>(sizeof(metrics) / sizeof(metrics[0]));
    int before = 0;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
            const bool want = core::sfsd_path_before(metrics[a], a, metrics[b], b);
            const bool got = core::sfsd_key_before(
                core::sfsd_rank_key(metrics[a]), a, core::sfsd_rank_key(metrics[b]), b);
            EXPECT_EQ(got, want) << "paths " << a << " (" << metrics[a] << ") and " << b
                                 << " (" << metrics[b] << ")";
            before += want ? 1 : 0;
        }
    EXPECT_EQ(before, n * (n - 1) / 2); // a strict total order: one way for each pair
}
