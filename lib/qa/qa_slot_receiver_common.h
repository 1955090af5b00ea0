/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// slot_receiver against the chain it replaces (the estimator's estimate(), then
// slot_detection with its H and noise variance) on random and bad slots: shared by the
// CPU test (qa_slot_receiver) and the GPU test (qa_gpu_slot_receiver, the fused path).

#ifndef INCLUDED_MIMODET_QA_SLOT_RECEIVER_COMMON_H
#define INCLUDED_MIMODET_QA_SLOT_RECEIVER_COMMON_H

#include "detect/backend.h"
#include "phy/channel_estimation.h"
#include "qa_estimation_slots.h"
#include "receiver/slot_detection.h"
#include "receiver/slot_receiver.h"
#include <gnuradio/fft/fft.h>
#include <gnuradio/tags.h>
#include <gtest/gtest.h>
#include <cmath>
#include <complex>
#include <memory>
#include <string>
#include <vector>

namespace qa {

using gr::mimodet::detector;
using gr::mimodet::detector_config;
using gr::mimodet::modulation;

struct receiver_case {
    double mhz;
    int n_tx, n_rx, cell_id;
    modulation mod;
    std::string algorithm;
    std::string backend; //!< "cpu" or "cuda" (both stages)
    bool llr = false;    //!< soft detectors: LLRs instead of bits
    double pilot_ratio_db = 0.0; //!< the estimator's (NaN: estimated)
};

inline detector_config receiver_config(const receiver_case& c)
{
    detector_config cfg;
    cfg.algorithm = c.algorithm;
    cfg.n_tx = c.n_tx;
    cfg.n_rx = c.n_rx;
    cfg.mod = c.mod;
    cfg.backend = gr::mimodet::parse_backend(c.backend);
    cfg.threads = 2;
    return cfg;
}

//! Counts of what compare_with_chain saw.
struct chain_counts {
    size_t slots = 0, bad = 0, values = 0;
    //! Fused GPU path: slots whose filter was not on the device yet (run twice).
    size_t filter_retries = 0;
};

/*!
 * Runs slots through slot_receiver and through the chain (the same estimator kind, then
 * slot_detection), and expects the same noise variance, the same outcome (detected or
 * not) and bit-equal outputs; zeros for slots not detected.
 */
inline chain_counts compare_with_chain(const receiver_case& c, const std::vector<test_slot>& slots)
{
    using namespace gr::mimodet;
    using cf = std::complex<float>;
    const auto num = lte_numerology::from_bandwidth(c.mhz);
    const lte_grid grid(num, c.n_tx, c.cell_id);
    const bool gpu = c.backend == "cuda";
    core::slot_receiver rx(
        grid, c.n_rx, detector::make(receiver_config(c)), 1, gpu, std::nullopt, c.pilot_ratio_db);
    if (gpu) {
        EXPECT_TRUE(rx.gpu_estimation());
        // An estimated pilot ratio is measured on the host's grids: not fused then.
        EXPECT_EQ(rx.fused(),
                  rx.detection().device_gather() && !std::isnan(c.pilot_ratio_db));
    } else {
        EXPECT_FALSE(rx.fused());
    }
    core::channel_estimation est(num, c.n_tx, c.n_rx, c.cell_id, 4.7, 1, c.pilot_ratio_db);
    std::unique_ptr<core::gpu_channel_estimation> gpu_est;
    if (gpu)
        gpu_est = core::make_cuda_channel_estimation(est);
    core::slot_detection det(grid, c.n_rx, detector::make(receiver_config(c)));
    chain_counts n;
    std::vector<cf> H(est.h_size());
    for (size_t i = 0; i < slots.size(); ++i) {
        const int ns = slots[i].ns;
        std::vector<const cf*> p;
        for (const auto& v : slots[i].y)
            p.push_back(v.data());
        const float nv = gpu_est ? gpu_est->estimate(ns, p.data(), H.data())
                                 : est.estimate(ns, p.data(), H.data());
        const std::vector<core::slot_detection::slot_input> in{ { ns, p.data(), H.data(), nv } };
        const size_t n_out = det.values_per_slot(ns);
        core::slot_receiver::result r;
        std::string why;
        bool same = true;
        if (c.llr) {
            std::vector<float> a(n_out, -3.0f), b(n_out, -5.0f);
            r = rx.receive_llr(ns, p.data(), a.data());
            why = det.detect_llr(in, b.data())[0];
            same = a == b;
            if (!r.why.empty())
                for (float v : a)
                    same &= v == 0.0f;
        } else {
            std::vector<uint8_t> a(n_out, 7), b(n_out, 9);
            r = rx.receive_bits(ns, p.data(), a.data());
            why = det.detect_bits(in, b.data())[0];
            same = a == b;
            if (!r.why.empty())
                for (uint8_t v : a)
                    same &= v == 0;
        }
        EXPECT_TRUE(same) << c.algorithm << " slot " << i << " (ns " << ns << "): outputs differ";
        EXPECT_EQ(r.why.empty(), why.empty())
            << c.algorithm << " slot " << i << ": receiver '" << r.why << "', chain '" << why
            << "'";
        if (std::isnan(nv))
            EXPECT_TRUE(std::isnan(r.noise_var)) << "slot " << i;
        else if (r.why.empty())
            EXPECT_EQ(r.noise_var, nv) << "slot " << i;
        ++n.slots;
        n.bad += !r.why.empty();
        n.values += n_out;
    }
    n.filter_retries = rx.detection().filter_retries();
    return n;
}

/*!
 * bad_input_slots (3 MHz 2x2: a NaN pilot, an all-zero slot, an infinite pilot) and two
 * more: a NaN data element (slot 4), and pilots so large that the noise variance
 * overflows (slot 5).
 * Slots 0 and 6.. are good.
 */
inline std::vector<test_slot> receiver_bad_slots()
{
    using namespace gr::mimodet;
    auto slots = bad_input_slots(8);
    const lte_grid grid(lte_numerology::from_bandwidth(3), 2, 9);
    slots[4].y[1][grid.data_elements(slots[4].ns)[10]] = std::complex<float>(0, NAN);
    for (auto& v : slots[5].y)
        for (int t = 0; t < 2; ++t)
            for (int re : grid.crs_elements(slots[5].ns, t))
                v[re] *= 3e37f;
    return slots;
}


//! A slot's grids (n_rx of 7 * n_sc) as time-domain slots: per symbol the unitary IFFT of
//! its subcarriers' bins with the CP in front, as the slot framer sends them.
inline std::vector<std::vector<std::complex<float>>>
modulate_slot(const gr::mimodet::lte_numerology& num,
              const std::vector<std::vector<std::complex<float>>>& grids)
{
    using cf = std::complex<float>;
    const int N = num.fft_size, n_sc = num.n_sc;
    gr::fft::fft_complex_rev ifft(N, 1);
    const float scale = 1.0f / std::sqrt(static_cast<float>(N));
    std::vector<std::vector<cf>> out;
    for (const auto& g : grids) {
        std::vector<cf> t;
        for (int l = 0; l < 7; ++l) {
            std::fill(ifft.get_inbuf(), ifft.get_inbuf() + N, cf(0, 0));
            for (int k = 0; k < n_sc; ++k)
                ifft.get_inbuf()[num.bin(k)] = g[l * n_sc + k];
            ifft.execute();
            const cf* x = ifft.get_outbuf();
            for (int i = N - num.cp_length(l); i < N; ++i)
                t.push_back(x[i] * scale);
            for (int i = 0; i < N; ++i)
                t.push_back(x[i] * scale);
        }
        out.push_back(std::move(t));
    }
    return out;
}

//! The slots as time-domain streams (modulate_slot), one per antenna, and the "slot"
//! tags of stream 0 (one on each slot's first sample), as ofdm_sync hands them to a
//! mimo_receiver with time_domain.
struct time_domain_streams {
    std::vector<std::vector<std::complex<float>>> samples; // [r]
    std::vector<gr::tag_t> tags;
};

inline time_domain_streams time_domain_input(const gr::mimodet::lte_numerology& num,
                                             const std::vector<test_slot>& slots)
{
    time_domain_streams s;
    for (size_t i = 0; i < slots.size(); ++i) {
        const auto t = modulate_slot(num, slots[i].y);
        s.samples.resize(t.size());
        for (size_t r = 0; r < t.size(); ++r)
            s.samples[r].insert(s.samples[r].end(), t[r].begin(), t[r].end());
        gr::tag_t tag;
        tag.offset = static_cast<uint64_t>(i) * num.slot_samples();
        tag.key = pmt::mp("slot");
        tag.value = pmt::from_long(slots[i].ns);
        s.tags.push_back(tag);
    }
    return s;
}

//! Counts of what compare_time_with_grids saw.
struct time_counts {
    size_t slots = 0, bad = 0, values = 0;
    size_t differing = 0; //!< bits that differ, or LLRs differing by more than 1e-3 relative
};

/*!
 * Time-domain slots (modulate_slot of the test grids) through slot_receiver's
 * receive_time_* against its grid path on the grids that the CPU's ofdm_demodulation
 * makes of them (another slot_receiver with the same configuration). On the CPU both run
 * the same code: equal outputs and noise variances. Fused on the GPU the FFTs are
 * cuFFT's: the noise variances agree to 1e-4 relative and the differing outputs are
 * counted (the caller bounds them).
 */
inline time_counts compare_time_with_grids(const receiver_case& c,
                                           const std::vector<test_slot>& slots)
{
    using namespace gr::mimodet;
    using cf = std::complex<float>;
    const auto num = lte_numerology::from_bandwidth(c.mhz);
    const lte_grid grid(num, c.n_tx, c.cell_id);
    const bool gpu = c.backend == "cuda";
    core::slot_receiver rx(grid, c.n_rx, detector::make(receiver_config(c)), 1, gpu, -1);
    core::slot_receiver ref(grid, c.n_rx, detector::make(receiver_config(c)), 1, gpu);
    EXPECT_NE(rx.demodulation(), nullptr);
    EXPECT_EQ(ref.demodulation(), nullptr);
    EXPECT_EQ(rx.gpu_demodulation(), gpu && rx.fused());
    const core::ofdm_demodulation& dem = *rx.demodulation();
    auto fft = dem.make_fft();
    time_counts n;
    for (size_t i = 0; i < slots.size(); ++i) {
        const int ns = slots[i].ns;
        const auto t = modulate_slot(num, slots[i].y);
        std::vector<std::vector<cf>> g(c.n_rx, std::vector<cf>(dem.grid_len()));
        std::vector<const cf*> tp, gp;
        for (int r = 0; r < c.n_rx; ++r) {
            dem.demodulate(*fft, t[r].data(), g[r].data());
            tp.push_back(t[r].data());
            gp.push_back(g[r].data());
        }
        const size_t n_out = rx.detection().values_per_slot(ns);
        core::slot_receiver::result a, b;
        if (c.llr) {
            std::vector<float> x(n_out, -3.0f), y(n_out, -5.0f);
            a = rx.receive_time_llr(ns, tp.data(), x.data());
            b = ref.receive_llr(ns, gp.data(), y.data());
            for (size_t j = 0; j < n_out; ++j)
                n.differing += std::abs(x[j] - y[j]) > 1e-3f * std::max(1.0f, std::abs(y[j]));
            if (!gpu)
                EXPECT_TRUE(x == y) << c.algorithm << " slot " << i;
        } else {
            std::vector<uint8_t> x(n_out, 7), y(n_out, 9);
            a = rx.receive_time_bits(ns, tp.data(), x.data());
            b = ref.receive_bits(ns, gp.data(), y.data());
            for (size_t j = 0; j < n_out; ++j)
                n.differing += x[j] != y[j];
            if (!gpu)
                EXPECT_TRUE(x == y) << c.algorithm << " slot " << i;
        }
        EXPECT_EQ(a.why.empty(), b.why.empty())
            << c.algorithm << " slot " << i << ": time '" << a.why << "', grids '" << b.why << "'";
        if (a.why.empty() && b.why.empty()) {
            if (gpu)
                EXPECT_NEAR(a.noise_var, b.noise_var, 1e-4f * b.noise_var) << "slot " << i;
            else
                EXPECT_EQ(a.noise_var, b.noise_var) << "slot " << i;
        }
        ++n.slots;
        n.bad += !a.why.empty();
        n.values += n_out;
    }
    return n;
}

} // namespace qa

#endif
