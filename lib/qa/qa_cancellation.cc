/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Cancellation of detect calls (detector::cancel, set_cancel_poll) on the CPU backend:
// a long call ends soon after a request from another thread or from its own thread's
// poll, throws mimodet::cancelled, and leaves the detector giving exact results.

#include "qa_cancellation_common.h"
#include "util/worker_pool.h"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <gnuradio/mimodet/detector.h>
#include <thread>

using namespace gr::mimodet;
using qa::clk;
using qa::seconds_since;

namespace {

//! ML 3x3 64QAM (2^18 candidates per vector): a batch sized to take about `seconds` on
//! this machine, measured on a small one first, so the call is still running whenever
//! the test cancels it.
qa::batch long_batch(detector& d, double seconds)
{
    const auto probe = qa::make_batch(3, 3, modulation::qam64, 64, 1, 10, 10, 5);
    const auto t0 = clk::now();
    qa::run_bits(d, probe);
    const double per_vector = std::max(1e-7, seconds_since(t0) / 64);
    const int n = static_cast<int>(std::min(2e6, seconds / per_vector));
    return qa::make_batch(3, 3, modulation::qam64, std::max(n, 256), 1, 10, 10, 6);
}

//! A small batch whose bits the detector must still give exactly after a cancellation:
//! those of a fresh detector (ML: the exhaustive search itself).
void expect_still_exact(detector& d, const detector_config& cfg)
{
    const auto b = qa::make_batch(3, 3, modulation::qam64, 8, 2, 5, 15, 9);
    auto fresh = detector::make(cfg);
    const auto bits = qa::run_bits(d, b), ref = qa::run_bits(*fresh, b);
    EXPECT_EQ(bits, ref);
    EXPECT_EQ(qa::count_non_ml(b, bits, ref), 0);
}

detector_config ml_config(int threads) { return qa::long_ml_config("cpu", threads); }

} // namespace

TEST(cancellation, cancel_from_another_thread_ends_a_long_call)
{
    for (int threads : { 1, 2 }) {
        const auto cfg = ml_config(threads);
        auto det = detector::make(cfg);
        const auto b = long_batch(*det, 20.0);
        std::vector<uint8_t> out(b.bits.size());
        qa::canceller canceller(*det, 0.2);
        const auto t0 = clk::now();
        canceller.start();
        EXPECT_THROW(
            det->detect_bits(
                b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()),
            cancelled);
        const double total = seconds_since(t0);
        canceller.join();
        const double latency = seconds_since(canceller.sent());
        // A vector takes about a millisecond; 1 s leaves room for a loaded machine
        // while the whole call would have taken about 20 s.
        EXPECT_LT(latency, 1.0) << threads << " threads";
        std::printf("%d thread(s): cancelled %.1f ms after the request\n",
                    threads,
                    latency * 1e3);
        EXPECT_LT(total, 5.0) << threads << " threads";
        expect_still_exact(*det, cfg);
    }
}

TEST(cancellation, request_between_calls_cancels_the_next_call_only)
{
    const auto cfg = ml_config(1);
    auto det = detector::make(cfg);
    const auto b = qa::make_batch(3, 3, modulation::qam64, 4, 1, 10, 10, 3);
    std::vector<uint8_t> out(b.bits.size());
    det->cancel();
    EXPECT_THROW(
        det->detect_bits(
            b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()),
        cancelled);
    // Consumed by the call that threw.
    EXPECT_NO_THROW(det->detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()));
    // Withdrawn before any call.
    det->cancel();
    det->clear_cancel();
    EXPECT_NO_THROW(det->detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()));
    expect_still_exact(*det, cfg);
}

TEST(cancellation, poll_of_the_calling_thread_ends_the_call)
{
    // threads = 1: the caller polls between its own vectors; 2: also while it waits for
    // the worker's share.
    for (int threads : { 1, 2 }) {
        const auto cfg = ml_config(threads);
        auto det = detector::make(cfg);
        const auto b = long_batch(*det, 20.0);
        std::vector<float> llr(b.bits.size());
        int polls = 0;
        const std::thread::id caller = std::this_thread::get_id();
        bool other_thread = false;
        clk::time_point t0 = clk::now();
        clk::time_point t_true{};
        det->set_cancel_poll([&] {
            ++polls;
            other_thread |= std::this_thread::get_id() != caller;
            if (seconds_since(t0) < 0.2)
                return false;
            if (t_true == clk::time_point{})
                t_true = clk::now();
            return true;
        });
        t0 = clk::now();
        EXPECT_THROW(
            det->detect_llr(
                b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), llr.data()),
            cancelled);
        const double total = seconds_since(t0);
        EXPECT_LT(total, 1.2) << threads << " threads";
        const double latency = seconds_since(t_true);
        EXPECT_LT(latency, 1.0) << threads << " threads";
        std::printf(
            "%d thread(s): %d polls, call ended %.1f ms after the first true one\n",
            threads,
            polls,
            latency * 1e3);
        // Every 20 ms for 0.2 s: about 10 polls, all on the calling thread.
        EXPECT_GE(polls, 3);
        EXPECT_LE(polls, 40);
        EXPECT_FALSE(other_thread);
        det->set_cancel_poll({});
        expect_still_exact(*det, cfg);
    }
}

TEST(cancellation, every_algorithm_cancels_and_recovers)
{
    // A pending request ends a call of every algorithm before any output; the next call
    // equals a fresh detector's.
    for (const auto& alg : algorithms()) {
        detector_config cfg;
        cfg.algorithm = alg;
        cfg.n_tx = 2;
        cfg.n_rx = 2;
        cfg.mod = modulation::qam16;
        cfg.threads = 2;
        auto det = detector::make(cfg);
        auto fresh = detector::make(cfg);
        const auto b = qa::make_batch(2, 2, modulation::qam16, 300, 2, 5, 20, 4);
        std::vector<uint8_t> out(b.bits.size());
        det->cancel();
        EXPECT_THROW(
            det->detect_bits(
                b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()),
            cancelled)
            << alg;
        EXPECT_EQ(qa::run_bits(*det, b), qa::run_bits(*fresh, b)) << alg;
    }
}

TEST(worker_pool, poll_runs_on_the_caller_while_it_waits)
{
    gr::mimodet::core::worker_pool pool;
    std::atomic<int> polls{ 0 };
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> polled_elsewhere{ false };
    const std::function<void()> poll = [&] {
        ++polls;
        polled_elsewhere = polled_elsewhere || std::this_thread::get_id() != caller;
    };
    // The caller's share waits for the worker to take the other one, which then keeps
    // the caller waiting for 200 ms.
    std::atomic<bool> worker_started{ false };
    pool.run(
        2,
        [&](size_t) {
            if (std::this_thread::get_id() != caller) {
                worker_started = true;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                return;
            }
            const auto t0 = clk::now();
            while (!worker_started && seconds_since(t0) < 5.0)
                std::this_thread::yield();
        },
        &poll,
        std::chrono::milliseconds(10));
    EXPECT_GE(polls.load(), 3);
    EXPECT_FALSE(polled_elsewhere.load());
}
