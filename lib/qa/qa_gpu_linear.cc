/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// CUDA zf/mmse against the CPU zf/mmse (ctest label "gpu"; the gpu_linear tests skip
// where there is no CUDA device). Both compute the weights in double (the CPU with
// Eigen, the GPU with lib/detect/linear/linear_common.h) and demap with the same code, so
// the LLRs agree to rounding: |gpu - cpu| <= k_tol * max(1, |cpu|) with k_tol = 1e-4,
// about 1000 times the largest difference seen (the float output's rounding, ~1e-7, where
// the weights agree to 1e-16 cond(H)); the hard bits (LLR signs) agree except where
// |LLR| < k_tiny. The linear_rule tests run the GPU's per-matrix and per-vector math on
// the host (it is __host__ __device__) and check the CPU side of the shared zf rank rule;
// they need no device.

#include "detect/linear/linear_common.h"
#include "qa_gpu_common.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;
namespace lin = gr::mimodet::core::linear;

namespace {

constexpr double k_tol = 1e-4;   // LLRs: |gpu - cpu| <= k_tol * max(1, |cpu|)
constexpr float k_tiny = 1e-6f;  // hard bits may differ only where |LLR_cpu| < k_tiny

detector::sptr make_lin(const std::string& alg,
                        int nt,
                        int nr,
                        modulation mod,
                        const std::string& backend,
                        float clip = 0.0f,
                        bool scaled = true)
{
    detector_config c;
    c.backend = parse_backend(backend);
    c.llr_clip = clip;
    c.llr_scaled = scaled;
    return qa::make(alg, nt, nr, mod, c);
}

struct diff_stats {
    size_t llrs = 0;
    size_t over_tol = 0;       // LLRs outside the tolerance
    size_t sign_diff = 0;      // hard bits that differ
    size_t sign_diff_tiny = 0; // ... of which |LLR_cpu| < k_tiny
    size_t tiny = 0;           // LLRs with |LLR_cpu| < k_tiny
    double max_abs = 0, max_rel = 0;

    void add(const diff_stats& o)
    {
        llrs += o.llrs;
        over_tol += o.over_tol;
        sign_diff += o.sign_diff;
        sign_diff_tiny += o.sign_diff_tiny;
        tiny += o.tiny;
        max_abs = std::max(max_abs, o.max_abs);
        max_rel = std::max(max_rel, o.max_rel);
    }
};

diff_stats compare_llrs(const std::vector<float>& g, const std::vector<float>& c)
{
    diff_stats s;
    s.llrs = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
        const double a = std::abs(double(g[i]) - double(c[i]));
        const double rel = a / std::max(1.0, std::abs(double(c[i])));
        s.max_abs = std::max(s.max_abs, a);
        s.max_rel = std::max(s.max_rel, rel);
        s.over_tol += !(rel <= k_tol); // NaN counts
        s.tiny += std::abs(c[i]) < k_tiny;
    }
    return s;
}

void count_bits(const std::vector<uint8_t>& gb,
                const std::vector<uint8_t>& cb,
                const std::vector<float>& c_llr,
                diff_stats& s)
{
    for (size_t i = 0; i < cb.size(); ++i)
        if (gb[i] != cb[i]) {
            ++s.sign_diff;
            s.sign_diff_tiny += std::abs(c_llr[i]) < k_tiny;
        }
}

void print(const std::string& what, const diff_stats& s)
{
    std::printf("%-40s %9zu LLRs: max |d| %.3g, max rel %.3g, over tol %zu, |LLR|<1e-6 "
                "%zu, bit diffs %zu (tiny %zu)\n",
                what.c_str(),
                s.llrs,
                s.max_abs,
                s.max_rel,
                s.over_tol,
                s.tiny,
                s.sign_diff,
                s.sign_diff_tiny);
}

//! GPU vs CPU on one batch: LLRs within the tolerance, bits equal except for tiny LLRs,
//! and detect_bits on the GPU equal to the signs of its own LLRs.
diff_stats expect_same_as_cpu(detector& gpu, detector& cpu, const qa::batch& b)
{
    const auto gl = qa::run_llr(gpu, b);
    const auto cl = qa::run_llr(cpu, b);
    const auto gb = qa::run_bits(gpu, b);
    const auto cb = qa::run_bits(cpu, b);
    auto s = compare_llrs(gl, cl);
    count_bits(gb, cb, cl, s);
    EXPECT_EQ(s.over_tol, 0u);
    EXPECT_EQ(s.sign_diff, s.sign_diff_tiny);
    size_t own = 0;
    for (size_t i = 0; i < gl.size(); ++i)
        own += gb[i] != (gl[i] < 0.0f ? 1 : 0);
    EXPECT_EQ(own, 0u) << "detect_bits is not the sign of detect_llr";
    return s;
}

std::string name(const std::string& alg, int nt, int nr, modulation mod)
{
    return alg + " " + std::to_string(nt) + "x" + std::to_string(nr) + " " + to_string(mod);
}

//! Batch shapes of one configuration: n_sym 1..7, odd matrix counts, ~121k vectors.
const int k_shapes[][2] = { { 3001, 7 }, { 4001, 6 }, { 2999, 5 }, { 2503, 4 }, { 7001, 3 },
                            { 5003, 2 }, { 20011, 1 }, { 1, 1 },   { 13, 2 } };

//! y = H s + n again for b's (possibly modified) H, with b's bits and noise variances.
void redraw_y(qa::batch& b, uint64_t seed)
{
    const auto& c = constellation::get(b.mod);
    const int q = c.bits_per_symbol(), nt = b.n_tx, nr = b.n_rx;
    std::mt19937_64 rng(seed);
    for (int m = 0; m < b.n_mat; ++m) {
        std::normal_distribution<double> ng(0.0, std::sqrt(b.noise_var[m] / 2.0));
        const qa::cf* h = &b.H[static_cast<size_t>(m) * nr * nt];
        for (int s = 0; s < b.n_sym; ++s) {
            const size_t v = static_cast<size_t>(m) * b.n_sym + s;
            for (int r = 0; r < nr; ++r) {
                std::complex<double> acc(ng(rng), ng(rng));
                for (int t = 0; t < nt; ++t) {
                    int l = 0;
                    for (int k = 0; k < q; ++k)
                        l = (l << 1) | b.bits[(v * nt + t) * q + k];
                    acc += std::complex<double>(h[r * nt + t]) * c.points()[l];
                }
                b.y[v * nr + r] = qa::cf(acc);
            }
        }
    }
}

//! The GPU's math (linear_common.h, as linear_cuda.cu runs it) on the host.
std::vector<float> gpu_math_on_host(const qa::batch& b, bool mmse, float clip)
{
    const auto& c = constellation::get(b.mod);
    const int q = c.bits_per_symbol(), nt = b.n_tx, nr = b.n_rx, nb = nt * q;
    std::vector<float> out(static_cast<size_t>(b.n_mat) * b.n_sym * nb);
    for (int m = 0; m < b.n_mat; ++m) {
        lin::cplx H[lin::max_ant * lin::max_ant], W[lin::max_ant * lin::max_ant];
        const qa::cf* h = &b.H[static_cast<size_t>(m) * nr * nt];
        for (int i = 0; i < nr * nt; ++i)
            H[i] = { h[i].real(), h[i].imag() };
        const double nv = b.noise_var[m];
        if (mmse)
            lin::mmse_weights(H, nr, nt, nv, W);
        else
            lin::zf_weights(H, nr, nt, W);
        double gain[lin::max_ant], pv[lin::max_ant];
        for (int k = 0; k < nt; ++k) {
            double mu = 0.0, s = 0.0;
            for (int r = 0; r < nr; ++r) {
                const lin::cplx w = W[k * nr + r], x = H[r * nt + k];
                mu += w.re * x.re - w.im * x.im;
                s += w.re * w.re + w.im * w.im;
            }
            gain[k] = mmse ? mu : 1.0;
            pv[k] = mmse ? lin::mmse_post_var(mu) : nv * s;
        }
        for (int sy = 0; sy < b.n_sym; ++sy) {
            const size_t v = static_cast<size_t>(m) * b.n_sym + sy;
            const qa::cf* y = &b.y[v * nr];
            for (int k = 0; k < nt; ++k) {
                double xr = 0.0, xi = 0.0;
                for (int r = 0; r < nr; ++r) {
                    const lin::cplx w = W[k * nr + r];
                    xr += w.re * y[r].real() - w.im * y[r].imag();
                    xi += w.re * y[r].imag() + w.im * y[r].real();
                }
                lin::demap_stream(xr, xi, gain[k], pv[k], c.pam_levels().data(), c.pam_bits(),
                                  q, clip, &out[v * nb + k * q]);
            }
        }
    }
    return out;
}

int zf_rank_of(const qa::batch& b, int m)
{
    lin::cplx H[lin::max_ant * lin::max_ant];
    const qa::cf* h = &b.H[static_cast<size_t>(m) * b.n_rx * b.n_tx];
    for (int i = 0; i < b.n_rx * b.n_tx; ++i)
        H[i] = { h[i].real(), h[i].imag() };
    return lin::zf_rank(H, b.n_rx, b.n_tx);
}

//! LLRs of matrix m's vectors, stream k (all bits), from an LLR array of b's layout.
std::vector<float> stream_llrs(const qa::batch& b, const std::vector<float>& llr, int m, int k)
{
    const int q = static_cast<int>(b.mod), nb = b.n_tx * q;
    std::vector<float> out;
    for (int s = 0; s < b.n_sym; ++s) {
        const size_t v = static_cast<size_t>(m) * b.n_sym + s;
        out.insert(out.end(), &llr[v * nb + k * q], &llr[v * nb + k * q] + q);
    }
    return out;
}

/*!
 * The defined behaviour on the singular channels of qa::make_singular_channels (4 tx),
 * for LLRs `llr` of algorithm alg on b: all-zero H -> every LLR 0; a dead stream 3 ->
 * its LLRs 0 and streams 0..2 the LLRs of the same detector on the first 3 columns
 * (`reduced`, from the CPU); equal columns 1 and 2 -> equal LLRs on streams 1 and 2
 * (swapping two equal columns changes nothing); everything finite.
 */
void expect_singular_rule(const qa::batch& b,
                          const std::vector<float>& llr,
                          const std::vector<float>& reduced,
                          const std::string& what)
{
    const int q = static_cast<int>(b.mod);
    size_t bad = 0;
    for (float l : llr)
        bad += !std::isfinite(l);
    EXPECT_EQ(bad, 0u) << what << ": non-finite LLRs";
    for (int m = 0; m < b.n_mat; ++m) {
        if (m % 3 == 0) {
            for (int k = 0; k < 4; ++k)
                for (float l : stream_llrs(b, llr, m, k))
                    ASSERT_EQ(l, 0.0f) << what << ": zero channel, matrix " << m;
        } else if (m % 3 == 2) {
            for (float l : stream_llrs(b, llr, m, 3))
                ASSERT_EQ(l, 0.0f) << what << ": dead stream, matrix " << m;
            for (int s = 0; s < b.n_sym; ++s) {
                const size_t v = static_cast<size_t>(m) * b.n_sym + s;
                for (int i = 0; i < 3 * q; ++i) {
                    const double a = llr[v * 4 * q + i], r = reduced[v * 3 * q + i];
                    ASSERT_LE(std::abs(a - r), k_tol * std::max(1.0, std::abs(r)))
                        << what << ": dead stream, matrix " << m << " bit " << i;
                }
            }
        } else {
            const auto s1 = stream_llrs(b, llr, m, 1), s2 = stream_llrs(b, llr, m, 2);
            for (size_t i = 0; i < s1.size(); ++i)
                ASSERT_LE(std::abs(double(s1[i]) - s2[i]),
                          k_tol * std::max(1.0, std::abs(double(s1[i]))))
                    << what << ": equal columns, matrix " << m;
        }
    }
}

//! b with columns 0..2 only (a 3 x n_rx system with the same y).
qa::batch first_three_columns(const qa::batch& b)
{
    qa::batch r = b;
    r.n_tx = 3;
    r.H.assign(static_cast<size_t>(b.n_mat) * b.n_rx * 3, {});
    for (int m = 0; m < b.n_mat; ++m)
        for (int i = 0; i < b.n_rx; ++i)
            for (int t = 0; t < 3; ++t)
                r.H[(static_cast<size_t>(m) * b.n_rx + i) * 3 + t] =
                    b.H[(static_cast<size_t>(m) * b.n_rx + i) * 4 + t];
    r.bits.assign(static_cast<size_t>(b.n_mat) * b.n_sym * 3 * static_cast<int>(b.mod), 0);
    return r;
}

qa::batch singular_batch(modulation mod, uint64_t seed)
{
    auto b = qa::make_batch(4, 4, mod, 600, 7, 10.0, 10.0, seed);
    qa::make_singular_channels(b);
    redraw_y(b, seed + 1);
    return b;
}

} // namespace

// ---------------------------------------------------------------- no device needed

TEST(linear_rule, gpu_math_on_host_matches_cpu)
{
    uint64_t seed = 10;
    diff_stats all;
    for (const char* alg : { "zf", "mmse" })
        qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
            const auto b = qa::make_batch(nt, nr, mod, 3000, 3, 0.0, 30.0, ++seed);
            auto cpu = make_lin(alg, nt, nr, mod, "cpu");
            const auto c = qa::run_llr(*cpu, b);
            const auto h = gpu_math_on_host(b, std::string(alg) == "mmse", 0.0f);
            const auto s = compare_llrs(h, c);
            EXPECT_EQ(s.over_tol, 0u) << name(alg, nt, nr, mod);
            all.add(s);
        });
    print("GPU math on the host vs CPU", all);
}

TEST(linear_rule, cpu_singular_channels)
{
    // The CPU side of the defined behaviour on rank-deficient channels.
    for (const char* alg : { "zf", "mmse" })
        for (auto mod : qa::k_gpu_mods) {
            const auto b = singular_batch(mod, 100 + static_cast<int>(mod));
            for (int m = 0; m < b.n_mat; ++m)
                ASSERT_EQ(zf_rank_of(b, m), m % 3 == 0 ? 0 : 3) << "matrix " << m;
            auto cpu = make_lin(alg, 4, 4, mod, "cpu");
            auto cpu3 = make_lin(alg, 3, 4, mod, "cpu");
            const auto llr = qa::run_llr(*cpu, b);
            const auto red = qa::run_llr(*cpu3, first_three_columns(b));
            const std::string what = name(alg, 4, 4, mod) + " cpu";
            expect_singular_rule(b, llr, red, what);
            // The GPU's math agrees on the host too.
            const auto h = gpu_math_on_host(b, std::string(alg) == "mmse", 0.0f);
            EXPECT_EQ(compare_llrs(h, llr).over_tol, 0u) << what;
        }
}

// ---------------------------------------------------------------- GPU

TEST(gpu_linear, matches_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 1000;
    for (const char* alg : { "zf", "mmse" })
        qa::for_each_standard_size([&](int nt, int nr, modulation mod) {
            auto gpu = make_lin(alg, nt, nr, mod, "cuda");
            auto cpu = make_lin(alg, nt, nr, mod, "cpu");
            ASSERT_EQ(gpu->backend(), "cuda");
            ASSERT_TRUE(gpu->soft());
            diff_stats all;
            size_t vectors = 0;
            for (const auto& sh : k_shapes) {
                const auto b = qa::make_batch(nt, nr, mod, sh[0], sh[1], 0.0, 30.0, ++seed);
                SCOPED_TRACE(name(alg, nt, nr, mod) + " " + qa::shape_name(sh[0], sh[1]));
                all.add(expect_same_as_cpu(*gpu, *cpu, b));
                vectors += static_cast<size_t>(sh[0]) * sh[1];
            }
            print(name(alg, nt, nr, mod) + " (" + std::to_string(vectors) + " vec)", all);
        });
}

TEST(gpu_linear, matches_cpu_other_sizes)
{
    QA_SKIP_WITHOUT_GPU();
    struct cse {
        int nt, nr;
        modulation mod;
    };
    const cse cases[] = { { 1, 1, modulation::qam64 }, { 1, 3, modulation::qam16 },
                          { 3, 5, modulation::qam64 }, { 4, 8, modulation::qam16 },
                          { 6, 7, modulation::qpsk },  { 8, 8, modulation::qam64 } };
    uint64_t seed = 2000;
    for (const char* alg : { "zf", "mmse" })
        for (const auto& c : cases) {
            const auto b = qa::make_batch(c.nt, c.nr, c.mod, 3001, 7, 0.0, 30.0, ++seed);
            auto gpu = make_lin(alg, c.nt, c.nr, c.mod, "cuda");
            auto cpu = make_lin(alg, c.nt, c.nr, c.mod, "cpu");
            SCOPED_TRACE(name(alg, c.nt, c.nr, c.mod));
            print(name(alg, c.nt, c.nr, c.mod), expect_same_as_cpu(*gpu, *cpu, b));
        }
}

TEST(gpu_linear, odd_batch_shapes)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 3000;
    for (const char* alg : { "zf", "mmse" }) {
        auto gpu = make_lin(alg, 4, 4, modulation::qam16, "cuda");
        auto cpu = make_lin(alg, 4, 4, modulation::qam16, "cpu");
        diff_stats all;
        qa::for_each_odd_shape([&](int n_mat, int n_sym) {
            const auto b =
                qa::make_batch(4, 4, modulation::qam16, n_mat, n_sym, 0.0, 30.0, ++seed);
            SCOPED_TRACE(std::string(alg) + " " + qa::shape_name(n_mat, n_sym));
            all.add(expect_same_as_cpu(*gpu, *cpu, b));
        });
        print(std::string(alg) + " 4x4 16qam odd shapes", all);
    }
}

TEST(gpu_linear, llr_clip_and_unscaled)
{
    QA_SKIP_WITHOUT_GPU();
    uint64_t seed = 4000;
    const float clip = 2.5f;
    for (const char* alg : { "zf", "mmse" })
        for (auto mod : qa::k_gpu_mods) {
            const auto b = qa::make_batch(4, 4, mod, 2001, 7, 0.0, 30.0, ++seed);
            const int per_mat = b.n_sym * 4 * static_cast<int>(mod);
            auto g_scaled = qa::run_llr(*make_lin(alg, 4, 4, mod, "cuda"), b);
            for (float cl : { clip, 0.0f })
                for (bool scaled : { true, false }) {
                    auto gpu = make_lin(alg, 4, 4, mod, "cuda", cl, scaled);
                    auto cpu = make_lin(alg, 4, 4, mod, "cpu", cl, scaled);
                    const std::string what = name(alg, 4, 4, mod) + " clip " +
                                             std::to_string(cl) +
                                             (scaled ? " scaled" : " unscaled");
                    SCOPED_TRACE(what);
                    const auto g = qa::run_llr(*gpu, b);
                    const auto c = qa::run_llr(*cpu, b);
                    EXPECT_EQ(compare_llrs(g, c).over_tol, 0u);
                    size_t out_of_bound = 0, clipped = 0, not_nv = 0;
                    for (int m = 0; m < b.n_mat; ++m) {
                        const float nv = b.noise_var[m];
                        for (int i = 0; i < per_mat; ++i) {
                            const size_t j = static_cast<size_t>(m) * per_mat + i;
                            if (cl > 0) {
                                const float bound = scaled ? cl : cl * nv;
                                out_of_bound += std::abs(g[j]) > bound * (1 + 1e-6f);
                                clipped += std::abs(g[j]) >= bound * (1 - 1e-6f);
                            } else if (!scaled) {
                                // Unscaled = noise_var times the scaled LLR.
                                const double ref = double(g_scaled[j]) * nv;
                                not_nv += std::abs(g[j] - ref) >
                                          1e-5 * std::max(1.0, std::abs(ref));
                            }
                        }
                    }
                    EXPECT_EQ(out_of_bound, 0u);
                    EXPECT_EQ(not_nv, 0u);
                    if (cl > 0)
                        EXPECT_GT(clipped, 0u) << "the clip bound was never reached";
                }
        }
}

TEST(gpu_linear, singular_channels_follow_the_rank_rule)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : { "zf", "mmse" })
        for (auto mod : qa::k_gpu_mods) {
            const auto b = singular_batch(mod, 100 + static_cast<int>(mod));
            auto gpu = make_lin(alg, 4, 4, mod, "cuda");
            auto cpu = make_lin(alg, 4, 4, mod, "cpu");
            auto cpu3 = make_lin(alg, 3, 4, mod, "cpu");
            const std::string what = name(alg, 4, 4, mod) + " singular";
            SCOPED_TRACE(what);
            std::vector<float> g;
            ASSERT_NO_THROW(g = qa::run_llr(*gpu, b));
            const auto red = qa::run_llr(*cpu3, first_three_columns(b));
            expect_singular_rule(b, g, red, what + " gpu");
            print(what, expect_same_as_cpu(*gpu, *cpu, b));
        }
}

TEST(gpu_linear, ill_conditioned_channels)
{
    QA_SKIP_WITHOUT_GPU();
    // Column 1 = column 0 + eps * CN(0,1): from well-conditioned to below the rank rule's
    // threshold (pivot ratio ~ eps^2 against zf_rank_rtol = 1e-10), including matrices
    // on both sides of it.
    uint64_t seed = 5000;
    for (const char* alg : { "zf", "mmse" })
        for (double eps : { 1e-1, 1e-2, 1e-3, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 1e-7, 0.0 }) {
            const auto mod = modulation::qam16;
            auto b = qa::make_batch(4, 4, mod, 2000, 7, 20.0, 30.0, ++seed);
            std::mt19937_64 rng(seed);
            std::normal_distribution<double> g(0.0, std::sqrt(0.5));
            for (int m = 0; m < b.n_mat; ++m) {
                qa::cf* h = &b.H[static_cast<size_t>(m) * 16];
                for (int r = 0; r < 4; ++r)
                    h[r * 4 + 1] = h[r * 4 + 0] + qa::cf(eps * g(rng), eps * g(rng));
            }
            redraw_y(b, seed + 7);
            int deficient = 0;
            for (int m = 0; m < b.n_mat; ++m)
                deficient += zf_rank_of(b, m) < 4;
            auto gpu = make_lin(alg, 4, 4, mod, "cuda");
            auto cpu = make_lin(alg, 4, 4, mod, "cpu");
            char what[96];
            std::snprintf(what, sizeof what, "%s eps %.0e (zf rule: %d/%d deficient)", alg,
                          eps, deficient, b.n_mat);
            SCOPED_TRACE(what);
            print(what, expect_same_as_cpu(*gpu, *cpu, b));
        }
}

TEST(gpu_linear, rejects_bad_input_as_the_cpu)
{
    QA_SKIP_WITHOUT_GPU();
    const auto b = qa::make_batch(2, 2, modulation::qpsk, 4, 3, 10, 10, 7);
    for (const char* alg : { "zf", "mmse" })
        for (const char* backend : { "cuda", "cpu" }) {
            auto det = make_lin(alg, 2, 2, modulation::qpsk, backend);
            SCOPED_TRACE(std::string(alg) + " " + backend);
            std::vector<float> out(b.bits.size());
            std::vector<uint8_t> bits(b.bits.size());
            auto H = b.H;
            H[1] = qa::cf(std::numeric_limits<float>::quiet_NaN(), 0);
            EXPECT_THROW(det->detect_llr(H.data(), b.y.data(), 4, 3, b.noise_var.data(),
                                         out.data()),
                         std::invalid_argument);
            auto y = b.y;
            y[5] = qa::cf(0, std::numeric_limits<float>::infinity());
            EXPECT_THROW(det->detect_bits(b.H.data(), y.data(), 4, 3, b.noise_var.data(),
                                          bits.data()),
                         std::invalid_argument);
            for (float bad : { 0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN() }) {
                auto nv = b.noise_var;
                nv[2] = bad;
                EXPECT_THROW(
                    det->detect_llr(b.H.data(), b.y.data(), 4, 3, nv.data(), out.data()),
                    std::invalid_argument);
            }
            EXPECT_THROW(det->detect_llr(b.H.data(), b.y.data(), 4, 3, b.noise_var.data(),
                                         nullptr),
                         std::invalid_argument);
            // An empty batch is a no-op.
            EXPECT_NO_THROW(det->detect_llr(b.H.data(), b.y.data(), 0, 3,
                                            b.noise_var.data(), out.data()));
        }
}

TEST(gpu_linear, configuration_and_interface)
{
    QA_SKIP_WITHOUT_GPU();
    for (const char* alg : { "zf", "mmse" }) {
        SCOPED_TRACE(alg);
        // "auto" takes the GPU, "cuda" is accepted; soft output.
        EXPECT_EQ(make_lin(alg, 4, 4, modulation::qam16, "auto")->backend(), "cuda");
        auto gpu = make_lin(alg, 4, 4, modulation::qam64, "cuda");
        EXPECT_TRUE(gpu->soft());
        EXPECT_EQ(gpu->config().backend, backend_kind::cuda);
        // Stats: zero, like the CPU's (no tree).
        const auto b = qa::make_batch(4, 4, modulation::qam64, 5, 3, 20.0, 20.0, 801);
        std::vector<float> out(b.bits.size());
        std::vector<vector_stats> st(15, vector_stats{ 7, 7, 7 });
        gpu->detect_llr(b.H.data(), b.y.data(), 5, 3, b.noise_var.data(), out.data(),
                        st.data());
        for (const auto& s : st) {
            EXPECT_EQ(s.expanded, 0u);
            EXPECT_EQ(s.evaluated, 0u);
            EXPECT_EQ(s.truncated, 0u);
        }
        EXPECT_GT(gpu->kernel_seconds(2), 0.0);
        // Buffers grow and are reused: repeated batches give identical LLRs.
        const auto mid = qa::make_batch(4, 4, modulation::qam64, 3000, 7, 0, 30, 802);
        const auto small = qa::make_batch(4, 4, modulation::qam64, 5, 2, 0, 30, 803);
        const auto large = qa::make_batch(4, 4, modulation::qam64, 40000, 7, 0, 30, 804);
        const auto a1 = qa::run_llr(*gpu, mid);
        const auto s1 = qa::run_llr(*gpu, small);
        const auto l1 = qa::run_llr(*gpu, large);
        EXPECT_EQ(a1, qa::run_llr(*gpu, mid));
        EXPECT_EQ(s1, qa::run_llr(*gpu, small));
        auto cpu = make_lin(alg, 4, 4, modulation::qam64, "cpu");
        EXPECT_EQ(compare_llrs(l1, qa::run_llr(*cpu, large)).over_tol, 0u);
    }
}
