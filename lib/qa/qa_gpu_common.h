/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Shared pieces of the GPU-vs-CPU tests (qa_gpu_*.cc): the skip without a CUDA device,
// the sanitizer sizes, the standard batches, the odd batch shapes and the rank-deficient
// channels.

#ifndef INCLUDED_MIMODET_QA_GPU_COMMON_H
#define INCLUDED_MIMODET_QA_GPU_COMMON_H

#include "qa_common.h"
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace qa {

//! Exit code of a GPU test program whose GPU tests all skipped for want of a device
//! (gpu_test_main.cc); lib/CMakeLists.txt gives it to ctest as SKIP_RETURN_CODE.
constexpr int k_skip_return_code = 77;

//! Skips the current test where there is no CUDA device (the program then exits with
//! k_skip_return_code, see gpu_test_main.cc).
#define QA_SKIP_WITHOUT_GPU()                                                            \
    do {                                                                                 \
        if (gr::mimodet::cuda_device_count() == 0)                                       \
            GTEST_SKIP() << "no CUDA device";                                            \
    } while (0)

/*!
 * True where MIMODET_QA_SANITIZER_SIZES is set to anything but "" or "0": the GPU tests
 * then run smaller problems (sanitizer_size), for compute-sanitizer, under which the
 * kernels run 100-1000 times slower (scripts/measure/reliability-device-run sets it).
 * Read once, in this one place; the library never reads it.
 */
inline bool sanitizer_sizes()
{
    static const bool on = [] {
        const char* v = std::getenv("MIMODET_QA_SANITIZER_SIZES");
        return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    }();
    return on;
}

/*!
 * normal, or small under sanitizer_sizes(). A test shrinks with it only what does not
 * change which kernels it launches and what it asserts: slots, subcarriers, random
 * instances, a modulation where the case is not about the modulation. Problems that
 * choose a code path keep it (several chunks: more than 2^14 vectors; a long search; a
 * deadline that is reached).
 */
template <typename T>
T sanitizer_size(T normal, T small)
{
    return sanitizer_sizes() ? small : normal;
}

//! True once a test skipped for want of devices where some exist (QA_SKIP_WITHOUT_GPUS):
//! the program then exits with k_skip_return_code too.
inline bool& skipped_for_devices()
{
    static bool skipped = false;
    return skipped;
}

//! Skips the current test where fewer than n CUDA devices exist.
#define QA_SKIP_WITHOUT_GPUS(n)                                                          \
    do {                                                                                 \
        if (gr::mimodet::cuda_device_count() < (n)) {                                    \
            qa::skipped_for_devices() = true;                                            \
            GTEST_SKIP() << "needs " << (n) << " CUDA devices, "                         \
                         << gr::mimodet::cuda_device_count() << " present";              \
        }                                                                                \
    } while (0)

/*!
 * n_mat channel matrices (n_rx x n_tx each, row-major) for the tests that hold a lane-
 * parallel preprocessing kernel against its one-thread-per-matrix twin: i.i.d. Rayleigh,
 * and matrix m % 7 = 1..5 all zeros, two equal columns, one dead stream, 1e-18 times
 * smaller, or columns that are the first turned by quarter turns (every real column of
 * the same norm: ties in every pivot and ordering pick).
 */
inline std::vector<cf>
preprocessing_channels(int nt, int nr, int n_mat, std::mt19937& rng)
{
    std::normal_distribution<float> g(0.0f, 0.7071f);
    const cf quarter_turns[4] = { { 1, 0 }, { 0, 1 }, { -1, 0 }, { 0, -1 } };
    std::vector<cf> H(static_cast<size_t>(n_mat) * nr * nt);
    for (auto& h : H)
        h = cf(g(rng), g(rng));
    for (int m = 0; m < n_mat; ++m) {
        cf* h = &H[static_cast<size_t>(m) * nr * nt];
        for (int r = 0; r < nr; ++r)
            for (int c = 0; c < nt; ++c) {
                if (m % 7 == 1)
                    h[r * nt + c] = 0.0f;
                else if (m % 7 == 2 && c == nt - 1)
                    h[r * nt + c] = h[r * nt];
                else if (m % 7 == 3 && c == 0)
                    h[r * nt + c] = 0.0f;
                else if (m % 7 == 4)
                    h[r * nt + c] *= 1e-18f;
                else if (m % 7 == 5 && c > 0)
                    h[r * nt + c] = h[r * nt] * quarter_turns[c % 4];
            }
    }
    return H;
}

/*!
 * The lane-parallel preprocessing tests: differences(H, n_mat, n_rx, n_tx, sorted), a
 * detector's test hook (detect/backend.h) that runs its lane kernel and its
 * one-thread-per-matrix kernel on the same matrices and counts the outputs that differ
 * bit for bit, must give 0 for every shape with a lane kernel (4x4, 2x2, 2x4) and one
 * without (3x3), matrix counts that leave a warp's or a block's lanes idle, both QRs,
 * and H from preprocessing_channels (seed).
 */
template <typename Differences>
void expect_lanes_equal_one_thread(uint32_t seed, Differences&& differences)
{
    std::mt19937 rng(seed);
    const int shapes[][2] = { { 4, 4 }, { 2, 2 }, { 2, 4 }, { 3, 3 } }; // n_tx, n_rx
    for (const auto& shape : shapes)
        for (int n_mat : { 1, 3, 1200, 1203 })
            for (bool sorted : { false, true }) {
                const int nt = shape[0], nr = shape[1];
                const auto H = preprocessing_channels(nt, nr, n_mat, rng);
                const std::string what = std::to_string(nt) + "x" + std::to_string(nr) +
                                         " n_mat=" + std::to_string(n_mat) +
                                         (sorted ? " sorted" : " plain");
                size_t differ = 1;
                ASSERT_NO_THROW(differ = differences(H.data(), n_mat, nr, nt, sorted))
                    << what;
                EXPECT_EQ(differ, 0u) << what;
            }
}

inline const modulation k_gpu_mods[] = { modulation::qpsk,
                                          modulation::qam16,
                                          modulation::qam64 };

//! f(n_tx, n_rx, mod) for the standard sizes 2x2, 4x4, 2x4 and every modulation.
template <typename F>
void for_each_standard_size(F&& f)
{
    const int sizes[][2] = { { 2, 2 }, { 4, 4 }, { 2, 4 } };
    for (const auto& s : sizes)
        for (auto mod : k_gpu_mods)
            f(s[0], s[1], mod);
}

//! 15000 matrices x 7 symbols (one LTE slot per subcarrier) over 0-30 dB (sanitizer
//! sizes: 60 matrices).
inline batch standard_batch(int n_tx, int n_rx, modulation mod, uint64_t seed)
{
    return make_batch(n_tx, n_rx, mod, sanitizer_size(15000, 60), 7, 0.0, 30.0, seed);
}

//! f(n_mat, n_sym) for the odd batch shapes: one vector; one matrix with many symbols;
//! ragged sizes; n_sym = 1 and 13 with more vectors than one chunk (2^16), so several
//! chunks and all streams are used (sanitizer sizes: just past the single-copy limit of
//! 2^14 vectors, still several chunks on all three streams).
template <typename F>
void for_each_odd_shape(F&& f)
{
    const int shapes[][2] = { { 1, 1 },
                              { 1, 7 },
                              { 1, sanitizer_size(5000, 700) },
                              { 37, 3 },
                              { 1001, 1 },
                              { sanitizer_size(100003, 17001), 1 },
                              { sanitizer_size(9999, 1301), 13 } };
    for (const auto& s : shapes)
        f(s[0], s[1]);
}

inline std::string shape_name(int n_mat, int n_sym)
{
    return "n_mat=" + std::to_string(n_mat) + " n_sym=" + std::to_string(n_sym);
}

//! Makes the channels of b rank-deficient, by matrix index modulo 3: all zeros, equal
//! columns 1 and 2, or a dead stream 3 (needs n_tx >= 4).
inline void make_singular_channels(batch& b)
{
    const int nt = b.n_tx, nr = b.n_rx;
    for (int m = 0; m < b.n_mat; ++m) {
        cf* h = &b.H[static_cast<size_t>(m) * nr * nt];
        for (int r = 0; r < nr; ++r)
            for (int c = 0; c < nt; ++c) {
                if (m % 3 == 0)
                    h[r * nt + c] = 0.0f; // all zeros
                else if (m % 3 == 1 && c == 2)
                    h[r * nt + c] = h[r * nt + 1]; // equal columns
                else if (m % 3 == 2 && c == 3)
                    h[r * nt + c] = 0.0f; // one dead stream
            }
    }
}

} // namespace qa

#endif /* INCLUDED_MIMODET_QA_GPU_COMMON_H */
