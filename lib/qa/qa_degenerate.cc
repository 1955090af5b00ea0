/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Honest outputs on degenerate channels, every detector on the CPU (the GPU's in
// qa_gpu_degenerate.cc): scale invariance (H, y times a and noise_var times a^2 give the
// same bits, LLRs and flags), a rank-deficient or all-zero H flagged, LLRs always finite
// and saturated at +-llr_saturation (flagged), and the same decisions of every detector
// at a vanishing noise_var. The contract: docs/CONVENTIONS.md.

#include "qa_degenerate_common.h"
#include <gnuradio/mimodet/detector.h>
#include <gtest/gtest.h>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace gr::mimodet;

namespace {

const char* const k_all[] = { "ml", "zf", "mmse", "psd", "fsd", "sfsd", "mtt" };

//! |a - b| <= tol * max(1, |b|).
bool close(float a, float b, double tol)
{
    return std::fabs(static_cast<double>(a) - b) <=
           tol * std::max(1.0, std::fabs(double(b)));
}

} // namespace

TEST(degenerate, scale_invariance_every_detector)
{
    // Powers of two scale every float exactly, so the double arithmetic of the detectors
    // sees the same problem up to exact factors: the outputs may differ by rounding only.
    // 1e15 is no power of two: rounding of H and y differs, the outputs by a little more.
    for (const char* alg : k_all)
        for (const int nt : { 2, 4 }) {
            const auto mod = modulation::qam16;
            const qa::batch b =
                make_batch(nt, nt, mod, qa::env_size("MIMODET_QA_DEGENERATE_MATRICES", 200),
                           3, 0.0, 30.0, 900 + nt);
            auto d = qa::make(alg, nt, nt, mod);
            const auto ref = qa::run_with_stats(*d, b);
            const int nb = d->bits_per_vector();
            for (const double a : { std::ldexp(1.0, -40), std::ldexp(1.0, 60), 1e15 }) {
                SCOPED_TRACE(std::string(alg) + " " + std::to_string(nt) + "x" +
                             std::to_string(nt) + " a=" + std::to_string(a));
                const auto got = qa::run_with_stats(*d, qa::scaled(b, a));
                const double tol = a == 1e15 ? 1e-3 : 1e-5;
                size_t bit_diff = 0, llr_diff = 0, flag_diff = 0;
                for (size_t v = 0; v < ref.stats.size(); ++v) {
                    flag_diff += got.stats[v].flags != ref.stats[v].flags;
                    for (int k = 0; k < nb; ++k) {
                        const size_t i = v * nb + k;
                        if (d->soft()) {
                            llr_diff += !close(got.llr[i], ref.llr[i], tol);
                            // Hard bits may differ only where the LLR is about 0.
                            bit_diff +=
                                got.bits[i] != ref.bits[i] && std::fabs(ref.llr[i]) > tol;
                        } else {
                            bit_diff += got.bits[i] != ref.bits[i];
                        }
                    }
                }
                EXPECT_EQ(flag_diff, 0u);
                EXPECT_EQ(llr_diff, 0u);
                if (d->soft() || a != 1e15) {
                    EXPECT_EQ(bit_diff, 0u);
                } else {
                    // Hard detectors at an inexact scale: a different vector only where
                    // both decisions have the same metric (a tie within rounding).
                    EXPECT_EQ(qa::count_non_ml(b, got.bits, ref.bits, 1e-5), 0);
                }
            }
        }
}

TEST(degenerate, random_channels_are_not_flagged)
{
    // The rank rule must not fire on ordinary channels (Rayleigh, 0-30 dB), nor the
    // saturation.
    for (const char* alg : k_all) {
        SCOPED_TRACE(alg);
        const qa::batch b = make_batch(
            4,
            4,
            modulation::qam16,
            qa::env_size("MIMODET_QA_DEGENERATE_MATRICES", 500),
            2,
            0.0,
            30.0,
            77);
        auto d = qa::make(alg, 4, 4, modulation::qam16);
        const auto r = qa::run_with_stats(*d, b);
        size_t flagged = 0;
        for (const auto& s : r.stats)
            flagged += s.flags != 0;
        EXPECT_EQ(flagged, 0u);
    }
}

TEST(degenerate, zero_and_equal_columns_are_flagged)
{
    for (const char* alg : k_all)
        for (const int nt : { 2, 4 }) {
            SCOPED_TRACE(std::string(alg) + " n_tx " + std::to_string(nt));
            qa::batch b = make_batch(nt, nt + 1, modulation::qpsk, 40, 3, 10.0, 20.0, 5);
            qa::make_zero_or_equal_columns(b);
            auto d = qa::make(alg, nt, nt + 1, modulation::qpsk);
            const auto r = qa::run_with_stats(*d, b);
            for (size_t v = 0; v < r.stats.size(); ++v)
                EXPECT_TRUE(r.stats[v].flags & vector_flag_rank_deficient)
                    << "vector " << v;
            if (!d->soft())
                continue;
            const int nb = d->bits_per_vector();
            qa::expect_llr_contract(r, nb);
            // An all-zero H says nothing about any bit: every LLR is 0.
            for (int m = 0; m < b.n_mat; m += 2)
                for (int s = 0; s < b.n_sym; ++s)
                    for (int k = 0; k < nb; ++k)
                        EXPECT_EQ(r.llr[(static_cast<size_t>(m) * b.n_sym + s) * nb + k],
                                  0.0f)
                            << "matrix " << m;
        }
}

TEST(degenerate, huge_h_and_y_give_finite_saturated_llrs)
{
    // H and y times 1e20 at the same noise_var: an SNR far beyond any float LLR.
    for (const char* alg : k_all) {
        SCOPED_TRACE(alg);
        const qa::batch b =
            qa::scaled(make_batch(4, 4, modulation::qam16, 50, 2, 10.0, 20.0, 8), 1e20);
        qa::batch huge = b;
        for (auto& nv : huge.noise_var)
            nv = 0.1f;
        auto d = qa::make(alg, 4, 4, modulation::qam16);
        const auto r = qa::run_with_stats(*d, huge);
        EXPECT_EQ(r.bits.size(), b.bits.size());
        if (!d->soft())
            continue;
        qa::expect_llr_contract(r, d->bits_per_vector());
        size_t saturated = 0;
        for (const auto& s : r.stats)
            saturated += (s.flags & vector_flag_saturated) != 0;
        EXPECT_GT(saturated, 0u);
    }
}

TEST(degenerate, vanishing_noise_var_every_detector_agrees)
{
    // y = H s with noise_var 1e-40 (a subnormal float): every detector decides the
    // transmitted bits; every soft detector's LLRs are finite, of the bits' signs and
    // saturated (or, sfsd, +-missing_llr where its list holds no counter-hypothesis).
    // 64QAM at 2x2: exhaustive ML refuses 4x4.
    const std::pair<int, modulation> cases[] = { { 4, modulation::qpsk },
                                                  { 4, modulation::qam16 },
                                                  { 2, modulation::qam64 } };
    for (const auto& [nt, mod] : cases) {
        const qa::batch b = qa::noise_free(nt, nt, mod, 100, 1e-40f, 31);
        for (const char* alg : k_all) {
            SCOPED_TRACE(std::string(alg) + " " + to_string(mod));
            auto d = qa::make(alg, nt, nt, mod);
            const auto r = qa::run_with_stats(*d, b);
            EXPECT_EQ(r.bits, b.bits);
            if (!d->soft())
                continue;
            qa::expect_llr_contract(r, d->bits_per_vector());
            size_t off = 0;
            for (size_t i = 0; i < r.llr.size(); ++i) {
                const float l = r.llr[i];
                off += (l < 0) != (b.bits[i] == 1) ||
                       (std::fabs(l) != llr_saturation && std::fabs(l) != missing_llr);
            }
            EXPECT_EQ(off, 0u);
        }
    }
}

TEST(degenerate, llr_clip_below_the_saturation_wins)
{
    detector_config c;
    c.llr_clip = 50.0f;
    for (const char* alg : { "ml", "zf", "mmse", "sfsd", "mtt" }) {
        SCOPED_TRACE(alg);
        const qa::batch b = qa::noise_free(2, 2, modulation::qam16, 20, 1e-40f, 3);
        auto d = qa::make(alg, 2, 2, modulation::qam16, c);
        const auto r = qa::run_with_stats(*d, b);
        for (size_t i = 0; i < r.llr.size(); ++i)
            EXPECT_EQ(std::fabs(r.llr[i]), 50.0f) << i;
        for (const auto& s : r.stats)
            EXPECT_EQ(s.flags, 0u); // clipped, not saturated
    }
}
