/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Segmented batches on the CUDA backend: one call over several segments of different
// n_sym (one round of copies, one wait) gives exactly what one call per segment gives,
// bits, LLRs and PSD node counts, for every CUDA detector; large segments span several
// chunks and all streams, a small call is one chunk spanning its segments (several
// where it has more pieces than a chunk's segment_map holds). (qa_gpu_<algorithm> tests
// show that one call per segment equals the CPU.) Under MIMODET_QA_SANITIZER_SIZES
// (qa_gpu_common.h) the segments are smaller, the large one still spans several chunks,
// and the LTE slots are 1.4 MHz ones.

#include "qa_gpu_common.h"
#include "receiver/slot_detection.h"
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>

using namespace qa;
using gr::mimodet::backend_kind;
using gr::mimodet::batch_segment;
using gr::mimodet::detector_config;
using gr::mimodet::lte_grid;
using gr::mimodet::lte_numerology;

namespace {

// A 20 MHz slot's groups (7, 6, 5, 4 data symbols) twice, ragged and empty segments, and
// one segment larger than a chunk (2^16 vectors). Sanitizer sizes: smaller groups, and a
// call just past the single-copy limit (2^14 vectors), whose large segment still spans
// three chunks.
const size_t k_group = sanitizer_size<size_t>(800, 40),
             k_rest = sanitizer_size<size_t>(200, 20);
const std::vector<batch_segment> k_segments = { { k_group, 7 },
                                                { k_rest, 6 },
                                                { 128, 5 },
                                                { 72, 4 },
                                                { 0, 7 },
                                                { 1, 1 },
                                                { k_group, 7 },
                                                { k_rest, 6 },
                                                { 37, 3 },
                                                { 5, 0 },
                                                { sanitizer_size<size_t>(70001, 17001),
                                                  1 },
                                                { 9, 13 } };

// A small call (far below the single-copy limit of 2^14 vectors) of 44 segments whose
// neighbours differ in n_sym: more pieces than one chunk's map holds (16), so the call
// is cut by the piece limit into chunks that run over the streams. A few empty and
// n_sym 0 segments between them (dropped before the backend; the segments either side
// still differ in n_sym).
std::vector<batch_segment> many_small_segments()
{
    const size_t cycle[] = { 7, 3, 1, 5, 2, 6, 4, 13 };
    std::vector<batch_segment> segs;
    for (size_t i = 0; i < 40; ++i) {
        segs.push_back(batch_segment{ 1 + (i * 13) % 29, cycle[i % 8] });
        if (i % 11 == 5)
            segs.push_back(batch_segment{ i % 2 == 0 ? size_t(0) : size_t(3),
                                          i % 2 == 0 ? size_t(7) : size_t(0) });
    }
    return segs;
}

//! Slots ns of a 20 MHz cell (sanitizer sizes: 1.4 MHz) with n_tx ports as
//! slot_detection gives them to the detector: one segment per subcarrier group, slot
//! after slot.
std::vector<batch_segment>
lte_slot_segments(int n_tx, int n_rx, const std::vector<int>& ns)
{
    const lte_grid grid(
        lte_numerology::from_bandwidth(sanitizer_size(20.0, 1.4)), n_tx, 1);
    detector_config cfg;
    cfg.backend = backend_kind::cpu; // only its configuration matters here
    const gr::mimodet::core::slot_detection sd(
        grid, n_rx, make("mmse", n_tx, n_rx, modulation::qpsk, cfg));
    std::vector<batch_segment> segs;
    for (int s : ns)
        for (const auto& g : sd.groups(s))
            segs.push_back(batch_segment{ g.sc.size(), static_cast<size_t>(g.n_sym) });
    return segs;
}

//! One CUDA detector under test and its configuration.
struct cuda_case {
    gr::mimodet::detector& det;
    int n_tx, n_rx;
    modulation mod;
    std::string name;
};

//! f(cuda_case) for every CUDA detector at 4x4 16QAM and 2x2 64QAM.
template <typename F>
void for_each_cuda_detector(F&& f)
{
    for (const char* alg : { "fsd", "sfsd", "mtt", "psd", "zf", "mmse" }) {
        for (const auto& sz :
             { std::pair<int, int>{ 4, 4 }, std::pair<int, int>{ 2, 2 } }) {
            const modulation mod = sz.first == 4 ? modulation::qam16 : modulation::qam64;
            detector_config base;
            base.backend = backend_kind::cuda;
            gr::mimodet::detector::sptr det;
            try {
                det = make(alg, sz.first, sz.second, mod, base);
            } catch (const std::invalid_argument&) {
                // zf/mmse: only where this build has their CUDA implementation.
                continue;
            }
            ASSERT_EQ(det->backend(), "cuda");
            f(cuda_case{ *det,
                         sz.first,
                         sz.second,
                         mod,
                         std::string(alg) + " " + std::to_string(sz.first) + "x" +
                             std::to_string(sz.second) });
        }
    }
}

} // namespace

TEST(gpu_segmented_batch, small_call_past_the_piece_limit)
{
    QA_SKIP_WITHOUT_GPU();
    const auto segs = many_small_segments();
    for_each_cuda_detector([&](const cuda_case& c) {
        const auto s = make_segmented(c.n_tx, c.n_rx, c.mod, segs, 10.0, 30.0, 33);
        expect_segmented_equals_per_segment(c.det, c.det, s, c.name + " many small segments");
    });
}

TEST(gpu_segmented_batch, lte_slots_in_one_call)
{
    QA_SKIP_WITHOUT_GPU();
    // Slot 1 (no PSS/SSS), slot 0 (with), and both in one call: small calls, one chunk.
    for_each_cuda_detector([&](const cuda_case& c) {
        for (const auto& ns :
             { std::vector<int>{ 1 }, std::vector<int>{ 0 }, std::vector<int>{ 0, 1 } }) {
            const auto segs = lte_slot_segments(c.n_tx, c.n_rx, ns);
            const auto s = make_segmented(c.n_tx, c.n_rx, c.mod, segs, 10.0, 30.0, 41 + ns[0]);
            expect_segmented_equals_per_segment(c.det,
                                                c.det,
                                                s,
                                                c.name + " LTE slots " +
                                                    std::to_string(ns.front()) + ".." +
                                                    std::to_string(ns.back()));
        }
    });
}

TEST(gpu_segmented_batch, equals_one_call_per_segment)
{
    QA_SKIP_WITHOUT_GPU();
    for_each_cuda_detector([&](const cuda_case& c) {
        const auto s = make_segmented(c.n_tx, c.n_rx, c.mod, k_segments, 10.0, 30.0, 21);
        expect_segmented_equals_per_segment(c.det, c.det, s, c.name);
    });
}

TEST(gpu_segmented_batch, chunks_of_two_shares_equal_one_call_per_segment)
{
    QA_SKIP_WITHOUT_GPU();
    // Every detector with chunks of two streams' shares (MIMODET_CHUNK_SHARES, read when
    // a detector is made): a large call's inputs cross a share at a time and its kernels
    // run once per chunk, with the same results.
    const env_override shares("MIMODET_CHUNK_SHARES", "2");
    for_each_cuda_detector([&](const cuda_case& c) {
        const auto s = make_segmented(c.n_tx, c.n_rx, c.mod, k_segments, 10.0, 30.0, 22);
        expect_segmented_equals_per_segment(c.det, c.det, s, c.name + " two shares");
    });
}

TEST(gpu_segmented_batch, psd_deadline_covers_the_whole_call)
{
    QA_SKIP_WITHOUT_GPU();
    // A tiny budget over a 16QAM 4x4 batch at low SNR: vectors in every segment end up
    // truncated, each still a valid decision (bits in 0/1).
    detector_config base;
    base.backend = backend_kind::cuda;
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
