/* -*- c++ -*- */
/*
 * Copyright 2026 gr-mimodet developers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */

// Linear baselines: zero forcing and (unbiased) MMSE equalisation followed by a per-stream
// max-log demapper. 36.211's maps are separable, so each bit's LLR needs only the PAM
// dimension that carries it. The demapper, the zf rank rule and the weights of a
// rank-deficient H are shared with the CUDA backend (linear_common.h).

#include "detect/kernel.h"
#include "detect/linear/linear_common.h"
#include <cmath>

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
                post_var[k] = linear::mmse_post_var(mu);
            }
        } else {
            // Pseudo-inverse. The rank rule of linear_common.h (shared with the GPU)
            // decides whether H has full rank: then Eigen's pseudo-inverse, else the
            // shared minimum-norm pseudo-inverse of the rank truncation.
            linear::cplx Hc[linear::max_ant * linear::max_ant];
            for (int r = 0; r < nr; ++r)
                for (int c = 0; c < d_nt; ++c)
                    Hc[r * d_nt + c] = { H(r, c).real(), H(r, c).imag() };
            if (linear::zf_rank(Hc, nr, d_nt) == d_nt) {
                W = H.completeOrthogonalDecomposition().pseudoInverse();
            } else {
                linear::cplx Wc[linear::max_ant * linear::max_ant];
                linear::zf_weights(Hc, nr, d_nt, Wc);
                W.resize(d_nt, nr);
                for (int k = 0; k < d_nt; ++k)
                    for (int r = 0; r < nr; ++r)
                        W(k, r) = cd(Wc[k * nr + r].re, Wc[k * nr + r].im);
            }
            for (int k = 0; k < d_nt; ++k) {
                gain[k] = 1.0;
                post_var[k] = noise_var * W.row(k).squaredNorm();
            }
        }
        const int nb = d_nt * d_q;
        for (int s = 0; s < n_sym; ++s) {
            const VecC x = W * Eigen::Map<const VecC>(y + s * nr, nr);
            float* out = llr + static_cast<size_t>(s) * nb;
            for (int k = 0; k < d_nt; ++k)
                linear::demap_stream(x[k].real(),
                                     x[k].imag(),
                                     gain[k],
                                     post_var[k],
                                     d_c.pam_levels().data(),
                                     d_c.pam_bits(),
                                     d_q,
                                     d_clip,
                                     out + k * d_q);
        }
    }

private:
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
