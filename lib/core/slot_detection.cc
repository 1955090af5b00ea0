/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "slot_detection.h"
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace gr {
namespace mimodet {
namespace core {

slot_detection::slot_detection(const lte_grid& grid, int n_rx, detector::sptr det)
    : d_grid(grid), d_n_tx(grid.n_ports()), d_n_rx(n_rx), d_det(std::move(det))
{
    if (!d_det)
        throw std::invalid_argument("mimodet: slot_detection needs a detector");
    const auto& cfg = d_det->config();
    if (cfg.n_tx != d_n_tx || cfg.n_rx != n_rx)
        throw std::invalid_argument("mimodet: detector antennas (" + std::to_string(cfg.n_tx) +
                                    "x" + std::to_string(cfg.n_rx) +
                                    ") do not match the grid's");
    d_per_elem = d_det->bits_per_vector();
    const int n_sc = grid.numerology().n_sc;
    d_groups.resize(lte_numerology::slots_per_frame);
    for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns) {
        const auto& data = grid.data_elements(ns);
        // Per subcarrier, its data elements (increasing l) with their output positions.
        std::vector<std::vector<std::pair<int, int>>> per_k(n_sc);
        for (size_t j = 0; j < data.size(); ++j)
            per_k[data[j] % n_sc].emplace_back(data[j], static_cast<int>(j));
        std::map<int, group> by_count;
        for (int k = 0; k < n_sc; ++k) {
            const int n = static_cast<int>(per_k[k].size());
            if (n == 0)
                continue;
            auto& g = by_count[n];
            g.n_sym = n;
            g.sc.push_back(k);
            for (const auto& e : per_k[k]) { // data elements are in time order
                g.re.push_back(e.first);
                g.pos.push_back(e.second);
            }
        }
        for (auto& kv : by_count)
            d_groups[ns].push_back(std::move(kv.second));
    }
}

size_t slot_detection::max_values_per_slot() const
{
    size_t m = 0;
    for (int ns = 0; ns < lte_numerology::slots_per_frame; ++ns)
        m = std::max(m, values_per_slot(ns));
    return m;
}

void slot_detection::gather(
    const group& g, const cf* const* grids, const cf* H, cf* H_batch, cf* y_batch) const
{
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    for (size_t m = 0; m < g.sc.size(); ++m)
        std::copy(H + g.sc[m] * hm, H + (g.sc[m] + 1) * hm, H_batch + m * hm);
    for (size_t i = 0; i < g.re.size(); ++i)
        for (int r = 0; r < d_n_rx; ++r)
            y_batch[i * d_n_rx + r] = grids[r][g.re[i]];
}

std::string
slot_detection::check(int ns, const cf* const* grids, const cf* H, float noise_var) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        return "slot index " + std::to_string(ns) + " outside 0..19";
    if (!std::isfinite(noise_var) || !(noise_var > 0.0f))
        return "noise_var " + std::to_string(noise_var) + " is not finite and > 0";
    auto bad = [](const cf& v) { return !std::isfinite(v.real()) || !std::isfinite(v.imag()); };
    const size_t hn = static_cast<size_t>(d_grid.numerology().n_sc) * d_n_rx * d_n_tx;
    for (size_t i = 0; i < hn; ++i)
        if (bad(H[i]))
            return "H contains NaN or Inf";
    for (int r = 0; r < d_n_rx; ++r)
        for (int re : d_grid.data_elements(ns))
            if (bad(grids[r][re]))
                return "grid of antenna " + std::to_string(r) + " contains NaN or Inf";
    return std::string();
}

template <typename T, typename F>
void slot_detection::run(
    int ns, const cf* const* grids, const cf* H, float noise_var, T* out, F call)
{
    const std::string why = check(ns, grids, H, noise_var);
    if (!why.empty())
        throw std::invalid_argument("mimodet: slot " + std::to_string(ns) + ": " + why);
    const size_t hm = static_cast<size_t>(d_n_rx) * d_n_tx;
    std::vector<T>& res = buffer(out);
    for (const auto& g : d_groups[ns]) {
        const size_t n_mat = g.sc.size();
        d_H.resize(n_mat * hm);
        d_y.resize(g.re.size() * d_n_rx);
        d_nv.assign(n_mat, noise_var);
        res.resize(g.re.size() * d_per_elem);
        gather(g, grids, H, d_H.data(), d_y.data());
        call(d_H.data(), d_y.data(), n_mat, static_cast<size_t>(g.n_sym), d_nv.data(), res.data());
        scatter(g, res.data(), out);
    }
}

void slot_detection::detect_bits(int ns,
                                 const cf* const* grids,
                                 const cf* H,
                                 float noise_var,
                                 uint8_t* out,
                                 size_t* truncated)
{
    if (truncated)
        *truncated = 0;
    run(ns, grids, H, noise_var, out,
        [this, truncated](
            const cf* h, const cf* y, size_t m, size_t s, const float* nv, uint8_t* o) {
            if (!truncated) {
                d_det->detect_bits(h, y, m, s, nv, o);
                return;
            }
            d_stats.assign(m * s, vector_stats{});
            d_det->detect_bits(h, y, m, s, nv, o, d_stats.data());
            for (const auto& st : d_stats)
                *truncated += st.truncated;
        });
}

void slot_detection::detect_llr(
    int ns, const cf* const* grids, const cf* H, float noise_var, float* out)
{
    if (!d_det->soft())
        throw std::logic_error("mimodet: detector '" + d_det->config().algorithm +
                               "' gives hard bits only");
    run(ns, grids, H, noise_var, out,
        [this](const cf* h, const cf* y, size_t m, size_t s, const float* nv, float* o) {
            d_det->detect_llr(h, y, m, s, nv, o);
        });
}

} // namespace core
} // namespace mimodet
} // namespace gr
