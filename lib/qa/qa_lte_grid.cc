/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// LTE numerology and resource-grid map (pilots, sync signals, data elements).

#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <cmath>
#include <set>

using namespace gr::mimodet;

TEST(lte_numerology, presets)
{
    const double mhz[] = { 1.4, 3, 5, 10, 15, 20 };
    const int rbs[] = { 6, 15, 25, 50, 75, 100 };
    const int ffts[] = { 128, 256, 512, 1024, 1536, 2048 };
    for (int i = 0; i < 6; ++i) {
        const auto n = lte_numerology::from_bandwidth(mhz[i]);
        EXPECT_EQ(n.n_rb, rbs[i]);
        EXPECT_EQ(n.n_sc, 12 * rbs[i]);
        EXPECT_EQ(n.fft_size, ffts[i]);
        EXPECT_DOUBLE_EQ(n.sample_rate, 15000.0 * ffts[i]);
        // A slot is exactly 0.5 ms.
        EXPECT_EQ(n.slot_samples(), static_cast<int>(n.sample_rate / 2000));
        std::set<int> bins;
        for (int k = 0; k < n.n_sc; ++k) {
            const int b = n.bin(k);
            EXPECT_GT(b, 0) << "DC bin used";
            EXPECT_LT(b, n.fft_size);
            bins.insert(b);
        }
        EXPECT_EQ(static_cast<int>(bins.size()), n.n_sc);
    }
    const auto n20 = lte_numerology::from_bandwidth(20);
    EXPECT_EQ(n20.cp_first, 160);
    EXPECT_EQ(n20.cp_other, 144);
    EXPECT_EQ(n20.bin(599), 2047);
    EXPECT_EQ(n20.bin(600), 1);
    EXPECT_THROW(lte_numerology::from_bandwidth(7), std::invalid_argument);
}

TEST(lte_grid, crs_positions_follow_36211)
{
    const auto num = lte_numerology::from_bandwidth(5);
    for (int cell : { 0, 1, 5, 301 }) {
        const lte_grid g(num, 4, cell);
        const int vs = cell % 6;
        for (int ns : { 0, 1, 7 }) {
            // Ports 0/1: symbols 0 and 4, 2 per RB; ports 2/3: symbol 1.
            for (int p = 0; p < 4; ++p) {
                const auto& res = g.crs_elements(ns, p);
                EXPECT_EQ(static_cast<int>(res.size()), (p < 2 ? 2 : 1) * 2 * num.n_rb);
                for (int idx : res) {
                    const int l = idx / num.n_sc, k = idx % num.n_sc;
                    int v;
                    if (p == 0)
                        v = l == 0 ? 0 : 3;
                    else if (p == 1)
                        v = l == 0 ? 3 : 0;
                    else if (p == 2)
                        v = 3 * (ns % 2);
                    else
                        v = 3 + 3 * (ns % 2);
                    EXPECT_TRUE(p < 2 ? (l == 0 || l == 4) : l == 1);
                    EXPECT_EQ(k % 6, (v + vs) % 6);
                    EXPECT_NEAR(std::abs(g.crs_value(ns, p, l, k)), 1.0f, 1e-6f);
                    // Every other port leaves the element empty.
                    for (int q = 0; q < 4; ++q)
                        if (q != p)
                            EXPECT_EQ(g.kind(ns, q, l, k), re_kind::empty);
                }
            }
        }
    }
}

TEST(lte_grid, data_elements_count)
{
    const auto num = lte_numerology::from_bandwidth(20);
    const int all = 7 * num.n_sc;
    const lte_grid g1(num, 1, 0), g2(num, 2, 0), g4(num, 4, 0);
    // Per slot: 1 port reserves 2 symbols x 200 CRS, 2 ports 2 x 400, 4 ports + 400.
    EXPECT_EQ(static_cast<int>(g1.data_elements(3).size()), all - 400);
    EXPECT_EQ(static_cast<int>(g2.data_elements(3).size()), all - 800);
    EXPECT_EQ(static_cast<int>(g4.data_elements(3).size()), all - 1200);
    // Slots 0 and 10 also give the central 72 subcarriers of symbols 5 and 6 to sync.
    EXPECT_EQ(static_cast<int>(g2.data_elements(0).size()), all - 800 - 144);
    EXPECT_EQ(static_cast<int>(g2.data_elements(10).size()), all - 800 - 144);
    for (int idx : g4.data_elements(0))
        for (int p = 0; p < 4; ++p)
            EXPECT_EQ(g4.kind(0, p, idx / num.n_sc, idx % num.n_sc), re_kind::data);
}

TEST(lte_grid, crs_sequence_depends_on_slot_symbol_and_cell)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    const lte_grid a(num, 2, 0), b(num, 2, 1);
    const auto& res = a.crs_elements(0, 0);
    int same_slot = 0, same_cell = 0;
    for (int idx : res) {
        const int l = idx / num.n_sc, k = idx % num.n_sc;
        same_slot += a.crs_value(0, 0, l, k) == a.crs_value(2, 0, l, k);
        same_cell += a.crs_value(0, 0, l, k) ==
                     b.crs_value(0, 0, l, (k + 1) % num.n_sc); // b is shifted by 1
    }
    EXPECT_LT(same_slot, static_cast<int>(res.size()));
    EXPECT_LT(same_cell, static_cast<int>(res.size()));
    // Gold sequence: balanced and reproducible.
    const auto c = lte_grid::gold_sequence(12345, 10000);
    int ones = 0;
    for (auto x : c)
        ones += x;
    EXPECT_NEAR(ones / 10000.0, 0.5, 0.02);
    EXPECT_EQ(c, lte_grid::gold_sequence(12345, 10000));
}

TEST(lte_grid, sync_signals)
{
    for (int id2 = 0; id2 < 3; ++id2) {
        const auto p = lte_grid::make_pss(id2);
        ASSERT_EQ(p.size(), 62u);
        for (auto x : p)
            EXPECT_NEAR(std::abs(x), 1.0f, 1e-5f);
        // Different roots are nearly orthogonal.
        const auto o = lte_grid::make_pss((id2 + 1) % 3);
        std::complex<float> cross = 0, self = 0;
        for (int n = 0; n < 62; ++n) {
            cross += p[n] * std::conj(o[n]);
            self += p[n] * std::conj(p[n]);
        }
        EXPECT_LT(std::abs(cross), 0.5f * std::abs(self));
    }
    // 504 cell ids x 2 slots give distinct SSS sequences of +-1.
    std::set<std::vector<float>> seen;
    for (int cell = 0; cell < 504; ++cell)
        for (int ns : { 0, 10 }) {
            const auto s = lte_grid::make_sss(cell, ns);
            std::vector<float> re;
            for (auto x : s) {
                EXPECT_EQ(std::abs(x.real()), 1.0f);
                re.push_back(x.real());
            }
            seen.insert(re);
        }
    EXPECT_EQ(seen.size(), 1008u);
    const lte_grid g(lte_numerology::from_bandwidth(1.4), 2, 7);
    EXPECT_EQ(g.kind(0, 0, 6, 36), re_kind::pss);
    EXPECT_EQ(g.kind(0, 1, 5, 36), re_kind::sss);
    EXPECT_EQ(g.kind(0, 0, 6, 2), re_kind::guard);
    EXPECT_EQ(g.kind(1, 0, 6, 36), re_kind::data);
    EXPECT_THROW(lte_grid(lte_numerology::from_bandwidth(5), 3, 0), std::invalid_argument);
    EXPECT_THROW(lte_grid(lte_numerology::from_bandwidth(5), 2, 504), std::invalid_argument);
}
