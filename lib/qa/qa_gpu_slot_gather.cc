/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// slot_detection's one-slot calls on the CUDA backend gather the slot on the device
// (detector::add_gather_layout / run_gathered): the packed slot goes over in one copy,
// a kernel picks the data elements, and the outputs come back in slot order. They must
// give exactly what the host gather gives (the same slot in a two-slot call, which
// gathers on the host): identical bits, identical LLRs (scaled or not), the same input
// checks, and the PSD's truncated count. ctest label "gpu"; skips without a device.
// Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the 20 MHz slots are 1.4 MHz ones
// (the same kernels on 72 subcarriers).

#include "qa_gpu_common.h"
#include "receiver/slot_detection.h"
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <cmath>
#include <random>

using namespace qa;
using gr::mimodet::backend_kind;
using gr::mimodet::detector_config;
using gr::mimodet::lte_grid;
using gr::mimodet::lte_numerology;
using gr::mimodet::core::slot_detection;

namespace {

//! One slot's inputs: y = H x + n on every element (x random constellation points).
struct slot_data {
    int ns = 0;
    std::vector<std::vector<cf>> grids; //!< [n_rx][7 n_sc]
    std::vector<cf> H;                  //!< [n_sc][n_rx][n_tx]
    float nv = 0.0f;
    std::vector<const cf*> ptrs;
    slot_detection::slot_input input()
    {
        ptrs.clear();
        for (auto& g : grids)
            ptrs.push_back(g.data());
        return slot_detection::slot_input{ ns, ptrs.data(), H.data(), nv };
    }
};

slot_data make_slot(
    const lte_grid& grid, int n_rx, modulation mod, int ns, double snr_db, uint64_t seed)
{
    const int n_tx = grid.n_ports(), n_sc = grid.numerology().n_sc;
    const auto& pts = gr::mimodet::constellation::get(mod).points();
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> g(0.0f, std::sqrt(0.5f));
    std::uniform_int_distribution<size_t> pick(0, pts.size() - 1);
    slot_data s;
    s.ns = ns;
    s.nv = static_cast<float>(n_tx * std::pow(10.0, -snr_db / 10.0));
    s.H.resize(static_cast<size_t>(n_sc) * n_rx * n_tx);
    for (auto& h : s.H)
        h = cf(g(rng), g(rng));
    s.grids.assign(n_rx, std::vector<cf>(7 * static_cast<size_t>(n_sc)));
    const float sd = std::sqrt(s.nv);
    std::vector<cf> x(n_tx);
    for (int i = 0; i < 7 * n_sc; ++i) {
        const int k = i % n_sc;
        for (auto& v : x)
            v = pts[pick(rng)];
        for (int r = 0; r < n_rx; ++r) {
            cf y(0.0f, 0.0f);
            for (int t = 0; t < n_tx; ++t)
                y += s.H[(static_cast<size_t>(k) * n_rx + r) * n_tx + t] * x[t];
            s.grids[r][i] = y + sd * cf(g(rng), g(rng));
        }
    }
    return s;
}

struct gather_case {
    std::string alg;
    int n_tx, n_rx;
    modulation mod;
    double mhz;
};

//! 20 MHz, or 1.4 MHz under the sanitizer sizes.
double wide_mhz() { return sanitizer_size(20.0, 1.4); }

std::vector<gather_case> cases()
{
    std::vector<gather_case> c;
    for (const char* alg : { "fsd", "sfsd", "mtt", "psd", "zf", "mmse" }) {
        c.push_back({ alg, 4, 4, modulation::qam64, wide_mhz() });
        c.push_back({ alg, 2, 2, modulation::qam16, wide_mhz() });
        c.push_back({ alg, 2, 4, modulation::qpsk, 5.0 });
    }
    return c;
}

std::string case_name(const gather_case& c)
{
    return c.alg + " " + std::to_string(c.n_tx) + "x" + std::to_string(c.n_rx) + " " +
           std::to_string(static_cast<int>(c.mod)) + " " + std::to_string(c.mhz) + " MHz";
}

// Slots 0 and 10 carry PSS/SSS, 1 and 5 do not: different layouts.
const int k_slots[] = { 0, 1, 5, 10 };

} // namespace

TEST(gpu_slot_gather, one_slot_equals_host_gather)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 500;
    for (const auto& c : cases()) {
        const lte_grid grid(lte_numerology::from_bandwidth(c.mhz), c.n_tx, 3);
        detector_config cfg;
        cfg.backend = backend_kind::cuda;
        gr::mimodet::detector::sptr det;
        try {
            det = make(c.alg, c.n_tx, c.n_rx, c.mod, cfg);
        } catch (const std::invalid_argument&) {
            continue; // zf/mmse: only where this build has their CUDA implementation
        }
        slot_detection sd(grid, c.n_rx, det);
        ASSERT_TRUE(sd.device_gather()) << case_name(c);
        for (int ns : k_slots) {
            const std::string what = case_name(c) + " slot " + std::to_string(ns);
            auto a = make_slot(grid, c.n_rx, c.mod, ns, 22.0, ++seed);
            auto b = make_slot(grid, c.n_rx, c.mod, (ns + 1) % 20, 22.0, ++seed);
            const size_t n = sd.values_per_slot(ns);
            std::vector<uint8_t> one(n, 7), two(n + sd.values_per_slot(b.ns), 7);
            std::vector<size_t> t1, t2;
            auto w1 = sd.detect_bits({ a.input() }, one.data(), &t1);
            auto w2 = sd.detect_bits({ a.input(), b.input() }, two.data(), &t2);
            ASSERT_EQ(w1.size(), 1u);
            EXPECT_TRUE(w1[0].empty()) << what << ": " << w1[0];
            EXPECT_TRUE(w2[0].empty() && w2[1].empty()) << what;
            size_t diff = 0;
            for (size_t i = 0; i < n; ++i)
                diff += one[i] != two[i];
            EXPECT_EQ(diff, 0u) << what << ": bits differ from the host gather";
            EXPECT_EQ(t1[0], t2[0]) << what << ": truncated";
            EXPECT_EQ(t1[0], 0u) << what << ": no deadline, no truncation";
            if (!det->soft())
                continue;
            std::vector<float> l1(n, 7.0f), l2(n + sd.values_per_slot(b.ns), 7.0f);
            w1 = sd.detect_llr({ a.input() }, l1.data());
            w2 = sd.detect_llr({ a.input(), b.input() }, l2.data());
            EXPECT_TRUE(w1[0].empty() && w2[0].empty()) << what;
            size_t ldiff = 0;
            for (size_t i = 0; i < n; ++i)
                ldiff += !(l1[i] == l2[i]);
            EXPECT_EQ(ldiff, 0u) << what << ": LLRs differ from the host gather";
        }
    }
}

TEST(gpu_slot_gather, unscaled_llrs_equal_host_gather)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : { "sfsd", "mtt", "mmse" }) {
        const lte_grid grid(lte_numerology::from_bandwidth(wide_mhz()), 4, 1);
        detector_config cfg;
        cfg.backend = backend_kind::cuda;
        cfg.llr_scaled = false; // run_gathered multiplies by noise_var on the device
        gr::mimodet::detector::sptr det;
        try {
            det = make(alg, 4, 4, modulation::qam16, cfg);
        } catch (const std::invalid_argument&) {
            continue;
        }
        slot_detection sd(grid, 4, det);
        ASSERT_TRUE(sd.device_gather()) << alg;
        auto a = make_slot(grid, 4, modulation::qam16, 3, 12.0, 77);
        auto b = make_slot(grid, 4, modulation::qam16, 4, 12.0, 78);
        const size_t n = sd.values_per_slot(3);
        std::vector<float> l1(n), l2(n + sd.values_per_slot(4));
        sd.detect_llr({ a.input() }, l1.data());
        sd.detect_llr({ a.input(), b.input() }, l2.data());
        size_t diff = 0;
        for (size_t i = 0; i < n; ++i)
            diff += !(l1[i] == l2[i]);
        EXPECT_EQ(diff, 0u) << alg;
    }
}

TEST(gpu_slot_gather, bad_inputs_as_host_gather)
{
    QA_SKIP_WITHOUT_GPU();
    const lte_grid grid(lte_numerology::from_bandwidth(wide_mhz()), 4, 1);
    detector_config cfg;
    cfg.backend = backend_kind::cuda;
    auto det = make("fsd", 4, 4, modulation::qam16, cfg);
    slot_detection sd(grid, 4, det);
    ASSERT_TRUE(sd.device_gather());
    const int ns = 2;
    auto clean = make_slot(grid, 4, modulation::qam16, ns, 20.0, 9);
    const size_t n = sd.values_per_slot(ns);
    std::vector<uint8_t> ref(n), out(n, 9);
    ASSERT_TRUE(sd.detect_bits({ clean.input() }, ref.data())[0].empty());

    auto nan_data = clean;
    nan_data.grids[2][grid.data_elements(ns)[100]] = cf(NAN, 0.0f);
    auto why = sd.detect_bits({ nan_data.input() }, out.data());
    EXPECT_NE(why[0].find("NaN or Inf"), std::string::npos) << why[0];
    EXPECT_EQ(std::count(out.begin(), out.end(), 0), static_cast<long>(n));

    auto inf_h = clean;
    inf_h.H[17] = cf(0.0f, INFINITY);
    std::fill(out.begin(), out.end(), 9);
    why = sd.detect_bits({ inf_h.input() }, out.data());
    EXPECT_NE(why[0].find("H contains"), std::string::npos) << why[0];
    EXPECT_EQ(std::count(out.begin(), out.end(), 0), static_cast<long>(n));

    // A NaN on a CRS element is not a data element: the slot is detected as before.
    auto nan_crs = clean;
    nan_crs.grids[0][grid.crs_elements(ns, 0)[0]] = cf(0.0f, NAN);
    why = sd.detect_bits({ nan_crs.input() }, out.data());
    EXPECT_TRUE(why[0].empty()) << why[0];
    EXPECT_EQ(out, ref);

    auto zero_nv = clean;
    zero_nv.nv = 0.0f;
    why = sd.detect_bits({ zero_nv.input() }, out.data());
    EXPECT_NE(why[0].find("noise_var"), std::string::npos) << why[0];

    auto bad_ns = clean;
    bad_ns.ns = 25;
    why = sd.detect_bits({ bad_ns.input() }, out.data());
    EXPECT_NE(why[0].find("outside 0..19"), std::string::npos) << why[0];

    // The same slot once more: nothing of the refused calls stayed behind.
    ASSERT_TRUE(sd.detect_bits({ clean.input() }, out.data())[0].empty());
    EXPECT_EQ(out, ref);
}

TEST(gpu_slot_gather, psd_deadline_counts_truncated_vectors)
{
    QA_SKIP_WITHOUT_GPU();
    const lte_grid grid(lte_numerology::from_bandwidth(wide_mhz()), 4, 1);
    detector_config cfg;
    cfg.backend = backend_kind::cuda;
    cfg.psd_deadline_us = 1.0; // far too short for 4x4 64QAM at 8 dB: most vectors cut
    auto det = make("psd", 4, 4, modulation::qam64, cfg);
    slot_detection sd(grid, 4, det);
    ASSERT_TRUE(sd.device_gather());
    sd.prepare(4);
    auto a = make_slot(grid, 4, modulation::qam64, 1, 8.0, 31);
    const size_t n_vec = grid.data_elements(1).size();
    std::vector<uint8_t> out(sd.values_per_slot(1), 9);
    std::vector<size_t> truncated;
    const auto why = sd.detect_bits({ a.input() }, out.data(), &truncated);
    ASSERT_TRUE(why[0].empty()) << why[0];
    EXPECT_GT(truncated[0], n_vec / 2);
    EXPECT_LE(truncated[0], n_vec);
    for (uint8_t b : out)
        ASSERT_LE(b, 1);
}

TEST(gpu_slot_gather, cpu_backend_gathers_on_the_host)
{
    const lte_grid grid(lte_numerology::from_bandwidth(5.0), 2, 1);
    detector_config cfg;
    cfg.backend = backend_kind::cpu;
    slot_detection sd(grid, 2, make("fsd", 2, 2, modulation::qpsk, cfg));
    EXPECT_FALSE(sd.device_gather());
}
