/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The CUDA detectors on degenerate channels and at extreme scales, against the CPU
// (ctest label "gpu"; skips where there is no CUDA device): the same flags, LLRs finite
// and saturated alike (same signs, the same saturated magnitudes), and scale invariance
// on the device too. The CPU's own checks: qa_degenerate.cc.

#include "qa_degenerate_common.h"
#include "qa_gpu_common.h"
#include <gnuradio/mimodet/detector.h>
#include <gtest/gtest.h>
#include <cmath>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

// The algorithms with a CUDA implementation (ml has none).
const char* const k_gpu_algs[] = { "zf", "mmse", "psd", "fsd", "sfsd", "mtt" };

detector::sptr
make_on(const std::string& alg, int nt, int nr, modulation mod, const char* be)
{
    detector_config c;
    c.backend = parse_backend(be);
    return qa::make(alg, nt, nr, mod, c);
}

/*!
 * The CUDA run of b against the CPU's: flags equal; bits equal except where the CPU's
 * LLR is about 0; LLRs finite, and equal to k_tol (relative) or both saturated alike;
 * vectors flagged rank-deficient compared by their flags and finiteness only.
 */
void expect_gpu_matches_cpu(const std::string& alg, const qa::batch& b)
{
    auto cpu = make_on(alg, b.n_tx, b.n_rx, b.mod, "cpu");
    auto gpu = make_on(alg, b.n_tx, b.n_rx, b.mod, "cuda");
    ASSERT_EQ(gpu->backend(), "cuda");
    const auto rc = qa::run_with_stats(*cpu, b);
    const auto rg = qa::run_with_stats(*gpu, b);
    const int nb = cpu->bits_per_vector();
    size_t flag_diff = 0, bit_diff = 0, llr_diff = 0;
    for (size_t v = 0; v < rc.stats.size(); ++v) {
        flag_diff += rc.stats[v].flags != rg.stats[v].flags;
        // A rank-deficient channel's streams are not separable: which of two equal
        // columns a list or trellis search credits is decided by rounding in the
        // ordering, so a flagged vector's LLRs may differ between the backends (the
        // flag says so). Compare the unflagged vectors.
        if (cpu->soft() && (rc.stats[v].flags & vector_flag_rank_deficient))
            continue;
        for (int k = 0; k < nb; ++k) {
            const size_t i = v * nb + k;
            if (!cpu->soft()) {
                bit_diff += rc.bits[i] != rg.bits[i];
                continue;
            }
            const double a = rc.llr[i], g = rg.llr[i];
            llr_diff += !(std::fabs(a - g) <= 1e-4 * std::max(1.0, std::fabs(a)));
            bit_diff += rc.bits[i] != rg.bits[i] && std::fabs(a) > 1e-6;
        }
    }
    if (cpu->soft())
        qa::expect_llr_contract(rg, nb);
    EXPECT_EQ(flag_diff, 0u);
    EXPECT_EQ(llr_diff, 0u);
    // Rank-deficient channels leave the tree detectors' hard decisions arbitrary (the
    // flag says so): compare the bits of the unflagged vectors only.
    size_t flagged_bits = 0;
    if (!cpu->soft())
        for (size_t v = 0; v < rc.stats.size(); ++v)
            if (rc.stats[v].flags & vector_flag_rank_deficient)
                for (int k = 0; k < nb; ++k)
                    flagged_bits += rc.bits[v * nb + k] != rg.bits[v * nb + k];
    EXPECT_EQ(bit_diff - flagged_bits, 0u);
}

} // namespace

TEST(gpu_degenerate, zero_and_equal_columns_match_the_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : k_gpu_algs)
        for (const int nt : { 2, 4 }) {
            SCOPED_TRACE(std::string(alg) + " n_tx " + std::to_string(nt));
            qa::batch b = make_batch(nt, nt + 1, modulation::qpsk, 40, 3, 10.0, 20.0, 5);
            qa::make_zero_or_equal_columns(b);
            expect_gpu_matches_cpu(alg, b);
        }
}

TEST(gpu_degenerate, huge_h_and_y_match_the_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : k_gpu_algs) {
        SCOPED_TRACE(alg);
        qa::batch b =
            qa::scaled(make_batch(4, 4, modulation::qam16, 50, 2, 10.0, 20.0, 8), 1e20);
        for (auto& nv : b.noise_var)
            nv = 0.1f;
        expect_gpu_matches_cpu(alg, b);
    }
}

TEST(gpu_degenerate, vanishing_noise_var_matches_the_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    for (const auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 })
        for (const char* alg : k_gpu_algs) {
            SCOPED_TRACE(std::string(alg) + " " + to_string(mod));
            expect_gpu_matches_cpu(alg, qa::noise_free(4, 4, mod, 100, 1e-40f, 31));
        }
}

TEST(gpu_degenerate, scale_invariance_every_detector)
{
    // Each scaled batch on the device against the CPU on the same batch: with
    // qa_degenerate's scale invariance on the CPU, the GPU's outputs are invariant too.
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : k_gpu_algs)
        for (const int nt : { 2, 4 }) {
            const qa::batch b =
                make_batch(nt, nt, modulation::qam16, 200, 3, 0.0, 30.0, 900 + nt);
            for (const double a :
                 { 1.0, std::ldexp(1.0, -40), std::ldexp(1.0, 60), 1e15 }) {
                SCOPED_TRACE(std::string(alg) + " " + std::to_string(nt) + "x" +
                             std::to_string(nt) + " a=" + std::to_string(a));
                expect_gpu_matches_cpu(alg, qa::scaled(b, a));
            }
        }
}
