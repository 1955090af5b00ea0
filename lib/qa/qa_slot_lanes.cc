/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The blocks' lane scheduler (lib/slot_lanes.h) with the CPU backend (one lane): lanes
// made for a cell from the block's configuration, a call's slots in one part, a part's
// failure handed back with its slots, a cancelled part reported as a stop, and cancel()
// reaching the lanes' detectors. The GPU's further lanes and their split of a call are
// covered by qa_gpu_mimo_detector and qa_gpu_slot_receiver.

#include "../slot_lanes.h"
#include "../util/lane_threads.h"
#include <atomic>
#include <chrono>
#include <complex>
#include <condition_variable>
#include <gnuradio/mimodet/block_config.h>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace gr::mimodet;

namespace {

struct fake_lane {
    int cell;
    detector::sptr det;
};

struct lanes_fixture {
    int made = 0;
    slot_lanes<fake_lane> lanes;
    lanes_fixture()
        : lanes(block_detector_config("mmse", 2, 2, "qpsk", "cpu"),
                lte_numerology::from_bandwidth(1.4),
                4,
                [this](const lte_grid& grid, detector::sptr det) {
                    ++made;
                    return std::unique_ptr<fake_lane>(
                        new fake_lane{ grid.cell_id(), std::move(det) });
                })
    {
    }
};

using part = std::tuple<size_t, size_t, size_t>;

} // namespace

TEST(slot_lanes, made_for_a_cell)
{
    lanes_fixture f;
    EXPECT_EQ(f.lanes.cell(), -1);
    f.lanes.make(7);
    EXPECT_EQ(f.lanes.cell(), 7);
    EXPECT_EQ(f.lanes.backend(), "cpu");
    ASSERT_EQ(f.lanes.size(), 1u); // the CPU backend: one lane, whatever max_gpu_lanes
    EXPECT_EQ(f.lanes[0].cell, 7);
    EXPECT_EQ(f.lanes[0].det->config().algorithm, "mmse");
    EXPECT_EQ(f.lanes[0].det->config().mod, modulation::qpsk);
    f.lanes.make(8); // another cell: new lanes
    EXPECT_EQ(f.made, 2);
    EXPECT_EQ(f.lanes[0].cell, 8);
}

TEST(slot_lanes, run_parts_failures_and_stops)
{
    lanes_fixture f;
    f.lanes.make(0);
    std::vector<part> parts, failed;
    std::vector<std::string> what;
    const auto on_failed = [&](size_t l, size_t b, size_t e, const std::string& w) {
        failed.emplace_back(l, b, e);
        what.push_back(w);
    };
    EXPECT_TRUE(f.lanes.run(
        5,
        [&](size_t l, size_t b, size_t e) { parts.emplace_back(l, b, e); },
        on_failed));
    EXPECT_EQ(parts, (std::vector<part>{ { 0, 0, 5 } }));
    EXPECT_TRUE(failed.empty());

    parts.clear();
    EXPECT_TRUE(f.lanes.run(
        0,
        [&](size_t l, size_t b, size_t e) { parts.emplace_back(l, b, e); },
        on_failed));
    EXPECT_TRUE(parts.empty());

    // A failing part: its slots go to failed with the message; the call is not a stop.
    EXPECT_TRUE(f.lanes.run(
        3,
        [](size_t, size_t, size_t) { throw std::runtime_error("no memory"); },
        on_failed));
    EXPECT_EQ(failed, (std::vector<part>{ { 0, 0, 3 } }));
    EXPECT_EQ(what, (std::vector<std::string>{ "no memory" }));

    // A cancelled part: the flowgraph is stopping, the call is to be abandoned.
    failed.clear();
    EXPECT_FALSE(f.lanes.run(
        2, [](size_t, size_t, size_t) { throw cancelled("stop"); }, on_failed));
    EXPECT_TRUE(failed.empty());
}

TEST(slot_lanes, cancel_reaches_the_detectors)
{
    lanes_fixture f;
    f.lanes.make(0);
    const std::vector<std::complex<float>> H{ 1, 0, 0, 1 }, y{ { 1, 1 }, { -1, -1 } };
    const float nv = 0.1f;
    std::vector<uint8_t> bits(4);
    detector& det = *f.lanes[0].det;
    EXPECT_FALSE(f.lanes.interrupted()); // not a scheduler thread asked to stop
    f.lanes.cancel(true);
    EXPECT_THROW(det.detect_bits(H.data(), y.data(), 1, 1, &nv, bits.data()), cancelled);
    f.lanes.cancel(true);
    f.lanes.cancel(false); // withdrawn before a call consumed it
    det.detect_bits(H.data(), y.data(), 1, 1, &nv, bits.data());
    // y = (1+j, -1-j) with H = I: QPSK bits (0, 0) on antenna 0, (1, 1) on antenna 1.
    EXPECT_EQ(bits, (std::vector<uint8_t>{ 0, 0, 1, 1 }));
}

// The lane threads of a block whose slots stay in flight across calls
// (lib/util/lane_threads.h): jobs run on their lanes at once, each lane one job at a
// time; finishes() counts returned jobs and wait_finish() wakes on the next; on_finish
// runs after each; wait_all() waits for running jobs; a throwing job still returns.
TEST(lane_threads, jobs_in_flight_and_their_wake_ups)
{
    core::lane_threads lanes(3);
    ASSERT_EQ(lanes.size(), 3u);
    std::atomic<int> woken{ 0 };
    lanes.set_on_finish([&] { ++woken; });
    std::mutex gate_mutex;
    std::condition_variable gate;
    bool open = false;
    std::atomic<int> ran{ 0 };
    const auto held_job = [&] {
        std::unique_lock<std::mutex> lk(gate_mutex);
        gate.wait(lk, [&] { return open; });
        ++ran;
    };
    const uint64_t seen = lanes.finishes();
    EXPECT_EQ(seen, 0u);
    for (size_t l = 0; l < 3; ++l) {
        EXPECT_EQ(lanes.idle_lane(), l);
        lanes.post(lanes.idle_lane(), held_job);
    }
    // All three run at once (each waits at the gate): no lane is idle, none returned.
    EXPECT_EQ(lanes.idle_lane(), 3u);
    EXPECT_THROW(lanes.post(1, [] {}), std::logic_error);
    EXPECT_FALSE(lanes.wait_finish(seen, std::chrono::milliseconds(30)));
    {
        std::lock_guard<std::mutex> lk(gate_mutex);
        open = true;
    }
    gate.notify_all();
    EXPECT_TRUE(lanes.wait_finish(seen, std::chrono::seconds(10)));
    lanes.wait_all();
    EXPECT_EQ(ran.load(), 3);
    EXPECT_EQ(lanes.finishes(), 3u);
    EXPECT_EQ(woken.load(), 3);
    EXPECT_EQ(lanes.idle_lane(), 0u);
    // A job that throws is counted as returned, and its lane takes the next.
    lanes.post(2, [] { throw std::runtime_error("job failed"); });
    lanes.wait_all();
    EXPECT_EQ(lanes.finishes(), 4u);
    lanes.post(2, [&] { ++ran; });
    lanes.wait_all();
    EXPECT_EQ(ran.load(), 4);
    EXPECT_EQ(woken.load(), 5);
    lanes.set_on_finish(nullptr);
    lanes.post(0, [&] { ++ran; });
    lanes.wait_all();
    EXPECT_EQ(woken.load(), 5);
}

TEST(lane_threads, destruction_waits_for_running_jobs)
{
    std::atomic<bool> finished{ false };
    {
        core::lane_threads lanes(2);
        lanes.post(1, [&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            finished = true;
        });
    }
    EXPECT_TRUE(finished.load());
}
