/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Linear baselines: zero forcing and (unbiased) MMSE equalisation followed by a per-stream
// max-log demapper. 36.211's maps are separable, so each bit's LLR needs only the PAM
// dimension that carries it.

#include "kernel.h"
#include <cmath>
#include <limits>

namespace gr {
namespace mimodet {
namespace core {

namespace {

class linear_kernel : public cpu_kernel
{
public:
    explicit linear_kernel(const detector_config& cfg)
        : d_mmse(cfg.algorithm == "mmse"),
          d_nt(cfg.n_tx),
          d_c(constellation::get(cfg.mod)),
          d_q(d_c.bits_per_symbol()),
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
        (void)bits;
        (void)stats; // no tree, no counters
        const int nr = static_cast<int>(H.rows());
        const MatC Hh = H.adjoint();
        MatC W;
        Eigen::VectorXd gain(d_nt), post_var(d_nt);
        if (d_mmse) {
            MatC G = Hh * H;
            G.diagonal().array() += cd(noise_var);
            W = G.ldlt().solve(Hh);
            const MatC WH = W * H;
            for (int k = 0; k < d_nt; ++k) {
                // Unbiased MMSE: x_k / mu_k = s_k + e, var(e) = (1 - mu_k) / mu_k for
                // unit-energy symbols.
                const double mu = WH(k, k).real();
                gain[k] = mu;
                post_var[k] = mu > 0 && mu < 1 ? (1.0 - mu) / mu : 0.0;
            }
        } else {
            // Pseudo-inverse: stays defined for a rank-deficient channel.
            W = H.completeOrthogonalDecomposition().pseudoInverse();
            for (int k = 0; k < d_nt; ++k) {
                gain[k] = 1.0;
                post_var[k] = noise_var * W.row(k).squaredNorm();
            }
        }
        const int nb = d_nt * d_q;
        for (int s = 0; s < n_sym; ++s) {
            const VecC x = W * Eigen::Map<const VecC>(y + s * nr, nr);
            float* out = llr + static_cast<size_t>(s) * nb;
            for (int k = 0; k < d_nt; ++k) {
                const bool usable = gain[k] > 0 && post_var[k] > 0 &&
                                    std::isfinite(post_var[k]);
                const cd xe = usable ? x[k] / gain[k] : cd(0);
                const double inv = usable ? 1.0 / post_var[k] : 0.0;
                demap(xe, inv, out + k * d_q);
            }
        }
    }

private:
    // Max-log LLRs of one symbol; bit b lives on the I (even b) or Q (odd b) PAM.
    void demap(cd x, double inv_var, float* out) const
    {
        const auto& pam = d_c.pam_levels();
        const int nb = d_c.pam_bits();
        for (int b = 0; b < d_q; ++b) {
            const double v = (b % 2 == 0) ? x.real() : x.imag();
            const int pb = b / 2; // bit index within the PAM label
            double m0 = std::numeric_limits<double>::infinity(), m1 = m0;
            for (size_t l = 0; l < pam.size(); ++l) {
                const double d = (v - pam[l]) * (v - pam[l]);
                if ((static_cast<int>(l) >> (nb - 1 - pb)) & 1)
                    m1 = std::min(m1, d);
                else
                    m0 = std::min(m0, d);
            }
            out[b] = inv_var > 0 ? maxlog_llr(m0, m1, inv_var, d_clip) : 0.0f;
        }
    }

    const bool d_mmse;
    const int d_nt;
    const constellation& d_c;
    const int d_q;
    const float d_clip;
};

} // namespace

std::unique_ptr<cpu_kernel> make_linear_kernel(const detector_config& cfg)
{
    return std::make_unique<linear_kernel>(cfg);
}

} // namespace core
} // namespace mimodet
} // namespace gr
