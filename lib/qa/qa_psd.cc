/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// PSD: parameter validation, the paper's parameter sets, and exact ML against the
// exhaustive search for every applicable set.

#include "detect/kernel.h"
#include "detect/psd/psd_params.h"
#include "detect/psd/psd_se.h"
#include "detect/psd/psd_se_cpu.h"
#include "detect/qr_lanes.h"
#include "qa_common.h"
#include <algorithm>
#include <gtest/gtest.h>
#include <limits>
#include <stdexcept>
#include <tuple>

using namespace gr::mimodet;
using core::psd_params;

namespace gr {
namespace mimodet {
namespace core {
// Defined in psd.cc: forces the generic Algorithm 3 path for the depth-first set.
std::unique_ptr<cpu_kernel> make_psd_kernel(const detector_config& cfg, bool force_generic);
} // namespace core
} // namespace mimodet
} // namespace gr

namespace {

int omega_of(modulation m) { return constellation::get(m).pam_order(); }

detector_config psd_config(const psd_params& p, bool sorted_qr = false)
{
    detector_config cfg;
    cfg.psd_lvl = p.lvl;
    cfg.psd_exp = p.exp;
    cfg.sorted_qr = sorted_qr ? 1 : 0;
    cfg.psd_node_budget = 0; // the exact search, compared with exhaustive ML
    return cfg;
}

bool valid_for(const psd_params& p, int n_tx, int omega)
{
    try {
        core::validate_psd_params(p, n_tx, omega);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

struct named_set {
    std::string name;
    psd_params params;
};

// Every Table 2 / Table 5 set whose N matches, the CPU-tuned set and the default (empty).
std::vector<named_set> sets_for(int n_tx)
{
    std::vector<named_set> sets;
    for (const auto* table : { &core::psd_table2_configurations(),
                               &core::psd_table5_presets(),
                               &core::psd_gpu_presets() })
        for (const auto& s : *table)
            if (s.n_tx == n_tx)
                sets.push_back({ s.name, s.params });
    sets.push_back({ "cpu-tuned", core::psd_cpu_tuned(n_tx) });
    sets.push_back({ "default", {} });
    return sets;
}

void expect_valid_bits(const std::vector<uint8_t>& bits)
{
    for (auto b : bits)
        ASSERT_LE(b, 1);
}

} // namespace

TEST(psd_params, paper_sets_are_valid)
{
    for (const auto* table : { &core::psd_table2_configurations(),
                               &core::psd_table5_presets(),
                               &core::psd_gpu_presets() })
        for (const auto& s : *table)
            EXPECT_NO_THROW(core::validate_psd_params(s.params, s.n_tx, s.omega)) << s.name;
    // Table 2's eval rows, where they agree with eval_x = exp_(x-1) |Omega|^(lvl diff).
    const auto c4 = core::psd_table2_configurations()[3];
    EXPECT_EQ(core::psd_eval(c4.params, c4.omega), (std::vector<int64_t>{ 64, 64, 128 }));
    const auto c6 = core::psd_table2_configurations()[5];
    EXPECT_EQ(core::psd_eval(c6.params, c6.omega),
              (std::vector<int64_t>{ 64, 16, 12288, 32 }));
    const auto t5 = core::psd_preset(4, 8);
    EXPECT_EQ(t5.lvl, (std::vector<int>{ 9, 7, 5, 3, 1 }));
    EXPECT_EQ(t5.exp, (std::vector<int>{ 1, 4, 4, 2 }));
    EXPECT_EQ(core::psd_gpu_preset(3, 4).lvl, core::psd_preset(3, 4).lvl);
}

TEST(psd_params, defaults_and_cpu_tuned)
{
    for (int n_tx = 1; n_tx <= 8; ++n_tx)
        for (int omega : { 2, 4, 8 }) {
            EXPECT_NO_THROW(core::validate_psd_params(core::psd_preset(n_tx, omega), n_tx, omega));
            EXPECT_NO_THROW(core::validate_psd_params(core::psd_cpu_tuned(n_tx), n_tx, omega));
        }
    EXPECT_TRUE(core::psd_is_depth_first(core::psd_cpu_tuned(4)));
    EXPECT_FALSE(core::psd_is_depth_first(core::psd_preset(4, 4)));
    EXPECT_EQ(core::psd_default_params(3).lvl, (std::vector<int>{ 7, 5, 3, 1 }));
    // Empty parameters resolve to the depth-first set (both backends), which runs on a
    // sorted QR by default; the paper's sets and the H100 sets keep the plain QR.
    const auto r = core::psd_resolve({}, {}, 2, 8);
    EXPECT_EQ(r.lvl, (std::vector<int>{ 5, 4, 3, 2, 1 }));
    EXPECT_EQ(r.exp, (std::vector<int>{ 1, 1, 1, 1 }));
    EXPECT_TRUE(core::psd_uses_sorted_qr(-1, r));
    EXPECT_FALSE(core::psd_uses_sorted_qr(0, r));
    EXPECT_FALSE(core::psd_uses_sorted_qr(-1, core::psd_preset(2, 8)));
    for (int omega : { 2, 4, 8 }) {
        const auto r44 = core::psd_resolve({}, {}, 4, omega);
        EXPECT_TRUE(core::psd_is_depth_first(r44)) << omega;
        EXPECT_EQ(r44.lvl, core::psd_cpu_tuned(4).lvl) << omega;
        EXPECT_FALSE(core::psd_uses_sorted_qr(-1, core::psd_gpu_preset(4, omega)))
            << omega;
    }
    EXPECT_TRUE(core::psd_uses_sorted_qr(1, core::psd_preset(2, 8)));
}

TEST(psd_params, invalid_parameters_throw)
{
    struct bad {
        std::vector<int> lvl, exp;
        const char* what;
    };
    // 2x2 16QAM: N = 4, |Omega| = 4.
    const std::vector<bad> cases = {
        { { 5 }, {}, "lvl_nr = 0" },                            // 0 < lvl_nr
        { { 5, 4, 3, 2, 1, 0 }, { 1, 1, 1, 1, 1 }, "lvl_nr > N" }, // lvl_nr <= N
        { { 4, 2, 1 }, { 1, 4 }, "lvl_0 != N+1" },
        { { 6, 2, 1 }, { 1, 4 }, "lvl_0 != N+1 (above)" },
        { { 5, 3, 3, 1 }, { 1, 1, 1 }, "not strictly decreasing" },
        { { 5, 2, 3, 1 }, { 1, 1, 1 }, "increasing" },
        { { 5, 3, 2 }, { 1, 1 }, "lvl_nr != 1" },
        { { 5, 2, 1 }, { 2, 4 }, "exp_0 != 1" },
        { { 5, 2, 1 }, { 1, 0 }, "exp_x < 1" },
        { { 5, 2, 1 }, { 1, 65 }, "exp_x > eval_x" },
        { { 5, 2, 1 }, { 1 }, "exp too short" },
        { { 5, 2, 1 }, { 1, 4, 1 }, "exp too long" },
        { { 5, 2, 1 }, {}, "exp missing" },
    };
    for (const auto& c : cases) {
        auto cfg = psd_config({ c.lvl, c.exp });
        EXPECT_THROW(qa::make("psd", 2, 2, modulation::qam16, cfg), std::invalid_argument)
            << c.what;
    }
    // Buffer limit: 4x4 64QAM with a single evaluated level needs 8^8 entries.
    EXPECT_THROW(qa::make("psd", 4, 4, modulation::qam64, psd_config({ { 9, 1 }, { 1 } })),
                 std::invalid_argument);
    // The message names the constraint.
    try {
        qa::make("psd", 2, 2, modulation::qam16, psd_config({ { 5, 2, 1 }, { 1, 65 } }));
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("exp_x <= eval_x"), std::string::npos) << e.what();
    }
}

class psd_equals_ml
    : public ::testing::TestWithParam<std::tuple<int, modulation>>
{
};

TEST_P(psd_equals_ml, every_applicable_parameter_set)
{
    const int n_tx = std::get<0>(GetParam());
    const modulation mod = std::get<1>(GetParam());
    const int omega = omega_of(mod);
    const auto b = qa::make_batch(n_tx, n_tx, mod, 2000, 1, 0, 30, 1000 + n_tx * 10 + omega);
    auto ml = qa::make("ml", n_tx, n_tx, mod);
    const auto ml_bits = qa::run_bits(*ml, b);
    int tested = 0;
    for (const auto& s : sets_for(n_tx))
        for (bool sorted_qr : { false, true }) {
        if (!s.params.lvl.empty() && !valid_for(s.params, n_tx, omega))
            continue;
        SCOPED_TRACE(s.name + " lvl=" + core::psd_to_string(s.params.lvl) +
                     " exp=" + core::psd_to_string(s.params.exp) +
                     (sorted_qr ? " sorted QR" : " Householder QR"));
        auto psd = qa::make("psd", n_tx, n_tx, mod, psd_config(s.params, sorted_qr));
        std::vector<uint8_t> bits(b.bits.size());
        std::vector<vector_stats> stats(static_cast<size_t>(b.n_mat) * b.n_sym);
        psd->detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(),
                         bits.data(), stats.data());
        expect_valid_bits(bits);
        EXPECT_EQ(qa::count_non_ml(b, bits, ml_bits), 0);
        for (const auto& st : stats) {
            ASSERT_GT(st.expanded, 0u);
            ASSERT_GE(st.evaluated, st.expanded);
        }
        ++tested;
    }
    // 2x2: Table 2 configurations 1-3, three Table 5 rows, CPU-tuned, default; 4x4:
    // configurations 4-6, three Table 5 rows, CPU-tuned, default; each with both QRs;
    // plus the H100 presets of this n_tx that are valid for this |Omega|.
    int gpu_sets = 0;
    for (const auto& s : core::psd_gpu_presets())
        gpu_sets += s.n_tx == n_tx && valid_for(s.params, n_tx, omega);
    EXPECT_EQ(tested, 16 + 2 * gpu_sets);
}

INSTANTIATE_TEST_SUITE_P(configs,
                         psd_equals_ml,
                         ::testing::Values(std::make_tuple(2, modulation::qpsk),
                                           std::make_tuple(2, modulation::qam16),
                                           std::make_tuple(2, modulation::qam64),
                                           std::make_tuple(4, modulation::qpsk),
                                           std::make_tuple(4, modulation::qam16)));

namespace {

//! A CPU kernel's bits and counters of matrix m's vectors of b.
void detect_matrix(core::cpu_kernel& kernel,
                   const qa::batch& b,
                   int m,
                   std::vector<uint8_t>& bits,
                   std::vector<vector_stats>& stats,
                   double noise_var = 1.0)
{
    const int nt = b.n_tx, nr = b.n_rx;
    core::MatC H(nr, nt);
    for (int r = 0; r < nr; ++r)
        for (int c = 0; c < nt; ++c)
            H(r, c) = core::cd(b.H[(static_cast<size_t>(m) * nr + r) * nt + c]);
    std::vector<core::cd> y(static_cast<size_t>(b.n_sym) * nr);
    for (size_t i = 0; i < y.size(); ++i)
        y[i] = core::cd(b.y[static_cast<size_t>(m) * b.n_sym * nr + i]);
    bits.assign(static_cast<size_t>(b.n_sym) * nt * static_cast<int>(b.mod), 0);
    stats.assign(b.n_sym, vector_stats{});
    kernel.detect(H, y.data(), b.n_sym, noise_var, bits.data(), nullptr, stats.data());
}

} // namespace

TEST(psd, depth_first_path_matches_generic_algorithm)
{
    // The specialised depth-first path must visit exactly what Algorithm 3 visits (both
    // from an infinite radius: no starting bound, no starting radius).
    for (auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        detector_config cfg = psd_config(core::psd_cpu_tuned(4), mod == modulation::qam16);
        cfg.n_tx = 4;
        cfg.n_rx = 4;
        cfg.mod = mod;
        cfg.psd_start_rows = 0;
        cfg.psd_radius = 0.0;
        auto fast = core::make_psd_kernel(cfg, false);
        auto generic = core::make_psd_kernel(cfg, true);
        const auto b = qa::make_batch(4, 4, mod, 200, 3, 0, 30, 77);
        std::vector<uint8_t> bf, bg;
        std::vector<vector_stats> sf, sg;
        for (int m = 0; m < b.n_mat; ++m) {
            detect_matrix(*fast, b, m, bf, sf);
            detect_matrix(*generic, b, m, bg, sg);
            ASSERT_EQ(bf, bg) << to_string(mod) << " matrix " << m;
            for (int s = 0; s < b.n_sym; ++s) {
                ASSERT_EQ(sf[s].expanded, sg[s].expanded) << to_string(mod) << " matrix " << m;
                ASSERT_EQ(sf[s].evaluated, sg[s].evaluated);
            }
        }
    }
}

namespace {

//! One real-valued problem z = R s + noise for psd_se.h's search (dense, stride 1).
struct se_instance {
    int N = 0, P = 0;
    std::vector<double> R, z, w, value;

    core::psd_se_problem problem() const
    {
        return { R.data(), z.data(), value.data(), w.data(), N, P };
    }
};

//! The search of psd_se.h run to its end, as the CPU PSD runs it (running sums) or as the
//! GPU's kernels do (no running sums, the row index a compile-time constant; NMAX 8).
template <int NMAX, bool gpu_path>
core::psd_se_state<NMAX> se_search(const se_instance& in,
                                   double bound = core::psd_se_inf())
{
    const core::psd_se_problem pb = in.problem();
    core::psd_se_state<NMAX> st;
    if constexpr (gpu_path) {
        core::psd_se_begin<NMAX, true>(pb, st, in.N, nullptr, 0.0, bound);
        while (core::psd_se_step<NMAX, true>(pb, st)) {
        }
    } else {
        core::psd_se_partials<NMAX> ps;
        core::psd_se_begin(pb, st, in.N, nullptr, 0.0, bound, ps);
        while (core::psd_se_step(pb, st, ps)) {
        }
    }
    return st;
}

//! Exhaustive search over the P^N leaves with the search's arithmetic (row N-1 first;
//! row k's interference subtracted from the top row down): the least metric (+inf when
//! no metric is a number), the number of leaves that have it and the first of them.
struct se_exhaustive {
    double least = std::numeric_limits<double>::infinity();
    int ties = 0;
    std::vector<uint8_t> best;
};

void se_enumerate(const se_instance& in, int k, double pm, std::vector<uint8_t>& sym,
                  se_exhaustive& out)
{
    const int N = in.N;
    double b = in.z[k];
    for (int j = N - 1; j > k; --j)
        b = b - in.R[k * N + j] * in.value[sym[j]];
    for (int v = 0; v < in.P; ++v) {
        const double e = b - in.R[k * N + k] * in.value[v];
        const double m = pm + e * e;
        sym[k] = static_cast<uint8_t>(v);
        if (k > 0) {
            se_enumerate(in, k - 1, m, sym, out);
        } else if (m < out.least) {
            out.least = m;
            out.ties = 1;
            out.best = sym;
        } else if (m == out.least) {
            ++out.ties;
        }
    }
}

//! The metric of leaf s with the same arithmetic.
double se_leaf_metric(const se_instance& in, const uint8_t* s)
{
    const int N = in.N;
    double pm = 0.0;
    for (int k = N - 1; k >= 0; --k) {
        double b = in.z[k];
        for (int j = N - 1; j > k; --j)
            b = b - in.R[k * N + j] * in.value[s[j]];
        const double e = b - in.R[k * N + k] * in.value[s[k]];
        pm = pm + e * e;
    }
    return pm;
}

//! An 8-level problem for modulation mod (P and the sorted levels set).
se_instance se_problem_of(modulation mod)
{
    const constellation& c = constellation::get(mod);
    se_instance in;
    in.N = 8;
    in.P = c.pam_order();
    in.value = c.pam_levels();
    std::sort(in.value.begin(), in.value.end());
    return in;
}

/*!
 * Draws R (diagonals diag + |gauss|), a random transmitted vector and z = R s + noise
 * (noise_scale times the constellation's scale) into in, then spoils one random row as
 * t % 5 says: 1 R_kk = 0, 2 R_kk denormal (weight +inf), 3 z far outside the
 * constellation, 4 R_kk NaN; 0 none. Returns t % 5.
 */
int se_draw(se_instance& in,
            std::mt19937_64& rng,
            const constellation& c,
            int t,
            double diag,
            double noise_scale)
{
    std::normal_distribution<double> gauss;
    const int N = in.N, P = in.P;
    std::uniform_int_distribution<int> level(0, P - 1), row(0, N - 1);
    in.R.assign(N * N, 0.0);
    in.z.assign(N, 0.0);
    for (int k = 0; k < N; ++k) {
        in.R[k * N + k] = diag + std::abs(gauss(rng));
        for (int j = k + 1; j < N; ++j)
            in.R[k * N + j] = gauss(rng);
    }
    const int special = t % 5, at = row(rng);
    if (special == 1)
        in.R[at * N + at] = 0.0;
    else if (special == 2)
        in.R[at * N + at] = 1e-310;
    else if (special == 4)
        in.R[at * N + at] = std::numeric_limits<double>::quiet_NaN();
    std::vector<int> s(N);
    for (auto& v : s)
        v = level(rng);
    for (int k = 0; k < N; ++k) {
        double acc = noise_scale * c.scale() * gauss(rng);
        for (int j = k; j < N; ++j)
            acc += in.R[k * N + j] * in.value[s[j]];
        in.z[k] = acc;
    }
    if (special == 3)
        in.z[at] = (t % 2 ? 1e8 : -1e8);
    in.w.resize(N);
    for (int k = 0; k < N; ++k)
        in.w[k] = core::psd_se_weight(in.R[k * N + k], 1.0 / c.scale());
    return special;
}

} // namespace

TEST(psd_se, depth_first_search_equals_exhaustive_ml)
{
    // 4x4 16QAM and 64QAM (N = 8 real levels). Besides plain random problems: a row with
    // R_kk = 0 (its weight 0: the search starts at the middle level; the row's symbol
    // does not change the metric, so leaves tie), R_kk so small that its weight
    // overflows to +inf, a row whose z lies far outside the constellation (the estimate
    // clamped beyond the outermost level), and R_kk = NaN (no metric is a number: no
    // leaf). The leaf found has the least metric of all leaves (it is the exhaustive
    // search's leaf where no other has that metric), and the CPU's and the GPU's ways of
    // running the search agree on the leaf and the node counts.
    std::mt19937_64 rng(2026);
    for (const auto mod : { modulation::qam16, modulation::qam64 }) {
        const constellation& c = constellation::get(mod);
        se_instance in = se_problem_of(mod);
        const int N = in.N;
        const int instances = mod == modulation::qam16 ? 400 : 10;
        for (int t = 0; t < instances; ++t) {
            SCOPED_TRACE(to_string(mod) + " instance " + std::to_string(t));
            const int special = se_draw(in, rng, c, t, 0.3, 1.0);
            se_exhaustive ml;
            std::vector<uint8_t> sym(N, 0);
            se_enumerate(in, N - 1, 0.0, sym, ml);
            const auto cpu = se_search<core::psd_se_max_n, false>(in);
            const auto gpu = se_search<8, true>(in);
            EXPECT_EQ(cpu.d2, ml.least);
            if (special == 4) {
                EXPECT_EQ(ml.ties, 0);
                EXPECT_FALSE(cpu.d2 < core::psd_se_inf());
            } else {
                ASSERT_GE(ml.ties, 1);
                EXPECT_EQ(se_leaf_metric(in, cpu.best), cpu.d2);
                if (ml.ties == 1)
                    EXPECT_TRUE(std::equal(ml.best.begin(), ml.best.end(), cpu.best));
            }
            // The CPU's running sums and the GPU's direct sums: the same search.
            EXPECT_EQ(cpu.d2, gpu.d2);
            EXPECT_EQ(cpu.expanded, gpu.expanded);
            EXPECT_EQ(cpu.evaluated, gpu.evaluated);
            if (cpu.d2 < core::psd_se_inf())
                EXPECT_TRUE(std::equal(cpu.best, cpu.best + N, gpu.best));
        }
    }
}

TEST(psd_se, starting_bound_keeps_the_unbounded_decision)
{
    // psd_se_start_bound with 1..3 rows on 4x4 16QAM and 64QAM problems, plain and with
    // the degenerate rows of the test above (R_kk = 0 makes leaves tie: the bounded
    // search must still pick the unbounded one's leaf among them). The bound is its
    // leaf's metric with the search's arithmetic, at least the least metric; the bounded
    // search finds the same leaf with the same metric, expanding no more nodes, and the
    // CPU's and the GPU's ways of running it agree.
    std::mt19937_64 rng(31);
    for (const auto mod : { modulation::qam16, modulation::qam64 }) {
        const constellation& c = constellation::get(mod);
        se_instance in = se_problem_of(mod);
        const int N = in.N, P = in.P;
        int cut = 0;
        for (int t = 0; t < 300; ++t) {
            SCOPED_TRACE(to_string(mod) + " instance " + std::to_string(t));
            // Small diagonals now and then and a noise of 3 scales: long searches, where
            // the bound cuts most.
            const int special = se_draw(in, rng, c, t, t % 3 == 0 ? 0.02 : 0.3, 3.0);
            const auto plain = se_search<core::psd_se_max_n, false>(in);
            for (int rows = 1; rows <= 3; ++rows) {
                SCOPED_TRACE("rows " + std::to_string(rows));
                uint8_t leaf[8] = {};
                uint32_t evaluated = 0;
                const double bound =
                    core::psd_se_start_bound<8>(in.problem(), rows, leaf, evaluated);
                uint8_t leaf_gpu[8] = {};
                uint32_t evaluated_gpu = 0;
                const double bound_gpu = core::psd_se_start_bound<8, true>(
                    in.problem(), rows, leaf_gpu, evaluated_gpu);
                EXPECT_EQ(evaluated, evaluated_gpu);
                if (bound < core::psd_se_inf()) {
                    EXPECT_EQ(bound, bound_gpu);
                    EXPECT_TRUE(std::equal(leaf, leaf + N, leaf_gpu));
                } else {
                    EXPECT_FALSE(bound_gpu < core::psd_se_inf());
                }
                int paths = 1;
                for (int i = 0; i < rows; ++i)
                    paths *= P;
                EXPECT_GE(evaluated, static_cast<uint32_t>(paths * (N - rows)));
                if (special == 4) {
                    EXPECT_FALSE(bound < core::psd_se_inf());
                } else {
                    EXPECT_EQ(bound, se_leaf_metric(in, leaf));
                    EXPECT_GE(bound, plain.d2);
                }
                const auto cpu = se_search<core::psd_se_max_n, false>(in, bound);
                const auto gpu = se_search<8, true>(in, bound);
                EXPECT_EQ(cpu.d2, plain.d2);
                if (plain.d2 < core::psd_se_inf())
                    EXPECT_TRUE(std::equal(plain.best, plain.best + N, cpu.best));
                EXPECT_LE(cpu.expanded, plain.expanded);
                cut += cpu.expanded < plain.expanded;
                EXPECT_EQ(cpu.d2, gpu.d2);
                EXPECT_EQ(cpu.expanded, gpu.expanded);
                EXPECT_EQ(cpu.evaluated, gpu.evaluated);
                if (cpu.d2 < core::psd_se_inf())
                    EXPECT_TRUE(std::equal(cpu.best, cpu.best + N, gpu.best));
            }
        }
        // The bound must prune somewhere, or the test shows nothing.
        EXPECT_GT(cut, 100) << to_string(mod);
    }
}

namespace {

//! The step loop with running sums, stopped as psd.cc stops it: before a step at a row
//! k > 0 once budget path metrics (budget 0: never) are reached. Returns false if
//! stopped.
bool se_step_loop(const se_instance& in,
                  core::psd_se_state<core::psd_se_max_n>& st,
                  double bound,
                  uint32_t evaluated_before,
                  uint32_t budget)
{
    const core::psd_se_problem pb = in.problem();
    core::psd_se_partials<core::psd_se_max_n> ps;
    core::psd_se_begin(pb, st, in.N, nullptr, 0.0, bound, ps);
    st.evaluated += evaluated_before;
    for (;;) {
        if (st.k > 0 && budget != 0 && st.evaluated >= budget)
            return false;
        if (!core::psd_se_step(pb, st, ps))
            return true;
    }
}

//! psd_se_search_cpu for in.N and in.P, stopped in the same way.
template <int N, int P>
bool se_cpu_search(const se_instance& in,
                   core::psd_se_state<core::psd_se_max_n>& st,
                   double bound,
                   uint32_t evaluated_before,
                   uint32_t budget)
{
    const auto stop = [budget](uint32_t evaluated) {
        return budget != 0 && evaluated >= budget;
    };
    return core::psd_se_search_cpu<N, P, true>(
        in.problem(), st, bound, evaluated_before, stop);
}

bool se_cpu_search_n(const se_instance& in,
                     core::psd_se_state<core::psd_se_max_n>& st,
                     double bound,
                     uint32_t evaluated_before,
                     uint32_t budget)
{
    const int key = in.N * 16 + in.P;
    switch (key) {
    case 4 * 16 + 2:
        return se_cpu_search<4, 2>(in, st, bound, evaluated_before, budget);
    case 4 * 16 + 4:
        return se_cpu_search<4, 4>(in, st, bound, evaluated_before, budget);
    case 4 * 16 + 8:
        return se_cpu_search<4, 8>(in, st, bound, evaluated_before, budget);
    case 8 * 16 + 2:
        return se_cpu_search<8, 2>(in, st, bound, evaluated_before, budget);
    case 8 * 16 + 4:
        return se_cpu_search<8, 4>(in, st, bound, evaluated_before, budget);
    case 8 * 16 + 8:
        return se_cpu_search<8, 8>(in, st, bound, evaluated_before, budget);
    default:
        ADD_FAILURE() << "no instance for N " << in.N << " P " << in.P;
        return false;
    }
}

} // namespace

TEST(psd_se, cpu_search_is_the_step_loop)
{
    // psd_se_search_cpu against psd_se_begin and psd_se_step with running sums, 2x2 and
    // 4x4 (N = 4, 8), QPSK to 64QAM, with the degenerate rows of se_draw (ties, a weight
    // of +inf, z far outside, NaN), short and long searches; with no bound, a starting
    // bound, and a bound below the least metric (no leaf inside); to the end and stopped
    // by node budgets. Everything the step loop leaves must be the same: stopped or not,
    // the leaf, its metric, the counters, the row it stopped at and whether work was
    // left inside the sphere.
    std::mt19937_64 rng(77);
    int stopped = 0, no_leaf = 0;
    for (const int N : { 4, 8 })
        for (const auto mod :
             { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
            const constellation& c = constellation::get(mod);
            se_instance in = se_problem_of(mod);
            in.N = N;
            for (int t = 0; t < 150; ++t) {
                SCOPED_TRACE(std::to_string(N) + " levels " + to_string(mod) +
                             " instance " + std::to_string(t));
                se_draw(in, rng, c, t, t % 3 == 0 ? 0.02 : 0.3, t % 2 ? 3.0 : 0.5);
                const auto plain = se_search<core::psd_se_max_n, false>(in);
                uint8_t leaf[core::psd_se_max_n] = {};
                uint32_t start_evaluated = 0;
                const double start_bound = core::psd_se_start_bound<core::psd_se_max_n>(
                    in.problem(), 1, leaf, start_evaluated);
                const double below = plain.d2 < core::psd_se_inf() ? 0.5 * plain.d2 : 0.0;
                for (const double bound : { core::psd_se_inf(), start_bound, below }) {
                    for (const uint32_t budget :
                         { 0u, plain.evaluated / 3 + 1, plain.evaluated / 2 + 7 }) {
                        SCOPED_TRACE("bound " + std::to_string(bound) + " budget " +
                                     std::to_string(budget));
                        core::psd_se_state<core::psd_se_max_n> ref, fast;
                        for (int j = 0; j < core::psd_se_max_n; ++j)
                            ref.best[j] = fast.best[j] = leaf[j];
                        const bool ref_done =
                            se_step_loop(in, ref, bound, start_evaluated, budget);
                        const bool fast_done =
                            se_cpu_search_n(in, fast, bound, start_evaluated, budget);
                        ASSERT_EQ(fast_done, ref_done);
                        stopped += !ref_done;
                        no_leaf += !(ref.d2 < core::psd_se_inf());
                        EXPECT_EQ(fast.d2, ref.d2);
                        EXPECT_TRUE(std::equal(ref.best, ref.best + N, fast.best));
                        EXPECT_EQ(fast.expanded, ref.expanded);
                        EXPECT_EQ(fast.evaluated, ref.evaluated);
                        EXPECT_EQ(fast.k, ref.k);
                        EXPECT_EQ(fast.top, ref.top);
                        EXPECT_EQ(fast.bound, ref.bound);
                        if (!ref_done)
                            EXPECT_EQ(core::psd_se_work_left(in.problem(), fast),
                                      core::psd_se_work_left(in.problem(), ref));
                    }
                }
            }
        }
    // Both the stopped and the leafless cases must occur, or the test shows less.
    EXPECT_GT(stopped, 300);
    EXPECT_GT(no_leaf, 300);
}

TEST(psd_se, first_leaf_decides_where_the_search_ends_at_its_first_leaf)
{
    // psd_se_first_leaf_decides (the CUDA first-leaf kernel's test) against the search
    // without a bound, 1x1 to 4x4 (N = 2..8), QPSK to 64QAM, with se_draw's degenerate
    // rows and noise from far below to far above the levels' spacing: it decides exactly
    // the vectors whose search expands N nodes and finds a leaf (the first), with that
    // leaf; as the GPU compiles it (NMAX 8, unrolled) and as the CPU would (NMAX 16).
    std::mt19937_64 rng(2027);
    int decided = 0, searched = 0;
    for (const int N : { 2, 4, 6, 8 })
        for (const auto mod :
             { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
            const constellation& c = constellation::get(mod);
            se_instance in = se_problem_of(mod);
            in.N = N;
            for (int t = 0; t < 400; ++t) {
                SCOPED_TRACE(std::to_string(N) + " levels " + to_string(mod) +
                             " instance " + std::to_string(t));
                const double noise[] = { 0.01, 0.1, 0.3, 1.0 };
                se_draw(in, rng, c, t, t % 3 == 0 ? 0.02 : 0.5, noise[t % 4]);
                const auto ref = se_search<core::psd_se_max_n, false>(in);
                const bool ends_at_first = ref.expanded == static_cast<uint32_t>(N) &&
                                           ref.d2 < core::psd_se_inf();
                uint8_t narrow[8] = {}, wide[core::psd_se_max_n] = {};
                const bool gpu = core::psd_se_first_leaf_decides<8>(in.problem(), narrow);
                const bool cpu = core::psd_se_first_leaf_decides(in.problem(), wide);
                ASSERT_EQ(gpu, ends_at_first);
                ASSERT_EQ(cpu, ends_at_first);
                if (ends_at_first) {
                    EXPECT_EQ(ref.evaluated, static_cast<uint32_t>(N * in.P));
                    EXPECT_TRUE(std::equal(ref.best, ref.best + N, narrow));
                    EXPECT_TRUE(std::equal(ref.best, ref.best + N, wide));
                }
                decided += ends_at_first;
                searched += !ends_at_first;
            }
        }
    // Both outcomes must be common, or the test shows less.
    EXPECT_GT(decided, 1000);
    EXPECT_GT(searched, 1000);
}

TEST(psd, starting_bound_keeps_decisions_and_cuts_nodes)
{
    // The CPU PSD (depth-first set) with starting bounds of 0..3 rows on the same
    // vectors, 4x4 and 2x2, 0-30 dB: the same bits as with none, never more expanded
    // nodes, and fewer in total.
    for (int n_tx : { 2, 4 })
        for (auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
            SCOPED_TRACE(std::to_string(n_tx) + "x" + std::to_string(n_tx) + " " +
                         to_string(mod));
            detector_config cfg = psd_config(core::psd_cpu_tuned(n_tx), true);
            cfg.n_tx = n_tx;
            cfg.n_rx = n_tx;
            cfg.mod = mod;
            const auto b = qa::make_batch(n_tx, n_tx, mod, 300, 2, 0, 30, 41);
            cfg.psd_start_rows = 0;
            auto plain = core::make_psd_kernel(cfg, false);
            uint64_t plain_expanded = 0;
            std::vector<std::vector<uint8_t>> plain_bits(b.n_mat);
            std::vector<std::vector<vector_stats>> plain_stats(b.n_mat);
            for (int m = 0; m < b.n_mat; ++m) {
                detect_matrix(*plain, b, m, plain_bits[m], plain_stats[m]);
                for (const auto& st : plain_stats[m])
                    plain_expanded += st.expanded;
            }
            for (int rows = 1; rows <= 3; ++rows) {
                cfg.psd_start_rows = rows;
                auto bounded = core::make_psd_kernel(cfg, false);
                uint64_t expanded = 0;
                std::vector<uint8_t> bits;
                std::vector<vector_stats> st;
                for (int m = 0; m < b.n_mat; ++m) {
                    detect_matrix(*bounded, b, m, bits, st);
                    ASSERT_EQ(bits, plain_bits[m]) << "rows " << rows << " matrix " << m;
                    for (int s = 0; s < b.n_sym; ++s) {
                        ASSERT_LE(st[s].expanded, plain_stats[m][s].expanded);
                        expanded += st[s].expanded;
                    }
                }
                EXPECT_LT(expanded, plain_expanded) << "rows " << rows;
            }
        }
}

TEST(psd_se, enumeration_decides_as_the_search)
{
    // psd_se_enumerate on trees of at most 256 leaves (QPSK 2..8 levels, 16QAM 2 and 4,
    // 64QAM 2): plain random problems, the
    // degenerate rows of the tests above (R_kk = 0 ties leaves; a denormal R_kk ties them
    // within rounding; z far outside the constellation; R_kk = NaN), two equal columns
    // (leaves that swap their symbols tie exactly where the two differ) and z exactly on
    // a lattice point (metric 0). Where it decides, its leaf is the search's (from an
    // infinite radius), the search's metric of it the least of all leaves and no other
    // leaf has it; it leaves the ties to the search.
    std::mt19937_64 rng(77);
    const std::pair<int, modulation> shapes[] = {
        { 2, modulation::qpsk }, { 4, modulation::qpsk },  { 6, modulation::qpsk },
        { 8, modulation::qpsk }, { 2, modulation::qam16 }, { 4, modulation::qam16 },
        { 2, modulation::qam64 }
    };
    for (const auto& [N, mod] : shapes) {
        const constellation& c = constellation::get(mod);
        se_instance in = se_problem_of(mod);
        in.N = N;
        const std::string what = to_string(mod) + " N " + std::to_string(N);
        int decided = 0, left = 0;
        for (int t = 0; t < 1500; ++t) {
            SCOPED_TRACE(what + " instance " + std::to_string(t));
            const bool low_noise = t % 7 == 6;
            int special = se_draw(in, rng, c, t, 0.3, low_noise ? 0.0 : 1.0);
            const int kind = (t / 5) % 4;
            if (special == 0 && kind == 1 && N >= 2) {
                // Column N-1 copies column 0 (rows 1..N-1 of it zero): the metric depends
                // on the two symbols' sum only.
                for (int k = 0; k < N; ++k)
                    in.R[k * N + N - 1] = k == 0 ? in.R[0] : 0.0;
                for (int k = 0; k < N; ++k)
                    in.w[k] = core::psd_se_weight(in.R[k * N + k], 1.0 / c.scale());
                special = 5;
            }
            se_exhaustive ml;
            std::vector<uint8_t> sym(N, 0);
            se_enumerate(in, N - 1, 0.0, sym, ml);
            const auto search = se_search<core::psd_se_max_n, false>(in);
            uint8_t leaf[8] = {};
            const bool decides = core::psd_se_enumerate_n(in.problem(), leaf);
            if (special == 4)
                EXPECT_FALSE(decides);
            if (!decides) {
                ++left;
                continue;
            }
            ++decided;
            EXPECT_EQ(ml.ties, 1);
            EXPECT_TRUE(std::equal(leaf, leaf + N, search.best));
            EXPECT_EQ(se_leaf_metric(in, leaf), search.d2);
            EXPECT_EQ(search.d2, ml.least);
            EXPECT_TRUE(std::equal(ml.best.begin(), ml.best.end(), leaf));
        }
        // Both ways are exercised.
        EXPECT_GT(decided, 600) << what;
        EXPECT_GT(left, 300) << what;
    }
}

TEST(psd, enumeration_keeps_decisions)
{
    // The CPU PSD (depth-first set) with a bound over every row, which enumerates the
    // leaves first where they are at most 256, against no bound: the same bits at 0-30
    // dB, on rank-deficient channels (column 1 a copy of column 0: ties) and on all-zero
    // ones. A vector the enumeration decides counts every inner node and leaf; one it
    // leaves to the search counts the leaves and the bound's metrics besides the
    // search's, whose expanded nodes the bound can only cut. Past the deadline, the SIC
    // point.
    const std::pair<int, modulation> shapes[] = {
        { 1, modulation::qpsk }, { 2, modulation::qpsk },  { 3, modulation::qpsk },
        { 4, modulation::qpsk }, { 1, modulation::qam16 }, { 2, modulation::qam16 },
        { 1, modulation::qam64 }
    };
    for (const auto& [n_tx, mod] : shapes) {
        SCOPED_TRACE(std::to_string(n_tx) + "x" + std::to_string(n_tx) + " " +
                     to_string(mod));
        const int N = 2 * n_tx, P = omega_of(mod);
        auto b = qa::make_batch(n_tx, n_tx, mod, 300, 7, 0, 30, 43);
        qa::make_rank_deficient(b, 40);
        detector_config cfg = psd_config(core::psd_cpu_tuned(n_tx), true);
        cfg.n_tx = cfg.n_rx = n_tx;
        cfg.mod = mod;
        cfg.psd_start_rows = 0;
        auto plain = core::make_psd_kernel(cfg, false);
        cfg.psd_start_rows = N;
        auto enumerating = core::make_psd_kernel(cfg, false);
        size_t decided = 0, left = 0;
        for (int m = 0; m < b.n_mat; ++m) {
            std::vector<uint8_t> plain_bits, bits;
            std::vector<vector_stats> plain_stats, st;
            detect_matrix(*plain, b, m, plain_bits, plain_stats);
            detect_matrix(*enumerating, b, m, bits, st);
            ASSERT_EQ(bits, plain_bits) << "matrix " << m;
            for (int s = 0; s < b.n_sym; ++s) {
                EXPECT_EQ(st[s].truncated, 0u);
                if (st[s].expanded == core::psd_se_enumerated_expanded(N, P) &&
                    st[s].evaluated == core::psd_se_enumerated_evaluated(N, P)) {
                    ++decided;
                } else {
                    ++left;
                    EXPECT_LE(st[s].expanded, plain_stats[s].expanded);
                    EXPECT_GT(st[s].evaluated,
                              2 * core::psd_se_enumerated_evaluated(N, P));
                }
            }
        }
        EXPECT_GT(decided, 1500u);
        EXPECT_GE(left, 10u * b.n_sym); // the all-zero channels at least
        // Past the deadline (1 ns) a vector gets the SIC point, flagged, as without the
        // enumeration.
        cfg.psd_deadline_us = 1e-3;
        auto late = core::make_psd_kernel(cfg, false);
        cfg.psd_start_rows = 0;
        auto late_plain = core::make_psd_kernel(cfg, false);
        for (int m = 40; m < 45; ++m) {
            std::vector<uint8_t> bits, plain_bits;
            std::vector<vector_stats> st, plain_st;
            detect_matrix(*late, b, m, bits, st);
            detect_matrix(*late_plain, b, m, plain_bits, plain_st);
            EXPECT_EQ(bits, plain_bits) << "matrix " << m;
            for (const auto& x : st) {
                EXPECT_EQ(x.truncated, 1u);
                EXPECT_EQ(x.evaluated, static_cast<uint32_t>(N));
            }
        }
    }
}

TEST(psd, starting_bound_rows_per_backend)
{
    // Defaults (-1): CUDA at 2x2 and 4x4 QPSK and 2x2 16QAM (every row: the
    // enumeration), nowhere on the CPU.
    EXPECT_EQ(core::psd_start_rows(-1, 4, 2, true), 8);
    EXPECT_EQ(core::psd_start_rows(-1, 8, 2, true), 0);
    EXPECT_EQ(core::psd_start_rows(-1, 2, 2, true), 4);
    EXPECT_EQ(core::psd_start_rows(-1, 3, 2, true), 0);
    EXPECT_EQ(core::psd_start_rows(-1, 2, 4, true), 4); // 2x2 16QAM
    EXPECT_EQ(core::psd_start_rows(-1, 2, 8, true), 0);
    for (int omega : { 4, 8 })
        EXPECT_EQ(core::psd_start_rows(-1, 4, omega, true), 0);
    for (int omega : { 2, 4, 8 })
        EXPECT_EQ(core::psd_start_rows(-1, 4, omega, false), 0);
    // A value applies to both, within N rows and psd_se_max_start_paths paths.
    EXPECT_EQ(core::psd_start_rows(8, 1, 2, false), 2); // N = 2
    EXPECT_EQ(core::psd_start_rows(8, 4, 2, true), 8);  // 256 paths
    EXPECT_EQ(core::psd_start_rows(8, 4, 4, false), 4); // 256 paths
    EXPECT_EQ(core::psd_start_rows(8, 4, 8, true), 3);  // 512 paths
    EXPECT_EQ(core::psd_start_rows(0, 4, 2, true), 0);
    // Outside -1..8: a message naming the parameter, also through the detector.
    for (int bad : { -2, 9 }) {
        EXPECT_THROW(core::psd_start_rows(bad, 4, 2, true), std::invalid_argument);
        detector_config cfg;
        cfg.algorithm = "psd";
        cfg.psd_start_rows = bad;
        try {
            detector::make(cfg);
            ADD_FAILURE() << bad << " accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("psd_start_rows"), std::string::npos)
                << e.what();
        }
    }
    // Other algorithms take only the default.
    detector_config fsd;
    fsd.algorithm = "fsd";
    fsd.psd_start_rows = 2;
    EXPECT_THROW(detector::make(fsd), std::invalid_argument);
    fsd.psd_start_rows = -1;
    EXPECT_NO_THROW(detector::make(fsd));
}

TEST(psd, starting_radius_keeps_decisions)
{
    // The CPU PSD (depth-first set) with starting radii from 1e-6 noise norms (grown
    // until the last search, without one) to 4, against none: the same bits at 0-30 dB,
    // on rank-deficient channels (ties) and all-zero ones, given the true noise variance,
    // one 1e4 times too small, and 0 (no radius). None flagged. At 4x4 64QAM the
    // default radius cuts the expanded nodes of the full-rank channels in total.
    for (int n_tx : { 2, 4 })
        for (auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
            SCOPED_TRACE(std::to_string(n_tx) + "x" + std::to_string(n_tx) + " " +
                         to_string(mod));
            auto b = qa::make_batch(n_tx, n_tx, mod, 150, 7, 0, 30, 53);
            const int n_bad = 25;
            qa::make_rank_deficient(b, n_bad);
            detector_config cfg = psd_config(core::psd_cpu_tuned(n_tx), true);
            cfg.n_tx = cfg.n_rx = n_tx;
            cfg.mod = mod;
            cfg.psd_radius = 0.0;
            auto plain = core::make_psd_kernel(cfg, false);
            std::vector<std::vector<uint8_t>> plain_bits(b.n_mat);
            uint64_t plain_expanded = 0;
            for (int m = 0; m < b.n_mat; ++m) {
                std::vector<vector_stats> st;
                detect_matrix(*plain, b, m, plain_bits[m], st, b.noise_var[m]);
                for (const auto& s : st)
                    plain_expanded += m >= n_bad ? s.expanded : 0;
            }
            for (const double radius : { 1e-6, 0.5, core::psd_cpu_radius, 4.0 }) {
                SCOPED_TRACE("radius " + std::to_string(radius));
                cfg.psd_radius = radius;
                auto bounded = core::make_psd_kernel(cfg, false);
                uint64_t expanded = 0;
                for (int m = 0; m < b.n_mat; ++m)
                    for (const double scale : { 1.0, 1e-4, 0.0 }) {
                        std::vector<uint8_t> bits;
                        std::vector<vector_stats> st;
                        detect_matrix(*bounded, b, m, bits, st, scale * b.noise_var[m]);
                        ASSERT_EQ(bits, plain_bits[m]) << "matrix " << m << " " << scale;
                        for (const auto& s : st) {
                            EXPECT_EQ(s.truncated, 0u);
                            expanded += scale == 1.0 && m >= n_bad ? s.expanded : 0;
                        }
                    }
                if (n_tx == 4 && mod == modulation::qam64 &&
                    radius == core::psd_cpu_radius)
                    EXPECT_LT(expanded, plain_expanded);
            }
        }
}

TEST(psd, starting_radius_per_backend)
{
    // Defaults (-1): psd_cpu_radius on the CPU, none on CUDA; a value applies to both
    // (CUDA's factory refuses one > 0); others refused, also through the detector, with
    // a message naming the parameter; other algorithms take only the default.
    EXPECT_EQ(core::psd_radius(-1.0, false), core::psd_cpu_radius);
    EXPECT_EQ(core::psd_radius(-1.0, true), 0.0);
    EXPECT_EQ(core::psd_radius(0.0, false), 0.0);
    EXPECT_EQ(core::psd_radius(2.5, true), 2.5);
    for (const double bad : { -2.0,
                              -0.5,
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN() }) {
        EXPECT_THROW(core::psd_radius(bad, false), std::invalid_argument);
        detector_config cfg;
        cfg.algorithm = "psd";
        cfg.psd_radius = bad;
        try {
            detector::make(cfg);
            ADD_FAILURE() << bad << " accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("psd_radius"), std::string::npos)
                << e.what();
        }
    }
    detector_config fsd;
    fsd.algorithm = "fsd";
    fsd.psd_radius = 1.0;
    EXPECT_THROW(detector::make(fsd), std::invalid_argument);
    fsd.psd_radius = -1.0;
    EXPECT_NO_THROW(detector::make(fsd));
}

TEST(psd, more_receive_than_transmit_antennas)
{
    for (auto mod : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        const auto b = qa::make_batch(2, 4, mod, 500, 2, 0, 30, 5);
        auto ml = qa::make("ml", 2, 4, mod);
        const auto ml_bits = qa::run_bits(*ml, b);
        for (const auto& p : { psd_params{}, core::psd_cpu_tuned(2) }) {
            auto psd = qa::make("psd", 2, 4, mod, psd_config(p, p.lvl.empty()));
            EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*psd, b), ml_bits), 0)
                << to_string(mod) << " lvl=" << core::psd_to_string(p.lvl);
        }
    }
}

TEST(psd, preprocessed_groups_give_the_same_results)
{
    // preprocess() (the sorted QRs of a group in SIMD lanes, where the CPU has them) is a
    // hint: bits and counters equal a kernel's without it, for matrices detected in
    // pieces, out of order, again after others, or not in the group at all, and for the
    // generic Algorithm 3 with the sorted QR. Rank-deficient channels included. Each
    // lane count this CPU has (MIMODET_CPU_QR_LANES: AVX-512's 8, AVX2's 4, none).
    for (const char* lanes : { "8", "4", "1" })
        for (const int n_rx : { 2, 4 })
            for (const int n_tx : { 2, 4 }) {
                if (n_tx > n_rx)
                    continue;
                for (auto mod :
                     { modulation::qpsk, modulation::qam16, modulation::qam64 })
                    for (const bool generic : { false, true }) {
                        SCOPED_TRACE(std::to_string(n_rx) + "x" + std::to_string(n_tx) +
                                     " " + to_string(mod) + (generic ? " generic" : "") +
                                     " lanes " + lanes);
                        const qa::env_override lane_limit("MIMODET_CPU_QR_LANES", lanes);
                        auto b = qa::make_batch(n_tx, n_rx, mod, 40, 4, 0, 30, 61);
                        qa::make_rank_deficient(b, 6);
                        detector_config cfg = psd_config(core::psd_cpu_tuned(n_tx), true);
                        cfg.n_tx = n_tx;
                        cfg.n_rx = n_rx;
                        cfg.mod = mod;
                        auto plain = core::make_psd_kernel(cfg, generic);
                        auto grouped = core::make_psd_kernel(cfg, generic);
                        const int group = grouped->preprocess_group();
                        ASSERT_GE(group, 1);
                        ASSERT_LE(group, std::atoi(lanes));
                        // Where the CPU has lanes, the group has as many as it takes
                        // (AVX2: 4 of a limit of 8).
                        const int cpu_group = core::qr_sorted_group_lanes(
                            2 * n_rx, 2 * n_tx, std::atoi(lanes));
                        if (cpu_group > 1)
                            ASSERT_EQ(group, cpu_group);
                        std::vector<core::MatC> H(b.n_mat, core::MatC(n_rx, n_tx));
                        for (int m = 0; m < b.n_mat; ++m)
                            for (int r = 0; r < n_rx; ++r)
                                for (int c = 0; c < n_tx; ++c)
                                    H[m](r, c) = core::cd(
                                        b.H[(static_cast<size_t>(m) * n_rx + r) * n_tx +
                                            c]);
                        const int nb = n_tx * static_cast<int>(mod);
                        const auto detect = [&](core::cpu_kernel& k,
                                                int m,
                                                int s0,
                                                int ns,
                                                uint8_t* bits,
                                                vector_stats* st) {
                            std::vector<core::cd> y(static_cast<size_t>(ns) * n_rx);
                            for (size_t i = 0; i < y.size(); ++i)
                                y[i] = core::cd(
                                    b.y[(static_cast<size_t>(m) * b.n_sym + s0) * n_rx +
                                        i]);
                            k.detect(
                                H[m], y.data(), ns, b.noise_var[m], bits, nullptr, st);
                        };
                        const auto expect_same = [&](int m, int s0, int ns) {
                            std::vector<uint8_t> bp(static_cast<size_t>(ns) * nb),
                                bg(bp.size());
                            std::vector<vector_stats> sp(ns), sg(ns);
                            detect(*plain, m, s0, ns, bp.data(), sp.data());
                            detect(*grouped, m, s0, ns, bg.data(), sg.data());
                            ASSERT_EQ(bp, bg) << "matrix " << m;
                            for (int i = 0; i < ns; ++i) {
                                ASSERT_EQ(sp[i].expanded, sg[i].expanded)
                                    << "matrix " << m;
                                ASSERT_EQ(sp[i].evaluated, sg[i].evaluated)
                                    << "matrix " << m;
                                ASSERT_EQ(sp[i].truncated, sg[i].truncated)
                                    << "matrix " << m;
                            }
                        };
                        std::vector<const core::MatC*> hp(b.n_mat);
                        for (int m = 0; m < b.n_mat; ++m)
                            hp[m] = &H[m];
                        for (int m0 = 0; m0 < b.n_mat; m0 += group) {
                            const int n = std::min(group, b.n_mat - m0);
                            grouped->preprocess(hp.data() + m0, n);
                            const int kind = (m0 / group) % 4;
                            if (kind == 0) { // in order, each matrix in two pieces
                                for (int m = m0; m < m0 + n; ++m) {
                                    expect_same(m, 0, 1);
                                    expect_same(m, 1, b.n_sym - 1);
                                }
                            } else if (kind == 1) { // backwards, each twice
                                for (int m = m0 + n - 1; m >= m0; --m) {
                                    expect_same(m, 0, b.n_sym);
                                    expect_same(m, 0, b.n_sym);
                                }
                            } else if (kind == 2) { // a matrix of no group first
                                expect_same((m0 + group) % b.n_mat, 0, b.n_sym);
                                for (int m = m0; m < m0 + n; ++m)
                                    expect_same(m, 0, b.n_sym);
                            } else { // every other one, then pairs as b, none, a, b, a
                                for (int m = m0; m < m0 + n; m += 2)
                                    expect_same(m, 0, b.n_sym);
                                const int outside = (m0 + group) % b.n_mat;
                                for (int m = m0 + 1; m + 1 < m0 + n; m += 2)
                                    for (int i : { 1, -1, 0, 1, 0 })
                                        expect_same(i < 0 ? outside : m + i, 0, b.n_sym);
                            }
                        }
                    }
            }
}

TEST(psd, three_antennas_use_the_documented_default)
{
    const auto b = qa::make_batch(3, 3, modulation::qam16, 300, 1, 0, 30, 9);
    auto ml = qa::make("ml", 3, 3, modulation::qam16);
    auto psd = qa::make("psd", 3, 3, modulation::qam16);
    EXPECT_EQ(qa::count_non_ml(b, qa::run_bits(*psd, b), qa::run_bits(*ml, b)), 0);
}

TEST(psd, rank_deficient_channels)
{
    for (int n_tx : { 2, 4 }) {
        const auto mod = modulation::qam16;
        auto b = qa::make_batch(n_tx, n_tx, mod, 20, 2, 10, 20, 3);
        // Matrices 0-9: all zero; 10-19: column 1 duplicates column 0.
        for (int m = 0; m < b.n_mat; ++m)
            for (int r = 0; r < n_tx; ++r) {
                qa::cf* row = &b.H[(static_cast<size_t>(m) * n_tx + r) * n_tx];
                if (m < 10)
                    std::fill(row, row + n_tx, qa::cf(0));
                else
                    row[1] = row[0];
            }
        auto ml = qa::make("ml", n_tx, n_tx, mod);
        const auto ml_bits = qa::run_bits(*ml, b);
        for (const auto& s : sets_for(n_tx)) {
            if (!s.params.lvl.empty() && !valid_for(s.params, n_tx, omega_of(mod)))
                continue;
            for (bool sorted_qr : { false, true }) {
                auto psd = qa::make("psd", n_tx, n_tx, mod, psd_config(s.params, sorted_qr));
                const auto bits = qa::run_bits(*psd, b);
                expect_valid_bits(bits);
                EXPECT_EQ(qa::count_non_ml(b, bits, ml_bits), 0) << s.name;
            }
        }
    }
}

TEST(psd, stats_are_plausible)
{
    const auto b = qa::make_batch(4, 4, modulation::qam16, 50, 2, 20, 20, 11);
    for (const auto& p : { psd_params{}, core::psd_cpu_tuned(4) }) {
        auto psd = qa::make("psd", 4, 4, modulation::qam16, psd_config(p));
        std::vector<uint8_t> bits(b.bits.size());
        std::vector<vector_stats> stats(b.n_mat * b.n_sym);
        psd->detect_bits(b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(),
                         bits.data(), stats.data());
        for (const auto& st : stats) {
            EXPECT_GT(st.expanded, 0u);
            EXPECT_GE(st.evaluated, st.expanded);
            // At least one path from the root to a leaf (8 real levels).
            EXPECT_GE(st.expanded, 8u);
            EXPECT_LT(st.evaluated, 65536u * 8);
        }
    }
}

