/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Exhaustive maximum-likelihood search: the reference every other detector is tested
// against. Depth-first over all M^n_tx candidates on the QR-rotated system, so a leaf
// costs one complex multiply-add; hard decision = argmin, LLRs = max-log per bit.

#include "detect/kernel.h"
#include "detect/qr.h"
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gr {
namespace mimodet {
namespace core {

namespace {

constexpr double k_max_candidates = 262144.0; // 2^18

class ml_kernel : public cpu_kernel
{
public:
    explicit ml_kernel(const detector_config& cfg)
        : d_nt(cfg.n_tx),
          d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()),
          d_M(d_c.order()),
          d_clip(cfg.llr_clip)
    {
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
        const auto qr = qr_householder(H);
        const int nb = d_nt * d_q;
        std::vector<int> best(d_nt);
        for (int s = 0; s < n_sym; ++s) {
            const VecC z = qr.Q.adjoint() * Eigen::Map<const VecC>(y + s * nr, nr);
            std::fill(d_min0.begin(), d_min0.end(), inf());
            std::fill(d_min1.begin(), d_min1.end(), inf());
            d_best_metric = inf();
            d_soft = llr != nullptr;
            d_label.assign(d_nt, 0);
            search(qr.R, z, d_nt - 1, 0.0);
            if (llr) {
                float* out = llr + static_cast<size_t>(s) * nb;
                for (int b = 0; b < nb; ++b)
                    out[b] = maxlog_llr(d_min0[b], d_min1[b], 1.0 / noise_var, d_clip);
            } else {
                uint8_t* out = bits + static_cast<size_t>(s) * nb;
                for (int k = 0; k < d_nt; ++k)
                    label_to_bits(d_best[k], d_q, out + k * d_q);
            }
            if (stats) {
                const double leaves = std::pow(static_cast<double>(d_M), d_nt);
                stats[s].evaluated = static_cast<uint32_t>(leaves);
                stats[s].expanded = static_cast<uint32_t>((leaves - 1) / (d_M - 1));
            }
        }
        (void)best;
    }

    void init_buffers()
    {
        d_min0.assign(d_nt * d_q, inf());
        d_min1.assign(d_nt * d_q, inf());
        d_best.assign(d_nt, 0);
        d_sym.assign(d_nt, cd(0));
    }

private:
    static double inf() { return std::numeric_limits<double>::infinity(); }

    // Returns the minimum metric of the subtree below the fixed symbols k+1..n_tx-1,
    // updating the per-bit minima of symbol k with each child's subtree minimum.
    double search(const MatC& R, const VecC& z, int k, double partial)
    {
        cd interference = z[k];
        for (int j = k + 1; j < d_nt; ++j)
            interference -= R(k, j) * d_sym[j];
        double sub_min = inf();
        const auto& pts = d_c.points();
        for (int label = 0; label < d_M; ++label) {
            const double m = partial + std::norm(interference - R(k, k) * pts[label]);
            d_sym[k] = pts[label];
            d_label[k] = label;
            double child_min;
            if (k == 0) {
                child_min = m;
                if (m < d_best_metric) {
                    d_best_metric = m;
                    d_best = d_label;
                }
            } else {
                child_min = search(R, z, k - 1, m);
            }
            if (d_soft) {
                for (int b = 0; b < d_q; ++b) {
                    const int bit = (label >> (d_q - 1 - b)) & 1;
                    double& slot = bit ? d_min1[k * d_q + b] : d_min0[k * d_q + b];
                    if (child_min < slot)
                        slot = child_min;
                }
            }
            if (child_min < sub_min)
                sub_min = child_min;
        }
        return sub_min;
    }

    const int d_nt;
    const constellation& d_c;
    const int d_q, d_M;
    const float d_clip;
    bool d_soft = false;
    double d_best_metric = 0;
    std::vector<double> d_min0, d_min1;
    std::vector<int> d_best, d_label;
    std::vector<cd> d_sym;

    friend std::unique_ptr<cpu_kernel> make_ml_kernel(const detector_config& cfg);
};

} // namespace

std::unique_ptr<cpu_kernel> make_ml_kernel(const detector_config& cfg)
{
    const double candidates =
        std::pow(static_cast<double>(1 << static_cast<int>(cfg.mod)), cfg.n_tx);
    if (candidates > k_max_candidates)
        throw std::invalid_argument(
            "mimodet: exhaustive ML over " + std::to_string(cfg.n_tx) + " antennas of " +
            to_string(cfg.mod) + " has " + std::to_string(static_cast<long long>(candidates)) +
            " candidates; the limit is 2^18 (262144)");
    auto k = std::make_unique<ml_kernel>(cfg);
    k->init_buffers();
    return k;
}

} // namespace core
} // namespace mimodet
} // namespace gr
