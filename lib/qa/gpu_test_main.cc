/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// main() of the GPU test programs (qa_gpu_*): GoogleTest's, except that a run without a
// CUDA device whose GPU tests skipped themselves (QA_SKIP_WITHOUT_GPU), or with too few
// for a test that needs several (QA_SKIP_WITHOUT_GPUS), and none failed exits with
// qa::k_skip_return_code, which ctest reports as "Not Run (Skipped)"
// (SKIP_RETURN_CODE in lib/CMakeLists.txt): a GPU test program must not count as passed
// where its GPU tests did not run. Host-only tests of the program still ran and any
// failure among them still fails the program. Under MIMODET_QA_SANITIZER_SIZES it says
// so first, so that a log shows which sizes ran.

#include "qa_gpu_common.h"
#include <gnuradio/mimodet/detector.h>
#include <gtest/gtest.h>
#include <cstdio>

int main(int argc, char** argv)
{
    testing::InitGoogleTest(&argc, argv);
    if (qa::sanitizer_sizes())
        std::printf("MIMODET_QA_SANITIZER_SIZES: the smaller sanitizer sizes\n");
    const int rc = RUN_ALL_TESTS();
    const int devices = gr::mimodet::cuda_device_count();
    if (rc != 0 || (devices > 0 && !qa::skipped_for_devices()))
        return rc;
    const testing::UnitTest& u = *testing::UnitTest::GetInstance();
    if (u.skipped_test_count() == 0)
        return rc;
    std::printf("%s: %d of %d tests skipped (%d other tests passed); exit code %d "
                "(skipped)\n",
                devices == 0 ? "no CUDA device" : "too few CUDA devices",
                u.skipped_test_count(),
                u.test_to_run_count(),
                u.successful_test_count(),
                qa::k_skip_return_code);
    return qa::k_skip_return_code;
}
