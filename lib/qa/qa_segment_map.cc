/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The CUDA backend's chunk planner and vector -> matrix map (cuda/common/segment_map.h),
// on the host (no GPU needed): chunks cover every matrix and vector once and in order,
// every vector maps to its own matrix, chunks are cut only where they must be (target
// reached, piece limit), and a small call shaped like LTE slots is one chunk.

#include "cuda/common/segment_map.h"
#include "receiver/slot_detection.h"
#include <climits>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using gr::mimodet::backend_kind;
using gr::mimodet::batch_segment;
using gr::mimodet::detector;
using gr::mimodet::detector_config;
using gr::mimodet::lte_grid;
using gr::mimodet::lte_numerology;
using gr::mimodet::modulation;
using gr::mimodet::core::chunk_span;
using gr::mimodet::core::plan_chunks;
using gr::mimodet::core::segment_map;

namespace {

constexpr int k_pieces = segment_map::k_max_pieces;

//! End (chunk-relative) of piece i's matrices.
long long piece_m_end(const segment_map& map, int i)
{
    const long long v_begin = i == 0 ? 0 : map.v_end[i - 1];
    return map.m_begin[i] + (map.v_end[i] - v_begin) / map.n_sym[i];
}

/*!
 * Checks plan_chunks(segs, target, max_pieces) against the segments' layout; returns the
 * chunks. `what` names the case in failures.
 */
std::vector<chunk_span> check_plan(const std::vector<batch_segment>& segs,
                                   size_t target,
                                   int max_pieces,
                                   const std::string& what)
{
    // Brute force: the batch matrix of every batch vector.
    std::vector<size_t> matrix_of;
    size_t n_mat = 0;
    for (const auto& s : segs)
        for (size_t m = 0; m < s.n_mat; ++m, ++n_mat)
            for (size_t k = 0; k < s.n_sym; ++k)
                matrix_of.push_back(n_mat);
    const size_t n_vec = matrix_of.size();

    const auto chunks = plan_chunks(segs.data(), segs.size(), target, max_pieces);
    if (n_mat == 0) {
        EXPECT_TRUE(chunks.empty()) << what;
        return chunks;
    }
    EXPECT_FALSE(chunks.empty()) << what;
    size_t m_next = 0, v_next = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
        const chunk_span& k = chunks[c];
        const segment_map& map = k.map;
        const std::string at = what + ", chunk " + std::to_string(c);
        // In order, no gaps, no overlaps; every chunk has matrices, and vectors unless
        // the whole batch has none.
        EXPECT_EQ(k.m0, m_next) << at;
        EXPECT_EQ(k.v0, v_next) << at;
        EXPECT_GE(k.n_mat, 1u) << at;
        EXPECT_TRUE(k.n_vec >= 1 || n_vec == 0) << at;
        m_next += k.n_mat;
        v_next += k.n_vec;

        // Pieces: within the limit, in order, inside the chunk, n_sym >= 1; neighbours
        // that could share a piece do.
        EXPECT_LE(map.n, max_pieces) << at;
        EXPECT_EQ(map.n == 0, k.n_vec == 0) << at;
        for (int i = 0; i < map.n; ++i) {
            EXPECT_GE(map.n_sym[i], 1) << at << " piece " << i;
            EXPECT_GT(map.v_end[i], i == 0 ? 0 : map.v_end[i - 1])
                << at << " piece " << i;
            EXPECT_EQ((map.v_end[i] - (i == 0 ? 0 : map.v_end[i - 1])) % map.n_sym[i], 0)
                << at << " piece " << i << ": whole matrices";
            EXPECT_GE(map.m_begin[i], i == 0 ? 0 : piece_m_end(map, i - 1))
                << at << " piece " << i;
            EXPECT_LE(piece_m_end(map, i), static_cast<long long>(k.n_mat))
                << at << " piece " << i;
            if (i > 0) {
                EXPECT_FALSE(map.n_sym[i] == map.n_sym[i - 1] &&
                             map.m_begin[i] == piece_m_end(map, i - 1))
                    << at << " piece " << i << " could extend the one before";
            }
        }
        if (map.n > 0) {
            EXPECT_EQ(map.v_end[map.n - 1], static_cast<long long>(k.n_vec)) << at;
        }
        if (c > 0) { // leading matrices without vectors join the chunk before
            EXPECT_EQ(map.m_begin[0], 0) << at;
        }

        // At most target vectors, unless the chunk's vectors are those of one matrix.
        EXPECT_TRUE(k.n_vec <= target || (map.n == 1 && k.n_vec == size_t(map.n_sym[0])))
            << at << ": " << k.n_vec << " vectors, target " << target;

        // Every vector maps to its own matrix.
        for (size_t v = 0; v < k.n_vec; ++v) {
            const long long m = map.matrix_of(static_cast<long long>(v));
            if (static_cast<size_t>(m) + k.m0 != matrix_of[k.v0 + v]) {
                ADD_FAILURE() << at << ": vector " << v << " -> matrix " << m
                              << ", expected " << matrix_of[k.v0 + v] - k.m0;
                break;
            }
        }

        // Cut only where the next matrix with vectors did not fit.
        if (c + 1 < chunks.size()) {
            const segment_map& nx = chunks[c + 1].map;
            if (nx.n < 1) {
                ADD_FAILURE() << at << ": a later chunk without vectors";
                continue;
            }
            const size_t s = static_cast<size_t>(nx.n_sym[0]);
            const bool over_target = k.n_vec + s > target;
            const bool can_extend =
                map.n > 0 && map.n_sym[map.n - 1] == nx.n_sym[0] &&
                piece_m_end(map, map.n - 1) == static_cast<long long>(k.n_mat);
            const bool out_of_pieces = map.n == max_pieces && !can_extend;
            EXPECT_TRUE(over_target || out_of_pieces) << at << ": cut without need";
        }
    }
    EXPECT_EQ(m_next, n_mat) << what;
    EXPECT_EQ(v_next, n_vec) << what;
    return chunks;
}

//! A slot's segments as slot_detection builds them (one per subcarrier group).
std::vector<batch_segment> slot_segments(const gr::mimodet::core::slot_detection& sd,
                                         int ns)
{
    std::vector<batch_segment> segs;
    for (const auto& g : sd.groups(ns))
        segs.push_back(batch_segment{ g.sc.size(), static_cast<size_t>(g.n_sym) });
    return segs;
}

detector::sptr cpu_det(int n_tx, int n_rx)
{
    detector_config cfg;
    cfg.algorithm = "mmse";
    cfg.backend = backend_kind::cpu;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.mod = modulation::qam16;
    cfg.threads = 1;
    return detector::make(cfg);
}

size_t vectors(const std::vector<batch_segment>& segs)
{
    size_t n = 0;
    for (const auto& s : segs)
        n += s.n_mat * s.n_sym;
    return n;
}

} // namespace

TEST(segment_map, one_piece_is_a_division)
{
    segment_map map{};
    map.n = 1;
    map.n_sym[0] = 7;
    map.v_end[0] = 7 * 1000;
    map.m_begin[0] = 0;
    for (long long v = 0; v < map.v_end[0]; ++v)
        ASSERT_EQ(map.matrix_of(v), v / 7) << v;
    EXPECT_EQ(map.max_n_sym(), 7);
    EXPECT_EQ(segment_map{}.max_n_sym(), 0);
}

TEST(segment_map, pieces_skip_matrices_without_vectors)
{
    // 2 matrices without vectors, 3 x 5 vectors, 4 without, 2 x 1, 1 without.
    const std::vector<batch_segment> segs = {
        { 2, 0 }, { 3, 5 }, { 4, 0 }, { 2, 1 }, { 1, 0 }
    };
    const auto chunks = check_plan(segs, 1000, k_pieces, "skip");
    ASSERT_EQ(chunks.size(), 1u);
    const chunk_span& c = chunks[0];
    EXPECT_EQ(c.n_mat, 12u);
    EXPECT_EQ(c.n_vec, 17u);
    ASSERT_EQ(c.map.n, 2);
    EXPECT_EQ(c.map.m_begin[0], 2);
    EXPECT_EQ(c.map.m_begin[1], 9);
    EXPECT_EQ(c.map.matrix_of(0), 2);
    EXPECT_EQ(c.map.matrix_of(14), 4);
    EXPECT_EQ(c.map.matrix_of(15), 9);
    EXPECT_EQ(c.map.matrix_of(16), 10);

    // A batch of matrices only: one chunk without vectors or pieces; none at all: none.
    const auto only =
        check_plan({ { 3, 0 }, { 0, 4 }, { 2, 0 } }, 10, k_pieces, "no vectors");
    ASSERT_EQ(only.size(), 1u);
    EXPECT_EQ(only[0].n_mat, 5u);
    EXPECT_EQ(only[0].map.n, 0);
    EXPECT_TRUE(check_plan({}, 10, k_pieces, "empty").empty());
    EXPECT_TRUE(check_plan({ { 0, 3 } }, 10, k_pieces, "no matrices").empty());

    // Trailing matrices without vectors join the last chunk, also a full one.
    const auto tail = check_plan({ { 4, 2 }, { 3, 0 } }, 4, k_pieces, "tail");
    ASSERT_EQ(tail.size(), 2u);
    EXPECT_EQ(tail[1].n_mat, 5u);
    EXPECT_EQ(tail[1].n_vec, 4u);
}

TEST(segment_map, same_n_sym_shares_a_piece)
{
    const auto chunks =
        check_plan({ { 3, 7 }, { 0, 6 }, { 5, 7 }, { 2, 7 }, { 1, 0 }, { 2, 7 } },
                   1000,
                   k_pieces,
                   "merge");
    ASSERT_EQ(chunks.size(), 1u);
    // The first three with vectors are contiguous; the matrix without vectors between
    // the last two keeps them apart.
    ASSERT_EQ(chunks[0].map.n, 2);
    EXPECT_EQ(chunks[0].map.v_end[0], 70);
    EXPECT_EQ(chunks[0].map.m_begin[1], 11);
}

TEST(segment_map, piece_limit_cuts_a_small_call)
{
    // 40 segments, neighbours with different n_sym: 40 pieces, far below the target.
    std::vector<batch_segment> segs;
    const size_t cycle[] = { 7, 3, 1, 5, 2, 6, 4 };
    for (size_t i = 0; i < 40; ++i)
        segs.push_back(batch_segment{ 1 + (i * 13) % 29, cycle[i % 7] });
    const size_t n = vectors(segs);
    ASSERT_TRUE(gr::mimodet::core::single_copy_call(n));
    const auto chunks =
        check_plan(segs, gr::mimodet::core::chunk_target_vectors(n, 3), k_pieces, "40");
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_EQ(chunks[0].map.n, k_pieces);
    EXPECT_EQ(chunks[1].map.n, k_pieces);
    EXPECT_EQ(chunks[2].map.n, 40 - 2 * k_pieces);
    for (int p : { 1, 2, 3, 5 })
        check_plan(segs, n, p, "40, pieces " + std::to_string(p));
}

TEST(segment_map, large_segments_split_by_the_target)
{
    const std::vector<batch_segment> segs = { { 800, 7 }, { 70001, 1 }, { 9, 13 } };
    const size_t n = vectors(segs);
    const size_t target = gr::mimodet::core::chunk_target_vectors(n, 3);
    EXPECT_FALSE(gr::mimodet::core::single_copy_call(n));
    EXPECT_EQ(target, (n + 2) / 3);
    const auto chunks = check_plan(segs, target, k_pieces, "large");
    EXPECT_EQ(chunks.size(), 3u);
    // A matrix with more vectors than the target is a chunk of its own.
    const auto big = check_plan({ { 2, 3 }, { 3, 50 }, { 4, 2 } }, 20, k_pieces, "big");
    ASSERT_EQ(big.size(), 5u);
    for (size_t c = 1; c <= 3; ++c)
        EXPECT_EQ(big[c].n_vec, 50u);
    // Target 0: one matrix with vectors per chunk.
    EXPECT_EQ(check_plan({ { 3, 2 }, { 2, 1 } }, 0, k_pieces, "target 0").size(), 5u);
}

TEST(segment_map, targets)
{
    using gr::mimodet::core::chunk_target_vectors;
    using gr::mimodet::core::k_max_chunk_vectors;
    using gr::mimodet::core::k_min_chunk_vectors;
    using gr::mimodet::core::k_single_copy_vectors;
    EXPECT_EQ(chunk_target_vectors(7200, 3), 7200u);
    EXPECT_EQ(chunk_target_vectors(k_single_copy_vectors, 3), k_single_copy_vectors);
    EXPECT_EQ(chunk_target_vectors(k_single_copy_vectors + 1, 3),
              (k_single_copy_vectors + 3) / 3);
    EXPECT_EQ(chunk_target_vectors(k_single_copy_vectors + 1, 8), k_min_chunk_vectors);
    EXPECT_EQ(chunk_target_vectors(size_t(1) << 30, 3), k_max_chunk_vectors);
}

TEST(segment_map, random_batches_match_brute_force)
{
    std::mt19937 rng(12345);
    for (int trial = 0; trial < 500; ++trial) {
        std::vector<batch_segment> segs(rng() % 40);
        for (auto& s : segs) {
            s.n_mat = rng() % 4 == 0 ? 0 : rng() % 60;
            s.n_sym = rng() % 5 == 0 ? 0 : rng() % 4 == 0 ? 1 : rng() % 14;
        }
        const size_t n = vectors(segs);
        const size_t targets[] = {
            0, 1, 6, 7, 50, 333, n, n + 1, gr::mimodet::core::chunk_target_vectors(n, 3)
        };
        for (size_t target : targets)
            for (int pieces : { 1, 2, 3, k_pieces })
                check_plan(segs,
                           target,
                           pieces,
                           "trial " + std::to_string(trial) + ", target " +
                               std::to_string(target) + ", pieces " +
                               std::to_string(pieces));
        if (::testing::Test::HasFailure())
            return;
    }
}

TEST(segment_map, an_lte_slot_is_one_chunk)
{
    // 20 MHz, every slot (with and without PSS/SSS), 1, 2 and 4 ports: one slot and two
    // slots in one call are small calls and each one chunk, one piece per group.
    const auto num = lte_numerology::from_bandwidth(20);
    for (int n_tx : { 1, 2, 4 }) {
        lte_grid grid(num, n_tx, 7);
        gr::mimodet::core::slot_detection sd(grid, 4, cpu_det(n_tx, 4));
        for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns) {
            const std::string what =
                std::to_string(n_tx) + " ports, slot " + std::to_string(ns);
            const auto one = slot_segments(sd, ns);
            const size_t n = vectors(one);
            ASSERT_TRUE(gr::mimodet::core::single_copy_call(n)) << what;
            const auto c1 = check_plan(
                one, gr::mimodet::core::chunk_target_vectors(n, 3), k_pieces, what);
            ASSERT_EQ(c1.size(), 1u) << what;
            EXPECT_EQ(c1[0].map.n, static_cast<int>(one.size())) << what;

            auto two = one;
            const auto next =
                slot_segments(sd, (ns + 1) % lte_numerology::slots_per_frame);
            two.insert(two.end(), next.begin(), next.end());
            const size_t n2 = vectors(two);
            ASSERT_TRUE(gr::mimodet::core::single_copy_call(n2)) << what;
            EXPECT_EQ(check_plan(two,
                                 gr::mimodet::core::chunk_target_vectors(n2, 3),
                                 k_pieces,
                                 what + " + next")
                          .size(),
                      1u)
                << what;
        }
    }
}

TEST(segment_map, refuses_what_it_cannot_map)
{
    const std::vector<batch_segment> segs = { { 1, 2 } };
    EXPECT_THROW(plan_chunks(segs.data(), 1, 10, 0), std::invalid_argument);
    EXPECT_THROW(plan_chunks(segs.data(), 1, 10, k_pieces + 1), std::invalid_argument);
    const std::vector<batch_segment> huge = { { 1, size_t(INT_MAX) + 1 } };
    EXPECT_THROW(plan_chunks(huge.data(), 1, 10), std::invalid_argument);
}
