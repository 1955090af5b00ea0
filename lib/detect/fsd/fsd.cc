/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Hard-output fixed-complexity sphere decoder (Barbero & Thompson 2008, as described in
// Roger et al. 2012, Section 3): FSD ordering and QR once per matrix, then per vector a
// full expansion of the first T detected levels and SIC (Eq. 6) below them; the path of
// least accumulated PED (Eqs. 4-5) is the decision.

#include "detect/fsd/fsd_common.h"
#include "detect/kernel.h"
#include "detect/qr.h"
#include <cmath>
#include <limits>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

class fsd_kernel : public cpu_kernel
{
public:
    fsd_kernel(const detector_config& cfg, const fsd_params& p)
        : d_nt(cfg.n_tx),
          d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()),
          d_M(d_c.order()),
          d_full_levels(p.full_levels),
          d_first_se_level(cfg.n_tx - 1 - p.full_levels),
          d_z(cfg.n_tx),
          d_inv_diag(cfg.n_tx),
          d_sym(cfg.n_tx),
          d_label(cfg.n_tx),
          d_best_label(cfg.n_tx)
    {
        fsd_counts(d_nt, d_q, p, d_expanded, d_evaluated);
    }

    void detect(const MatC& H,
                const cd* y,
                int n_sym,
                double noise_var,
                uint8_t* bits,
                float* llr,
                vector_stats* stats) override
    {
        const int nr = static_cast<int>(H.rows());
        const auto qr = qr_permuted(H, fsd_ordering(H, d_full_levels));
        d_R = &qr.R;
        sic_inverse_diagonal(qr.R, d_inv_diag.data());
        const int nb = d_nt * d_q;
        for (int s = 0; s < n_sym; ++s) {
            d_z.noalias() = qr.Q.adjoint() * Eigen::Map<const VecC>(y + s * nr, nr);
            d_best_metric = std::numeric_limits<double>::infinity();
            d_best_label.assign(d_nt, 0);
            search(d_nt - 1, 0.0);
            uint8_t* out = bits + static_cast<size_t>(s) * nb;
            for (int k = 0; k < d_nt; ++k)
                label_to_bits(d_best_label[k], d_q, out + qr.perm[k] * d_q);
            if (stats) {
                stats[s].expanded = d_expanded;
                stats[s].evaluated = d_evaluated;
            }
        }
        d_R = nullptr;
        (void)noise_var;
        (void)llr;
    }

private:
    // Depth-first over the tree: levels above d_first_se_level get all M children, the
    // others the SIC child only; leaves compete for the least metric.
    void search(int k, double partial)
    {
        if (k < 0) {
            if (partial < d_best_metric) {
                d_best_metric = partial;
                d_best_label = d_label;
            }
            return;
        }
        const MatC& R = *d_R;
        cd residual = d_z[k];
        for (int j = k + 1; j < d_nt; ++j)
            residual -= R(k, j) * d_sym[j];
        const double rkk = R(k, k).real();
        const auto& pts = d_c.points();
        if (k <= d_first_se_level) {
            const int label = d_c.slice(residual * d_inv_diag[k]);
            d_sym[k] = pts[label];
            d_label[k] = label;
            search(k - 1, partial + std::norm(residual - rkk * pts[label]));
            return;
        }
        for (int label = 0; label < d_M; ++label) {
            d_sym[k] = pts[label];
            d_label[k] = label;
            search(k - 1, partial + std::norm(residual - rkk * pts[label]));
        }
    }

    const int d_nt;
    const constellation& d_c;
    const int d_q, d_M;
    const int d_full_levels;
    const int d_first_se_level; //!< highest level index detected by SIC
    unsigned d_expanded = 0, d_evaluated = 0;
    const MatC* d_R = nullptr;
    VecC d_z;
    std::vector<double> d_inv_diag;
    std::vector<cd> d_sym;
    std::vector<int> d_label, d_best_label;
    double d_best_metric = 0;
};

} // namespace

std::unique_ptr<cpu_kernel> make_fsd_kernel(const detector_config& cfg)
{
    const fsd_params p = resolve_fsd_params(
        cfg.n_tx, static_cast<int>(cfg.mod), cfg.fsd_full_levels, -1, false);
    return std::make_unique<fsd_kernel>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
