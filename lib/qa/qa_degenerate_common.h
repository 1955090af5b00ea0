/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Degenerate channels and extreme scales, shared by the CPU tests (qa_degenerate.cc) and
// their GPU counterparts (qa_gpu_degenerate.cc): the batches, one detector run with its
// per-vector stats, and the checks of the output contract (finite, saturated LLRs and
// vector_flag bits; docs/CONVENTIONS.md).

#ifndef INCLUDED_MIMODET_QA_DEGENERATE_COMMON_H
#define INCLUDED_MIMODET_QA_DEGENERATE_COMMON_H

#include "qa_common.h"
#include <gnuradio/mimodet/detector.h>
#include <gtest/gtest.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace qa {

//! One detector run: bits (every detector), LLRs (soft detectors) and per-vector stats.
struct degenerate_run {
    std::vector<uint8_t> bits;
    std::vector<float> llr;
    std::vector<gr::mimodet::vector_stats> stats;
};

inline degenerate_run run_with_stats(gr::mimodet::detector& d, const batch& b)
{
    degenerate_run r;
    const size_t n_vec = static_cast<size_t>(b.n_mat) * b.n_sym;
    r.stats.resize(n_vec);
    r.bits = run_bits(d, b, r.stats.data());
    if (d.soft()) {
        std::vector<gr::mimodet::vector_stats> st(n_vec);
        r.llr = run_llr(d, b, st.data());
        // The LLR call's flags add the saturation to the rank flag of the bits call.
        for (size_t v = 0; v < n_vec; ++v) {
            EXPECT_EQ(st[v].flags & gr::mimodet::vector_flag_rank_deficient,
                      r.stats[v].flags)
                << "vector " << v;
            r.stats[v].flags = st[v].flags;
        }
    }
    return r;
}

//! The integer in environment variable name if set and > 0, else fallback: a smaller
//! test size where the tests run slowly (scripts/test-sanitizers).
inline int env_size(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    const int n = v ? std::atoi(v) : 0;
    return n > 0 ? n : fallback;
}

//! H and y times a, noise_var times a^2: the same detection problem.
inline batch scaled(const batch& b, double a)
{
    batch s = b;
    for (auto& h : s.H)
        h = cf(std::complex<double>(h) * a);
    for (auto& y : s.y)
        y = cf(std::complex<double>(y) * a);
    for (auto& nv : s.noise_var)
        nv = static_cast<float>(nv * a * a);
    return s;
}

//! A batch whose received vectors carry no noise worth the name (y = H s to float
//! rounding), with noise_var nv for the detectors.
inline batch
noise_free(int n_tx, int n_rx, modulation mod, int n_mat, float nv, uint64_t seed)
{
    batch b = make_batch(n_tx, n_rx, mod, n_mat, 3, 300.0, 300.0, seed);
    for (auto& v : b.noise_var)
        v = nv;
    return b;
}

//! Every LLR finite and within +-llr_saturation; a vector is flagged saturated exactly
//! when one of its LLRs is at the saturation.
inline void expect_llr_contract(const degenerate_run& r, int bits_per_vector)
{
    using namespace gr::mimodet;
    for (size_t v = 0; v < r.stats.size(); ++v) {
        bool sat = false;
        for (int k = 0; k < bits_per_vector; ++k) {
            const float l = r.llr[v * bits_per_vector + k];
            ASSERT_TRUE(std::isfinite(l)) << "vector " << v << " bit " << k;
            ASSERT_LE(std::fabs(l), llr_saturation) << "vector " << v << " bit " << k;
            sat |= std::fabs(l) == llr_saturation;
        }
        EXPECT_EQ(sat, (r.stats[v].flags & vector_flag_saturated) != 0) << "vector " << v;
    }
}

//! Sets the channels of b by matrix index modulo 2: all zeros, or columns 0 and 1 equal.
inline void make_zero_or_equal_columns(batch& b)
{
    const int nt = b.n_tx, nr = b.n_rx;
    for (int m = 0; m < b.n_mat; ++m) {
        cf* h = &b.H[static_cast<size_t>(m) * nr * nt];
        for (int r = 0; r < nr; ++r) {
            if (m % 2 == 0)
                for (int c = 0; c < nt; ++c)
                    h[r * nt + c] = 0.0f;
            else
                h[r * nt + 1] = h[r * nt + 0];
        }
    }
}

} // namespace qa

#endif /* INCLUDED_MIMODET_QA_DEGENERATE_COMMON_H */
