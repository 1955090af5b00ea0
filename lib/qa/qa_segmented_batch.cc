/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Segmented batches (detector::detect_* with batch_segment), CPU backend: one call over
// several segments of different n_sym gives exactly what one call per segment gives,
// for every algorithm and thread count; empty segments are skipped; bad input is
// refused as in the single-segment API.

#include "qa_common.h"
#include <gtest/gtest.h>
#include <stdexcept>

using namespace qa;
using gr::mimodet::batch_segment;
using gr::mimodet::detector_config;

namespace {

// The shape of an LTE slot's subcarrier groups plus ragged and empty segments.
const std::vector<batch_segment> k_segments = { { 61, 7 }, { 0, 7 }, { 13, 6 }, { 1, 1 },
                                                { 29, 4 }, { 5, 0 }, { 17, 5 }, { 3, 13 } };

} // namespace

TEST(segmented_batch, equals_one_call_per_segment_every_algorithm)
{
    struct setup {
        int n_tx, n_rx;
        modulation mod;
    };
    for (const setup su : { setup{ 2, 2, modulation::qam64 }, setup{ 4, 4, modulation::qam16 },
                            setup{ 2, 4, modulation::qpsk } }) {
        const auto s = make_segmented(su.n_tx, su.n_rx, su.mod, k_segments, 0.0, 30.0, 11);
        for (const auto& alg : gr::mimodet::algorithms()) {
            if (alg == "ml" && su.n_tx == 4)
                continue; // 65536 candidates per vector: slow, and covered by 2x2
            for (int threads : { 1, 3 }) {
                detector_config base;
                base.threads = threads;
                auto seg = make(alg, su.n_tx, su.n_rx, su.mod, base);
                base.threads = 1;
                auto ref = make(alg, su.n_tx, su.n_rx, su.mod, base);
                expect_segmented_equals_per_segment(
                    *seg, *ref, s,
                    alg + " " + std::to_string(su.n_tx) + "x" + std::to_string(su.n_rx) +
                        " threads " + std::to_string(threads));
            }
        }
    }
}

TEST(segmented_batch, unscaled_llrs_use_each_matrix_noise_var)
{
    const auto s = make_segmented(2, 2, modulation::qam16, k_segments, 0.0, 30.0, 5);
    detector_config base;
    base.llr_scaled = false;
    for (const char* alg : { "mmse", "mtt", "sfsd" }) {
        auto seg = make(alg, 2, 2, modulation::qam16, base);
        expect_segmented_equals_per_segment(*seg, *seg, s, std::string(alg) + " unscaled");
    }
}

TEST(segmented_batch, bad_input_is_refused)
{
    auto s = make_segmented(2, 2, modulation::qpsk, k_segments, 10.0, 10.0, 3);
    auto det = make("fsd", 2, 2, modulation::qpsk);
    std::vector<uint8_t> bits(s.n_values);
    // Only empty segments: nothing to do, nothing touched.
    EXPECT_NO_THROW(det->detect_bits(nullptr, nullptr, { { 0, 7 }, { 4, 0 } }, nullptr,
                                     nullptr));
    // A NaN in the last segment's y, and a bad noise_var in the last matrix.
    auto bad_y = s;
    bad_y.y.back() = cf(NAN, 0.0f);
    EXPECT_THROW(det->detect_bits(bad_y.H.data(), bad_y.y.data(), bad_y.segments,
                                  bad_y.noise_var.data(), bits.data()),
                 std::invalid_argument);
    auto bad_nv = s;
    bad_nv.noise_var.back() = 0.0f;
    EXPECT_THROW(det->detect_bits(bad_nv.H.data(), bad_nv.y.data(), bad_nv.segments,
                                  bad_nv.noise_var.data(), bits.data()),
                 std::invalid_argument);
    EXPECT_THROW(det->detect_bits(s.H.data(), s.y.data(), s.segments, s.noise_var.data(),
                                  nullptr),
                 std::invalid_argument);
    std::vector<float> llr(s.n_values);
    EXPECT_THROW(det->detect_llr(s.H.data(), s.y.data(), s.segments, s.noise_var.data(),
                                 llr.data()),
                 std::logic_error); // fsd gives hard bits only
}
