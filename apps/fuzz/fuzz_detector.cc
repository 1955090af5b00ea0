/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Fuzz target of the batch detector API (CPU backend): every algorithm, configurations
// (antennas, modulation, threads, ordering, PSD lvl/exp and deadline, FSD T, SFSD
// N_iter, LLR clipping and scaling, some of them out of range), batch shapes (plain and
// segmented, empty segments included) and sample values (zero, huge, tiny, subnormal,
// NaN, infinite). What it holds the detector to:
//  - a configuration is accepted or refused with std::invalid_argument and a message;
//  - a call with non-finite samples or a noise variance that is not finite and > 0 is
//    refused with std::invalid_argument, detect_llr on a hard detector with
//    std::logic_error, and nothing else throws;
//  - otherwise bits are 0/1, LLRs are finite (and within the clip where one is set),
//    the truncation flag is 0/1 (and 0 without a deadline), and a call is bounded in
//    time (the driver's timeout).
// The PSD's search has no bound per vector of its own: calls of more than 2x2 16QAM get
// a deadline (psd_deadline_us), as a real-time user would set, so one input cannot
// search for minutes. Exhaustive searches of more than 2^12 leaves per vector get at
// most 4 vectors (bounded anyway; this keeps the inputs per second up).

#include "fuzz_input.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <gnuradio/mimodet/detector.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;
using mimodet_fuzz::fuzz_input;

namespace {

//! The case being run, printed with a failure.
std::string g_case;

[[noreturn]] void fail(const char* what, const char* detail = "")
{
    mimodet_fuzz::fail(what, (std::string(detail) + "\n  case: " + g_case).c_str());
}

std::string describe(const detector_config& c)
{
    std::ostringstream os;
    os << c.algorithm << " " << c.n_tx << "x" << c.n_rx
       << " q=" << static_cast<int>(c.mod) << " threads=" << c.threads
       << " sorted_qr=" << c.sorted_qr << " lvl=[";
    for (int v : c.psd_lvl)
        os << v << " ";
    os << "] exp=[";
    for (int v : c.psd_exp)
        os << v << " ";
    os << "] T=" << c.fsd_full_levels << " niter=" << c.sfsd_niter
       << " llr_clip=" << c.llr_clip << " llr_scaled=" << c.llr_scaled
       << " deadline_us=" << c.psd_deadline_us;
    return os.str();
}

const char* const k_algorithms[] = { "ml", "zf", "mmse", "psd", "fsd", "sfsd", "mtt" };

detector_config read_config(fuzz_input& in)
{
    detector_config c;
    c.algorithm = k_algorithms[in.range(0, 6)];
    c.backend = backend_kind::cpu;
    // Mostly valid sizes, sometimes not.
    const bool odd = in.byte() < 8;
    c.n_tx = odd ? in.range(-1, 10) : in.range(1, 4);
    c.n_rx = odd ? in.range(-1, 10) : std::min(8, c.n_tx + in.range(0, 2));
    const int m = in.range(0, 9);
    c.mod = m < 3   ? modulation::qpsk
            : m < 6 ? modulation::qam16
            : m < 9 ? modulation::qam64
                    : static_cast<modulation>(in.range(0, 9));
    c.threads = in.range(0, 3);
    c.sorted_qr = in.byte() < 16 ? in.range(-3, 3) : in.range(-1, 1);
    if (in.flag()) {
        const int n = in.range(0, 2 * std::max(1, c.n_tx) + 2);
        for (int i = 0; i < n; ++i)
            c.psd_lvl.push_back(in.range(-1, 2 * std::max(1, c.n_tx) + 2));
        const int ne = in.flag() ? n : in.range(0, n + 1);
        for (int i = 0; i < ne; ++i)
            c.psd_exp.push_back(in.range(-1, 20));
    }
    c.fsd_full_levels = in.range(-2, std::max(1, c.n_tx) + 1);
    c.sfsd_niter = in.byte() < 200 ? -1 : in.range(-2, 70);
    const uint8_t clip = in.byte();
    c.llr_clip = clip < 160   ? 0.0f
                 : clip < 230 ? 20.0f * std::fabs(in.unit())
                              : in.value(); // negative, NaN, huge, ...
    c.llr_scaled = in.byte() < 200;
    const uint8_t dl = in.byte();
    c.psd_deadline_us = dl < 150   ? 0.0
                        : dl < 250 ? 2000.0 * std::fabs(in.unit())
                                   : in.value();
    return c;
}

bool all_finite(const std::vector<std::complex<float>>& v)
{
    return std::all_of(v.begin(), v.end(), [](const std::complex<float>& x) {
        return std::isfinite(x.real()) && std::isfinite(x.imag());
    });
}

void run_one(fuzz_input& in)
{
    detector_config cfg = read_config(in);
    const int q = static_cast<int>(cfg.mod);
    // See the file comment: the PSD's search is bounded by a deadline beyond 2x2 16QAM.
    if (cfg.algorithm == "psd" && cfg.n_tx * q > 8 && cfg.psd_deadline_us == 0.0)
        cfg.psd_deadline_us = 2000.0;

    g_case = describe(cfg);
    detector::sptr det;
    try {
        det = detector::make(cfg);
    } catch (const std::invalid_argument& e) {
        if (std::string(e.what()).empty())
            fail("make: refused without a message");
        return;
    }
    // Accepted: the configuration must be a sane one.
    if (cfg.n_tx < 1 || cfg.n_tx > 8 || cfg.n_rx < cfg.n_tx || cfg.n_rx > 8)
        fail("make: accepted bad antenna counts");
    if (q != 2 && q != 4 && q != 6)
        fail("make: accepted a bad modulation");
    if (!(cfg.llr_clip >= 0.0f) || std::isinf(cfg.llr_clip))
        fail("make: accepted a bad llr_clip");

    const size_t nr = cfg.n_rx, nt = cfg.n_tx;
    const size_t nb = static_cast<size_t>(det->bits_per_vector());
    // An exhaustive search per vector (ML; FSD/SFSD with T levels fully expanded) of
    // more than 2^12 leaves gets at most 4 vectors: such a call is bounded, but at up to
    // 2^18 leaves per vector a large batch would slow the fuzzer to a few inputs a
    // second.
    const int T = cfg.fsd_full_levels < 0 ? 1 : cfg.fsd_full_levels;
    const double leaves =
        std::pow(2.0,
                 q * (cfg.algorithm == "ml"                               ? cfg.n_tx
                      : cfg.algorithm == "fsd" || cfg.algorithm == "sfsd" ? T
                                                                          : 0));
    const int max_side = leaves > 4096 ? 2 : 8;
    std::vector<batch_segment> segs;
    const bool segmented = in.flag() && max_side > 2;
    const int n_seg = segmented ? in.range(1, 4) : 1;
    size_t n_mat = 0, n_vec = 0;
    for (int i = 0; i < n_seg; ++i) {
        batch_segment g{ static_cast<size_t>(in.range(0, segmented ? 4 : max_side)),
                         static_cast<size_t>(in.range(0, segmented ? 7 : max_side)) };
        segs.push_back(g);
        n_mat += g.n_mat;
        n_vec += g.n_mat * g.n_sym;
    }
    std::vector<std::complex<float>> H(n_mat * nr * nt), y(n_vec * nr);
    std::vector<float> nv(n_mat);
    // One mode per batch: plain Gaussian-like values (deep into the search), or the
    // palette with its edge cases.
    const bool edge = in.flag();
    auto draw = [&] { return edge ? in.value() : 2.0f * in.unit(); };
    for (auto& h : H)
        h = { draw(), draw() };
    for (auto& v : y)
        v = { draw(), draw() };
    for (auto& v : nv)
        v = edge ? in.noise_var() : 0.01f + std::fabs(in.unit());

    bool bad_values = !all_finite(H) || !all_finite(y);
    for (float v : nv)
        bad_values |= !(std::isfinite(v) && v > 0.0f);
    // Without vectors nothing is read; with some, every segment's matrices are
    // checked, those of segments without vectors too.
    if (n_vec == 0)
        bad_values = false;
    const bool want_llr = in.flag();
    const bool want_stats = in.flag();
    {
        std::ostringstream os;
        os << " segments=";
        for (const auto& g : segs)
            os << g.n_mat << "x" << g.n_sym << " ";
        os << (edge ? "edge values" : "plain values") << (want_llr ? " llr" : " bits")
           << (want_stats ? " stats" : "");
        g_case += os.str();
    }

    std::vector<uint8_t> bits(n_vec * nb, 7);
    std::vector<float> llr(n_vec * nb, 7.0f);
    std::vector<vector_stats> stats(n_vec);
    for (auto& s : stats)
        s.truncated = 7;
    const auto t_call = std::chrono::steady_clock::now();
    // MIMODET_FUZZ_SLOW_S=x: names every call that takes longer than x seconds.
    struct slow_report {
        std::chrono::steady_clock::time_point t0;
        ~slow_report()
        {
            static const char* limit = std::getenv("MIMODET_FUZZ_SLOW_S");
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                    .count();
            if (limit && s > std::atof(limit))
                std::fprintf(stderr, "slow call: %.3f s: %s\n", s, g_case.c_str());
        }
    } slow{ t_call };
    try {
        if (want_llr) {
            if (segmented)
                det->detect_llr(H.data(),
                                y.data(),
                                segs,
                                nv.data(),
                                llr.data(),
                                want_stats ? stats.data() : nullptr);
            else
                det->detect_llr(H.data(),
                                y.data(),
                                segs[0].n_mat,
                                segs[0].n_sym,
                                nv.data(),
                                llr.data(),
                                want_stats ? stats.data() : nullptr);
        } else {
            if (segmented)
                det->detect_bits(H.data(),
                                 y.data(),
                                 segs,
                                 nv.data(),
                                 bits.data(),
                                 want_stats ? stats.data() : nullptr);
            else
                det->detect_bits(H.data(),
                                 y.data(),
                                 segs[0].n_mat,
                                 segs[0].n_sym,
                                 nv.data(),
                                 bits.data(),
                                 want_stats ? stats.data() : nullptr);
        }
    } catch (const std::invalid_argument& e) {
        if (!bad_values)
            fail("detect: refused valid input:", e.what());
        return;
    } catch (const std::logic_error& e) {
        if (!(want_llr && !det->soft()))
            fail("detect: logic_error:", e.what());
        return;
    } catch (const std::exception& e) {
        fail("detect: unexpected exception:", e.what());
    }
    if (want_llr && !det->soft())
        fail("detect_llr on a hard detector did not throw");
    if (bad_values)
        fail("detect: accepted non-finite samples or a bad noise variance");

    if (std::getenv("MIMODET_FUZZ_DUMP")) { // reproducing a failure: the case's values
        for (const auto& h : H)
            std::fprintf(stderr, "H %g %g\n", h.real(), h.imag());
        for (const auto& v : y)
            std::fprintf(stderr, "y %g %g\n", v.real(), v.imag());
        for (float v : nv)
            std::fprintf(stderr, "nv %g\n", v);
        for (size_t i = 0; i < n_vec * nb; ++i)
            std::fprintf(stderr, "out %g\n", want_llr ? llr[i] : float(bits[i]));
    }
    const bool deadline = cfg.psd_deadline_us > 0.0;
    for (size_t v = 0; v < n_vec; ++v) {
        if (want_stats && stats[v].truncated > (deadline ? 1u : 0u))
            fail("stats: bad truncated flag");
        for (size_t k = 0; k < nb; ++k) {
            if (!want_llr) {
                if (bits[v * nb + k] > 1)
                    fail("bits: not 0/1");
                continue;
            }
            const float l = llr[v * nb + k];
            if (!std::isfinite(l))
                fail("llr: not finite");
            if (cfg.llr_clip > 0.0f && cfg.llr_scaled &&
                std::fabs(l) > cfg.llr_clip * 1.0001f)
                fail("llr: beyond the clip");
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz_input in(data, size);
    run_one(in);
    return 0;
}
