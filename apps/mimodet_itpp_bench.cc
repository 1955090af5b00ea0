/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// mimodet_itpp_bench: IT++'s sphere decoder (itpp::ND_UPAM::sphere_decoding, a
// Schnorr-Euchner search on a plain Cholesky/QR of the real-valued model) against this
// module's CPU PSD on the same random Rayleigh vectors, both on one core. Every vector
// has its own channel matrix (n_sym = 1), since IT++ has no QR shared between vectors;
// the PSD with 7 vectors per matrix (an OFDM slot's symbols) is printed beside it for
// information. IT++'s starting radius is chosen per configuration as the fastest of a
// few candidates on a calibration subset. The timed passes of the three alternate, so
// that the ratio holds on a loaded machine; the "cpu" column is the process's CPU seconds
// per wall second while timed (below 1: other processes had the core). Both decisions of
// every shared vector are compared by their metric ||y - H s||^2 (both are exact ML
// searches): the exit status is 1 if IT++ failed or either metric is worse than the
// other's.

#include "bench_cli.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <gnuradio/mimodet/constellation.h>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/rayleigh.h>
#include <iostream>
#include <itpp/base/mat.h>
#include <itpp/base/vec.h>
#include <itpp/comm/modulator_nd.h>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gr::mimodet;

namespace {

using clk = std::chrono::steady_clock;

struct options {
    std::vector<int> n_tx = { 4 };
    std::vector<std::string> mods = { "16qam", "64qam" };
    std::vector<double> snrs = { 10, 20 };
    int vectors = 2000;
    int calib_vectors = 200;
    double min_seconds = 1.0;
    std::string csv;
    uint64_t seed = 1;
};

// IT++'s starting radius rmin = c sqrt(noise_var 2 n_rx); rmax = k_rmax_factor rmin.
const std::vector<double> k_radius_factors = { 0.5, 0.75, 1, 1.5, 2, 3 };
const std::vector<double> k_stepups = { 1.5, 2 };
constexpr double k_rmax_factor = 1e3;
constexpr int k_calib_rounds = 3;
// Two ML decisions agree when their metrics agree within this (relative).
constexpr double k_rel_tol = 1e-9;

bool parse(int argc, char** argv, options& o)
{
    bench_cli::parser p("mimodet_itpp_bench",
                        "IT++'s sphere decoder against the psd on the same vectors.");
    p.numbers("--ntx", o.n_tx, "LIST", "transmit (= receive) antennas", 1, 8)
        .words("--mod", o.mods, "LIST", "qpsk,16qam,64qam", bench_cli::k_modulations)
        .numbers("--snr", o.snrs, "LIST", "SNR in dB", -20, 100)
        .number("--vectors",
                o.vectors,
                "N",
                "random vectors per configuration, one channel matrix each",
                1,
                1e8)
        .number("--calib",
                o.calib_vectors,
                "N",
                "vectors of the subset that picks IT++'s starting radius",
                1,
                1e8)
        .number("--seconds",
                o.min_seconds,
                "S",
                "minimum timed seconds per measurement (at least all vectors once)",
                0,
                3600)
        .text("--csv", o.csv, "FILE", "write one CSV row per configuration to FILE")
        .number("--seed", o.seed, "N", "random seed", 0, 9e15)
        .epilog(
            "Exit status 1 if any vector's IT++ and PSD decisions differ in metric or "
            "IT++ failed.\n");
    return p.parse(argc, argv);
}

//! The real-valued model of one complex system: H_r = [Re H, -Im H; Im H, Re H] (column
//! major as IT++ stores it) and y_r = [Re y; Im y].
itpp::mat real_H(const cf* H, int n_tx, int n_rx)
{
    itpp::mat r(2 * n_rx, 2 * n_tx);
    for (int i = 0; i < n_rx; ++i)
        for (int j = 0; j < n_tx; ++j) {
            const std::complex<double> h(H[i * n_tx + j]);
            r(i, j) = h.real();
            r(i, j + n_tx) = -h.imag();
            r(i + n_rx, j) = h.imag();
            r(i + n_rx, j + n_tx) = h.real();
        }
    return r;
}

itpp::vec real_y(const cf* y, int n_rx)
{
    itpp::vec r(2 * n_rx);
    for (int i = 0; i < n_rx; ++i) {
        r(i) = y[i].real();
        r(i + n_rx) = y[i].imag();
    }
    return r;
}

//! ||y_r - H_r s_r||^2 in double precision.
double metric(const itpp::mat& H, const itpp::vec& y, const itpp::vec& s)
{
    double m = 0;
    for (int i = 0; i < H.rows(); ++i) {
        double e = y(i);
        for (int j = 0; j < H.cols(); ++j)
            e -= H(i, j) * s(j);
        m += e * e;
    }
    return m;
}

//! Our bits of one vector as the real-valued symbol vector [Re s; Im s].
itpp::vec our_symbols(const uint8_t* bits, int n_tx, const constellation& c)
{
    const int q = c.bits_per_symbol();
    itpp::vec s(2 * n_tx);
    for (int t = 0; t < n_tx; ++t) {
        int l = 0;
        for (int k = 0; k < q; ++k)
            l = (l << 1) | bits[t * q + k];
        s(t) = c.points()[l].real();
        s(t + n_tx) = c.points()[l].imag();
    }
    return s;
}

//! IT++'s inputs of every vector of a batch with n_sym = 1: its PAM levels are odd
//! integers times its own unit (itpp_unit), ours odd integers times c.scale(), so IT++
//! gets H_r c.scale() / itpp_unit and finds the same lattice point.
struct itpp_inputs {
    std::vector<itpp::mat> H_r, H;
    std::vector<itpp::vec> y;
    std::vector<double> r0; //!< sqrt(noise_var 2 n_rx): the radius unit
};

itpp_inputs to_itpp(const rayleigh_batch& b, double gain)
{
    itpp_inputs in;
    for (int m = 0; m < b.n_mat; ++m) {
        in.H_r.push_back(
            real_H(&b.H[static_cast<size_t>(m) * b.n_rx * b.n_tx], b.n_tx, b.n_rx));
        in.H.push_back(in.H_r.back() * gain);
        in.y.push_back(real_y(&b.y[static_cast<size_t>(m) * b.n_rx], b.n_rx));
        in.r0.push_back(std::sqrt(double(b.noise_var[m]) * 2 * b.n_rx));
    }
    return in;
}

//! Runs IT++ on vectors [0, count) with rmin = c r0; returns the seconds. decisions and
//! status (may be null) receive the detected QLLRs and return codes.
double run_itpp(itpp::ND_UPAM& chan,
                const itpp_inputs& in,
                int count,
                double c,
                double stepup,
                std::vector<itpp::QLLRvec>* decisions,
                std::vector<int>* status)
{
    itpp::QLLRvec llr;
    const auto t0 = clk::now();
    for (int v = 0; v < count; ++v) {
        const double rmin = c * in.r0[v];
        const int st = chan.sphere_decoding(
            in.y[v], in.H[v], rmin, k_rmax_factor * rmin, stepup, llr);
        if (decisions) {
            (*decisions)[v] = llr;
            (*status)[v] = st;
        }
    }
    return std::chrono::duration<double>(clk::now() - t0).count();
}

//! Wall seconds of one whole-batch call of our detector; bits receive its decisions.
double run_ours(detector& det, const rayleigh_batch& b, std::vector<uint8_t>& bits)
{
    bits.resize(b.bits.size());
    const auto t0 = clk::now();
    det.detect_bits(
        b.H.data(), b.y.data(), b.n_mat, b.n_sym, b.noise_var.data(), bits.data());
    return std::chrono::duration<double>(clk::now() - t0).count();
}

//! Accumulated timed seconds and vectors of one contestant.
struct tally {
    double seconds = 0;
    size_t vectors = 0;
    double rate() const { return vectors / seconds; }
};

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto status = bench_cli::command_line("mimodet_itpp_bench",
                                                    [&] { return parse(argc, argv, o); }))
        return *status;
    std::ofstream csv;
    if (!bench_cli::open_csv(
            "mimodet_itpp_bench",
            o.csv,
            "n_tx,n_rx,modulation,snr_db,vectors,itpp_rmin_factor,itpp_stepup,"
            "itpp_vectors_per_s,psd_vectors_per_s,ratio,psd_nsym7_vectors_per_s,"
            "itpp_failed,itpp_worse,psd_worse,cpu_share",
            csv))
        return 2;
    std::printf("IT++ sphere_decoding vs mimodet psd (cpu, 1 thread), one channel matrix "
                "per vector; rmin = c sqrt(noise_var 2 n_rx)\n");
    std::printf("%-5s %-6s %5s %6s %5s %6s %12s %12s %8s %12s %6s %6s %6s %5s\n",
                "ant",
                "mod",
                "snr",
                "vecs",
                "c",
                "stepup",
                "itpp_vec/s",
                "psd_vec/s",
                "psd/itpp",
                "psd7_vec/s",
                "failed",
                "itpp>",
                "psd>",
                "cpu");
    int findings = 0;
    for (int nt : o.n_tx)
        for (const auto& mod_name : o.mods)
            for (double snr : o.snrs) {
                const modulation mod = parse_modulation(mod_name);
                const auto& con = constellation::get(mod);
                const int nr = nt;
                itpp::ND_UPAM chan;
                chan.set_M(2 * nt, con.pam_order());
                // IT++'s level unit: its outermost level is (M - 1) units.
                const double itpp_unit = chan.get_symbols()(0)(0) / (con.pam_order() - 1);
                const auto b1 = make_batch(nt, nr, mod, o.vectors, 1, snr, snr, o.seed);
                const auto b7 =
                    make_batch(nt, nr, mod, (o.vectors + 6) / 7, 7, snr, snr, o.seed + 1);
                const auto in = to_itpp(b1, con.scale() / itpp_unit);

                // IT++'s fastest starting radius and step on the calibration subset: each
                // candidate's best of k_calib_rounds interleaved rounds, which a busy
                // machine's interruptions of single passes do not decide.
                const int nc = std::min(o.calib_vectors, o.vectors);
                std::vector<double> cand_s(k_radius_factors.size() * k_stepups.size(),
                                           1e300);
                for (int round = 0; round < k_calib_rounds; ++round)
                    for (size_t i = 0; i < cand_s.size(); ++i)
                        cand_s[i] =
                            std::min(cand_s[i],
                                     run_itpp(chan,
                                              in,
                                              nc,
                                              k_radius_factors[i / k_stepups.size()],
                                              k_stepups[i % k_stepups.size()],
                                              nullptr,
                                              nullptr));
                const size_t best =
                    std::min_element(cand_s.begin(), cand_s.end()) - cand_s.begin();
                const double best_c = k_radius_factors[best / k_stepups.size()];
                const double best_step = k_stepups[best % k_stepups.size()];
                std::vector<itpp::QLLRvec> dec(o.vectors);
                std::vector<int> status(o.vectors);
                detector_config cfg;
                cfg.algorithm = "psd";
                cfg.backend = backend_kind::cpu;
                cfg.threads = 1;
                cfg.n_tx = nt;
                cfg.n_rx = nr;
                cfg.mod = mod;
                const auto det = detector::make(cfg);
                std::vector<uint8_t> bits, bits7;
                // Untimed first passes: the decisions compared below, and warm-up.
                run_itpp(chan, in, o.vectors, best_c, best_step, &dec, &status);
                run_ours(*det, b1, bits);
                run_ours(*det, b7, bits7);
                // The three alternate pass by pass, so that a change of the machine's
                // load while they run falls on all of them alike.
                tally t_itpp, t_ours, t_ours7;
                const auto c0 = std::clock();
                const auto w0 = clk::now();
                do {
                    t_itpp.seconds += run_itpp(
                        chan, in, o.vectors, best_c, best_step, nullptr, nullptr);
                    t_itpp.vectors += o.vectors;
                    t_ours.seconds += run_ours(*det, b1, bits);
                    t_ours.vectors += o.vectors;
                    t_ours7.seconds += run_ours(*det, b7, bits7);
                    t_ours7.vectors += static_cast<size_t>(b7.n_mat) * b7.n_sym;
                } while (std::min({ t_itpp.seconds, t_ours.seconds, t_ours7.seconds }) <
                         o.min_seconds);
                // The process's CPU seconds per wall second while timed: below 1, other
                // processes took the core part of the time.
                const double cpu_share =
                    (double(std::clock() - c0) / CLOCKS_PER_SEC) /
                    std::chrono::duration<double>(clk::now() - w0).count();
                const double itpp_vps = t_itpp.rate();
                const double ours_vps = t_ours.rate();
                const double ours7_vps = t_ours7.rate();

                // Both decisions of every vector by their metric.
                const int nb = det->bits_per_vector();
                int failed = 0, itpp_worse = 0, ours_worse = 0;
                for (int v = 0; v < o.vectors; ++v) {
                    if (status[v] != 0) {
                        ++failed;
                        continue;
                    }
                    itpp::bvec hard(dec[v].size());
                    for (int k = 0; k < dec[v].size(); ++k)
                        hard(k) = dec[v](k) < 0; // IT++'s QLLR: positive means 0
                    const itpp::vec s_itpp =
                        chan.modulate_bits(hard) * (con.scale() / itpp_unit);
                    const itpp::vec s_ours =
                        our_symbols(&bits[static_cast<size_t>(v) * nb], nt, con);
                    const double m_itpp = metric(in.H_r[v], in.y[v], s_itpp);
                    const double m_ours = metric(in.H_r[v], in.y[v], s_ours);
                    itpp_worse += m_itpp > m_ours * (1 + k_rel_tol);
                    ours_worse += m_ours > m_itpp * (1 + k_rel_tol);
                }
                findings += failed + itpp_worse + ours_worse;
                char ant[16];
                std::snprintf(ant, sizeof ant, "%dx%d", nt, nr);
                std::printf(
                    "%-5s %-6s %5.1f %6d %5.2f %6.1f %12.0f %12.0f %8.2f %12.0f %6d "
                    "%6d %6d %5.2f\n",
                    ant,
                    mod_name.c_str(),
                    snr,
                    o.vectors,
                    best_c,
                    best_step,
                    itpp_vps,
                    ours_vps,
                    ours_vps / itpp_vps,
                    ours7_vps,
                    failed,
                    itpp_worse,
                    ours_worse,
                    cpu_share);
                std::fflush(stdout);
                if (csv)
                    csv << nt << ',' << nr << ',' << mod_name << ',' << snr << ','
                        << o.vectors << ',' << best_c << ',' << best_step << ','
                        << itpp_vps << ',' << ours_vps << ',' << ours_vps / itpp_vps
                        << ',' << ours7_vps << ',' << failed << ',' << itpp_worse << ','
                        << ours_worse << ',' << cpu_share << '\n';
            }
    if (findings) {
        std::printf("mismatches: %d vectors where IT++ failed or the two metrics differ "
                    "by more than %g relative\n",
                    findings,
                    k_rel_tol);
        return 1;
    }
    std::printf("mismatches: 0 (every vector's decisions have the same metric)\n");
    return 0;
}
