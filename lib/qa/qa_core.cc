/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Core pieces: constellations, QR variants, exhaustive ML, linear detectors, validation,
// the worker pool.

#include "detect/qr.h"
#include "detect/qr_lanes.h"
#include "qa_common.h"
#include "util/worker_pool.h"
#include <atomic>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <stdexcept>
#include <thread>

using namespace gr::mimodet;
using core::MatC;
using core::MatR;

TEST(constellation, matches_36211_tables)
{
    // Spot values from 36.211 Tables 7.1.2-1, 7.1.3-1, 7.1.4-1.
    const auto& q4 = constellation::get(modulation::qpsk);
    EXPECT_NEAR(q4.points()[0b01].real(), 1 / std::sqrt(2.0), 1e-12);
    EXPECT_NEAR(q4.points()[0b01].imag(), -1 / std::sqrt(2.0), 1e-12);
    const auto& q16 = constellation::get(modulation::qam16);
    const double s10 = std::sqrt(10.0);
    EXPECT_NEAR(q16.points()[0b0000].real(), 1 / s10, 1e-12);
    EXPECT_NEAR(q16.points()[0b0011].real(), 3 / s10, 1e-12);
    EXPECT_NEAR(q16.points()[0b0011].imag(), 3 / s10, 1e-12);
    EXPECT_NEAR(q16.points()[0b1101].real(), -1 / s10, 1e-12);
    EXPECT_NEAR(q16.points()[0b1101].imag(), -3 / s10, 1e-12);
    const auto& q64 = constellation::get(modulation::qam64);
    const double s42 = std::sqrt(42.0);
    EXPECT_NEAR(q64.points()[0b000000].real(), 3 / s42, 1e-12);
    EXPECT_NEAR(q64.points()[0b000101].imag(), 7 / s42, 1e-12); // 000101 -> 3+7j
    EXPECT_NEAR(q64.points()[0b001000].real(), 5 / s42, 1e-12); // 001000 -> 5+3j
    EXPECT_NEAR(q64.points()[0b111111].real(), -7 / s42, 1e-12); // 111111 -> -7-7j
    EXPECT_NEAR(q64.points()[0b111111].imag(), -7 / s42, 1e-12);
    for (auto m : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        const auto& c = constellation::get(m);
        double e = 0;
        for (auto p : c.points())
            e += std::norm(p);
        EXPECT_NEAR(e / c.order(), 1.0, 1e-12) << to_string(m);
        for (int l = 0; l < c.order(); ++l)
            EXPECT_EQ(c.slice(c.points()[l]), l);
    }
}

TEST(constellation, gray_neighbours_differ_in_one_bit)
{
    for (auto m : { modulation::qpsk, modulation::qam16, modulation::qam64 }) {
        const auto& c = constellation::get(m);
        const double dmin = 2 * c.scale();
        for (int a = 0; a < c.order(); ++a)
            for (int b = 0; b < c.order(); ++b)
                if (std::abs(std::abs(c.points()[a] - c.points()[b]) - dmin) < 1e-9)
                    EXPECT_EQ(__builtin_popcount(a ^ b), 1);
    }
}

TEST(constellation, parse)
{
    EXPECT_EQ(parse_modulation("16QAM"), modulation::qam16);
    EXPECT_EQ(parse_modulation("qam64"), modulation::qam64);
    EXPECT_THROW(parse_modulation("8psk"), std::invalid_argument);
}

namespace {
MatC random_h(int nr, int nt, std::mt19937_64& rng)
{
    std::normal_distribution<double> g(0, std::sqrt(0.5));
    MatC H(nr, nt);
    for (int r = 0; r < nr; ++r)
        for (int c = 0; c < nt; ++c)
            H(r, c) = { g(rng), g(rng) };
    return H;
}

template <typename Mat>
void expect_valid_qr(const Mat& H, const core::qr_result<Mat>& r)
{
    Mat Hp(H.rows(), H.cols());
    for (Eigen::Index k = 0; k < H.cols(); ++k)
        Hp.col(k) = H.col(r.perm[k]);
    EXPECT_LT((r.Q * r.R - Hp).norm(), 1e-10);
    EXPECT_LT((r.Q.adjoint() * r.Q - Mat::Identity(H.cols(), H.cols())).norm(), 1e-10);
    for (Eigen::Index i = 0; i < r.R.rows(); ++i) {
        for (Eigen::Index j = 0; j < i; ++j)
            EXPECT_EQ(std::abs(r.R(i, j)), 0.0);
        using std::imag;
        using std::real;
        EXPECT_GE(real(r.R(i, i)), 0.0);
        EXPECT_NEAR(imag(r.R(i, i)), 0.0, 1e-12);
    }
}
} // namespace

TEST(qr, householder_sorted_and_fsd_order_are_valid)
{
    std::mt19937_64 rng(1);
    for (int trial = 0; trial < 50; ++trial) {
        const MatC H = random_h(4 + trial % 3, 4, rng);
        expect_valid_qr(H, core::qr_householder(H));
        const auto s = core::qr_sorted(H);
        expect_valid_qr(H, s);
        // SQRD: the first pivot is the weakest column of H.
        Eigen::Index weakest;
        H.colwise().squaredNorm().minCoeff(&weakest);
        EXPECT_EQ(s.perm[0], weakest);
        const MatR Hr = core::real_model(H);
        expect_valid_qr(Hr, core::qr_sorted(Hr));
        auto perm = core::fsd_ordering(H, 1);
        std::vector<int> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, (std::vector<int>{ 0, 1, 2, 3 }));
        expect_valid_qr(H, core::qr_permuted(H, perm));
    }
}

TEST(qr, group_is_qr_sorted_real_bit_for_bit)
{
    // The SIMD-lane QR of up to 8 matrices against qr_sorted_real one at a time: Q, R
    // and the permutation equal byte for byte, for random real models and for matrices
    // with zero columns, equal columns, columns of equal norm (pivot ties), an all-zero
    // matrix and magnitudes from 1e-150 to 1e150.
    if (core::qr_sorted_group_lanes(8, 8) == 0)
        GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
    std::mt19937_64 rng(5);
    std::normal_distribution<double> g(0.0, 1.0);
    const int sizes[][2] = { { 4, 4 }, { 8, 4 }, { 8, 8 }, { 16, 8 }, { 16, 16 } };
    for (const int limit : { 8, 4 }) {
        for (const auto& mn : sizes) {
            const int m = mn[0], n = mn[1];
            const int lanes = core::qr_sorted_group_lanes(m, n, limit);
            if (lanes == 0)
                continue; // AVX2 only: no 8 lanes
            ASSERT_LE(lanes, limit);
            for (int trial = 0; trial < 40; ++trial) {
                const int count = 1 + trial % lanes;
                std::vector<std::vector<double>> Q(count), R(count);
                std::vector<std::vector<int>> perm(count);
                double* q[8];
                double* r[8];
                int* p[8];
                for (int i = 0; i < count; ++i) {
                    Q[i].resize(static_cast<size_t>(m) * n);
                    for (auto& x : Q[i])
                        x = g(rng);
                    const int kind = (trial + i) % 6;
                    if (kind == 1) // a zero column
                        std::fill_n(Q[i].begin() + (trial % n) * m, m, 0.0);
                    if (kind == 2) // two equal columns
                        std::copy_n(Q[i].begin(), m, Q[i].begin() + (n - 1) * m);
                    if (kind == 3) // every column of norm 1 up to rounding: ties
                        for (int c = 0; c < n; ++c)
                            for (int e = 0; e < m; ++e)
                                Q[i][c * m + e] = e == (c + trial) % m ? 1.0 : 0.0;
                    if (kind == 4)
                        std::fill(Q[i].begin(), Q[i].end(), 0.0);
                    if (kind == 5)
                        for (size_t x = 0; x < Q[i].size(); ++x)
                            Q[i][x] *= x % 2 ? 1e-150 : 1e150;
                    R[i].assign(static_cast<size_t>(n) * n, -1.0);
                    perm[i].assign(n, -1);
                    q[i] = Q[i].data();
                    r[i] = R[i].data();
                    p[i] = perm[i].data();
                }
                const auto H = Q;
                core::qr_sorted_group(q, count, lanes, m, n, r, n, 1, p);
                for (int i = 0; i < count; ++i) {
                    std::vector<double> q1 = H[i], r1(static_cast<size_t>(n) * n),
                                        norm2(n);
                    std::vector<int> p1(n);
                    core::qr_sorted_real(
                        q1.data(), m, n, r1.data(), n, 1, p1.data(), norm2.data());
                    const std::string what = std::to_string(m) + "x" + std::to_string(n) +
                                             " lanes " + std::to_string(lanes) +
                                             " trial " + std::to_string(trial) +
                                             " matrix " + std::to_string(i);
                    ASSERT_EQ(std::memcmp(q1.data(), Q[i].data(), q1.size() * 8), 0)
                        << what;
                    ASSERT_EQ(std::memcmp(r1.data(), R[i].data(), r1.size() * 8), 0)
                        << what;
                    ASSERT_EQ(p1, perm[i]) << what;
                }
            }
        }
    }
    // What it does not take.
    std::vector<double> buf(36 * 8);
    double* q[1] = { buf.data() };
    double* r[1] = { buf.data() + 36 };
    int pm[6];
    int* p[1] = { pm };
    EXPECT_EQ(core::qr_sorted_group_lanes(6, 6), 0);
    EXPECT_THROW(core::qr_sorted_group(q, 1, 4, 6, 6, r, 6, 1, p), std::invalid_argument);
    EXPECT_THROW(core::qr_sorted_group(q, 0, 4, 4, 4, r, 4, 1, p), std::invalid_argument);
    EXPECT_THROW(core::qr_sorted_group(q, 1, 3, 4, 4, r, 4, 1, p), std::invalid_argument);
}

TEST(qr, real_model_preserves_metric)
{
    std::mt19937_64 rng(2);
    const MatC H = random_h(3, 2, rng);
    core::VecC s(2), y(3);
    s << core::cd(0.3, -1.0), core::cd(-0.7, 0.2);
    y << core::cd(1, 2), core::cd(-1, 0.5), core::cd(0.1, 0.1);
    const MatR Hr = core::real_model(H);
    core::VecR sr(4);
    sr << 0.3, -0.7, -1.0, 0.2;
    const core::VecR yr = core::real_model(y.data(), 3);
    EXPECT_NEAR((y - H * s).squaredNorm(), (yr - Hr * sr).squaredNorm(), 1e-12);
}

TEST(ml, equals_brute_force_and_llrs_are_maxlog)
{
    for (auto mod : { modulation::qpsk, modulation::qam16 }) {
        const auto b = qa::make_batch(2, 3, mod, 200, 2, 0, 30, 11);
        auto det = qa::make("ml", 2, 3, mod);
        const auto bits = qa::run_bits(*det, b);
        const auto llr = qa::run_llr(*det, b);
        const int q = static_cast<int>(mod), nb = 2 * q, M = 1 << q;
        for (int v = 0; v < b.n_mat * b.n_sym; ++v) {
            const int m = v / b.n_sym;
            const qa::cf* H = &b.H[m * 6];
            const qa::cf* y = &b.y[v * 3];
            std::vector<double> m0(nb, 1e300), m1(nb, 1e300);
            double best = 1e300;
            std::vector<uint8_t> cand(nb), best_bits(nb);
            for (int idx = 0; idx < M * M; ++idx) {
                for (int k = 0; k < nb; ++k)
                    cand[k] = (idx >> (nb - 1 - k)) & 1;
                const double d = qa::metric(H, y, cand.data(), 2, 3, mod);
                if (d < best) {
                    best = d;
                    best_bits = cand;
                }
                for (int k = 0; k < nb; ++k)
                    (cand[k] ? m1[k] : m0[k]) = std::min(cand[k] ? m1[k] : m0[k], d);
            }
            for (int k = 0; k < nb; ++k) {
                EXPECT_EQ(bits[v * nb + k], best_bits[k]);
                const double ref = (m1[k] - m0[k]) / b.noise_var[m];
                EXPECT_NEAR(llr[v * nb + k], ref, 1e-4 * std::max(1.0, std::abs(ref)));
            }
        }
    }
}

TEST(ml, refuses_huge_problems)
{
    EXPECT_THROW(qa::make("ml", 4, 4, modulation::qam64), std::invalid_argument);
    EXPECT_NO_THROW(qa::make("ml", 3, 4, modulation::qam64)); // 2^18 exactly
}

TEST(linear, noiseless_full_rank_is_exact)
{
    for (const char* a : { "zf", "mmse" }) {
        auto b = qa::make_batch(4, 4, modulation::qam16, 100, 3, 80, 80, 5);
        auto det = qa::make(a, 4, 4, modulation::qam16);
        const auto bits = qa::run_bits(*det, b);
        EXPECT_EQ(bits, b.bits) << a;
    }
}

TEST(linear, mmse_beats_zf_at_low_snr)
{
    auto b = qa::make_batch(4, 4, modulation::qam16, 2000, 1, 8, 8, 6);
    auto zf = qa::make("zf", 4, 4, modulation::qam16);
    auto mmse = qa::make("mmse", 4, 4, modulation::qam16);
    auto errors = [&](const std::vector<uint8_t>& x) {
        size_t e = 0;
        for (size_t i = 0; i < x.size(); ++i)
            e += x[i] != b.bits[i];
        return e;
    };
    EXPECT_LT(errors(qa::run_bits(*mmse, b)), errors(qa::run_bits(*zf, b)));
}

TEST(detector, rejects_bad_configuration)
{
    EXPECT_THROW(qa::make("sd", 2, 2, modulation::qpsk), std::invalid_argument);
    EXPECT_THROW(qa::make("mmse", 4, 2, modulation::qpsk), std::invalid_argument);
    EXPECT_THROW(qa::make("mmse", 0, 2, modulation::qpsk), std::invalid_argument);
    detector_config c;
    c.backend = static_cast<backend_kind>(7); // not one of the enum's values
    EXPECT_THROW(detector::make(c), std::invalid_argument);
    c = {};
    c.llr_clip = -1;
    EXPECT_THROW(detector::make(c), std::invalid_argument);
}

TEST(detector, rejects_bad_input)
{
    auto b = qa::make_batch(2, 2, modulation::qpsk, 4, 1, 10, 10, 7);
    auto det = qa::make("mmse", 2, 2, modulation::qpsk);
    std::vector<uint8_t> out(b.bits.size());
    auto H = b.H;
    H[1] = qa::cf(std::numeric_limits<float>::quiet_NaN(), 0);
    EXPECT_THROW(det->detect_bits(H.data(), b.y.data(), 4, 1, b.noise_var.data(), out.data()),
                 std::invalid_argument);
    auto y = b.y;
    y[0] = qa::cf(std::numeric_limits<float>::infinity(), 0);
    EXPECT_THROW(det->detect_bits(b.H.data(), y.data(), 4, 1, b.noise_var.data(), out.data()),
                 std::invalid_argument);
    auto nv = b.noise_var;
    nv[2] = 0;
    EXPECT_THROW(det->detect_bits(b.H.data(), b.y.data(), 4, 1, nv.data(), out.data()),
                 std::invalid_argument);
}

TEST(detector, backend_selection_without_gpu)
{
    if (cuda_device_count() > 0)
        GTEST_SKIP() << "a CUDA device is present";
    detector_config c;
    c.backend = backend_kind::automatic;
    EXPECT_EQ(detector::make(c)->backend(), "cpu");
    c.backend = backend_kind::cuda;
    EXPECT_THROW(detector::make(c), std::runtime_error);
}

TEST(detector, device_index)
{
    // Negative: refused with the configuration, on every backend.
    for (const auto backend :
         { backend_kind::cpu, backend_kind::cuda, backend_kind::automatic }) {
        detector_config c;
        c.backend = backend;
        c.device = -1;
        try {
            detector::make(c);
            ADD_FAILURE() << "device -1 was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("device must be >= 0"),
                      std::string::npos)
                << e.what();
        }
    }
    // The CPU backend ignores the index.
    detector_config c;
    c.device = 7;
    auto cpu = detector::make(c);
    EXPECT_EQ(cpu->backend(), "cpu");
    EXPECT_EQ(cpu->config().device, 7);
    // An index without a device: cuda refuses it naming why, auto takes the CPU.
    const int n = cuda_device_count();
    c.device = n;
    c.backend = backend_kind::automatic;
    EXPECT_EQ(detector::make(c)->backend(), "cpu");
    c.backend = backend_kind::cuda;
    const std::string why = n == 0
                                ? "no CUDA device is available"
                                : "CUDA device " + std::to_string(n) + " does not exist";
    try {
        detector::make(c);
        ADD_FAILURE() << "backend cuda on device " << n << " was made";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
}

TEST(detector, singular_channel_gives_valid_bits)
{
    for (const char* a : { "ml", "zf", "mmse" }) {
        auto b = qa::make_batch(2, 2, modulation::qam16, 20, 2, 20, 20, 8);
        for (int m = 0; m < b.n_mat; ++m) {
            qa::cf* h = &b.H[m * 4];
            if (m % 2) { // rank one: second column = first
                h[1] = h[0];
                h[3] = h[2];
            } else { // all zero
                for (int i = 0; i < 4; ++i)
                    h[i] = 0;
            }
        }
        auto det = qa::make(a, 2, 2, modulation::qam16);
        const auto bits = qa::run_bits(*det, b);
        for (auto x : bits)
            EXPECT_LE(x, 1);
        if (det->soft())
            for (float l : qa::run_llr(*det, b))
                EXPECT_TRUE(std::isfinite(l)) << a;
    }
}

TEST(worker_pool, every_share_once_and_alone)
{
    // Runs of 2..8 shares, back to back: each share runs exactly once per run, never two
    // threads in one share at once, and the caller gets share 0.
    core::worker_pool pool;
    for (int rep = 0; rep < 300; ++rep) {
        const size_t n = 2 + rep % 7;
        std::vector<std::atomic<int>> runs(n), inside(n);
        std::atomic<int> overlaps{ 0 };
        std::thread::id zero;
        pool.run(n, [&](size_t t) {
            overlaps += inside[t]++ != 0;
            if (t == 0)
                zero = std::this_thread::get_id();
            runs[t]++;
            inside[t]--;
        });
        for (size_t t = 0; t < n; ++t)
            ASSERT_EQ(runs[t].load(), 1) << "run " << rep << " share " << t;
        ASSERT_EQ(overlaps.load(), 0);
        ASSERT_EQ(zero, std::this_thread::get_id());
    }
}

TEST(worker_pool, caller_takes_shares_no_worker_has_started)
{
    // Share 0 returns at once; share 1 is left for a worker to wake up for. The caller
    // does not wait for that wake-up: it takes share 1 itself when no worker has yet
    // (which happens in nearly every run: waking a thread takes microseconds).
    core::worker_pool pool;
    int on_caller = 0;
    for (int rep = 0; rep < 200; ++rep) {
        std::thread::id ran_on;
        pool.run(2, [&](size_t t) {
            if (t == 1)
                ran_on = std::this_thread::get_id();
        });
        on_caller += ran_on == std::this_thread::get_id();
    }
    EXPECT_GT(on_caller, 0);
}

TEST(worker_pool, exceptions_reach_the_caller)
{
    core::worker_pool pool;
    for (size_t bad : { 0, 1, 3 }) {
        std::atomic<int> runs{ 0 };
        try {
            pool.run(4, [&](size_t t) {
                runs++;
                if (t == bad || t == 3)
                    throw std::runtime_error("share " + std::to_string(t));
            });
            FAIL() << "no exception";
        } catch (const std::runtime_error& e) {
            // The first failing share's, in share order; every share still ran.
            EXPECT_EQ(std::string(e.what()), "share " + std::to_string(bad));
        }
        EXPECT_EQ(runs.load(), 4);
    }
    // Still usable afterwards.
    std::atomic<int> runs{ 0 };
    pool.run(3, [&](size_t) { runs++; });
    EXPECT_EQ(runs.load(), 3);
}
