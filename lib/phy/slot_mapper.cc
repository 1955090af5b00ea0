/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/pilot_ratio.h"
#include "phy/slot_mapper.h"
#include <algorithm>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace core {

slot_mapper::slot_mapper(const lte_numerology& num,
                         int n_tx,
                         modulation mod,
                         int cell_id,
                         double pilot_ratio_db)
    : d_grid(num, n_tx, cell_id), d_n_tx(n_tx),
      d_q(constellation::get(mod).bits_per_symbol()),
      d_grid_size(lte_numerology::symbols_per_slot * num.n_sc), d_bits_per_frame(0),
      d_pilot_ratio_db(pilot_ratio::checked_db(pilot_ratio_db, "slot_mapper", false))
{
    const float crs_amp = static_cast<float>(pilot_ratio::amplitude(d_pilot_ratio_db));
    const auto& c = constellation::get(mod);
    d_points.reserve(c.order());
    for (const auto& p : c.points())
        d_points.emplace_back(static_cast<float>(p.real()), static_cast<float>(p.imag()));

    const int S = lte_numerology::slots_per_frame;
    const int n_sc = num.n_sc;
    d_template.assign(static_cast<size_t>(S) * n_tx * d_grid_size, cf(0.0f, 0.0f));
    for (int ns = 0; ns < S; ++ns) {
        d_bits_per_frame += bits_per_slot(ns);
        for (int t = 0; t < n_tx; ++t) {
            cf* g =
                d_template.data() + (static_cast<size_t>(ns) * n_tx + t) * d_grid_size;
            for (int idx : d_grid.crs_elements(ns, t))
                g[idx] = crs_amp * d_grid.crs_value(ns, t, idx / n_sc, idx % n_sc);
            if (t == 0 && lte_grid::has_sync(ns)) {
                const auto& pss = d_grid.pss();
                const auto& sss = d_grid.sss(ns);
                for (int n = 0; n < 62; ++n) {
                    const int k = n_sc / 2 - 31 + n;
                    g[lte_grid::pss_symbol * n_sc + k] = pss[n];
                    g[lte_grid::sss_symbol * n_sc + k] = sss[n];
                }
            }
        }
    }
}

long slot_mapper::map(int ns, const uint8_t* bits, cf* const* grids) const
{
    if (ns < 0 || ns >= lte_numerology::slots_per_frame)
        throw std::out_of_range("mimodet: slot index must be 0..19, got " +
                                std::to_string(ns));
    const auto& data = d_grid.data_elements(ns);
    const size_t n_bits = data.size() * static_cast<size_t>(d_n_tx) * d_q;
    long bad = 0;
    for (size_t i = 0; i < n_bits; ++i)
        bad += bits[i] > 1;

    for (int t = 0; t < d_n_tx; ++t) {
        const cf* tmpl =
            d_template.data() + (static_cast<size_t>(ns) * d_n_tx + t) * d_grid_size;
        std::copy(tmpl, tmpl + d_grid_size, grids[t]);
    }
    const int stride = d_n_tx * d_q;
    const uint8_t* b = bits;
    for (size_t j = 0; j < data.size(); ++j, b += stride) {
        const int idx = data[j];
        const uint8_t* bt = b;
        for (int t = 0; t < d_n_tx; ++t, bt += d_q) {
            int label = 0;
            for (int i = 0; i < d_q; ++i)
                label = (label << 1) | (bt[i] & 1);
            grids[t][idx] = d_points[label];
        }
    }
    return bad;
}

void slot_mapper::symbol_to_bins(const cf* grid, int l, float scale, cf* bins) const
{
    const auto& num = d_grid.numerology();
    const int n_sc = num.n_sc;
    const cf* row = grid + static_cast<size_t>(l) * n_sc;
    std::fill(bins, bins + num.fft_size, cf(0.0f, 0.0f));
    for (int k = 0; k < n_sc; ++k)
        bins[num.bin(k)] = scale * row[k];
}

} // namespace core
} // namespace mimodet
} // namespace gr
