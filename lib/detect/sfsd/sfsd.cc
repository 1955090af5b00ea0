/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Soft-output FSD (Barbero, Ratnarajah & Cowan 2008, as implemented by Roger et al.
// 2012, Section 3 and Algorithms 2-3): the hard FSD list of M^T paths, extended by
// N_iter * q * (n_tx - T) paths: for each of the N_iter best FSD paths and each
// single-expanded level l, keep the path's symbols above l, flip one bit of its symbol
// at l, and complete the levels below by SIC. Max-log LLRs (Eq. 9) over that list.
//
// The fully expanded levels need no extension: every counter-symbol there is already in
// the list below the same parent. An extension path can have a lower metric than the
// best FSD path (its SIC tail differs); the LLR signs then follow the list minimum,
// which is closer to ML than the FSD decision.

#include "detect/fsd/fsd_common.h"
#include "detect/kernel.h"
#include "detect/qr.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

class sfsd_kernel : public cpu_kernel
{
public:
    sfsd_kernel(const detector_config& cfg, const fsd_params& p)
        : d_nt(cfg.n_tx),
          d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()),
          d_M(d_c.order()),
          d_full_levels(p.full_levels),
          d_first_se_level(cfg.n_tx - 1 - p.full_levels),
          d_niter(p.niter),
          d_clip(cfg.llr_clip),
          d_z(cfg.n_tx),
          d_inv_diag(cfg.n_tx),
          d_sym(cfg.n_tx),
          d_label(cfg.n_tx),
          d_ped(cfg.n_tx + 1, 0.0),
          d_slot(cfg.n_tx),
          d_path_label(static_cast<size_t>(p.n_paths) * cfg.n_tx),
          d_path_ped(static_cast<size_t>(p.n_paths) * (cfg.n_tx + 1)),
          d_path_metric(p.n_paths),
          d_order(p.n_paths),
          d_min0(cfg.n_tx * d_q),
          d_min1(cfg.n_tx * d_q)
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
        // LLR slot of the first bit of each ordered level (undoes the FSD ordering).
        for (int k = 0; k < d_nt; ++k)
            d_slot[k] = qr.perm[k] * d_q;
        const int nb = d_nt * d_q;
        const double inv_nv = 1.0 / noise_var;
        const double inf = std::numeric_limits<double>::infinity();
        for (int s = 0; s < n_sym; ++s) {
            d_z.noalias() = qr.Q.adjoint() * Eigen::Map<const VecC>(y + s * nr, nr);
            std::fill(d_min0.begin(), d_min0.end(), inf);
            std::fill(d_min1.begin(), d_min1.end(), inf);
            d_n_stored = 0;
            fsd_search(d_nt - 1, 0.0);
            extend_list();
            float* out = llr + static_cast<size_t>(s) * nb;
            for (int b = 0; b < nb; ++b)
                out[b] = maxlog_llr(d_min0[b], d_min1[b], inv_nv, d_clip);
            if (stats) {
                stats[s].expanded = d_expanded;
                stats[s].evaluated = d_evaluated;
            }
        }
        d_R = nullptr;
        (void)bits;
    }

private:
    cd residual(int k) const
    {
        const MatC& R = *d_R;
        cd r = d_z[k];
        for (int j = k + 1; j < d_nt; ++j)
            r -= R(k, j) * d_sym[j];
        return r;
    }

    // Folds one complete path (d_label, metric) into the per-bit minima (Eq. 9).
    void add_candidate(double metric)
    {
        for (int k = 0; k < d_nt; ++k) {
            const int label = d_label[k];
            double* min0 = &d_min0[d_slot[k]];
            double* min1 = &d_min1[d_slot[k]];
            for (int b = 0; b < d_q; ++b) {
                double& slot = (label >> (d_q - 1 - b)) & 1 ? min1[b] : min0[b];
                if (metric < slot)
                    slot = metric;
            }
        }
    }

    // SIC (Eq. 6) from level k down to 0, starting from accumulated PED `partial`.
    double sic_complete(int k, double partial)
    {
        const auto& pts = d_c.points();
        for (; k >= 0; --k) {
            const cd r = residual(k);
            const int label = d_c.slice(r * d_inv_diag[k]);
            d_sym[k] = pts[label];
            d_label[k] = label;
            partial += std::norm(r - (*d_R)(k, k).real() * pts[label]);
            d_ped[k] = partial;
        }
        return partial;
    }

    // The hard FSD tree; every leaf is stored (labels and PEDs, for the extension) and
    // folded into the bit minima.
    void fsd_search(int k, double partial)
    {
        if (k == d_first_se_level) {
            const double metric = sic_complete(k, partial);
            const size_t p = d_n_stored++;
            std::copy(d_label.begin(), d_label.end(), d_path_label.begin() + p * d_nt);
            std::copy(d_ped.begin(), d_ped.end(), d_path_ped.begin() + p * (d_nt + 1));
            d_path_metric[p] = metric;
            add_candidate(metric);
            return;
        }
        const cd r = residual(k);
        const double rkk = (*d_R)(k, k).real();
        const auto& pts = d_c.points();
        for (int label = 0; label < d_M; ++label) {
            d_sym[k] = pts[label];
            d_label[k] = label;
            d_ped[k] = partial + std::norm(r - rkk * pts[label]);
            fsd_search(k - 1, d_ped[k]);
        }
    }

    // List extension (Algorithm 2): N_iter best paths, one bit flipped per path, level
    // and bit, SIC below.
    void extend_list()
    {
        if (d_niter == 0 || d_first_se_level < 0)
            return;
        std::iota(d_order.begin(), d_order.end(), 0);
        std::partial_sort(d_order.begin(),
                          d_order.begin() + d_niter,
                          d_order.end(),
                          [this](int a, int b) {
                              return sfsd_path_before(d_path_metric[a], a, d_path_metric[b], b);
                          });
        const auto& pts = d_c.points();
        for (int i = 0; i < d_niter; ++i) {
            const int p = d_order[i];
            const int* base_label = &d_path_label[static_cast<size_t>(p) * d_nt];
            const double* base_ped = &d_path_ped[static_cast<size_t>(p) * (d_nt + 1)];
            for (int k = 0; k < d_nt; ++k)
                d_sym[k] = pts[base_label[k]];
            std::copy(base_label, base_label + d_nt, d_label.begin());
            for (int l = d_first_se_level; l >= 0; --l) {
                // Levels above l hold the base path's symbols here.
                const cd r = residual(l);
                const double rll = (*d_R)(l, l).real();
                for (int b = 0; b < d_q; ++b) {
                    const int label = base_label[l] ^ (1 << (d_q - 1 - b));
                    d_sym[l] = pts[label];
                    d_label[l] = label;
                    const double ped = base_ped[l + 1] + std::norm(r - rll * pts[label]);
                    add_candidate(sic_complete(l - 1, ped));
                }
                d_sym[l] = pts[base_label[l]];
                d_label[l] = base_label[l];
            }
        }
    }

    const int d_nt;
    const constellation& d_c;
    const int d_q, d_M;
    const int d_full_levels;
    const int d_first_se_level; //!< highest level index detected by SIC (-1: none)
    const int d_niter;
    const float d_clip;
    unsigned d_expanded = 0, d_evaluated = 0;
    const MatC* d_R = nullptr;
    VecC d_z;
    std::vector<double> d_inv_diag;
    std::vector<cd> d_sym;
    std::vector<int> d_label;
    std::vector<double> d_ped; //!< d_ped[k]: accumulated PED after level k; [n_tx] = 0
    std::vector<int> d_slot;
    // The hard FSD list of the current vector.
    size_t d_n_stored = 0;
    std::vector<int> d_path_label;
    std::vector<double> d_path_ped;
    std::vector<double> d_path_metric;
    std::vector<int> d_order;
    std::vector<double> d_min0, d_min1;
};

} // namespace

std::unique_ptr<cpu_kernel> make_sfsd_kernel(const detector_config& cfg)
{
    const fsd_params p = resolve_fsd_params(
        cfg.n_tx, static_cast<int>(cfg.mod), cfg.fsd_full_levels, cfg.sfsd_niter, true);
    return std::make_unique<sfsd_kernel>(cfg, p);
}

} // namespace core
} // namespace mimodet
} // namespace gr
