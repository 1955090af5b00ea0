/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Slot detection: grouping of subcarriers by data-symbol count, gather/scatter order
// (a noiseless slot through every detector gives back the transmitted bits), LLR signs,
// and the rejection of unusable inputs.

#include "receiver/slot_detection.h"
#include "util/host_memory.h"
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <set>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;

namespace {

struct test_slot {
    std::vector<uint8_t> bits;             //!< n_data * n_tx * q, slot order
    std::vector<std::vector<cf>> y;        //!< [n_rx][7 * n_sc]
    std::vector<cf> H;                     //!< [(k * n_rx + r) * n_tx + t]
};

//! Framer-equivalent mapping of random bits onto the ports' grids, through a random
//! frequency-selective channel (independent per subcarrier), with no noise.
test_slot make_slot(const lte_grid& grid, int ns, int n_rx, modulation mod, unsigned seed)
{
    const int n_tx = grid.n_ports(), n_sc = grid.numerology().n_sc;
    const auto& c = constellation::get(mod);
    const int q = c.bits_per_symbol();
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, std::sqrt(0.5f));
    std::bernoulli_distribution b;
    test_slot s;
    const auto& data = grid.data_elements(ns);
    s.bits.resize(data.size() * n_tx * q);
    for (auto& v : s.bits)
        v = b(rng);
    std::vector<std::vector<cf>> x(n_tx, std::vector<cf>(7 * n_sc, cf(0, 0)));
    for (size_t j = 0; j < data.size(); ++j)
        for (int t = 0; t < n_tx; ++t) {
            int label = 0;
            for (int i = 0; i < q; ++i)
                label = (label << 1) | s.bits[(j * n_tx + t) * q + i];
            x[t][data[j]] = cf(c.points()[label]);
        }
    for (int t = 0; t < n_tx; ++t)
        for (int re : grid.crs_elements(ns, t))
            x[t][re] = grid.crs_value(ns, t, re / n_sc, re % n_sc);
    s.H.resize(static_cast<size_t>(n_sc) * n_rx * n_tx);
    for (auto& h : s.H)
        h = cf(g(rng), g(rng));
    s.y.assign(n_rx, std::vector<cf>(7 * n_sc, cf(0, 0)));
    for (int r = 0; r < n_rx; ++r)
        for (int i = 0; i < 7 * n_sc; ++i)
            for (int t = 0; t < n_tx; ++t)
                s.y[r][i] += s.H[((i % n_sc) * n_rx + r) * n_tx + t] * x[t][i];
    return s;
}

std::vector<const cf*> ptrs(const test_slot& s)
{
    std::vector<const cf*> p;
    for (const auto& v : s.y)
        p.push_back(v.data());
    return p;
}

detector::sptr make_det(const std::string& alg, int n_tx, int n_rx, modulation mod)
{
    detector_config cfg;
    cfg.algorithm = alg;
    cfg.n_tx = n_tx;
    cfg.n_rx = n_rx;
    cfg.mod = mod;
    cfg.threads = 1;
    return detector::make(cfg);
}

} // namespace

TEST(slot_detection, groups_cover_every_data_element_once)
{
    const auto num = lte_numerology::from_bandwidth(3);
    for (int n_tx : { 1, 2, 4 }) {
        lte_grid grid(num, n_tx, 5);
        core::slot_detection sd(grid, 4, make_det("mmse", n_tx, 4, modulation::qpsk));
        for (int ns = 0; ns < 20; ++ns) {
            const auto& data = grid.data_elements(ns);
            std::set<int> pos, sc;
            size_t n = 0;
            for (const auto& g : sd.groups(ns)) {
                ASSERT_GT(g.n_sym, 0);
                ASSERT_EQ(g.re.size(), g.sc.size() * g.n_sym);
                ASSERT_EQ(g.pos.size(), g.re.size());
                for (size_t m = 0; m < g.sc.size(); ++m) {
                    EXPECT_TRUE(sc.insert(g.sc[m]).second) << "subcarrier in two groups";
                    for (int s = 0; s < g.n_sym; ++s) {
                        const size_t i = m * g.n_sym + s;
                        EXPECT_EQ(g.re[i] % num.n_sc, g.sc[m]);
                        EXPECT_EQ(data[g.pos[i]], g.re[i]);
                        if (s > 0) // symbols of a subcarrier in time order
                            EXPECT_GT(g.re[i], g.re[i - 1]);
                        pos.insert(g.pos[i]);
                    }
                }
                n += g.re.size();
            }
            EXPECT_EQ(n, data.size());
            EXPECT_EQ(pos.size(), data.size());
            EXPECT_EQ(sd.values_per_slot(ns), data.size() * n_tx * 2);
        }
        // Slot 0 carries PSS/SSS: fewer data elements than slot 1.
        EXPECT_LT(sd.values_per_slot(0), sd.values_per_slot(1));
        EXPECT_EQ(sd.max_values_per_slot(), sd.values_per_slot(1));
    }
}

TEST(slot_detection, noiseless_round_trip_every_algorithm)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    struct setup {
        int n_tx, n_rx;
        modulation mod;
    };
    for (const setup& su : { setup{ 2, 2, modulation::qam64 }, setup{ 4, 4, modulation::qam16 },
                             setup{ 1, 2, modulation::qpsk } }) {
        lte_grid grid(num, su.n_tx, 17);
        for (const auto& alg : algorithms()) {
            if (alg == "ml" && su.n_tx == 4)
                continue; // 65536 candidates per vector: slow, and covered by 2x2
            core::slot_detection sd(grid, su.n_rx, make_det(alg, su.n_tx, su.n_rx, su.mod));
            for (int ns : { 0, 1, 10, 13 }) {
                const auto s = make_slot(grid, ns, su.n_rx, su.mod, 100 + ns);
                const auto p = ptrs(s);
                // noise_var tiny: the regularised MMSE is then unbiased enough too.
                ASSERT_EQ(sd.check(ns, p.data(), s.H.data(), 1e-6f), "");
                std::vector<uint8_t> bits(sd.values_per_slot(ns), 7);
                sd.detect_bits(ns, p.data(), s.H.data(), 1e-6f, bits.data());
                EXPECT_EQ(bits, s.bits) << alg << " " << su.n_tx << "x" << su.n_rx
                                        << " slot " << ns;
                if (!sd.det().soft())
                    continue;
                std::vector<float> llr(sd.values_per_slot(ns), NAN);
                sd.detect_llr(ns, p.data(), s.H.data(), 1e-6f, llr.data());
                size_t wrong = 0;
                for (size_t i = 0; i < llr.size(); ++i)
                    wrong += (llr[i] < 0) != (s.bits[i] == 1);
                EXPECT_EQ(wrong, 0u) << alg << " LLR signs, slot " << ns;
            }
        }
    }
}

TEST(slot_detection, several_slots_in_one_call_equal_one_call_per_slot)
{
    // 5 MHz 4x4 16QAM at a noise level where decisions differ between detectors; the
    // slots include 0 and 10 (PSS/SSS: other subcarrier groups) and a repeated slot.
    const auto num = lte_numerology::from_bandwidth(5);
    lte_grid grid(num, 4, 3);
    const int n_rx = 4;
    const std::vector<int> ns_list = { 9, 10, 11, 0, 0, 19 };
    std::vector<test_slot> tx;
    std::mt19937 rng(5);
    std::normal_distribution<float> g(0.0f, 0.2f);
    for (size_t i = 0; i < ns_list.size(); ++i) {
        tx.push_back(make_slot(grid, ns_list[i], n_rx, modulation::qam16, 40 + i));
        for (auto& v : tx.back().y)
            for (auto& x : v)
                x += cf(g(rng), g(rng));
    }
    for (const auto& alg : algorithms()) {
        if (alg == "ml")
            continue; // 65536 candidates per vector at 4x4
        core::slot_detection sd(grid, n_rx, make_det(alg, 4, n_rx, modulation::qam16));
        sd.prepare(2); // dummy slots first: must not change what follows
        std::vector<std::vector<const cf*>> p;
        std::vector<core::slot_detection::slot_input> in;
        size_t total = 0;
        for (size_t i = 0; i < tx.size(); ++i)
            p.push_back(ptrs(tx[i]));
        for (size_t i = 0; i < tx.size(); ++i) {
            in.push_back({ ns_list[i], p[i].data(), tx[i].H.data(), 0.08f });
            total += sd.values_per_slot(ns_list[i]);
        }
        std::vector<uint8_t> bits(total, 7), ref;
        std::vector<size_t> trunc;
        sd.detect_bits(in, bits.data(), &trunc);
        ASSERT_EQ(trunc.size(), in.size());
        for (size_t t : trunc)
            EXPECT_EQ(t, 0u) << alg << ": no deadline, nothing truncated";
        std::vector<float> llr, ref_llr;
        if (sd.det().soft()) {
            llr.assign(total, NAN);
            sd.detect_llr(in, llr.data());
        }
        for (const auto& x : in) {
            std::vector<uint8_t> b(sd.values_per_slot(x.ns));
            sd.detect_bits(x.ns, x.grids, x.H, x.noise_var, b.data());
            ref.insert(ref.end(), b.begin(), b.end());
            if (sd.det().soft()) {
                std::vector<float> l(b.size());
                sd.detect_llr(x.ns, x.grids, x.H, x.noise_var, l.data());
                ref_llr.insert(ref_llr.end(), l.begin(), l.end());
            }
        }
        EXPECT_EQ(bits, ref) << alg;
        EXPECT_EQ(llr, ref_llr) << alg;
        // Bad slots are reported and zeroed; the others are detected as before. Each
        // slot is checked before it is gathered (the detector does not scan the batch
        // again): a NaN in a data element or in H drops that slot from the batch; one
        // outside the data elements (a CRS) does not matter.
        auto bad = in;
        bad[3].noise_var = NAN;
        test_slot nan_data = tx[1], inf_h = tx[4], nan_crs = tx[2];
        nan_data.y[2][grid.data_elements(ns_list[1]).back()] = cf(NAN, 0.0f);
        inf_h.H[5] = cf(0.0f, -INFINITY);
        nan_crs.y[0][grid.crs_elements(ns_list[2], 0)[0]] = cf(0.0f, NAN);
        const auto p_nan_data = ptrs(nan_data), p_inf_h = ptrs(inf_h),
                   p_nan_crs = ptrs(nan_crs);
        bad[1].grids = p_nan_data.data();
        bad[4].grids = p_inf_h.data();
        bad[4].H = inf_h.H.data();
        bad[2].grids = p_nan_crs.data();
        std::fill(bits.begin(), bits.end(), 7);
        const auto why = sd.detect_bits(bad, bits.data());
        ASSERT_EQ(why.size(), in.size());
        EXPECT_NE(why[1].find("grid of antenna 2"), std::string::npos) << why[1];
        EXPECT_NE(why[4].find("H contains"), std::string::npos) << why[4];
        size_t off = 0;
        for (size_t i = 0; i < in.size(); ++i) {
            const size_t n = sd.values_per_slot(in[i].ns);
            if (i == 1 || i == 3 || i == 4) {
                if (i == 3)
                    EXPECT_NE(why[i].find("noise_var"), std::string::npos) << why[i];
                EXPECT_EQ(std::count(bits.begin() + off, bits.begin() + off + n, 0),
                          static_cast<long>(n))
                    << alg;
            } else {
                EXPECT_EQ(why[i], "") << alg;
                EXPECT_TRUE(std::equal(bits.begin() + off, bits.begin() + off + n,
                                       ref.begin() + off))
                    << alg << " slot " << i;
            }
            off += n;
        }
    }
}

TEST(slot_detection, hard_detector_refuses_llr)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    lte_grid grid(num, 2, 0);
    core::slot_detection sd(grid, 2, make_det("psd", 2, 2, modulation::qam16));
    const auto s = make_slot(grid, 2, 2, modulation::qam16, 1);
    const auto p = ptrs(s);
    std::vector<float> llr(sd.values_per_slot(2));
    EXPECT_THROW(sd.detect_llr(2, p.data(), s.H.data(), 0.1f, llr.data()), std::logic_error);
}

TEST(slot_detection, unusable_inputs_are_rejected)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    lte_grid grid(num, 2, 0);
    core::slot_detection sd(grid, 2, make_det("mmse", 2, 2, modulation::qpsk));
    auto s = make_slot(grid, 4, 2, modulation::qpsk, 3);
    auto p = ptrs(s);
    std::vector<uint8_t> bits(sd.values_per_slot(4));
    EXPECT_EQ(sd.check(4, p.data(), s.H.data(), 0.1f), "");
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), 0.0f), "");
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), -1.0f), "");
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), NAN), "");
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), INFINITY), "");
    EXPECT_NE(sd.check(20, p.data(), s.H.data(), 0.1f), "");
    EXPECT_THROW(sd.detect_bits(4, p.data(), s.H.data(), NAN, bits.data()),
                 std::invalid_argument);
    s.H[17] = cf(NAN, 0);
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), 0.1f), "");
    s.H[17] = cf(1, 0);
    s.y[1][grid.data_elements(4)[5]] = cf(0, INFINITY);
    EXPECT_NE(sd.check(4, p.data(), s.H.data(), 0.1f), "");
    // A NaN outside the data elements (a CRS) does not matter to the detector.
    s.y[1][grid.data_elements(4)[5]] = cf(0, 0);
    s.y[0][grid.crs_elements(4, 0)[0]] = cf(NAN, 0);
    EXPECT_EQ(sd.check(4, p.data(), s.H.data(), 0.1f), "");
    // Antenna counts must match the detector's.
    EXPECT_THROW(core::slot_detection(grid, 4, make_det("mmse", 2, 2, modulation::qpsk)),
                 std::invalid_argument);
}

TEST(slot_detection, host_memory_vectors_keep_their_values)
{
    // host_alloc memory (page-locked with a GPU, malloc without): grows, copies, frees.
    core::host_vector<cf> v;
    for (int i = 0; i < 100000; ++i)
        v.push_back(cf(static_cast<float>(i), -static_cast<float>(i)));
    core::host_vector<cf> w = v;
    w.resize(300000, cf(1.0f, 2.0f));
    for (int i = 0; i < 100000; ++i)
        ASSERT_EQ(w[i], cf(static_cast<float>(i), -static_cast<float>(i)));
    EXPECT_EQ(w[299999], cf(1.0f, 2.0f));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % alignof(cf), 0u);
    core::host_free(nullptr); // a no-op
}
