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
// Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the batches are smaller; the tiny
// budget's batch keeps more than 2^14 vectors (several chunks, and more vectors than the
// persistent blocks and warps take at once, so that most start after the deadline), at
// 16QAM and 0-5 dB, whose exact searches are about a seventh of 64QAM's at 6-10 dB.

#include "detect/psd/psd_params.h"
#include "detect/qr.h"
#include "qa_common.h"
#include "qa_gpu_common.h"
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

//! The search under test: "warp" and "block" run the CUDA default Algorithm 3 set on
//! that variant (MIMODET_PSD_KERNEL, read when a detector is made); "se" runs the
//! depth-first set on its own kernels (psd_se_cuda.cu).
bool g_depth_first = false;

struct kernel_variant {
    explicit kernel_variant(const char* v)
    {
        g_depth_first = std::string(v) == "se";
        setenv("MIMODET_PSD_KERNEL", g_depth_first ? "auto" : v, 1);
    }
    ~kernel_variant()
    {
        unsetenv("MIMODET_PSD_KERNEL");
        g_depth_first = false;
    }
};

detector::sptr make_psd(const qa::batch& b,
                        const std::string& backend,
                        double deadline_us,
                        int sorted_qr = -1)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.psd_deadline_us = deadline_us;
    c.psd_node_budget = 0; // only the deadline cuts searches here
    // The same set on both, so that decisions and node counts compare; the plain QR
    // unless asked (the depth-first set's default is the sorted one).
    const auto g = g_depth_first
                       ? core::psd_cpu_tuned(b.n_tx)
                       : core::psd_gpu_preset(b.n_tx, constellation::get(b.mod).pam_order());
    c.sorted_qr = g_depth_first && sorted_qr == -1 ? 0 : sorted_qr;
    c.psd_lvl = g.lvl;
    c.psd_exp = g.exp;
    return qa::make_counts_as_cuda("psd", b.n_tx, b.n_rx, b.mod, c);
}

using qa::run_with_stats;
using result = qa::deadline_result;

// The CPU's sorted QR of the real model is the GPU's, operation for operation (qr.cc).
enum class qr_kind { plain, sorted };

//! The shared SIC reference (qa_psd_deadline_common.h) with the QR of kind.
std::vector<uint8_t> reference_sic(const qa::batch& b, qr_kind kind)
{
    return qa::reference_sic(b, [kind](const core::MatR& h) {
        return kind == qr_kind::plain ? core::qr_householder(h) : core::qr_sorted(h);
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
            // The SE kernels count a spread (long) search's work, which depends on the
            // schedule; a short one's is the CPU's.
            if (!g_depth_first || e.expanded < qa::psd_se_spread_nodes())
                EXPECT_LE(s.expanded, e.expanded) << what << " vector " << v;
        } else {
            if (!g_depth_first || e.expanded < qa::psd_se_spread_nodes()) {
                EXPECT_EQ(s.expanded, e.expanded) << what << " vector " << v;
                EXPECT_EQ(s.evaluated, e.evaluated) << what << " vector " << v;
            }
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
    const auto b = qa::make_batch(
        4, 4, modulation::qam16, qa::sanitizer_size(300, 40), 7, 5.0, 20.0, 31);
    auto ml = qa::make("ml", 4, 4, modulation::qam16);
    const auto ml_bits = qa::run_bits(*ml, b);
    for (const char* variant : { "warp", "block", "se" }) {
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
        // The SE kernels count a long search's work as spread over tasks, which depends
        // on the schedule; a short one's counts are fixed.
        for (size_t v = 0; v < l.stats.size(); ++v)
            if (!g_depth_first || r.stats[v].expanded < qa::psd_se_spread_nodes())
                ASSERT_EQ(l.stats[v].expanded, r.stats[v].expanded) << variant << " vector " << v;
    }
}

TEST(gpu_psd_deadline, tiny_budget_truncates_and_stays_bounded)
{
    SKIP_WITHOUT_GPU();
    // 4x4 64QAM at low SNR, a 20 MHz slot's worth of vectors four times over (Algorithm
    // 3: several chunks on several streams, which share the call's deadline; the
    // depth-first search: one chunk of three shares). Sanitizer sizes: 2100 vectors of
    // 16QAM at 0-5 dB (one chunk: the kernels are the same).
    const auto b =
        qa::sanitizer_sizes()
            ? qa::make_batch(4, 4, modulation::qam16, 300, 7, 0.0, 5.0, 47)
            : qa::make_batch(4, 4, modulation::qam64, 4 * 1200, 7, 6.0, 10.0, 47);
    const auto sic = reference_sic(b, qr_kind::plain);
    for (const char* variant : { "warp", "block", "se" }) {
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
    // takes the SIC fallback. On the same inputs, each one's bits must equal the CPU
    // PSD's fallback (the same psd_sic code on the CPU's QR) and the independent SIC.
    struct sys {
        modulation mod;
        double snr_lo, snr_hi;
    };
    for (const sys& y : { sys{ modulation::qam64, 6.0, 10.0 },
                          sys{ modulation::qam16, 5.0, 20.0 },
                          sys{ modulation::qpsk, 0.0, 5.0 } })
        for (int sorted : { 0, 1 }) {
            const auto b = qa::make_batch(
                4, 4, y.mod, qa::sanitizer_size(1200, 8), 7, y.snr_lo, y.snr_hi, 53);
            const auto cpu_ref = reference_sic(b, sorted ? qr_kind::sorted : qr_kind::plain);
            auto cpu_det = make_psd(b, "cpu", 1e-3, sorted);
            const result cpu = run_with_stats(*cpu_det, b);
            const size_t cpu_sic = expect_prefix_of_exact(b, cpu, cpu, "cpu", { &cpu_ref });
            ASSERT_EQ(cpu_sic, cpu.stats.size()) << "the CPU started a search after 1 ns";
            const auto& gpu_ref = cpu_ref;
            for (const char* variant : { "warp", "block", "se" }) {
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
                std::vector<const std::vector<uint8_t>*> refs = { &gpu_ref, &cpu.bits };
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
