/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Several GPUs of one host (ctest label "gpu"): a detector, the fused receiver and the
// mimo_receiver block on device 1 give device 0's and the CPU's results, two detectors on
// two devices run at once from two threads, and an index without a device is refused.
// The tests that need two devices skip with fewer (the program then reports itself
// skipped, as without any device).

#include "detect/algorithm_registry.h"
#include "qa_gpu_common.h"
#include "qa_slot_receiver_common.h"
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/block_config.h>
#include <gnuradio/mimodet/channel_estimator.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;

namespace {

//! The algorithms with a CUDA detector.
std::vector<std::string> cuda_algorithms()
{
    std::vector<std::string> out;
    for (const auto& a : algorithms())
        if (core::find_algorithm(a).make_cuda)
            out.push_back(a);
    return out;
}

//! A detector of n_tx x n_tx antennas on `device`.
detector_config config_on(const std::string& algorithm,
                          int n_tx,
                          modulation mod,
                          const std::string& backend,
                          int device)
{
    detector_config cfg = qa::receiver_config({ 5, n_tx, n_tx, 0, mod, algorithm, backend });
    cfg.device = device;
    return cfg;
}

//! The bits of every slot through a fused n_tx x n_tx slot_receiver (grids, or
//! time-domain slots where time_domain) whose detector runs on `device`; the noise
//! variances into nv.
std::vector<uint8_t> receive_on(int device,
                                const std::string& algorithm,
                                double mhz,
                                int n_tx,
                                int cell,
                                const std::vector<qa::test_slot>& slots,
                                bool time_domain,
                                std::vector<float>& nv)
{
    const auto num = lte_numerology::from_bandwidth(mhz);
    const lte_grid grid(num, n_tx, cell);
    core::slot_receiver rx(grid,
                           n_tx,
                           detector::make(config_on(
                               algorithm, n_tx, modulation::qam16, "cuda", device)),
                           1,
                           true,
                           time_domain ? std::optional<int>(-1) : std::nullopt);
    EXPECT_EQ(rx.detection().det().config().device, device);
    EXPECT_TRUE(rx.fused());
    EXPECT_EQ(rx.gpu_demodulation(), time_domain);
    std::vector<uint8_t> out;
    nv.clear();
    for (const auto& s : slots) {
        std::vector<std::vector<cf>> t;
        std::vector<const cf*> p;
        if (time_domain) {
            t = qa::modulate_slot(num, s.y);
            for (const auto& v : t)
                p.push_back(v.data());
        } else {
            for (const auto& v : s.y)
                p.push_back(v.data());
        }
        std::vector<uint8_t> bits(rx.detection().values_per_slot(s.ns));
        const auto r = time_domain ? rx.receive_time_bits(s.ns, p.data(), bits.data())
                                   : rx.receive_bits(s.ns, p.data(), bits.data());
        EXPECT_TRUE(r.why.empty())
            << "device " << device << " slot " << s.ns << ": " << r.why;
        nv.push_back(r.noise_var);
        out.insert(out.end(), bits.begin(), bits.end());
    }
    return out;
}

} // namespace

TEST(gpu_multi_device, detector_on_device_1_gives_the_cpus_bits)
{
    QA_SKIP_WITHOUT_GPUS(2);
    for (const auto& alg : cuda_algorithms()) {
        for (const int nt : { 2, 4 }) {
            SCOPED_TRACE(alg + " " + std::to_string(nt) + "x" + std::to_string(nt));
            const auto b =
                qa::make_batch(nt, nt, modulation::qam16, 3000, 7, 5.0, 30.0, 41);
            auto gpu =
                detector::make(config_on(alg, nt, modulation::qam16, "cuda", 1));
            auto cpu =
                detector::make(config_on(alg, nt, modulation::qam16, "cpu", 0));
            EXPECT_EQ(gpu->backend(), "cuda");
            EXPECT_EQ(gpu->config().device, 1);
            EXPECT_EQ(qa::run_bits(*gpu, b), qa::run_bits(*cpu, b));
        }
    }
}

TEST(gpu_multi_device, auto_on_device_1_runs_there)
{
    QA_SKIP_WITHOUT_GPUS(2);
    auto d = detector::make(config_on("mmse", 2, modulation::qpsk, "auto", 1));
    EXPECT_EQ(d->backend(), "cuda");
    EXPECT_EQ(d->config().device, 1);
}

TEST(gpu_multi_device, fused_receiver_on_device_1_equals_device_0)
{
    QA_SKIP_WITHOUT_GPUS(2);
    const double mhz = 10;
    const int nt = 2, nr = 2, cell = 7;
    const auto slots = qa::make_slots(
        lte_numerology::from_bandwidth(mhz), nt, nr, cell, 20, 22.0, 6.0, 1000.0, 31);
    for (const bool time_domain : { false, true }) {
        for (const char* alg : { "psd", "mmse" }) {
            SCOPED_TRACE(std::string(alg) + (time_domain ? " time domain" : " grids"));
            std::vector<float> nv0, nv1;
            const auto a = receive_on(0, alg, mhz, nt, cell, slots, time_domain, nv0);
            const auto b = receive_on(1, alg, mhz, nt, cell, slots, time_domain, nv1);
            ASSERT_FALSE(a.empty());
            EXPECT_EQ(a, b);
            EXPECT_EQ(nv0, nv1);
        }
    }
}

TEST(gpu_multi_device, receiver_blocks_on_devices_0_and_1_in_one_flowgraph)
{
    // Two mimo_receivers on the same time-domain streams, one per device, running at
    // once in GNU Radio's threads (whose current device is 0): both give the core's
    // fused path's bits on device 0.
    QA_SKIP_WITHOUT_GPUS(2);
    const double mhz = 5;
    const int nt = 2, nr = 2, cell = 3, n_slots = 30;
    const auto num = lte_numerology::from_bandwidth(mhz);
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 25.0, 0.0, 1000.0, 18);
    std::vector<float> nv;
    const auto expect = receive_on(0, "psd", mhz, nt, cell, slots, true, nv);
    const auto in = qa::time_domain_input(num, slots);
    auto tb = gr::make_top_block("qa_gpu_multi_device");
    std::vector<gr::basic_block_sptr> srcs;
    for (int r = 0; r < nr; ++r) {
        auto src = gr::blocks::vector_source_c::make(
            in.samples[r], false, 1, r == 0 ? in.tags : std::vector<gr::tag_t>());
        src->set_min_output_buffer(8L * num.slot_samples());
        srcs.push_back(src);
    }
    std::vector<mimo_receiver::sptr> blks;
    std::vector<gr::blocks::vector_sink_b::sptr> sinks;
    for (const int device : { 0, 1 }) {
        detector_config cfg = block_detector_config("psd", nt, nr, "16qam", "cuda");
        cfg.device = device;
        blks.push_back(mimo_receiver::make(cfg, mhz, cell, false, 0, true, -1, 0.0, 0.0));
        EXPECT_EQ(blks.back()->backend(), "cuda");
        sinks.push_back(gr::blocks::vector_sink_b::make());
        for (int r = 0; r < nr; ++r)
            tb->connect(srcs[r], 0, blks.back(), r);
        tb->connect(blks.back(), 0, sinks.back(), 0);
    }
    tb->run();
    for (int device : { 0, 1 }) {
        EXPECT_EQ(sinks[device]->data(), expect) << "device " << device;
        EXPECT_EQ(blks[device]->slots_processed(), static_cast<uint64_t>(n_slots));
        EXPECT_EQ(blks[device]->bad_slots(), 0u);
    }
}

TEST(gpu_multi_device, two_devices_from_two_threads_give_the_cpus_bits)
{
    QA_SKIP_WITHOUT_GPUS(2);
    for (const char* alg : { "psd", "sfsd" }) {
        SCOPED_TRACE(alg);
        const auto b0 = qa::make_batch(4, 4, modulation::qam16, 4000, 7, 5.0, 30.0, 51);
        const auto b1 = qa::make_batch(4, 4, modulation::qam16, 4000, 7, 5.0, 30.0, 52);
        auto cpu = detector::make(config_on(alg, 4, modulation::qam16, "cpu", 0));
        const auto want0 = qa::run_bits(*cpu, b0), want1 = qa::run_bits(*cpu, b1);
        auto d0 = detector::make(config_on(alg, 4, modulation::qam16, "cuda", 0));
        auto d1 = detector::make(config_on(alg, 4, modulation::qam16, "cuda", 1));
        constexpr int k_rounds = 20;
        int bad[2] = { 0, 0 };
        std::string error[2];
        auto loop = [&](int i,
                        detector& d,
                        const qa::batch& b,
                        const std::vector<uint8_t>& want) {
            try {
                for (int k = 0; k < k_rounds; ++k)
                    bad[i] += qa::run_bits(d, b) != want;
            } catch (const std::exception& e) {
                error[i] = e.what();
            }
        };
        std::thread t0(loop, 0, std::ref(*d0), std::cref(b0), std::cref(want0));
        std::thread t1(loop, 1, std::ref(*d1), std::cref(b1), std::cref(want1));
        t0.join();
        t1.join();
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(error[i], "") << "device " << i;
            EXPECT_EQ(bad[i], 0)
                << "device " << i << ": rounds with bits other than the CPU's";
        }
        // Destroyed from this thread, whose current device is 0, in either order.
        d1.reset();
        d0.reset();
    }
}

TEST(gpu_multi_device, an_index_without_a_device_is_refused)
{
    QA_SKIP_WITHOUT_GPU();
    const int n = cuda_device_count();
    const std::string index = "CUDA device " + std::to_string(n) + " does not exist";
    const std::string present = std::to_string(n) + " device";
    try {
        detector::make(config_on("mmse", 2, modulation::qpsk, "cuda", n));
        ADD_FAILURE() << "backend cuda on device " << n << " was made";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(index), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(present), std::string::npos) << e.what();
    }
    // auto takes the CPU, as without a device.
    auto d = detector::make(config_on("mmse", 2, modulation::qpsk, "auto", n));
    EXPECT_EQ(d->backend(), "cpu");
    // The blocks: the detector's rule, and the estimator's own.
    EXPECT_THROW(
        {
            detector_config cfg = block_detector_config("mmse", 2, 2, "qpsk", "cuda");
            cfg.device = n;
            mimo_receiver::make(cfg, 5, 0);
        },
        std::runtime_error);
    try {
        channel_estimator::make(5, 2, 2, 0, 0, "cuda", 0.0, n);
        ADD_FAILURE() << "channel_estimator with backend cuda on device " << n
                      << " was made";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(index), std::string::npos) << e.what();
    }
    EXPECT_EQ(channel_estimator::make(5, 2, 2, 0, 0, "auto", 0.0, n)->backend(), "cpu");
    EXPECT_EQ(channel_estimator::make(5, 2, 2, 0, 0, "cuda", 0.0, n - 1)->backend(),
              "cuda");
}
