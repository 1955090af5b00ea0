/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Cancellation on the CUDA backend: a large batch (many chunks) cancelled from another
// thread ends after the chunks already on the GPU, throws mimodet::cancelled, and the
// detector then still gives the CPU's results.

#include "qa_cancellation_common.h"
#include "qa_gpu_common.h"
#include <atomic>
#include <chrono>
#include <gnuradio/mimodet/detector.h>
#include <thread>

using namespace gr::mimodet;
using qa::clk;
using qa::long_ml_config;
using qa::seconds_since;

TEST(gpu_cancellation, cancel_from_another_thread_ends_a_large_batch)
{
    QA_SKIP_WITHOUT_GPU();
    auto det = detector::make(long_ml_config("cuda"));
    // A call of one stream's share of a large call (2^16 vectors) timed first: the batch
    // is sized for about 10 s.
    const auto probe = qa::make_batch(3, 3, modulation::qam64, 1 << 16, 1, 10, 10, 1);
    qa::run_bits(*det, probe); // warm-up (buffers, kernels)
    const auto t_probe = clk::now();
    qa::run_bits(*det, probe);
    const double per_chunk = seconds_since(t_probe);
    const int chunks =
        static_cast<int>(std::min(200.0, std::max(24.0, 10.0 / per_chunk)));
    const auto b = qa::make_batch(3, 3, modulation::qam64, chunks << 16, 1, 10, 10, 2);
    std::vector<uint8_t> out(b.bits.size());

    qa::canceller canceller(*det, 0.2);
    const auto t0 = clk::now();
    canceller.start();
    bool threw = false;
    try {
        det->detect_bits(
            b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data());
    } catch (const cancelled&) {
        threw = true;
    }
    const double total = seconds_since(t0);
    canceller.join();
    const clk::time_point t_cancel = canceller.sent();
    // A call that ended before the request (a far faster GPU) has nothing to cancel.
    if (total > 0.2 + 2 * per_chunk) {
        EXPECT_TRUE(threw);
        // The chunks in flight (six at most, of three such shares each: psd's
        // depth-first chunks, chunk_shares) finish first.
        EXPECT_LT(seconds_since(t_cancel), 1.0 + 20 * per_chunk)
            << "per chunk " << per_chunk << " s";
    }

    // Still the CPU's results, on a large and a small batch.
    auto cpu = detector::make(long_ml_config("cpu"));
    for (int n : { 1 << 15, 100 }) {
        const auto c = qa::make_batch(3, 3, modulation::qam64, n, 1, 5, 20, 3);
        EXPECT_EQ(qa::count_non_ml(c, qa::run_bits(*det, c), qa::run_bits(*cpu, c)), 0)
            << n;
    }
}

TEST(gpu_cancellation, request_between_calls_cancels_the_next_call_only)
{
    QA_SKIP_WITHOUT_GPU();
    auto det = detector::make(long_ml_config("cuda"));
    const auto b = qa::make_batch(3, 3, modulation::qam64, 50, 7, 10, 10, 4);
    std::vector<uint8_t> out(b.bits.size());
    det->cancel();
    EXPECT_THROW(
        det->detect_bits(
            b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data()),
        cancelled);
    auto cpu = detector::make(long_ml_config("cpu"));
    EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*det, b), qa::run_bits(*cpu, b)), 0);
}
