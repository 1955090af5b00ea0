/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "slot_receiver.h"
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
                             bool gpu_estimation)
    : d_est(grid.numerology(),
            grid.n_ports(),
            n_rx,
            grid.cell_id(),
            4.7, // the estimator's default maximal delay spread (the normal CP)
            est_threads),
      d_det(grid, n_rx, std::move(det))
{
    if (gpu_estimation)
        d_gpu = make_cuda_channel_estimation(d_est);
    d_fused = d_gpu && d_det.device_gather();
    d_H.resize(d_est.h_size());
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
}

} // namespace core
} // namespace mimodet
} // namespace gr
