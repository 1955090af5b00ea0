/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

#include "phy/lte_sync_sss.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gr {
namespace mimodet {
namespace lte_sync {

using namespace detail;

bool sss_correlations(const std::vector<std::vector<cf>>& pss_bins,
                      const std::vector<std::vector<cf>>& sss_bins,
                      const std::vector<cf>& pss,
                      const std::vector<const std::vector<cf>*>& candidates,
                      double* rho)
{
    const size_t n_rx = pss_bins.size(), n_c = candidates.size();
    // z per antenna and subcarrier first, then one sum per candidate in antenna and
    // subcarrier order.
    thread_local std::vector<cd> z;
    z.resize(n_rx * k_sync_len);
    double norm = 0.0;
    for (size_t a = 0; a < n_rx; ++a)
        for (int k = 0; k < k_sync_len; ++k) {
            const cd h = cd(pss_bins[a][k]) * std::conj(cd(pss[k]));
            z[a * k_sync_len + k] = cd(sss_bins[a][k]) * std::conj(h);
            norm += std::abs(z[a * k_sync_len + k]);
        }
    if (!(norm > 0.0) || !std::isfinite(norm))
        return false;
    for (size_t i = 0; i < n_c; ++i) {
        const std::vector<cf>& c = *candidates[i];
        double acc = 0.0;
        for (size_t a = 0; a < n_rx; ++a)
            for (int k = 0; k < k_sync_len; ++k)
                acc += (z[a * k_sync_len + k] * std::conj(cd(c[k]))).real();
        rho[i] = acc / norm;
    }
    return true;
}

sss_decision detect_sss(const std::vector<std::vector<cf>>& pss_bins,
                        const std::vector<std::vector<cf>>& sss_bins,
                        const std::vector<cf>& pss,
                        const std::vector<cf>& sss0,
                        const std::vector<cf>& sss10)
{
    sss_decision d;
    double rho[2];
    if (!sss_correlations(pss_bins, sss_bins, pss, { &sss0, &sss10 }, rho))
        return d;
    d.rho0 = rho[0];
    d.rho10 = rho[1];
    d.ns = d.rho0 >= d.rho10 ? 0 : 10;
    const double best = std::max(d.rho0, d.rho10), other = std::min(d.rho0, d.rho10);
    d.confident = best > 0.4 && best - other > 0.2;
    return d;
}

sss_hypotheses::sss_hypotheses(int n_id2) : d_n_id2(n_id2)
{
    if (n_id2 < 0 || n_id2 > 2)
        throw std::invalid_argument("mimodet: N_ID2 must be 0..2, got " + std::to_string(n_id2));
    d_pss = lte_grid::make_pss(n_id2);
    for (int n_id1 = 0; n_id1 < 168; ++n_id1)
        for (int ns : { 0, 10 })
            d_sss.push_back(lte_grid::make_sss(3 * n_id1 + n_id2, ns));
    for (const auto& v : d_sss)
        d_ptr.push_back(&v);
}

cell_decision sss_hypotheses::detect(const std::vector<std::vector<cf>>& pss_bins,
                                     const std::vector<std::vector<cf>>& sss_bins) const
{
    cell_decision d;
    std::vector<double> rho(d_sss.size());
    if (!sss_correlations(pss_bins, sss_bins, d_pss, d_ptr, rho.data()))
        return d;
    size_t best = 0;
    for (size_t i = 1; i < rho.size(); ++i)
        if (rho[i] > rho[best])
            best = i;
    double second = -1.0;
    for (size_t i = 0; i < rho.size(); ++i)
        if (i != best)
            second = std::max(second, rho[i]);
    d.n_id1 = static_cast<int>(best / 2);
    d.ns = best % 2 == 0 ? 0 : 10;
    d.rho = rho[best];
    d.runner_up = second;
    return d;
}

} // namespace lte_sync
} // namespace mimodet
} // namespace gr
