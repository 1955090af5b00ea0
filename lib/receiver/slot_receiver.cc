/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "receiver/slot_receiver.h"
#include <gnuradio/fft/fft.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

slot_receiver::slot_receiver(const lte_grid& grid,
                             int n_rx,
                             detector::sptr det,
                             int est_threads,
                             bool gpu_estimation,
                             std::optional<int> time_domain_backoff,
                             double pilot_ratio_db)
    : d_est(grid.numerology(),
            grid.n_ports(),
            n_rx,
            grid.cell_id(),
            4.7, // the estimator's default maximal delay spread (the normal CP)
            est_threads,
            pilot_ratio_db),
      d_det(grid, n_rx, std::move(det))
{
    // The GPU stages share the detector's device: the fused path hands them its stream
    // and buffers.
    const int device = d_det.det().config().device;
    if (gpu_estimation)
        d_gpu = make_cuda_channel_estimation(d_est, device);
    // An estimated pilot ratio is measured from the host's grids (h_scale()).
    d_fused = d_gpu && d_det.device_gather() && !d_est.estimates_pilot_ratio();
    d_H.resize(d_est.h_size());
    if (time_domain_backoff) {
        d_ofdm = std::make_unique<ofdm_demodulation>(
            grid.numerology(), *time_domain_backoff, true, "slot_receiver");
        d_fft = d_ofdm->make_fft();
        d_time_grids.resize(static_cast<size_t>(n_rx) * d_ofdm->grid_len());
        for (int r = 0; r < n_rx; ++r)
            d_time_grid_ptrs.push_back(d_time_grids.data() +
                                       static_cast<size_t>(r) * d_ofdm->grid_len());
        if (d_fused)
            d_gpu_ofdm = make_cuda_ofdm_demodulation(*d_ofdm, n_rx, device);
    }
}

slot_receiver::~slot_receiver() = default;

slot_receiver::result slot_receiver::receive(
    int ns, const cf* const* grids, uint8_t* bits, float* llr, bool count_truncated)
{
    result res;
    if (d_fused) {
        const auto s = d_det.detect_estimated(ns, grids, *d_gpu, bits, llr, count_truncated);
        if (s.estimated) {
            res.why = s.why;
            res.noise_var = s.noise_var;
            res.truncated = s.truncated;
            if (res.why.empty()) // H stayed on the device
                res.degenerate = d_det.degenerate_vectors(ns, nullptr, llr);
            return res;
        }
        // The GPU found the pilots unusable: the CPU decides (as gpu estimate() does).
    }
    if (ns < 0 || ns >= lte_numerology::slots_per_frame) {
        res.why = "slot index " + std::to_string(ns) + " outside 0..19";
        return res;
    }
    res.noise_var = d_gpu && !d_fused ? d_gpu->estimate(ns, grids, d_H.data())
                                      : d_est.estimate(ns, grids, d_H.data());
    if (!std::isfinite(res.noise_var) || !(res.noise_var > 0.0f)) {
        // What slot_detection would refuse too, said in the receiver's terms.
        const size_t n = d_det.values_per_slot(ns);
        if (llr)
            std::fill(llr, llr + n, 0.0f);
        else
            std::fill(bits, bits + n, uint8_t(0));
        res.why = "unusable pilots (non-finite or all zero): no noise variance";
        return res;
    }
    const std::vector<slot_detection::slot_input> in{ { ns, grids, d_H.data(), res.noise_var } };
    std::vector<std::string> why;
    if (llr) {
        why = d_det.detect_llr(in, llr);
    } else {
        std::vector<size_t> truncated;
        why = d_det.detect_bits(in, bits, count_truncated ? &truncated : nullptr);
        if (count_truncated && !truncated.empty())
            res.truncated = truncated[0];
    }
    res.why = why.at(0);
    if (res.why.empty())
        res.degenerate = d_det.degenerate_vectors(ns, d_H.data(), llr);
    return res;
}

slot_receiver::result
slot_receiver::receive_bits(int ns, const cf* const* grids, uint8_t* out, bool count_truncated)
{
    return receive(ns, grids, out, nullptr, count_truncated);
}

slot_receiver::result slot_receiver::receive_llr(int ns, const cf* const* grids, float* out)
{
    if (!d_det.det().soft())
        throw std::logic_error("mimodet: detector '" + d_det.det().config().algorithm +
                               "' gives hard bits only");
    return receive(ns, grids, nullptr, out, false);
}

slot_receiver::result slot_receiver::receive_time(
    int ns, const cf* const* samples, uint8_t* bits, float* llr, bool count_truncated)
{
    if (!d_ofdm)
        throw std::logic_error("mimodet: slot_receiver made for grids only");
    if (d_gpu_ofdm) {
        const auto s = d_det.detect_estimated_time(
            ns, samples, *d_gpu_ofdm, *d_gpu, bits, llr, count_truncated);
        if (s.estimated) {
            result res;
            res.why = s.why;
            res.noise_var = s.noise_var;
            res.truncated = s.truncated;
            if (res.why.empty()) // H stayed on the device
                res.degenerate = d_det.degenerate_vectors(ns, nullptr, llr);
            return res;
        }
        // Samples that are not finite, or pilots the GPU finds unusable: the grid path
        // decides on the CPU's grids.
    }
    for (int r = 0; r < d_est.n_rx(); ++r)
        d_ofdm->demodulate(*d_fft, samples[r], d_time_grids.data() + r * d_ofdm->grid_len());
    return receive(ns, d_time_grid_ptrs.data(), bits, llr, count_truncated);
}

slot_receiver::result slot_receiver::receive_time_bits(int ns,
                                                       const cf* const* samples,
                                                       uint8_t* out,
                                                       bool count_truncated)
{
    return receive_time(ns, samples, out, nullptr, count_truncated);
}

slot_receiver::result
slot_receiver::receive_time_llr(int ns, const cf* const* samples, float* out)
{
    if (!d_det.det().soft())
        throw std::logic_error("mimodet: detector '" + d_det.det().config().algorithm +
                               "' gives hard bits only");
    return receive_time(ns, samples, nullptr, out, false);
}

bool slot_receiver::register_input_memory(const void* p, size_t bytes, bool mirrored)
{
    return d_gpu_ofdm && d_gpu_ofdm->register_host_memory(p, bytes, mirrored);
}

void slot_receiver::unregister_input_memory()
{
    if (d_gpu_ofdm)
        d_gpu_ofdm->unregister_host_memory();
}

void slot_receiver::prepare()
{
    // Slot 1 (no synchronisation signals, the most data elements), with its pilots on
    // every antenna and a little noise, so the estimator finds the slot usable.
    const int ns = 1;
    const lte_grid& grid = d_est.grid();
    const int n_sc = grid.numerology().n_sc;
    std::vector<std::vector<cf>> g(d_est.n_rx(), std::vector<cf>(7 * static_cast<size_t>(n_sc)));
    for (int r = 0; r < d_est.n_rx(); ++r) {
        uint32_t x = 12345u + r;
        for (auto& v : g[r]) { // small deterministic noise
            x = x * 1664525u + 1013904223u;
            v = cf(1e-2f * ((x >> 8) / 16777216.0f - 0.5f), 1e-2f * ((x >> 16) / 65536.0f - 0.5f));
        }
        for (int t = 0; t < grid.n_ports(); ++t)
            for (int re : grid.crs_elements(ns, t))
                g[r][re] += grid.crs_value(ns, t, re / n_sc, re % n_sc);
    }
    std::vector<const cf*> ptr;
    for (const auto& v : g)
        ptr.push_back(v.data());
    std::vector<uint8_t> bits(d_det.values_per_slot(ns));
    receive(ns, ptr.data(), bits.data(), nullptr, false);
    if (d_gpu_ofdm) { // the demodulator's plan and buffers too, with noise samples
        std::vector<std::vector<cf>> t(d_est.n_rx(),
                                       std::vector<cf>(d_ofdm->slot_samples()));
        std::vector<const cf*> tp;
        for (int r = 0; r < d_est.n_rx(); ++r) {
            uint32_t x = 54321u + r;
            for (auto& v : t[r]) {
                x = x * 1664525u + 1013904223u;
                v = cf((x >> 8) / 16777216.0f - 0.5f, (x >> 16) / 65536.0f - 0.5f);
            }
            tp.push_back(t[r].data());
        }
        receive_time(ns, tp.data(), bits.data(), nullptr, false);
    }
}

} // namespace core
} // namespace mimodet
} // namespace gr
