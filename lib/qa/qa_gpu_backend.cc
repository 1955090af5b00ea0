/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Backend selection on a machine with a CUDA device (ctest label "gpu"); every test skips
// where there is none.

#include "detect/backend.h"
#include "qa_common.h"
#include <gtest/gtest.h>

using namespace gr::mimodet;

namespace {
bool have_gpu() { return cuda_device_count() > 0; }
} // namespace

TEST(gpu_backend, device_is_found_when_built_with_cuda)
{
    if (!have_gpu())
        GTEST_SKIP() << "no CUDA device";
    EXPECT_TRUE(core::cuda_built());
}

TEST(gpu_backend, auto_and_cuda_agree_with_what_exists)
{
    if (!have_gpu())
        GTEST_SKIP() << "no CUDA device";
    for (const auto& a : algorithms()) {
        detector_config c;
        c.algorithm = a;
        c.n_tx = 2;
        c.n_rx = 2;
        c.mod = modulation::qpsk;
        c.backend = backend_kind::automatic;
        auto d = detector::make(c);
        const bool has_cuda = core::find_algorithm(a).make_cuda != nullptr;
        EXPECT_EQ(d->backend(), has_cuda ? "cuda" : "cpu") << a;
        c.backend = backend_kind::cuda;
        if (has_cuda)
            EXPECT_EQ(detector::make(c)->backend(), "cuda") << a;
        else
            EXPECT_THROW(detector::make(c), std::invalid_argument) << a;
        // Whatever runs, the answers are valid: compare with the CPU backend.
        auto b = qa::make_batch(2, 2, modulation::qpsk, 64, 7, 30, 30, 3);
        c.backend = backend_kind::cpu;
        auto cpu = detector::make(c);
        EXPECT_EQ(qa::run_bits(*d, b), qa::run_bits(*cpu, b)) << a;
    }
}
