/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Shared helpers of the C++ tests: random Rayleigh instances and exact metrics.

#ifndef INCLUDED_MIMODET_QA_COMMON_H
#define INCLUDED_MIMODET_QA_COMMON_H

#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include "util/tuning.h"
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace qa {

/*!
 * Expanded nodes before which the CUDA PSD's depth-first kernels never spread a search,
 * whatever the shape (psd_se.h; MIMODET_PSD_SE_SPLIT / _DRAIN as now set): a search that
 * expands fewer has the CPU's node counts. Spread searches' counts depend on the
 * schedule.
 */
inline uint32_t psd_se_spread_nodes()
{
    namespace core = gr::mimodet::core;
    const int split = core::tuning::psd_se_split(), drain = core::tuning::psd_se_drain();
    return std::min(
        split > 0 ? static_cast<uint32_t>(split) : core::psd_se_split_nodes,
        drain > 0 ? static_cast<uint32_t>(drain)
                  : std::min(core::psd_se_drain_nodes, core::psd_se_drain_nodes_sparse));
}

using cf = std::complex<float>;
using gr::mimodet::constellation;
using gr::mimodet::modulation;

using batch = gr::mimodet::rayleigh_batch;
using gr::mimodet::make_batch;

//! ||y - H s(bits)||^2 in double precision, for one vector.
inline double metric(const cf* H,
                     const cf* y,
                     const uint8_t* bits,
                     int n_tx,
                     int n_rx,
                     modulation mod)
{
    const auto& c = constellation::get(mod);
    const int q = c.bits_per_symbol();
    std::vector<std::complex<double>> x(n_tx);
    for (int t = 0; t < n_tx; ++t) {
        int l = 0;
        for (int k = 0; k < q; ++k)
            l = (l << 1) | bits[t * q + k];
        x[t] = c.points()[l];
    }
    double m = 0;
    for (int r = 0; r < n_rx; ++r) {
        std::complex<double> e(y[r]);
        for (int t = 0; t < n_tx; ++t)
            e -= std::complex<double>(H[r * n_tx + t]) * x[t];
        m += std::norm(e);
    }
    return m;
}

//! Count of vectors whose bits differ from the reference AND whose metric is worse than
//! the reference's by more than rel_tol (relative): ties within rounding are not errors.
inline int count_non_ml(const batch& b,
                        const std::vector<uint8_t>& bits,
                        const std::vector<uint8_t>& ml_bits,
                        double rel_tol = 1e-6)
{
    const int q = static_cast<int>(b.mod);
    const int nb = b.n_tx * q;
    int bad = 0;
    for (int m = 0; m < b.n_mat; ++m)
        for (int s = 0; s < b.n_sym; ++s) {
            const size_t v = static_cast<size_t>(m) * b.n_sym + s;
            bool same = true;
            for (int k = 0; k < nb; ++k)
                same &= bits[v * nb + k] == ml_bits[v * nb + k];
            if (same)
                continue;
            const cf* H = &b.H[static_cast<size_t>(m) * b.n_rx * b.n_tx];
            const cf* y = &b.y[v * b.n_rx];
            const double a = metric(H, y, &bits[v * nb], b.n_tx, b.n_rx, b.mod);
            const double r = metric(H, y, &ml_bits[v * nb], b.n_tx, b.n_rx, b.mod);
            if (a > r * (1 + rel_tol) + 1e-12)
                ++bad;
        }
    return bad;
}

inline gr::mimodet::detector::sptr make(const std::string& algorithm,
                                        int n_tx,
                                        int n_rx,
                                        modulation mod,
                                        gr::mimodet::detector_config base = {})
{
    base.algorithm = algorithm;
    base.n_tx = n_tx;
    base.n_rx = n_rx;
    base.mod = mod;
    return gr::mimodet::detector::make(base);
}

//! Whether MIMODET_PSD_KERNEL forces one of the CUDA PSD's Algorithm 3 kernels, which
//! run every parameter set, the depth-first one too, from an infinite radius.
inline bool psd_alg3_forced() { return !gr::mimodet::core::tuning::psd_kernel().empty(); }

/*!
 * A detector as make(); a CPU PSD left at the default psd_start_rows and psd_radius takes
 * the CUDA backend's (rows 0 where psd_alg3_forced()), so that its node counts compare
 * with the GPU's.
 */
inline gr::mimodet::detector::sptr make_counts_as_cuda(const std::string& algorithm,
                                                       int n_tx,
                                                       int n_rx,
                                                       modulation mod,
                                                       gr::mimodet::detector_config base)
{
    if (algorithm == "psd" && base.backend == gr::mimodet::backend_kind::cpu &&
        base.psd_start_rows == -1) {
        const int omega = gr::mimodet::constellation::get(mod).pam_order();
        base.psd_start_rows =
            psd_alg3_forced() ? 0
                              : gr::mimodet::core::psd_start_rows(-1, n_tx, omega, true);
    }
    if (algorithm == "psd" && base.backend == gr::mimodet::backend_kind::cpu &&
        base.psd_radius == -1.0)
        base.psd_radius = gr::mimodet::core::psd_radius(-1.0, true);
    return make(algorithm, n_tx, n_rx, mod, base);
}

/*!
 * Makes b's first matrices degenerate: 0..9 all zero, 10..n_bad-1 with column 1 a copy
 * of column 0 (with more than one transmit antenna), whose vectors' leaves tie.
 */
inline void make_rank_deficient(batch& b, int n_bad)
{
    const int nt = b.n_tx, nr = b.n_rx;
    for (int m = 0; m < n_bad && m < b.n_mat; ++m)
        for (int r = 0; r < nr; ++r) {
            cf* row = &b.H[(static_cast<size_t>(m) * nr + r) * nt];
            if (m < 10)
                std::fill(row, row + nt, cf(0));
            else if (nt > 1)
                row[1] = row[0];
        }
}

//! stats (optional): n_mat * n_sym entries.
inline std::vector<uint8_t>
run_bits(gr::mimodet::detector& d, const batch& b, gr::mimodet::vector_stats* stats = nullptr)
{
    std::vector<uint8_t> out(b.bits.size());
    d.detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data(), stats);
    return out;
}

inline std::vector<float>
run_llr(gr::mimodet::detector& d, const batch& b, gr::mimodet::vector_stats* stats = nullptr)
{
    std::vector<float> out(b.bits.size());
    d.detect_llr(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), out.data(), stats);
    return out;
}

//! A segmented batch (detector::detect_* with batch_segment) made of independent random
//! batches, one per segment, laid out one after another.
struct segmented_batch {
    std::vector<gr::mimodet::batch_segment> segments;
    std::vector<batch> parts; //!< part i: segment i on its own
    std::vector<cf> H, y;
    std::vector<float> noise_var;
    size_t n_values = 0; //!< bits or LLRs of the whole batch
};

inline segmented_batch make_segmented(int n_tx,
                                      int n_rx,
                                      modulation mod,
                                      const std::vector<gr::mimodet::batch_segment>& segs,
                                      double snr_lo_db,
                                      double snr_hi_db,
                                      uint64_t seed)
{
    segmented_batch s;
    s.segments = segs;
    for (size_t i = 0; i < segs.size(); ++i) {
        batch b = make_batch(n_tx,
                             n_rx,
                             mod,
                             static_cast<int>(segs[i].n_mat),
                             static_cast<int>(segs[i].n_sym),
                             snr_lo_db,
                             snr_hi_db,
                             seed + 7919 * i);
        s.H.insert(s.H.end(), b.H.begin(), b.H.end());
        s.y.insert(s.y.end(), b.y.begin(), b.y.end());
        s.noise_var.insert(s.noise_var.end(), b.noise_var.begin(), b.noise_var.end());
        s.n_values += b.bits.size();
        s.parts.push_back(std::move(b));
    }
    return s;
}

/*!
 * Checks that one segmented call of `seg` gives exactly (bit for bit, stats included) what
 * one call per segment of `ref` gives. The two may be the same object.
 */
inline void expect_segmented_equals_per_segment(gr::mimodet::detector& seg,
                                                gr::mimodet::detector& ref,
                                                const segmented_batch& s,
                                                const std::string& what)
{
    using gr::mimodet::vector_stats;
    std::vector<uint8_t> bits(s.n_values, 7), ref_bits;
    std::vector<vector_stats> st(s.n_values / seg.bits_per_vector()), ref_st;
    seg.detect_bits(s.H.data(), s.y.data(), s.segments, s.noise_var.data(), bits.data(),
                    st.data());
    std::vector<float> llr, ref_llr;
    if (seg.soft()) {
        llr.assign(s.n_values, NAN);
        seg.detect_llr(s.H.data(), s.y.data(), s.segments, s.noise_var.data(), llr.data());
    }
    for (const auto& b : s.parts) {
        if (b.n_mat == 0 || b.n_sym == 0)
            continue;
        std::vector<uint8_t> pb(b.bits.size());
        std::vector<vector_stats> ps(static_cast<size_t>(b.n_mat) * b.n_sym);
        ref.detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(),
                        pb.data(), ps.data());
        ref_bits.insert(ref_bits.end(), pb.begin(), pb.end());
        ref_st.insert(ref_st.end(), ps.begin(), ps.end());
        if (seg.soft()) {
            std::vector<float> pl(b.bits.size());
            ref.detect_llr(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(),
                           pl.data());
            ref_llr.insert(ref_llr.end(), pl.begin(), pl.end());
        }
    }
    ASSERT_EQ(ref_bits.size(), bits.size()) << what;
    size_t bit_diff = 0, stat_diff = 0, llr_diff = 0;
    for (size_t i = 0; i < bits.size(); ++i)
        bit_diff += bits[i] != ref_bits[i];
    // The CUDA psd counts a long search's work as spread over tasks, which depends on
    // the schedule (psd_se_cuda.cu); a short search's counts are fixed.
    const bool spread = seg.config().algorithm == "psd" && seg.backend() == "cuda";
    for (size_t i = 0; i < st.size(); ++i)
        stat_diff += st[i].truncated != ref_st[i].truncated ||
                     ((!spread || ref_st[i].expanded < psd_se_spread_nodes()) &&
                      (st[i].expanded != ref_st[i].expanded ||
                       st[i].evaluated != ref_st[i].evaluated));
    for (size_t i = 0; i < llr.size(); ++i)
        llr_diff += !(llr[i] == ref_llr[i]);
    EXPECT_EQ(bit_diff, 0u) << what << ": bits";
    EXPECT_EQ(stat_diff, 0u) << what << ": stats";
    EXPECT_EQ(llr_diff, 0u) << what << ": LLRs";
}

//! Sets a tuning switch (docs/TUNING.md), read when a detector is made, for one scope.
class env_override
{
public:
    env_override(const char* name, const char* value) : d_name(name)
    {
        const char* old = std::getenv(d_name);
        d_had = old != nullptr;
        if (d_had)
            d_old = old;
        ::setenv(d_name, value, 1);
    }
    ~env_override()
    {
        if (d_had)
            ::setenv(d_name, d_old.c_str(), 1);
        else
            ::unsetenv(d_name);
    }
    env_override(const env_override&) = delete;
    env_override& operator=(const env_override&) = delete;

private:
    const char* d_name;
    bool d_had = false;
    std::string d_old;
};

} // namespace qa

#endif
