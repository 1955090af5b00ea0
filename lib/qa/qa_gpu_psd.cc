/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA PSD against the CPU PSD (same algorithm: same bits up to exact metric ties, same
// node counts) and exhaustive ML (ctest label "gpu"); every test skips where there is
// no CUDA device. Under MIMODET_QA_SANITIZER_SIZES (qa_gpu_common.h) the batches are
// smaller, with the same sets, kernels and checks (the long searches that the SE kernels
// spread over tasks included).

#include "detect/backend.h"
#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include "qa_common.h"
#include "qa_gpu_common.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace gr::mimodet;
using core::psd_params;

namespace {

const modulation k_mods[] = { modulation::qpsk, modulation::qam16, modulation::qam64 };

#define SKIP_WITHOUT_GPU()                                                               \
    do {                                                                                 \
        if (gr::mimodet::cuda_device_count() == 0)                                       \
            GTEST_SKIP() << "no CUDA device";                                            \
    } while (0)

struct named_set {
    std::string name;
    psd_params params; //!< empty: the preset
};

detector::sptr make_psd(int n_tx,
                        int n_rx,
                        modulation mod,
                        const std::string& backend,
                        const psd_params& p = {},
                        int sorted_qr = -1,
                        int start_rows = -1)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.psd_start_rows = start_rows;
    // "preset" (empty): the CPU runs the set the CUDA backend picks by default, so that
    // decisions and node counts compare.
    const psd_params q =
        p.lvl.empty()
            ? core::psd_resolve({}, {}, n_tx, constellation::get(mod).pam_order())
            : p;
    c.psd_lvl = q.lvl;
    c.psd_exp = q.exp;
    c.sorted_qr = sorted_qr;
    c.psd_node_budget = 0; // the exact search: decisions compare with the CPU's and ML
    return qa::make_counts_as_cuda("psd", n_tx, n_rx, mod, c);
}

// The default (empty parameters: the depth-first set on a sorted QR, the SE kernels on
// the GPU), every applicable Table 2 set, the H100-tuned Algorithm 3 set, the depth-first
// set on the plain QR through Algorithm 3's kernels' parameters.
std::vector<named_set> sets_for(int n_tx, modulation mod)
{
    const int omega = constellation::get(mod).pam_order();
    std::vector<named_set> sets = { { "preset", {} } };
    for (const auto& s : core::psd_table2_configurations())
        if (s.n_tx == n_tx && s.omega == omega)
            sets.push_back({ s.name, s.params });
    sets.push_back({ "h100-alg3", core::psd_gpu_preset(n_tx, omega) });
    sets.push_back({ "cpu-tuned", core::psd_cpu_tuned(n_tx) });
    return sets;
}

//! Seed of set j of modulation k_mods[m] in a sweep over k_mods x sets_for(n_tx, .) whose
//! seeds count up from base: each modulation's sets continue where the last one's ended.
uint64_t sweep_seed(uint64_t base, int n_tx, int m, size_t j)
{
    for (int i = 0; i < m; ++i)
        base += sets_for(n_tx, k_mods[i]).size();
    return base + j + 1;
}

int count_different(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int nb)
{
    int n = 0;
    for (size_t v = 0; v < a.size() / nb; ++v)
        n +=
            !std::equal(a.begin() + v * nb, a.begin() + (v + 1) * nb, b.begin() + v * nb);
    return n;
}

std::string name(int nt, int nr, modulation mod, const std::string& set, int sorted_qr)
{
    return std::to_string(nt) + "x" + std::to_string(nr) + " " + to_string(mod) + " " +
           set + (sorted_qr == 1 ? " sorted-qr" : "");
}

/*!
 * Whether the CUDA PSD runs p (empty: the default) on the SE kernels (psd_se_cuda.cu):
 * the depth-first set, unless MIMODET_PSD_KERNEL forces one of Algorithm 3's kernels.
 * Those count a long search's work as spread over tasks, which depends on the schedule:
 * only short searches (fewer expanded nodes on the CPU than qa::psd_se_spread_nodes)
 * have the CPU's counts.
 */
bool on_se_kernels(const psd_params& p, int n_tx, modulation mod)
{
    const int omega = constellation::get(mod).pam_order();
    return !qa::psd_alg3_forced() &&
           core::psd_is_depth_first(p.lvl.empty() ? core::psd_resolve({}, {}, n_tx, omega)
                                                  : p);
}

//! Node counts of vector v that must equal the CPU's (see on_se_kernels); a vector the
//! enumeration decided (psd_se_enumerate, 4x4 QPSK) has fixed ones.
bool counts_comparable(bool se, const vector_stats& cpu)
{
    const bool enumerated = cpu.expanded == core::psd_se_enumerated_expanded(8, 2) &&
                            cpu.evaluated == core::psd_se_enumerated_evaluated(8, 2);
    return !se || cpu.expanded < qa::psd_se_spread_nodes() || enumerated;
}

/*!
 * GPU and CPU agree except where both decisions have the same metric (1e-9 relative),
 * checked in both directions. Node counts: the GPU's QR (Gram-Schmidt) gives the CPU's
 * Householder R up to rounding, so the traversal is the CPU's except where a pruning
 * comparison or a sort order is decided within rounding: with the plain QR at most 1 in
 * 10^4 vectors may differ. The sorted QR picks among columns of equal norm (the two real
 * columns of one antenna have the same norm) by rounding, so its counts are not compared.
 */
void expect_same_as_cpu(const qa::batch& b,
                        const psd_params& p,
                        int sorted_qr,
                        const std::string& what)
{
    auto gpu = make_psd(b.n_tx, b.n_rx, b.mod, "cuda", p, sorted_qr);
    auto cpu = make_psd(b.n_tx, b.n_rx, b.mod, "cpu", p, sorted_qr);
    ASSERT_EQ(gpu->backend(), "cuda") << what;
    const size_t n_vec = static_cast<size_t>(b.n_mat) * b.n_sym;
    std::vector<uint8_t> g(b.bits.size()), c(b.bits.size());
    std::vector<vector_stats> sg(n_vec), sc(n_vec);
    gpu->detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), g.data(), sg.data());
    cpu->detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), c.data(), sc.data());
    for (uint8_t x : g)
        ASSERT_LE(x, 1) << what;
    EXPECT_EQ(qa::count_non_ml(b, g, c, 1e-9), 0) << what << ": GPU worse than CPU";
    EXPECT_EQ(qa::count_non_ml(b, c, g, 1e-9), 0) << what << ": CPU worse than GPU";
    size_t stats_differ = 0;
    const bool se = on_se_kernels(p, b.n_tx, b.mod);
    for (size_t v = 0; v < n_vec; ++v) {
        ASSERT_GE(sg[v].expanded, 1u) << what;
        if (counts_comparable(se, sc[v]))
            stats_differ +=
                sg[v].expanded != sc[v].expanded || sg[v].evaluated != sc[v].evaluated;
    }
    // 1 in 10^4; rounded up for the sanitizer sizes' batches of a few hundred vectors.
    const size_t allowed = qa::sanitizer_sizes() ? (n_vec + 9999) / 10000 : n_vec / 10000;
    if (sorted_qr != 1)
        EXPECT_LE(stats_differ, allowed) << what << ": node counts differ";
    const int nb = b.n_tx * static_cast<int>(b.mod);
    std::printf("%s: %zu vectors, %d differ (metric ties), %zu with other node counts\n",
                what.c_str(),
                n_vec,
                count_different(g, c, nb),
                stats_differ);
}

void expect_ml(const qa::batch& b, const psd_params& p, int sorted_qr, const std::string& what)
{
    auto gpu = make_psd(b.n_tx, b.n_rx, b.mod, "cuda", p, sorted_qr);
    auto ml = qa::make("ml", b.n_tx, b.n_rx, b.mod);
    const auto g = qa::run_bits(*gpu, b), m = qa::run_bits(*ml, b);
    EXPECT_EQ(qa::count_non_ml(b, g, m, 1e-9), 0) << what << ": not ML";
    EXPECT_EQ(qa::count_non_ml(b, m, g, 1e-9), 0) << what << ": better than ML?";
}

/*!
 * A sweep's batch: n_mat matrices of 7 symbols over 0-30 dB. With the sanitizer sizes, a
 * heavy set (Algorithm 3 at 64QAM, 16 levels at 8x8: sorts of thousands of entries per
 * iteration) gets one symbol per matrix at 20-30 dB: its kernel instantiation and sort
 * sizes come from the set, not from the input, so the tool still runs every one, over
 * fewer iterations.
 */
qa::batch sweep_batch(int nt, int nr, modulation mod, int n_mat, uint64_t seed, bool heavy)
{
    if (heavy && qa::sanitizer_sizes())
        return qa::make_batch(nt, nr, mod, n_mat, 1, 20.0, 30.0, seed);
    return qa::make_batch(nt, nr, mod, n_mat, 7, 0.0, 30.0, seed);
}

} // namespace

TEST(gpu_psd, two_by_two_matches_cpu_and_ml)
{
    SKIP_WITHOUT_GPU();
    // 15000 matrices x 7 symbols (one LTE slot per subcarrier) over 0-30 dB.
    uint64_t seed = 100;
    for (auto mod : k_mods)
        for (const auto& s : sets_for(2, mod)) {
            const auto b = qa::make_batch(
                2, 2, mod, qa::sanitizer_size(15000, 60), 7, 0.0, 30.0, ++seed);
            expect_same_as_cpu(b, s.params, -1, name(2, 2, mod, s.name, 0));
            expect_ml(b, s.params, -1, name(2, 2, mod, s.name, 0));
        }
}

// The sweeps over parameter sets are one test case per modulation (or per case), so that
// a case stays short under compute-sanitizer, where every kernel instantiation costs.
class gpu_psd_per_mod : public ::testing::TestWithParam<int>
{
};

TEST_P(gpu_psd_per_mod, four_by_four_matches_cpu)
{
    SKIP_WITHOUT_GPU();
    // 15000 x 7 = 105000 vectors per set; 4x4 64QAM at low SNR is expensive on the CPU
    // reference, so there only the default set gets 105000 and the others 3000 x 7.
    const int m = GetParam();
    const modulation mod = k_mods[m];
    const auto sets = sets_for(4, mod);
    for (size_t j = 0; j < sets.size(); ++j) {
        const auto& s = sets[j];
        const bool heavy = mod == modulation::qam64 && !s.params.lvl.empty();
        const int n_mat = heavy ? qa::sanitizer_size(3000, 3) : qa::sanitizer_size(15000, 6);
        const auto b = sweep_batch(4, 4, mod, n_mat, sweep_seed(200, 4, m, j), heavy);
        expect_same_as_cpu(b, s.params, -1, name(4, 4, mod, s.name, 0));
    }
}

TEST(gpu_psd, four_by_four_is_ml)
{
    SKIP_WITHOUT_GPU();
    // Exhaustive ML: all of QPSK's 15000 x 7; 16QAM (65536 candidates) on 3000 x 7.
    uint64_t seed = 300;
    for (auto mod : { modulation::qpsk, modulation::qam16 })
        for (const auto& s : sets_for(4, mod)) {
            const int n_mat = mod == modulation::qpsk ? qa::sanitizer_size(15000, 60)
                                                      : qa::sanitizer_size(3000, 20);
            const auto b = qa::make_batch(4, 4, mod, n_mat, 7, 0.0, 30.0, ++seed);
            expect_ml(b, s.params, -1, name(4, 4, mod, s.name, 0));
        }
}

TEST_P(gpu_psd_per_mod, sorted_qr_matches_cpu)
{
    SKIP_WITHOUT_GPU();
    const int m = GetParam();
    const modulation mod = k_mods[m];
    // Seeds from 400 over 2x2 (every modulation) then 4x4.
    const uint64_t base4 = sweep_seed(400, 2, 3, 0) - 1;
    for (int nt : { 2, 4 }) {
        const auto sets = sets_for(nt, mod);
        for (size_t j = 0; j < sets.size(); ++j) {
            const auto& s = sets[j];
            const int n_mat = nt == 4 && mod == modulation::qam64 ? qa::sanitizer_size(1000, 2)
                                                                 : qa::sanitizer_size(3000, 4);
            const uint64_t seed = sweep_seed(nt == 2 ? 400 : base4, nt, m, j);
            const bool heavy = mod == modulation::qam64 && !s.params.lvl.empty();
            const auto b = sweep_batch(nt, nt, mod, n_mat, seed, heavy);
            expect_same_as_cpu(b, s.params, 1, name(nt, nt, mod, s.name, 1));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(gpu_psd, gpu_psd_per_mod, ::testing::Values(0, 1, 2));

namespace {

struct antenna_case {
    int nt, nr;
    modulation mod;
    psd_params p;
    int n_mat;
};

const antenna_case k_antenna_cases[] = {
    { 1, 1, modulation::qam64, {}, 3000 },
    { 1, 3, modulation::qam16, { { 3, 2, 1 }, { 1, 2 } }, 3000 },
    { 2, 4, modulation::qam16, {}, 3000 },
    { 3, 3, modulation::qam16, {}, 3000 },
    { 3, 5, modulation::qam16, { { 7, 5, 2, 1 }, { 1, 3, 5 } }, 2000 },
    { 4, 4, modulation::qpsk, { { 9, 8, 3, 1 }, { 1, 2, 7 } }, 2000 },
    // Large buffers: a leaf of 8192 entries; sorts of 4096 and 8192 entries (1024
    // threads x 4 and x 8 items; Table 2 configurations 5 and 6 cover x 2 and x 12).
    { 4, 4, modulation::qam16, { { 9, 7, 1 }, { 1, 2 } }, 1000 },
    { 4, 4, modulation::qam64, { { 9, 5, 3, 1 }, { 1, 2, 100 } }, 300 },
    { 4, 4, modulation::qam64, { { 9, 7, 3, 1 }, { 1, 2, 1 } }, 300 },
    { 5, 7, modulation::qpsk, {}, 1000 },
    { 6, 8, modulation::qam16, {}, 200 },
    { 8, 8, modulation::qpsk, {}, 300 },
    { 8, 8, modulation::qpsk, core::psd_cpu_tuned(8), 300 },
};

} // namespace

class gpu_psd_antennas : public ::testing::TestWithParam<int>
{
};

TEST_P(gpu_psd_antennas, other_antenna_counts_and_parameters)
{
    SKIP_WITHOUT_GPU();
    const int i = GetParam();
    const antenna_case& c = k_antenna_cases[i];
    const int n_mat = qa::sanitizer_size(c.n_mat, std::min(c.n_mat, 3));
    const bool heavy = c.mod == modulation::qam64 && !c.p.lvl.empty();
    const auto b = sweep_batch(c.nt, c.nr, c.mod, n_mat, 501 + i, heavy);
    const std::string what = name(c.nt, c.nr, c.mod, core::psd_to_string(c.p.lvl), 0);
    expect_same_as_cpu(b, c.p, -1, what);
    if (c.nt <= 2 || (c.nt <= 4 && c.mod == modulation::qpsk))
        expect_ml(b, c.p, -1, what);
}

INSTANTIATE_TEST_SUITE_P(gpu_psd,
                         gpu_psd_antennas,
                         ::testing::Range(0, int(std::size(k_antenna_cases))));

TEST(gpu_psd, odd_batch_shapes)
{
    SKIP_WITHOUT_GPU();
    uint64_t seed = 600;
    qa::for_each_odd_shape([&](int n_mat, int n_sym) {
        const auto b =
            qa::make_batch(4, 4, modulation::qam16, n_mat, n_sym, 0.0, 30.0, ++seed);
        expect_same_as_cpu(b, {}, -1, "4x4 16qam " + qa::shape_name(n_mat, n_sym));
    });
}

TEST(gpu_psd, singular_channels_give_valid_bits)
{
    SKIP_WITHOUT_GPU();
    for (auto mod : k_mods)
        for (int sorted_qr : { 0, 1 }) {
            auto b = qa::make_batch(
                4, 4, mod, qa::sanitizer_size(60, 12), 7, 10.0, 10.0, 700 + int(mod));
            const int nt = b.n_tx, nr = b.n_rx;
            for (int m = 0; m < b.n_mat; ++m) {
                qa::cf* h = &b.H[static_cast<size_t>(m) * nr * nt];
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
            auto gpu = make_psd(nt, nr, mod, "cuda", {}, sorted_qr);
            std::vector<uint8_t> g;
            ASSERT_NO_THROW(g = qa::run_bits(*gpu, b)) << to_string(mod);
            ASSERT_EQ(g.size(), b.bits.size());
            for (uint8_t x : g)
                ASSERT_LE(x, 1) << to_string(mod);
            // Still a least-squares minimiser up to the rounding of the rank-deficient QR.
            auto cpu = make_psd(nt, nr, mod, "cpu", {}, sorted_qr);
            EXPECT_EQ(qa::count_non_ml(b, g, qa::run_bits(*cpu, b), 1e-6), 0)
                << to_string(mod);
        }
}

TEST(gpu_psd, lane_parallel_preprocessing_equals_one_thread_per_matrix)
{
    SKIP_WITHOUT_GPU();
    // The detector's preprocessing (one lane per real column) against the
    // one-thread-per-matrix kernel: the same operations in the same order, so R, Q^T
    // and the permutation must be equal bit for bit, in every case of
    // qa::expect_lanes_equal_one_thread (random, singular, tied and scaled channels).
    qa::expect_lanes_equal_one_thread(2026, core::psd_cuda_preprocess_differences);
}

TEST(gpu_psd, buffers_are_reused_across_batch_sizes)
{
    SKIP_WITHOUT_GPU();
    const auto mod = modulation::qam16;
    auto gpu = make_psd(4, 4, mod, "cuda");
    auto cpu = make_psd(4, 4, mod, "cpu");
    const auto mid =
        qa::make_batch(4, 4, mod, qa::sanitizer_size(3000, 60), 7, 0.0, 30.0, 801);
    const auto small = qa::make_batch(4, 4, mod, 5, 2, 0.0, 30.0, 802);
    const auto large =
        qa::make_batch(4, 4, mod, qa::sanitizer_size(20000, 200), 7, 0.0, 30.0, 803);
    // Grow, shrink (buffers kept), grow past the first size, then repeat: every answer
    // must be the CPU's and a repeated batch must give identical bits.
    const auto g_mid = qa::run_bits(*gpu, mid);
    const auto g_small = qa::run_bits(*gpu, small);
    const auto g_large = qa::run_bits(*gpu, large);
    const auto g_mid2 = qa::run_bits(*gpu, mid);
    const auto g_small2 = qa::run_bits(*gpu, small);
    EXPECT_EQ(g_mid, g_mid2);
    EXPECT_EQ(g_small, g_small2);
    const std::pair<const qa::batch*, const std::vector<uint8_t>*> runs[] = {
        { &mid, &g_mid }, { &small, &g_small }, { &large, &g_large }
    };
    for (const auto& r : runs) {
        const auto c = qa::run_bits(*cpu, *r.first);
        EXPECT_EQ(qa::count_non_ml(*r.first, *r.second, c, 1e-9), 0);
        EXPECT_EQ(qa::count_non_ml(*r.first, c, *r.second, 1e-9), 0);
    }
    // kernel_seconds re-runs the last batch's kernels.
    EXPECT_GT(gpu->kernel_seconds(2), 0.0);
}

TEST(gpu_psd, stats_match_cpu)
{
    SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(4, 4, modulation::qam16, 30, 7, 5.0, 25.0, 901);
    for (const auto& s : sets_for(4, modulation::qam16)) {
        auto gpu = make_psd(4, 4, modulation::qam16, "cuda", s.params);
        auto cpu = make_psd(4, 4, modulation::qam16, "cpu", s.params);
        std::vector<uint8_t> out(b.bits.size());
        std::vector<vector_stats> sg(210), sc(210);
        gpu->detect_bits(
            b.H.data(), b.y.data(), 30, 7, b.noise_var.data(), out.data(), sg.data());
        cpu->detect_bits(
            b.H.data(), b.y.data(), 30, 7, b.noise_var.data(), out.data(), sc.data());
        const bool se = on_se_kernels(s.params, 4, modulation::qam16);
        for (int v = 0; v < 210; ++v) {
            if (!counts_comparable(se, sc[v]))
                continue;
            EXPECT_EQ(sg[v].expanded, sc[v].expanded) << s.name << " vector " << v;
            EXPECT_EQ(sg[v].evaluated, sc[v].evaluated) << s.name << " vector " << v;
        }
        // Null stats are fine too.
        gpu->detect_bits(
            b.H.data(), b.y.data(), 30, 7, b.noise_var.data(), out.data(), nullptr);
    }
}

TEST(gpu_psd, configuration_and_interface)
{
    SKIP_WITHOUT_GPU();
    // Hard output only.
    auto gpu = make_psd(2, 2, modulation::qpsk, "cuda");
    EXPECT_FALSE(gpu->soft());
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 4, 2, 20.0, 20.0, 1001);
    EXPECT_THROW(qa::run_llr(*gpu, b), std::logic_error);
    // "auto" picks the GPU where it can.
    EXPECT_EQ(make_psd(4, 4, modulation::qam16, "auto")->backend(), "cuda");
    // An intermediate buffer beyond the block sort (8^5 = 32768 > 12288 entries): "cuda"
    // refuses with a message, "auto" falls back to the CPU.
    const psd_params big{ { 9, 4, 1 }, { 1, 1 } };
    EXPECT_THROW(make_psd(4, 4, modulation::qam64, "cuda", big), std::invalid_argument);
    EXPECT_EQ(make_psd(4, 4, modulation::qam64, "auto", big)->backend(), "cpu");
    // The parameter rules are the shared ones (psd_params.h).
    const psd_params bad{ { 5, 2, 1 }, { 2, 4 } }; // exp_0 must be 1
    EXPECT_THROW(make_psd(2, 2, modulation::qpsk, "cuda", bad), std::invalid_argument);
    EXPECT_THROW(make_psd(2, 2, modulation::qpsk, "auto", bad), std::invalid_argument);
}

namespace {

//! Forces one of the CUDA PSD's Algorithm 3 kernels (MIMODET_PSD_KERNEL) for one scope.
class kernel_override : public qa::env_override
{
public:
    explicit kernel_override(const char* variant)
        : qa::env_override("MIMODET_PSD_KERNEL", variant)
    {
    }
};

//! Bits and node counts of the CUDA PSD with the variant forced.
void run_variant(const char* variant,
                 const qa::batch& b,
                 const psd_params& p,
                 std::vector<uint8_t>& bits,
                 std::vector<vector_stats>& stats)
{
    const kernel_override force(variant);
    auto gpu = make_psd(b.n_tx, b.n_rx, b.mod, "cuda", p);
    ASSERT_EQ(gpu->backend(), "cuda") << variant;
    bits.assign(b.bits.size(), 0);
    stats.assign(static_cast<size_t>(b.n_mat) * b.n_sym, vector_stats{});
    gpu->detect_bits(b.H.data(),
                     b.y.data(),
                     b.n_mat,
                     b.n_sym,
                     b.noise_var.data(),
                     bits.data(),
                     stats.data());
}

} // namespace

// Sets whose levels fit the warp kernel (sorted levels <= 512 entries): every warp
// instantiation (32 x 1, 2, 4 rank sort; 32 x 8, 16 merge sort) and leaf-only trees.
namespace {

struct warp_case {
    int nt;
    modulation mod;
    psd_params p;
    int n_mat;
};

const warp_case k_warp_cases[] = {
    { 2, modulation::qpsk, {}, 3000 },                                    // leaf only
    { 2, modulation::qam16, {}, 3000 },                                   // leaf 256
    { 2, modulation::qam64, {}, 3000 },                                   // 64 (x 2)
    { 2, modulation::qam64, { { 5, 2, 1 }, { 1, 4 } }, 2000 },            // 512 (x 16)
    { 4, modulation::qpsk, {}, 3000 },                                    // 4, leaf 64
    { 4, modulation::qpsk, { { 9, 8, 3, 1 }, { 1, 2, 7 } }, 3000 },       // 2, 64
    { 4, modulation::qam16, {}, 3000 },                                   // 64 (x 2)
    { 4, modulation::qam16, { { 9, 6, 4, 1 }, { 1, 4, 2 } }, 3000 },      // Table 2 cfg 4
    { 4, modulation::qam16, { { 9, 8, 6, 4, 1 }, { 1, 4, 8, 1 } }, 2000 }, // 128 (x 4)
    { 4, modulation::qam64, {}, 500 },                                    // 256 (x 8)
    { 4, modulation::qam64, { { 9, 6, 4, 3, 1 }, { 1, 8, 16, 2 } }, 500 }, // 512 (x 16)
    { 8, modulation::qpsk, core::psd_cpu_tuned(8), 300 },                 // 16 levels
};

} // namespace

class gpu_psd_warp : public ::testing::TestWithParam<int>
{
};

TEST_P(gpu_psd_warp, warp_kernel_matches_block_kernel_and_cpu)
{
    SKIP_WITHOUT_GPU();
    // Warp and block kernels run the same traversal on the same R: identical bits and
    // node counts; both are checked against the CPU as above.
    const int i = GetParam();
    const warp_case& c = k_warp_cases[i];
    const int n_mat = qa::sanitizer_size(c.n_mat, std::min(c.n_mat, 3));
    const bool heavy = (c.mod == modulation::qam64 && !c.p.lvl.empty()) || c.nt == 8;
    const auto b = sweep_batch(c.nt, c.nt, c.mod, n_mat, 1101 + i, heavy);
    const std::string what =
        name(c.nt, c.nt, c.mod, c.p.lvl.empty() ? "preset" : core::psd_to_string(c.p.lvl), 0);
    std::vector<uint8_t> wb, bb;
    std::vector<vector_stats> ws, bs;
    run_variant("warp", b, c.p, wb, ws);
    run_variant("block", b, c.p, bb, bs);
    EXPECT_EQ(wb, bb) << what << ": warp and block bits differ";
    size_t differ = 0;
    for (size_t v = 0; v < ws.size(); ++v)
        differ += ws[v].expanded != bs[v].expanded || ws[v].evaluated != bs[v].evaluated;
    EXPECT_EQ(differ, 0u) << what << ": warp and block node counts differ";
    const kernel_override force("warp");
    expect_same_as_cpu(b, c.p, -1, what + " [warp]");
    if (c.nt <= 2 || c.mod == modulation::qpsk)
        expect_ml(b, c.p, -1, what + " [warp]");
}

INSTANTIATE_TEST_SUITE_P(gpu_psd,
                         gpu_psd_warp,
                         ::testing::Range(0, int(std::size(k_warp_cases))));

TEST(gpu_psd, warp_kernel_with_sorted_qr_matches_cpu)
{
    SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(
        4, 4, modulation::qam16, qa::sanitizer_size(2000, 3), 7, 0.0, 30.0, 1199);
    const kernel_override force("warp");
    expect_same_as_cpu(b, {}, 1, name(4, 4, modulation::qam16, "preset [warp]", 1));
}

TEST(gpu_psd, warp_kernel_stats_and_odd_shapes)
{
    SKIP_WITHOUT_GPU();
    const kernel_override force("warp");
    // Exact node counts per vector.
    const auto b = qa::make_batch(4, 4, modulation::qam16, 30, 7, 5.0, 25.0, 1201);
    auto gpu = make_psd(4, 4, modulation::qam16, "cuda");
    auto cpu = make_psd(4, 4, modulation::qam16, "cpu");
    std::vector<uint8_t> out(b.bits.size());
    std::vector<vector_stats> sg(210), sc(210);
    gpu->detect_bits(b.H.data(), b.y.data(), 30, 7, b.noise_var.data(), out.data(), sg.data());
    cpu->detect_bits(b.H.data(), b.y.data(), 30, 7, b.noise_var.data(), out.data(), sc.data());
    for (int v = 0; v < 210; ++v) {
        EXPECT_EQ(sg[v].expanded, sc[v].expanded) << "vector " << v;
        EXPECT_EQ(sg[v].evaluated, sc[v].evaluated) << "vector " << v;
    }
    // Fewer vectors than warps of a block, ragged sizes, several chunks.
    struct shape {
        int n_mat, n_sym;
    };
    const shape shapes[] = {
        { 1, 1 }, { 1, 3 }, { 37, 3 }, { qa::sanitizer_size(100003, 17001), 1 }
    };
    uint64_t seed = 1210;
    for (const auto& s : shapes) {
        const auto bs =
            qa::make_batch(4, 4, modulation::qam16, s.n_mat, s.n_sym, 0.0, 30.0, ++seed);
        expect_same_as_cpu(bs,
                           {},
                           -1,
                           "4x4 16qam [warp] n_mat=" + std::to_string(s.n_mat) +
                               " n_sym=" + std::to_string(s.n_sym));
    }
    // Singular channels: valid bits, still a least-squares minimiser.
    auto sb = qa::make_batch(
        4, 4, modulation::qam16, qa::sanitizer_size(60, 12), 7, 10.0, 10.0, 1220);
    for (int m = 0; m < sb.n_mat; ++m)
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c)
                if (m % 2 == 0 || c == 3)
                    sb.H[static_cast<size_t>(m) * 16 + r * 4 + c] = 0.0f;
    const auto g = qa::run_bits(*make_psd(4, 4, modulation::qam16, "cuda"), sb);
    for (uint8_t x : g)
        ASSERT_LE(x, 1);
    EXPECT_EQ(qa::count_non_ml(sb, g, qa::run_bits(*cpu, sb), 1e-6), 0);
}

namespace {

// Table 2 configuration 6 sorts 12288 entries: beyond the warp kernel.
psd_params table2_config6()
{
    for (const auto& s : core::psd_table2_configurations())
        if (s.name == "table2-config6")
            return s.params;
    return psd_params{};
}

qa::batch config6_batch()
{
    return sweep_batch(4, 4, modulation::qam64, qa::sanitizer_size(200, 2), 1301, true);
}

} // namespace

TEST(gpu_psd, kernel_variant_selection_forced_warp)
{
    SKIP_WITHOUT_GPU();
    // Forced warp: "cuda" refuses configuration 6, "auto" falls back to the CPU.
    const psd_params cfg6 = table2_config6();
    ASSERT_FALSE(cfg6.lvl.empty());
    const kernel_override force("warp");
    EXPECT_THROW(make_psd(4, 4, modulation::qam64, "cuda", cfg6), std::invalid_argument);
    EXPECT_EQ(make_psd(4, 4, modulation::qam64, "auto", cfg6)->backend(), "cpu");
    // A large leaf (8192 entries) is the block's by default, but runs when forced.
    const psd_params big_leaf{ { 9, 7, 1 }, { 1, 2 } };
    const auto bl = qa::make_batch(
        4, 4, modulation::qam16, qa::sanitizer_size(300, 2), 7, 0.0, 30.0, 1302);
    expect_same_as_cpu(bl, big_leaf, -1, "4x4 16qam {9, 7, 1} [warp]");
}

TEST(gpu_psd, kernel_variant_selection_forced_block)
{
    SKIP_WITHOUT_GPU();
    const psd_params cfg6 = table2_config6();
    ASSERT_FALSE(cfg6.lvl.empty());
    const auto b = config6_batch();
    const kernel_override force("block");
    expect_same_as_cpu(b, cfg6, -1, "4x4 64qam table2-config6 [block]");
    expect_same_as_cpu(b, {}, -1, "4x4 64qam preset [block]");
}

TEST(gpu_psd, kernel_variant_selection_automatic)
{
    SKIP_WITHOUT_GPU();
    // The automatic choice (block) runs configuration 6; an unknown variant is refused.
    const psd_params cfg6 = table2_config6();
    ASSERT_FALSE(cfg6.lvl.empty());
    {
        const kernel_override force("auto");
        expect_same_as_cpu(config6_batch(), cfg6, -1, "4x4 64qam table2-config6 [auto]");
    }
    const kernel_override force("bogus");
    EXPECT_THROW(make_psd(4, 4, modulation::qpsk, "cuda"), std::invalid_argument);
}

namespace {

//! A batch of the depth-first spreading tests: n_mat matrices of nt x nt, 7 symbols each.
struct se_shape {
    int nt;
    modulation mod;
    double snr_lo, snr_hi;
    int n_mat;

    //! The batch; with the sanitizer sizes n_mat / divisor matrices.
    qa::batch batch(int divisor, uint64_t seed) const
    {
        return qa::make_batch(nt, nt, mod, qa::sanitizer_size(n_mat, n_mat / divisor), 7, snr_lo,
                              snr_hi, seed + nt);
    }
    //! The depth-first set (the CPU's default) on a backend; start_rows as
    //! detector_config::psd_start_rows.
    detector::sptr psd(const std::string& backend, int start_rows = -1) const
    {
        return make_psd(nt, nt, mod, backend, core::psd_cpu_tuned(nt), -1, start_rows);
    }
};

//! One call of the CPU's depth-first set on GPU and CPU: bits and node counts of each.
struct se_result {
    std::vector<uint8_t> g, c;
    std::vector<vector_stats> sg, sc;
};

void detect_se(detector& gpu, detector& cpu, const qa::batch& b, se_result& r)
{
    const size_t n_vec = static_cast<size_t>(b.n_mat) * b.n_sym;
    r.g.assign(b.bits.size(), 7);
    r.c.assign(b.bits.size(), 0);
    r.sg.resize(n_vec);
    r.sc.resize(n_vec);
    gpu.detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), r.g.data(),
                    r.sg.data());
    cpu.detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), r.c.data(),
                    r.sc.data());
}

} // namespace

TEST(gpu_psd, depth_first_rest_of_every_spread_search_decides_as_ml)
{
    SKIP_WITHOUT_GPU();
    // Searches spread after a few nodes (MIMODET_PSD_SE_SPLIT, or MIMODET_PSD_SE_DRAIN
    // once every vector or task of a launch has its thread: these batches have fewer
    // vectors than the first pass has threads): the rest of nearly every search (the
    // children not yet taken at each row of its path) becomes tasks, and the rest of
    // those again, wave after wave. The decisions stay the CPU's, ties included, every
    // vector unflagged; at 16QAM each is also checked against exhaustive ML. 1 spreads a
    // search right after its first leaf. Two spread through the drain rule alone. The
    // last two start from a bound of two rows (psd_start_rows, both backends): their
    // searches spread before their first leaf inside it too, and a vector's tasks then
    // start without a leaf (-1: the default rows). The waves run in one cooperative
    // launch, and in two settings one launch each (MIMODET_PSD_SE_COOPERATIVE 0).
    struct setting {
        const char *split_nodes, *drain_nodes;
        int start_rows;
        const char* cooperative;
    };
    const setting settings[] = { { "1", "65536", -1, "1" },  { "8", "65536", -1, "1" },
                                 { "40", "65536", -1, "1" }, { "65536", "1", -1, "1" },
                                 { "65536", "8", -1, "1" },  { "1", "65536", 2, "1" },
                                 { "65536", "8", 2, "1" },   { "8", "65536", -1, "0" },
                                 { "65536", "8", 2, "0" } };
    // Each setting with the search's rows in registers and in shared memory
    // (MIMODET_PSD_SE_SHARED_ROWS).
    for (const char* shared_rows : { "0", "1" })
        for (const auto& [split_nodes, drain_nodes, start_rows, cooperative] : settings) {
            const qa::env_override rows("MIMODET_PSD_SE_SHARED_ROWS", shared_rows);
            const qa::env_override spread("MIMODET_PSD_SE_SPLIT", split_nodes);
            const qa::env_override drain("MIMODET_PSD_SE_DRAIN", drain_nodes);
            const qa::env_override coop("MIMODET_PSD_SE_COOPERATIVE", cooperative);
            const char* split = std::atoi(split_nodes) < std::atoi(drain_nodes)
                                    ? split_nodes
                                    : drain_nodes;
            for (const se_shape& sh :
                 { se_shape{ 4, modulation::qam16, 0.0, 25.0, 60 },
                   se_shape{ 4, modulation::qam64, 5.0, 25.0, 60 },
                   se_shape{ 2, modulation::qam64, 0.0, 20.0, 100 },
                   se_shape{ 8, modulation::qpsk, 0.0, 20.0, 30 } }) {
                const auto b = sh.batch(6, 1700);
                se_result r;
                detect_se(*sh.psd("cuda", start_rows), *sh.psd("cpu", start_rows), b, r);
                const size_t n_vec = r.sg.size();
                const std::string what = std::string("split ") + split_nodes +
                                         ", drain " + drain_nodes + ", start rows " +
                                         std::to_string(start_rows) + ", cooperative " +
                                         cooperative + ", shared rows " + shared_rows +
                                         ", " + std::to_string(sh.nt) + "x" +
                                         std::to_string(sh.nt) + " " + to_string(sh.mod);
                ASSERT_EQ(r.g, r.c) << what;
                size_t spread = 0;
                for (size_t v = 0; v < n_vec; ++v) {
                    EXPECT_EQ(r.sg[v].truncated, 0u) << what;
                    spread += r.sc[v].expanded > static_cast<uint32_t>(std::atoi(split));
                }
                EXPECT_GT(spread, 0u) << what << ": no search was spread";
                if (sh.mod == modulation::qam16) {
                    auto ml = qa::make("ml", b.n_tx, b.n_rx, b.mod);
                    const auto e = qa::run_bits(*ml, b);
                    EXPECT_EQ(qa::count_non_ml(b, r.g, e, 1e-9), 0) << what << ": not ML";
                    EXPECT_EQ(qa::count_non_ml(b, e, r.g, 1e-9), 0)
                        << what << ": better than ML?";
                }
                std::printf("%s: %zu vectors, %zu searched past the split\n",
                            what.c_str(),
                            n_vec,
                            spread);
            }
        }
}

TEST(gpu_psd, depth_first_kernels_decide_as_the_cpu)
{
    SKIP_WITHOUT_GPU();
    // The depth-first set runs on the SE kernels with the CPU's arithmetic and sorted QR:
    // the same decision for every vector, also for the long searches that the GPU spreads
    // over tasks (low SNR, 64QAM), ties included; the same node counts for the short ones
    // (the GPU counts a spread search's work, which depends on the schedule). 2, 4 and 8
    // antennas cover the three instantiations, each with the search's rows in registers
    // and in shared memory (MIMODET_PSD_SE_SHARED_ROWS), with every vector's z computed
    // before the first pass or by the thread that takes it (MIMODET_PSD_SE_STORED_Z)
    // and with the first pass's decisions written by the decision kernel or by the
    // first pass (MIMODET_PSD_SE_DEFERRED_WRITE), and with the lanes of a warp taking
    // their next vector or task one by one or in groups of 8 or 32
    // (MIMODET_PSD_SE_REFILL; 32: once no lane of the warp searches), and with the
    // vectors whose search ends at its first leaf decided before the first pass or by it
    // (MIMODET_PSD_SE_FIRST_LEAF), and with the kernels after the QR launched as
    // dependent launches or plain ones (MIMODET_PSD_SE_DEPENDENT_LAUNCH). Sanitizer
    // sizes: a tenth of the matrices (the first shape still has about 80 searches of
    // more than 1000 nodes).
    struct setting {
        const char *shared_rows, *stored_z, *deferred, *refill, *first_leaf, *dependent;
    };
    for (const auto& [shared_rows, stored_z, deferred, refill, first_leaf, dependent] :
         { setting{ "0", "1", "1", "8", "1", "1" },
           setting{ "1", "1", "1", "8", "0", "0" },
           setting{ "1", "0", "0", "32", "1", "1" },
           setting{ "1", "1", "0", "1", "1", "0" } })
        for (const se_shape& sh : { se_shape{ 4, modulation::qam64, -5.0, 8.0, 300 },
                                    se_shape{ 4, modulation::qam64, 15.0, 25.0, 600 },
                                    se_shape{ 4, modulation::qam16, 0.0, 25.0, 300 },
                                    se_shape{ 2, modulation::qam64, 0.0, 20.0, 300 },
                                    se_shape{ 8, modulation::qpsk, 0.0, 20.0, 100 } }) {
            const qa::env_override rows("MIMODET_PSD_SE_SHARED_ROWS", shared_rows);
            const qa::env_override z("MIMODET_PSD_SE_STORED_Z", stored_z);
            const qa::env_override write("MIMODET_PSD_SE_DEFERRED_WRITE", deferred);
            const qa::env_override take("MIMODET_PSD_SE_REFILL", refill);
            const qa::env_override leaf("MIMODET_PSD_SE_FIRST_LEAF", first_leaf);
            const qa::env_override launch("MIMODET_PSD_SE_DEPENDENT_LAUNCH", dependent);
            const auto b = sh.batch(10, 1400);
            auto gpu = sh.psd("cuda");
            auto cpu = sh.psd("cpu");
            se_result r;
            for (int call = 0; call < 2; ++call) { // the second call reuses every buffer
                detect_se(*gpu, *cpu, b, r);
                const size_t n_vec = r.sg.size();
                const std::string what =
                    std::to_string(sh.nt) + "x" + std::to_string(sh.nt) + " " +
                    to_string(sh.mod) + " snr " + std::to_string(sh.snr_lo) + " call " +
                    std::to_string(call) + " shared rows " + shared_rows + " stored z " +
                    stored_z + " deferred " + deferred + " refill " + refill +
                    " first leaf " + first_leaf + " dependent " + dependent;
                ASSERT_EQ(r.g, r.c) << what;
                size_t long_searches = 0, differ = 0;
                for (size_t v = 0; v < n_vec; ++v) {
                    EXPECT_EQ(r.sg[v].truncated, 0u) << what;
                    long_searches += r.sc[v].expanded >= 1000;
                    if (counts_comparable(true, r.sc[v]))
                        differ += r.sg[v].expanded != r.sc[v].expanded ||
                                  r.sg[v].evaluated != r.sc[v].evaluated;
                }
                EXPECT_EQ(differ, 0u) << what;
                if (sh.mod == modulation::qam64 && sh.nt == 4 && sh.snr_lo < 0)
                    EXPECT_GE(long_searches, 20u)
                        << what << ": the long searches were not exercised";
                std::printf("%s: %zu vectors, %zu with more than 1000 nodes\n",
                            what.c_str(),
                            n_vec,
                            long_searches);
            }
        }
}

TEST(gpu_psd, depth_first_large_calls_decide_as_the_cpu)
{
    SKIP_WITHOUT_GPU();
    // A call of more than 16384 vectors is cut into chunks: by default three streams'
    // shares of the call (here one chunk, its inputs copied in three pieces), with
    // MIMODET_CHUNK_SHARES=1 or 2 a stream's share or two (three chunks, two), with
    // MIMODET_PSD_SE_CHUNK many small ones or one of more vectors than an H100 holds
    // first-pass threads (threads then take several vectors each). The same decisions
    // as the CPU, and the same node counts for the searches that do not spread, with
    // the rows in shared memory (16QAM: the default) and in registers.
    // Sanitizer sizes: one chunk of a tenth of the matrices.
    const se_shape sh{ 4, modulation::qam16, 5.0, 25.0, 14000 };
    const auto b = sh.batch(10, 2300);
    const size_t n_vec = static_cast<size_t>(b.n_mat) * b.n_sym;
    struct split {
        const char* chunk;
        const char* shares;
    };
    for (const char* shared_rows : { "", "0" })
        for (const split sp : { split{ "", "" },
                                split{ "", "1" },
                                split{ "", "2" },
                                split{ "4096", "" },
                                split{ "200000", "" } }) {
            const qa::env_override rows("MIMODET_PSD_SE_SHARED_ROWS", shared_rows);
            const qa::env_override chunks("MIMODET_PSD_SE_CHUNK", sp.chunk);
            const qa::env_override shares("MIMODET_CHUNK_SHARES", sp.shares);
            se_result r;
            detect_se(*sh.psd("cuda"), *sh.psd("cpu"), b, r);
            const std::string what = std::string("chunk '") + sp.chunk + "', shares '" +
                                     sp.shares + "', shared rows '" + shared_rows +
                                     "', " + std::to_string(n_vec) + " vectors";
            ASSERT_EQ(r.g, r.c) << what;
            size_t differ = 0;
            for (size_t v = 0; v < n_vec; ++v) {
                EXPECT_EQ(r.sg[v].truncated, 0u) << what;
                if (counts_comparable(true, r.sc[v]))
                    differ += r.sg[v].expanded != r.sc[v].expanded ||
                              r.sg[v].evaluated != r.sc[v].evaluated;
            }
            EXPECT_EQ(differ, 0u) << what;
        }
}

TEST(gpu_psd, enumeration_decides_as_the_cpu)
{
    SKIP_WITHOUT_GPU();
    // Trees of at most 256 leaves with a bound over every row (the CUDA default at 2x2
    // and 4x4 QPSK and 2x2 16QAM; the other instantiations' given by value: 1x1 and 3x3
    // QPSK, 1x1 16QAM, 1x1 64QAM): the enumeration kernel decides the vectors whose least
    // metric stands out, and the first pass searches the near-ties,
    // each in one thread. On rank-deficient channels (all zero; column 1 a copy of column
    // 0: ties) besides Rayleigh ones at 0-30 dB, every vector's bits and node counts
    // equal the CPU's with the same setting, and both ways are taken.
    const std::pair<int, modulation> shapes[] = {
        { 1, modulation::qpsk }, { 2, modulation::qpsk },  { 3, modulation::qpsk },
        { 4, modulation::qpsk }, { 1, modulation::qam16 }, { 2, modulation::qam16 },
        { 1, modulation::qam64 }
    };
    for (const auto& [nt, mod] : shapes) {
        const std::string what =
            std::to_string(nt) + "x" + std::to_string(nt) + " " + to_string(mod);
        const int N = 2 * nt, P = constellation::get(mod).pam_order();
        auto b = qa::make_batch(
            nt, nt, mod, qa::sanitizer_size(3000, 60), 7, 0.0, 30.0, 4400 + nt);
        qa::make_rank_deficient(b, 40);
        // The default where it is this (the CUDA backend's), else given.
        const int rows = core::psd_start_rows(-1, nt, P, true) == N ? -1 : N;
        auto gpu = make_psd(nt, nt, mod, "cuda", {}, -1, rows);
        auto cpu = make_psd(nt, nt, mod, "cpu", {}, -1, rows);
        se_result r;
        for (int call = 0; call < 2; ++call) { // the second call reuses every buffer
            detect_se(*gpu, *cpu, b, r);
            ASSERT_EQ(r.g, r.c) << what;
            size_t decided = 0, searched = 0, differ = 0;
            for (size_t v = 0; v < r.sg.size(); ++v) {
                EXPECT_EQ(r.sg[v].truncated, 0u) << what;
                differ += r.sg[v].expanded != r.sc[v].expanded ||
                          r.sg[v].evaluated != r.sc[v].evaluated;
                const bool enumerated =
                    r.sc[v].expanded == core::psd_se_enumerated_expanded(N, P) &&
                    r.sc[v].evaluated == core::psd_se_enumerated_evaluated(N, P);
                (enumerated ? decided : searched) += 1;
            }
            EXPECT_EQ(differ, 0u) << what;
            EXPECT_GT(decided, r.sg.size() / 2) << what;
            EXPECT_GE(searched, 10u * b.n_sym) << what; // the all-zero channels at least
            std::printf("%s call %d: %zu vectors, %zu decided by the enumeration, %zu "
                        "searched\n",
                        what.c_str(),
                        call,
                        r.sg.size(),
                        decided,
                        searched);
        }
        auto ml = qa::make("ml", nt, nt, mod);
        const auto e = qa::run_bits(*ml, b);
        EXPECT_EQ(qa::count_non_ml(b, r.g, e, 1e-9), 0) << what << ": not ML";
    }
}

TEST(gpu_psd, starting_radius_is_the_cpus)
{
    // psd_radius > 0 is the CPU's: backend cuda refuses it naming the parameter, backend
    // auto takes the CPU; -1 and 0 run on the GPU.
    SKIP_WITHOUT_GPU();
    detector_config c;
    c.n_tx = c.n_rx = 4;
    c.mod = modulation::qam64;
    c.backend = backend_kind::cuda;
    c.psd_radius = 1.5;
    try {
        qa::make("psd", 4, 4, modulation::qam64, c);
        ADD_FAILURE() << "psd_radius 1.5 accepted by backend cuda";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("psd_radius"), std::string::npos)
            << e.what();
    }
    c.backend = backend_kind::automatic;
    EXPECT_EQ(qa::make("psd", 4, 4, modulation::qam64, c)->backend(), "cpu");
    c.backend = backend_kind::cuda;
    for (const double ok : { -1.0, 0.0 }) {
        c.psd_radius = ok;
        EXPECT_EQ(qa::make("psd", 4, 4, modulation::qam64, c)->backend(), "cuda");
    }
}
