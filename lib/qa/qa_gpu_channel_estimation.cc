/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Channel estimation on the GPU (cuda/phy/channel_estimation_cuda.cu) against the CPU
// estimator (lib/phy/channel_estimation.cc) on random slots: every bandwidth class,
// 1-4 ports, 1-8 antennas, SNR -10..50 dB and noiseless, delay spreads up to 5 us, the
// device filter cache cleared while slots run, and bad input. Also the block's backend
// parameter with a device.

#include "detect/backend.h"
#include "phy/channel_estimation.h"
#include "qa_estimation_slots.h"
#include "qa_gpu_common.h"
#include <gnuradio/mimodet/channel_estimator.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using qa::make_slots;
using qa::test_slot;

namespace {

// H of a slot whose model falls on the same filter on both sides differs by float
// rounding only (the phases' sinf / cosf, the order of the pilot sums).
constexpr double k_rounding = 1e-5;
// A slot whose model lies on the edge of a filter grid cell (spread step 26 %, SNR step
// 1.5 dB) may take the neighbouring filter on one side: H then differs by the two
// filters' difference, far below the estimation error. Such slots must stay rare.
constexpr double k_neighbour = 0.05;

void compare(double mhz,
             int n_tx,
             int n_rx,
             int cell_id,
             const std::vector<test_slot>& slots,
             double pilot_ratio_db = 0.0)
{
    const auto num = lte_numerology::from_bandwidth(mhz);
    core::channel_estimation cpu(num, n_tx, n_rx, cell_id, 4.7, 1, pilot_ratio_db);
    core::channel_estimation tables(num, n_tx, n_rx, cell_id, 4.7, 1, pilot_ratio_db);
    auto gpu = core::make_cuda_channel_estimation(tables);
    ASSERT_TRUE(gpu);
    size_t exact = 0, total = 0, neighbour = 0;
    double worst_same = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
        std::vector<const cf*> p;
        for (const auto& v : slots[i].y)
            p.push_back(v.data());
        std::vector<cf> Hc(cpu.h_size()), Hg(cpu.h_size(), cf(-7, -7));
        const float nvc = cpu.estimate(slots[i].ns, p.data(), Hc.data());
        const float nvg = gpu->estimate(slots[i].ns, p.data(), Hg.data());
        if (cpu.estimates_pilot_ratio()) // the same host code, on noise variances that
                                         // differ by float rounding
            EXPECT_NEAR(tables.last_pilot_ratio_db(), cpu.last_pilot_ratio_db(), 1e-5)
                << "slot " << i;
        if (std::isnan(nvc)) {
            EXPECT_TRUE(std::isnan(nvg)) << "slot " << i;
            EXPECT_EQ(std::memcmp(Hc.data(), Hg.data(), Hc.size() * sizeof(cf)), 0)
                << "unusable slot " << i << ": the CPU path on both";
            continue;
        }
        EXPECT_NEAR(nvg, nvc, 1e-6 * nvc) << "slot " << i;
        float scale = 0;
        for (const cf& v : Hc)
            scale = std::max(scale, std::abs(v));
        double worst = 0;
        for (size_t j = 0; j < Hc.size(); ++j) {
            ++total;
            if (std::memcmp(&Hc[j], &Hg[j], sizeof(cf)) == 0) {
                ++exact;
                continue;
            }
            ASSERT_TRUE(std::isfinite(Hg[j].real()) && std::isfinite(Hg[j].imag()))
                << "slot " << i << " element " << j;
            worst = std::max(
                worst, std::abs(std::complex<double>(Hg[j]) - std::complex<double>(Hc[j])) / scale);
        }
        if (worst <= k_rounding) {
            worst_same = std::max(worst_same, worst);
        } else {
            ++neighbour;
            EXPECT_LE(worst, k_neighbour) << "slot " << i;
        }
    }
    // At most one slot in 50 (and one in any smaller set) on a neighbouring filter.
    EXPECT_LE(neighbour, std::max<size_t>(1, slots.size() / 50));
    std::printf("%4.1f MHz %dx%d, %3zu slots: %zu of %zu H values bit-equal to the CPU, "
                "worst relative difference %.2g, %zu slots on a neighbouring filter\n",
                mhz, n_tx, n_rx, slots.size(), exact, total, worst_same, neighbour);
}

} // namespace

TEST(gpu_channel_estimation, random_slots_all_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    for (double mhz : { 1.4, 5.0 })
        for (int n_tx : { 1, 2, 4 })
            for (int n_rx : { 1, 2, 3, 4 }) {
                const auto num = lte_numerology::from_bandwidth(mhz);
                compare(mhz, n_tx, n_rx, 17,
                        make_slots(num, n_tx, n_rx, 17, 40, 0.0, 30.0, 3000.0, 11 * n_tx + n_rx));
            }
}

TEST(gpu_channel_estimation, pilot_ratio_known_and_estimated)
{
    // Boosted pilots (+6 dB) and weaker ones (-3 dB): the GPU scales H as the CPU does,
    // with the ratio known and estimated (h_scale(), computed on the host for both).
    QA_SKIP_WITHOUT_GPU();
    const auto num = lte_numerology::from_bandwidth(5.0);
    for (double db : { 6.0, -3.0 }) {
        const auto slots = make_slots(num, 2, 4, 3, 40, 0.0, 30.0, 2000.0, 31, db);
        compare(5.0, 2, 4, 3, slots, db);
        compare(5.0, 2, 4, 3, slots, std::numeric_limits<double>::quiet_NaN());
    }
    const auto slots4 = make_slots(lte_numerology::from_bandwidth(1.4), 4, 4, 5, 20, 10.0, 20.0, 1000.0, 32, 3.0);
    compare(1.4, 4, 4, 5, slots4, 3.0);
    compare(1.4, 4, 4, 5, slots4, std::numeric_limits<double>::quiet_NaN());
    // The packed (fused) paths take a known ratio only: the estimate reads host grids.
    core::channel_estimation est(num, 2, 2, 1, 4.7, 1, std::numeric_limits<double>::quiet_NaN());
    auto gpu = core::make_cuda_channel_estimation(est);
    ASSERT_TRUE(gpu);
    EXPECT_THROW(gpu->estimate_packed(1, nullptr, nullptr), std::logic_error);
    EXPECT_THROW(gpu->enqueue_packed(1, nullptr, nullptr), std::logic_error);
}

TEST(gpu_channel_estimation, every_bandwidth_and_eight_antennas)
{
    QA_SKIP_WITHOUT_GPU();
    for (double mhz : { 3.0, 10.0, 15.0, 20.0 }) {
        const auto num = lte_numerology::from_bandwidth(mhz);
        compare(mhz, 4, 4, 1, make_slots(num, 4, 4, 1, 40, 10.0, 20.0, 1000.0, 7));
    }
    const auto num10 = lte_numerology::from_bandwidth(10);
    compare(10, 2, 8, 301, make_slots(num10, 2, 8, 301, 20, 10.0, 20.0, 4000.0, 2));
    const auto num20 = lte_numerology::from_bandwidth(20);
    compare(20, 4, 8, 77, make_slots(num20, 4, 8, 77, 20, 20.0, 10.0, 500.0, 9));
}

TEST(gpu_channel_estimation, noiseless_and_filter_cache_clearing)
{
    QA_SKIP_WITHOUT_GPU();
    // SNRs over 60 dB and spreads up to 5 us: more distinct filters than either cache
    // holds (128), so both are cleared while slots run.
    const auto num = lte_numerology::from_bandwidth(1.4);
    auto slots = make_slots(num, 4, 2, 5, 300, -10.0, 60.0, 5000.0, 3);
    const auto clean =
        make_slots(num, 4, 2, 5, 4, std::numeric_limits<double>::infinity(), 0.0, 300.0, 4);
    slots.insert(slots.end(), clean.begin(), clean.end());
    compare(1.4, 4, 2, 5, slots);
}

TEST(gpu_channel_estimation, bad_input)
{
    QA_SKIP_WITHOUT_GPU();
    const auto slots = qa::bad_input_slots(5);
    const auto num = lte_numerology::from_bandwidth(3);
    compare(3, 2, 2, 9, slots);
    core::channel_estimation tables(num, 2, 2, 9, 4.7, 1);
    auto gpu = core::make_cuda_channel_estimation(tables);
    std::vector<cf> H(tables.h_size());
    const std::vector<const cf*> p = { slots[0].y[0].data(), slots[0].y[1].data() };
    EXPECT_THROW(gpu->estimate(20, p.data(), H.data()), std::invalid_argument);
}

TEST(gpu_channel_estimation, block_backend)
{
    QA_SKIP_WITHOUT_GPU();
    EXPECT_EQ(channel_estimator::make(20, 4, 4, 0, 0, "cuda")->backend(), "cuda");
    EXPECT_EQ(channel_estimator::make(20, 4, 4, 0, 0, "auto")->backend(), "cuda");
    EXPECT_EQ(channel_estimator::make(20, 4, 4, 0)->backend(), "cpu");
}
