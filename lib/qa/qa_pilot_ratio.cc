/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// The pilot-to-data power ratio (docs/SLOT_LAYOUT.md) on the engines, end to end:
// slot_mapper (CRS at sqrt(10^(ratio/10))) -> an EPA channel per slot and noise ->
// slot_receiver (channel_estimation with the ratio known, estimated or not told, then
// MMSE detection). Every run of one seed sees the same bits, channels and unit noise
// samples (scaled to the SNR), so BERs of different ratios and SNRs compare with little
// statistical noise.

#include "phy/channel_estimation.h"
#include "phy/slot_mapper.h"
#include "receiver/slot_receiver.h"
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <gnuradio/mimodet/detector.h>
#include <gnuradio/mimodet/lte_grid.h>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <random>
#include <vector>

using namespace gr::mimodet;
using cf = std::complex<float>;
using cd = std::complex<double>;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_mhz = 5.0;
constexpr int k_n_tx = 2, k_n_rx = 4, k_cell = 7;

struct link_result {
    double ber = 0;
    double ratio_db = 0; //!< mean of the receiver's per-slot ratio
    double ratio_sd = 0; //!< its standard deviation over the slots
    double nmse = 0;     //!< sum |H_est - H|^2 / sum |H|^2
    double nv_ratio = 0; //!< mean estimated / true noise variance
    size_t bits = 0;
};

/*!
 * n_slots slots of random bits through the link: transmitter ratio tx_db, receiver
 * ratio rx_db (NaN: estimated), SNR per data element snr_db (docs/CONVENTIONS.md), EPA
 * taps drawn per slot (unit total power per link).
 */
link_result run_link(
    modulation mod, double tx_db, double rx_db, double snr_db, int n_slots, unsigned seed)
{
    const auto num = lte_numerology::from_bandwidth(k_mhz);
    const int n_sc = num.n_sc;
    const core::slot_mapper mapper(num, k_n_tx, mod, k_cell, tx_db);
    const lte_grid grid(num, k_n_tx, k_cell);
    detector_config cfg;
    cfg.algorithm = "mmse";
    cfg.n_tx = k_n_tx;
    cfg.n_rx = k_n_rx;
    cfg.mod = mod;
    cfg.backend = backend_kind::cpu;
    cfg.threads = 1;
    core::slot_receiver rx(
        grid, k_n_rx, detector::make(cfg), 1, false, std::nullopt, rx_db);
    static const double delay_ns[] = { 0, 30, 70, 90, 110, 190, 410 };
    static const double power_db[] = { 0, -1, -2, -3, -8, -17.2, -20.8 };
    constexpr int taps = 7;
    double total = 0;
    for (double p : power_db)
        total += std::pow(10.0, p / 10);

    std::mt19937 bit_rng(seed), chan_rng(seed + 1), noise_rng(seed + 2);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    const double sd = std::sqrt(k_n_tx * std::pow(10.0, -snr_db / 10));
    std::vector<std::vector<cf>> x(k_n_tx, std::vector<cf>(mapper.grid_size()));
    std::vector<std::vector<cf>> y(k_n_rx, std::vector<cf>(mapper.grid_size()));
    std::vector<cf*> xp;
    std::vector<const cf*> yp;
    for (auto& v : x)
        xp.push_back(v.data());
    for (auto& v : y)
        yp.push_back(v.data());
    std::vector<cd> H(static_cast<size_t>(n_sc) * k_n_rx * k_n_tx);
    std::vector<cf> H_est(rx.estimation().h_size());
    link_result res;
    size_t errors = 0;
    double err = 0, pow_h = 0, ratio2 = 0;
    for (int s = 0; s < n_slots; ++s) {
        const int ns = s % lte_numerology::slots_per_frame;
        std::vector<uint8_t> bits(mapper.bits_per_slot(ns));
        for (auto& b : bits)
            b = static_cast<uint8_t>(bit_rng() & 1);
        mapper.map(ns, bits.data(), xp.data());
        for (int r = 0; r < k_n_rx; ++r)
            for (int t = 0; t < k_n_tx; ++t) {
                cd a[taps];
                for (int i = 0; i < taps; ++i)
                    a[i] = cd(g(chan_rng), g(chan_rng)) *
                           std::sqrt(std::pow(10.0, power_db[i] / 10) / total);
                for (int k = 0; k < n_sc; ++k) {
                    const double f =
                        15e3 * (k < n_sc / 2 ? k - n_sc / 2 : k - n_sc / 2 + 1);
                    cd h = 0;
                    for (int i = 0; i < taps; ++i)
                        h += a[i] * std::polar(1.0, -2 * M_PI * f * delay_ns[i] * 1e-9);
                    H[(static_cast<size_t>(k) * k_n_rx + r) * k_n_tx + t] = h;
                }
            }
        for (int r = 0; r < k_n_rx; ++r)
            for (int e = 0; e < mapper.grid_size(); ++e) {
                cd v(sd * g(noise_rng), sd * g(noise_rng));
                const int k = e % n_sc;
                for (int t = 0; t < k_n_tx; ++t)
                    v += H[(static_cast<size_t>(k) * k_n_rx + r) * k_n_tx + t] *
                         cd(x[t][e]);
                y[r][e] = cf(v);
            }
        std::vector<uint8_t> out(rx.detection().values_per_slot(ns));
        const auto rr = rx.receive_bits(ns, yp.data(), out.data());
        EXPECT_TRUE(rr.why.empty()) << rr.why;
        for (size_t i = 0; i < out.size(); ++i)
            errors += out[i] != bits[i];
        res.bits += out.size();
        const double ratio = rx.estimation().last_pilot_ratio_db();
        res.ratio_db += ratio / n_slots;
        ratio2 += ratio * ratio / n_slots;
        res.nv_ratio += rr.noise_var / (sd * sd) / n_slots;
        // H as the detector saw it (the estimator again on the same grids: the same H).
        rx.estimation().estimate(ns, yp.data(), H_est.data());
        for (size_t i = 0; i < H.size(); ++i) {
            err += std::norm(cd(H_est[i]) - H[i]);
            pow_h += std::norm(H[i]);
        }
    }
    res.ber = static_cast<double>(errors) / res.bits;
    res.ratio_sd = std::sqrt(std::max(0.0, ratio2 - res.ratio_db * res.ratio_db));
    res.nmse = err / pow_h;
    return res;
}

void print(const char* what, double snr, const link_result& r)
{
    std::printf("%-34s SNR %5.1f dB: BER %.4e (%zu bits), receiver ratio %+6.2f dB (sd "
                "%.3f), NMSE %.2e, noise_var est/true %.3f\n",
                what,
                snr,
                r.ber,
                r.bits,
                r.ratio_db,
                r.ratio_sd,
                r.nmse,
                r.nv_ratio);
}

} // namespace

TEST(pilot_ratio, parameter_checks)
{
    const auto num = lte_numerology::from_bandwidth(1.4);
    for (double bad : { 10.5,
                        -10.5,
                        std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity() }) {
        EXPECT_THROW(core::slot_mapper(num, 2, modulation::qpsk, 0, bad),
                     std::invalid_argument);
        EXPECT_THROW(core::channel_estimation(num, 2, 2, 0, 4.7, 1, bad),
                     std::invalid_argument);
    }
    EXPECT_THROW(core::slot_mapper(num, 2, modulation::qpsk, 0, k_nan),
                 std::invalid_argument);
    EXPECT_NO_THROW(core::slot_mapper(num, 2, modulation::qpsk, 0, 10.0));
    EXPECT_NO_THROW(core::slot_mapper(num, 2, modulation::qpsk, 0, -10.0));
    core::channel_estimation known(num, 2, 2, 0, 4.7, 1, -3.0);
    EXPECT_FALSE(known.estimates_pilot_ratio());
    EXPECT_EQ(known.last_pilot_ratio_db(), -3.0);
    core::channel_estimation estimated(num, 2, 2, 0, 4.7, 1, k_nan);
    EXPECT_TRUE(estimated.estimates_pilot_ratio());
    EXPECT_TRUE(std::isnan(estimated.last_pilot_ratio_db())); // no slot yet
    EXPECT_THROW(estimated.h_scale(1, nullptr, 1.0), std::logic_error);
    // The known ratio's scale is 1 / amplitude, exactly 1 at 0 dB (today's H, bit for
    // bit).
    EXPECT_EQ(core::channel_estimation(num, 2, 2, 0).h_scale(1, nullptr, 1.0), 1.0f);
    EXPECT_NEAR(known.h_scale(1, nullptr, 1.0), std::pow(10.0, 3.0 / 20), 1e-6);
}

TEST(pilot_ratio, h_in_data_units_and_noise_variance)
{
    // +6 dB pilots: told or estimated, the receiver's H has the NMSE of an unboosted
    // link or better (stronger pilots), and the noise variance stays that of the grid;
    // not told, H is off by 6 dB (NMSE (2 - 1)^2 = 1).
    const double snr = 20;
    const auto base = run_link(modulation::qam16, 0, 0, snr, 20, 5);
    const auto known = run_link(modulation::qam16, 6, 6, snr, 20, 5);
    const auto est = run_link(modulation::qam16, 6, k_nan, snr, 20, 5);
    const auto untold = run_link(modulation::qam16, 6, 0, snr, 20, 5);
    print("unboosted", snr, base);
    print("+6 dB pilots, known", snr, known);
    print("+6 dB pilots, estimated", snr, est);
    print("+6 dB pilots, receiver at 0 dB", snr, untold);
    EXPECT_LT(known.nmse, base.nmse);
    EXPECT_LT(est.nmse, base.nmse);
    EXPECT_NEAR(untold.nmse, 1.0, 0.1);
    for (const auto* r : { &base, &known, &est, &untold })
        EXPECT_NEAR(r->nv_ratio, 1.0, 0.1);
    EXPECT_NEAR(est.ratio_db, 6.0, 0.1);
    EXPECT_LT(est.ratio_sd, 0.2);
}

TEST(pilot_ratio, estimate_across_ratios_and_snr)
{
    // The per-slot estimate: unbiased within 0.1 dB, spread below 0.25 dB, from -6 to
    // +9 dB and 10 to 30 dB SNR, with 16QAM and 64QAM data.
    for (double tx : { -6.0, -3.0, 3.0, 9.0 })
        for (double snr : { 10.0, 30.0 }) {
            const auto r = run_link(
                tx > 0 ? modulation::qam64 : modulation::qam16, tx, k_nan, snr, 10, 9);
            print(tx > 0 ? "estimated ratio, 64QAM" : "estimated ratio, 16QAM", snr, r);
            EXPECT_NEAR(r.ratio_db, tx, 0.1) << tx << " dB at SNR " << snr;
            EXPECT_LT(r.ratio_sd, 0.25) << tx << " dB at SNR " << snr;
        }
}

TEST(pilot_ratio, boosted_pilots_decode_as_well_16qam_64qam)
{
    // A boosted transmitter (+3 dB pilots, and +6 dB: pilots +3 dB, data -3 dB) decodes
    // as well as an unboosted one, with the ratio known and estimated: its BER at SNR s
    // is at most the unboosted link's at s - 0.2 dB.
    // Weaker pilots (-3 dB) give a channel estimate with twice the error (the pilots'
    // SNR is 3 dB lower), which costs about 0.3 dB here whatever the receiver does:
    // known, the ratio must cost no more than 0.5 dB against the unboosted link, and
    // estimated no more than 0.2 dB against known.
    struct point {
        modulation mod;
        const char* name;
        double snr;
    };
    for (const point& p : { point{ modulation::qam16, "16QAM", 14.0 },
                            point{ modulation::qam64, "64QAM", 20.0 } }) {
        const int slots = 60;
        const auto base = run_link(p.mod, 0, 0, p.snr, slots, 11);
        const auto base_lo = run_link(p.mod, 0, 0, p.snr - 0.2, slots, 11);
        std::printf("%s\n", p.name);
        print("unboosted", p.snr, base);
        print("unboosted", p.snr - 0.2, base_lo);
        ASSERT_GT(base.ber, 1e-3) << "the SNR must leave errors to compare";
        ASSERT_LT(base.ber, base_lo.ber) << "0.2 dB must show in the BER";
        for (double tx : { 3.0, 6.0 }) {
            const auto known = run_link(p.mod, tx, tx, p.snr, slots, 11);
            const auto est = run_link(p.mod, tx, k_nan, p.snr, slots, 11);
            print(tx > 4 ? "+6 dB pilots, known" : "+3 dB pilots, known", p.snr, known);
            print(tx > 4 ? "+6 dB pilots, estimated" : "+3 dB pilots, estimated",
                  p.snr,
                  est);
            EXPECT_LE(known.ber, base_lo.ber) << p.name << " " << tx << " dB known";
            EXPECT_LE(est.ber, base_lo.ber) << p.name << " " << tx << " dB estimated";
        }
        const auto base_lo5 = run_link(p.mod, 0, 0, p.snr - 0.5, slots, 11);
        const auto weak = run_link(p.mod, -3, -3, p.snr, slots, 11);
        const auto weak_lo = run_link(p.mod, -3, -3, p.snr - 0.2, slots, 11);
        const auto weak_est = run_link(p.mod, -3, k_nan, p.snr, slots, 11);
        print("unboosted", p.snr - 0.5, base_lo5);
        print("-3 dB pilots, known", p.snr, weak);
        print("-3 dB pilots, known", p.snr - 0.2, weak_lo);
        print("-3 dB pilots, estimated", p.snr, weak_est);
        EXPECT_LE(weak.ber, base_lo5.ber) << p.name << " -3 dB known";
        EXPECT_LE(weak_est.ber, weak_lo.ber) << p.name << " -3 dB estimated";
    }
}

TEST(pilot_ratio, receiver_not_told_fails)
{
    // +6 dB pilots and a receiver left at 0 dB: H twice too large, 16QAM's inner and
    // outer rings swap places; the same receiver told the ratio decodes.
    const double snr = 14;
    const auto told = run_link(modulation::qam16, 6, 6, snr, 20, 13);
    const auto untold = run_link(modulation::qam16, 6, 0, snr, 20, 13);
    print("+6 dB pilots, known", snr, told);
    print("+6 dB pilots, receiver at 0 dB", snr, untold);
    EXPECT_GT(untold.ber, 0.1);
    EXPECT_GT(untold.ber, 10 * told.ber);
}
