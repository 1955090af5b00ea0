/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Transmit grid construction (slot_mapper): data mapping of docs/SLOT_LAYOUT.md, CRS,
// PSS/SSS, empty elements, bit counts, IFFT bin placement.

#include "phy/slot_mapper.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

using namespace gr::mimodet;
using core::slot_mapper;
using cf = std::complex<float>;

namespace {

struct setup {
    double mhz;
    int n_tx;
    modulation mod;
    int cell;
};

const setup k_setups[] = {
    { 1.4, 1, modulation::qpsk, 0 },  { 1.4, 2, modulation::qam16, 1 },
    { 1.4, 4, modulation::qam64, 5 }, { 5, 2, modulation::qam64, 301 },
    { 5, 4, modulation::qam16, 77 },  { 20, 4, modulation::qpsk, 503 },
    { 3, 1, modulation::qam16, 2 },   { 10, 2, modulation::qpsk, 250 },
};

std::vector<uint8_t> random_bits(size_t n, std::mt19937& rng)
{
    std::vector<uint8_t> b(n);
    for (auto& x : b)
        x = rng() & 1;
    return b;
}

struct slot_grids {
    std::vector<std::vector<cf>> g;
    std::vector<cf*> ptr;
    slot_grids(int n_tx, int size) : g(n_tx, std::vector<cf>(size, cf(99.0f, 99.0f)))
    {
        for (auto& v : g)
            ptr.push_back(v.data());
    }
};

std::string name(const setup& s)
{
    return std::to_string(s.mhz) + " MHz, " + std::to_string(s.n_tx) + " tx, " +
           to_string(s.mod) + ", cell " + std::to_string(s.cell);
}

} // namespace

TEST(slot_mapper, bit_counts)
{
    for (const auto& s : k_setups) {
        const auto num = lte_numerology::from_bandwidth(s.mhz);
        const slot_mapper m(num, s.n_tx, s.mod, s.cell);
        const lte_grid g(num, s.n_tx, s.cell);
        const int q = static_cast<int>(s.mod);
        long frame = 0;
        for (int ns = 0; ns < 20; ++ns) {
            EXPECT_EQ(m.n_data(ns), static_cast<int>(g.data_elements(ns).size()));
            EXPECT_EQ(m.bits_per_slot(ns), m.n_data(ns) * s.n_tx * q) << name(s);
            frame += m.bits_per_slot(ns);
            // Data = grid minus every port's CRS (and sync + guards in slots 0, 10).
            int crs = 0;
            for (int p = 0; p < s.n_tx; ++p)
                crs += static_cast<int>(g.crs_elements(ns, p).size());
            const int sync = lte_grid::has_sync(ns) ? 2 * 72 : 0;
            EXPECT_EQ(m.n_data(ns), 7 * num.n_sc - crs - sync) << name(s) << " ns " << ns;
        }
        EXPECT_EQ(m.bits_per_frame(), frame);
        // Slots 0 and 10 carry fewer data elements than the others.
        EXPECT_LT(m.n_data(0), m.n_data(1));
        EXPECT_LT(m.n_data(10), m.n_data(11));
        EXPECT_EQ(m.n_data(0), m.n_data(10));
    }
    // Hand-checked: 1.4 MHz (72 subcarriers), 2 ports: 504 - 2*2*12 CRS = 456 data
    // elements, slot 0 has 2*72 fewer (sync symbols fill the whole band).
    const slot_mapper m(lte_numerology::from_bandwidth(1.4), 2, modulation::qam16, 1);
    EXPECT_EQ(m.n_data(1), 456);
    EXPECT_EQ(m.bits_per_slot(1), 456 * 2 * 4);
    EXPECT_EQ(m.n_data(0), 312);
    EXPECT_EQ(m.bits_per_slot(10), 312 * 2 * 4);
}

TEST(slot_mapper, data_bits_where_slot_layout_says)
{
    std::mt19937 rng(7);
    for (const auto& s : k_setups) {
        const auto num = lte_numerology::from_bandwidth(s.mhz);
        const slot_mapper m(num, s.n_tx, s.mod, s.cell);
        const lte_grid g(num, s.n_tx, s.cell);
        const auto& c = constellation::get(s.mod);
        const int q = c.bits_per_symbol();
        for (int ns : { 0, 1, 5, 10, 19 }) {
            const auto bits = random_bits(m.bits_per_slot(ns), rng);
            slot_grids gr(s.n_tx, m.grid_size());
            EXPECT_EQ(m.map(ns, bits.data(), gr.ptr.data()), 0);
            const auto& data = g.data_elements(ns);
            int errors = 0;
            for (size_t j = 0; j < data.size(); ++j)
                for (int t = 0; t < s.n_tx; ++t) {
                    const cf x = gr.g[t][data[j]];
                    const int label = c.slice(std::complex<double>(x.real(), x.imag()));
                    // Exactly the constellation point, not just near it.
                    errors += std::abs(x - cf(c.points()[label])) > 1e-7f;
                    for (int i = 0; i < q; ++i) {
                        const int bit = (label >> (q - 1 - i)) & 1; // b0 = MSB
                        errors += bit != bits[(j * s.n_tx + t) * q + i];
                    }
                }
            EXPECT_EQ(errors, 0) << name(s) << " ns " << ns;
        }
    }
}

TEST(slot_mapper, every_element_matches_its_kind)
{
    std::mt19937 rng(11);
    for (const auto& s : k_setups) {
        const auto num = lte_numerology::from_bandwidth(s.mhz);
        const slot_mapper m(num, s.n_tx, s.mod, s.cell);
        const lte_grid g(num, s.n_tx, s.cell);
        const int n_sc = num.n_sc;
        for (int ns = 0; ns < 20; ++ns) {
            const auto bits = random_bits(m.bits_per_slot(ns), rng);
            slot_grids gr(s.n_tx, m.grid_size());
            m.map(ns, bits.data(), gr.ptr.data());
            int bad = 0, n_crs = 0, n_pss = 0, n_sss = 0;
            for (int t = 0; t < s.n_tx; ++t)
                for (int l = 0; l < 7; ++l)
                    for (int k = 0; k < n_sc; ++k) {
                        const cf x = gr.g[t][l * n_sc + k];
                        const int n = k - (n_sc / 2 - 31);
                        switch (g.kind(ns, t, l, k)) {
                        case re_kind::data:
                            bad += std::abs(std::abs(x) - 1.0f) > 0.9f; // a QAM point
                            break;
                        case re_kind::crs:
                            ++n_crs;
                            bad += x != g.crs_value(ns, t, l, k);
                            bad += std::abs(std::abs(x) - 1.0f) > 1e-5f;
                            break;
                        case re_kind::pss:
                            ASSERT_EQ(l, lte_grid::pss_symbol);
                            ASSERT_TRUE(n >= 0 && n < 62);
                            if (t == 0) {
                                ++n_pss;
                                bad += x != g.pss()[n];
                            } else {
                                bad += x != cf(0, 0);
                            }
                            break;
                        case re_kind::sss:
                            ASSERT_EQ(l, lte_grid::sss_symbol);
                            ASSERT_TRUE(n >= 0 && n < 62);
                            if (t == 0) {
                                ++n_sss;
                                bad += x != g.sss(ns)[n];
                            } else {
                                bad += x != cf(0, 0);
                            }
                            break;
                        case re_kind::empty:
                        case re_kind::guard:
                            bad += x != cf(0, 0);
                            break;
                        }
                    }
            EXPECT_EQ(bad, 0) << name(s) << " ns " << ns;
            int crs_expected = 0;
            for (int p = 0; p < s.n_tx; ++p)
                crs_expected += static_cast<int>(g.crs_elements(ns, p).size());
            EXPECT_EQ(n_crs, crs_expected);
            EXPECT_EQ(n_pss, lte_grid::has_sync(ns) ? 62 : 0);
            EXPECT_EQ(n_sss, lte_grid::has_sync(ns) ? 62 : 0);
        }
    }
}

TEST(slot_mapper, crs_per_port_and_sync_positions)
{
    // Independent of kind(): port p's crs_elements carry crs_value, the same positions
    // are zero on every other port, and the sync sits at n_sc/2-31 .. n_sc/2+30.
    const auto num = lte_numerology::from_bandwidth(5);
    const slot_mapper m(num, 4, modulation::qam16, 42);
    const lte_grid& g = m.grid_map();
    const int n_sc = num.n_sc;
    std::mt19937 rng(3);
    for (int ns : { 0, 3, 10 }) {
        const auto bits = random_bits(m.bits_per_slot(ns), rng);
        slot_grids gr(4, m.grid_size());
        m.map(ns, bits.data(), gr.ptr.data());
        for (int p = 0; p < 4; ++p)
            for (int idx : g.crs_elements(ns, p))
                for (int t = 0; t < 4; ++t)
                    EXPECT_EQ(gr.g[t][idx],
                              t == p ? g.crs_value(ns, p, idx / n_sc, idx % n_sc)
                                     : cf(0, 0));
        if (lte_grid::has_sync(ns)) {
            for (int n = 0; n < 62; ++n) {
                const int k = n_sc / 2 - 31 + n;
                EXPECT_EQ(gr.g[0][6 * n_sc + k], g.pss()[n]);
                EXPECT_EQ(gr.g[0][5 * n_sc + k], g.sss(ns)[n]);
            }
            // 5 guards each side are zero on all ports.
            for (int t = 0; t < 4; ++t)
                for (int d = 1; d <= 5; ++d)
                    for (int l : { 5, 6 }) {
                        EXPECT_EQ(gr.g[t][l * n_sc + n_sc / 2 - 31 - d], cf(0, 0));
                        EXPECT_EQ(gr.g[t][l * n_sc + n_sc / 2 + 30 + d], cf(0, 0));
                    }
        }
    }
    // SSS differs between slots 0 and 10.
    EXPECT_NE(g.sss(0), g.sss(10));
}

TEST(slot_mapper, pilot_ratio_scales_the_crs_only)
{
    // pilot_ratio_db: every CRS element times sqrt(10^(ratio/10)); data, sync and empty
    // elements as at 0 dB (the data keep unit power: no renormalisation).
    const auto num = lte_numerology::from_bandwidth(3);
    const slot_mapper plain(num, 4, modulation::qam64, 11);
    std::mt19937 rng(8);
    for (double db : { 3.0, -3.0, 6.0 }) {
        const slot_mapper boosted(num, 4, modulation::qam64, 11, db);
        EXPECT_EQ(boosted.pilot_ratio_db(), db);
        const float amp = static_cast<float>(std::sqrt(std::pow(10.0, db / 10)));
        for (int ns : { 0, 7 }) {
            const auto bits = random_bits(plain.bits_per_slot(ns), rng);
            slot_grids a(4, plain.grid_size()), b(4, plain.grid_size());
            plain.map(ns, bits.data(), a.ptr.data());
            boosted.map(ns, bits.data(), b.ptr.data());
            for (int t = 0; t < 4; ++t) {
                std::vector<bool> crs(plain.grid_size(), false);
                for (int idx : plain.grid_map().crs_elements(ns, t))
                    crs[idx] = true;
                for (int e = 0; e < plain.grid_size(); ++e) {
                    if (crs[e]) {
                        EXPECT_NEAR(std::abs(b.g[t][e]), amp, 1e-5f * amp);
                        EXPECT_NEAR(std::abs(b.g[t][e] - amp * a.g[t][e]), 0.0f, 1e-6f);
                    } else {
                        EXPECT_EQ(b.g[t][e], a.g[t][e]) << "t " << t << " element " << e;
                    }
                }
            }
        }
    }
    EXPECT_THROW(slot_mapper(num, 2, modulation::qpsk, 0, 10.5), std::invalid_argument);
    EXPECT_THROW(slot_mapper(num, 2, modulation::qpsk, 0, std::nan("")), std::invalid_argument);
}

TEST(slot_mapper, invalid_bytes_counted_and_low_bit_used)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    const slot_mapper m(num, 2, modulation::qpsk, 0);
    std::mt19937 rng(5);
    auto bits = random_bits(m.bits_per_slot(2), rng);
    auto dirty = bits;
    dirty[0] |= 2; // 2 or 3
    dirty[17] = bits[17] ? 255 : 254;
    dirty[100] |= 0x40;
    slot_grids a(2, m.grid_size()), b(2, m.grid_size());
    EXPECT_EQ(m.map(2, bits.data(), a.ptr.data()), 0);
    EXPECT_EQ(m.map(2, dirty.data(), b.ptr.data()), 3);
    EXPECT_EQ(a.g, b.g);
    EXPECT_THROW(m.map(20, bits.data(), a.ptr.data()), std::out_of_range);
}

TEST(slot_mapper, symbol_to_bins_and_unitary_round_trip)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    const slot_mapper m(num, 1, modulation::qam64, 9);
    std::mt19937 rng(1);
    const auto bits = random_bits(m.bits_per_slot(4), rng);
    std::vector<cf> grid(m.grid_size());
    cf* p = grid.data();
    m.map(4, bits.data(), &p);
    const int N = num.fft_size, n_sc = num.n_sc;
    const float scale = 1.0f / std::sqrt(static_cast<float>(N));
    for (int l = 0; l < 7; ++l) {
        std::vector<cf> bins(N, cf(5, 5));
        m.symbol_to_bins(grid.data(), l, scale, bins.data());
        std::vector<int> used(N, -1);
        for (int k = 0; k < n_sc; ++k)
            used[num.bin(k)] = k;
        EXPECT_EQ(bins[0], cf(0, 0)) << "DC";
        for (int b = 0; b < N; ++b)
            if (used[b] < 0)
                EXPECT_EQ(bins[b], cf(0, 0));
            else
                EXPECT_NEAR(
                    std::abs(bins[b] - scale * grid[l * n_sc + used[b]]), 0, 1e-7);
        // Inverse DFT (sum, as gr::fft::fft_complex_rev) then unitary forward DFT gives
        // the grid row back: the modulator/demodulator scaling of SLOT_LAYOUT.md.
        std::vector<std::complex<double>> x(N);
        for (int n = 0; n < N; ++n)
            for (int b = 0; b < N; ++b)
                x[n] +=
                    std::complex<double>(bins[b]) * std::polar(1.0, 2 * M_PI * b * n / N);
        double err = 0;
        for (int k = 0; k < n_sc; ++k) {
            std::complex<double> X = 0;
            const int b = num.bin(k);
            for (int n = 0; n < N; ++n)
                X += x[n] * std::polar(1.0, -2 * M_PI * b * n / N);
            X /= std::sqrt(static_cast<double>(N));
            err = std::max(err, std::abs(X - std::complex<double>(grid[l * n_sc + k])));
        }
        EXPECT_LT(err, 1e-5) << "symbol " << l;
    }
}

TEST(slot_mapper, rejects_bad_parameters)
{
    const auto num = lte_numerology::from_bandwidth(3);
    EXPECT_THROW(slot_mapper(num, 3, modulation::qpsk, 0), std::invalid_argument);
    EXPECT_THROW(slot_mapper(num, 2, modulation::qpsk, 504), std::invalid_argument);
    EXPECT_THROW(slot_mapper(num, 2, modulation::qpsk, -1), std::invalid_argument);
}
