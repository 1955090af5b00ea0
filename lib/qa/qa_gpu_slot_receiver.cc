/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The fused receiver on the GPU (slot_receiver with a CUDA detector: the estimator's
// kernels write H next to the uploaded grids, the detector's kernels read it there)
// against the chain of separate GPU stages: the GPU estimator's estimate() into a host
// H, then the CUDA detector's slot_detection. Bit-equal outputs and noise variances, every
// algorithm with a CUDA implementation, bits and LLRs, random and bad slots; and the
// mimo_receiver block with backend cuda in a flowgraph.

#include "qa_gpu_common.h"
#include "qa_slot_receiver_common.h"
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>

using namespace gr::mimodet;
using qa::compare_with_chain;

TEST(gpu_slot_receiver, every_algorithm_matches_the_chain_20mhz_4x4)
{
    QA_SKIP_WITHOUT_GPU();
    const auto slots =
        qa::make_slots(lte_numerology::from_bandwidth(20), 4, 4, 1, 5, 20.0, 8.0, 1200.0, 31);
    for (const char* alg : { "zf", "mmse", "psd", "fsd", "sfsd", "mtt" }) {
        const auto n = compare_with_chain({ 20, 4, 4, 1, modulation::qam64, alg, "cuda" }, slots);
        EXPECT_EQ(n.bad, 0u) << alg;
    }
    for (const char* alg : { "mmse", "sfsd", "mtt" })
        compare_with_chain({ 20, 4, 4, 1, modulation::qam64, alg, "cuda", true }, slots);
}

TEST(gpu_slot_receiver, small_sizes_match_the_chain)
{
    QA_SKIP_WITHOUT_GPU();
    const int sizes[][2] = { { 2, 2 }, { 2, 4 }, { 1, 2 } };
    for (const auto& s : sizes) {
        const auto slots = qa::make_slots(
            lte_numerology::from_bandwidth(1.4), s[0], s[1], 5, 20, 0.0, 30.0, 2000.0, 40 + s[1]);
        for (const char* alg : { "zf", "fsd", "sfsd", "psd" })
            compare_with_chain({ 1.4, s[0], s[1], 5, modulation::qam16, alg, "cuda" }, slots);
    }
}

TEST(gpu_slot_receiver, bad_slots_match_the_chain)
{
    QA_SKIP_WITHOUT_GPU();
    const auto slots = qa::receiver_bad_slots();
    for (const char* alg : { "zf", "fsd" }) {
        const auto n = compare_with_chain({ 3, 2, 2, 9, modulation::qpsk, alg, "cuda" }, slots);
        EXPECT_EQ(n.bad, 5u) << alg;
    }
    compare_with_chain({ 3, 2, 2, 9, modulation::qpsk, "mmse", "cuda", true }, slots);
}

TEST(gpu_slot_receiver, block_in_a_flowgraph)
{
    QA_SKIP_WITHOUT_GPU();
    using cf = std::complex<float>;
    const double mhz = 5;
    const int nt = 2, nr = 2, cell = 3, n_slots = 40;
    const auto num = lte_numerology::from_bandwidth(mhz);
    const lte_grid grid(num, nt, cell);
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 25.0, 0.0, 1000.0, 8);
    auto blk = mimo_receiver::make("fsd", mhz, nt, nr, "qpsk", cell, "cuda");
    EXPECT_EQ(blk->backend(), "cuda");
    EXPECT_EQ(mimo_receiver::make("fsd", mhz, nt, nr, "qpsk", cell, "auto")->backend(), "cuda");
    // The reference: the core's fused path, slot by slot.
    core::slot_receiver rx(
        grid, nr, detector::make(qa::receiver_config({ mhz, nt, nr, cell, modulation::qpsk, "fsd", "cuda" })), 1, true);
    std::vector<uint8_t> expect;
    for (const auto& s : slots) {
        std::vector<const cf*> p;
        for (const auto& v : s.y)
            p.push_back(v.data());
        std::vector<uint8_t> bits(rx.detection().values_per_slot(s.ns));
        ASSERT_TRUE(rx.receive_bits(s.ns, p.data(), bits.data()).why.empty());
        expect.insert(expect.end(), bits.begin(), bits.end());
    }
    auto tb = gr::make_top_block("qa_gpu_slot_receiver");
    const size_t grid_len = 7 * static_cast<size_t>(num.n_sc);
    std::vector<gr::tag_t> tags;
    for (int i = 0; i < n_slots; ++i) {
        gr::tag_t t;
        t.offset = i;
        t.key = pmt::mp("slot");
        t.value = pmt::from_long(slots[i].ns);
        tags.push_back(t);
    }
    for (int r = 0; r < nr; ++r) {
        std::vector<cf> data;
        for (const auto& s : slots)
            data.insert(data.end(), s.y[r].begin(), s.y[r].end());
        auto src = gr::blocks::vector_source_c::make(data, false, grid_len, r == 0 ? tags : std::vector<gr::tag_t>());
        tb->connect(src, 0, blk, r);
    }
    auto sink = gr::blocks::vector_sink_b::make();
    tb->connect(blk, 0, sink, 0);
    tb->run();
    EXPECT_EQ(sink->data(), expect);
    EXPECT_EQ(blk->slots_processed(), static_cast<uint64_t>(n_slots));
    EXPECT_EQ(blk->bad_slots(), 0u);
    size_t n_tags = 0;
    for (const auto& t : sink->tags())
        n_tags += pmt::symbol_to_string(t.key) == "slot";
    EXPECT_EQ(n_tags, static_cast<size_t>(n_slots));
}
