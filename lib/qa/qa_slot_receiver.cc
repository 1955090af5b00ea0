/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// slot_receiver (the mimo_receiver block's core) on the CPU against the chain it
// replaces: channel_estimation::estimate(), then slot_detection with that H and noise
// variance. Every algorithm, bits and LLRs, random and bad slots; and the mimo_receiver
// block with its slots in flight across a cell change.

#include "qa_slot_receiver_common.h"
#include <cstdlib>
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/block_config.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>
#include <limits>

using namespace gr::mimodet;
using qa::compare_with_chain;
using qa::receiver_case;

TEST(slot_receiver, every_algorithm_matches_the_chain)
{
    const auto slots2 = qa::make_slots(lte_numerology::from_bandwidth(1.4), 2, 2, 7, 6, 15.0, 10.0, 1000.0, 21);
    const auto slots4 = qa::make_slots(lte_numerology::from_bandwidth(1.4), 4, 4, 7, 3, 20.0, 5.0, 1000.0, 22);
    for (const char* alg : { "zf", "mmse", "psd", "fsd", "sfsd", "mtt", "ml" }) {
        const auto n = compare_with_chain({ 1.4, 2, 2, 7, modulation::qam16, alg, "cpu" }, slots2);
        EXPECT_EQ(n.slots, slots2.size());
        EXPECT_EQ(n.bad, 0u) << alg;
        if (std::string(alg) != "ml")
            compare_with_chain({ 1.4, 4, 4, 7, modulation::qpsk, alg, "cpu" }, slots4);
    }
    for (const char* alg : { "zf", "mmse", "sfsd", "mtt" })
        compare_with_chain({ 1.4, 2, 2, 7, modulation::qam64, alg, "cpu", true }, slots2);
}

TEST(slot_receiver, pilot_ratio_known_and_estimated_match_the_chain)
{
    const auto slots = qa::make_slots(lte_numerology::from_bandwidth(1.4), 2, 2, 7, 6, 15.0, 10.0, 1000.0, 23, 6.0);
    for (double db : { 6.0, std::numeric_limits<double>::quiet_NaN() }) {
        receiver_case c{ 1.4, 2, 2, 7, modulation::qam16, "mmse", "cpu" };
        c.pilot_ratio_db = db;
        EXPECT_EQ(compare_with_chain(c, slots).bad, 0u) << db;
    }
}

TEST(slot_receiver, bad_slots_match_the_chain)
{
    const auto slots = qa::receiver_bad_slots();
    for (const char* alg : { "zf", "fsd" }) {
        const auto n = compare_with_chain({ 3, 2, 2, 9, modulation::qpsk, alg, "cpu" }, slots);
        // The NaN pilot, the zero slot, the infinite pilot, the NaN data element; the
        // overflowing pilots give a non-finite noise variance or H.
        EXPECT_EQ(n.bad, 5u) << alg;
    }
    compare_with_chain({ 3, 2, 2, 9, modulation::qpsk, "mmse", "cpu", true }, slots);
}

TEST(slot_receiver, truncated_counts_and_prepare)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    const lte_grid grid(num, 2, 3);
    detector_config cfg = qa::receiver_config({ 1.4, 2, 2, 3, modulation::qam64, "psd", "cpu" });
    core::slot_receiver rx(grid, 2, detector::make(cfg), 2, true); // no device here: CPU
    rx.prepare();
    const auto slots = qa::make_slots(num, 2, 2, 3, 2, 20.0, 0.0, 500.0, 4);
    std::vector<const std::complex<float>*> p;
    for (const auto& v : slots[1].y)
        p.push_back(v.data());
    std::vector<uint8_t> bits(rx.detection().values_per_slot(slots[1].ns));
    const auto r = rx.receive_bits(slots[1].ns, p.data(), bits.data(), true);
    EXPECT_TRUE(r.why.empty());
    EXPECT_EQ(r.truncated, 0u); // no deadline: the exact search
    EXPECT_GT(r.noise_var, 0.0f);
    EXPECT_THROW(rx.receive_llr(slots[1].ns, p.data(), nullptr), std::logic_error);
    const auto bad = rx.receive_bits(25, p.data(), bits.data());
    EXPECT_FALSE(bad.why.empty());
}

TEST(slot_receiver, ofdm_demodulation_inverts_the_modulation)
{
    // The test modulator's slots demodulate back to their grids (to float rounding), for
    // every bandwidth; a back-off moves the windows into the CP and is compensated.
    for (double mhz : { 1.4, 3.0, 5.0, 10.0, 15.0, 20.0 }) {
        const auto num = lte_numerology::from_bandwidth(mhz);
        const auto slots = qa::make_slots(num, 2, 2, 1, 1, 20.0, 0.0, 1000.0, 9);
        const auto t = qa::modulate_slot(num, slots[0].y);
        ASSERT_EQ(t[0].size(), static_cast<size_t>(num.slot_samples()));
        for (int backoff : { -1, 0, num.cp_other }) {
            const core::ofdm_demodulation dem(num, backoff, true, "test");
            EXPECT_EQ(dem.backoff(), backoff == -1 ? num.cp_other / 4 : backoff);
            auto fft = dem.make_fft();
            std::vector<std::complex<float>> g(dem.grid_len());
            dem.demodulate(*fft, t[1].data(), g.data());
            double err = 0, pow = 0;
            for (size_t i = 0; i < g.size(); ++i) {
                err = std::max(err, static_cast<double>(std::abs(g[i] - slots[0].y[1][i])));
                pow += std::norm(slots[0].y[1][i]);
            }
            EXPECT_LT(err, 1e-5 * std::sqrt(pow / g.size())) << mhz << " MHz, back-off " << backoff;
        }
    }
    const auto num = lte_numerology::from_bandwidth(5);
    EXPECT_THROW(core::ofdm_demodulation(num, -2, true, "test"), std::invalid_argument);
    EXPECT_THROW(core::ofdm_demodulation(num, num.cp_other + 1, true, "test"),
                 std::invalid_argument);
    const core::ofdm_demodulation small(lte_numerology::from_bandwidth(1.4), -1, true, "t");
    auto fft = small.make_fft();
    const core::ofdm_demodulation big(num, -1, true, "t");
    std::vector<std::complex<float>> s(big.slot_samples()), g(big.grid_len());
    EXPECT_THROW(big.demodulate(*fft, s.data(), g.data()), std::invalid_argument);
}

TEST(slot_receiver, time_domain_input_matches_the_grid_path)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    const auto slots = qa::make_slots(num, 2, 2, 7, 4, 18.0, 6.0, 1000.0, 23);
    for (const char* alg : { "zf", "psd", "fsd", "mtt" }) {
        const auto n = qa::compare_time_with_grids({ 1.4, 2, 2, 7, modulation::qam16, alg, "cpu" }, slots);
        EXPECT_EQ(n.bad, 0u) << alg;
        EXPECT_EQ(n.differing, 0u) << alg;
    }
    const auto n = qa::compare_time_with_grids({ 1.4, 2, 2, 7, modulation::qam16, "sfsd", "cpu", true }, slots);
    EXPECT_EQ(n.differing, 0u);
    // A receiver made for grids only refuses time-domain slots.
    const lte_grid grid(num, 2, 7);
    core::slot_receiver rx(grid, 2, detector::make(qa::receiver_config({ 1.4, 2, 2, 7, modulation::qpsk, "zf", "cpu" })), 1, false);
    std::vector<std::complex<float>> t(num.slot_samples());
    const std::complex<float>* tp[2] = { t.data(), t.data() };
    std::vector<uint8_t> bits(rx.detection().values_per_slot(1));
    EXPECT_THROW(rx.receive_time_bits(1, tp, bits.data()), std::logic_error);
    EXPECT_THROW(core::slot_receiver(grid, 2, detector::make(qa::receiver_config({ 1.4, 2, 2, 7, modulation::qpsk, "zf", "cpu" })), 1, false, 10),
                 std::invalid_argument);
}

TEST(slot_receiver, block_with_slots_in_flight_follows_a_cell_change)
{
    // The mimo_receiver block with its slots in flight across calls (exact psd's default
    // on the GPU, MIMODET_RECEIVER_ASYNC=1 here on the CPU) and cell_id -1: the slots'
    // "cell_id" tags name one cell, then another, so the block makes its lanes anew twice
    // (from the constructor's cell 0) while it streams. Each slot's bits equal the core's
    // for its cell.
    using cf = std::complex<float>;
    const auto num = lte_numerology::from_bandwidth(1.4);
    const int nt = 2, nr = 2, n_each = 4;
    const int cells[2] = { 7, 301 };
    std::vector<qa::test_slot> slots;
    std::vector<uint8_t> expect;
    for (int c = 0; c < 2; ++c) {
        const auto part =
            qa::make_slots(num, nt, nr, cells[c], n_each, 25.0, 0.0, 1000.0, 41 + c);
        core::slot_receiver rx(
            lte_grid(num, nt, cells[c]),
            nr,
            detector::make(qa::receiver_config(
                { 1.4, nt, nr, cells[c], modulation::qam16, "fsd", "cpu" })),
            1,
            false);
        for (const auto& s : part) {
            std::vector<const cf*> p;
            for (const auto& v : s.y)
                p.push_back(v.data());
            std::vector<uint8_t> bits(rx.detection().values_per_slot(s.ns));
            ASSERT_TRUE(rx.receive_bits(s.ns, p.data(), bits.data()).why.empty());
            expect.insert(expect.end(), bits.begin(), bits.end());
            slots.push_back(s);
        }
    }
    ::setenv("MIMODET_RECEIVER_ASYNC", "1", 1);
    auto blk = mimo_receiver::make(
        block_detector_config("fsd", nt, nr, "16qam", "cpu"), 1.4, -1, false, 1);
    ::unsetenv("MIMODET_RECEIVER_ASYNC");
    auto tb = gr::make_top_block("qa_slot_receiver_cells");
    std::vector<gr::tag_t> tags;
    for (size_t i = 0; i < slots.size(); ++i) {
        gr::tag_t t;
        t.offset = i;
        t.key = pmt::mp("slot");
        t.value = pmt::from_long(slots[i].ns);
        tags.push_back(t);
        if (i % n_each == 0) {
            t.key = pmt::mp("cell_id");
            t.value = pmt::from_long(cells[i / n_each]);
            tags.push_back(t);
        }
    }
    for (int r = 0; r < nr; ++r) {
        std::vector<cf> data;
        for (const auto& s : slots)
            data.insert(data.end(), s.y[r].begin(), s.y[r].end());
        tb->connect(
            gr::blocks::vector_source_c::make(
                data, false, 7 * num.n_sc, r == 0 ? tags : std::vector<gr::tag_t>()),
            0,
            blk,
            r);
    }
    auto sink = gr::blocks::vector_sink_b::make();
    tb->connect(blk, 0, sink, 0);
    tb->run();
    EXPECT_TRUE(sink->data() == expect);
    EXPECT_EQ(blk->slots_processed(), slots.size());
    EXPECT_EQ(blk->bad_slots(), 0u);
}
