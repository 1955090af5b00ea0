/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Segmented batches on the CUDA backend: one call over several segments of different
// n_sym (one round of copies, one wait) gives exactly what one call per segment gives,
// bits, LLRs and PSD node counts, for every CUDA detector; large segments span several
// chunks and all streams. (qa_gpu_<algorithm> tests show that one call per segment
// equals the CPU.)

#include "qa_gpu_common.h"
#include <gtest/gtest.h>

using namespace qa;
using gr::mimodet::batch_segment;
using gr::mimodet::detector_config;

namespace {

// A 20 MHz slot's groups (7, 6, 5, 4 data symbols) twice, ragged and empty segments, and
// one segment larger than a chunk (2^16 vectors).
const std::vector<batch_segment> k_segments = {
    { 800, 7 }, { 200, 6 }, { 128, 5 }, { 72, 4 }, { 0, 7 },   { 1, 1 },
    { 800, 7 }, { 200, 6 }, { 37, 3 },  { 5, 0 },  { 70001, 1 }, { 9, 13 }
};

} // namespace

TEST(gpu_segmented_batch, equals_one_call_per_segment)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : { "fsd", "sfsd", "mtt", "psd", "zf", "mmse" }) {
        for (const auto& sz : { std::pair<int, int>{ 4, 4 }, std::pair<int, int>{ 2, 2 } }) {
            const modulation mod = sz.first == 4 ? modulation::qam16 : modulation::qam64;
            detector_config base;
            base.backend = "cuda";
            gr::mimodet::detector::sptr det;
            try {
                det = make(alg, sz.first, sz.second, mod, base);
            } catch (const std::invalid_argument&) {
                // zf/mmse: only where this build has their CUDA implementation.
                continue;
            }
            ASSERT_EQ(det->backend(), "cuda");
            const auto s =
                make_segmented(sz.first, sz.second, mod, k_segments, 10.0, 30.0, 21);
            expect_segmented_equals_per_segment(
                *det, *det, s,
                std::string(alg) + " " + std::to_string(sz.first) + "x" +
                    std::to_string(sz.second));
        }
    }
}

TEST(gpu_segmented_batch, psd_deadline_covers_the_whole_call)
{
    QA_SKIP_WITHOUT_GPU();
    // A tiny budget over a 16QAM 4x4 batch at low SNR: vectors in every segment end up
    // truncated, each still a valid decision (bits in 0/1).
    detector_config base;
    base.backend = "cuda";
    base.psd_deadline_us = 1.0;
    auto det = make("psd", 4, 4, modulation::qam16, base);
    const auto s = make_segmented(4, 4, modulation::qam16, k_segments, 0.0, 5.0, 3);
    std::vector<uint8_t> bits(s.n_values, 7);
    std::vector<gr::mimodet::vector_stats> st(s.n_values / det->bits_per_vector());
    det->detect_bits(s.H.data(), s.y.data(), s.segments, s.noise_var.data(), bits.data(),
                     st.data());
    size_t truncated = 0, bad = 0;
    for (const auto& x : st)
        truncated += x.truncated;
    for (uint8_t b : bits)
        bad += b > 1;
    EXPECT_EQ(bad, 0u);
    EXPECT_GT(truncated, st.size() / 2) << "a 1 us budget must cut most searches short";
}
