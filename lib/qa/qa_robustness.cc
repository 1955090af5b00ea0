/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Cases the detector API fuzzer (apps/fuzz/fuzz_detector.cc) found, kept as tests:
// extreme but valid inputs give finite outputs, and per-vector stats do not depend on
// what the caller's buffer held.

#include "qa_common.h"
#include <cfloat>
#include <cmath>
#include <gnuradio/mimodet/detector.h>

using namespace gr::mimodet;

TEST(robustness, stats_are_set_whatever_the_buffer_held)
{
    for (const auto& alg : algorithms()) {
        auto det = qa::make(alg, 2, 2, modulation::qam16);
        const auto b = qa::make_batch(2, 2, modulation::qam16, 20, 3, 5, 20, 1);
        std::vector<uint8_t> bits(b.bits.size());
        std::vector<vector_stats> st(60), ref(60);
        for (auto& s : st)
            s = { 77, 77, 77 }; // what a reused buffer may hold
        det->detect_bits(b.H.data(),
                         b.y.data(),
                         b.n_mat,
                         b.n_sym,
                         b.noise_var.data(),
                         bits.data(),
                         st.data());
        det->detect_bits(b.H.data(),
                         b.y.data(),
                         b.n_mat,
                         b.n_sym,
                         b.noise_var.data(),
                         bits.data(),
                         ref.data());
        for (size_t v = 0; v < st.size(); ++v) {
            EXPECT_EQ(st[v].truncated, 0u) << alg; // no deadline: every search complete
            EXPECT_EQ(st[v].expanded, ref[v].expanded) << alg;
            EXPECT_EQ(st[v].evaluated, ref[v].evaluated) << alg;
        }
    }
}

TEST(robustness, llrs_stay_finite_for_huge_samples_and_tiny_noise)
{
    // Valid inputs (finite, noise_var > 0) whose exact LLRs lie beyond float's range:
    // they saturate at +-FLT_MAX, scaled or not, with their sign.
    const std::vector<qa::cf> H = { { 1e30f, 0 }, { 1, 0 }, { 1, 0 }, { 1, 0 } };
    const std::vector<qa::cf> y = { { 1e30f, 0 }, { -3e38f, 0 } };
    for (const auto& alg : { "ml", "zf", "mmse", "sfsd", "mtt" })
        for (bool scaled : { true, false })
            for (float nv : { FLT_MAX, 1.0f, 1e-30f, FLT_TRUE_MIN }) {
                detector_config cfg;
                cfg.llr_scaled = scaled;
                auto det = qa::make(alg, 2, 2, modulation::qpsk, cfg);
                std::vector<float> llr(4);
                det->detect_llr(H.data(), y.data(), 1, 1, &nv, llr.data());
                for (float l : llr)
                    EXPECT_TRUE(std::isfinite(l))
                        << alg << " scaled " << scaled << " nv " << nv << ": " << l;
            }
}
