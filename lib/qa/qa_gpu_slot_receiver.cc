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
// Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the 5 and 20 MHz cells are 1.4 MHz
// ones and there are fewer slots (the same kernels; the filter cache is still overrun).

#include "qa_gpu_common.h"
#include "qa_slot_receiver_common.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gnuradio/blocks/vector_sink.h>
#include <gnuradio/blocks/vector_source.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gnuradio/mimodet/mimo_receiver.h>
#include <gnuradio/top_block.h>
#include <gtest/gtest.h>
#include <limits>
#include <thread>
#include <unistd.h>

using namespace gr::mimodet;
using qa::compare_with_chain;

namespace {

/*!
 * A block's calls, from its call timeline: MIMODET_CALL_TIMELINE is set while the block
 * is made (on), and the block writes DIR/tl_<kind>_<n>.csv when it is destroyed.
 */
class call_timelines
{
public:
    call_timelines()
        : d_dir(std::filesystem::temp_directory_path() /
                ("qa_gpu_slot_receiver_tl_" + std::to_string(::getpid())))
    {
        std::filesystem::remove_all(d_dir);
        std::filesystem::create_directories(d_dir);
        ::setenv("MIMODET_CALL_TIMELINE", (d_dir / "tl").c_str(), 1);
    }
    ~call_timelines()
    {
        off();
        std::filesystem::remove_all(d_dir);
    }
    call_timelines(const call_timelines&) = delete;
    call_timelines& operator=(const call_timelines&) = delete;

    void off() { ::unsetenv("MIMODET_CALL_TIMELINE"); }

    //! The most slots one call took (the receiver: started, one per idle lane), over the
    //! files of `kind` (the column "slots", the last one); -1 where there is no such
    //! file.
    int max_slots_per_call(const std::string& kind) const
    {
        int most = -1;
        for (const auto& f : std::filesystem::directory_iterator(d_dir)) {
            if (f.path().filename().string().rfind("tl_" + kind + "_", 0) != 0)
                continue;
            std::ifstream in(f.path());
            std::string line;
            std::getline(in, line); // the header
            most = std::max(most, 0);
            while (std::getline(in, line))
                most = std::max(most, std::stoi(line.substr(line.rfind(',') + 1)));
        }
        return most;
    }

private:
    std::filesystem::path d_dir;
};

//! Each slot's bits from the core's fused path (rx), slot by slot: a block's reference.
std::vector<std::vector<uint8_t>> core_bits(core::slot_receiver& rx,
                                            const std::vector<qa::test_slot>& slots)
{
    std::vector<std::vector<uint8_t>> bits;
    for (const auto& s : slots) {
        std::vector<const std::complex<float>*> p;
        for (const auto& v : s.y)
            p.push_back(v.data());
        bits.emplace_back(rx.detection().values_per_slot(s.ns));
        const auto res = rx.receive_bits(s.ns, p.data(), bits.back().data());
        EXPECT_TRUE(res.why.empty()) << res.why;
    }
    return bits;
}

//! The slots' grids into blk's inputs, one vector source per receive antenna, with the
//! "slot" tags on antenna 0; repeat: the sources loop over them.
void connect_grid_sources(const gr::top_block_sptr& tb,
                          const gr::basic_block_sptr& blk,
                          const std::vector<qa::test_slot>& slots,
                          const lte_numerology& num,
                          int nr,
                          bool repeat)
{
    const size_t grid_len = 7 * static_cast<size_t>(num.n_sc);
    std::vector<gr::tag_t> tags;
    for (size_t i = 0; i < slots.size(); ++i) {
        gr::tag_t t;
        t.offset = i;
        t.key = pmt::mp("slot");
        t.value = pmt::from_long(slots[i].ns);
        tags.push_back(t);
    }
    for (int r = 0; r < nr; ++r) {
        std::vector<std::complex<float>> data;
        for (const auto& s : slots)
            data.insert(data.end(), s.y[r].begin(), s.y[r].end());
        auto src = gr::blocks::vector_source_c::make(
            data, repeat, grid_len, r == 0 ? tags : std::vector<gr::tag_t>());
        tb->connect(src, 0, blk, r);
    }
}

} // namespace

TEST(gpu_slot_receiver, every_algorithm_matches_the_chain_20mhz_4x4)
{
    QA_SKIP_WITHOUT_GPU();
    const double mhz = qa::sanitizer_size(20.0, 1.4);
    const auto slots = qa::make_slots(
        lte_numerology::from_bandwidth(mhz), 4, 4, 1, 5, 20.0, 8.0, 1200.0, 31);
    for (const char* alg : { "zf", "mmse", "psd", "fsd", "sfsd", "mtt" }) {
        const auto n =
            compare_with_chain({ mhz, 4, 4, 1, modulation::qam64, alg, "cuda" }, slots);
        EXPECT_EQ(n.bad, 0u) << alg;
    }
    for (const char* alg : { "mmse", "sfsd", "mtt" })
        compare_with_chain({ mhz, 4, 4, 1, modulation::qam64, alg, "cuda", true }, slots);
}

TEST(gpu_slot_receiver, small_sizes_match_the_chain)
{
    QA_SKIP_WITHOUT_GPU();
    const int sizes[][2] = { { 2, 2 }, { 2, 4 }, { 1, 2 } };
    for (const auto& s : sizes) {
        const int n = qa::sanitizer_size(20, 4);
        const auto slots = qa::make_slots(
            lte_numerology::from_bandwidth(1.4), s[0], s[1], 5, n, 0.0, 30.0, 2000.0, 40 + s[1]);
        for (const char* alg : { "zf", "fsd", "sfsd", "psd" })
            compare_with_chain({ 1.4, s[0], s[1], 5, modulation::qam16, alg, "cuda" }, slots);
    }
}

TEST(gpu_slot_receiver, pilot_ratio_known_fused_and_estimated)
{
    // +3 dB pilots: with the ratio known the fused path scales H on the device as the
    // chain does; estimated, the receiver takes the host's grids (not fused) and still
    // matches the chain.
    QA_SKIP_WITHOUT_GPU();
    const double mhz = qa::sanitizer_size(5.0, 1.4);
    const int n_slots = qa::sanitizer_size(20, 4);
    const auto slots = qa::make_slots(
        lte_numerology::from_bandwidth(mhz), 2, 4, 5, n_slots, 10.0, 20.0, 1000.0, 51, 3.0);
    for (double db : { 3.0, std::numeric_limits<double>::quiet_NaN() })
        for (const char* alg : { "mmse", "fsd" }) {
            qa::receiver_case c{ mhz, 2, 4, 5, modulation::qam64, alg, "cuda" };
            c.pilot_ratio_db = db;
            const auto n = compare_with_chain(c, slots);
            EXPECT_EQ(n.bad, 0u) << alg << " " << db;
        }
}

TEST(gpu_slot_receiver, filters_decided_on_the_device)
{
    // The fused path decides each slot's model on the device and runs a slot again where
    // its filter is not there yet. Each slot twice in a row: the first may run again, the
    // second finds the filter. Outputs and noise variances equal the chain's (the host's
    // decisions) either way.
    QA_SKIP_WITHOUT_GPU();
    const double mhz = qa::sanitizer_size(5.0, 1.4);
    const int n_slots = qa::sanitizer_size(12, 4);
    const auto once = qa::make_slots(
        lte_numerology::from_bandwidth(mhz), 4, 4, 3, n_slots, 0.0, 30.0, 3000.0, 51);
    std::vector<qa::test_slot> twice;
    for (const auto& s : once) {
        twice.push_back(s);
        twice.push_back(s);
    }
    const auto n =
        compare_with_chain({ mhz, 4, 4, 3, modulation::qam16, "fsd", "cuda" }, twice);
    EXPECT_EQ(n.bad, 0u);
    EXPECT_GE(n.filter_retries, 1u); // the first slot: an empty table
    EXPECT_LE(n.filter_retries, once.size());
    // More distinct filters than the cache holds (128): the table is emptied while slots
    // run. SNRs up to 60 dB, spreads up to 5 us, and noiseless slots (all of them with
    // the sanitizer sizes too: fewer slots might not overrun the cache).
    const auto num = lte_numerology::from_bandwidth(1.4);
    auto many = qa::make_slots(num, 4, 4, 5, 300, -10.0, 60.0, 5000.0, 3);
    const auto clean =
        qa::make_slots(num, 4, 4, 5, 4, std::numeric_limits<double>::infinity(), 0.0, 300.0, 4);
    many.insert(many.end(), clean.begin(), clean.end());
    const auto m = compare_with_chain({ 1.4, 4, 4, 5, modulation::qpsk, "zf", "cuda" }, many);
    EXPECT_GE(m.filter_retries, 1u);
    std::printf("filter retries: %zu of %zu slots (each twice), %zu of %zu (cache cleared)\n",
                n.filter_retries, twice.size(), m.filter_retries, many.size());
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
    const double mhz = qa::sanitizer_size(5.0, 1.4);
    const int nt = 2, nr = 2, cell = 3, n_slots = qa::sanitizer_size(40, 12);
    const auto num = lte_numerology::from_bandwidth(mhz);
    const lte_grid grid(num, nt, cell);
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 25.0, 0.0, 1000.0, 8);
    EXPECT_EQ(mimo_receiver::make(
                  block_detector_config("fsd", nt, nr, "qpsk", "auto"), mhz, cell)
                  ->backend(),
              "cuda");
    // The reference: the core's fused path, slot by slot.
    core::slot_receiver rx(
        grid, nr, detector::make(qa::receiver_config({ mhz, nt, nr, cell, modulation::qpsk, "fsd", "cuda" })), 1, true);
    std::vector<uint8_t> expect;
    for (const auto& bits : core_bits(rx, slots))
        expect.insert(expect.end(), bits.begin(), bits.end());
    // fsd's default, a call's slots detected before it returns, and its slots in flight
    // across calls (exact psd's default, MIMODET_RECEIVER_ASYNC=1): the same bits and
    // tags.
    for (const char* async : { "0", "1" }) {
        SCOPED_TRACE(std::string("MIMODET_RECEIVER_ASYNC=") + async);
        ::setenv("MIMODET_RECEIVER_ASYNC", async, 1);
        call_timelines timelines;
        auto blk = mimo_receiver::make(
            block_detector_config("fsd", nt, nr, "qpsk", "cuda"), mhz, cell);
        timelines.off();
        ::unsetenv("MIMODET_RECEIVER_ASYNC");
        EXPECT_EQ(blk->backend(), "cuda");
        auto tb = gr::make_top_block("qa_gpu_slot_receiver");
        connect_grid_sources(tb, blk, slots, num, nr, false);
        auto sink = gr::blocks::vector_sink_b::make();
        tb->connect(blk, 0, sink, 0);
        tb->run();
        EXPECT_EQ(sink->data(), expect);
        EXPECT_EQ(blk->slots_processed(), static_cast<uint64_t>(n_slots));
        EXPECT_EQ(blk->bad_slots(), 0u);
        std::vector<uint64_t> tag_items;
        for (const auto& t : sink->tags())
            if (pmt::symbol_to_string(t.key) == "slot")
                tag_items.push_back(t.offset);
        ASSERT_EQ(tag_items.size(), static_cast<size_t>(n_slots));
        uint64_t at = 0;
        for (int i = 0; i < n_slots; ++i) {
            EXPECT_EQ(tag_items[i], at) << "slot " << i;
            at += rx.detection().values_per_slot(slots[i].ns);
        }
        // The slots were queued: the block's two lanes took (or started) two of them in
        // one call (its output buffer must hold twice that, as GNU Radio hands out at
        // most half of it).
        tb.reset();
        blk.reset();
        EXPECT_EQ(timelines.max_slots_per_call("receiver"), 2);
    }
}

TEST(gpu_slot_receiver, exact_psd_stopped_with_slots_in_flight)
{
    // Exact psd keeps its slots in flight across calls. A repeating stream stopped while
    // they run: stop() and wait() return soon, and what reached the sink is a whole
    // number of slots, in order, each with the bits the core gives it.
    QA_SKIP_WITHOUT_GPU();
    const double mhz = qa::sanitizer_size(5.0, 1.4);
    const int nt = 4, nr = 4, cell = 9, n_slots = 6;
    const auto num = lte_numerology::from_bandwidth(mhz);
    const lte_grid grid(num, nt, cell);
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 12.0, 0.0, 1000.0, 31);
    core::slot_receiver rx(grid,
                           nr,
                           detector::make(qa::receiver_config(
                               { mhz, nt, nr, cell, modulation::qam64, "psd", "cuda" })),
                           1,
                           true);
    const auto expect = core_bits(rx, slots);
    auto blk = mimo_receiver::make(block_detector_config("psd", nt, nr, "64qam", "cuda"),
                                   mhz,
                                   cell,
                                   false,
                                   0,
                                   false,
                                   -1,
                                   0.0,
                                   0.0);
    auto tb = gr::make_top_block("qa_gpu_slot_receiver_stop");
    connect_grid_sources(tb, blk, slots, num, nr, true);
    auto sink = gr::blocks::vector_sink_b::make();
    tb->connect(blk, 0, sink, 0);
    tb->start();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto t0 = std::chrono::steady_clock::now();
    tb->stop();
    tb->wait();
    const double stop_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(stop_s, 2.0);
    const uint64_t done = blk->slots_processed();
    EXPECT_GT(done, 0u);
    // The sink holds the slots the block put out, but for the last few where the stop
    // came before the sink's thread took them.
    const auto got = sink->data();
    std::vector<uint8_t> want;
    uint64_t out = 0;
    while (want.size() < got.size() && out < done) {
        want.insert(
            want.end(), expect[out % n_slots].begin(), expect[out % n_slots].end());
        ++out;
    }
    ASSERT_EQ(got.size(), want.size()) << out << " of " << done << " slots";
    EXPECT_TRUE(got == want) << out << " of " << done << " slots";
    EXPECT_GT(out, 0u);
    EXPECT_EQ(blk->bad_slots(), 0u);
    EXPECT_EQ(blk->truncated_slots(), 0u);
    std::printf("%llu slots out, %llu at the sink, stop() + wait() %.1f ms\n",
                static_cast<unsigned long long>(done),
                static_cast<unsigned long long>(out),
                stop_s * 1e3);
}

TEST(gpu_slot_receiver, gpu_ofdm_demodulation_matches_the_cpu)
{
    // cuFFT's grids against ofdm_demodulation's (FFTW), to float rounding.
    QA_SKIP_WITHOUT_GPU();
    using cf = std::complex<float>;
    for (double mhz : { 1.4, 5.0, 20.0 }) {
        const auto num = lte_numerology::from_bandwidth(mhz);
        const int nr = 4;
        const auto slots = qa::make_slots(num, 2, nr, 1, 2, 20.0, 0.0, 1000.0, 77);
        for (int backoff : { -1, 0 }) {
            const core::ofdm_demodulation dem(num, backoff, true, "test");
            auto gpu = core::make_cuda_ofdm_demodulation(dem, nr);
            ASSERT_NE(gpu, nullptr);
            auto fft = dem.make_fft();
            for (const auto& s : slots) {
                const auto t = qa::modulate_slot(num, s.y);
                std::vector<std::vector<cf>> a(nr, std::vector<cf>(dem.grid_len())), b = a;
                std::vector<const cf*> tp;
                std::vector<cf*> ap;
                for (int r = 0; r < nr; ++r) {
                    tp.push_back(t[r].data());
                    ap.push_back(a[r].data());
                    dem.demodulate(*fft, t[r].data(), b[r].data());
                }
                ASSERT_TRUE(gpu->demodulate(tp.data(), ap.data()));
                for (int r = 0; r < nr; ++r) {
                    double err = 0, pow = 0;
                    for (size_t i = 0; i < a[r].size(); ++i) {
                        err = std::max(err, static_cast<double>(std::abs(a[r][i] - b[r][i])));
                        pow += std::norm(b[r][i]);
                    }
                    EXPECT_LT(err, 1e-5 * std::sqrt(pow / a[r].size()))
                        << mhz << " MHz, back-off " << backoff << ", antenna " << r;
                }
            }
            // A NaN anywhere in the samples: refused, for the CPU to decide.
            auto t = qa::modulate_slot(num, slots[0].y);
            t[3][17] = cf(NAN, 0);
            std::vector<const cf*> tp;
            std::vector<std::vector<cf>> a(nr, std::vector<cf>(dem.grid_len()));
            std::vector<cf*> ap;
            for (int r = 0; r < nr; ++r) {
                tp.push_back(t[r].data());
                ap.push_back(a[r].data());
            }
            EXPECT_FALSE(gpu->demodulate(tp.data(), ap.data()));
        }
    }
}

TEST(gpu_slot_receiver, time_domain_input_matches_the_grid_path_20mhz_4x4)
{
    // Fused with time-domain input (the samples demodulated on the GPU) against the grid
    // path on the CPU's grids: the FFTs round differently, so a decision on a boundary
    // may differ; at most 1 value in 1000 may.
    QA_SKIP_WITHOUT_GPU();
    const double mhz = qa::sanitizer_size(20.0, 1.4);
    const auto slots = qa::make_slots(
        lte_numerology::from_bandwidth(mhz), 4, 4, 1, 4, 20.0, 8.0, 1200.0, 33);
    for (const char* alg : { "zf", "mmse", "psd", "fsd", "sfsd", "mtt" }) {
        const auto n = qa::compare_time_with_grids(
            { mhz, 4, 4, 1, modulation::qam64, alg, "cuda" }, slots);
        EXPECT_EQ(n.bad, 0u) << alg;
        EXPECT_LE(n.differing * 1000, n.values) << alg << ": " << n.differing << " of " << n.values;
        std::printf("%s bits: %zu of %zu differ\n", alg, n.differing, n.values);
    }
    for (const char* alg : { "mmse", "sfsd", "mtt" }) {
        const auto n = qa::compare_time_with_grids(
            { mhz, 4, 4, 1, modulation::qam64, alg, "cuda", true }, slots);
        EXPECT_LE(n.differing * 1000, n.values) << alg << ": " << n.differing << " of " << n.values;
        std::printf("%s LLRs: %zu of %zu differ by more than 1e-3\n", alg, n.differing, n.values);
    }
}

TEST(gpu_slot_receiver, time_domain_bad_samples_take_the_cpu_path)
{
    // A NaN in a CP (outside every FFT window): the GPU refuses the samples, the CPU
    // demodulates them and the slot is detected as the grid path does it. A NaN in a
    // window: a bad slot with zero output.
    QA_SKIP_WITHOUT_GPU();
    using cf = std::complex<float>;
    const auto num = lte_numerology::from_bandwidth(3);
    const lte_grid grid(num, 2, 9);
    const qa::receiver_case c{ 3, 2, 2, 9, modulation::qpsk, "fsd", "cuda" };
    core::slot_receiver rx(grid, 2, detector::make(qa::receiver_config(c)), 1, true, -1);
    core::slot_receiver ref(grid, 2, detector::make(qa::receiver_config(c)), 1, true);
    ASSERT_TRUE(rx.gpu_demodulation());
    const auto& dem = *rx.demodulation();
    auto fft = dem.make_fft();
    const auto slots = qa::make_slots(num, 2, 2, 9, 2, 25.0, 0.0, 1000.0, 12);
    for (int where : { 1, num.cp_first + 40 }) { // CP of symbol 0; inside its window
        auto t = qa::modulate_slot(num, slots[1].y);
        t[1][where] = cf(NAN, 0);
        std::vector<std::vector<cf>> g(2, std::vector<cf>(dem.grid_len()));
        std::vector<const cf*> tp, gp;
        for (int r = 0; r < 2; ++r) {
            dem.demodulate(*fft, t[r].data(), g[r].data());
            tp.push_back(t[r].data());
            gp.push_back(g[r].data());
        }
        const size_t n = rx.detection().values_per_slot(slots[1].ns);
        std::vector<uint8_t> a(n, 7), b(n, 9);
        const auto ra = rx.receive_time_bits(slots[1].ns, tp.data(), a.data());
        const auto rb = ref.receive_bits(slots[1].ns, gp.data(), b.data());
        EXPECT_EQ(a, b) << "NaN at sample " << where;
        EXPECT_EQ(ra.why, rb.why) << "NaN at sample " << where;
        EXPECT_EQ(ra.why.empty(), where == 1) << ra.why;
    }
}

TEST(gpu_slot_receiver, time_domain_block_in_a_flowgraph)
{
    QA_SKIP_WITHOUT_GPU();
    using cf = std::complex<float>;
    const double mhz = qa::sanitizer_size(5.0, 1.4);
    const int nt = 2, nr = 2, cell = 3, n_slots = qa::sanitizer_size(30, 10);
    const auto num = lte_numerology::from_bandwidth(mhz);
    const lte_grid grid(num, nt, cell);
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 25.0, 0.0, 1000.0, 18);
    // The reference: the core's fused time-domain path, slot by slot.
    core::slot_receiver rx(
        grid, nr, detector::make(qa::receiver_config({ mhz, nt, nr, cell, modulation::qam16, "psd", "cuda" })), 1, true, -1);
    ASSERT_TRUE(rx.gpu_demodulation());
    std::vector<uint8_t> expect;
    std::vector<std::vector<cf>> samples(nr);
    std::vector<gr::tag_t> tags;
    for (int i = 0; i < n_slots; ++i) {
        const auto t = qa::modulate_slot(num, slots[i].y);
        std::vector<const cf*> p;
        for (int r = 0; r < nr; ++r) {
            p.push_back(t[r].data());
            samples[r].insert(samples[r].end(), t[r].begin(), t[r].end());
        }
        std::vector<uint8_t> bits(rx.detection().values_per_slot(slots[i].ns));
        ASSERT_TRUE(rx.receive_time_bits(slots[i].ns, p.data(), bits.data()).why.empty());
        expect.insert(expect.end(), bits.begin(), bits.end());
        gr::tag_t tag;
        tag.offset = static_cast<uint64_t>(i) * num.slot_samples();
        tag.key = pmt::mp("slot");
        tag.value = pmt::from_long(slots[i].ns);
        tags.push_back(tag);
    }
    // psd without a deadline (and no stall bound), and with one so long that no search is
    // cut short (1 s a call; 10 s under the sanitizers' slowdown): the same bits either
    // way; four lanes for the exact search, two with the deadline (receiver_gpu_lanes:
    // queued slots started four or two in one call).
    for (const double deadline_us : { 0.0, qa::sanitizer_size(1e6, 1e7) }) {
    SCOPED_TRACE("deadline_us " + std::to_string(deadline_us));
    call_timelines timelines;
    detector_config cfg = block_detector_config("psd", nt, nr, "16qam", "cuda");
    cfg.psd_deadline_us = deadline_us;
    auto blk = mimo_receiver::make(cfg, mhz, cell, false, 0, true, -1, 0.0, 0.0);
    timelines.off();
    EXPECT_TRUE(blk->time_domain());
    auto tb = gr::make_top_block("qa_gpu_slot_receiver_time");
    for (int r = 0; r < nr; ++r) {
        auto src = gr::blocks::vector_source_c::make(samples[r], false, 1,
                                                     r == 0 ? tags : std::vector<gr::tag_t>());
        // Room for several queued slots (GNU Radio's default buffer is two 5 MHz slots).
        src->set_min_output_buffer(8L * num.slot_samples());
        tb->connect(src, 0, blk, r);
    }
    auto sink = gr::blocks::vector_sink_b::make();
    tb->connect(blk, 0, sink, 0);
    tb->run();
    EXPECT_EQ(sink->data(), expect);
    EXPECT_EQ(blk->slots_processed(), static_cast<uint64_t>(n_slots));
    EXPECT_EQ(blk->bad_slots(), 0u);
    EXPECT_EQ(blk->untagged_slots(), 0u);
    EXPECT_EQ(blk->truncated_slots(), 0u);
    tb.reset();
    blk.reset();
    EXPECT_EQ(timelines.max_slots_per_call("receiver"), deadline_us > 0.0 ? 2 : 4);
    }
}

TEST(gpu_slot_receiver, time_domain_registered_input_memory)
{
    // Slots uploaded straight from registered (page-locked in place) memory, as the block
    // does with its input buffers, against the same slots copied first: equal outputs and
    // noise variances; NaN samples found by the device check take the paths the host
    // check gives them (a NaN in a CP: the CPU's demodulation and the grid path; in a
    // window: a bad slot).
    QA_SKIP_WITHOUT_GPU();
    using cf = std::complex<float>;
    const auto num = lte_numerology::from_bandwidth(5);
    const int nt = 2, nr = 2, cell = 4, n_slots = 6;
    const lte_grid grid(num, nt, cell);
    const qa::receiver_case c{ 5, nt, nr, cell, modulation::qam16, "sfsd", "cuda" };
    core::slot_receiver direct(grid, nr, detector::make(qa::receiver_config(c)), 1, true, -1);
    core::slot_receiver copied(grid, nr, detector::make(qa::receiver_config(c)), 1, true, -1);
    ASSERT_TRUE(direct.gpu_demodulation());
    const auto slots = qa::make_slots(num, nt, nr, cell, n_slots, 22.0, 0.0, 1000.0, 61);
    const size_t S = num.slot_samples();
    std::vector<std::vector<cf>> buf(nr);
    for (const auto& s : slots) {
        const auto t = qa::modulate_slot(num, s.y);
        for (int r = 0; r < nr; ++r)
            buf[r].insert(buf[r].end(), t[r].begin(), t[r].end());
    }
    buf[0][2 * S + 1] = cf(NAN, 0);                 // slot 2: in symbol 0's CP
    buf[1][4 * S + num.cp_first + 100] = cf(0, NAN); // slot 4: in symbol 0's window
    for (int r = 0; r < nr; ++r)
        ASSERT_TRUE(direct.register_input_memory(buf[r].data(), buf[r].size() * sizeof(cf)));
    EXPECT_FALSE(copied.register_input_memory(nullptr, 0));
    size_t bad = 0;
    for (int i = 0; i < n_slots; ++i) {
        std::vector<const cf*> p;
        for (int r = 0; r < nr; ++r)
            p.push_back(buf[r].data() + i * S);
        const size_t n = direct.detection().values_per_slot(slots[i].ns);
        std::vector<uint8_t> a(n, 7), b(n, 9);
        const auto ra = direct.receive_time_bits(slots[i].ns, p.data(), a.data());
        const auto rb = copied.receive_time_bits(slots[i].ns, p.data(), b.data());
        EXPECT_EQ(a, b) << "slot " << i;
        EXPECT_EQ(ra.why, rb.why) << "slot " << i;
        if (ra.why.empty())
            EXPECT_EQ(ra.noise_var, rb.noise_var) << "slot " << i;
        bad += !ra.why.empty();
    }
    EXPECT_EQ(bad, 1u); // slot 4
    // The same memory again, by another receiver: usable, owned by the first.
    core::slot_receiver again(grid, nr, detector::make(qa::receiver_config(c)), 1, true, -1);
    EXPECT_TRUE(again.register_input_memory(buf[0].data(), buf[0].size() * sizeof(cf)));
    again.unregister_input_memory();
    direct.unregister_input_memory();
}
