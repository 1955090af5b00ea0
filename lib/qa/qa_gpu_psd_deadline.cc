/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD deadline on the GPU (ctest label "gpu"; skips without a CUDA device): no deadline
// is the exact search (the CPU's decisions, no flags); with one, each vector's search
// is a prefix of the exact traversal (unflagged: the exact bits and node counts,
// flagged: at most the exact expansions), flagged vectors exist for a tiny budget, and
// the call's time stays bounded. Vectors started after the deadline take the SIC
// (Babai) fallback (expanded = 0, evaluated = N, flagged): their bits must equal the
// CPU PSD's fallback for the same vector and an independent SIC written here on the
// public QR helpers (qr.h). Both kernel variants (warp, block).

#include "psd_params.h"
#include "qr.h"
#include "qa_common.h"
#include "qa_psd_deadline_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {


#define SKIP_WITHOUT_GPU()                                                               \
    do {                                                                                 \
        if (gr::mimodet::cuda_device_count() == 0)                                       \
            GTEST_SKIP() << "no CUDA device";                                            \
    } while (0)

//! Sets MIMODET_PSD_KERNEL while alive (read when a detector is made).
struct kernel_variant {
    explicit kernel_variant(const char* v) { setenv("MIMODET_PSD_KERNEL", v, 1); }
    ~kernel_variant() { unsetenv("MIMODET_PSD_KERNEL"); }
};

detector::sptr make_psd(const qa::batch& b,
                        const std::string& backend,
                        double deadline_us,
                        int sorted_qr = -1)
{
    detector_config c;
    c.backend = backend;
    c.sorted_qr = sorted_qr;
    c.psd_deadline_us = deadline_us;
    // The CUDA default set on both, so that decisions and node counts compare.
    const auto g = core::psd_gpu_preset(b.n_tx, constellation::get(b.mod).pam_order());
    c.psd_lvl = g.lvl;
    c.psd_exp = g.exp;
    return qa::make("psd", b.n_tx, b.n_rx, b.mod, c);
}

using qa::run_with_stats;
using result = qa::deadline_result;

/*!
 * The CUDA PSD's sorted QR, re-written here: qr_sorted's algorithm (modified Gram-Schmidt,
 * least residual norm first) with the GPU's plain sequential sums. The real model's
 * columns come in twins ([Re h; Im h] and [-Im h; Re h]) of equal norm, so the pick
 * between them is decided by rounding: Eigen's (vectorised) sums on the CPU and
 * sequential ones on the GPU order many channels differently. The exact search does not
 * depend on the order; the SIC point does, so for sorted_qr = 1 the GPU's fallback is
 * checked against the SIC of this ordering, not against the CPU's.
 */
core::qr_result<core::MatR> gpu_sorted_qr(const core::MatR& Hr)
{
    const int M = static_cast<int>(Hr.rows()), N = static_cast<int>(Hr.cols());
    std::vector<std::vector<double>> q(N, std::vector<double>(M));
    for (int c = 0; c < N; ++c)
        for (int r = 0; r < M; ++r)
            q[c][r] = Hr(r, c);
    core::qr_result<core::MatR> out;
    out.R = core::MatR::Zero(N, N);
    out.Q = core::MatR::Zero(M, N);
    out.perm.resize(N);
    for (int i = 0; i < N; ++i)
        out.perm[i] = i;
    std::vector<double> norm2(N);
    for (int k = 0; k < N; ++k) {
        double s = 0.0;
        for (int r = 0; r < M; ++r)
            s += q[k][r] * q[k][r];
        norm2[k] = s;
    }
    for (int i = 0; i < N; ++i) {
        int k = i;
        for (int j = i + 1; j < N; ++j)
            if (norm2[j] < norm2[k])
                k = j;
        if (k != i) {
            std::swap(q[i], q[k]);
            for (int r = 0; r < N; ++r)
                std::swap(out.R(r, i), out.R(r, k));
            std::swap(norm2[i], norm2[k]);
            std::swap(out.perm[i], out.perm[k]);
        }
        const double nrm = std::sqrt(std::max(norm2[i], 0.0));
        out.R(i, i) = nrm;
        for (int r = 0; r < M; ++r)
            q[i][r] = nrm > 0.0 ? q[i][r] / nrm : 0.0;
        for (int l = i + 1; l < N; ++l) {
            double d = 0.0;
            for (int r = 0; r < M; ++r)
                d += q[i][r] * q[l][r];
            out.R(i, l) = d;
            double s = 0.0;
            for (int r = 0; r < M; ++r) {
                q[l][r] -= d * q[i][r];
                s += q[l][r] * q[l][r];
            }
            norm2[l] = s;
        }
    }
    for (int c = 0; c < N; ++c)
        for (int r = 0; r < M; ++r)
            out.Q(r, c) = q[c][r];
    return out;
}

enum class qr_kind { plain, cpu_sorted, gpu_sorted };

//! The shared SIC reference (qa_psd_deadline_common.h) with the QR of kind.
std::vector<uint8_t> reference_sic(const qa::batch& b, qr_kind kind)
{
    return qa::reference_sic(b, [kind](const core::MatR& h) {
        return kind == qr_kind::plain        ? core::qr_householder(h)
               : kind == qr_kind::cpu_sorted ? core::qr_sorted(h)
                                             : gpu_sorted_qr(h);
    });
}

/*!
 * Every vector: valid bits, flag 0 or 1. Unflagged: the exact bits and node counts.
 * Flagged with expanded >= 1 (stopped in its search): at most the exact expansions.
 * expanded = 0 (started after the deadline, the SIC fallback): flagged, evaluated = N
 * and, where given, the bits of each reference (CPU fallback, independent SIC).
 * Returns the number of fallback vectors.
 */
size_t expect_prefix_of_exact(const qa::batch& b,
                              const result& cut,
                              const result& exact,
                              const std::string& what,
                              const std::vector<const std::vector<uint8_t>*>& sic_refs = {})
{
    const int nb = b.n_tx * static_cast<int>(b.mod);
    const uint32_t N = 2 * b.n_tx;
    size_t n_sic = 0;
    for (size_t v = 0; v < cut.stats.size(); ++v) {
        const auto& s = cut.stats[v];
        const auto& e = exact.stats[v];
        EXPECT_LE(s.truncated, 1u) << what << " vector " << v;
        for (int k = 0; k < nb; ++k)
            EXPECT_LE(cut.bits[v * nb + k], 1) << what << " vector " << v;
        if (s.expanded == 0) {
            ++n_sic;
            EXPECT_EQ(s.truncated, 1u) << what << " vector " << v;
            EXPECT_EQ(s.evaluated, N) << what << " vector " << v;
            for (size_t r = 0; r < sic_refs.size(); ++r)
                for (int k = 0; k < nb; ++k)
                    EXPECT_EQ(cut.bits[v * nb + k], (*sic_refs[r])[v * nb + k])
                        << what << " vector " << v << " SIC reference " << r;
        } else if (s.truncated) {
            EXPECT_LE(s.expanded, e.expanded) << what << " vector " << v;
        } else {
            EXPECT_EQ(s.expanded, e.expanded) << what << " vector " << v;
            EXPECT_EQ(s.evaluated, e.evaluated) << what << " vector " << v;
            for (int k = 0; k < nb; ++k)
                EXPECT_EQ(cut.bits[v * nb + k], exact.bits[v * nb + k])
                    << what << " vector " << v;
        }
        if (::testing::Test::HasFailure())
            return n_sic; // one vector's report is enough
    }
    return n_sic;
}

} // namespace

TEST(gpu_psd_deadline, none_is_exact)
{
    SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 300, 7, 5.0, 20.0, 31);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    const auto ml_bits = qa::run_bits(*ml, b);
    for (const char* variant : { "warp", "block" }) {
        const kernel_variant kv(variant);
        auto exact = make_psd(b, "cuda", 0.0);
        ASSERT_EQ(exact->backend(), "cuda");
        const result r = run_with_stats(*exact, b);
        EXPECT_EQ(qa::count_non_ml(b, r.bits, ml_bits), 0) << variant;
        EXPECT_EQ(r.truncated, 0u) << variant;
        // A budget that never runs out reads the timer but changes nothing.
        auto loose = make_psd(b, "cuda", 1e8);
        const result l = run_with_stats(*loose, b);
        EXPECT_EQ(l.bits, r.bits) << variant;
        EXPECT_EQ(l.truncated, 0u) << variant;
        for (size_t v = 0; v < l.stats.size(); ++v)
            ASSERT_EQ(l.stats[v].expanded, r.stats[v].expanded) << variant << " vector " << v;
    }
}

TEST(gpu_psd_deadline, tiny_budget_truncates_and_stays_bounded)
{
    SKIP_WITHOUT_GPU();
    // 4x4 64QAM at low SNR, a 20 MHz slot's worth of vectors four times over (several
    // chunks on several streams: they share the call's deadline).
    const auto b = qa::make_batch(4, 4, modulation::qam64, 4 * 1200, 7, 6.0, 10.0, 47);
    const auto sic = reference_sic(b, qr_kind::plain);
    for (const char* variant : { "warp", "block" }) {
        const kernel_variant kv(variant);
        auto exact_det = make_psd(b, "cuda", 0.0);
        (void)run_with_stats(*exact_det, b); // warm-up: module load, buffers
        const result exact = run_with_stats(*exact_det, b);
        ASSERT_EQ(exact.truncated, 0u) << variant;

        auto tiny_det = make_psd(b, "cuda", 1.0);
        (void)run_with_stats(*tiny_det, b);
        const result tiny = run_with_stats(*tiny_det, b);
        const size_t tiny_sic =
            expect_prefix_of_exact(b, tiny, exact, std::string(variant) + " 1 us", { &sic });
        EXPECT_GT(tiny.truncated, 0u) << variant;
        EXPECT_GT(tiny_sic, tiny.stats.size() / 2) << variant;
        // With 1 us, about all the work is the first descents: much less than exact.
        EXPECT_LT(tiny.seconds, exact.seconds) << variant;

        // A budget of a quarter of the exact time: the call ends after about the budget
        // plus the remaining first descents (no more than the 1 us call), plus the copies.
        const double budget_s = exact.seconds / 4;
        auto mid_det = make_psd(b, "cuda", budget_s * 1e6);
        (void)run_with_stats(*mid_det, b);
        const result mid = run_with_stats(*mid_det, b);
        expect_prefix_of_exact(b, mid, exact, std::string(variant) + " mid", { &sic });
        EXPECT_LE(mid.seconds, 1.5 * budget_s + 2 * tiny.seconds + 0.005)
            << variant << ": exact " << exact.seconds << " s, 1 us budget " << tiny.seconds;
        EXPECT_LE(mid.truncated, tiny.truncated) << variant;
        std::printf("%s: %zu vectors; exact %.2f ms; budget 1 us: %.2f ms, %zu truncated "
                    "(%zu SIC); budget %.2f ms: %.2f ms, %zu truncated\n",
                    variant,
                    exact.stats.size(),
                    exact.seconds * 1e3,
                    tiny.seconds * 1e3,
                    tiny.truncated,
                    tiny_sic,
                    budget_s * 1e3,
                    mid.seconds * 1e3,
                    mid.truncated);
    }
}

TEST(gpu_psd_deadline, sic_fallback_matches_cpu)
{
    SKIP_WITHOUT_GPU();
    // A 1 ns budget is spent before the first vector starts: every vector the GPU starts
    // takes the SIC fallback. Plain QR (the PSD's default): on the same inputs, each
    // one's bits must equal the CPU PSD's fallback (the same psd_sic code on the CPU's
    // QR) and the independent SIC. Sorted QR: the independent SIC of the GPU's ordering
    // (see gpu_sorted_qr; the CPU's ordering may differ at the twin-column ties).
    struct sys {
        modulation mod;
        double snr_lo, snr_hi;
    };
    for (const sys& y : { sys{ modulation::qam64, 6.0, 10.0 },
                          sys{ modulation::qam16, 5.0, 20.0 },
                          sys{ modulation::qpsk, 0.0, 5.0 } })
        for (int sorted : { 0, 1 }) {
            const auto b = qa::make_batch(4, 4, y.mod, 1200, 7, y.snr_lo, y.snr_hi, 53);
            const auto cpu_ref = reference_sic(b, sorted ? qr_kind::cpu_sorted : qr_kind::plain);
            auto cpu_det = make_psd(b, "cpu", 1e-3, sorted);
            const result cpu = run_with_stats(*cpu_det, b);
            const size_t cpu_sic = expect_prefix_of_exact(b, cpu, cpu, "cpu", { &cpu_ref });
            ASSERT_EQ(cpu_sic, cpu.stats.size()) << "the CPU started a search after 1 ns";
            const auto gpu_ref = sorted ? reference_sic(b, qr_kind::gpu_sorted) : cpu_ref;
            for (const char* variant : { "warp", "block" }) {
                const kernel_variant kv(variant);
                const std::string what = std::string(variant) + " mod " +
                                         std::to_string(int(y.mod)) +
                                         (sorted ? " sorted QR" : " plain QR");
                auto exact_det = make_psd(b, "cuda", 0.0, sorted);
                const result exact = run_with_stats(*exact_det, b);
                ASSERT_EQ(exact.truncated, 0u) << what;
                auto det = make_psd(b, "cuda", 1e-3, sorted);
                (void)run_with_stats(*det, b);
                const result cut = run_with_stats(*det, b);
                std::vector<const std::vector<uint8_t>*> refs = { &gpu_ref };
                if (!sorted)
                    refs.push_back(&cpu.bits);
                const size_t n_sic = expect_prefix_of_exact(b, cut, exact, what, refs);
                ASSERT_FALSE(::testing::Test::HasFailure()) << what;
                EXPECT_GE(n_sic, cut.stats.size() * 9 / 10) << what;
                size_t differ_cpu = 0;
                const int nb = b.n_tx * static_cast<int>(b.mod);
                for (size_t v = 0; v < cut.stats.size(); ++v)
                    differ_cpu += cut.stats[v].expanded == 0 &&
                                  !std::equal(&cut.bits[v * nb],
                                              &cut.bits[v * nb] + nb,
                                              &cpu.bits[v * nb]);
                std::printf("%s: %zu of %zu vectors SIC; %zu differ from the CPU's SIC\n",
                            what.c_str(),
                            n_sic,
                            cut.stats.size(),
                            differ_cpu);
            }
        }
}
